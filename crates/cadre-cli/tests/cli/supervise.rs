//! Bash commands die with cadre: the binary runs each command under its `__supervise` entry
//! point, which kills the command's whole process group once cadre is gone, even when cadre was
//! killed with SIGKILL and nothing of it could run. Exit codes, output order and timeouts are
//! reported as without the supervisor.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cadre_testkit::{Match, Reply, Rule};
use cadre_tools::sandbox::{SandboxConfig, create_scratch_dir, landlock_status};
use cadre_tools::shell_policy::ShellPolicy;
use cadre_tools::{BashTool, Tool, ToolContext, ToolOutput};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::harness::{Fixture, HANG_GUARD, Output, Running, Wire, wait_until};

/// Only a hang guard for the group to be killed once cadre is gone (it takes milliseconds, but
/// a loaded machine may stretch that).
const GONE_GUARD: Duration = HANG_GUARD;

/// A live (not zombie) process: its id and command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    pub pid: u32,
    pub cmdline: String,
}

/// Live processes whose working directory is `dir`: a test's commands run in its private
/// temporary project, so these are the test's own.
pub fn live_processes_in(dir: &Path) -> Vec<Proc> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        // A zombie's cwd cannot be read, so it drops out here too.
        if std::fs::read_link(entry.path().join("cwd")).ok().as_deref() != Some(dir) {
            continue;
        }
        if is_zombie(&entry.path()) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        found.push(Proc {
            pid,
            cmdline: cmdline.trim().to_string(),
        });
    }
    found
}

fn is_zombie(proc_dir: &Path) -> bool {
    std::fs::read_to_string(proc_dir.join("stat")).map_or(true, |stat| {
        // The state follows the parenthesised command name.
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'))
    })
}

/// Waits until no live process runs in `dir` whose command line contains `marker`; panics with
/// the survivors after the guard.
pub fn assert_all_end(dir: &Path, marker: &str) {
    let matching = || -> Vec<Proc> {
        live_processes_in(dir)
            .into_iter()
            .filter(|p| p.cmdline.contains(marker))
            .collect()
    };
    let deadline = Instant::now() + GONE_GUARD;
    loop {
        let left = matching();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "still running: {left:#?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn kill_9_of_cadre_ends_its_bash_command_and_grandchildren() {
    let f = Fixture::new();
    // A marker no other process has: the sleeps are recognisable in /proc.
    let marker = "sleep 30.0123";
    f.server.script(
        Rule::new(Match::first_user("ROUTE-DIE").and(Match::assistant_turns(0))).reply(
            Reply::tool_call(
                "call_sleep",
                "bash",
                // A background grandchild and a foreground one: both must go.
                json!({"command": format!("({marker} &) ; touch started && {marker}")}),
            ),
        ),
    );
    let run = Running::spawn(
        f.command(&["-p", "--model", Wire::Anthropic.model(), "ROUTE-DIE"]),
        None,
    );
    wait_until("the command to start", || {
        f.project.join("started").exists()
    });
    wait_until("both sleeps to run", || {
        live_processes_in(&f.project)
            .iter()
            .filter(|p| p.cmdline == marker)
            .count()
            == 2
    });
    let procs = live_processes_in(&f.project);
    assert!(
        procs.iter().any(|p| p.cmdline.contains("__supervise")),
        "the command runs under the supervisor: {procs:#?}"
    );

    run.signal("KILL");
    let out = run.wait(HANG_GUARD);
    assert_eq!(out.code, None, "ended by the signal: {out:#?}");
    assert_all_end(&f.project, marker);
    assert_all_end(&f.project, "__supervise");
}

fn tool_bash(f: &Fixture, args: serde_json::Value) -> Output {
    f.run(&["tool", "bash", &args.to_string()])
}

#[test]
fn supervised_commands_report_like_direct_ones() {
    let f = Fixture::new();
    // The shell's parent is the supervisor, so this really runs supervised.
    let out = tool_bash(
        &f,
        json!({"command": "tr '\\0' ' ' < /proc/$PPID/cmdline; echo"}),
    );
    out.assert_success();
    assert!(
        out.stdout.contains("__supervise -- bash -c"),
        "{}",
        out.stdout
    );

    // stdout and stderr interleave in order, through one pipe the supervisor does not touch.
    let out = tool_bash(
        &f,
        json!({"command": "echo one; echo two >&2; echo three; printf four >&2"}),
    );
    out.assert_success();
    assert_eq!(out.stdout, "one\ntwo\nthree\nfour\n", "{out:#?}");

    let out = tool_bash(&f, json!({"command": "echo failing; exit 3"}));
    assert_eq!(out.code, Some(1), "{out:#?}");
    assert_eq!(
        out.stdout, "failing\n\nCommand exited with code 3\n",
        "{out:#?}"
    );

    // A shell killed by a signal reports the shell's code for it: 128 + 15.
    let out = tool_bash(&f, json!({"command": "kill -TERM $$"}));
    assert_eq!(out.stdout, "Command exited with code 143\n", "{out:#?}");

    let out = tool_bash(&f, json!({"command": "exit 0"}));
    out.assert_success();
    assert_eq!(out.stdout, "(no output)\n", "{out:#?}");
}

#[test]
fn supervised_timeout_kills_the_whole_group() {
    let f = Fixture::new();
    let marker = "sleep 30.0456";
    let out = tool_bash(
        &f,
        json!({"command": format!("echo begun; ({marker} &); {marker}"), "timeout": 1}),
    );
    assert_eq!(out.code, Some(1), "{out:#?}");
    assert_eq!(
        out.stdout, "begun\n\nCommand timed out after 1 seconds\n",
        "{out:#?}"
    );
    assert_all_end(&f.project, marker);
}

/// Something outside killing the supervisor alone must not leave the command running without
/// its lifeline: the bash tool then ends the whole group.
#[test]
fn a_killed_supervisor_takes_its_command_along() {
    let f = Fixture::new();
    let marker = "sleep 30.0999";
    let out = tool_bash(
        &f,
        json!({"command": format!("echo before; kill -KILL $PPID; {marker}; echo never")}),
    );
    assert_eq!(out.code, Some(1), "{out:#?}");
    assert_eq!(
        out.stdout, "before\n\nCommand was killed by signal 9\n",
        "{out:#?}"
    );
    assert_all_end(&f.project, marker);
}

fn ctx(cwd: &Path, artifacts: &Path) -> ToolContext {
    ToolContext {
        cwd: cwd.to_path_buf(),
        cancel: CancellationToken::new(),
        updates: None,
        artifacts_dir: artifacts.to_path_buf(),
    }
}

async fn execute(tool: &BashTool, command: &str, ctx: ToolContext) -> ToolOutput {
    tokio::time::timeout(HANG_GUARD, tool.execute(json!({ "command": command }), ctx))
        .await
        .expect("bash call hung")
}

fn text(out: &ToolOutput) -> String {
    cadre_protocol::join_text(&out.content)
}

/// A bash tool given the binary explicitly runs supervised in any process; an abort still
/// kills the whole group at once.
#[tokio::test]
async fn explicit_supervisor_runs_and_aborts() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().canonicalize().unwrap();
    let tool = BashTool::new().with_supervisor(PathBuf::from(env!("CARGO_BIN_EXE_cadre")));
    assert_eq!(
        tool.supervisor(),
        Some(Path::new(env!("CARGO_BIN_EXE_cadre")))
    );

    let out = execute(&tool, "echo ok; exit 7", ctx(&dir, &dir)).await;
    assert_eq!(text(&out), "ok\n\nCommand exited with code 7");
    assert_eq!(out.details.unwrap()["exitCode"], 7);

    let marker = "sleep 30.0789";
    let cancel = CancellationToken::new();
    let abort = cancel.clone();
    let context = ToolContext {
        cancel,
        ..ctx(&dir, &dir)
    };
    let started = dir.join("started");
    let command = format!("({marker} &); touch started; {marker}");
    let call = tokio::spawn({
        let tool = tool.clone();
        async move { execute(&tool, &command, context).await }
    });
    tokio::time::timeout(HANG_GUARD, async {
        while !started.exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the command started");
    abort.cancel();
    let out = call.await.unwrap();
    assert_eq!(text(&out), "Command aborted");
    assert_all_end(&dir, marker);
}

/// A read-only role's command runs supervised and sandboxed: the supervisor starts the sandbox
/// entry point, which still refuses writes outside the scratch directory.
#[tokio::test]
async fn sandboxed_commands_run_supervised() {
    if !landlock_status().is_enforced() {
        eprintln!("skipped: Landlock is not enforced here");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().canonicalize().unwrap();
    let scratch = create_scratch_dir(&dir.join("scratch-parent")).unwrap();
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_cadre"));
    let tool = BashTool::sandboxed(SandboxConfig {
        exe: exe.clone(),
        scratch_dir: scratch.clone(),
        extra_writable: vec![],
        policy: ShellPolicy::Unrestricted,
        network: false,
    })
    .with_supervisor(exe);
    let out = execute(
        &tool,
        "tr '\\0' ' ' < /proc/$PPID/cmdline; echo; touch \"$TMPDIR/ok\"; touch denied",
        ctx(&dir, &dir.join("artifacts")),
    )
    .await;
    let shown = text(&out);
    assert!(shown.contains("__supervise -- "), "{shown}");
    assert!(scratch.join("ok").exists(), "{shown}");
    assert!(!dir.join("denied").exists(), "{shown}");
    assert_eq!(out.details.unwrap()["exitCode"], 1, "{shown}");
}
