//! The hidden `__supervise` entry point: keeps a bash command from outliving cadre.
//!
//! The bash tool kills a command's process group on timeout, abort or a dropped call, but
//! nothing of cadre runs once cadre itself is killed (`kill -9`, OOM killer): the command and
//! everything it started would be reparented to init and keep running. So where the running
//! binary can re-execute itself, every command runs as
//! `<cadre> __supervise -- bash -c <command>`, started in a new process group, with a *lifeline*
//! as its stdin: the read end of a pipe whose only write end stays open inside cadre. The
//! supervisor starts the command in its own (the same) process group, so the bash tool's
//! `killpg` still reaches everything, and waits for it. When the lifeline reaches end-of-file —
//! which the kernel causes the moment cadre's last descriptor closes, however cadre ends — the
//! supervisor kills its whole process group, itself included, grandchildren too.
//!
//! Why a pipe rather than `PR_SET_PDEATHSIG`: the death signal follows the *thread* that
//! spawned the child, not the process, so a runtime worker thread exiting would kill healthy
//! commands; it also needs a `getppid` check against the parent dying before it is set. A pipe
//! cannot race (a lifeline already closed reads EOF at once), does not care which thread spawned
//! the command, and works on every Unix.
//!
//! Output is never touched: the command inherits the supervisor's stdout and stderr (the bash
//! tool's one shared pipe), so ordering stays exact. Its stdin is `/dev/null`, as before.
//!
//! Processes that leave the group (`setsid`, a daemon's double fork) are still caught: the
//! supervisor is a *child subreaper*, so every orphaned descendant is reparented to it rather
//! than to init, and it ends all of them — its own children, round after round, until none is
//! left — when the lifeline closes (cadre died, or the bash tool ended the call on timeout or
//! abort) and, with `--reap` (children's bash), as soon as the command itself exits: nothing a
//! child's command starts outlives its call.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::sync::OnceLock;

use crate::WriterBoundary;
use crate::writer::{PIN_ARG, PROTECT_ARG, WRITABLE_ARG};

/// The first argument that routes the cadre binary here instead of to its CLI.
pub const SUPERVISE_ARG: &str = "__supervise";

/// Exit code when the supervisor could not run the command at all.
pub const SUPERVISE_FAILURE_EXIT: u8 = 125;

/// The watcher thread reads a pipe, a few `/proc` files and sends signals: a small stack is
/// plenty.
const WATCHER_STACK: usize = 64 * 1024;

static PROCESS_SUPERVISOR: OnceLock<PathBuf> = OnceLock::new();

/// Set by the watcher once the lifeline has closed (see [`supervise_main`]).
static LIFELINE_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Declare that `exe` (normally the running cadre binary) handles [`SUPERVISE_ARG`] through
/// [`supervise_main`]: from now on every bash tool in this process that was not given its own
/// supervisor runs its commands under it. Only the first call counts.
pub fn set_process_supervisor(exe: PathBuf) {
    let _ = PROCESS_SUPERVISOR.set(exe);
}

/// The supervisor set by [`set_process_supervisor`], if any.
pub fn process_supervisor() -> Option<&'static Path> {
    PROCESS_SUPERVISOR.get().map(PathBuf::as_path)
}

/// The binary to re-execute as the supervisor of the running process: on Linux
/// `/proc/self/exe`, which still reaches this very binary after the file on disk was replaced
/// or deleted (an upgrade or rebuild while cadre runs); elsewhere the executable's path.
pub fn current_exe_for_reexec() -> std::io::Result<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        let proc_exe = PathBuf::from("/proc/self/exe");
        if proc_exe.exists() {
            return Ok(proc_exe);
        }
    }
    std::env::current_exe()
}

/// How a supervised command is held in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Containment {
    /// Everything the command started ends when it exits (children's bash).
    pub reap: bool,
    /// The command runs through the binary's own `__sandbox-exec --writer` (a writing child's
    /// bash: no acting on processes outside it, see [`crate::WRITER_ARG`]).
    pub contain: bool,
}

/// The arguments for the supervisor binary that run `program args…` under supervision, held
/// in as `how` says; with `how.contain`, `boundary` is the writer's boundary handed on to
/// `__sandbox-exec --writer`.
pub fn supervise_args(
    how: Containment,
    boundary: Option<&WriterBoundary>,
    program: impl AsRef<OsStr>,
    args: impl IntoIterator<Item = impl AsRef<OsStr>>,
) -> Vec<OsString> {
    let mut out = vec![OsString::from(SUPERVISE_ARG)];
    if how.reap {
        out.push(OsString::from(REAP_ARG));
    }
    if how.contain {
        out.push(OsString::from(CONTAIN_ARG));
        if let Some(boundary) = boundary {
            out.extend(boundary.to_args());
        }
    }
    out.push(OsString::from("--"));
    out.push(program.as_ref().to_owned());
    out.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
    out
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SuperviseArgsError {
    #[error("expected `--` before the program")]
    MissingSeparator,
    #[error("no program to run after `--`")]
    NoProgram,
}

/// The option that ends every process the command started as soon as it exits.
pub const REAP_ARG: &str = "--reap";
/// The option that runs the command through `__sandbox-exec --writer`.
pub const CONTAIN_ARG: &str = "--contain";

/// What the supervisor was asked to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuperviseArgs {
    pub how: Containment,
    /// The writer's boundary options (`--rw`/`--ro`/`--pin` pairs) after `--contain`.
    pub writer_args: Vec<OsString>,
    pub program: OsString,
    pub args: Vec<OsString>,
}

/// Parse the arguments that follow [`SUPERVISE_ARG`]: `[--reap] [--contain [boundary]]` `--`
/// `<program>` `<args>`….
pub fn parse_args(
    args: impl IntoIterator<Item = OsString>,
) -> Result<SuperviseArgs, SuperviseArgsError> {
    let mut iter = args.into_iter().peekable();
    let reap = iter.next_if(|a| a == REAP_ARG).is_some();
    let contain = iter.next_if(|a| a == CONTAIN_ARG).is_some();
    let mut writer_args = Vec::new();
    while contain
        && let Some(option) = iter.next_if(|a| {
            a == WRITABLE_ARG || a == PROTECT_ARG || a == PIN_ARG || a == crate::HIDE_ARG
        })
    {
        let value = iter.next().ok_or(SuperviseArgsError::MissingSeparator)?;
        writer_args.push(option);
        writer_args.push(value);
    }
    if iter.next().is_none_or(|a| a != "--") {
        return Err(SuperviseArgsError::MissingSeparator);
    }
    let program = iter.next().ok_or(SuperviseArgsError::NoProgram)?;
    Ok(SuperviseArgs {
        writer_args,
        how: Containment { reap, contain },
        program,
        args: iter.collect(),
    })
}

/// A shell's exit code for a status: the code itself, or 128 + the signal that ended it.
pub fn shell_exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(u8::MAX),
        (None, Some(signal)) => u8::try_from(128 + (signal & 0x7f)).unwrap_or(u8::MAX),
        (None, None) => SUPERVISE_FAILURE_EXIT,
    }
}

fn fail(code: u8, message: std::fmt::Arguments<'_>) -> ExitCode {
    let _ = writeln!(std::io::stderr().lock(), "cadre supervise: {message}");
    ExitCode::from(code)
}

/// Run the hidden entry point with the arguments after [`SUPERVISE_ARG`]; stdin must be the
/// lifeline. Returns the command's exit code (signals as 128 + n, like a shell).
pub fn supervise_main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let SuperviseArgs {
        how,
        writer_args,
        program,
        args,
    } = match parse_args(args) {
        Ok(parsed) => parsed,
        Err(e) => {
            return fail(
                SUPERVISE_FAILURE_EXIT,
                format_args!("{e}; the command was not run"),
            );
        }
    };
    // The group to kill must be exactly ours: lead one (normally the bash tool made us its
    // leader already; then this changes nothing).
    let pgid = std::process::id();
    let leading = group::lead_own_group(pgid);
    // Orphans of the command come to us, not to init, wherever they moved (setsid).
    let reaping = reap::become_subreaper();
    let lifeline = std::io::stdin();
    if leading {
        let spawned = std::thread::Builder::new()
            .name("lifeline".into())
            .stack_size(WATCHER_STACK)
            .spawn(move || {
                wait_for_eof(lifeline.lock());
                LIFELINE_CLOSED.store(true, std::sync::atomic::Ordering::SeqCst);
                reap::end_descendants();
                group::kill_group(pgid);
            });
        if let Err(e) = spawned {
            return fail(
                SUPERVISE_FAILURE_EXIT,
                format_args!("cannot watch the lifeline: {e}; the command was not run"),
            );
        }
    }
    // The command gets stdio and nothing else this process inherited.
    crate::fds::close_inherited_on_exec();
    // Same process group as ours (no `process_group`), so one `killpg` reaches both.
    let mut command = if how.contain {
        let exe = match current_exe_for_reexec() {
            Ok(exe) => exe,
            Err(e) => {
                return fail(
                    SUPERVISE_FAILURE_EXIT,
                    format_args!("cannot find this binary to contain the command: {e}"),
                );
            }
        };
        let mut c = Command::new(exe);
        c.args([crate::EXEC_ARG, crate::WRITER_ARG]);
        c.args(&writer_args).arg("--");
        c.arg(&program);
        c
    } else {
        Command::new(&program)
    };
    let child = command.args(&args).stdin(Stdio::null()).spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return fail(
                code,
                format_args!("cannot run {}: {e}", program.to_string_lossy()),
            );
        }
    };
    match child.wait() {
        Ok(status) => {
            // The watcher may be killing the command right now: this thread must not exit
            // (ending the process, and the watcher with it) before the descendants are gone.
            let closed = LIFELINE_CLOSED.load(std::sync::atomic::Ordering::SeqCst);
            if (how.reap || closed) && reaping {
                reap::end_descendants();
            }
            if closed && leading {
                group::kill_group(pgid);
            }
            ExitCode::from(shell_exit_code(status))
        }
        Err(e) => {
            group::kill_group(pgid);
            fail(
                SUPERVISE_FAILURE_EXIT,
                format_args!("cannot wait for the command: {e}"),
            )
        }
    }
}

/// Block until `lifeline` is closed on the other side (or cannot be read any more). Cadre never
/// writes to it; anything that arrives anyway is ignored.
fn wait_for_eof(mut lifeline: impl Read) {
    let mut buf = [0u8; 64];
    loop {
        match lifeline.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Ending every descendant: the supervisor is their subreaper, so killing its own children
/// round after round reaches all of them — a killed child's children become its own.
mod reap {
    use std::time::{Duration, Instant};

    /// Rounds end when no child is left or after this long (a fork bomb racing the kills).
    const MAX_REAPING: Duration = Duration::from_secs(5);

    /// Make the calling process the subreaper of its descendants. False where the kernel
    /// does not offer it (then only the process group is reachable).
    #[allow(unsafe_code)]
    pub(super) fn become_subreaper() -> bool {
        // SAFETY: prctl with integer arguments changes only this process's reaper flag.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
    }

    /// SIGKILL every descendant of this process except its own threads, and reap them.
    pub(super) fn end_descendants() {
        let started = Instant::now();
        loop {
            reap_exited();
            let children = own_children();
            if children.is_empty() || started.elapsed() > MAX_REAPING {
                return;
            }
            for pid in children {
                kill(pid);
            }
            // Let the kills land before the next look: a killed child's children are then
            // ours, and the killed child itself is a zombie to reap.
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[allow(unsafe_code)]
    fn kill(pid: libc::pid_t) {
        if pid <= 1 {
            return;
        }
        // SAFETY: kill takes two integers and only sends a signal; `pid` was read as a child
        // of this process, which cannot be reused before this process reaps it.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }

    /// Collect every child that has ended, without blocking.
    #[allow(unsafe_code)]
    fn reap_exited() {
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes the status into a local integer.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                return;
            }
        }
    }

    /// This process's live children: from `/proc/self/task/*/children` where the kernel has
    /// it, otherwise by scanning every process's parent.
    fn own_children() -> Vec<libc::pid_t> {
        match children_from_tasks() {
            Some(children) => children,
            None => children_from_scan(),
        }
    }

    fn children_from_tasks() -> Option<Vec<libc::pid_t>> {
        let mut children = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let text = std::fs::read_to_string(task.path().join("children")).ok()?;
            children.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<libc::pid_t>().ok()),
            );
        }
        Some(children)
    }

    fn children_from_scan() -> Vec<libc::pid_t> {
        let me = std::process::id().to_string();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
            .filter(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                // `pid (comm) state ppid …`: comm may hold spaces and parentheses.
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                    .is_some_and(|ppid| ppid == me)
            })
            .collect()
    }
}

/// The two process-group calls std does not offer.
mod group {
    /// Make the calling process the leader of a process group with its own id, if it is not
    /// already. False if that is impossible (it leads a session of another id), in which case
    /// nothing may be killed by group.
    #[allow(unsafe_code)]
    pub(super) fn lead_own_group(pid: u32) -> bool {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: getpgrp and setpgid take and return plain integers and only change this
        // process's group membership; they have no memory-safety preconditions.
        unsafe { libc::getpgrp() == pid || (libc::setpgid(0, 0) == 0 && libc::getpgrp() == pid) }
    }

    /// SIGKILL every process in group `pgid` (the supervisor's own, so this ends it too).
    #[allow(unsafe_code)]
    pub(super) fn kill_group(pgid: u32) {
        let Ok(pgid) = libc::pid_t::try_from(pgid) else {
            return;
        };
        // Never signal init's group or "our caller's group" (0) by mistake.
        if pgid <= 1 {
            return;
        }
        // SAFETY: killpg takes two plain integers and only sends a signal; `pgid` is the group
        // this process leads (checked by `lead_own_group` before the watcher starts).
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn built_arguments_parse_back() {
        let args = supervise_args(
            Containment::default(),
            None,
            "bash",
            ["-c", "echo -- __supervise"],
        );
        assert_eq!(args[0], SUPERVISE_ARG);
        let parsed = parse_args(args.into_iter().skip(1)).unwrap();
        assert_eq!(parsed.how, Containment::default());
        assert_eq!(parsed.program, "bash");
        assert_eq!(parsed.args, os(&["-c", "echo -- __supervise"]));
        let parsed = parse_args(os(&["--", "true"])).unwrap();
        assert_eq!(parsed.program, "true");
        assert!(parsed.args.is_empty());
        let both = Containment {
            reap: true,
            contain: true,
        };
        let args = supervise_args(both, None, "bash", ["--reap"]);
        let parsed = parse_args(args.into_iter().skip(1)).unwrap();
        assert_eq!(parsed.how, both);
        assert_eq!(parsed.args, os(&["--reap"]));
        let boundary = WriterBoundary {
            root: None,
            writable: vec![PathBuf::from("/p")],
            protected: vec![PathBuf::from("/p/.mcp.json")],
            pinned: vec![],
            read_only: vec![],
            scratch: None,
        };
        let args = supervise_args(both, Some(&boundary), "bash", ["--ro"]);
        let parsed = parse_args(args.into_iter().skip(1)).unwrap();
        // The process's hidden paths follow as `--hide` options (other tests hide some).
        assert_eq!(
            parsed.writer_args[..4],
            os(&["--rw", "/p", "--ro", "/p/.mcp.json"])
        );
        assert_eq!(parsed.program, "bash");
        assert_eq!(parsed.args, os(&["--ro"]));
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert_eq!(
            parse_args(os(&[])),
            Err(SuperviseArgsError::MissingSeparator)
        );
        assert_eq!(
            parse_args(os(&["bash", "-c", "x"])),
            Err(SuperviseArgsError::MissingSeparator)
        );
        assert_eq!(parse_args(os(&["--"])), Err(SuperviseArgsError::NoProgram));
        assert_eq!(
            parse_args(os(&["--reap", "--reap", "--", "x"])),
            Err(SuperviseArgsError::MissingSeparator)
        );
    }

    #[test]
    fn exit_codes_map_like_a_shell() {
        let status = |raw: i32| ExitStatus::from_raw(raw);
        // Raw wait statuses: exit code in the second byte, terminating signal in the low bits.
        assert_eq!(shell_exit_code(status(0)), 0);
        assert_eq!(shell_exit_code(status(3 << 8)), 3);
        assert_eq!(shell_exit_code(status(255 << 8)), 255);
        assert_eq!(shell_exit_code(status(libc::SIGTERM)), 143);
        assert_eq!(shell_exit_code(status(libc::SIGKILL)), 137);
        // Signal with the core-dump flag.
        assert_eq!(shell_exit_code(status(libc::SIGSEGV | 0x80)), 139);
    }

    #[test]
    fn eof_ends_the_wait_and_data_does_not() {
        wait_for_eof(&b""[..]);
        wait_for_eof(&b"ignored bytes"[..]);
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("gone"))
            }
        }
        wait_for_eof(Failing);
    }
}
