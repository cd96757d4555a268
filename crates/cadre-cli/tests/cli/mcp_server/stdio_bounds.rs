//! `cadre mcp` on stdio against clients that misbehave in time: one that keeps stdin open
//! while the server is signalled, one that never reads stdout, one whose configured MCP server
//! never starts, one that sends arguments of the wrong shape. Raw JSON-RPC lines, no SDK.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cadre_testkit::{Match, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, HANG_GUARD, assert_valid_session};

fn init_line() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string()
}

fn send(stdin: &mut ChildStdin, frame: &Value) {
    stdin.write_all(frame.to_string().as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    stdin.flush().unwrap();
}

/// `cadre mcp --model fake/m1` with piped stdio.
fn spawn(f: &Fixture, extra_env: &[(&str, &str)]) -> Child {
    let mut cmd = f.command(&["mcp", "--model", "fake/m1"]);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The frames of stdout, as they arrive.
fn frames(stdout: ChildStdout) -> mpsc::Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let frame = serde_json::from_str(&line)
                .unwrap_or_else(|e| json!({"not_a_frame": line, "error": e.to_string()}));
            if tx.send(frame).is_err() {
                return;
            }
        }
    });
    rx
}

/// The frame answering request `id` (the guard fails the test).
fn answer(rx: &mpsc::Receiver<Value>, id: i64) -> Value {
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let frame = rx
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no answer to request {id}: {e}"));
        assert!(frame.get("not_a_frame").is_none(), "{frame}");
        if frame["id"] == id {
            return frame;
        }
    }
}

/// The exit status within the guard (killed and failed otherwise), and stderr.
fn exit_of(mut child: Child) -> (Option<i32>, String) {
    let deadline = Instant::now() + HANG_GUARD;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("cadre mcp did not exit within {HANG_GUARD:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        std::io::Read::read_to_string(&mut pipe, &mut stderr).unwrap();
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    (status.code(), stderr)
}

#[test]
fn the_first_sigterm_stops_the_tasks_and_exits_while_stdin_stays_open() {
    let f = Fixture::new();
    f.server.script(
        Rule::new(Match::first_user("[hang]"))
            .reply(Reply::text("too late").latency(Duration::from_secs(600))),
    );
    let mut child = spawn(&f, &[]);
    let mut stdin = child.stdin.take().unwrap();
    let rx = frames(child.stdout.take().unwrap());
    stdin.write_all(init_line().as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    answer(&rx, 1);
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "Agent",
            "arguments": {"description": "wait", "prompt": "[hang] wait",
                          "subagent_type": "Explore", "run_in_background": true}}}),
    );
    let launched = answer(&rx, 2);
    let text = launched["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("task_id="), "{launched}");
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // stdin is still open: the signal alone ends the server.
    let (code, stderr) = exit_of(child);
    drop(stdin);
    assert_eq!(code, Some(143), "{stderr}");
    let records = crate::orchestration::task_records(&f);
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(records[0]["status"], "stopped", "{records:#?}");
    assert_valid_session(&f.only_session());
}

#[test]
fn initialize_and_tools_list_are_answered_while_a_configured_server_is_still_starting() {
    let f = Fixture::new();
    // A server that never answers, and a start-up timeout longer than the test's guard: the
    // handshake must not wait for it.
    let settings = json!({"mcpServers": {"slow": {"command": "sleep", "args": ["600"]}}});
    std::fs::write(f.home.join("settings.json"), settings.to_string()).unwrap();
    let mut child = spawn(&f, &[("CADRE_MCP_TIMEOUT_MS", "600000")]);
    let mut stdin = child.stdin.take().unwrap();
    let rx = frames(child.stdout.take().unwrap());
    stdin.write_all(init_line().as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    let init = answer(&rx, 1);
    assert_eq!(init["result"]["serverInfo"]["name"], "cadre", "{init}");
    // Listing the tools does not wait for the server either.
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    let listed = answer(&rx, 2);
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["Agent", "SendMessage", "TaskOutput", "TaskStop"]);
    drop(stdin);
    let (code, stderr) = exit_of(child);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_client_that_never_reads_stdout_cannot_hold_the_process() {
    let f = Fixture::new();
    let mut child = spawn(&f, &[]);
    let mut stdin = child.stdin.take().unwrap();
    // stdout is kept open and never read: the answers fill the pipe.
    let _unread = child.stdout.take().unwrap();
    let mut input = init_line();
    input.push('\n');
    input.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    for id in 10..310 {
        input.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/list\"}}\n"
        ));
    }
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let (code, stderr) = exit_of(child);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn arguments_that_are_not_an_object_are_invalid_params_naming_them() {
    let f = Fixture::new();
    let mut child = spawn(&f, &[]);
    let mut stdin = child.stdin.take().unwrap();
    let rx = frames(child.stdout.take().unwrap());
    stdin.write_all(init_line().as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    answer(&rx, 1);
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "TaskOutput", "arguments": "task_id=x"}}),
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": 5}}),
    );
    let bad = answer(&rx, 3);
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let message = bad["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`arguments` must be an object"),
        "{message}"
    );
    let bad = answer(&rx, 4);
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"].as_str().unwrap().contains("`name`"),
        "{bad}"
    );
    drop(stdin);
    let (code, stderr) = exit_of(child);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn an_unknown_model_fails_before_anything_is_served() {
    let f = Fixture::new();
    let out = f.run(&["mcp", "--model", "nope/x"]);
    assert!(out.stdout.is_empty(), "{out:#?}");
    let line = out.assert_one_line_error();
    assert!(line.contains("unknown model `nope/x`"), "{line}");
}
