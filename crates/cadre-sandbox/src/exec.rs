//! The hidden `__sandbox-exec` entry point: parse its arguments, restrict, exec.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::writer::{PIN_ARG, PROTECT_ARG};

/// The first argument that routes the cadre binary here instead of to its CLI.
pub const EXEC_ARG: &str = "__sandbox-exec";

/// The option of a writing child's containment: writes only beneath its `--rw` directories
/// (none given: anywhere but the kernel's files), its `--ro` paths read-only in a mount
/// namespace of its own, the kernel-reaching capabilities dropped, scoping (no signals or
/// ptrace outside, ABI ≥ 6) and the writer's system-call filter (see [`super::writer`]).
pub const WRITER_ARG: &str = "--writer";

/// The option that names a path the command may not read at all.
pub const HIDE_ARG: &str = "--hide";

/// Exit code when the sandbox could not be set up and the command did not run.
pub const SANDBOX_FAILURE_EXIT: u8 = 125;

/// `[--net]` `--rw <dir>`… `--` `<program>` `<args>`…
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecArgs {
    pub writable: Vec<PathBuf>,
    /// `--net`: the command may open sockets (the `research` role); otherwise it has none.
    pub network: bool,
    /// `--writer`: a writing child's command ([`WRITER_ARG`]).
    pub writer: bool,
    /// `--ro <path>` (writers only): kept read-only by a mount ([`super::writer`]).
    pub protected: Vec<PathBuf>,
    /// `--pin <dir>` (writers only): made a mount point so it cannot be renamed away.
    pub pinned: Vec<PathBuf>,
    /// `--hide <path>`: not readable at all (cadre's key files, see [`crate::hidden`]).
    pub hidden: Vec<PathBuf>,
    pub program: OsString,
    pub args: Vec<OsString>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecArgsError {
    #[error("`--rw` needs a directory")]
    MissingDir,
    #[error("unexpected argument `{0}` (expected `--net`, `--rw <dir>` or `--`)")]
    Unexpected(String),
    #[error("no program to run after `--`")]
    NoProgram,
    #[error("writable directory {0} is not an existing directory")]
    NotADir(PathBuf),
    #[error("`--writer` does not take `--net` (a writer keeps the network)")]
    WriterWithRules,
    #[error("`--ro` and `--pin` go with `--writer` only")]
    ProtectWithoutWriter,
}

impl ExecArgs {
    /// Parse the arguments that follow [`EXEC_ARG`].
    pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Self, ExecArgsError> {
        let mut iter = args.into_iter();
        let mut writable = Vec::new();
        let mut network = false;
        let mut writer = false;
        let mut protected = Vec::new();
        let mut pinned = Vec::new();
        let mut hidden = Vec::new();
        loop {
            match iter.next() {
                Some(a) if a == "--net" => network = true,
                Some(a) if a == WRITER_ARG => writer = true,
                Some(a) if a == "--rw" || a == PROTECT_ARG || a == PIN_ARG || a == HIDE_ARG => {
                    let list = if a == "--rw" {
                        &mut writable
                    } else if a == PROTECT_ARG {
                        &mut protected
                    } else if a == PIN_ARG {
                        &mut pinned
                    } else {
                        &mut hidden
                    };
                    match iter.next() {
                        Some(path) if !path.is_empty() => list.push(PathBuf::from(path)),
                        _ => return Err(ExecArgsError::MissingDir),
                    }
                }
                Some(a) if a == "--" => break,
                Some(a) => return Err(ExecArgsError::Unexpected(a.to_string_lossy().into())),
                None => return Err(ExecArgsError::NoProgram),
            }
        }
        let program = iter.next().ok_or(ExecArgsError::NoProgram)?;
        if writer && network {
            return Err(ExecArgsError::WriterWithRules);
        }
        let protects = !protected.is_empty() || !pinned.is_empty();
        if protects && !writer {
            return Err(ExecArgsError::ProtectWithoutWriter);
        }
        Ok(ExecArgs {
            writable,
            network,
            writer,
            protected,
            pinned,
            hidden,
            program,
            args: iter.collect(),
        })
    }

    /// Every writable path must be a directory that exists now: a rule for a missing path
    /// cannot be made, and a file would take directory rights it cannot have.
    pub fn validate(&self) -> Result<(), ExecArgsError> {
        match self.writable.iter().find(|d| !d.is_dir()) {
            Some(d) => Err(ExecArgsError::NotADir(d.clone())),
            None => Ok(()),
        }
    }
}

/// The arguments for the cadre binary that run `program args…` sandboxed, writable only
/// beneath `writable`, with sockets only when `network`.
pub fn sandbox_args(
    writable: &[PathBuf],
    network: bool,
    program: impl AsRef<OsStr>,
    args: impl IntoIterator<Item = impl AsRef<OsStr>>,
) -> Vec<OsString> {
    let mut out = vec![OsString::from(EXEC_ARG)];
    if network {
        out.push("--net".into());
    }
    for path in crate::hidden::hidden() {
        out.push(HIDE_ARG.into());
        out.push(path.into_os_string());
    }
    for dir in writable {
        out.push("--rw".into());
        out.push(dir.as_os_str().to_owned());
    }
    out.push("--".into());
    out.push(program.as_ref().to_owned());
    out.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
    out
}

fn fail(code: u8, message: std::fmt::Arguments<'_>) -> ExitCode {
    let _ = writeln!(std::io::stderr().lock(), "cadre sandbox: {message}");
    ExitCode::from(code)
}

/// Run the hidden entry point with the arguments after [`EXEC_ARG`]. Returns only on failure
/// (on success the process has become the sandboxed program).
pub fn exec_main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let parsed = ExecArgs::parse(args).and_then(|a| a.validate().map(|()| a));
    let exec = match parsed {
        Ok(a) => a,
        Err(e) => {
            return fail(
                SANDBOX_FAILURE_EXIT,
                format_args!("{e}; the command was not run"),
            );
        }
    };
    run(exec)
}

#[cfg(target_os = "linux")]
fn run(exec: ExecArgs) -> ExitCode {
    // Nothing the re-executing process inherited reaches the command but stdio.
    crate::fds::close_inherited_on_exec();
    if exec.writer {
        return run_writer(exec);
    }
    let abi = match super::landlock_status() {
        super::SandboxStatus::Enforced { abi } => abi,
        super::SandboxStatus::Unavailable { reason } => {
            return fail(
                SANDBOX_FAILURE_EXIT,
                format_args!("Landlock is unavailable ({reason}); the command was not run"),
            );
        }
    };
    // Capabilities first: setting the secure bits needs one. Then Landlock, which also sets
    // `no_new_privs`, which the unprivileged system-call filter needs.
    if let Err(e) = super::caps::drop_all() {
        return fail(
            SANDBOX_FAILURE_EXIT,
            format_args!("capabilities could not be dropped ({e}); the command was not run"),
        );
    }
    if let Err(e) = super::landlock::restrict_self(&exec.writable, exec.network, abi, &exec.hidden)
    {
        return fail(
            SANDBOX_FAILURE_EXIT,
            format_args!("{e}; the command was not run"),
        );
    }
    let options = super::seccomp::FilterOptions {
        network: exec.network,
    };
    if let Err(e) = super::seccomp::apply(options) {
        return fail(
            SANDBOX_FAILURE_EXIT,
            format_args!("{e}; the command was not run"),
        );
    }
    become_program(&exec)
}

/// Replace this process with the command, or say why it could not start (126/127 as a shell).
#[cfg(target_os = "linux")]
fn become_program(exec: &ExecArgs) -> ExitCode {
    use std::os::unix::process::CommandExt;

    let error = std::process::Command::new(&exec.program)
        .args(&exec.args)
        .exec();
    let code = if error.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    };
    fail(
        code,
        format_args!("cannot run {}: {error}", exec.program.to_string_lossy()),
    )
}

/// A writing child's command: its protected paths mounted read-only (where the kernel allows a
/// mount namespace; elsewhere the bash tool's check after the call remains), the
/// kernel-reaching capabilities dropped, Landlock (writes beneath its writable directories
/// only, no device nodes, scoped from ABI 6) and the writer's system-call filter. Where Landlock
/// or seccomp is missing, the command runs without that layer, as writers always could.
#[cfg(target_os = "linux")]
fn run_writer(exec: ExecArgs) -> ExitCode {
    if let Err(e) = super::writer::mount_read_only(&exec.protected, &exec.pinned) {
        return fail(
            SANDBOX_FAILURE_EXIT,
            format_args!("the read-only paths could not be mounted ({e}); the command was not run"),
        );
    }
    if let Err(e) = super::caps::drop_kernel_caps() {
        return fail(
            SANDBOX_FAILURE_EXIT,
            format_args!("capabilities could not be lowered ({e}); the command was not run"),
        );
    }
    // ABI ≥ 3 (Landlock is "enforced"): the kernel's files off limits, and scoped from ABI 6;
    // below that, scoping alone where it exists.
    let restricted = match super::landlock_status() {
        super::SandboxStatus::Enforced { abi } => {
            super::landlock::restrict_writer(abi, &exec.writable, &exec.hidden)
        }
        super::SandboxStatus::Unavailable { .. } => Ok(()),
    };
    if let Err(e) = restricted {
        return fail(
            SANDBOX_FAILURE_EXIT,
            format_args!("{e}; the command was not run"),
        );
    }
    if let Err(e) = super::seccomp::apply_writer() {
        return fail(
            SANDBOX_FAILURE_EXIT,
            format_args!("{e}; the command was not run"),
        );
    }
    become_program(&exec)
}

#[cfg(not(target_os = "linux"))]
fn run(_exec: ExecArgs) -> ExitCode {
    fail(
        SANDBOX_FAILURE_EXIT,
        format_args!("the sandbox needs Linux Landlock; the command was not run"),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn parses_dirs_program_and_args() {
        let a = ExecArgs::parse(os(&[
            "--rw", "/a", "--rw", "/b", "--", "bash", "-c", "ls -- x",
        ]))
        .unwrap();
        assert_eq!(a.writable, [PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!(a.program, "bash");
        assert_eq!(a.args, os(&["-c", "ls -- x"]));
        assert!(!a.network);
        let a = ExecArgs::parse(os(&["--", "true"])).unwrap();
        assert!(a.writable.is_empty());
        let a = ExecArgs::parse(os(&["--net", "--rw", "/a", "--", "true"])).unwrap();
        assert!(a.network);
        assert!(a.args.is_empty());
        let a = ExecArgs::parse(os(&["--writer", "--", "bash"])).unwrap();
        assert!(a.writer && a.writable.is_empty());
        let a = ExecArgs::parse(os(&[
            "--writer",
            "--rw",
            "/a",
            "--ro",
            "/a/.git/config",
            "--pin",
            "/a/.git",
            "--",
            "x",
        ]))
        .unwrap();
        assert_eq!(a.writable, [PathBuf::from("/a")]);
        assert_eq!(a.protected, [PathBuf::from("/a/.git/config")]);
        assert_eq!(a.pinned, [PathBuf::from("/a/.git")]);
        assert_eq!(
            ExecArgs::parse(os(&["--writer", "--net", "--", "x"])),
            Err(ExecArgsError::WriterWithRules)
        );
    }

    #[test]
    fn bad_arguments_are_refused() {
        let err = |args: &[&str]| ExecArgs::parse(os(args)).unwrap_err();
        assert_eq!(err(&[]), ExecArgsError::NoProgram);
        assert_eq!(err(&["--rw", "/a"]), ExecArgsError::NoProgram);
        assert_eq!(err(&["--rw", "/a", "--"]), ExecArgsError::NoProgram);
        assert_eq!(err(&["--rw"]), ExecArgsError::MissingDir);
        assert_eq!(err(&["--rw", "", "--", "x"]), ExecArgsError::MissingDir);
        assert_eq!(
            err(&["bash", "-c", "x"]),
            ExecArgsError::Unexpected("bash".into())
        );
        assert_eq!(
            err(&["--ro", "/a", "--", "x"]),
            ExecArgsError::ProtectWithoutWriter
        );
    }

    #[test]
    fn validate_wants_existing_directories() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        let with = |p: PathBuf| ExecArgs {
            writable: vec![p],
            network: false,
            writer: false,
            protected: vec![],
            pinned: vec![],
            hidden: vec![],
            program: "true".into(),
            args: vec![],
        };
        assert!(with(dir.path().to_path_buf()).validate().is_ok());
        assert_eq!(
            with(file.clone()).validate(),
            Err(ExecArgsError::NotADir(file))
        );
        let missing = dir.path().join("missing");
        assert_eq!(
            with(missing.clone()).validate(),
            Err(ExecArgsError::NotADir(missing))
        );
    }

    #[test]
    fn built_arguments_parse_back() {
        let dirs = [PathBuf::from("/s"), PathBuf::from("/p lans")];
        let args = sandbox_args(&dirs, false, "bash", ["-c", "echo --rw"]);
        assert_eq!(args[0], EXEC_ARG);
        let parsed = ExecArgs::parse(args.into_iter().skip(1)).unwrap();
        assert_eq!(parsed.writable, dirs);
        assert!(!parsed.network);
        let args = sandbox_args(&dirs, true, "bash", ["-c", "true"]);
        assert!(ExecArgs::parse(args.into_iter().skip(1)).unwrap().network);
        assert_eq!(parsed.program, "bash");
        assert_eq!(parsed.args, os(&["-c", "echo --rw"]));
    }
}
