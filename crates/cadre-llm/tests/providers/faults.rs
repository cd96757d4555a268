//! Provider faults end in a retry or a typed failure, never a hang or an empty success (R3, Z2).

use std::time::Duration;

use cadre_llm::{ErrorKind, LlmError, RetryPolicy, Waited};
use cadre_protocol::StopReason;
use cadre_testkit::prelude::*;

use crate::support::{BOTH, fast_policy, model, request, run, run_with};

/// Script `fault` for the first reply and a good answer after it; expect one retry then success.
async fn fault_then_success(fault: Fault) -> Vec<LlmError> {
    let mut errors = Vec::new();
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(
            Rule::always()
                .reply(
                    Reply::text("first attempt text that is long enough to be cut")
                        .fault(fault.clone()),
                )
                .reply(Reply::text("recovered")),
        );
        let out = run(request(model(&server, api), "x")).await;
        assert_eq!(out.done().text(), "recovered", "{api:?} {fault:?}");
        assert_eq!(out.retries.len(), 1, "{api:?} {fault:?}: {:?}", out.retries);
        assert_eq!(server.requests().len(), 2);
        // The deltas after the retry rebuild only the second attempt.
        assert_eq!(out.rebuilt().text(), "recovered");
        let (attempt, max, _, err) = out.retries[0].clone();
        assert_eq!((attempt, max), (1, 2), "first retry of at most two");
        assert!(err.is_retryable(), "{err}");
        errors.push(err);
    }
    errors
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(
            Rule::always()
                .reply(Reply::failing(Fault::rate_limited("1")))
                .reply(Reply::text("ok")),
        );
        let out = run(request(model(&server, api), "x")).await;
        assert_eq!(out.done().text(), "ok");
        let (_, _, delay_ms, err) = &out.retries[0];
        assert_eq!(*delay_ms, 1000, "retry-after honoured");
        assert!(matches!(err, LlmError::Http { status: 429, .. }), "{err}");
        assert_eq!(err.retry_after(), Some(Duration::from_secs(1)));
    }
}

#[tokio::test]
async fn server_errors_then_success() {
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(
            Rule::always()
                .reply(Reply::failing(Fault::status(500)))
                .reply(Reply::failing(Fault::status(503)))
                .reply(Reply::text("ok")),
        );
        let out = run(request(model(&server, api), "x")).await;
        assert_eq!(out.done().text(), "ok", "{api:?}");
        let statuses: Vec<_> = out
            .retries
            .iter()
            .map(|(attempt, _, _, e)| match e {
                LlmError::Http { status, .. } => (*attempt, *status),
                other => panic!("{other}"),
            })
            .collect();
        assert_eq!(statuses, vec![(1, 500), (2, 503)]);
    }
}

#[tokio::test]
async fn cut_stream_is_retried() {
    for err in fault_then_success(Fault::CutAfter { events: 3 }).await {
        assert!(
            matches!(
                err,
                LlmError::Connection { .. } | LlmError::IncompleteStream { .. }
            ),
            "{err}"
        );
    }
}

#[tokio::test]
async fn silent_stream_times_out_and_is_retried() {
    for err in fault_then_success(Fault::SilentAfter { events: 3 }).await {
        assert!(
            matches!(
                err,
                LlmError::NoContent {
                    waited: Waited::Idle,
                    ..
                }
            ),
            "{err}"
        );
    }
}

#[tokio::test]
async fn malformed_stream_is_retried() {
    for err in fault_then_success(Fault::MalformedAfter { events: 3 }).await {
        assert!(
            matches!(
                err,
                LlmError::MalformedStream { .. } | LlmError::IncompleteStream { .. }
            ),
            "{err}"
        );
    }
}

#[tokio::test]
async fn missing_terminal_event_is_retried() {
    for err in fault_then_success(Fault::NoTerminal).await {
        assert!(matches!(err, LlmError::IncompleteStream { .. }), "{err}");
    }
}

#[tokio::test]
async fn in_stream_error_event_is_retried() {
    for err in fault_then_success(Fault::ErrorEvent { events: 2 }).await {
        assert!(matches!(err, LlmError::Http { .. }), "{err}");
        assert!(err.to_string().contains("stream error"), "{err}");
    }
}

#[tokio::test]
async fn missing_terminal_event_every_time_fails_instead_of_empty_success() {
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(Rule::always().reply(Reply::text("never finished").fault(Fault::NoTerminal)));
        let out = run(request(model(&server, api), "x")).await;
        let (err, partial) = out.failed();
        assert!(
            matches!(err, LlmError::IncompleteStream { .. }),
            "{api:?}: {err}"
        );
        assert_eq!(partial.stop_reason, StopReason::Error);
        assert!(
            partial
                .error_message
                .as_deref()
                .unwrap_or("")
                .contains("terminal")
        );
        assert_eq!(out.retries.len(), 2, "three attempts in all");
        assert_eq!(server.requests().len(), 3);
    }
}

#[tokio::test]
async fn exhausted_retries_fail_with_the_reason() {
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(Rule::always().reply(Reply::failing(Fault::status(503))));
        let out = run(request(model(&server, api), "x")).await;
        let (err, partial) = out.failed();
        assert!(matches!(err, LlmError::Http { status: 503, .. }), "{err}");
        assert!(
            partial
                .error_message
                .as_deref()
                .unwrap_or("")
                .contains("503")
        );
        let attempts: Vec<_> = out.retries.iter().map(|r| r.0).collect();
        assert_eq!(attempts, vec![1, 2]);
        assert_eq!(server.requests().len(), 3);
    }
}

#[tokio::test]
async fn retry_after_beyond_the_cap_fails_at_once() {
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(Rule::always().reply(Reply::failing(Fault::rate_limited("3600"))));
        let out = run(request(model(&server, api), "x")).await;
        let (err, _) = out.failed();
        assert_eq!(err.kind(), ErrorKind::Retryable);
        assert_eq!(err.retry_after(), Some(Duration::from_secs(3600)));
        assert!(out.retries.is_empty());
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn non_retryable_errors_are_typed_and_not_retried() {
    let cases = [
        (Fault::status(401), ErrorKind::Auth),
        (Fault::status(403), ErrorKind::Auth),
        (Fault::ContextOverflow, ErrorKind::ContextOverflow),
        (
            Fault::Status {
                status: 429,
                retry_after: None,
                body: Some(r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}"#.into()),
            },
            ErrorKind::Quota,
        ),
        (Fault::status(404), ErrorKind::Fatal),
    ];
    for api in BOTH {
        for (fault, kind) in &cases {
            let server = FakeServer::start().await.unwrap();
            server.script(Rule::always().reply(Reply::failing(fault.clone())));
            let out = run(request(model(&server, api), "x")).await;
            let (err, _) = out.failed();
            assert_eq!(err.kind(), *kind, "{api:?} {fault:?}: {err}");
            assert!(
                !err.to_string().contains("test-key-123"),
                "key leaked: {err}"
            );
            assert!(out.retries.is_empty());
            assert_eq!(server.requests().len(), 1);
        }
    }
}

#[tokio::test]
async fn unreachable_server_is_a_connection_error_after_retries() {
    // Bind and drop a listener to get a local port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = FakeServer::start().await.unwrap();
    let mut m = model(&server, cadre_llm::Api::OpenAiCompletions);
    m.base_url = format!("http://127.0.0.1:{port}/v1");
    let policy = RetryPolicy {
        max_attempts: 2,
        ..fast_policy()
    };
    let out = run_with(policy, request(m, "x")).await;
    let (err, _) = out.failed();
    assert!(matches!(err, LlmError::Connection { .. }), "{err}");
    // The error names where cadre tried to connect (origin only, never the path).
    let text = err.to_string();
    assert!(
        text.contains(&format!("http://127.0.0.1:{port}:")),
        "{text}"
    );
    assert!(!text.contains("/v1"), "{text}");
    assert_eq!(out.retries.len(), 1);
}

#[tokio::test]
async fn bad_base_urls_fail_without_retries() {
    let server = FakeServer::start().await.unwrap();
    for url in ["not a url", "ftp://127.0.0.1/v1"] {
        let mut m = model(&server, cadre_llm::Api::OpenAiCompletions);
        m.base_url = url.into();
        let out = run(request(m, "x")).await;
        let (err, _) = out.failed();
        assert_eq!(err.kind(), ErrorKind::Fatal, "{url}: {err}");
        assert!(out.retries.is_empty(), "{url}");
    }
}

#[tokio::test]
async fn invalid_configured_headers_fail_without_echoing_values() {
    let server = FakeServer::start().await.unwrap();
    for (name, value) in [("bad header", "v"), ("x-token", "secret\nvalue")] {
        let mut m = model(&server, cadre_llm::Api::AnthropicMessages);
        m.headers.insert(name.into(), value.into());
        let out = run(request(m, "x")).await;
        let (err, _) = out.failed();
        assert_eq!(err.kind(), ErrorKind::Fatal, "{err}");
        assert!(!err.to_string().contains("secret"), "{err}");
    }
    assert!(server.requests().is_empty());
}

/// A reply that streams on past [`cadre_llm::assemble::MAX_MESSAGE_BYTES`] (24 MiB of text in
/// 64 KiB deltas) ends the request with a typed error, once: a retry would stream the same
/// flood again. Nothing of the flood is kept, and no more than the limit reached the consumer.
#[tokio::test]
async fn a_reply_that_never_stops_ends_at_the_message_limit_without_a_retry() {
    use cadre_llm::AssistantMessageEvent as E;
    let limit = cadre_llm::assemble::MAX_MESSAGE_BYTES;
    let flood = 24 * 1024 * 1024;
    for (api, events) in [
        (cadre_llm::Api::OpenAiCompletions, 1),
        (cadre_llm::Api::AnthropicMessages, 3),
        (cadre_llm::Api::OpenAiResponses, 4),
    ] {
        let server = FakeServer::start().await.unwrap();
        server.script(Rule::always().reply(Reply::text("The answer is").fault(
            Fault::TextFloodAfter {
                events,
                bytes: flood,
            },
        )));
        let out = run(request(model(&server, api), "x")).await;
        // Not `out.failed()`: a failure would print the whole flood.
        let cadre_llm::StreamEvent::Failed {
            error: err,
            partial,
        } = &out.terminal
        else {
            panic!(
                "{api:?}: the flood was taken whole ({} deltas)",
                out.deltas.len()
            );
        };
        assert!(
            matches!(err, LlmError::MessageTooLarge { limit: l, .. } if *l == limit),
            "{api:?}: {err}"
        );
        assert_eq!(err.kind(), ErrorKind::Fatal);
        let text = err.to_string();
        assert!(text.contains("exceeded 16 MiB"), "{text}");
        assert!(out.retries.is_empty(), "{api:?}: {:?}", out.retries);
        assert_eq!(server.requests().len(), 1, "{api:?}: not retried");
        assert_eq!(partial.stop_reason, StopReason::Error);
        assert_eq!(partial.error_message.as_deref(), Some(text.as_str()));
        assert!(partial.content.is_empty(), "{api:?}: the flood is not kept");
        let streamed: usize = out
            .deltas
            .iter()
            .map(|d| match d {
                E::TextDelta { delta, .. } => delta.len(),
                _ => 0,
            })
            .sum();
        assert!(
            streamed <= limit && streamed > limit - 2 * FLOOD_PIECE,
            "{api:?}: {streamed} bytes streamed"
        );
    }
}
