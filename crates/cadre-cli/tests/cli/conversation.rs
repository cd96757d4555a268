//! A multi-turn tool-using conversation through the real binary, on both wire formats.

use cadre_testkit::{Match, Reply, Rule};
use serde_json::json;

use crate::harness::{
    Fixture, Wire, assert_every_tool_call_answered, assert_valid_session, messages, text_of,
    tool_result_text,
};

/// The prompt the conversation script routes on.
pub const PROMPT: &str = "ROUTE-CONV: raise the EUR rate in src/lib.rs";
pub const FINAL_ANSWER: &str = "Done: to_eur now multiplies by 93.";

/// Four turns: ls + grep, read + bash, edit, answer.
pub fn script_conversation(fixture: &Fixture) {
    let turn = |n: usize| Match::first_user("ROUTE-CONV").and(Match::assistant_turns(n));
    let server = &fixture.server;
    server.script(
        Rule::new(turn(0)).reply(
            Reply::new()
                .text("Looking around first.")
                .tool_call("call_ls", "ls", json!({"path": "."}))
                .tool_call(
                    "call_grep",
                    "grep",
                    json!({"pattern": "to_eur", "path": "src"}),
                ),
        ),
    );
    server.script(
        Rule::new(turn(1)).reply(
            Reply::new()
                .tool_call("call_read", "read", json!({"path": "notes.txt"}))
                .tool_call(
                    "call_bash",
                    "bash",
                    json!({"command": "echo bash-said-$((6 * 7))"}),
                ),
        ),
    );
    server.script(
        Rule::new(turn(2)).reply(Reply::new().thinking("Change the factor.").tool_call(
            "call_edit",
            "edit",
            json!({"path": "src/lib.rs", "edits": [
                {"oldText": "cents * 92 / 100", "newText": "cents * 93 / 100"}
            ]}),
        )),
    );
    server.script(Rule::new(turn(3)).reply(Reply::text(FINAL_ANSWER)));
}

/// Runs the conversation and checks everything it should leave behind.
pub fn run_conversation(fixture: &Fixture, wire: Wire) {
    script_conversation(fixture);
    let out = fixture.run_print(wire, &[PROMPT]);
    out.assert_success();
    assert_eq!(out.stdout, format!("{FINAL_ANSWER}\n"), "{wire:?}");

    let edited = std::fs::read_to_string(fixture.project.join("src/lib.rs")).unwrap();
    assert!(edited.contains("cents * 93 / 100"), "{wire:?}: {edited}");
    assert!(!edited.contains("cents * 92 / 100"), "{wire:?}: {edited}");

    fixture.server.check_tool_calls_answered().unwrap();
    let requests = fixture.server.requests();
    assert_eq!(requests.len(), 4, "{wire:?}: one request per turn");
    let last = fixture.last_request();
    assert_eq!(last.assistant_turns(), 3);
    let results = tool_result_text(&last);
    for expected in [
        "notes.txt",     // ls
        "pub fn to_eur", // the grep hit
        "beta line",     // read
        "bash-said-42",  // bash ran through a shell
        "src/lib.rs",    // edit names the file
    ] {
        assert!(
            results.contains(expected),
            "{wire:?}: tool results lack {expected:?}:\n{results}"
        );
    }
    assert!(
        requests
            .iter()
            .all(|r| r.header("authorization").is_some() || r.header("x-api-key").is_some()),
        "every request carries the key"
    );

    let session = fixture.only_session();
    let entries = assert_valid_session(&session);
    let msgs = messages(&entries);
    let roles: Vec<&str> = msgs.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "assistant",
            "toolResult",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant"
        ],
        "{wire:?}"
    );
    assert_every_tool_call_answered(&msgs);
    assert_eq!(text_of(msgs[0]), PROMPT);
    let last_msg = msgs.last().unwrap();
    assert_eq!(last_msg["stopReason"], "stop");
    assert_eq!(last_msg["content"][0]["text"], FINAL_ANSWER);
    assert_eq!(msgs[1]["stopReason"], "toolUse");
    assert_eq!(msgs[1]["provider"], wire.model().split('/').next().unwrap());
    assert_eq!(msgs[1]["model"], "m1");
}

#[test]
fn multi_turn_conversation_anthropic() {
    run_conversation(&Fixture::new(), Wire::Anthropic);
}

#[test]
fn multi_turn_conversation_openai() {
    run_conversation(&Fixture::new(), Wire::OpenAi);
}
