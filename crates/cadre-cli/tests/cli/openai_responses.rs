//! `api: "openai-responses"` models through the binary, against the fake server's Responses
//! route: a text answer, a tool round trip, reasoning items carried to the next turn (also
//! across `--continue`) and left out where the service would refuse them, faults, and a child
//! task running on a Responses model.

use cadre_testkit::{Fault, Match, RecordedRequest, Reply, Rule, StopKind, WireApi};
use serde_json::{Value, json};

use crate::harness::{
    Fixture, HANG_GUARD, Running, assert_every_tool_call_answered, assert_valid_session, messages,
    text_of,
};

/// A Responses model without reasoning, and one with it.
const PLAIN: &str = "fakeresp/m1";
const REASONING: &str = "fakeresp/r1";

fn fixture() -> Fixture {
    let f = Fixture::new();
    let mut models = f.models_json();
    models["providers"]["fakeresp"] = json!({
        "baseUrl": f.server.openai_base_url(),
        "api": "openai-responses",
        "apiKey": "test-key",
        "models": [{"id": "m1"}, {"id": "r1", "reasoning": true}]
    });
    f.write_models(&models);
    f
}

fn responses_requests(f: &Fixture) -> Vec<RecordedRequest> {
    let requests = f.server.requests();
    for r in &requests {
        assert_eq!(r.api, WireApi::OpenAiResponses, "{}", r.path);
        assert_eq!(r.path, "/v1/responses");
    }
    requests
}

/// The input items of a request with this `type`.
fn items<'a>(r: &'a RecordedRequest, kind: &str) -> Vec<&'a Value> {
    r.body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == kind)
        .collect()
}

#[test]
fn print_mode_answers_with_text() {
    let f = fixture();
    f.server.script(
        Rule::new(Match::first_user("ROUTE-RESP"))
            .reply(Reply::text("Hello from the Responses API.").usage(20, 6)),
    );
    let out = f.run(&["-p", "--model", PLAIN, "ROUTE-RESP: say hello"]);
    out.assert_success();
    assert_eq!(out.stdout, "Hello from the Responses API.\n");

    let requests = responses_requests(&f);
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(body["model"], "m1");
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
    assert_eq!(requests[0].header("authorization"), Some("Bearer test-key"));
    assert!(
        requests[0]
            .last_user_text()
            .is_some_and(|t| t.contains("ROUTE-RESP"))
    );
    assert!(
        !requests[0].system_text().is_empty(),
        "a system prompt is sent"
    );

    let entries = assert_valid_session(&f.only_session());
    let msgs = messages(&entries);
    let answer = msgs.last().unwrap();
    assert_eq!(answer["role"], "assistant");
    assert_eq!(answer["api"], "openai-responses");
    assert_eq!(answer["provider"], "fakeresp");
    assert_eq!(answer["stopReason"], "stop");
    assert_eq!(text_of(answer), "Hello from the Responses API.");
    assert_eq!(answer["usage"]["output"], 6);
}

#[test]
fn tool_call_round_trip_reads_a_file_then_answers() {
    let f = fixture();
    f.server
        .script(Rule::new(Match::assistant_turns(0)).reply(Reply::tool_call(
            "call_read",
            "read",
            json!({"path": "notes.txt"}),
        )));
    f.server.script(
        Rule::new(Match::last_tool_result("alpha line"))
            .reply(Reply::text("The notes start with alpha.")),
    );
    let out = f.run(&[
        "-p",
        "--model",
        PLAIN,
        "What is the first line of notes.txt?",
    ]);
    out.assert_success();
    assert_eq!(out.stdout, "The notes start with alpha.\n");

    let requests = responses_requests(&f);
    assert_eq!(requests.len(), 2);
    let tools = requests[0].body["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .any(|t| t["type"] == "function" && t["name"] == "read"),
        "Responses tools are flat function definitions: {tools:?}"
    );
    let second = &requests[1];
    let calls = items(second, "function_call");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["call_id"], "call_read");
    assert_eq!(calls[0]["name"], "read");
    let args: Value = serde_json::from_str(calls[0]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"path": "notes.txt"}));
    let outputs = items(second, "function_call_output");
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0]["call_id"], "call_read");
    assert!(second.tool_results()[0].1.contains("alpha line"));
    f.server.check_tool_calls_answered().unwrap();

    let entries = assert_valid_session(&f.only_session());
    assert_every_tool_call_answered(&messages(&entries));
}

/// The thought of turn one goes back as the same reasoning item (with its encrypted content)
/// before the function call it led to, and again when the session is continued.
#[test]
fn reasoning_items_go_back_on_the_next_turn() {
    const THOUGHT: &str = "The user wants the notes; read notes.txt first.";
    let f = fixture();
    f.server.script(
        Rule::new(Match::first_user("ROUTE-THINK").and(Match::assistant_turns(0))).reply(
            Reply::new().thinking(THOUGHT).tool_call(
                "call_1",
                "read",
                json!({"path": "notes.txt"}),
            ),
        ),
    );
    f.server
        .script(Rule::new(Match::last_user("ROUTE-AGAIN")).reply(Reply::text("Still alpha.")));
    f.server
        .script(Rule::new(Match::last_tool_result("alpha")).reply(Reply::text("It is alpha.")));
    let out = f.run(&[
        "-p",
        "--model",
        REASONING,
        "--thinking",
        "high",
        "ROUTE-THINK: first line of notes.txt?",
    ]);
    out.assert_success();
    assert_eq!(out.stdout, "It is alpha.\n");

    let requests = responses_requests(&f);
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert!(first["reasoning"]["effort"].is_string(), "{first}");
    assert_eq!(first["include"], json!(["reasoning.encrypted_content"]));
    assert!(requests[0].reasoning_items().is_empty());

    let second = &requests[1];
    let returned = second.reasoning_items();
    assert_eq!(returned.len(), 1, "{}", second.body["input"]);
    assert_eq!(returned[0].sealed_text.as_deref(), Some(THOUGHT));
    let input = second.body["input"].as_array().unwrap();
    let at = |kind: &str| input.iter().position(|i| i["type"] == kind).unwrap();
    assert!(at("reasoning") < at("function_call"), "{input:?}");

    // Stored as Pi stores it: the reasoning item's JSON in the thinking block's signature.
    let entries = assert_valid_session(&f.only_session());
    let msgs = messages(&entries);
    let thinking = msgs
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["content"].as_array().unwrap())
        .find(|b| b["type"] == "thinking")
        .expect("a thinking block");
    assert_eq!(thinking["thinking"], THOUGHT);
    let item: Value =
        serde_json::from_str(thinking["thinkingSignature"].as_str().unwrap()).unwrap();
    assert_eq!(item["type"], "reasoning");
    assert_eq!(
        item["encrypted_content"],
        returned[0].encrypted_content.as_deref().unwrap()
    );

    // A later run of the same session sends it again, read back from the file.
    let out = f.run(&[
        "-p",
        "--model",
        REASONING,
        "--thinking",
        "high",
        "--continue",
        "ROUTE-AGAIN",
    ]);
    out.assert_success();
    assert_eq!(out.stdout, "Still alpha.\n");
    let again = f.last_request().reasoning_items();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].sealed_text.as_deref(), Some(THOUGHT));
}

#[test]
fn server_error_then_success_is_retried() {
    let f = fixture();
    f.server.script(
        Rule::always()
            .reply(Reply::failing(Fault::status(500)))
            .reply(Reply::text("Answered after a retry.")),
    );
    let out = f.run(&["-p", "--model", PLAIN, "hi"]);
    out.assert_success();
    assert_eq!(out.stdout, "Answered after a retry.\n");
    assert_eq!(responses_requests(&f).len(), 2);
}

#[test]
fn in_stream_error_event_then_success_is_retried() {
    let f = fixture();
    f.server.script(
        Rule::always()
            .reply(
                Reply::text("This answer is cut short by the service.")
                    .fault(Fault::ErrorEvent { events: 5 }),
            )
            .reply(Reply::text("Whole answer.")),
    );
    let out = f.run(&["-p", "--model", PLAIN, "hi"]);
    out.assert_success();
    assert_eq!(out.stdout, "Whole answer.\n");
    assert_eq!(responses_requests(&f).len(), 2);
    let entries = assert_valid_session(&f.only_session());
    let texts: Vec<String> = messages(&entries).iter().map(|m| text_of(m)).collect();
    assert!(
        !texts.iter().any(|t| t.contains("cut short")),
        "the broken attempt is not kept: {texts:?}"
    );
}

#[test]
fn a_response_that_keeps_failing_is_one_clear_error() {
    let f = fixture();
    f.server.script(
        Rule::always()
            .reply(Reply::text("Never finished.").fault(Fault::ResponseFailed { events: 4 })),
    );
    let out = f.run(&["-p", "--model", PLAIN, "hi"]);
    let line = out.assert_one_line_error().to_string();
    assert!(
        line.contains("server_error") || line.contains("error while processing"),
        "the service's reason is named: {line}"
    );
    // A failure on the service's side is retried before it is reported.
    assert!(responses_requests(&f).len() > 1);
}

#[test]
fn max_output_tokens_stop_is_a_length_stop() {
    let f = fixture();
    f.server
        .script(Rule::always().reply(Reply::text("A partial answer").stop(StopKind::Length)));
    let out = f.run(&["-p", "--model", PLAIN, "hi"]);
    out.assert_success();
    assert_eq!(out.stdout, "A partial answer\n");
    let entries = assert_valid_session(&f.only_session());
    let last = *messages(&entries).last().unwrap();
    assert_eq!(last["stopReason"], "length", "{last}");
}

/// The parent (on a Responses model) hands a task to a child, which runs on the same model,
/// reads a file and reports; the parent answers with the report.
#[test]
fn a_child_task_runs_on_a_responses_model() {
    const CHILD: &str = "[child]";
    let f = fixture();
    let s = &f.server;
    let child = || Match::first_user(CHILD);
    s.script(
        Rule::new((!child()).and(Match::assistant_turns(0))).reply(Reply::tool_call(
            "call_agent",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Read the notes",
                   "prompt": format!("{CHILD} Read notes.txt and report its first line.")}),
        )),
    );
    s.script(
        Rule::new(child().and(Match::assistant_turns(0))).reply(Reply::tool_call(
            "call_read",
            "read",
            json!({"path": "notes.txt"}),
        )),
    );
    s.script(Rule::new(child()).reply(Reply::text("The first line is `alpha line`.")));
    s.script(
        Rule::new(Match::last_tool_result("alpha line"))
            .reply(Reply::text("The child says: alpha line.")),
    );
    let out = f.run(&["-p", "--model", PLAIN, "Have a helper read notes.txt."]);
    out.assert_success();
    assert_eq!(out.stdout, "The child says: alpha line.\n");

    let requests = responses_requests(&f);
    let (children, parents): (Vec<&RecordedRequest>, Vec<&RecordedRequest>) = requests
        .iter()
        .partition(|r| r.first_user_text().is_some_and(|t| t.contains(CHILD)));
    assert_eq!(children.len(), 2, "the child made its two turns");
    assert!(children.iter().all(|r| r.model() == "m1"));
    assert_eq!(parents.len(), 2);
    let result = parents[1].tool_results()[0].1.clone();
    assert!(result.contains("alpha line"), "the Agent result: {result}");
    f.server.check_tool_calls_answered().unwrap();
}

/// Long enough to stream as several events, so faults "after N events" land mid-message.
const PARTIAL: &str = "This reply starts streaming normally, goes on for a while in several \
pieces, and is then interrupted before it could finish properly.";

/// Every stream fault on the Responses route ends in a retry and the answer; the broken
/// attempt leaves nothing in the session.
#[test]
fn stream_faults_are_retried_then_answered() {
    let faults = [
        ("503", Reply::failing(Fault::status(503)), None),
        ("429", Reply::failing(Fault::rate_limited("0")), None),
        (
            "cut",
            Reply::text(PARTIAL).fault(Fault::CutAfter { events: 6 }),
            None,
        ),
        (
            "malformed",
            Reply::text(PARTIAL).fault(Fault::MalformedAfter { events: 6 }),
            None,
        ),
        (
            "response.failed",
            Reply::text(PARTIAL).fault(Fault::ResponseFailed { events: 6 }),
            None,
        ),
        (
            "silent",
            // After two text deltas: the idle deadline runs from the last content, and the
            // first events of a Responses stream (created, in progress, item added) have none.
            Reply::text(PARTIAL).fault(Fault::SilentAfter { events: 6 }),
            Some(("CADRE_IDLE_TIMEOUT_MS", "300")),
        ),
    ];
    for (label, first, env) in faults {
        let f = fixture();
        f.server.script(
            Rule::always()
                .reply(first)
                .reply(Reply::text("Whole answer.")),
        );
        let mut cmd = f.command(&["-p", "--model", PLAIN, "hi"]);
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let out = Running::spawn(cmd, None).wait(HANG_GUARD);
        out.assert_success();
        assert_eq!(out.stdout, "Whole answer.\n", "{label}");
        assert_eq!(responses_requests(&f).len(), 2, "{label}");
        let entries = assert_valid_session(&f.only_session());
        let texts: Vec<String> = messages(&entries).iter().map(|m| text_of(m)).collect();
        assert!(
            !texts.iter().any(|t| t.contains("interrupted before")),
            "{label}: {texts:?}"
        );
    }
}

#[test]
fn a_stream_without_its_terminal_event_fails_clearly() {
    let f = fixture();
    f.server
        .script(Rule::always().reply(Reply::text(PARTIAL).fault(Fault::NoTerminal)));
    let out = f.run(&["-p", "--model", PLAIN, "hi"]);
    let line = out.assert_one_line_error().to_lowercase();
    assert!(
        line.contains("terminal") || line.contains("ended"),
        "the reason is named: {line}"
    );
    let entries = assert_valid_session(&f.only_session());
    let last = &entries.last().unwrap()["message"];
    assert_eq!(last["stopReason"], "error", "{last}");
}

#[test]
fn context_overflow_is_not_retried() {
    let f = fixture();
    f.server
        .script(Rule::always().reply(Reply::failing(Fault::ContextOverflow)));
    let out = f.run(&["-p", "--model", PLAIN, "hi"]);
    let line = out.assert_one_line_error().to_string();
    assert!(line.contains("context"), "{line}");
    assert_eq!(responses_requests(&f).len(), 1);
}

/// The service refuses a function call sent back with the item id it was produced under when
/// the reasoning item before it is not sent. A model without `reasoning` in models.json does not
/// ask for encrypted content, so the reasoning it still produced cannot go back: the call goes
/// back without its item id (paired with its output by `call_id`) and the server accepts it.
#[test]
fn a_call_whose_reasoning_cannot_go_back_loses_its_item_id() {
    let f = fixture();
    f.server.script(Rule::new(Match::assistant_turns(0)).reply(
        Reply::new().thinking("Read notes.txt.").tool_call(
            "call_1",
            "read",
            json!({"path": "notes.txt"}),
        ),
    ));
    f.server
        .script(Rule::new(Match::last_tool_result("alpha")).reply(Reply::text("It is alpha.")));
    let out = f.run(&["-p", "--model", PLAIN, "first line of notes.txt?"]);
    out.assert_success();
    assert_eq!(out.stdout, "It is alpha.\n");
    let requests = responses_requests(&f);
    assert_eq!(requests.len(), 2);
    let second = &requests[1];
    assert!(second.reasoning_items().is_empty(), "{}", second.body);
    let calls = items(second, "function_call");
    assert_eq!(calls.len(), 1, "{}", second.body);
    assert!(calls[0].get("id").is_none(), "{}", calls[0]);
    assert_eq!(calls[0]["call_id"], "call_1");
}

/// A reply cut at its output limit while still reasoning holds a reasoning item and nothing
/// after it; the service refuses that item without its following item, so the next turn (here
/// after `--continue`) leaves it out.
#[test]
fn reasoning_cut_off_before_its_item_is_not_sent_back() {
    let f = fixture();
    // First: with the reasoning left out, the next turn shows no assistant turn either.
    f.server
        .script(Rule::new(Match::last_user("ROUTE-AGAIN")).reply(Reply::text("Answered.")));
    f.server.script(
        Rule::new(Match::assistant_turns(0))
            .reply(Reply::thinking("Still thinking about").stop(StopKind::Length)),
    );
    let out = f.run(&["-p", "--model", REASONING, "--thinking", "high", "hi"]);
    out.assert_success();
    let out = f.run(&[
        "-p",
        "--model",
        REASONING,
        "--thinking",
        "high",
        "--continue",
        "ROUTE-AGAIN",
    ]);
    out.assert_success();
    assert_eq!(out.stdout, "Answered.\n");
    let last = f.last_request();
    assert!(last.reasoning_items().is_empty(), "{}", last.body);
}
