//! The live task tree of print mode (I4): drawn on stderr when it is a terminal, while a child
//! runs, and cleared before the answer; nothing of it when stderr is a pipe, nothing ever on
//! stdout.
//!
//! The terminal is a pseudo-terminal that `tests/peers/pty_stderr.py` (Python's standard
//! library only) puts on the binary's stderr, with stdout a plain file.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cadre_testkit::{Match, Reply, Rule};
use serde_json::json;

use crate::harness::{Fixture, HANG_GUARD, Running, Wire};

const CHILD: &str = "[child]";
const DESCRIPTION: &str = "Read the notes slowly";
const FINAL: &str = "The notes start with alpha.";
/// Erase the frame: up over it, then clear to the end of the screen.
const CLEAR_BELOW: &str = "\x1b[J";

/// The parent launches one foreground Explore child; the child's first answer comes after a
/// moment, so the tree is on screen while it waits.
fn script(f: &Fixture) {
    script_agent_call(
        f,
        json!({"subagent_type": "Explore", "description": DESCRIPTION,
               "prompt": format!("{CHILD} Read notes.txt and report its first line.")}),
    );
}

/// [`script`] with the `Agent` call's arguments given.
fn script_agent_call(f: &Fixture, agent_args: serde_json::Value) {
    let parent = || !Match::first_user(CHILD);
    let child = || Match::first_user(CHILD);
    let s = &f.server;
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_agent",
            "Agent",
            agent_args,
        )),
    );
    s.script(Rule::new(parent()).reply(Reply::text(FINAL)));
    s.script(Rule::new(child()).reply(
        Reply::text("The first line is `alpha line`.").latency(Duration::from_millis(1500)),
    ));
}

fn args(wire: Wire) -> Vec<&'static str> {
    vec![
        "-p",
        "--model",
        wire.model(),
        "read the notes through a child",
    ]
}

/// `python pty_stderr.py OUT ERR cadre ARGS` with the fixture's environment and `TERM` set.
fn under_pty(f: &Fixture, python: &Path, args: &[&str], files: &Path) -> (i32, String, String) {
    let cadre = f.command(args);
    let mut cmd = Command::new(python);
    cmd.arg(peer("pty_stderr.py"))
        .arg(files.join("stdout"))
        .arg(files.join("stderr"))
        .arg(cadre.get_program())
        .args(cadre.get_args())
        .current_dir(&f.project)
        .env_clear();
    for (key, value) in cadre.get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    cmd.env("TERM", "xterm-256color");
    let out = Running::spawn(cmd, None).wait(HANG_GUARD + Duration::from_secs(30));
    let read = |name: &str| {
        let bytes = std::fs::read(files.join(name)).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    assert!(
        out.stderr.is_empty(),
        "the pty runner failed: {}",
        out.stderr
    );
    (out.code.unwrap_or(-1), read("stdout"), read("stderr"))
}

fn peer(script: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(script)
}

#[test]
fn the_task_tree_is_drawn_on_a_terminal_while_the_child_runs_and_cleared() {
    // Any Python 3 does (standard library only); this one is there wherever the peers are.
    let Some(python) = cadre_testkit::peers::python_with_mcp() else {
        return;
    };
    let f = Fixture::new();
    script(&f);
    let files = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = under_pty(&f, &python, &args(Wire::Anthropic), files.path());
    assert_eq!(code, 0, "stdout: {stdout:?}\nstderr: {stderr:?}");
    // stdout is the answer and nothing else: no frame, no escape sequence.
    assert_eq!(stdout, format!("{FINAL}\n"), "stderr: {stderr:?}");

    // The child's line, drawn while it ran: a running task's mark, role and description.
    let running = format!("▸ Explore  {DESCRIPTION} · ");
    let first = stderr
        .find(&running)
        .unwrap_or_else(|| panic!("no live line of the child in {stderr:?}"));
    // Each line fits the 80-column terminal, so none wraps.
    for line in stderr.split(['\r', '\n']) {
        let visible = line.rsplit(CLEAR_BELOW).next().unwrap_or(line);
        assert!(visible.chars().count() < 80, "{visible:?}");
    }
    // Cleared after: the frame is erased, and nothing of the tree is drawn after the last erase.
    let last_clear = stderr
        .rfind(CLEAR_BELOW)
        .unwrap_or_else(|| panic!("the frame was never cleared: {stderr:?}"));
    assert!(last_clear > first, "{stderr:?}");
    let after = &stderr[last_clear + CLEAR_BELOW.len()..];
    assert!(!after.contains(DESCRIPTION), "left on screen: {after:?}");
    assert!(!stderr.contains("panicked"), "{stderr:?}");
}

#[test]
fn a_named_task_with_a_wide_description_is_shown_by_name_and_fits_the_terminal() {
    use unicode_width::UnicodeWidthStr;
    let Some(python) = cadre_testkit::peers::python_with_mcp() else {
        return;
    };
    let f = Fixture::new();
    // 25 characters in 50 columns: the line has fewer characters than the terminal has
    // columns (so clipping by characters would not cut it), yet is wider than it.
    let wide = "認証を探す".repeat(5);
    assert_eq!((wide.chars().count(), wide.width()), (25, 50));
    script_agent_call(
        &f,
        json!({"subagent_type": "Explore", "description": wide, "name": "auth-scan",
               "prompt": format!("{CHILD} Read notes.txt and report its first line.")}),
    );
    let files = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = under_pty(&f, &python, &args(Wire::OpenAi), files.path());
    assert_eq!(code, 0, "stdout: {stdout:?}\nstderr: {stderr:?}");
    assert_eq!(stdout, format!("{FINAL}\n"), "stderr: {stderr:?}");
    assert!(
        stderr.contains("▸ Explore \"auth-scan\"  認証を探す"),
        "no named live line in {stderr:?}"
    );
    // Clipped by columns: a line of wide characters does not wrap the 80-column terminal.
    let mut clipped = 0;
    for line in stderr.split(['\r', '\n']) {
        let visible = line.rsplit(CLEAR_BELOW).next().unwrap_or(line);
        assert!(
            visible.width() < 80,
            "{} columns: {visible:?}",
            visible.width()
        );
        clipped += usize::from(visible.contains("認証") && visible.ends_with('…'));
    }
    assert!(clipped > 0, "no clipped line in {stderr:?}");
}

#[test]
fn nothing_of_the_tree_when_stderr_is_a_pipe() {
    let f = Fixture::new();
    script(&f);
    let mut cmd = f.command(&args(Wire::OpenAi));
    cmd.env("TERM", "xterm-256color");
    let out = Running::spawn(cmd, None).wait(HANG_GUARD);
    out.assert_success();
    assert_eq!(out.stdout, format!("{FINAL}\n"));
    assert!(!out.stderr.contains(DESCRIPTION), "{:?}", out.stderr);
    assert!(!out.stderr.contains('\x1b'), "{:?}", out.stderr);
    // The child did run (so a tree would have had a line to show).
    assert!(
        f.server
            .requests()
            .iter()
            .any(|r| r.first_user_text().is_some_and(|t| t.contains(CHILD))),
        "the child never ran"
    );
}
