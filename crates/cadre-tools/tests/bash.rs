//! The bash tool with real processes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{Env, call_with, err, ok, text};
use serde_json::json;

/// True while `pid` is a live (not zombie) process.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the parenthesised command name.
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Whether `pid` is gone within about two seconds (the reaper may need a moment after a kill).
async fn exits_soon(pid: u32) -> bool {
    for _ in 0..100 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn runs_in_cwd_and_reports_output() {
    let env = Env::new();
    env.write("marker.txt", "");
    let out = env.call("bash", json!({"command": "ls; echo done"})).await;
    assert_eq!(ok(&out), "marker.txt\ndone\n");
    assert_eq!(out.details.unwrap()["exitCode"], 0);
    let out = env.call("bash", json!({"command": "true"})).await;
    assert_eq!(ok(&out), "(no output)");
}

#[tokio::test]
async fn nonzero_exit_is_an_error_with_the_code() {
    let env = Env::new();
    let out = env
        .call("bash", json!({"command": "echo oops; exit 3"}))
        .await;
    assert_eq!(err(&out), "oops\n\nCommand exited with code 3");
    assert_eq!(out.details.unwrap()["exitCode"], 3);
}

#[tokio::test]
async fn stderr_is_merged_in_order() {
    let env = Env::new();
    let out = env
        .call(
            "bash",
            json!({"command": "echo one; echo two >&2; echo three; echo four >&2"}),
        )
        .await;
    assert_eq!(ok(&out), "one\ntwo\nthree\nfour\n");
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let env = Env::new();
    let out = env
        .call(
            "bash",
            json!({"command": "sleep 30 & echo $!; sleep 30", "timeout": 1}),
        )
        .await;
    let t = err(&out);
    assert!(t.ends_with("Command timed out after 1 seconds"), "{t}");
    let pid: u32 = t.lines().next().unwrap().trim().parse().unwrap();
    // The background sleep was in the group and got SIGKILL; give the reaper a moment.
    assert!(
        exits_soon(pid).await,
        "grandchild {pid} survived the timeout"
    );
}

#[tokio::test]
async fn abort_kills_promptly() {
    let env = Env::new();
    let mut ctx = env.ctx();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    ctx.updates = Some(tx);
    let cancel = ctx.cancel.clone();
    let call = tokio::spawn(call_with(
        "bash",
        json!({"command": "echo started; sleep 30"}),
        ctx,
    ));
    // Cancel once the command is demonstrably running.
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("no output update")
        .expect("update channel closed");
    cancel.cancel();
    let out = call.await.unwrap();
    let t = err(&out);
    assert!(t.ends_with("Command aborted"), "{t}");
    assert!(t.starts_with("started"), "{t}");
}

#[tokio::test]
async fn background_process_does_not_hold_the_call() {
    let env = Env::new();
    // The background sleep inherits the output pipe; the call must still return.
    let out = env
        .call("bash", json!({"command": "sleep 5 & echo quick"}))
        .await;
    assert_eq!(ok(&out), "quick\n");
}

#[tokio::test]
async fn huge_output_keeps_tail_and_saves_full_file() {
    let env = Env::new();
    let out = env.call("bash", json!({"command": "seq 1 200000"})).await;
    let t = ok(&out);
    assert!(
        t.contains("\n200000\n"),
        "{}",
        &t[t.len().saturating_sub(200)..]
    );
    assert!(!t.starts_with("1\n"));
    let details = out.details.clone().unwrap();
    let path = details["fullOutputPath"].as_str().unwrap().to_string();
    assert!(t.contains(&format!("Full output: {path}")));
    assert!(t.contains("of 200000"), "{}", &t[t.len() - 200..]);
    assert!(path.starts_with(&*env.artifacts.path().to_string_lossy()));
    let full = std::fs::read_to_string(&path).unwrap();
    let expected: String = (1..=200000).map(|i| format!("{i}\n")).collect();
    assert_eq!(full, expected);
    assert!(text(&out).len() <= 51 * 1024 + 200);
}

#[tokio::test]
async fn runaway_output_saves_a_capped_file() {
    let env = Env::new();
    let total: u64 = 40_000_000;
    let out = env
        .call("bash", json!({"command": format!("yes | head -c {total}")}))
        .await;
    let t = ok(&out);
    assert!(
        t.contains("in the middle dropped"),
        "{}",
        &t[t.len() - 300..]
    );
    let details = out.details.clone().unwrap();
    let cap = cadre_tools::full_output::DEFAULT_FULL_OUTPUT_CAP;
    let dropped = details["fullOutputDroppedBytes"].as_u64().unwrap();
    assert_eq!(dropped, total - cap);
    let path = details["fullOutputPath"].as_str().unwrap();
    let size = std::fs::metadata(path).unwrap().len();
    let marker = cadre_tools::full_output::dropped_marker(dropped);
    assert_eq!(size, cap + marker.len() as u64);
    // Nothing else was left in the artifacts directory (the tail's ring file is gone).
    assert_eq!(std::fs::read_dir(env.artifacts.path()).unwrap().count(), 1);
}

#[tokio::test]
async fn updates_stream_partial_output() {
    let env = Env::new();
    let mut ctx = env.ctx();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    ctx.updates = Some(tx);
    let out = call_with(
        "bash",
        json!({"command": "echo first; sleep 0.3; echo second"}),
        ctx,
    )
    .await;
    ok(&out);
    let first = rx.recv().await.unwrap();
    assert_eq!(first["content"][0]["type"], "text");
    assert!(
        first["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("first")
    );
}

#[tokio::test]
async fn missing_cwd_is_reported() {
    let env = Env::new();
    let mut ctx = env.ctx();
    ctx.cwd = env.path("does-not-exist");
    let out = call_with("bash", json!({"command": "echo hi"}), ctx).await;
    assert!(err(&out).starts_with("Working directory does not exist"));
}

#[tokio::test]
async fn dropping_the_call_kills_the_group() {
    let env = Env::new();
    let mut ctx = env.ctx();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    ctx.updates = Some(tx);
    let call = tokio::spawn(call_with(
        "bash",
        json!({"command": "sleep 30 & echo $!; wait"}),
        ctx,
    ));
    let update = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("no output update")
        .expect("update channel closed");
    let pid: u32 = update["content"][0]["text"]
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(pid));
    // The caller gives up on the call (its future is dropped), as an agent loop does on abort.
    call.abort();
    let _ = call.await;
    assert!(
        exits_soon(pid).await,
        "background process {pid} survived the dropped call"
    );
}

/// A child's bash holds every call to its limit: a call may shorten it, not lengthen it, and
/// `timeout: 0` (Pi's "none") does not remove it.
#[tokio::test]
async fn a_timeout_limit_holds_every_call() {
    use cadre_tools::{BashTool, Tool};
    let env = Env::new();
    let tool = BashTool::new().with_timeout_limit(Some(Duration::from_secs(1)));
    assert!(
        tool.spec()
            .parameters
            .to_string()
            .contains("at most and by default 1 seconds"),
        "the model is told the limit"
    );
    for timeout in [json!(0), json!(100), json!(null)] {
        let args = if timeout.is_null() {
            json!({"command": "sleep 30"})
        } else {
            json!({"command": "sleep 30", "timeout": timeout})
        };
        let out = tokio::time::timeout(Duration::from_secs(20), tool.execute(args, env.ctx()))
            .await
            .expect("the limit did not hold");
        let t = err(&out);
        assert!(
            t.ends_with("Command timed out after 1 seconds"),
            "{timeout}: {t}"
        );
    }
}
