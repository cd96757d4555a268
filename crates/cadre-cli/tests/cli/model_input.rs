//! Bad input from the model (Z3): malformed arguments, unknown tools, tools that are not
//! enabled, failing edits. Each gets an error result the model can read, and the run goes on.

use cadre_testkit::{Match, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, Wire, assert_valid_session, messages, text_of};

const ANSWER: &str = "Understood, giving up on that.";

/// Turn 0 is `first`; turn 1 answers. Returns the tool results saved in the session.
fn run_with_first_turn(wire: Wire, first: Reply, args: &[&str]) -> (Fixture, Vec<Value>) {
    let fixture = Fixture::new();
    let turn = |n: usize| Match::first_user("ROUTE-BAD").and(Match::assistant_turns(n));
    fixture.server.script(Rule::new(turn(0)).reply(first));
    fixture
        .server
        .script(Rule::new(turn(1)).reply(Reply::text(ANSWER)));
    let mut all = args.to_vec();
    all.push("ROUTE-BAD: go");
    let out = fixture.run_print(wire, &all);
    out.assert_success();
    assert_eq!(out.stdout, format!("{ANSWER}\n"), "{wire:?}");
    fixture.server.check_tool_calls_answered().unwrap();
    let entries = assert_valid_session(&fixture.only_session());
    let results = messages(&entries)
        .into_iter()
        .filter(|m| m["role"] == "toolResult")
        .cloned()
        .collect();
    (fixture, results)
}

fn assert_error_result(results: &[Value], id: &str, mentions: &str) {
    let result = results
        .iter()
        .find(|r| r["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no result for {id}: {results:?}"));
    assert_eq!(result["isError"], true, "{result}");
    let text = text_of(result);
    assert!(
        text.contains(mentions),
        "{id}: {mentions:?} not in {text:?}"
    );
}

#[test]
fn malformed_tool_arguments_get_an_error_result() {
    for wire in Wire::BOTH {
        let reply = Reply::new().tool_call_raw("call_bad", "read", r#"{"path": "notes.txt"#);
        let (_fixture, results) = run_with_first_turn(wire, reply, &[]);
        assert_error_result(&results, "call_bad", "read");
    }
}

#[test]
fn unknown_tool_gets_an_error_result() {
    for wire in Wire::BOTH {
        let reply = Reply::tool_call("call_x", "frobnicate", json!({"level": 3}));
        let (_fixture, results) = run_with_first_turn(wire, reply, &[]);
        assert_error_result(&results, "call_x", "frobnicate");
    }
}

#[test]
fn a_tool_left_out_by_tools_flag_is_not_run() {
    for wire in Wire::BOTH {
        let reply = Reply::tool_call("call_sh", "bash", json!({"command": "touch pwned"}));
        let (fixture, results) = run_with_first_turn(wire, reply, &["--tools", "read,ls"]);
        assert_error_result(&results, "call_sh", "bash");
        assert!(
            !fixture.project.join("pwned").exists(),
            "{wire:?}: bash ran although not enabled"
        );
    }
}

#[test]
fn a_failing_edit_leaves_the_file_alone() {
    for wire in Wire::BOTH {
        let reply = Reply::tool_call(
            "call_edit",
            "edit",
            json!({"path": "src/lib.rs", "edits": [{"oldText": "no such text", "newText": "x"}]}),
        );
        let (fixture, results) = run_with_first_turn(wire, reply, &[]);
        assert_error_result(&results, "call_edit", "src/lib.rs");
        let text = std::fs::read_to_string(fixture.project.join("src/lib.rs")).unwrap();
        assert!(text.contains("cents * 92 / 100"), "{wire:?}: {text}");
    }
}
