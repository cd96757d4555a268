//! Successful replies in both formats: text, tool calls, thinking, usage, cost, request shape.

use cadre_llm::{Api, AssistantMessageEvent};
use cadre_protocol::{ContentBlock, Message, StopReason, ThinkingLevel, ToolResultMessage};
use cadre_testkit::prelude::*;
use serde_json::json;

use crate::support::{BOTH, model, request, run};

#[tokio::test]
async fn text_reply_with_usage_and_cost() {
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(
            Rule::always().reply(
                Reply::text("Hello from the fake model")
                    .usage(1000, 200)
                    .cache(500, 100),
            ),
        );
        let out = run(request(model(&server, api), "hi")).await;
        let msg = out.done();
        assert_eq!(msg.text(), "Hello from the fake model", "{api:?}");
        assert_eq!(msg.stop_reason, StopReason::Stop);
        assert_eq!(msg.api, api.as_str());
        assert_eq!(msg.provider, "fake");
        assert_eq!(msg.model, "fake-model");
        assert_eq!(msg.usage.output, 200, "{api:?}");
        assert_eq!(msg.usage.cache_read, 500, "{api:?}");
        match api {
            Api::AnthropicMessages => {
                assert_eq!(msg.usage.input, 1000);
                assert_eq!(msg.usage.cache_write, 100);
                assert_eq!(msg.usage.total_tokens, 1800);
            }
            _ => {
                // OpenAI has no cache-write bucket: those tokens count as plain input.
                assert_eq!(msg.usage.input, 1100);
                assert_eq!(msg.usage.total_tokens, 1800);
            }
        }
        assert!(msg.usage.cost.total > 0.0);
        let want_output_cost = 200.0 * 15.0 / 1e6;
        assert!((msg.usage.cost.output - want_output_cost).abs() < 1e-12);
        assert!(out.retries.is_empty());
        assert_eq!(out.after_terminal, 0);
        // Text arrived in several deltas, and the deltas alone rebuild the reply.
        let deltas = out
            .deltas
            .iter()
            .filter(|d| matches!(d, AssistantMessageEvent::TextDelta { .. }))
            .count();
        assert!(deltas > 1, "{api:?}: {deltas} deltas");
        assert_eq!(out.rebuilt().content, msg.content);
        assert_eq!(out.deltas[0], AssistantMessageEvent::Start);
    }
}

#[tokio::test]
async fn request_shape_on_the_wire() {
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(Rule::always().reply(Reply::text("ok")));
        let mut m = model(&server, api);
        m.headers.insert("x-extra".into(), "yes".into());
        run(request(m, "hello there")).await.done();
        let reqs = server.requests();
        assert_eq!(reqs.len(), 1);
        let r = &reqs[0];
        assert!(r.is_stream());
        assert_eq!(r.model(), "fake-model");
        assert_eq!(r.first_user_text().as_deref(), Some("hello there"));
        assert!(r.system_text().contains("You are a test."));
        assert_eq!(r.header("x-extra"), Some("yes"));
        match api {
            Api::AnthropicMessages => {
                assert_eq!(r.header("x-api-key"), Some("test-key-123"));
                assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
                assert_eq!(r.body["tools"][0]["name"], "read");
            }
            _ => {
                assert_eq!(r.header("authorization"), Some("Bearer test-key-123"));
                assert_eq!(r.body["stream_options"]["include_usage"], true);
                assert_eq!(r.body["tools"][0]["function"]["name"], "read");
            }
        }
    }
}

#[tokio::test]
async fn multiple_tool_calls_then_results_round_trip() {
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(
            Rule::new(Match::assistant_turns(0)).reply(
                Reply::new()
                    .text("Reading both.")
                    .tool_call("call_1", "read", json!({"path": "a.txt"}))
                    .tool_call("call_2", "read", json!({"path": "b.txt", "limit": 5})),
            ),
        );
        server.script(Rule::new(Match::last_tool_result("B")).reply(Reply::text("done")));
        let first = run(request(model(&server, api), "read")).await;
        let msg = first.done().clone();
        assert_eq!(msg.stop_reason, StopReason::ToolUse, "{api:?}");
        assert_eq!(msg.text(), "Reading both.");
        let calls: Vec<_> = msg.tool_calls().cloned().collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].id, "call_1");
        assert_eq!(calls[0].name, "read");
        assert_eq!(calls[0].arguments, json!({"path": "a.txt"}));
        assert_eq!(calls[1].arguments, json!({"path": "b.txt", "limit": 5}));
        assert_eq!(first.rebuilt().content, msg.content);

        // Feed the results back: both formats must pair every call with its result.
        let mut req = request(model(&server, api), "read");
        req.messages.push(Message::Assistant(msg));
        for (id, text) in [("call_1", "A"), ("call_2", "B")] {
            req.messages.push(Message::ToolResult(ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: "read".into(),
                content: vec![ContentBlock::text(text)],
                details: None,
                is_error: false,
                timestamp: 0,
            }));
        }
        let second = run(req).await;
        assert_eq!(second.done().text(), "done", "{api:?}");
        server.check_tool_calls_answered().unwrap();
    }
}

#[tokio::test]
async fn invalid_tool_arguments_reach_the_caller_as_a_string() {
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(Rule::always().reply(Reply::new().tool_call_raw(
            "c1",
            "write",
            "{\"path\": \"a\", ",
        )));
        let out = run(request(model(&server, api), "x")).await;
        let call = out.done().tool_calls().next().cloned().unwrap();
        assert_eq!(call.arguments, json!("{\"path\": \"a\", "), "{api:?}");
    }
}

#[tokio::test]
async fn thinking_is_streamed_and_requested() {
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(
            Rule::always().reply(
                Reply::new()
                    .thinking_signed("Let me consider.", "sig-abc")
                    .text("Answer."),
            ),
        );
        let mut m = model(&server, api);
        m.reasoning = true;
        m.max_tokens = 64_000;
        let mut req = request(m, "think");
        req.thinking = ThinkingLevel::High;
        let out = run(req).await;
        let msg = out.done();
        let ContentBlock::Thinking {
            thinking,
            signature,
            ..
        } = &msg.content[0]
        else {
            panic!("{api:?}: no thinking block first: {:?}", msg.content);
        };
        assert_eq!(thinking, "Let me consider.");
        assert_eq!(msg.text(), "Answer.");
        let body = &server.requests()[0].body;
        match api {
            Api::AnthropicMessages => {
                assert_eq!(signature.as_deref(), Some("sig-abc"));
                assert_eq!(body["thinking"]["type"], "enabled");
                assert_eq!(body["thinking"]["budget_tokens"], 16_384);
                assert!(body["max_tokens"].as_u64().unwrap() > 16_384);
            }
            _ => {
                assert_eq!(body["reasoning_effort"], "high");
                assert_eq!(body["messages"][0]["role"], "developer");
            }
        }
        assert!(
            out.deltas
                .iter()
                .any(|d| matches!(d, AssistantMessageEvent::ThinkingDelta { .. }))
        );
    }
}

#[tokio::test]
async fn every_stop_kind_maps() {
    for api in BOTH {
        for (kind, want) in [
            (StopKind::Stop, StopReason::Stop),
            (StopKind::Length, StopReason::Length),
            (StopKind::ContentFilter, StopReason::Stop),
        ] {
            let server = FakeServer::start().await.unwrap();
            server.script(Rule::always().reply(Reply::text("x").stop(kind)));
            let out = run(request(model(&server, api), "x")).await;
            assert_eq!(out.done().stop_reason, want, "{api:?} {kind:?}");
        }
    }
}
