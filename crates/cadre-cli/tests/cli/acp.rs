//! `cadre acp` driven as an editor drives it: the ACP Python SDK as the client
//! (`tests/peers/acp_client.py`) for turns, cancellation, session/load and permission requests,
//! and raw JSON-RPC lines for malformed input and for the subagent-session view (the Python SDK
//! does not know the unstable `subagents` capability).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use cadre_testkit::{Match, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, HANG_GUARD, tool_result_text};

const CHILD: &str = "[acp-child]";
const CHILD_ANSWER: &str = "The notes start with alpha line.\nThat is the whole report.";
/// The second line of the child's answer: in its result, never in a turn's preview.
const CHILD_SECOND_LINE: &str = "That is the whole report.";
const FINAL: &str = "All done: alpha line.";

/// The Python with the ACP SDK, or `None` (with a note) outside CI when it is missing.
fn python() -> Option<PathBuf> {
    cadre_testkit::peers::python_with_acp()
}

fn peer_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/acp_client.py")
}

/// Runs the Python editor on `scenario` against `cadre acp --model fake/m1 EXTRA`; returns
/// its report.
fn editor(fixture: &Fixture, python: &PathBuf, scenario: &str, extra: &[&str]) -> Value {
    let mut cmd = Command::new(python);
    cmd.arg(peer_script())
        .arg(scenario)
        .arg(&fixture.project)
        .arg(env!("CARGO_BIN_EXE_cadre"))
        .args(["acp", "--model", "fake/m1"])
        .args(extra)
        .current_dir(&fixture.project)
        .env_clear()
        .env("HOME", &fixture.user_home)
        .env("CADRE_HOME", &fixture.home)
        .env("CADRE_RETRY_BASE_MS", "10");
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    let out = crate::harness::Running::spawn(cmd, None).wait(HANG_GUARD * 2);
    assert!(out.success(), "the editor failed: {out:#?}");
    serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("the editor's report is not JSON ({e}): {out:#?}"))
}

fn kinds(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap_or("?").to_string())
        .collect()
}

fn text_of(updates: &[Value], kind: &str) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

/// The parent reads notes.txt and launches a foreground Explore child that reads it too;
/// then answers.
fn script_turn(f: &Fixture, marker: &str) {
    let s = &f.server;
    let parent = !Match::first_user(CHILD);
    s.script(
        Rule::new(
            parent
                .clone()
                .and(Match::first_user(marker))
                .and(Match::assistant_turns(0)),
        )
        .reply(
            Reply::new()
                .thinking("I should read and delegate.")
                .text("Reading the notes and asking a helper.")
                .tool_call("call_read", "read", json!({"path": "notes.txt"}))
                .tool_call(
                    "call_agent",
                    "Agent",
                    json!({"subagent_type": "Explore", "description": "Scan notes",
                               "prompt": format!("{CHILD} Read notes.txt, report line one.")}),
                ),
        ),
    );
    s.script(Rule::new(parent.and(Match::first_user(marker))).reply(Reply::text(FINAL)));
    s.script(
        Rule::new(Match::first_user(CHILD).and(Match::assistant_turns(0))).reply(Reply::tool_call(
            "child_read",
            "read",
            json!({"path": "notes.txt"}),
        )),
    );
    s.script(Rule::new(Match::first_user(CHILD)).reply(Reply::text(CHILD_ANSWER)));
}

#[test]
fn a_prompt_streams_chunks_tool_calls_and_the_childs_progress() {
    let Some(python) = python() else { return };
    let fixture = Fixture::new();
    script_turn(&fixture, "ACP-TURN");
    let report = editor(&fixture, &python, "turn", &[]);

    let init = &report["initialize"];
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentInfo"]["name"], "cadre", "{init}");
    assert_eq!(init["agentCapabilities"]["loadSession"], true, "{init}");
    // fake/m1 takes text only.
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["image"], false,
        "{init}"
    );
    assert_eq!(report["prompt"]["stopReason"], "end_turn", "{report:#}");
    assert_eq!(
        report["exit"], 0,
        "end of stdin ends the agent cleanly: {report:#}"
    );

    let updates = report["updates"].as_array().unwrap();
    let session = report["sessionId"].as_str().unwrap();
    assert!(
        updates.iter().all(|u| u["_session"] == session),
        "{updates:#?}"
    );
    assert!(
        text_of(updates, "agent_thought_chunk").contains("I should read and delegate."),
        "{:?}",
        kinds(updates)
    );
    let said = text_of(updates, "agent_message_chunk");
    assert!(
        said.contains("Reading the notes") && said.contains(FINAL),
        "{said}"
    );

    // The read: announced with its kind and location, completed with the file's text.
    let read = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "call_read")
        .unwrap_or_else(|| panic!("no read tool_call: {updates:#?}"));
    assert_eq!(read["kind"], "read");
    assert_eq!(read["rawInput"]["path"], "notes.txt");
    assert_eq!(
        read["locations"][0]["path"],
        fixture.project.join("notes.txt").to_string_lossy().as_ref()
    );
    let read_done = updates
        .iter()
        .find(|u| {
            u["sessionUpdate"] == "tool_call_update"
                && u["toolCallId"] == "call_read"
                && u["status"] == "completed"
        })
        .unwrap_or_else(|| panic!("no completed read: {updates:#?}"));
    assert!(
        read_done["content"].to_string().contains("alpha line"),
        "{read_done}"
    );

    // The child: progress in the Agent call's content, then its result.
    let agent_updates: Vec<&Value> = updates
        .iter()
        .filter(|u| u["toolCallId"] == "call_agent")
        .collect();
    assert_eq!(
        agent_updates[0]["sessionUpdate"], "tool_call",
        "{agent_updates:#?}"
    );
    assert_eq!(agent_updates[0]["title"], "Agent: Scan notes");
    let progress = agent_updates
        .iter()
        .map(|u| u["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        progress.contains("Explore \\\"Scan notes\\\""),
        "{progress}"
    );
    assert!(
        progress.contains("turn 1,") && progress.contains("tokens"),
        "{progress}"
    );
    let last = agent_updates.last().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    assert!(
        last["content"].to_string().contains(CHILD_SECOND_LINE),
        "{last}"
    );
}

#[test]
fn cancel_mid_turn_answers_cancelled_and_stops_the_command() {
    let Some(python) = python() else { return };
    let fixture = Fixture::new();
    let command = "echo $$ > sleep.pid && exec sleep 300";
    fixture.server.script(
        Rule::new(Match::first_user("ACP-CANCEL").and(Match::assistant_turns(0))).reply(
            Reply::new().text("Running it.").tool_call(
                "call_sleep",
                "bash",
                json!({"command": command}),
            ),
        ),
    );
    fixture
        .server
        .script(Rule::new(Match::first_user("ACP-CANCEL")).reply(Reply::text("should not run")));
    let report = editor(&fixture, &python, "cancel", &[]);
    assert_eq!(report["prompt"]["stopReason"], "cancelled", "{report:#}");
    assert_eq!(report["exit"], 0, "{report:#}");
    let updates = report["updates"].as_array().unwrap();
    assert!(
        updates
            .iter()
            .any(|u| u["toolCallId"] == "call_sleep" && u["status"] == "failed"),
        "the aborted call ends failed: {updates:#?}"
    );
    // No turn after the abort.
    assert_eq!(fixture.server.requests().len(), 1);
    let pid = std::fs::read_to_string(fixture.project.join("sleep.pid")).unwrap();
    crate::harness::wait_until("the sleep to be killed", || {
        !std::path::Path::new(&format!("/proc/{}", pid.trim())).exists()
    });
}

#[test]
fn session_load_replays_the_history_before_answering() {
    let Some(python) = python() else { return };
    let fixture = Fixture::new();
    script_turn(&fixture, "ACP-TURN");
    let report = editor(&fixture, &python, "load", &[]);
    assert_eq!(report["prompt"]["stopReason"], "end_turn", "{report:#}");
    let loaded = &report["loaded"];
    let replayed = report["loaded_updates"].as_array().unwrap();
    assert_eq!(
        loaded["updates_at_load"].as_u64().unwrap() as usize,
        replayed.len(),
        "every replayed update arrives before the load answer: {report:#}"
    );
    assert!(
        text_of(replayed, "user_message_chunk").contains("ACP-TURN read and delegate"),
        "{:?}",
        kinds(replayed)
    );
    assert!(text_of(replayed, "agent_message_chunk").contains(FINAL));
    assert!(text_of(replayed, "agent_thought_chunk").contains("I should read"));
    let read = replayed
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "call_read")
        .unwrap_or_else(|| panic!("no replayed read: {replayed:#?}"));
    assert_eq!(read["status"], "completed");
    assert!(read["content"].to_string().contains("alpha line"), "{read}");
    let agent = replayed
        .iter()
        .find(|u| u["toolCallId"] == "call_agent")
        .unwrap();
    assert!(
        agent["content"].to_string().contains(CHILD_SECOND_LINE),
        "{agent}"
    );
}

fn script_ask(f: &Fixture) {
    let s = &f.server;
    std::fs::write(
        f.home.join("settings.json"),
        json!({"subagents": {"authorization": "ask"}}).to_string(),
    )
    .unwrap();
    let parent = !Match::first_user(CHILD);
    s.script(
        Rule::new(parent.clone().and(Match::assistant_turns(0))).reply(Reply::tool_call(
            "call_agent",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Scan notes",
                   "prompt": format!("{CHILD} Read notes.txt, report line one.")}),
        )),
    );
    s.script(Rule::new(parent).reply(Reply::text(FINAL)));
    s.script(Rule::new(Match::first_user(CHILD)).reply(Reply::text(CHILD_ANSWER)));
}

#[test]
fn authorization_ask_puts_launches_to_the_editor() {
    let Some(python) = python() else { return };
    for answer in ["allow", "reject"] {
        let fixture = Fixture::new();
        script_ask(&fixture);
        let report = editor(&fixture, &python, answer, &[]);
        assert_eq!(report["prompt"]["stopReason"], "end_turn", "{report:#}");
        let asked = report["permissions"].as_array().unwrap();
        assert_eq!(asked.len(), 1, "{answer}: {report:#}");
        assert_eq!(
            asked[0]["toolCall"]["toolCallId"], "call_agent",
            "{asked:#?}"
        );
        assert!(
            asked[0]["toolCall"]["title"]
                .as_str()
                .unwrap()
                .contains("Explore \"Scan notes\""),
            "{asked:#?}"
        );
        let kinds: Vec<&str> = asked[0]["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["allow_once", "reject_once"]);
        let parent_last = fixture
            .server
            .requests()
            .into_iter()
            .rfind(|r| !r.first_user_text().unwrap_or_default().contains(CHILD))
            .unwrap();
        let result = tool_result_text(&parent_last);
        let child_ran = fixture
            .server
            .requests()
            .iter()
            .any(|r| r.first_user_text().unwrap_or_default().contains(CHILD));
        if answer == "allow" {
            assert!(child_ran, "allowed: the child runs");
            assert!(result.contains(CHILD_ANSWER), "{result}");
        } else {
            assert!(!child_ran, "rejected: no child");
            assert!(result.contains("declined"), "{result}");
        }
    }
}

#[test]
fn session_new_with_a_relative_cwd_is_a_clear_error() {
    let Some(python) = python() else { return };
    let fixture = Fixture::new();
    let report = editor(&fixture, &python, "badcwd", &[]);
    let error = &report["error"];
    assert_eq!(error["code"], -32602, "{report:#}");
    assert!(
        error["message"].as_str().unwrap().contains("absolute"),
        "{report:#}"
    );
}

/// `cadre acp` with raw JSON-RPC lines: a writer, and a reader of its stdout lines.
pub(crate) struct Raw {
    pub(crate) child: std::process::Child,
    pub(crate) stdin: Option<std::process::ChildStdin>,
    pub(crate) lines: mpsc::Receiver<String>,
}

impl Raw {
    pub(crate) fn start(fixture: &Fixture) -> Raw {
        Raw::start_with(fixture, &[])
    }

    pub(crate) fn start_with(fixture: &Fixture, env: &[(&str, &str)]) -> Raw {
        let mut cmd = fixture.command(&["acp", "--model", "fake/m1"]);
        cmd.envs(env.iter().copied());
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Raw {
            child,
            stdin,
            lines,
        }
    }

    pub(crate) fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Every line up to and including the response with `id` (each must be JSON-RPC).
    pub(crate) fn until_response(&self, id: i64) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let line = self
                .lines
                .recv_timeout(HANG_GUARD)
                .unwrap_or_else(|_| panic!("no response {id}; got {out:#?}"));
            let value: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            assert_eq!(value["jsonrpc"], "2.0", "{value}");
            let done = value["id"] == id && value.get("method").is_none();
            out.push(value);
            if done {
                return out;
            }
        }
    }

    /// Closes stdin; the process must exit 0 on its own.
    pub(crate) fn finish(mut self) {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + HANG_GUARD;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "exit: {status:?}");
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "cadre acp did not exit"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

pub(crate) fn initialize(raw: &mut Raw, capabilities: Value) {
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": capabilities}})
        .to_string(),
    );
    let init = raw.until_response(1);
    assert!(init.last().unwrap()["result"].is_object(), "{init:#?}");
}

pub(crate) fn error_code(lines: &[Value]) -> i64 {
    lines.last().unwrap()["error"]["code"].as_i64().unwrap_or(0)
}

#[test]
fn malformed_messages_get_json_rpc_errors_and_the_agent_lives_on() {
    let fixture = Fixture::new();
    let mut raw = Raw::start(&fixture);
    initialize(&mut raw, json!({}));

    raw.send("this is not json");
    let lines = raw.until_response_null();
    assert_eq!(error_code(&lines), -32700, "{lines:#?}");

    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"session/frobnicate","params":{}}"#);
    assert_eq!(error_code(&raw.until_response(2)), -32601);

    raw.send(r#"{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":42}}"#);
    assert_eq!(error_code(&raw.until_response(3)), -32602);

    raw.send(
        r#"{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}"#,
    );
    let lines = raw.until_response(4);
    assert!(
        lines.last().unwrap()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown session"),
        "{lines:#?}"
    );

    raw.send(r#"{"jsonrpc":"2.0","id":5,"method":"session/load","params":{"sessionId":"../../etc/passwd","cwd":"/","mcpServers":[]}}"#);
    let lines = raw.until_response(5);
    assert!(
        lines.last().unwrap()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a session id"),
        "{lines:#?}"
    );

    // A line over the size cap (64 MiB) is skipped with a parse error, without echoing it.
    let huge = format!("{{\"x\":\"{}\"}}", "a".repeat(65 * 1024 * 1024));
    raw.send(&huge);
    let lines = raw.until_response_null();
    assert_eq!(error_code(&lines), -32700, "{:?}", lines.last());
    assert!(lines.last().unwrap().to_string().len() < 1024);

    // Still serving: a session opens and a prompt runs.
    fixture
        .server
        .script(Rule::new(Match::Always).reply(Reply::text("still here")));
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 6, "method": "session/new",
                "params": {"cwd": fixture.project, "mcpServers": []}})
        .to_string(),
    );
    let lines = raw.until_response(6);
    let session = lines.last().unwrap()["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "session/prompt",
                "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}})
        .to_string(),
    );
    let lines = raw.until_response(7);
    assert_eq!(
        lines.last().unwrap()["result"]["stopReason"],
        "end_turn",
        "{lines:#?}"
    );
    raw.finish();
}

impl Raw {
    /// Lines up to an error response with a null id (a frame that could not be read).
    pub(crate) fn until_response_null(&self) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let line = self
                .lines
                .recv_timeout(HANG_GUARD)
                .unwrap_or_else(|_| panic!("no error response; got {out:#?}"));
            let value: Value = serde_json::from_str(&line).unwrap();
            let done = value["id"].is_null() && value.get("error").is_some();
            out.push(value);
            if done {
                return out;
            }
        }
    }
}

#[test]
fn a_client_with_the_subagents_capability_sees_children_as_subagent_sessions() {
    let fixture = Fixture::new();
    script_turn(&fixture, "ACP-SUB");
    let mut raw = Raw::start(&fixture);
    initialize(&mut raw, json!({"subagents": {}}));
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                "params": {"cwd": fixture.project, "mcpServers": []}})
        .to_string(),
    );
    let lines = raw.until_response(2);
    let session = lines.last().unwrap()["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                "params": {"sessionId": session,
                           "prompt": [{"type": "text", "text": "ACP-SUB go"}]}})
        .to_string(),
    );
    let lines = raw.until_response(3);
    assert_eq!(lines.last().unwrap()["result"]["stopReason"], "end_turn");
    let updates: Vec<&Value> = lines
        .iter()
        .filter(|l| l["method"] == "session/update")
        .map(|l| &l["params"])
        .collect();
    let announced: Vec<&&Value> = updates
        .iter()
        .filter(|u| u["update"]["sessionUpdate"] == "subagent_update")
        .collect();
    assert!(!announced.is_empty(), "{updates:#?}");
    let first = &announced[0];
    assert_eq!(
        first["sessionId"],
        session.as_str(),
        "sent on the parent session"
    );
    assert_eq!(first["update"]["title"], "Scan notes");
    assert_eq!(first["update"]["state"]["state"], "running");
    let child = first["update"]["sessionId"].as_str().unwrap();
    let last = announced.last().unwrap();
    assert_eq!(last["update"]["sessionId"], child);
    assert_eq!(last["update"]["state"]["state"], "idle", "{announced:#?}");
    assert_eq!(last["update"]["state"]["stopReason"], "end_turn");
    // The Agent call names the child session; the child's turn is on its own session.
    assert!(
        updates
            .iter()
            .any(|u| u["update"]["toolCallId"] == "call_agent"
                && u["update"]["content"][0]["type"] == "session"
                && u["update"]["content"][0]["sessionId"] == child),
        "{updates:#?}"
    );
    let child_said: String = updates
        .iter()
        .filter(|u| {
            u["sessionId"] == child && u["update"]["sessionUpdate"] == "agent_message_chunk"
        })
        .filter_map(|u| u["update"]["content"]["text"].as_str())
        .collect();
    assert!(
        child_said.contains(CHILD_SECOND_LINE),
        "the child's session ends with its result: {updates:#?}"
    );
    raw.finish();
}

/// A session with `servers` as its editor's MCP servers, a prompt `text`; the lines up to the
/// prompt's answer.
fn raw_turn(fixture: &Fixture, capabilities: Value, servers: Value, text: &str) -> Vec<Value> {
    let mut raw = Raw::start(fixture);
    initialize(&mut raw, capabilities);
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                "params": {"cwd": fixture.project, "mcpServers": servers}})
        .to_string(),
    );
    let lines = raw.until_response(2);
    let session = lines.last().unwrap()["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session: {lines:#?}"))
        .to_string();
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
        .to_string(),
    );
    let lines = raw.until_response(3);
    raw.finish();
    lines
}

pub(crate) fn updates_of(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| l["method"] == "session/update")
        .map(|l| l["params"]["update"].clone())
        .collect()
}

#[test]
fn the_editors_mcp_servers_give_the_session_their_tools() {
    let Some(python) = python() else { return };
    let fixture = Fixture::new();
    let server = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/mcp_server_tools.py");
    fixture.server.script(
        Rule::new(Match::first_user("ACP-MCP").and(Match::assistant_turns(0))).reply(
            Reply::tool_call("call_mcp", "mcp__edtools__lookup", json!({"key": "k1"})),
        ),
    );
    fixture
        .server
        .script(Rule::new(Match::first_user("ACP-MCP")).reply(Reply::text(FINAL)));
    let servers = json!([{"name": "edtools", "command": python, "args": [server], "env": []}]);
    let lines = raw_turn(&fixture, json!({}), servers, "ACP-MCP look it up");
    assert_eq!(
        lines.last().unwrap()["result"]["stopReason"],
        "end_turn",
        "{lines:#?}"
    );
    let first = &fixture.server.requests()[0];
    assert!(
        first.body.to_string().contains("mcp__edtools__lookup"),
        "the model is offered the editor's server's tool"
    );
    let updates = updates_of(&lines);
    let call = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "call_mcp")
        .unwrap_or_else(|| panic!("{updates:#?}"));
    // `other` is ACP's default kind, left out on the wire.
    assert!(call["kind"].is_null() || call["kind"] == "other", "{call}");
    assert_eq!(call["title"], "mcp__edtools__lookup");
    assert_eq!(call["name"], "mcp__edtools__lookup");
    assert!(
        updates.iter().any(|u| u["toolCallId"] == "call_mcp"
            && u["status"] == "completed"
            && u["content"].to_string().contains("value of k1")),
        "{updates:#?}"
    );
}

#[test]
fn a_background_child_is_a_tool_call_of_its_own_that_completes_with_the_task() {
    let fixture = Fixture::new();
    let s = &fixture.server;
    let parent = !Match::first_user(CHILD);
    s.script(
        Rule::new(parent.clone().and(Match::last_user("<task-notification>")))
            .reply(Reply::text(FINAL)),
    );
    s.script(
        Rule::new(parent.clone().and(Match::assistant_turns(0))).reply(Reply::tool_call(
            "call_bg",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Read in background",
                   "run_in_background": true,
                   "prompt": format!("{CHILD} Read notes.txt, report line one.")}),
        )),
    );
    s.script(Rule::new(parent).reply(Reply::text("Launched; waiting.")));
    s.script(Rule::new(Match::first_user(CHILD)).reply(Reply::text(CHILD_ANSWER)));
    let lines = raw_turn(&fixture, json!({}), json!([]), "ACP-BG go");
    assert_eq!(
        lines.last().unwrap()["result"]["stopReason"],
        "end_turn",
        "{lines:#?}"
    );
    let updates = updates_of(&lines);
    let own = updates
        .iter()
        .find(|u| {
            u["sessionUpdate"] == "tool_call"
                && u["toolCallId"].as_str().unwrap_or("").starts_with("task-")
        })
        .unwrap_or_else(|| panic!("no tool call for the background task: {updates:#?}"));
    assert_eq!(own["title"], "Agent (background): Read in background");
    let id = own["toolCallId"].as_str().unwrap();
    assert!(
        updates.iter().any(|u| u["toolCallId"] == id
            && u["status"] == "completed"
            && u["content"].to_string().contains(CHILD_SECOND_LINE)),
        "the task's own call ends with its result: {updates:#?}"
    );
    // The parent answered the task's notice in the same turn.
    let said: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert!(said.contains(FINAL), "{said}");
}

#[test]
fn an_unanswered_permission_request_is_a_refusal_after_its_bound() {
    let fixture = Fixture::new();
    script_ask(&fixture);
    let mut raw = Raw::start_with(&fixture, &[("CADRE_ACP_PERMISSION_TIMEOUT_MS", "300")]);
    initialize(&mut raw, json!({}));
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                "params": {"cwd": fixture.project, "mcpServers": []}})
        .to_string(),
    );
    let lines = raw.until_response(2);
    let session = lines.last().unwrap()["result"]["sessionId"].clone();
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}})
        .to_string(),
    );
    // The editor never answers the question.
    let lines = raw.until_response(3);
    assert!(
        lines
            .iter()
            .any(|l| l["method"] == "session/request_permission"),
        "{lines:#?}"
    );
    assert_eq!(lines.last().unwrap()["result"]["stopReason"], "end_turn");
    let result = tool_result_text(&fixture.server.requests().pop().unwrap());
    assert!(result.contains("declined"), "{result}");
    assert!(
        !fixture
            .server
            .requests()
            .iter()
            .any(|r| r.first_user_text().unwrap_or_default().contains(CHILD)),
        "no child ran"
    );
    raw.finish();
}

#[test]
fn a_second_prompt_while_one_runs_is_refused_and_sigterm_ends_the_agent() {
    let fixture = Fixture::new();
    fixture
        .server
        .script(Rule::new(Match::assistant_turns(0)).reply(Reply::tool_call(
            "call_sleep",
            "bash",
            json!({"command": "touch started && exec sleep 300"}),
        )));
    let mut raw = Raw::start(&fixture);
    initialize(&mut raw, json!({}));
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                "params": {"cwd": fixture.project, "mcpServers": []}})
        .to_string(),
    );
    let lines = raw.until_response(2);
    let session = lines.last().unwrap()["result"]["sessionId"].clone();
    let prompt = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
               "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}})
        .to_string()
    };
    raw.send(&prompt(3));
    crate::harness::wait_until("the command to start", || {
        fixture.project.join("started").exists()
    });
    raw.send(&prompt(4));
    let lines = raw.until_response(4);
    let error = &lines.last().unwrap()["error"];
    assert!(
        error["message"]
            .as_str()
            .unwrap_or("")
            .contains("already running"),
        "{lines:#?}"
    );
    let status = Command::new("kill")
        .args(["-TERM", &raw.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = std::time::Instant::now() + HANG_GUARD;
    let code = loop {
        if let Some(status) = raw.child.try_wait().unwrap() {
            break status.code();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "SIGTERM did not end cadre acp"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(code, Some(143), "128 + SIGTERM");
    // The session file was closed with the aborted call answered.
    let entries = crate::harness::assert_valid_session(&fixture.only_session());
    crate::harness::assert_every_tool_call_answered(&crate::harness::messages(&entries));
}

#[test]
fn end_of_input_mid_turn_stops_the_child_and_exits_cleanly() {
    let fixture = Fixture::new();
    let s = &fixture.server;
    s.script(
        Rule::new((!Match::first_user(CHILD)).and(Match::assistant_turns(0))).reply(
            Reply::tool_call(
                "call_agent",
                "Agent",
                json!({"subagent_type": "general-purpose", "description": "Wait",
                       "prompt": format!("{CHILD} wait")}),
            ),
        ),
    );
    s.script(
        Rule::new(Match::first_user(CHILD).and(Match::assistant_turns(0))).reply(Reply::tool_call(
            "child_sleep",
            "bash",
            json!({"command": "touch started && exec sleep 300"}),
        )),
    );
    let mut raw = Raw::start(&fixture);
    initialize(&mut raw, json!({}));
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                "params": {"cwd": fixture.project, "mcpServers": []}})
        .to_string(),
    );
    let lines = raw.until_response(2);
    let session = lines.last().unwrap()["result"]["sessionId"].clone();
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}})
        .to_string(),
    );
    crate::harness::wait_until("the child's command to start", || {
        fixture.project.join("started").exists()
    });
    raw.finish();
    let tasks = crate::orchestration::task_records(&fixture);
    assert_eq!(tasks.len(), 1, "{tasks:#?}");
    assert_eq!(tasks[0]["status"], "stopped", "{tasks:#?}");
    let entries = crate::harness::assert_valid_session(&fixture.only_session());
    crate::harness::assert_every_tool_call_answered(&crate::harness::messages(&entries));
}

#[test]
fn a_write_shows_its_diff_and_a_cut_reply_ends_with_max_tokens() {
    let fixture = Fixture::new();
    let s = &fixture.server;
    s.script(
        Rule::new(Match::last_user("ACP-WRITE").and(Match::assistant_turns(0))).reply(
            Reply::tool_call(
                "call_write",
                "write",
                json!({"path": "out.txt", "content": "written by the model\n"}),
            ),
        ),
    );
    s.script(Rule::new(Match::last_user("ACP-WRITE")).reply(Reply::text("Wrote it.")));
    s.script(
        Rule::new(Match::last_user("ACP-LONG"))
            .reply(Reply::text("This answer is cut").stop(cadre_testkit::StopKind::Length)),
    );
    let mut raw = Raw::start(&fixture);
    initialize(&mut raw, json!({}));
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                "params": {"cwd": fixture.project, "mcpServers": []}})
        .to_string(),
    );
    let lines = raw.until_response(2);
    let session = lines.last().unwrap()["result"]["sessionId"].clone();
    let prompt = |id: i64, text: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
               "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
        .to_string()
    };
    raw.send(&prompt(3, "ACP-WRITE"));
    let lines = raw.until_response(3);
    assert_eq!(lines.last().unwrap()["result"]["stopReason"], "end_turn");
    let updates = updates_of(&lines);
    let path = fixture.project.join("out.txt");
    let start = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "call_write")
        .unwrap_or_else(|| panic!("{updates:#?}"));
    assert_eq!(start["kind"], "edit");
    assert_eq!(
        start["locations"][0]["path"],
        path.to_string_lossy().as_ref()
    );
    assert_eq!(start["content"][0]["type"], "diff", "{start}");
    assert_eq!(start["content"][0]["newText"], "written by the model\n");
    let done = updates
        .iter()
        .find(|u| u["toolCallId"] == "call_write" && u["status"] == "completed")
        .unwrap_or_else(|| panic!("{updates:#?}"));
    assert_eq!(done["content"][0]["type"], "diff", "{done}");
    assert!(path.exists());

    raw.send(&prompt(4, "ACP-LONG"));
    let lines = raw.until_response(4);
    assert_eq!(
        lines.last().unwrap()["result"]["stopReason"],
        "max_tokens",
        "{lines:#?}"
    );
    raw.finish();
}

/// Each ACP session's bash starts from its own project's settings: a second session in another
/// trusted project with another `shellEnv.allow` gets that allowlist, not the first session's
/// (the environment was once the process's, set by whichever session came first).
#[test]
fn each_session_s_bash_gets_its_own_projects_shell_env() {
    let fixture = Fixture::new();
    let other = fixture.project.parent().unwrap().join("other-project");
    std::fs::create_dir_all(&other).unwrap();
    for (dir, name) in [(&fixture.project, "A_TOKEN"), (&other, "B_TOKEN")] {
        std::fs::create_dir_all(dir.join(".cadre")).unwrap();
        std::fs::write(
            dir.join(".cadre/settings.json"),
            json!({"shellEnv": {"allow": [name]}}).to_string(),
        )
        .unwrap();
        let out = fixture
            .command(&["trust", dir.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    for tag in ["ENV-A", "ENV-B"] {
        fixture.server.script(
            Rule::new(Match::first_user(tag).and(Match::assistant_turns(0))).reply(
                Reply::tool_call(
                    "call_env",
                    "bash",
                    json!({"command": "echo \"A=[$A_TOKEN] B=[$B_TOKEN]\""}),
                ),
            ),
        );
        fixture
            .server
            .script(Rule::new(Match::first_user(tag)).reply(Reply::text(FINAL)));
    }
    let mut raw = Raw::start_with(&fixture, &[("A_TOKEN", "a-value"), ("B_TOKEN", "b-value")]);
    initialize(&mut raw, json!({}));
    let mut id = 2;
    for (dir, tag) in [(&fixture.project, "ENV-A"), (&other, "ENV-B")] {
        raw.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "session/new",
                    "params": {"cwd": dir, "mcpServers": []}})
            .to_string(),
        );
        let lines = raw.until_response(id);
        let session = lines.last().unwrap()["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {lines:#?}"))
            .to_string();
        raw.send(
            &json!({"jsonrpc": "2.0", "id": id + 1, "method": "session/prompt",
                    "params": {"sessionId": session,
                               "prompt": [{"type": "text", "text": format!("{tag} show env")}]}})
            .to_string(),
        );
        let _ = raw.until_response(id + 1);
        id += 2;
    }
    raw.finish();
    let result_of = |tag: &str| {
        fixture
            .server
            .requests()
            .iter()
            .rfind(|r| r.first_user_text().is_some_and(|t| t.contains(tag)))
            .map(tool_result_text)
            .unwrap_or_default()
    };
    assert!(
        result_of("ENV-A").contains("A=[a-value] B=[]"),
        "{}",
        result_of("ENV-A")
    );
    assert!(
        result_of("ENV-B").contains("A=[] B=[b-value]"),
        "the second session's own allowlist: {}",
        result_of("ENV-B")
    );
}
