//! The stream loop against scripted bodies on tokio's paused clock, with the default deadlines:
//! an hour of keep-alives takes no real time, and elapsed times are exact.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::anthropic::AnthropicDecoder;
use crate::error::Waited;
use crate::model::Api;
use crate::openai::OpenAiDecoder;
use crate::openai_responses::ResponsesDecoder;
use crate::retry::RequestTimeouts;
use crate::test_support::model;

/// A response body: `steps` (each after its delay), then `tail` for ever.
struct Scripted {
    steps: VecDeque<(Duration, Bytes)>,
    tail: Tail,
}

enum Tail {
    /// The body ends.
    End,
    /// Nothing more arrives, and the connection stays open.
    Silent,
    /// These bytes again every `every`, for ever.
    Repeat { every: Duration, bytes: Bytes },
}

impl Scripted {
    fn new(tail: Tail) -> Self {
        Scripted {
            steps: VecDeque::new(),
            tail,
        }
    }

    fn then(mut self, after: Duration, bytes: impl Into<String>) -> Self {
        self.steps.push_back((after, Bytes::from(bytes.into())));
        self
    }
}

impl Body for Scripted {
    async fn chunk(&mut self) -> Result<Option<Bytes>, LlmError> {
        if let Some((after, bytes)) = self.steps.pop_front() {
            tokio::time::sleep(after).await;
            return Ok(Some(bytes));
        }
        match &self.tail {
            Tail::End => Ok(None),
            Tail::Silent => std::future::pending().await,
            Tail::Repeat { every, bytes } => {
                tokio::time::sleep(*every).await;
                Ok(Some(bytes.clone()))
            }
        }
    }
}

fn repeat(every_secs: u64, bytes: &'static str) -> Tail {
    Tail::Repeat {
        every: Duration::from_secs(every_secs),
        bytes: Bytes::from_static(bytes.as_bytes()),
    }
}

const SECOND: Duration = Duration::from_secs(1);

const PING: &str = "event: ping\ndata: {\"type\": \"ping\"}\n\n";
const MESSAGE_START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n";
const MESSAGE_END: &str = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
const ROLE_CHUNK: &str =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
const EMPTY_DELTA: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"}}]}\n\n";

fn block_start(index: usize, kind: &str) -> String {
    format!(
        "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{index},\"content_block\":{{\"type\":\"{kind}\",\"{kind}\":\"\"}}}}\n\n"
    )
}

fn anthropic_delta(index: usize, kind: &str, text: &str) -> String {
    format!(
        "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{{\"type\":\"{kind}_delta\",\"{kind}\":\"{text}\"}}}}\n\n"
    )
}

fn openai_text(text: &str) -> String {
    format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n")
}

struct Ran {
    result: Result<AssistantMessage, LlmError>,
    /// Virtual time from the request's start to the end of the stream.
    elapsed: Duration,
}

/// Run `body` through the stream loop as an attempt started at the request's start.
async fn run(api: Api, body: Scripted) -> Ran {
    let model = model(api);
    let cancel = CancellationToken::new();
    let (tx, mut rx) = mpsc::channel(16);
    let consumer = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let start = Instant::now();
    let mut watch = Watch::new(&cancel, RequestTimeouts::default());
    let result = match api {
        Api::AnthropicMessages => {
            let decoder = AnthropicDecoder::new(&model);
            read_stream("prov", &tx, &mut watch, decoder, body).await
        }
        Api::OpenAiResponses => {
            let decoder = ResponsesDecoder::new(&model);
            read_stream("prov", &tx, &mut watch, decoder, body).await
        }
        Api::OpenAiCompletions => {
            let decoder = OpenAiDecoder::new(&model);
            read_stream("prov", &tx, &mut watch, decoder, body).await
        }
    };
    let elapsed = Instant::now() - start;
    drop(tx);
    consumer.await.unwrap();
    Ran {
        result: result.map_err(|f| f.error),
        elapsed,
    }
}

/// The error of a run that must have failed at a first-content or idle deadline.
fn no_content(ran: &Ran) -> (Waited, Duration, Received) {
    match &ran.result {
        Err(LlmError::NoContent {
            waited,
            after,
            received,
            ..
        }) => (*waited, *after, *received),
        other => panic!("expected a no-content deadline, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn anthropic_pings_for_ever_end_at_the_first_content_deadline() {
    let body = Scripted::new(repeat(5, PING)).then(SECOND, MESSAGE_START);
    let ran = run(Api::AnthropicMessages, body).await;
    let (waited, after, received) = no_content(&ran);
    assert_eq!(
        (waited, after, received),
        (
            Waited::FirstContent,
            Duration::from_secs(180),
            Received::KeepAlives
        )
    );
    assert_eq!(ran.elapsed, Duration::from_secs(180));
    let text = ran.result.unwrap_err().to_string();
    assert!(text.contains("(only keep-alives)"), "{text}");
    assert!(text.contains("180 s"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn anthropic_pings_after_content_end_at_the_idle_deadline() {
    let body = Scripted::new(repeat(5, PING))
        .then(SECOND, MESSAGE_START)
        .then(SECOND, block_start(0, "text"))
        .then(SECOND, anthropic_delta(0, "text", "hel"));
    let ran = run(Api::AnthropicMessages, body).await;
    let (waited, after, received) = no_content(&ran);
    assert_eq!(
        (waited, after, received),
        (Waited::Idle, Duration::from_secs(120), Received::KeepAlives)
    );
    // Counted from the last content, which came 3 s in.
    assert_eq!(ran.elapsed, Duration::from_secs(3 + 120));
    assert!(ran.result.unwrap_err().is_retryable());
}

#[tokio::test(start_paused = true)]
async fn keep_alive_comments_for_ever_end_at_a_deadline() {
    // Before any content.
    let body = Scripted::new(repeat(5, ": ping\n\n")).then(SECOND, ROLE_CHUNK);
    let ran = run(Api::OpenAiCompletions, body).await;
    assert_eq!(
        no_content(&ran),
        (
            Waited::FirstContent,
            Duration::from_secs(180),
            Received::KeepAlives
        )
    );
    assert_eq!(ran.elapsed, Duration::from_secs(180));
    // After content.
    let body = Scripted::new(repeat(5, ": OPENROUTER PROCESSING\n\n"))
        .then(SECOND, ROLE_CHUNK)
        .then(SECOND, openai_text("hi"));
    let ran = run(Api::OpenAiCompletions, body).await;
    assert_eq!(
        no_content(&ran),
        (Waited::Idle, Duration::from_secs(120), Received::KeepAlives)
    );
    assert_eq!(ran.elapsed, Duration::from_secs(2 + 120));
}

#[tokio::test(start_paused = true)]
async fn events_without_content_and_empty_data_lines_are_no_progress() {
    for tail in [
        EMPTY_DELTA,
        "data:\n\n",
        "\n\n",
        "data: {\"choices\":[]}\n\n",
    ] {
        let body = Scripted::new(repeat(1, tail)).then(SECOND, ROLE_CHUNK);
        let ran = run(Api::OpenAiCompletions, body).await;
        let (waited, _, _) = no_content(&ran);
        assert_eq!(waited, Waited::FirstContent, "{tail:?}");
        assert_eq!(ran.elapsed, Duration::from_secs(180), "{tail:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_byte_trickle_ends_at_a_deadline() {
    // One byte every 3 s of an event that never completes: before content ...
    let body = Scripted::new(repeat(3, "x")).then(SECOND, "event: content_block_delta\ndata: {");
    let ran = run(Api::AnthropicMessages, body).await;
    assert_eq!(
        no_content(&ran),
        (
            Waited::FirstContent,
            Duration::from_secs(180),
            Received::PartialEvent
        )
    );
    assert_eq!(ran.elapsed, Duration::from_secs(180));
    let text = ran.result.unwrap_err().to_string();
    assert!(text.contains("unfinished event"), "{text}");
    // ... and after it.
    let body = Scripted::new(repeat(3, " "))
        .then(SECOND, MESSAGE_START)
        .then(SECOND, block_start(0, "text"))
        .then(SECOND, anthropic_delta(0, "text", "hel"))
        .then(SECOND, "event: content_block_delta\ndata: {\"type\":");
    let ran = run(Api::AnthropicMessages, body).await;
    assert_eq!(
        no_content(&ran),
        (
            Waited::Idle,
            Duration::from_secs(120),
            Received::PartialEvent
        )
    );
    assert_eq!(ran.elapsed, Duration::from_secs(3 + 120));
}

#[tokio::test(start_paused = true)]
async fn headers_then_silence_ends_at_the_first_content_deadline() {
    for api in [Api::OpenAiCompletions, Api::AnthropicMessages] {
        let ran = run(api, Scripted::new(Tail::Silent)).await;
        assert_eq!(
            no_content(&ran),
            (
                Waited::FirstContent,
                Duration::from_secs(180),
                Received::Headers
            ),
            "{api:?}"
        );
        assert_eq!(ran.elapsed, Duration::from_secs(180));
        let text = ran.result.unwrap_err().to_string();
        assert!(text.contains("only the response headers"), "{text}");
    }
}

#[tokio::test(start_paused = true)]
async fn silence_after_content_ends_at_the_idle_deadline() {
    let body = Scripted::new(Tail::Silent)
        .then(SECOND, ROLE_CHUNK)
        .then(SECOND, openai_text("hi"));
    let ran = run(Api::OpenAiCompletions, body).await;
    assert_eq!(
        no_content(&ran),
        (Waited::Idle, Duration::from_secs(120), Received::Nothing)
    );
}

#[tokio::test(start_paused = true)]
async fn a_slow_healthy_stream_with_pings_in_between_succeeds() {
    // Thinking for 25 min: a thinking delta every 100 s, pings every 20 s between them. Far
    // longer than the first-content and idle deadlines, within the whole-request one.
    let mut body = Scripted::new(Tail::End)
        .then(SECOND, MESSAGE_START)
        .then(Duration::from_secs(90), block_start(0, "thinking"));
    for i in 0..15 {
        for _ in 0..4 {
            body = body.then(Duration::from_secs(20), PING);
        }
        body = body.then(
            Duration::from_secs(20),
            anthropic_delta(0, "thinking", &format!("step {i}. ")),
        );
    }
    body = body
        .then(
            SECOND,
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        )
        .then(SECOND, block_start(1, "text"))
        .then(SECOND, anthropic_delta(1, "text", "done"))
        .then(SECOND, MESSAGE_END);
    let ran = run(Api::AnthropicMessages, body).await;
    let message = ran.result.unwrap();
    assert_eq!(message.text(), "done");
    assert!(
        ran.elapsed > Duration::from_secs(25 * 60),
        "{:?}",
        ran.elapsed
    );
}

#[tokio::test(start_paused = true)]
async fn content_for_ever_ends_at_the_whole_request_deadline() {
    let body = Scripted::new(repeat(
        2,
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"more \"}}]}\n\n",
    ))
    .then(SECOND, ROLE_CHUNK);
    let ran = run(Api::OpenAiCompletions, body).await;
    assert_eq!(ran.elapsed, Duration::from_secs(30 * 60));
    let err = ran.result.unwrap_err();
    assert!(
        matches!(err, LlmError::RequestDeadline { limit, .. } if limit == Duration::from_secs(1800)),
        "{err}"
    );
    assert_eq!(err.to_string(), "request to prov exceeded the 30 min limit");
    assert!(!err.is_retryable(), "the retries share this deadline");
}

#[tokio::test(start_paused = true)]
async fn a_body_that_ends_without_the_terminal_event_is_still_incomplete() {
    let body = Scripted::new(Tail::End)
        .then(SECOND, ROLE_CHUNK)
        .then(SECOND, openai_text("hi"));
    let ran = run(Api::OpenAiCompletions, body).await;
    assert!(
        matches!(ran.result, Err(LlmError::IncompleteStream { .. })),
        "{:?}",
        ran.result
    );
}

const RESPONSE_CREATED: &str = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n\n";

fn responses_text(text: &str) -> String {
    format!(
        "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"{text}\"}}\n\n"
    )
}

#[tokio::test(start_paused = true)]
async fn responses_lifecycle_events_are_no_content_for_the_deadlines() {
    // `response.created`/`.in_progress` and keep-alive comments carry no content: they do not
    // hold off the first-content deadline ...
    let in_progress = "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"response\":{\"id\":\"resp_1\"}}\n\n";
    let body = Scripted::new(repeat(5, in_progress)).then(SECOND, RESPONSE_CREATED);
    let ran = run(Api::OpenAiResponses, body).await;
    assert_eq!(
        no_content(&ran),
        (
            Waited::FirstContent,
            Duration::from_secs(180),
            Received::KeepAlives
        )
    );
    // ... nor, after text, the idle one.
    let body = Scripted::new(repeat(5, ": keep-alive\n\n"))
        .then(SECOND, RESPONSE_CREATED)
        .then(SECOND, responses_text("hel"));
    let ran = run(Api::OpenAiResponses, body).await;
    assert_eq!(
        no_content(&ran),
        (Waited::Idle, Duration::from_secs(120), Received::KeepAlives)
    );
    assert_eq!(ran.elapsed, Duration::from_secs(2 + 120));
}

#[tokio::test(start_paused = true)]
async fn a_responses_body_that_ends_without_response_completed_is_incomplete() {
    let body = Scripted::new(Tail::End)
        .then(SECOND, RESPONSE_CREATED)
        .then(SECOND, responses_text("hi"));
    let ran = run(Api::OpenAiResponses, body).await;
    assert!(
        matches!(&ran.result, Err(LlmError::IncompleteStream { detail, .. }) if detail.contains("response.completed")),
        "{:?}",
        ran.result
    );
}

/// What a run under a small message limit left: how it ended, and how many content bytes the
/// consumer was handed in deltas.
struct Limited {
    result: Result<AssistantMessage, Failure>,
    forwarded: usize,
    /// Body chunks the stream loop asked for.
    read: usize,
}

/// A body that counts the chunks read from it.
struct Counted {
    inner: Scripted,
    read: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Body for Counted {
    async fn chunk(&mut self) -> Result<Option<Bytes>, LlmError> {
        self.read.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.chunk().await
    }
}

async fn run_limited(api: Api, limit: usize, body: Scripted) -> Limited {
    use cadre_protocol::AssistantMessageEvent as E;
    let model = model(api);
    let cancel = CancellationToken::new();
    let (tx, mut rx) = mpsc::channel(16);
    let consumer = tokio::spawn(async move {
        let mut forwarded = 0;
        while let Some(ev) = rx.recv().await {
            if let StreamEvent::Delta(
                E::TextDelta { delta, .. }
                | E::ThinkingDelta { delta, .. }
                | E::ToolCallDelta { delta, .. },
            ) = ev
            {
                forwarded += delta.len();
            }
        }
        forwarded
    });
    let read = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let body = Counted {
        inner: body,
        read: read.clone(),
    };
    let mut watch = Watch::new(&cancel, RequestTimeouts::default());
    let result = match api {
        Api::AnthropicMessages => {
            let mut decoder = AnthropicDecoder::new(&model);
            decoder.set_limit(limit);
            read_stream("prov", &tx, &mut watch, decoder, body).await
        }
        Api::OpenAiResponses => {
            let mut decoder = ResponsesDecoder::new(&model);
            decoder.set_limit(limit);
            read_stream("prov", &tx, &mut watch, decoder, body).await
        }
        Api::OpenAiCompletions => {
            let mut decoder = OpenAiDecoder::new(&model);
            decoder.set_limit(limit);
            read_stream("prov", &tx, &mut watch, decoder, body).await
        }
    };
    drop(tx);
    Limited {
        result,
        forwarded: consumer.await.unwrap(),
        read: read.load(std::sync::atomic::Ordering::Relaxed),
    }
}

/// The run failed because the message went past `limit`, nothing of it was kept, the consumer
/// got no more than `limit` bytes of it, and reading stopped there.
fn assert_cut_at(ran: &Limited, limit: usize) {
    let failure = match &ran.result {
        Err(f) => f,
        Ok(m) => panic!("expected the limit to end the stream, got {m:?}"),
    };
    assert!(
        matches!(&failure.error, LlmError::MessageTooLarge { limit: l, provider } if *l == limit && provider == "prov"),
        "{:?}",
        failure.error
    );
    assert!(
        !failure.error.is_retryable(),
        "a retry streams the flood again"
    );
    assert!(
        failure.partial.content.is_empty(),
        "nothing of the flood is kept: {:?}",
        failure.partial.content.len()
    );
    assert!(ran.forwarded <= limit, "{} > {limit}", ran.forwarded);
    assert!(
        ran.read < 50,
        "reading stopped at the limit: {} chunks",
        ran.read
    );
}

#[tokio::test(start_paused = true)]
async fn a_message_that_streams_past_its_limit_ends_the_request_in_every_format() {
    let piece = "x".repeat(1000);
    let limit = 8 * 1024;
    let every = Duration::from_millis(10);
    let flood = |bytes: String| Tail::Repeat {
        every,
        bytes: Bytes::from(bytes),
    };

    // Content below the limit streams as usual: 8 pieces of 1000 bytes fit, the 9th does not.
    let streamed = 8 * 1000;
    let body = Scripted::new(flood(openai_text(&piece))).then(SECOND, ROLE_CHUNK);
    let ran = run_limited(Api::OpenAiCompletions, limit, body).await;
    assert_cut_at(&ran, limit);
    assert_eq!(ran.forwarded, streamed);

    let body = Scripted::new(flood(anthropic_delta(0, "text", &piece)))
        .then(SECOND, MESSAGE_START)
        .then(SECOND, block_start(0, "text"));
    let ran = run_limited(Api::AnthropicMessages, limit, body).await;
    assert_cut_at(&ran, limit);
    assert_eq!(ran.forwarded, streamed);

    let body = Scripted::new(flood(responses_text(&piece))).then(SECOND, RESPONSE_CREATED);
    let ran = run_limited(Api::OpenAiResponses, limit, body).await;
    assert_cut_at(&ran, limit);
    assert_eq!(ran.forwarded, streamed);

    // The same flood within a single chunk: the check is per event, not per chunk.
    let body = Scripted::new(Tail::End)
        .then(SECOND, ROLE_CHUNK)
        .then(SECOND, openai_text(&piece).repeat(40));
    assert_cut_at(
        &run_limited(Api::OpenAiCompletions, limit, body).await,
        limit,
    );
}

#[tokio::test(start_paused = true)]
async fn text_thinking_and_tool_arguments_count_together() {
    // Each kind alone stays far below the limit; together they pass it.
    let piece = "y".repeat(1000);
    let limit = 8 * 1024;
    let chunk = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{piece}\",\"reasoning_content\":\"{piece}\",\"tool_calls\":[{{\"index\":0,\"id\":\"c1\",\"function\":{{\"name\":\"write\",\"arguments\":\"{piece}\"}}}}]}}}}]}}\n\n"
    );
    let mut body = Scripted::new(Tail::End).then(SECOND, ROLE_CHUNK);
    for _ in 0..4 {
        body = body.then(SECOND, chunk.clone());
    }
    let ran = run_limited(Api::OpenAiCompletions, limit, body).await;
    assert_cut_at(&ran, limit);

    // Anthropic: thinking, its signature, then a tool call's arguments.
    let body = Scripted::new(Tail::End)
        .then(SECOND, MESSAGE_START)
        .then(SECOND, block_start(0, "thinking"))
        .then(SECOND, anthropic_delta(0, "thinking", &piece.repeat(3)))
        .then(SECOND, anthropic_delta(0, "signature", &piece.repeat(2)))
        .then(
            SECOND,
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"write\",\"input\":{}}}\n\n",
        )
        .then(
            SECOND,
            format!(
                "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}}}\n\n",
                piece.repeat(4)
            ),
        )
        .then(SECOND, MESSAGE_END);
    let ran = run_limited(Api::AnthropicMessages, limit, body).await;
    assert_cut_at(&ran, limit);

    // Under the limit the same kinds make a normal reply.
    let body = Scripted::new(Tail::End)
        .then(SECOND, ROLE_CHUNK)
        .then(SECOND, chunk)
        .then(
            SECOND,
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
        );
    let ran = run_limited(Api::OpenAiCompletions, limit, body).await;
    let message = ran.result.map_err(|f| f.error).unwrap();
    assert_eq!(message.text(), piece);
}
