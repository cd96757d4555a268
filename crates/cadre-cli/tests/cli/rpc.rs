//! `--mode rpc`: every command over real stdin/stdout against the fake model server.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cadre_testkit::{Match, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, HANG_GUARD, text_of};

/// A running `cadre --mode rpc` and the lines it printed so far.
pub struct RpcClient {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    /// Every line received, in order.
    pub seen: Vec<Value>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl RpcClient {
    pub fn start(fixture: &Fixture, args: &[&str]) -> RpcClient {
        let mut all = vec!["--mode", "rpc", "--model", "fake/m1"];
        all.extend_from_slice(args);
        RpcClient::spawn(fixture.command(&all))
    }

    /// Any RPC peer (cadre, or Pi for the conformance tests).
    pub fn spawn(mut cmd: std::process::Command) -> RpcClient {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn cadre --mode rpc");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON: {line:?}: {e}"));
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        let mut stderr = child.stderr.take().expect("stderr");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
            s
        });
        RpcClient {
            stdin: child.stdin.take(),
            child,
            lines,
            seen: Vec::new(),
            stderr: Some(stderr),
        }
    }

    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).expect("write command");
        stdin.write_all(b"\n").expect("write newline");
        stdin.flush().expect("flush");
    }

    pub fn send(&mut self, command: Value) {
        self.send_raw(&command.to_string());
    }

    /// The next line matching `pred`; lines before it are kept in `seen`.
    pub fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no {what} within {HANG_GUARD:?}; seen: {:#?}",
                    self.seen.iter().map(|v| v.to_string()).collect::<Vec<_>>()
                ),
            }
        }
    }

    /// Send `command` with id `id` and wait for its response.
    pub fn call(&mut self, id: &str, mut command: Value) -> Value {
        command["id"] = json!(id);
        self.send(command);
        self.response(id)
    }

    pub fn response(&mut self, id: &str) -> Value {
        self.wait_for(&format!("response {id}"), |v| {
            v["type"] == "response" && v["id"] == id
        })
    }

    pub fn wait_event(&mut self, kind: &str) -> Value {
        self.wait_for(kind, |v| v["type"] == kind)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Wait for the exit with stdin left open.
    pub fn wait_exit(&mut self) -> Option<i32> {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll") {
                return status.code();
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!("cadre --mode rpc did not exit");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Close stdin and wait for the exit.
    pub fn finish(mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let deadline = Instant::now() + HANG_GUARD;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("poll") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!("cadre --mode rpc did not exit after stdin closed");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let stderr = self.stderr.take().map(|h| h.join().unwrap_or_default());
        (status.code(), stderr.unwrap_or_default())
    }
}

impl Drop for RpcClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last message an `agent_end` lists.
fn last_message(end: &Value) -> Value {
    end["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .expect("agent_end lists its messages")
}

/// The last user text of every request the server got, in order.
fn last_user_texts(f: &Fixture) -> Vec<String> {
    f.server
        .requests()
        .iter()
        .filter_map(|r| r.last_user_text())
        .collect()
}

fn ok_data(response: &Value) -> &Value {
    assert_eq!(response["success"], true, "{response}");
    &response["data"]
}

fn error_of(response: &Value) -> String {
    assert_eq!(response["success"], false, "{response}");
    response["error"].as_str().expect("error text").to_string()
}

#[test]
fn bad_input_gets_error_responses_and_the_session_goes_on() {
    let f = Fixture::new();
    let mut rpc = RpcClient::start(&f, &["--no-session"]);
    rpc.send_raw("{not json");
    let r = rpc.wait_for("parse error", |v| v["command"] == "parse");
    assert!(error_of(&r).starts_with("Failed to parse command:"), "{r}");
    assert!(r.get("id").is_none(), "{r}");

    rpc.send_raw("[1, 2]");
    let r = rpc.wait_for("parse error", |v| v["command"] == "parse");
    assert!(error_of(&r).contains("string `type`"), "{r}");

    let r = rpc.call("u1", json!({"type": "frobnicate"}));
    assert_eq!(error_of(&r), "Unknown command: frobnicate");
    assert_eq!(r["code"], "invalid_input", "{r}");
    assert_eq!(r["command"], "frobnicate");

    let r = rpc.call("m1", json!({"type": "prompt"}));
    assert_eq!(error_of(&r), "prompt: `message` is required");
    let r = rpc.call("m2", json!({"type": "prompt", "message": 7}));
    assert_eq!(error_of(&r), "prompt: `message` must be a string");
    let r = rpc.call(
        "m3",
        json!({"type": "prompt", "message": "x", "images": [{"type": "image"}]}),
    );
    assert!(error_of(&r).contains("images[0]"), "{r}");
    let r = rpc.call(
        "m4",
        json!({"type": "set_thinking_level", "level": "extreme"}),
    );
    assert!(error_of(&r).contains("unknown level"), "{r}");
    let r = rpc.call(
        "m5",
        json!({"type": "set_model", "provider": "no", "modelId": "pe"}),
    );
    assert_eq!(error_of(&r), "Model not found: no/pe");
    let r = rpc.call("m6", json!({"type": "set_session_name", "name": "  "}));
    assert_eq!(error_of(&r), "Session name cannot be empty");
    let r = rpc.call("m7", json!({"type": "fork", "entryId": "x"}));
    assert!(error_of(&r).contains("not saved"), "{r}");
    let r = rpc.call("m8", json!({"type": "task_show", "task": "nope"}));
    assert_eq!(r["success"], false, "{r}");
    assert_eq!(r["code"], "unknown_task", "{r}");

    // Still serving after all that.
    let state = rpc.call("s", json!({"type": "get_state"}));
    assert_eq!(ok_data(&state)["isStreaming"], false);
    let (code, stderr) = rpc.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_prompt_streams_pi_events_and_the_state_follows() {
    let f = Fixture::new();
    f.server
        .script(Rule::new(Match::last_user("HELLO")).reply(Reply::text("Hi there.")));
    let mut rpc = RpcClient::start(&f, &[]);
    let state = rpc.call("s0", json!({"type": "get_state"}));
    let data = ok_data(&state);
    assert_eq!(data["model"]["id"], "m1");
    assert_eq!(data["model"]["provider"], "fake");
    assert_eq!(data["model"]["api"], "anthropic-messages");
    assert_eq!(data["thinkingLevel"], "off");
    assert_eq!(data["messageCount"], 0);
    assert_eq!(data["steeringMode"], "all");
    assert_eq!(data["followUpMode"], "one-at-a-time");
    let session_file = data["sessionFile"]
        .as_str()
        .expect("a session file")
        .to_string();

    let r = rpc.call("p1", json!({"type": "prompt", "message": "HELLO"}));
    assert_eq!(
        r,
        json!({"id": "p1", "type": "response", "command": "prompt", "success": true})
    );
    let end = rpc.wait_event("agent_end");
    let kinds: Vec<&str> = rpc.seen.iter().filter_map(|v| v["type"].as_str()).collect();
    for kind in [
        "agent_start",
        "turn_start",
        "message_start",
        "message_update",
        "message_end",
        "turn_end",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    assert_eq!(text_of(&end["messages"][1]), "Hi there.");

    let msgs = rpc.call("g", json!({"type": "get_messages"}));
    let messages = ok_data(&msgs)["messages"]
        .as_array()
        .expect("messages")
        .clone();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[1]["role"], "assistant");
    let last = rpc.call("l", json!({"type": "get_last_assistant_text"}));
    assert_eq!(ok_data(&last)["text"], "Hi there.");
    let stats = rpc.call("st", json!({"type": "get_session_stats"}));
    let stats = ok_data(&stats);
    assert_eq!(stats["userMessages"], 1);
    assert_eq!(stats["assistantMessages"], 1);
    assert_eq!(stats["totalMessages"], 2);
    assert_eq!(stats["sessionFile"], session_file.as_str());
    assert!(stats["tokens"]["total"].is_u64(), "{stats}");
    let state = rpc.call("s1", json!({"type": "get_state"}));
    assert_eq!(ok_data(&state)["messageCount"], 2);

    let (code, stderr) = rpc.finish();
    assert_eq!(code, Some(0), "{stderr}");
    let saved = std::fs::read_to_string(&session_file).expect("session file");
    assert!(saved.contains("Hi there."), "{saved}");
}

#[test]
fn prompts_while_streaming_are_refused_steered_or_queued() {
    let f = Fixture::new();
    // The first reply is slow, so the agent is still streaming while the others arrive.
    f.server.script(
        Rule::new(Match::last_user("SLOW"))
            .reply(Reply::text("slow answer").latency(Duration::from_millis(1500))),
    );
    f.server
        .script(Rule::new(Match::last_user("STEERED")).reply(Reply::text("saw the steer")));
    f.server
        .script(Rule::new(Match::last_user("LATER")).reply(Reply::text("did the follow-up")));
    let mut rpc = RpcClient::start(&f, &["--no-session"]);
    rpc.call("p", json!({"type": "prompt", "message": "SLOW"}));
    rpc.wait_event("agent_start");
    let r = rpc.call("busy", json!({"type": "prompt", "message": "again"}));
    assert!(error_of(&r).contains("streamingBehavior"), "{r}");
    let r = rpc.call(
        "st",
        json!({"type": "prompt", "message": "STEERED", "streamingBehavior": "steer"}),
    );
    ok_data(&r);
    let r = rpc.call("fu", json!({"type": "follow_up", "message": "LATER"}));
    ok_data(&r);
    let queue = rpc.wait_for("queue with both", |v| {
        v["type"] == "queue_update" && v["followUp"].as_array().is_some_and(|a| !a.is_empty())
    });
    assert_eq!(queue["steering"], json!(["STEERED"]), "{queue}");
    let state = rpc.call("s", json!({"type": "get_state"}));
    assert_eq!(ok_data(&state)["isStreaming"], true);
    assert_eq!(ok_data(&state)["pendingMessageCount"], 2);
    // The steer is answered in the same run, the follow-up after it.
    rpc.wait_for("the follow-up's answer", |v| {
        v["type"] == "message_end" && text_of(&v["message"]) == "did the follow-up"
    });
    let texts = last_user_texts(&f);
    assert_eq!(texts, vec!["SLOW", "STEERED", "LATER"], "{texts:?}");
    rpc.finish();
}

#[test]
fn abort_ends_the_run_and_the_next_prompt_works() {
    let f = Fixture::new();
    f.server.script(
        Rule::new(Match::last_user("HANG"))
            .reply(Reply::text("never seen").latency(Duration::from_secs(30))),
    );
    f.server
        .script(Rule::new(Match::last_user("AFTER")).reply(Reply::text("fine again")));
    let mut rpc = RpcClient::start(&f, &["--no-session"]);
    rpc.call("p", json!({"type": "prompt", "message": "HANG"}));
    rpc.wait_event("agent_start");
    let r = rpc.call("a", json!({"type": "abort"}));
    ok_data(&r);
    let end = rpc.wait_event("agent_end");
    let last = last_message(&end);
    assert_eq!(last["stopReason"], "aborted", "{last}");
    rpc.call("p2", json!({"type": "prompt", "message": "AFTER"}));
    rpc.wait_for("the answer", |v| {
        v["type"] == "message_end" && text_of(&v["message"]) == "fine again"
    });
    rpc.finish();
}

#[test]
fn model_and_thinking_commands() {
    let f = Fixture::new();
    let mut models = f.models_json();
    models["providers"]["fake"]["models"] = json!([
        {"id": "m1"},
        {"id": "m2", "reasoning": true}
    ]);
    f.write_models(&models);
    f.server.script(Rule::always().reply(Reply::text("ok")));
    let mut rpc = RpcClient::start(&f, &[]);
    let r = rpc.call("av", json!({"type": "get_available_models"}));
    let ids: Vec<String> = ok_data(&r)["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["provider"].as_str().unwrap(),
                m["id"].as_str().unwrap()
            )
        })
        .collect();
    assert!(ids.contains(&"fake/m2".to_string()), "{ids:?}");
    // m1 does not reason: no thinking levels to cycle.
    let r = rpc.call("ct0", json!({"type": "cycle_thinking_level"}));
    assert_eq!(ok_data(&r), &Value::Null);

    let r = rpc.call(
        "sm",
        json!({"type": "set_model", "provider": "fake", "modelId": "m2"}),
    );
    assert_eq!(ok_data(&r)["id"], "m2");
    assert_eq!(ok_data(&r)["reasoning"], true);
    let r = rpc.call("st", json!({"type": "set_thinking_level", "level": "high"}));
    ok_data(&r);
    let state = rpc.call("s", json!({"type": "get_state"}));
    assert_eq!(ok_data(&state)["model"]["id"], "m2");
    assert_eq!(ok_data(&state)["thinkingLevel"], "high");
    let r = rpc.call("ct", json!({"type": "cycle_thinking_level"}));
    let level = ok_data(&r)["level"].as_str().unwrap().to_string();
    assert_ne!(level, "high");

    let r = rpc.call("cm", json!({"type": "cycle_model"}));
    let next = &ok_data(&r)["model"];
    assert_ne!(
        format!("{}/{}", next["provider"], next["id"]),
        "\"fake\"/\"m2\"",
        "{r}"
    );
    assert_eq!(ok_data(&r)["isScoped"], false);

    // The next request goes to the model chosen last; the session records the changes.
    let state = rpc.call("s2", json!({"type": "get_state"}));
    let chosen = ok_data(&state)["model"]["id"].as_str().unwrap().to_string();
    let file = ok_data(&state)["sessionFile"].as_str().unwrap().to_string();
    rpc.call("p", json!({"type": "prompt", "message": "go"}));
    rpc.wait_event("agent_end");
    assert_eq!(f.last_request().body["model"], chosen.as_str());
    rpc.finish();
    let saved = std::fs::read_to_string(file).unwrap();
    assert!(saved.contains("\"model_change\""), "{saved}");
    assert!(saved.contains("\"modelId\":\"m2\""), "{saved}");
    assert!(saved.contains("\"thinkingLevel\":\"high\""), "{saved}");
}

#[test]
fn sessions_can_be_named_renewed_switched_forked_and_cloned() {
    let f = Fixture::new();
    f.server
        .script(Rule::new(Match::last_user("FIRST")).reply(Reply::text("one")));
    f.server
        .script(Rule::new(Match::last_user("SECOND")).reply(Reply::text("two")));
    let mut rpc = RpcClient::start(&f, &[]);
    rpc.call("p1", json!({"type": "prompt", "message": "FIRST"}));
    rpc.wait_event("agent_end");
    rpc.call("p2", json!({"type": "prompt", "message": "SECOND"}));
    rpc.wait_event("agent_end");
    ok_data(&rpc.call("n", json!({"type": "set_session_name", "name": "my work"})));
    let state = rpc.call("s", json!({"type": "get_state"}));
    assert_eq!(ok_data(&state)["sessionName"], "my work");
    let original = ok_data(&state)["sessionFile"].as_str().unwrap().to_string();

    let points = rpc.call("fm", json!({"type": "get_fork_messages"}));
    let points = ok_data(&points)["messages"].as_array().unwrap().clone();
    assert_eq!(points.len(), 2, "{points:?}");
    assert_eq!(points[1]["text"], "SECOND");

    // Fork before the second prompt: a new file with only the first exchange.
    let r = rpc.call(
        "f",
        json!({"type": "fork", "entryId": points[1]["entryId"].clone()}),
    );
    assert_eq!(ok_data(&r), &json!({"text": "SECOND", "cancelled": false}));
    let state = rpc.call("s2", json!({"type": "get_state"}));
    let forked = ok_data(&state)["sessionFile"].as_str().unwrap().to_string();
    assert_ne!(forked, original);
    assert_eq!(ok_data(&state)["messageCount"], 2);
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&forked)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["parentSession"], original.as_str());

    // Clone: the whole current conversation in another new file.
    ok_data(&rpc.call("c", json!({"type": "clone"})));
    let state = rpc.call("s3", json!({"type": "get_state"}));
    let cloned = ok_data(&state)["sessionFile"].as_str().unwrap().to_string();
    assert_ne!(cloned, forked);
    assert_eq!(ok_data(&state)["messageCount"], 2);

    // New: empty, naming a parent session when asked to.
    let r = rpc.call(
        "new",
        json!({"type": "new_session", "parentSession": original}),
    );
    assert_eq!(ok_data(&r), &json!({"cancelled": false}));
    let state = rpc.call("s4", json!({"type": "get_state"}));
    assert_eq!(ok_data(&state)["messageCount"], 0);
    let fresh = ok_data(&state)["sessionFile"].as_str().unwrap().to_string();
    rpc.call("p3", json!({"type": "prompt", "message": "FIRST"}));
    rpc.wait_event("agent_end");
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&fresh)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["parentSession"], original.as_str());
    let r = rpc.call("new2", json!({"type": "new_session", "parentSession": 5}));
    assert!(error_of(&r).contains("parentSession"), "{r}");

    // Switch back to the original: its four messages again.
    let r = rpc.call(
        "sw",
        json!({"type": "switch_session", "sessionPath": original}),
    );
    ok_data(&r);
    let state = rpc.call("s5", json!({"type": "get_state"}));
    assert_eq!(ok_data(&state)["messageCount"], 4);
    assert_eq!(ok_data(&state)["sessionFile"], original.as_str());
    let r = rpc.call(
        "bad",
        json!({"type": "switch_session", "sessionPath": f.project.join("missing.jsonl")}),
    );
    assert_eq!(r["success"], false, "{r}");
    let (code, stderr) = rpc.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn agent_calls_default_to_background_and_task_commands_see_them() {
    let f = Fixture::new();
    let child = Match::first_user("[child]");
    f.server
        .script(Rule::new(child.clone()).reply(Reply::text("child report: all good")));
    f.server.script(
        Rule::new(Match::last_user("<task-notification")).reply(Reply::text("Got the report.")),
    );
    f.server.script(
        Rule::new(Match::last_user("DELEGATE").and(Match::AssistantTurns(0))).reply(
            Reply::tool_call(
                "call_a",
                "Agent",
                json!({"subagent_type": "Explore", "description": "Check", "name": "checker",
                       "prompt": "[child] Check the notes."}),
            ),
        ),
    );
    f.server
        .script(Rule::new(!child).reply(Reply::text("Launched; waiting.")));
    let mut rpc = RpcClient::start(&f, &[]);
    rpc.call("p", json!({"type": "prompt", "message": "DELEGATE"}));
    let start = rpc.wait_event("task_start");
    assert_eq!(start["background"], true, "{start}");
    assert_eq!(start["agent"], "Explore");
    assert_eq!(start["name"], "checker", "{start}");
    assert_eq!(start["phase"], "starting", "{start}");
    let task_id = start["taskId"].as_str().unwrap().to_string();
    let end = rpc.wait_event("task_end");
    assert_eq!(end["status"], "completed", "{end}");
    // The idle parent is woken by the notification and answers it.
    rpc.wait_for("the answer to the notification", |v| {
        v["type"] == "message_end" && text_of(&v["message"]) == "Got the report."
    });

    let list = rpc.call("tl", json!({"type": "task_list"}));
    let tasks = ok_data(&list)["tasks"].as_array().unwrap().clone();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0]["name"], "checker");
    let show = rpc.call("ts", json!({"type": "task_show", "task": "checker"}));
    assert_eq!(ok_data(&show)["taskId"], task_id.as_str());
    let out = rpc.call(
        "to",
        json!({"type": "task_output", "task": task_id, "block": true, "timeoutMs": 1000}),
    );
    assert!(
        ok_data(&out)["output"]
            .as_str()
            .unwrap()
            .contains("all good"),
        "{out}"
    );
    let stop = rpc.call("tstop", json!({"type": "task_stop", "task": "checker"}));
    assert!(error_of(&stop).contains("not running"), "{stop}");
    assert_eq!(stop["code"], "not_running", "{stop}");
    let apply = rpc.call("ta", json!({"type": "task_apply", "task": "checker"}));
    assert!(error_of(&apply).contains("worktree"), "{apply}");
    let (code, stderr) = rpc.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

/// A launch plan mode refuses reaches the client with its stable code: in the `Agent` tool
/// result's `details` of `tool_execution_end`, next to the text the model reads.
#[test]
fn a_refused_launch_carries_its_code() {
    let f = Fixture::new();
    f.server.script(
        Rule::new(Match::last_user("WRITE IT").and(Match::AssistantTurns(0))).reply(
            Reply::tool_call(
                "call_w",
                "Agent",
                json!({"subagent_type": "code", "description": "Edit", "prompt": "[child] edit"}),
            ),
        ),
    );
    f.server
        .script(Rule::new(Match::AssistantTurns(1)).reply(Reply::text("Refused, so I plan.")));
    let mut rpc = RpcClient::start(&f, &["--plan", "--no-session"]);
    rpc.call("p", json!({"type": "prompt", "message": "WRITE IT"}));
    let end = rpc.wait_for("the Agent call's end", |v| {
        v["type"] == "tool_execution_end" && v["toolName"] == "Agent"
    });
    assert_eq!(end["isError"], true, "{end}");
    assert_eq!(
        end["result"]["details"]["refusal"]["code"], "plan_mode",
        "{end}"
    );
    assert!(
        text_of(&end["result"]).contains("plan mode: `code` may not launch"),
        "{end}"
    );
    rpc.wait_event("agent_end");
    let (code, stderr) = rpc.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn end_of_input_stops_live_tasks_and_exits() {
    let f = Fixture::new();
    f.server.script(
        Rule::new(Match::first_user("[child]"))
            .reply(Reply::text("too late").latency(Duration::from_secs(30))),
    );
    f.server
        .script(Rule::new(Match::AssistantTurns(0)).reply(Reply::tool_call(
            "call_a",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Slow", "name": "slow",
                   "prompt": "[child] take forever"}),
        )));
    f.server
        .script(Rule::always().reply(Reply::text("Launched.")));
    let mut rpc = RpcClient::start(&f, &[]);
    rpc.call("p", json!({"type": "prompt", "message": "go"}));
    rpc.wait_event("task_start");
    rpc.wait_event("agent_end");
    let (code, stderr) = rpc.finish();
    assert_eq!(code, Some(0), "{stderr}");
    let records: Vec<Value> = walk_records(&f.home.join("tasks"));
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["status"], "stopped", "{}", records[0]);
}

/// Every task.json under `dir`.
fn walk_records(dir: &std::path::Path) -> Vec<Value> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk_records(&path));
        } else if path.file_name().is_some_and(|n| n == "task.json") {
            out.push(serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap());
        }
    }
    out
}

#[test]
fn retries_can_be_switched_off_and_a_retry_wait_aborted() {
    let f = Fixture::new();
    f.server.script(
        Rule::new(Match::last_user("FLAKY"))
            .reply(Reply::failing(cadre_testkit::Fault::status(529))),
    );
    f.server.script(
        Rule::new(Match::last_user("WAIT"))
            .reply(Reply::failing(cadre_testkit::Fault::rate_limited("30"))),
    );
    let mut rpc = RpcClient::start(&f, &["--no-session"]);
    ok_data(&rpc.call("off", json!({"type": "set_auto_retry", "enabled": false})));
    rpc.call("p", json!({"type": "prompt", "message": "FLAKY"}));
    let end = rpc.wait_event("agent_end");
    assert!(
        !rpc.seen.iter().any(|v| v["type"] == "auto_retry_start"),
        "no retry with auto-retry off"
    );
    let last = last_message(&end);
    assert_eq!(last["stopReason"], "error", "{last}");
    assert_eq!(
        f.server.requests().len(),
        1,
        "one attempt only with auto-retry off"
    );

    ok_data(&rpc.call("on", json!({"type": "set_auto_retry", "enabled": true})));
    rpc.call("p2", json!({"type": "prompt", "message": "WAIT"}));
    // The server asks for a 30 s wait; abort_retry ends it now and the run fails.
    rpc.wait_event("auto_retry_start");
    ok_data(&rpc.call("ar", json!({"type": "abort_retry"})));
    let end = rpc.wait_event("agent_end");
    let last = last_message(&end);
    assert_eq!(last["stopReason"], "error", "{last}");
    rpc.finish();
}

#[test]
fn export_html_writes_a_self_contained_escaped_page() {
    let f = Fixture::new();
    f.server
        .script(Rule::always().reply(Reply::text("answer <b>bold</b>")));
    let mut rpc = RpcClient::start(&f, &[]);
    rpc.call(
        "p",
        json!({"type": "prompt", "message": "show <script>x</script>"}),
    );
    rpc.wait_event("agent_end");
    let r = rpc.call(
        "e",
        json!({"type": "export_html", "outputPath": "out.html"}),
    );
    let path = ok_data(&r)["path"].as_str().unwrap().to_string();
    assert_eq!(path, f.project.join("out.html").to_string_lossy());
    let page = std::fs::read_to_string(&path).unwrap();
    assert!(page.starts_with("<!doctype html>"), "{page}");
    assert!(
        page.contains("show &lt;script&gt;x&lt;/script&gt;"),
        "{page}"
    );
    assert!(page.contains("answer &lt;b&gt;bold&lt;/b&gt;"), "{page}");
    assert!(!page.contains("<script"), "{page}");
    let r = rpc.call("d", json!({"type": "export_html"}));
    let default = ok_data(&r)["path"].as_str().unwrap().to_string();
    assert!(
        default.ends_with(".html") && default.contains("cadre-session-"),
        "{default}"
    );
    rpc.finish();
}

#[test]
fn compact_on_request_with_instructions_and_auto_compaction_switch() {
    let f = Fixture::new();
    // Keep almost nothing verbatim, so two short exchanges have something to summarise.
    std::fs::write(
        f.home.join("settings.json"),
        json!({"compaction": {"keepRecentTokens": 1}}).to_string(),
    )
    .unwrap();
    f.server.script(
        Rule::new(Match::SystemContains(
            "context summarization assistant".into(),
        ))
        .reply(Reply::text("## Goal\nSUMMARY-OF-EARLIER-TURNS")),
    );
    f.server.script(Rule::always().reply(Reply::text("noted")));
    let mut rpc = RpcClient::start(&f, &[]);
    for (i, text) in ["FIRST fact", "SECOND fact", "THIRD fact"]
        .iter()
        .enumerate()
    {
        rpc.call(&format!("p{i}"), json!({"type": "prompt", "message": text}));
        rpc.wait_event("agent_end");
    }
    let r = rpc.call(
        "c",
        json!({"type": "compact", "customInstructions": "FOCUS-ON-FACTS"}),
    );
    let data = ok_data(&r);
    assert!(
        data["summary"]
            .as_str()
            .unwrap()
            .contains("SUMMARY-OF-EARLIER-TURNS"),
        "{r}"
    );
    assert!(data["firstKeptEntryId"].is_string(), "{r}");
    assert!(data["tokensBefore"].is_u64(), "{r}");
    // The events travel on their own path and may trail the response.
    if !rpc.seen.iter().any(|v| v["type"] == "compaction_end") {
        rpc.wait_event("compaction_end");
    }
    let start = rpc
        .seen
        .iter()
        .find(|v| v["type"] == "compaction_start")
        .cloned()
        .expect("compaction_start");
    assert_eq!(start["reason"], "manual");
    let summarising: Vec<String> = f
        .server
        .requests()
        .into_iter()
        .map(|r| r.body.to_string())
        .filter(|b| b.contains("context summarization assistant"))
        .collect();
    assert!(!summarising.is_empty(), "a summarisation request");
    assert!(
        summarising.iter().any(|b| b.contains("FOCUS-ON-FACTS")),
        "custom instructions reach the summary request: {summarising:?}"
    );
    // The next prompt goes out with the summary in place of the earlier turns.
    rpc.call(
        "p",
        json!({"type": "prompt", "message": "AFTER compaction"}),
    );
    rpc.wait_event("agent_end");
    let last = f.last_request().body.to_string();
    assert!(last.contains("SUMMARY-OF-EARLIER-TURNS"), "{last}");
    assert!(!last.contains("FIRST fact"), "{last}");

    let state = rpc.call("s", json!({"type": "get_state"}));
    assert_eq!(ok_data(&state)["autoCompactionEnabled"], true);
    ok_data(&rpc.call(
        "off",
        json!({"type": "set_auto_compaction", "enabled": false}),
    ));
    let state = rpc.call("s2", json!({"type": "get_state"}));
    assert_eq!(ok_data(&state)["autoCompactionEnabled"], false);
    let r = rpc.call(
        "bad",
        json!({"type": "set_auto_compaction", "enabled": "yes"}),
    );
    assert!(error_of(&r).contains("true or false"), "{r}");
    let file = ok_data(&state)["sessionFile"].as_str().unwrap().to_string();
    rpc.finish();
    let saved = std::fs::read_to_string(file).unwrap();
    assert!(saved.contains("\"type\":\"compaction\""), "{saved}");
}

#[test]
fn bash_output_reaches_the_model_with_the_next_prompt_and_abort_bash_ends_it() {
    let f = Fixture::new();
    f.server.script(Rule::always().reply(Reply::text("seen")));
    let mut rpc = RpcClient::start(&f, &[]);
    let r = rpc.call(
        "b",
        json!({"type": "bash", "command": "echo out-$((6*7)); exit 3"}),
    );
    let data = ok_data(&r);
    assert_eq!(data["output"], "out-42", "{r}");
    assert_eq!(data["exitCode"], 3);
    assert_eq!(data["cancelled"], false);
    assert_eq!(data["truncated"], false);
    // No event for the message itself, as in Pi; it is in the conversation.
    let msgs = rpc.call("m", json!({"type": "get_messages"}));
    let messages = ok_data(&msgs)["messages"].as_array().unwrap().clone();
    assert_eq!(
        messages.last().unwrap()["role"],
        "bashExecution",
        "{messages:?}"
    );
    rpc.call(
        "p",
        json!({"type": "prompt", "message": "what did it print?"}),
    );
    rpc.wait_event("agent_end");
    let sent = f.last_request().body.to_string();
    assert!(sent.contains("Ran `echo out-$((6*7)); exit 3`"), "{sent}");
    assert!(sent.contains("out-42"), "{sent}");

    rpc.send(json!({"id": "long", "type": "bash", "command": "sleep 30"}));
    std::thread::sleep(Duration::from_millis(300));
    ok_data(&rpc.call("ab", json!({"type": "abort_bash"})));
    let r = rpc.response("long");
    assert_eq!(ok_data(&r)["cancelled"], true, "{r}");
    let file = ok_data(&rpc.call("s", json!({"type": "get_state"})))["sessionFile"]
        .as_str()
        .unwrap()
        .to_string();
    rpc.finish();
    let saved = std::fs::read_to_string(file).unwrap();
    assert!(saved.contains("\"role\":\"bashExecution\""), "{saved}");
}

#[test]
fn steer_commands_are_delivered_one_at_a_time_when_asked() {
    let f = Fixture::new();
    f.server.script(
        Rule::new(Match::last_user("SLOW").and(Match::AssistantTurns(0))).reply(
            Reply::tool_call("call_r", "read", json!({"path": "notes.txt"}))
                .latency(Duration::from_millis(1200)),
        ),
    );
    f.server
        .script(Rule::always().reply(Reply::text("turn answered")));
    let mut rpc = RpcClient::start(&f, &["--no-session"]);
    ok_data(&rpc.call(
        "m",
        json!({"type": "set_steering_mode", "mode": "one-at-a-time"}),
    ));
    let r = rpc.call("bad", json!({"type": "set_follow_up_mode", "mode": "some"}));
    assert!(error_of(&r).contains("one-at-a-time"), "{r}");
    rpc.call("p", json!({"type": "prompt", "message": "SLOW"}));
    rpc.wait_event("agent_start");
    ok_data(&rpc.call("a", json!({"type": "steer", "message": "STEER-A"})));
    ok_data(&rpc.call("b", json!({"type": "steer", "message": "STEER-B"})));
    rpc.wait_event("agent_end");
    let lasts = last_user_texts(&f);
    // One steer per turn: A with the tool result's turn, B in a turn of its own.
    assert_eq!(lasts, vec!["SLOW", "STEER-A", "STEER-B"], "{lasts:?}");
    rpc.finish();
}

#[test]
fn sigterm_ends_the_session_while_stdin_stays_open() {
    let f = Fixture::new();
    f.server
        .script(Rule::always().reply(Reply::text("never").latency(Duration::from_secs(60))));
    let mut rpc = RpcClient::start(&f, &[]);
    rpc.call("p", json!({"type": "prompt", "message": "hang"}));
    rpc.wait_event("agent_start");
    let status = std::process::Command::new("kill")
        .args(["-TERM", &rpc.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(rpc.wait_exit(), Some(143));
}

#[test]
fn end_of_input_drops_a_prompt_that_has_not_started() {
    let f = Fixture::new();
    f.server
        .script(Rule::always().reply(Reply::text("never").latency(Duration::from_secs(60))));
    let mut rpc = RpcClient::start(&f, &["--no-session"]);
    rpc.send(json!({"type": "prompt", "message": "queued then dropped"}));
    // Closing stdin right away: the prompt is accepted but must not hold the exit for a
    // whole run (the reply is a minute away; the hang guard is shorter).
    let (code, stderr) = rpc.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn hostile_paths_are_refused_not_read_or_replaced() {
    let f = Fixture::new();
    let fifo = f.project.join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let mut rpc = RpcClient::start(&f, &[]);
    for path in [fifo.to_string_lossy().into_owned(), "/dev/zero".into()] {
        let r = rpc.call("sw", json!({"type": "switch_session", "sessionPath": path}));
        assert!(error_of(&r).contains("not a regular file"), "{r}");
    }
    // Still serving: the FIFO was never opened.
    ok_data(&rpc.call("s", json!({"type": "get_state"})));
    for path in [
        fifo.to_string_lossy().into_owned(),
        f.project.join("src").to_string_lossy().into_owned(),
    ] {
        let r = rpc.call("x", json!({"type": "export_html", "outputPath": path}));
        assert!(error_of(&r).contains("not a regular file"), "{r}");
    }
    assert!(fifo.exists() && !fifo.is_file(), "the FIFO is still a FIFO");
    let r = rpc.call(
        "x2",
        json!({"type": "export_html", "outputPath": "no/such/dir/x.html"}),
    );
    assert!(error_of(&r).contains("does not exist"), "{r}");
    let r = rpc.call(
        "img",
        json!({"type": "prompt", "message": "x", "images": [{"type": "image", "data": "!!!", "mimeType": "image/png"}]}),
    );
    assert!(error_of(&r).contains("images[0]"), "{r}");

    rpc.send(json!({"id": "b1", "type": "bash", "command": "sleep 30"}));
    std::thread::sleep(Duration::from_millis(200));
    let r = rpc.call("b2", json!({"type": "bash", "command": "echo second"}));
    assert!(error_of(&r).contains("already running"), "{r}");
    ok_data(&rpc.call("ab", json!({"type": "abort_bash"})));
    assert_eq!(ok_data(&rpc.response("b1"))["cancelled"], true);
    let (code, stderr) = rpc.finish();
    assert_eq!(code, Some(0), "{stderr}");
}
