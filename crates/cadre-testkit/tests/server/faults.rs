//! Every fault kind, on all three wire formats.

use std::time::Duration;

use cadre_testkit::prelude::*;
use serde_json::{Value, json};

use crate::client::{GUARD, Open, parse_sse, post, post_with};
use crate::{
    ANTHROPIC_PATH, OPENAI_PATH, RESPONSES_PATH, anthropic_body, openai_body, responses_body,
};

const APIS: [WireApi; 3] = [
    WireApi::OpenAi,
    WireApi::Anthropic,
    WireApi::OpenAiResponses,
];

fn target(api: WireApi) -> (&'static str, Value) {
    match api {
        WireApi::OpenAi => (OPENAI_PATH, openai_body("hi")),
        WireApi::Anthropic => (ANTHROPIC_PATH, anthropic_body("hi")),
        WireApi::OpenAiResponses => (RESPONSES_PATH, responses_body("hi")),
    }
}

async fn server_with(reply: Reply) -> FakeServer {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(reply));
    server
}

fn is_terminal(api: WireApi, event: &(Option<String>, String)) -> bool {
    match api {
        WireApi::OpenAi => event.1 == "[DONE]",
        WireApi::Anthropic => event.0.as_deref() == Some("message_stop"),
        WireApi::OpenAiResponses => matches!(
            event.0.as_deref(),
            Some("response.completed" | "response.incomplete")
        ),
    }
}

/// The error message and type from either service's error body.
fn error_of(api: WireApi, body: &Value) -> (String, String) {
    let error = match api {
        WireApi::OpenAi | WireApi::OpenAiResponses => &body["error"],
        WireApi::Anthropic => {
            assert_eq!(body["type"], "error");
            &body["error"]
        }
    };
    (
        error["message"].as_str().unwrap().to_string(),
        error["type"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn status_with_retry_after_and_default_body() {
    for api in APIS {
        let server = server_with(Reply::failing(Fault::rate_limited("7"))).await;
        let (path, body) = target(api);
        let r = post(server.addr(), path, &body).await;
        assert_eq!(r.status_line, "HTTP/1.1 429 Too Many Requests");
        assert_eq!(r.header("retry-after"), Some("7"));
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert!(r.complete);
        let (_, kind) = error_of(api, &r.json());
        let expected = match api {
            WireApi::OpenAi | WireApi::OpenAiResponses => "requests",
            WireApi::Anthropic => "rate_limit_error",
        };
        assert_eq!(kind, expected);
        assert_eq!(server.requests().len(), 1, "faulted requests are recorded");
    }
}

#[tokio::test]
async fn status_codes_and_custom_body() {
    for api in APIS {
        for status in [400, 401, 500, 503, 529] {
            let server = server_with(Reply::failing(Fault::status(status))).await;
            let (path, body) = target(api);
            let r = post(server.addr(), path, &body).await;
            assert_eq!(r.status(), status);
            assert_eq!(r.header("retry-after"), None);
            let _ = error_of(api, &r.json());
        }
        let server = server_with(Reply::failing(Fault::Status {
            status: 502,
            retry_after: None,
            body: Some("<html>bad gateway</html>".into()),
        }))
        .await;
        let (path, body) = target(api);
        let r = post(server.addr(), path, &body).await;
        assert_eq!(r.status_line, "HTTP/1.1 502 Bad Gateway");
        assert_eq!(r.text(), "<html>bad gateway</html>");
    }
}

#[tokio::test]
async fn context_overflow() {
    for api in APIS {
        let server = server_with(Reply::failing(Fault::ContextOverflow)).await;
        let (path, body) = target(api);
        let r = post(server.addr(), path, &body).await;
        assert_eq!(r.status(), 400);
        let v = r.json();
        let (message, kind) = error_of(api, &v);
        assert_eq!(kind, "invalid_request_error");
        match api {
            WireApi::OpenAi => {
                assert_eq!(v["error"]["code"], "context_length_exceeded");
                assert!(message.contains("maximum context length"));
            }
            WireApi::Anthropic => assert!(message.starts_with("prompt is too long")),
            WireApi::OpenAiResponses => {
                assert_eq!(v["error"]["code"], "context_length_exceeded");
                assert_eq!(v["error"]["param"], "input");
                assert!(message.contains("context window"), "{message}");
            }
        }
    }
}

#[tokio::test]
async fn cut_after_drops_the_connection_mid_body() {
    for api in APIS {
        let server =
            server_with(Reply::text("a fairly long answer").fault(Fault::CutAfter { events: 3 }))
                .await;
        let (path, body) = target(api);
        let r = post(server.addr(), path, &body).await;
        assert_eq!(r.status(), 200);
        assert!(!r.complete, "chunked body must not be terminated");
        let events = r.events();
        assert_eq!(events.len(), 3);
        assert!(!events.iter().any(|e| is_terminal(api, e)));
    }
}

#[tokio::test]
async fn cut_after_more_events_than_exist_still_withholds_the_terminal() {
    for api in APIS {
        let server =
            server_with(Reply::text("short").fault(Fault::CutAfter { events: 1000 })).await;
        let (path, body) = target(api);
        let r = post(server.addr(), path, &body).await;
        assert!(!r.complete);
        assert!(!r.events().iter().any(|e| is_terminal(api, e)));
        assert!(r.events().len() > 3);
    }
}

#[tokio::test]
async fn silent_after_keeps_the_connection_open() {
    for api in APIS {
        let server = FakeServer::start().await.unwrap();
        server.script(
            Rule::new(Match::last_user("hi"))
                .reply(Reply::text("never finished").fault(Fault::SilentAfter { events: 2 })),
        );
        server.script(Rule::new(Match::last_user("other")).reply(Reply::text("ok")));
        let (path, body) = target(api);
        let mut open = Open::send(server.addr(), path, &body).await;
        let r = open.read_events(2).await;
        assert_eq!(r.events().len(), 2);
        assert!(!r.complete);
        // Still open and silent (the wait only needs to be long enough to notice a close).
        assert_eq!(open.poll_quiet(Duration::from_millis(200)).await, None);

        // Other requests are served meanwhile.
        let other = match api {
            WireApi::OpenAi => openai_body("other"),
            WireApi::Anthropic => anthropic_body("other"),
            WireApi::OpenAiResponses => responses_body("other"),
        };
        let r = post(server.addr(), path, &other).await;
        assert!(r.complete);
        assert!(r.events().iter().any(|e| is_terminal(api, e)));

        // Dropping the server closes the held connection.
        drop(server);
        assert_eq!(open.poll_quiet(GUARD).await, Some(0));
    }
}

#[tokio::test]
async fn no_response_holds_the_connection_without_a_status_line() {
    for api in APIS {
        let server = server_with(Reply::text("never sent").fault(Fault::NoResponse)).await;
        let (path, body) = target(api);
        let mut open = Open::send(server.addr(), path, &body).await;
        assert_eq!(open.poll_quiet(Duration::from_millis(200)).await, None);
        assert_eq!(
            server.requests().len(),
            1,
            "the request was read and recorded"
        );
        drop(server);
        assert_eq!(open.poll_quiet(GUARD).await, Some(0));
    }
}

/// The body after the first `events` frames of a reply faulted with `fault`, once it holds at
/// least `more` further bytes; the connection is still open then.
async fn body_after(api: WireApi, fault: Fault, events: usize, more: usize) -> String {
    let server = server_with(Reply::text("never finished").fault(fault)).await;
    let (path, body) = target(api);
    let mut open = Open::send(server.addr(), path, &body).await;
    let head = open.read_events(events).await;
    assert_eq!(head.status(), 200);
    let before = head.text();
    let cut = before
        .match_indices("\n\n")
        .nth(events - 1)
        .map(|(at, _)| at + 2)
        .unwrap();
    let r = open.read_body(cut + more).await;
    assert!(!r.complete);
    let text = r.text();
    assert!(
        !text.contains("[DONE]")
            && !text.contains("message_stop")
            && !text.contains("response.completed"),
        "{text}"
    );
    text[cut..].to_string()
}

const EVERY: Duration = Duration::from_millis(5);

#[tokio::test]
async fn keep_alives_after_repeat_a_comment_for_ever() {
    for api in APIS {
        let fault = Fault::KeepAlivesAfter {
            events: 2,
            every: EVERY,
        };
        let tail = body_after(api, fault, 2, 4 * ": ping\n\n".len()).await;
        assert!(
            tail.starts_with(&": ping\n\n".repeat(4)),
            "{api:?}: {tail:?}"
        );
    }
}

#[tokio::test]
async fn pings_after_repeat_an_event_without_content_for_ever() {
    for api in APIS {
        let fault = Fault::PingsAfter {
            events: 1,
            every: EVERY,
        };
        // A Responses ping carries the whole response object, so it takes more bytes.
        let more = if api == WireApi::OpenAiResponses {
            3000
        } else {
            600
        };
        let tail = body_after(api, fault, 1, more).await;
        let events = parse_sse(&tail);
        assert!(events.len() >= 3, "{api:?}: {tail:?}");
        for (name, data) in &events {
            let data: Value = serde_json::from_str(data).unwrap();
            match api {
                WireApi::Anthropic => {
                    assert_eq!(name.as_deref(), Some("ping"));
                    assert_eq!(data, json!({"type": "ping"}));
                }
                WireApi::OpenAi => {
                    assert_eq!(data["choices"][0]["delta"], json!({"content": ""}));
                    assert_eq!(data["choices"][0]["finish_reason"], Value::Null);
                }
                WireApi::OpenAiResponses => {
                    assert_eq!(name.as_deref(), Some("response.in_progress"));
                    assert_eq!(data["type"], "response.in_progress");
                    assert_eq!(data["response"]["output"], json!([]));
                }
            }
        }
    }
}

#[tokio::test]
async fn trickle_after_sends_one_byte_at_a_time_of_an_event_that_never_ends() {
    for api in APIS {
        let fault = Fault::TrickleAfter {
            events: 2,
            every: EVERY,
        };
        let tail = body_after(api, fault, 2, 60).await;
        assert!(
            tail.starts_with("data: {") || tail.starts_with("event: "),
            "{tail:?}"
        );
        assert!(
            !tail.contains("\n\n"),
            "the event never completes: {tail:?}"
        );
        assert!(tail.ends_with(' '), "{tail:?}");
    }
}

#[tokio::test]
async fn malformed_after_sends_invalid_json_then_ends() {
    for api in APIS {
        let server =
            server_with(Reply::text("some words here").fault(Fault::MalformedAfter { events: 2 }))
                .await;
        let (path, body) = target(api);
        let r = post(server.addr(), path, &body).await;
        assert!(
            r.complete,
            "body is terminated properly after the bad frame"
        );
        let events = r.events();
        assert_eq!(events.len(), 3);
        for event in &events[..2] {
            assert!(serde_json::from_str::<Value>(&event.1).is_ok());
        }
        assert!(serde_json::from_str::<Value>(&events[2].1).is_err());
    }
}

#[tokio::test]
async fn text_flood_streams_its_bytes_in_pieces_inside_the_text_block_then_the_rest() {
    let bytes = 3 * FLOOD_PIECE + 1000;
    for (api, events) in [
        (WireApi::OpenAi, 1),
        (WireApi::Anthropic, 3),
        (WireApi::OpenAiResponses, 4),
    ] {
        let server =
            server_with(Reply::text("the end").fault(Fault::TextFloodAfter { events, bytes }))
                .await;
        let (path, body) = target(api);
        let r = post(server.addr(), path, &body).await;
        assert!(r.complete, "{api:?}");
        let events = r.events();
        assert!(is_terminal(api, events.last().unwrap()), "{api:?}");
        let text = r.streamed_text();
        assert_eq!(text.len(), bytes + "the end".len(), "{api:?}");
        assert!(text.starts_with("flood flood "), "{api:?}");
        assert!(text.ends_with("the end"), "{api:?}");
        // Four flood deltas (three whole pieces and the rest), each a complete event.
        let longest = events.iter().map(|e| e.1.len()).max().unwrap();
        assert!(longest < FLOOD_PIECE + 1024, "{api:?}: {longest}");
        let flood_events = events
            .iter()
            .filter(|e| e.1.contains("flood flood"))
            .count();
        assert_eq!(flood_events, 4, "{api:?}");
    }
}

#[tokio::test]
async fn no_terminal_sends_everything_but_the_end_marker() {
    for api in APIS {
        let server = server_with(Reply::text("complete content").fault(Fault::NoTerminal)).await;
        let (path, body) = target(api);
        let r = post(server.addr(), path, &body).await;
        assert!(r.complete);
        let events = r.events();
        assert!(!events.iter().any(|e| is_terminal(api, e)));
        assert_eq!(r.streamed_text(), "complete content");
        // The stop reason is still delivered where the format has it outside the terminal
        // event; Responses carries it only there, so its stream ends with the last item.
        let data = r.data_json();
        match api {
            WireApi::OpenAiResponses => {
                assert_eq!(data.last().unwrap()["type"], "response.output_item.done");
            }
            _ => assert!(data.iter().any(|v| {
                v["choices"][0]["finish_reason"].is_string() || v["type"] == "message_delta"
            })),
        }
    }
}

#[tokio::test]
async fn error_event_mid_stream() {
    for api in APIS {
        let server =
            server_with(Reply::text("partial answer").fault(Fault::ErrorEvent { events: 2 })).await;
        let (path, body) = target(api);
        let r = post(server.addr(), path, &body).await;
        assert_eq!(r.status(), 200);
        assert!(r.complete);
        let events = r.events();
        assert_eq!(events.len(), 3);
        let (name, data) = &events[2];
        let v: Value = serde_json::from_str(data).unwrap();
        match api {
            WireApi::OpenAi => {
                assert_eq!(name, &None);
                assert_eq!(v["error"]["type"], "server_error");
            }
            WireApi::Anthropic => {
                assert_eq!(name.as_deref(), Some("error"));
                assert_eq!(v["error"]["type"], "overloaded_error");
            }
            WireApi::OpenAiResponses => {
                assert_eq!(name.as_deref(), Some("error"));
                assert_eq!(
                    v,
                    json!({"type": "error", "sequence_number": 2, "code": "server_error",
                           "message": "The server had an error while processing your request. Sorry about that!",
                           "param": null})
                );
            }
        }
    }
}

#[tokio::test]
async fn response_failed_mid_stream() {
    for api in APIS {
        let server =
            server_with(Reply::text("partial answer").fault(Fault::ResponseFailed { events: 3 }))
                .await;
        let (path, body) = target(api);
        let r = post(server.addr(), path, &body).await;
        assert_eq!(r.status(), 200);
        assert!(r.complete);
        let events = r.events();
        assert_eq!(events.len(), 4);
        assert!(!events.iter().any(|e| is_terminal(api, e)));
        let (name, data) = &events[3];
        let v: Value = serde_json::from_str(data).unwrap();
        match api {
            WireApi::OpenAiResponses => {
                assert_eq!(name.as_deref(), Some("response.failed"));
                assert_eq!(v["type"], "response.failed");
                assert_eq!(v["sequence_number"], 3);
                assert_eq!(v["response"]["status"], "failed");
                assert_eq!(v["response"]["error"]["code"], "server_error");
            }
            // The other formats have no such event: their in-stream error stands in.
            WireApi::OpenAi => assert_eq!(v["error"]["type"], "server_error"),
            WireApi::Anthropic => assert_eq!(v["error"]["type"], "overloaded_error"),
        }
    }
}

#[tokio::test]
async fn latency_and_chunk_delay_still_deliver_everything() {
    for api in APIS {
        let server = server_with(
            Reply::text("slow but sure")
                .latency(Duration::from_millis(5))
                .chunk_delay(Duration::from_millis(1)),
        )
        .await;
        let (path, body) = target(api);
        let r = post(server.addr(), path, &body).await;
        assert!(r.complete);
        assert!(r.events().iter().any(|e| is_terminal(api, e)));
    }
}

#[tokio::test]
async fn stream_faults_on_non_streaming_requests_close_without_a_response() {
    for api in APIS {
        let server = server_with(Reply::text("x").fault(Fault::CutAfter { events: 1 })).await;
        let (path, mut body) = target(api);
        body["stream"] = json!(false);
        let r = post_with(server.addr(), path, &body.to_string(), &[]).await;
        assert_eq!(r.status_line, "");
        assert!(!r.complete);
    }
}

#[test]
fn sse_parser_sanity() {
    assert_eq!(
        parse_sse("event: a\ndata: 1\n\ndata: 2\n\n"),
        vec![
            (Some("a".to_string()), "1".to_string()),
            (None, "2".to_string())
        ]
    );
}
