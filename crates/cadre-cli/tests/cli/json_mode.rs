//! `--mode json`: the session header, then Pi's events in a valid order, one JSON per line.

use std::collections::HashSet;

use serde_json::Value;

use crate::conversation::{FINAL_ANSWER, PROMPT, script_conversation};
use crate::harness::{Fixture, Wire};

/// Parses every stdout line as JSON, checks the header and the event grammar, and returns the
/// events (header excluded).
pub fn parse_json_run(stdout: &str) -> Vec<Value> {
    let events = parse_json_lines(stdout);
    assert_event_order(&events);
    events
}

/// Parses every stdout line as JSON and checks the header; returns the events after it.
pub fn parse_json_lines(stdout: &str) -> Vec<Value> {
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect();
    let (header, events) = lines.split_first().expect("some output");
    assert_eq!(
        header["type"], "session",
        "first line is the header: {header}"
    );
    assert_eq!(header["version"], 3);
    events.to_vec()
}

/// Pi's event grammar: agent_start … agent_end around turns; turn_start … turn_end around
/// messages and tool executions; message_update only inside message_start … message_end; every
/// tool execution that starts ends, inside its turn. A retry ends the run and continues in a
/// new one (Pi's framing), so runs may follow each other, with only retry, queue and
/// compaction events between them.
pub fn assert_event_order(events: &[Value]) {
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().expect("event type"))
        .collect();
    assert_eq!(kinds.first(), Some(&"agent_start"), "{kinds:?}");
    assert!(kinds.contains(&"agent_end"), "{kinds:?}");
    let mut in_run = false;
    let mut in_turn = false;
    let mut in_message = false;
    let mut running_tools: HashSet<String> = HashSet::new();
    for (i, event) in events.iter().enumerate() {
        let kind = kinds[i];
        let at = || format!("event #{i} {kind} in {kinds:?}");
        let between_runs = matches!(
            kind,
            "auto_retry_start"
                | "auto_retry_end"
                | "queue_update"
                | "compaction_start"
                | "compaction_end"
        );
        assert!(
            in_run || between_runs || kind == "agent_start",
            "outside a run: {}",
            at()
        );
        match kind {
            "agent_start" => {
                assert!(!in_run, "{}", at());
                in_run = true;
            }
            "agent_end" => {
                assert!(in_run && !in_turn && !in_message, "{}", at());
                assert!(event["messages"].is_array(), "{}", at());
                in_run = false;
            }
            "turn_start" => {
                assert!(!in_turn, "{}", at());
                in_turn = true;
            }
            "turn_end" => {
                assert!(in_turn && !in_message, "{}", at());
                assert!(running_tools.is_empty(), "tools still running at {}", at());
                assert!(event["message"].is_object(), "{}", at());
                assert!(event["toolResults"].is_array(), "{}", at());
                in_turn = false;
            }
            "message_start" => {
                assert!(!in_message, "{}", at());
                assert!(event["message"]["role"].is_string(), "{}", at());
                in_message = true;
            }
            "message_update" => {
                assert!(in_message, "{}", at());
                assert!(
                    event["assistantMessageEvent"]["type"].is_string(),
                    "{}",
                    at()
                );
            }
            "message_end" => {
                assert!(in_message, "{}", at());
                in_message = false;
            }
            "tool_execution_start" => {
                assert!(in_turn && !in_message, "{}", at());
                let id = event["toolCallId"].as_str().expect("toolCallId");
                assert!(event["toolName"].is_string(), "{}", at());
                assert!(
                    running_tools.insert(id.to_string()),
                    "started twice: {}",
                    at()
                );
            }
            "tool_execution_update" => {
                let id = event["toolCallId"].as_str().expect("toolCallId");
                assert!(running_tools.contains(id), "{}", at());
            }
            "tool_execution_end" => {
                let id = event["toolCallId"].as_str().expect("toolCallId");
                assert!(running_tools.remove(id), "ended without start: {}", at());
                assert!(event["isError"].is_boolean(), "{}", at());
            }
            _ if between_runs => {}
            other => panic!("unexpected event type {other:?} at {}", at()),
        }
    }
    assert!(!in_run, "the last run did not end: {kinds:?}");
}

fn run_json_conversation(wire: Wire) {
    let fixture = Fixture::new();
    script_conversation(&fixture);
    let out = fixture.run_print(wire, &["--mode", "json", PROMPT]);
    out.assert_success();
    let events = parse_json_run(&out.stdout);
    let count = |kind: &str| events.iter().filter(|e| e["type"] == kind).count();
    assert_eq!(count("turn_start"), 4, "{wire:?}");
    assert_eq!(count("turn_end"), 4, "{wire:?}");
    assert_eq!(count("tool_execution_start"), 5, "{wire:?}");
    assert_eq!(count("tool_execution_end"), 5, "{wire:?}");
    assert!(count("message_update") > 0, "{wire:?}: text streamed");
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "tool_execution_start")
        .filter_map(|e| e["toolName"].as_str())
        .collect();
    for tool in ["ls", "grep", "read", "bash", "edit"] {
        assert!(names.contains(&tool), "{wire:?}: {names:?}");
    }
    let last_assistant = events
        .iter()
        .rev()
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(
        last_assistant["message"]["content"][0]["text"],
        FINAL_ANSWER
    );
    assert!(
        !out.stdout.contains(&format!("\n{FINAL_ANSWER}\n")),
        "no plain-text answer mixed into the JSON lines"
    );
    fixture.server.check_tool_calls_answered().unwrap();
}

#[test]
fn json_mode_events_anthropic() {
    run_json_conversation(Wire::Anthropic);
}

#[test]
fn json_mode_events_openai() {
    run_json_conversation(Wire::OpenAi);
}

#[test]
fn json_mode_without_a_session_still_starts_with_a_header() {
    let fixture = Fixture::new();
    fixture.server.script(
        cadre_testkit::Rule::new(cadre_testkit::Match::first_user("ROUTE-EPHEMERAL"))
            .reply(cadre_testkit::Reply::text("nothing saved")),
    );
    let out = fixture.run_print(
        Wire::OpenAi,
        &["--mode", "json", "--no-session", "ROUTE-EPHEMERAL"],
    );
    out.assert_success();
    let header: Value = serde_json::from_str(out.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(header["cwd"], fixture.project.to_string_lossy().as_ref());
    assert!(header["id"].as_str().is_some_and(|id| !id.is_empty()));
    parse_json_run(&out.stdout);
    assert!(fixture.session_files().is_empty());
}
