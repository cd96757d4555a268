//! Cancellation ends a request promptly wherever it is: mid-stream, waiting for the response
//! head, or sleeping before a retry. Only hang guards here, no timing assertions.

use std::time::Duration;

use cadre_llm::{HttpProvider, LlmError, Provider, RetryPolicy, StreamEvent};
use cadre_protocol::StopReason;
use cadre_testkit::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::support::{BOTH, HANG_GUARD, collect, fast_policy, model, no_deadlines, request};

fn patient_policy() -> RetryPolicy {
    // Long waits everywhere: only cancellation can end these requests quickly.
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_secs(30),
        max_delay: Duration::from_secs(120),
        max_deadline_retries: 1,
        timeouts: no_deadlines(),
    }
}

#[tokio::test]
async fn abort_during_a_stream_returns_the_partial_reply() {
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        let long = "word ".repeat(200);
        server.script(
            Rule::always().reply(Reply::text(long).chunk_delay(Duration::from_millis(300))),
        );
        let provider = HttpProvider::new(patient_policy());
        let cancel = CancellationToken::new();
        let mut rx = provider.stream(request(model(&server, api), "x"), cancel.clone());
        // Wait for the first text delta, then abort.
        let first = tokio::time::timeout(HANG_GUARD, async {
            loop {
                match rx.recv().await {
                    Some(StreamEvent::Delta(cadre_llm::AssistantMessageEvent::TextDelta {
                        ..
                    })) => break,
                    Some(StreamEvent::Delta(_)) => {}
                    other => panic!("unexpected {other:?}"),
                }
            }
        })
        .await;
        assert!(first.is_ok(), "no delta arrived");
        cancel.cancel();
        let out = tokio::time::timeout(HANG_GUARD, collect(rx))
            .await
            .expect("abort did not end the stream");
        let (err, partial) = out.failed();
        assert!(matches!(err, LlmError::Aborted), "{api:?}: {err}");
        assert_eq!(partial.stop_reason, StopReason::Aborted);
        assert!(!partial.text().is_empty(), "partial text kept");
    }
}

#[tokio::test]
async fn abort_while_waiting_for_the_response_head() {
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(Rule::always().reply(Reply::text("late").latency(Duration::from_secs(60))));
        let provider = HttpProvider::new(patient_policy());
        let cancel = CancellationToken::new();
        let rx = provider.stream(request(model(&server, api), "x"), cancel.clone());
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
        let out = tokio::time::timeout(HANG_GUARD, collect(rx))
            .await
            .expect("abort did not end the request");
        let (err, partial) = out.failed();
        assert!(matches!(err, LlmError::Aborted), "{err}");
        assert_eq!(partial.stop_reason, StopReason::Aborted);
    }
}

#[tokio::test]
async fn abort_during_retry_backoff() {
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(Rule::always().reply(Reply::failing(Fault::status(503))));
        let provider = HttpProvider::new(patient_policy());
        let cancel = CancellationToken::new();
        let mut rx = provider.stream(request(model(&server, api), "x"), cancel.clone());
        let retry = tokio::time::timeout(HANG_GUARD, rx.recv()).await.unwrap();
        assert!(
            matches!(retry, Some(StreamEvent::Retry { .. })),
            "{retry:?}"
        );
        cancel.cancel();
        let out = tokio::time::timeout(HANG_GUARD, collect(rx))
            .await
            .expect("abort did not end the backoff");
        let (err, _) = out.failed();
        assert!(matches!(err, LlmError::Aborted), "{err}");
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn cancelled_before_start_sends_nothing() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("x")));
    let cancel = CancellationToken::new();
    cancel.cancel();
    let provider = HttpProvider::new(fast_policy());
    let rx = provider.stream(
        request(model(&server, cadre_llm::Api::AnthropicMessages), "x"),
        cancel,
    );
    let out = tokio::time::timeout(HANG_GUARD, collect(rx)).await.unwrap();
    assert!(matches!(out.failed().0, LlmError::Aborted));
}

#[tokio::test]
async fn dropping_the_receiver_ends_the_request() {
    let server = FakeServer::start().await.unwrap();
    server.script(
        Rule::always()
            .reply(Reply::text("word ".repeat(100)).chunk_delay(Duration::from_millis(100))),
    );
    let provider = HttpProvider::new(patient_policy());
    let rx = provider.stream(
        request(model(&server, cadre_llm::Api::OpenAiCompletions), "x"),
        CancellationToken::new(),
    );
    drop(rx);
    // Nothing to observe but the absence of a panic or a retry storm: one request only.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(server.requests().len() <= 1);
}
