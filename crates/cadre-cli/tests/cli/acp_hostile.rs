//! `cadre acp` against a hostile editor, model or repository: what it must refuse, and that
//! it still ends when the editor stops cooperating.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use cadre_testkit::{Match, Reply, Rule};
use serde_json::{Value, json};

use crate::acp::{Raw, error_code, initialize};
use crate::harness::{Fixture, HANG_GUARD};

/// `session/new` in `cwd`; the new session's id.
fn new_session(raw: &mut Raw, id: i64, cwd: &Path) -> String {
    raw.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "session/new",
                "params": {"cwd": cwd, "mcpServers": []}})
        .to_string(),
    );
    let lines = raw.until_response(id);
    lines.last().unwrap()["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session: {lines:#?}"))
        .to_string()
}

/// `session/load` of `session` in `cwd`; its answer.
fn load(raw: &mut Raw, id: i64, session: &str, cwd: &Path) -> Value {
    raw.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "session/load",
                "params": {"sessionId": session, "cwd": cwd, "mcpServers": []}})
        .to_string(),
    );
    raw.until_response(id).pop().unwrap()
}

fn message(answer: &Value) -> &str {
    answer["error"]["message"].as_str().unwrap_or("")
}

#[test]
fn session_load_takes_only_the_whole_id_of_this_directorys_sessions() {
    let fixture = Fixture::new();
    // A repository's files whose names pass for session ids.
    let empty = fixture.project.join("victim");
    std::fs::write(&empty, "").unwrap();
    std::fs::write(fixture.project.join("LICENSE"), "MIT\n").unwrap();
    let other = fixture.project.parent().unwrap().join("other-project");
    std::fs::create_dir_all(&other).unwrap();

    let mut raw = Raw::start(&fixture);
    initialize(&mut raw, json!({}));
    let session = new_session(&mut raw, 2, &fixture.project);

    for (id, name) in [(3, "victim"), (4, "LICENSE")] {
        let answer = load(&mut raw, id, name, &fixture.project);
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert!(
            message(&answer).contains("no session with the id"),
            "{answer}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&empty).unwrap(),
        "",
        "a load never writes a repository's file"
    );
    assert_eq!(
        std::fs::read_to_string(fixture.project.join("LICENSE")).unwrap(),
        "MIT\n"
    );

    // A prefix is not the id.
    let answer = load(&mut raw, 5, &session[..8], &fixture.project);
    assert!(
        message(&answer).contains("no session with the id"),
        "{answer}"
    );
    // The session itself is open, so it is refused as open (not as missing).
    let answer = load(&mut raw, 7, &session, &fixture.project);
    assert!(message(&answer).contains("already open"), "{answer}");
    assert_eq!(error_code(&[answer]), -32602);
    raw.finish();

    // In a new connection the whole id loads.
    let mut raw = Raw::start(&fixture);
    initialize(&mut raw, json!({}));
    // Another directory's load does not reach this directory's sessions.
    let answer = load(&mut raw, 2, &session, &other);
    assert!(
        message(&answer).contains("no session with the id"),
        "{answer}"
    );
    let answer = load(&mut raw, 3, &session, &fixture.project);
    assert!(answer["result"].is_object(), "{answer}");
    raw.finish();
    assert_eq!(
        fixture.session_files().len(),
        1,
        "{:?}",
        fixture.session_files()
    );
}

/// Waits at most [`HANG_GUARD`] for `child` to exit; its status.
fn exit_of(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + HANG_GUARD;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            panic!("cadre acp did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An editor that stops reading once it has its session: the answer of a turn (far more than
/// a pipe holds) stays unread.
fn deaf_editor(fixture: &Fixture) -> (std::process::Child, impl Sized) {
    let big = "output nobody reads. ".repeat(50_000);
    fixture
        .server
        .script(Rule::new(Match::Always).reply(Reply::text(&big)));
    deaf_turn(fixture, || {
        fixture.session_files().first().is_some_and(|f| {
            std::fs::read_to_string(f).is_ok_and(|t| t.contains("output nobody reads"))
        })
    })
}

/// An editor that stops reading once it has its session, and prompts a turn the fixture has
/// scripted; returns once `ready`.
fn deaf_turn(fixture: &Fixture, ready: impl FnMut() -> bool) -> (std::process::Child, impl Sized) {
    let mut cmd = fixture.command(&["acp", "--model", "fake/m1"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let stdin = child.stdin.as_mut().unwrap();
    let mut answer = |stdin: &mut std::process::ChildStdin, request: Value| {
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout ended");
            let value: Value = serde_json::from_str(&line).unwrap();
            if value["id"] == request["id"] {
                return value;
            }
        }
    };
    answer(
        stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
    );
    let session = answer(
        stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
               "params": {"cwd": fixture.project, "mcpServers": []}}),
    )["result"]["sessionId"]
        .clone();
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                        "params": {"sessionId": session,
                                   "prompt": [{"type": "text", "text": "talk a lot"}]}});
    writeln!(stdin, "{prompt}").unwrap();
    stdin.flush().unwrap();
    crate::harness::wait_until("the turn to be under way", ready);
    (child, stdout)
}

#[test]
fn end_of_input_ends_the_agent_even_when_the_editor_does_not_read() {
    let fixture = Fixture::new();
    let (mut child, _unread) = deaf_editor(&fixture);
    drop(child.stdin.take());
    let status = exit_of(&mut child);
    assert!(status.success(), "{status:?}");
    let entries = crate::harness::assert_valid_session(&fixture.only_session());
    assert!(
        entries
            .iter()
            .any(|e| e.to_string().contains("output nobody reads")),
        "the reply is kept"
    );
}

#[test]
fn end_of_input_ends_the_agent_when_the_editor_does_not_read_a_command_that_keeps_talking() {
    let fixture = Fixture::new();
    fixture
        .server
        .script(Rule::new(Match::assistant_turns(0)).reply(Reply::tool_call(
            "call_chatty",
            "bash",
            json!({"command": "echo $$ > chatty.pid; while :; do seq 1 3000; sleep 0.05; done"}),
        )));
    let pid_file = fixture.project.join("chatty.pid");
    let (mut child, _unread) = deaf_turn(&fixture, || {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| p.ends_with('\n'))
    });
    // Output for a while (ten updates a second): more than the pipe and the writer's queue
    // hold, so the connection's own end waits on the editor too.
    std::thread::sleep(Duration::from_secs(8));
    drop(child.stdin.take());
    let status = exit_of(&mut child);
    assert!(status.success(), "{status:?}");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    crate::harness::wait_until("the command to be stopped", || {
        !Path::new(&format!("/proc/{}", pid.trim())).exists()
    });
}

#[test]
fn sigterm_ends_the_agent_even_when_the_editor_does_not_read() {
    let fixture = Fixture::new();
    let (mut child, _unread) = deaf_editor(&fixture);
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(exit_of(&mut child).code(), Some(143), "128 + SIGTERM");
}

#[test]
fn a_cancel_right_behind_its_prompt_cancels_the_turn() {
    let fixture = Fixture::new();
    let s = &fixture.server;
    s.script(Rule::new(Match::assistant_turns(0)).reply(Reply::tool_call(
        "call_sleep",
        "bash",
        json!({"command": "sleep 5"}),
    )));
    s.script(Rule::new(Match::Always).reply(Reply::text("finished anyway")));
    let mut raw = Raw::start(&fixture);
    initialize(&mut raw, json!({}));
    let session = new_session(&mut raw, 2, &fixture.project);
    // One write: the cancel is read before the prompt's turn has started.
    let both = format!(
        "{}\n{}\n",
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
               "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    );
    let stdin = raw.stdin.as_mut().unwrap();
    stdin.write_all(both.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let lines = raw.until_response(3);
    assert_eq!(
        lines.last().unwrap()["result"]["stopReason"],
        "cancelled",
        "{lines:#?}"
    );
    assert!(
        !serde_json::to_string(&lines)
            .unwrap()
            .contains("finished anyway"),
        "{lines:#?}"
    );
    assert!(fixture.server.requests().len() <= 1);
    raw.finish();
}

#[test]
fn an_image_no_provider_takes_is_refused_and_never_stored() {
    let fixture = Fixture::new();
    fixture
        .server
        .script(Rule::new(Match::Always).reply(Reply::text("seen")));
    let mut raw = Raw::start(&fixture);
    initialize(&mut raw, json!({}));
    let session = new_session(&mut raw, 2, &fixture.project);
    let prompt = |id: i64, blocks: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
               "params": {"sessionId": session, "prompt": blocks}})
        .to_string()
    };
    raw.send(&prompt(
        3,
        json!([{"type": "image", "data": "BOGUS!!data", "mimeType": "application/x-evil"},
               {"type": "text", "text": "look"}]),
    ));
    let answer = raw.until_response(3).pop().unwrap();
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["data"]
            .as_str()
            .unwrap_or("")
            .contains("an image must be one of"),
        "{answer}"
    );
    // An embedded blob of a type providers refuse is named, not sent.
    raw.send(&prompt(
        4,
        json!([{"type": "resource", "resource":
                   {"uri": "file:///p/x.svg", "blob": "U1ZHQkxPQg==", "mimeType": "image/svg+xml"}},
               {"type": "text", "text": "look"}]),
    ));
    let answer = raw.until_response(4).pop().unwrap();
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    raw.finish();
    let text = std::fs::read_to_string(fixture.only_session()).unwrap();
    assert!(!text.contains("BOGUS!!data"), "{text}");
    assert!(!text.contains("U1ZHQkxPQg=="), "{text}");
    assert!(text.contains("binary content, not included"), "{text}");
}

#[test]
fn error_answers_do_not_send_a_clients_megabyte_back() {
    let fixture = Fixture::new();
    let mut raw = Raw::start(&fixture);
    initialize(&mut raw, json!({}));
    let n = 1024 * 1024;
    // JSON too deep to read: a parse error, which quotes the line.
    raw.send(&format!("{}{}", "[".repeat(n), "]".repeat(n)));
    let lines = raw.until_response_null();
    assert_eq!(error_code(&lines), -32700);
    assert!(lines.last().unwrap().to_string().len() < 16 * 1024);
    let cases = [
        json!({"jsonrpc": "2.0", "id": 2, "method": "x".repeat(n)}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/new",
               "params": {"cwd": format!("/{}", "a".repeat(n)), "mcpServers": []}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
               "params": {"sessionId": "s".repeat(n), "prompt": [{"type": "text", "text": "x"}]}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "session/prompt",
               "params": {"sessionId": "s", "prompt": [{"type": "t".repeat(n)}]}}),
    ];
    for (case, code) in cases.iter().zip([-32601, -32602, -32602, -32602]) {
        raw.send(&case.to_string());
        let answer = raw
            .until_response(case["id"].as_i64().unwrap())
            .pop()
            .unwrap();
        assert_eq!(
            answer["error"]["code"],
            code,
            "{}",
            &answer.to_string()[..200]
        );
        let size = answer.to_string().len();
        assert!(size < 16 * 1024, "an answer of {size} bytes");
    }
    raw.finish();
}

#[test]
fn an_editor_far_behind_is_not_sent_intermediate_tool_output() {
    let fixture = Fixture::new();
    let s = &fixture.server;
    s.script(Rule::new(Match::assistant_turns(0)).reply(Reply::tool_call(
        "call_chatty",
        "bash",
        json!({"command": "i=0; while [ $i -lt 60 ]; do seq 1 3000; sleep 0.1; \
                               i=$((i+1)); done; echo LAST-LINE; touch done.marker"}),
    )));
    s.script(Rule::new(Match::Always).reply(Reply::text("done")));
    let mut cmd = fixture.command(&["acp", "--model", "fake/m1"]);
    cmd.env("CADRE_ACP_MAX_BEHIND", "10")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let mut read_until = |id: i64| {
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout ended");
            let value: Value = serde_json::from_str(&line).unwrap();
            let done = value["id"] == id && value.get("method").is_none();
            lines.push(value);
            if done {
                return lines;
            }
        }
    };
    let mut send = |request: Value| {
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    read_until(1);
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                "params": {"cwd": fixture.project, "mcpServers": []}}));
    let session = read_until(2).pop().unwrap()["result"]["sessionId"].clone();
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
    );
    // Not read while the command talks (about sixty updates of its output so far).
    crate::harness::wait_until("the command to end", || {
        fixture.project.join("done.marker").exists()
    });
    let lines = read_until(3);
    assert_eq!(lines.last().unwrap()["result"]["stopReason"], "end_turn");
    let updates = crate::acp::updates_of(&lines);
    let of_call: Vec<&Value> = updates
        .iter()
        .filter(|u| u["toolCallId"] == "call_chatty" && u["sessionUpdate"] == "tool_call_update")
        .collect();
    let intermediate = of_call.iter().filter(|u| u.get("status").is_none()).count();
    assert!(intermediate <= 25, "{intermediate} intermediate updates");
    let last = of_call.last().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    assert!(last["content"].to_string().contains("LAST-LINE"), "{last}");
    drop(stdin);
    assert!(exit_of(&mut child).success());
}
