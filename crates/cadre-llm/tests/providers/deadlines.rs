//! Providers that keep a connection busy without answering end in a typed deadline error, on
//! both wire formats, over real connections to the fake server. The deadlines are short and
//! the keep-alives much more frequent than them (so the old byte-reset timeout would never have
//! fired); the only time limit on a test is the hang guard.

use std::time::Duration;

use cadre_llm::{Api, LlmError, Received, RequestTimeouts, RetryPolicy, Waited};
use cadre_testkit::prelude::*;

use crate::support::{BOTH, Outcome, model, request, run_with};

/// Keep-alives, pings and trickled bytes come this often: far inside every deadline.
const EVERY: Duration = Duration::from_millis(20);

fn policy(first_content_ms: u64, idle_ms: u64, total_ms: u64) -> RetryPolicy {
    RetryPolicy {
        max_attempts: 1,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
        max_deadline_retries: 1,
        timeouts: RequestTimeouts {
            first_content: Duration::from_millis(first_content_ms),
            idle: Duration::from_millis(idle_ms),
            total: Duration::from_millis(total_ms),
        },
    }
}

/// One attempt, deadlines of 400 ms, 10 s for the whole request.
fn short() -> RetryPolicy {
    policy(400, 400, 10_000)
}

/// Frames of the fake server's reply up to and including its first content, for both formats:
/// OpenAI's role chunk and first text delta, Anthropic's `message_start` and the text block's
/// start.
const TO_FIRST_CONTENT: usize = 2;

async fn faulted(api: Api, policy: RetryPolicy, fault: Fault) -> (Outcome, usize) {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("the reply that never comes").fault(fault)));
    let out = run_with(policy, request(model(&server, api), "x")).await;
    (out, server.requests().len())
}

/// The run failed at a first-content or idle deadline: what it waited for and what came.
fn no_content(out: &Outcome) -> (Waited, Received) {
    match out.failed().0 {
        LlmError::NoContent {
            waited, received, ..
        } => (*waited, *received),
        other => panic!("expected a no-content deadline, got {other}"),
    }
}

#[tokio::test]
async fn keep_alive_comments_for_ever_end_at_a_deadline() {
    for api in BOTH {
        // Before any content: after the first frame, which carries none.
        let fault = Fault::KeepAlivesAfter {
            events: 1,
            every: EVERY,
        };
        let (out, _) = faulted(api, short(), fault).await;
        assert_eq!(
            no_content(&out),
            (Waited::FirstContent, Received::KeepAlives),
            "{api:?}"
        );
        let text = out.failed().0.to_string();
        assert!(text.contains("(only keep-alives)"), "{text}");
        // After content: the idle deadline, and what arrived is kept.
        let fault = Fault::KeepAlivesAfter {
            events: TO_FIRST_CONTENT,
            every: EVERY,
        };
        let (out, _) = faulted(api, short(), fault).await;
        assert_eq!(
            no_content(&out),
            (Waited::Idle, Received::KeepAlives),
            "{api:?}"
        );
    }
}

#[tokio::test]
async fn ping_events_for_ever_end_at_a_deadline() {
    for api in BOTH {
        for events in [1, TO_FIRST_CONTENT] {
            let fault = Fault::PingsAfter {
                events,
                every: EVERY,
            };
            let (out, _) = faulted(api, short(), fault).await;
            let (waited, received) = no_content(&out);
            assert_eq!(received, Received::KeepAlives, "{api:?} {events}");
            let expected = if events == 1 {
                Waited::FirstContent
            } else {
                Waited::Idle
            };
            assert_eq!(waited, expected, "{api:?} {events}");
            assert!(out.failed().0.is_retryable());
        }
    }
}

#[tokio::test]
async fn a_byte_trickle_ends_at_a_deadline() {
    for api in BOTH {
        for events in [1, TO_FIRST_CONTENT] {
            let fault = Fault::TrickleAfter {
                events,
                every: EVERY,
            };
            let (out, _) = faulted(api, short(), fault).await;
            let (_, received) = no_content(&out);
            assert_eq!(received, Received::PartialEvent, "{api:?} {events}");
        }
    }
}

#[tokio::test]
async fn headers_then_silence_ends_at_the_first_content_deadline() {
    for api in BOTH {
        let (out, _) = faulted(api, short(), Fault::SilentAfter { events: 0 }).await;
        assert_eq!(
            no_content(&out),
            (Waited::FirstContent, Received::Headers),
            "{api:?}"
        );
    }
}

#[tokio::test]
async fn no_response_at_all_ends_at_the_first_content_deadline() {
    for api in BOTH {
        let (out, _) = faulted(api, short(), Fault::NoResponse).await;
        assert_eq!(
            no_content(&out),
            (Waited::FirstContent, Received::Nothing),
            "{api:?}"
        );
        let text = out.failed().0.to_string();
        assert!(text.contains("(no response)"), "{text}");
    }
}

#[tokio::test]
async fn a_deadline_hit_is_retried_only_once() {
    let generous = RetryPolicy {
        max_attempts: 10,
        ..short()
    };
    for api in BOTH {
        let (out, requests) = faulted(api, generous, Fault::NoResponse).await;
        assert_eq!(requests, 2, "{api:?}");
        assert_eq!(out.retries.len(), 1);
        assert!(out.retries[0].3.is_deadline());
        assert_eq!(no_content(&out).0, Waited::FirstContent);
    }
}

#[tokio::test]
async fn retries_share_the_whole_request_deadline() {
    // Retries allowed without limit: only the whole-request deadline can end this.
    let unlimited = RetryPolicy {
        max_attempts: u32::MAX,
        max_deadline_retries: u32::MAX,
        ..policy(200, 200, 1_000)
    };
    let (out, requests) = faulted(Api::OpenAiCompletions, unlimited, Fault::NoResponse).await;
    let err = out.failed().0;
    assert!(
        matches!(
            err,
            LlmError::RequestDeadline { .. } | LlmError::NoContent { .. }
        ),
        "{err}"
    );
    // Five first-content deadlines fit in the whole request's time at most.
    assert!((1..=5).contains(&requests), "{requests} requests");
    assert!(out.retries.len() <= 4, "{:?}", out.retries);
}

#[tokio::test]
async fn content_that_never_ends_stops_at_the_whole_request_deadline_without_a_retry() {
    // Content every 200 ms for about three times as long as the whole request may take.
    let endless = Reply::text("word ".repeat(50))
        .text("more ".repeat(50))
        .text("again ".repeat(50))
        .chunk_delay(Duration::from_millis(200));
    let retrying = RetryPolicy {
        max_attempts: 5,
        ..policy(2_000, 2_000, 1_000)
    };
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(Rule::always().reply(endless.clone()));
        let out = run_with(retrying, request(model(&server, api), "x")).await;
        let (err, partial) = out.failed();
        assert!(
            matches!(err, LlmError::RequestDeadline { .. }),
            "{api:?}: {err}"
        );
        assert_eq!(err.to_string(), "request to fake exceeded the 1 s limit");
        assert!(!partial.text().is_empty(), "what arrived is kept");
        assert!(out.retries.is_empty());
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn a_slow_stream_with_steady_content_outlives_its_idle_deadline() {
    // Content every 50 ms for well over a second: many idle deadlines long in all, each gap a
    // small fraction of one.
    let mut slow = Reply::new();
    for i in 0..6 {
        slow = slow.thinking(format!("thought {i} goes on"));
    }
    let slow = slow
        .text("finally done")
        .chunk_delay(Duration::from_millis(50));
    let patient = policy(5_000, 600, 15_000);
    for api in BOTH {
        let server = FakeServer::start().await.unwrap();
        server.script(Rule::always().reply(slow.clone()));
        let out = run_with(patient, request(model(&server, api), "x")).await;
        assert_eq!(out.done().text(), "finally done", "{api:?}");
        assert!(out.retries.is_empty(), "{api:?}: {:?}", out.retries);
    }
}
