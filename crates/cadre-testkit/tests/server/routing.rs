//! Rule matching, reply sequencing, request capture and the tool-call pairing check.

use cadre_testkit::prelude::*;
use serde_json::{Value, json};

use crate::client::{post, post_with};
use crate::{ANTHROPIC_PATH, OPENAI_PATH, RESPONSES_PATH};

/// The same conversation in all three formats: system, a user prompt, an assistant tool call,
/// its result, an assistant answer, and a new user prompt.
fn conversation(api: WireApi, answered: bool) -> (&'static str, Value) {
    match api {
        WireApi::OpenAi => {
            let mut messages = vec![
                json!({"role": "system", "content": "SYSTEM-RULES"}),
                json!({"role": "user", "content": "FIRST-PROMPT"}),
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_7", "type": "function", "function": {"name": "read", "arguments": "{}"}}]}),
            ];
            if answered {
                messages.push(
                    json!({"role": "tool", "tool_call_id": "call_7", "content": "TOOL-OUTPUT"}),
                );
            }
            messages.push(json!({"role": "assistant", "content": "ASSISTANT-SAYS"}));
            messages.push(
                json!({"role": "user", "content": [{"type": "text", "text": "LAST-PROMPT"}]}),
            );
            (
                OPENAI_PATH,
                json!({"model": "model-a", "stream": true, "messages": messages}),
            )
        }
        WireApi::Anthropic => {
            let mut messages = vec![
                json!({"role": "user", "content": "FIRST-PROMPT"}),
                json!({"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_7", "name": "read", "input": {}}]}),
            ];
            if answered {
                messages.push(json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_7", "content": "TOOL-OUTPUT"}]}));
            } else {
                messages.push(json!({"role": "user", "content": "no result here"}));
            }
            messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": "ASSISTANT-SAYS"}]}));
            messages.push(
                json!({"role": "user", "content": [{"type": "text", "text": "LAST-PROMPT"}]}),
            );
            (
                ANTHROPIC_PATH,
                json!({"model": "model-a", "stream": true, "max_tokens": 10,
                       "system": [{"type": "text", "text": "SYSTEM-RULES"}], "messages": messages}),
            )
        }
        WireApi::OpenAiResponses => {
            let mut input = vec![
                json!({"role": "developer", "content": "SYSTEM-RULES"}),
                json!({"role": "user", "content": [{"type": "input_text", "text": "FIRST-PROMPT"}]}),
                json!({"type": "function_call", "call_id": "call_7", "name": "read", "arguments": "{}"}),
            ];
            if answered {
                input.push(
                    json!({"type": "function_call_output", "call_id": "call_7", "output": "TOOL-OUTPUT"}),
                );
            }
            input.push(json!({"type": "message", "role": "assistant", "status": "completed",
                              "content": [{"type": "output_text", "text": "ASSISTANT-SAYS", "annotations": []}]}));
            input.push(json!({"role": "user", "content": "LAST-PROMPT"}));
            (
                RESPONSES_PATH,
                json!({"model": "model-a", "stream": true, "input": input}),
            )
        }
    }
}

const APIS: [WireApi; 3] = [
    WireApi::OpenAi,
    WireApi::Anthropic,
    WireApi::OpenAiResponses,
];

#[tokio::test]
async fn each_match_variant_routes() {
    let cases = [
        (
            Match::first_user("FIRST-PROMPT"),
            Match::first_user("LAST-PROMPT"),
        ),
        (
            Match::last_user("LAST-PROMPT"),
            Match::last_user("FIRST-PROMPT"),
        ),
        (Match::system("SYSTEM"), Match::system("FIRST")),
        (
            Match::any_text("ASSISTANT-SAYS"),
            Match::any_text("NOWHERE"),
        ),
        (Match::any_text("TOOL-OUTPUT"), Match::any_text("call_7")),
        (Match::assistant_turns(2), Match::assistant_turns(1)),
        (
            Match::last_tool_result("OUTPUT"),
            Match::last_tool_result("PROMPT"),
        ),
        (Match::model("model-a"), Match::model("model-b")),
        (
            Match::All(vec![Match::model("model-a"), Match::system("RULES")]),
            Match::All(vec![Match::model("model-a"), Match::system("NOPE")]),
        ),
        (
            Match::Not(Box::new(Match::model("model-b"))),
            Match::Not(Box::new(Match::model("model-a"))),
        ),
        (
            Match::model("x").or(Match::first_user("FIRST")),
            Match::model("x").or(Match::first_user("LAST")),
        ),
        (
            Match::model("model-a").and(Match::assistant_turns(2)),
            Match::model("model-a").and(Match::assistant_turns(3)),
        ),
    ];
    for api in APIS {
        let (path, body) = conversation(api, true);
        for (hit, miss) in &cases {
            let server = FakeServer::start().await.unwrap();
            server.script(Rule::new(miss.clone()).reply(Reply::text("MISS")));
            server.script(Rule::new(hit.clone()).reply(Reply::text("HIT")));
            server.script(Rule::always().reply(Reply::text("FALLBACK")));
            let r = post(server.addr(), path, &body).await;
            assert_eq!(r.streamed_text(), "HIT", "{api:?}: {hit:?} vs {miss:?}");
        }
    }
}

#[tokio::test]
async fn first_matching_rule_wins_and_replies_repeat_last() {
    let server = FakeServer::start().await.unwrap();
    server.script(
        Rule::always()
            .reply(Reply::text("one"))
            .reply(Reply::text("two")),
    );
    server.script(Rule::always().reply(Reply::text("never")));
    let (path, body) = conversation(WireApi::OpenAi, true);
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(post(server.addr(), path, &body).await.streamed_text());
    }
    assert_eq!(seen, ["one", "two", "two", "two"]);
}

#[tokio::test]
async fn requests_are_recorded_with_headers_and_bodies() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::new(Match::model("model-a")).reply(Reply::text("ok")));
    let (path, body) = conversation(WireApi::Anthropic, true);
    post_with(
        server.addr(),
        path,
        &body.to_string(),
        &[("x-api-key", "secret"), ("anthropic-version", "2023-06-01")],
    )
    .await;
    let unmatched = json!({"model": "other", "stream": true, "messages": []});
    post(server.addr(), OPENAI_PATH, &unmatched).await;

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].api, WireApi::Anthropic);
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("X-Api-Key"), Some("secret"));
    assert_eq!(requests[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(requests[0].body, body);
    assert_eq!(
        requests[0].first_user_text().as_deref(),
        Some("FIRST-PROMPT")
    );
    assert_eq!(requests[0].tool_call_ids(), ["call_7"]);
    assert_eq!(requests[1].api, WireApi::OpenAi);
    assert_eq!(requests[1].body, unmatched);
    assert_eq!(server.last_request().unwrap().body, unmatched);
    server.clear_requests();
    assert!(server.requests().is_empty());
    assert_eq!(server.last_request(), None);
}

#[tokio::test]
async fn unmatched_requests_get_a_400_in_the_service_shape() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::new(Match::model("nothing-matches")).reply(Reply::text("x")));
    for api in APIS {
        let (path, body) = conversation(api, true);
        let r = post(server.addr(), path, &body).await;
        assert_eq!(r.status(), 400);
        let v = r.json();
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("cadre-testkit: no scripted reply matches"),
            "{message}"
        );
        assert!(
            message.contains("FIRST-PROMPT"),
            "summary names the prompt: {message}"
        );
        assert_eq!(v["error"]["type"], "invalid_request_error");
        if api == WireApi::Anthropic {
            assert_eq!(v["type"], "error");
        }
    }
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn unknown_routes_and_bad_json_are_reported_and_recorded() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("x")));
    let r = post(server.addr(), "/v1/models", &json!({})).await;
    assert_eq!(r.status(), 404);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no route")
    );
    let r = post_with(server.addr(), OPENAI_PATH, "{not json", &[]).await;
    assert_eq!(r.status(), 400);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );
    let r = post_with(
        server.addr(),
        "/nowhere",
        "{}",
        &[("anthropic-version", "1")],
    )
    .await;
    assert_eq!(r.status(), 404);
    assert_eq!(r.json()["type"], "error");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].body, Value::Null);
    assert_eq!(requests[2].api, WireApi::Anthropic);
}

#[tokio::test]
async fn tool_call_pairing_check() {
    for api in APIS {
        let server = FakeServer::start().await.unwrap();
        server.script(Rule::always().reply(Reply::text("x")));
        let (path, answered) = conversation(api, true);
        post(server.addr(), path, &answered).await;
        assert_eq!(server.check_tool_calls_answered(), Ok(()));
        let (_, unanswered) = conversation(api, false);
        post(server.addr(), path, &unanswered).await;
        let err = server.check_tool_calls_answered().unwrap_err();
        assert!(err.contains("request #1"), "{err}");
        assert!(err.contains("call_7"), "{err}");
        assert!(!err.contains("request #0"), "{err}");
    }
}

#[tokio::test]
async fn many_concurrent_connections() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("concurrent reply")));
    let addr = server.addr();
    let (path, body) = conversation(WireApi::OpenAi, true);
    let tasks: Vec<_> = (0..24)
        .map(|_| {
            let body = body.clone();
            tokio::spawn(async move { post(addr, path, &body).await })
        })
        .collect();
    for task in tasks {
        let r = task.await.unwrap();
        assert!(r.complete);
        assert_eq!(r.streamed_text(), "concurrent reply");
    }
    assert_eq!(server.requests().len(), 24);
}

#[test]
fn blocking_server_serves_without_an_ambient_runtime() {
    let server = FakeServer::start_blocking().unwrap();
    server.script(Rule::always().reply(Reply::text("from a thread")));
    assert!(server.openai_base_url().ends_with("/v1"));
    assert!(!server.anthropic_base_url().ends_with('/'));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (path, body) = conversation(WireApi::Anthropic, true);
    let r = runtime.block_on(post(server.addr(), path, &body));
    assert_eq!(r.streamed_text(), "from a thread");
}

#[tokio::test]
async fn base_urls_point_at_the_server() {
    let server = FakeServer::start().await.unwrap();
    let port = server.addr().port();
    assert_eq!(
        server.openai_base_url(),
        format!("http://127.0.0.1:{port}/v1")
    );
    assert_eq!(
        server.anthropic_base_url(),
        format!("http://127.0.0.1:{port}")
    );
}
