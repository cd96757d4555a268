//! [`HttpProvider`]: the request loop shared by both wire formats.
//!
//! One attempt = send the request, check the status, feed the body through the SSE parser into
//! the wire format's [`Decoder`], forward the resulting deltas. Every await of an attempt is raced
//! against the cancellation token (so abort is immediate: dropping the reqwest future closes the
//! connection) and, for network reads, against the idle timeout; one [`Watch`] per request holds
//! both, so a streamed chunk costs no new waiter or timer. Failed attempts are retried as
//! [`RetryPolicy`] decides, with a `Retry` event before each wait. As in Pi's
//! `auto_retry_start`, `Retry.attempt` is the number of the retry about to happen (1 for the first)
//! and `Retry.max_attempts` the most retries there can be (`RetryPolicy::max_attempts - 1`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use cadre_protocol::{AssistantMessage, AssistantMessageEvent, StopReason};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::anthropic::{self, AnthropicDecoder};
use crate::error::LlmError;
use crate::http;
use crate::model::{Api, Model};
use crate::openai::{self, OpenAiDecoder};
use crate::provider::{CompletionRequest, Provider, StreamEvent};
use crate::retry::{RetryDecision, RetryPolicy};
use crate::sse::{SseEvent, SseParser};

/// Events buffered between the provider task and its consumer.
const CHANNEL_CAPACITY: usize = 256;

/// The capacity to encode the next request body with: the last body's length and a little
/// more, so a request usually needs a single allocation (see [`encode_body`]).
static BODY_CAPACITY_HINT: AtomicUsize = AtomicUsize::new(16 * 1024);

/// A request ready to send: URL, headers (before the model's own) and the encoded JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct WireRequest {
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// Shared, so each attempt's request takes it without copying.
    pub body: Bytes,
}

/// Encode a request body as JSON.
pub fn encode_body<T: Serialize + ?Sized>(body: &T) -> Result<Bytes, LlmError> {
    // Sized like the last request of this process (the next turn of a conversation, or a
    // sibling's first turn, is about as long): growing from serde_json's default capacity took a
    // dozen reallocations and copies of a buffer of tens of KiB for every request (SPEC P1).
    let mut buf = Vec::with_capacity(BODY_CAPACITY_HINT.load(Ordering::Relaxed));
    serde_json::to_writer(&mut buf, body)
        .map_err(|e| LlmError::Fatal(format!("cannot encode the request: {e}")))?;
    BODY_CAPACITY_HINT.store(buf.len() + buf.len() / 16, Ordering::Relaxed);
    Ok(buf.into())
}

/// Turns the SSE events of one response into assistant message events.
pub trait Decoder: Send {
    /// The response head arrived with a success status.
    fn begin(&mut self, out: &mut Vec<AssistantMessageEvent>);
    /// Handle one SSE event; `Ok(true)` means the terminal event was seen and reading stops.
    fn on_event(
        &mut self,
        ev: &SseEvent,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> Result<bool, LlmError>;
    /// After the body ended (or the terminal event arrived): `IncompleteStream` unless the
    /// format's terminal event was seen.
    fn check_complete(&self) -> Result<(), LlmError>;
    /// The final message (call after `check_complete` succeeded).
    fn finish(self, out: &mut Vec<AssistantMessageEvent>) -> AssistantMessage;
    /// What arrived before a failure.
    fn into_partial(self) -> AssistantMessage;
}

/// The provider for `openai-completions` and `anthropic-messages` models over HTTP.
#[derive(Debug, Clone, Default)]
pub struct HttpProvider {
    policy: RetryPolicy,
}

impl HttpProvider {
    pub fn new(policy: RetryPolicy) -> Self {
        HttpProvider { policy }
    }

    pub fn policy(&self) -> RetryPolicy {
        self.policy
    }
}

impl Provider for HttpProvider {
    fn stream(
        &self,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> mpsc::Receiver<StreamEvent> {
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        let policy = self.policy;
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    let last = drive(policy, request, &cancel, &tx).await;
                    let _ = tx.send(last).await;
                });
            }
            Err(_) => {
                let partial = empty_message(&request.model);
                let _ = tx.try_send(failed(
                    LlmError::Fatal("provider used outside a tokio runtime".into()),
                    partial,
                ));
            }
        }
        rx
    }
}

/// A failed attempt: the error and the reply as far as it had arrived.
struct Failure {
    error: LlmError,
    partial: AssistantMessage,
}

/// Everything one attempt needs, prepared once per request.
struct Ctx<'a> {
    client: reqwest::Client,
    model: &'a Model,
    /// Parsed once: each attempt's request takes a copy instead of parsing the text again.
    url: reqwest::Url,
    headers: HeaderMap,
    /// Shared, so each attempt's request takes it without copying.
    body: Bytes,
    tx: &'a mpsc::Sender<StreamEvent>,
    idle: Duration,
}

/// Run a request with retries; returns the terminal event.
async fn drive(
    policy: RetryPolicy,
    req: CompletionRequest,
    cancel: &CancellationToken,
    tx: &mpsc::Sender<StreamEvent>,
) -> StreamEvent {
    let wire = match req.model.api {
        Api::OpenAiCompletions => openai::build_request(&req),
        Api::AnthropicMessages => anthropic::build_request(&req),
        Api::OpenAiResponses => {
            return failed(
                LlmError::Fatal(format!(
                    "{}: the openai-responses API is not supported yet",
                    req.model.full_name()
                )),
                empty_message(&req.model),
            );
        }
    };
    let wire = match wire {
        Ok(wire) => wire,
        Err(e) => return failed(e, empty_message(&req.model)),
    };
    // The conversation, tools and system prompt are in the encoded body now: free them rather
    // than hold a second copy for as long as the reply streams.
    let CompletionRequest { model, .. } = req;
    let model = &model;
    let ctx = match prepare(policy, model, wire, tx) {
        Ok(ctx) => ctx,
        Err(e) => return failed(e, empty_message(model)),
    };
    let mut watch = Watch::new(cancel, ctx.idle);
    let attempts = policy.attempts();
    let mut attempt = 1;
    loop {
        let result = match model.api {
            Api::AnthropicMessages => {
                run_attempt(&ctx, &mut watch, AnthropicDecoder::new(model)).await
            }
            _ => run_attempt(&ctx, &mut watch, OpenAiDecoder::new(model)).await,
        };
        let Failure { error, partial } = match result {
            Ok(mut message) => {
                crate::cost::apply_cost(model, &mut message.usage);
                return StreamEvent::Done(message);
            }
            Err(f) => f,
        };
        if matches!(error, LlmError::Aborted) {
            return aborted(partial);
        }
        let delay = match policy.decide(attempt, &error, fastrand::f64()) {
            RetryDecision::GiveUp => return failed(error, partial),
            RetryDecision::RetryAfter(d) => d,
        };
        // Numbered as Pi's `auto_retry_start`: the n-th retry of at most `attempts - 1`.
        let retry = StreamEvent::Retry {
            attempt,
            max_attempts: attempts - 1,
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error,
        };
        if watch.send(tx, retry).await.is_err() || !watch.pause(delay).await {
            return aborted(empty_message(model));
        }
        attempt += 1;
    }
}

fn prepare<'a>(
    policy: RetryPolicy,
    model: &'a Model,
    wire: WireRequest,
    tx: &'a mpsc::Sender<StreamEvent>,
) -> Result<Ctx<'a>, LlmError> {
    let client = http::shared_client()?;
    // A malformed base URL is a configuration error, not a connection problem to retry.
    let url = reqwest::Url::parse(&wire.url).map_err(|e| {
        LlmError::Fatal(format!(
            "{}: invalid base URL {:?}: {e}",
            model.full_name(),
            model.base_url
        ))
    })?;
    let mut headers = HeaderMap::new();
    let extra = model.headers.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    let defaults = wire.headers.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    // The model's configured headers come last so they can override the defaults.
    for (name, value) in defaults.chain(extra) {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            LlmError::Fatal(format!(
                "{}: invalid header name {name:?}",
                model.full_name()
            ))
        })?;
        // The value may be a secret: never echo it.
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            LlmError::Fatal(format!(
                "{}: invalid value for header {name}",
                model.full_name()
            ))
        })?;
        if matches!(name.as_str(), "authorization" | "x-api-key") {
            value.set_sensitive(true);
        }
        headers.insert(name, value);
    }
    Ok(Ctx {
        client,
        model,
        url,
        headers,
        body: wire.body,
        tx,
        idle: policy.idle_timeout,
    })
}

enum Guarded<T> {
    Ready(T),
    Idle,
    Cancelled,
}

/// What every wait of a request races against: its cancellation and a timer. Both are created
/// once per request and reused by every await of every attempt; a fresh `cancelled()` future and
/// `timeout` per awaited chunk registered a waiter in the token's tree and a timer-wheel entry
/// each time and removed both again (SPEC P1). Moving the deadline of a registered timer later
/// is a single atomic store.
struct Watch<'a> {
    cancel: &'a CancellationToken,
    cancelled: Pin<Box<WaitForCancellationFuture<'a>>>,
    /// The idle timeout during network reads, the backoff between attempts.
    timer: Pin<Box<Sleep>>,
    idle: Duration,
}

impl<'a> Watch<'a> {
    fn new(cancel: &'a CancellationToken, idle: Duration) -> Self {
        Watch {
            cancel,
            cancelled: Box::pin(cancel.cancelled()),
            timer: Box::pin(tokio::time::sleep(idle)),
            idle,
        }
    }

    /// Await a network step unless the request is cancelled (checked first) or it makes no
    /// progress for the idle timeout. The timeout counts from the start of this wait, so time
    /// the consumer took to accept earlier events never counts as network silence.
    async fn network<F: Future>(&mut self, fut: F) -> Guarded<F::Output> {
        self.timer.as_mut().reset(deadline_after(self.idle));
        tokio::select! {
            biased;
            _ = self.cancelled.as_mut() => Guarded::Cancelled,
            v = fut => Guarded::Ready(v),
            _ = self.timer.as_mut() => Guarded::Idle,
        }
    }

    /// Wait `delay` (a retry backoff); false when the request was cancelled first.
    async fn pause(&mut self, delay: Duration) -> bool {
        self.timer.as_mut().reset(deadline_after(delay));
        tokio::select! {
            biased;
            _ = self.cancelled.as_mut() => false,
            _ = self.timer.as_mut() => true,
        }
    }

    /// Hand one event to the consumer; a cancelled request or a closed channel is an abort.
    async fn send(
        &mut self,
        tx: &mpsc::Sender<StreamEvent>,
        ev: StreamEvent,
    ) -> Result<(), LlmError> {
        // Abort wins over an event the consumer could still take.
        if self.cancel.is_cancelled() {
            return Err(LlmError::Aborted);
        }
        let ev = match tx.try_send(ev) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Closed(_)) => return Err(LlmError::Aborted),
            Err(TrySendError::Full(ev)) => ev,
        };
        // The consumer is behind: wait for room, abortable.
        tokio::select! {
            biased;
            _ = self.cancelled.as_mut() => Err(LlmError::Aborted),
            r = tx.send(ev) => r.map_err(|_| LlmError::Aborted),
        }
    }

    /// Forward events to the consumer, in order (see [`Watch::send`]).
    async fn forward(
        &mut self,
        tx: &mpsc::Sender<StreamEvent>,
        events: &mut Vec<AssistantMessageEvent>,
    ) -> Result<(), LlmError> {
        for ev in events.drain(..) {
            self.send(tx, StreamEvent::Delta(ev)).await?;
        }
        Ok(())
    }
}

/// The instant `after` from now; a duration too long to represent waits practically forever,
/// as `tokio::time::sleep` does.
fn deadline_after(after: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(after)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30))
}

impl Ctx<'_> {
    fn idle_error(&self) -> LlmError {
        LlmError::IdleTimeout {
            provider: self.model.provider.clone(),
            after: self.idle,
        }
    }

    fn key(&self) -> Option<&str> {
        self.model.api_key.as_deref()
    }
}

/// One attempt: request, status check, streamed body.
async fn run_attempt<D: Decoder>(
    ctx: &Ctx<'_>,
    watch: &mut Watch<'_>,
    mut decoder: D,
) -> Result<AssistantMessage, Failure> {
    let fail = |error: LlmError, decoder: D| Failure {
        error,
        partial: decoder.into_partial(),
    };
    let send = ctx
        .client
        .post(ctx.url.clone())
        .headers(ctx.headers.clone())
        .body(ctx.body.clone())
        .send();
    let mut response = match watch.network(send).await {
        Guarded::Cancelled => return Err(fail(LlmError::Aborted, decoder)),
        Guarded::Idle => return Err(fail(ctx.idle_error(), decoder)),
        Guarded::Ready(Err(e)) => {
            return Err(fail(
                http::connection_error(&ctx.model.provider, e, ctx.key()),
                decoder,
            ));
        }
        Guarded::Ready(Ok(r)) => r,
    };
    let status = response.status().as_u16();
    if !(200..300).contains(&status) {
        let retry_after = http::retry_after(response.headers(), SystemTime::now());
        let body = match read_error_body(watch, &mut response).await {
            Some(b) => b,
            None => return Err(fail(LlmError::Aborted, decoder)),
        };
        let error = http::http_error(&ctx.model.provider, status, retry_after, &body, ctx.key());
        return Err(fail(error, decoder));
    }

    if is_json(&response) {
        // The server ignored `stream: true` (or a proxy answered 200 with an error object).
        let body = read_error_body(watch, &mut response).await;
        let Some(body) = body else {
            return Err(fail(LlmError::Aborted, decoder));
        };
        let detail = match http::error_message(&body) {
            Some(m) => format!(
                "expected an event stream, got JSON: {}",
                http::redact(&m, ctx.key())
            ),
            None => "expected an event stream, got an empty JSON body".to_string(),
        };
        let error = LlmError::MalformedStream {
            provider: ctx.model.provider.clone(),
            detail,
        };
        return Err(fail(error, decoder));
    }

    let mut out = Vec::new();
    decoder.begin(&mut out);
    if let Err(e) = watch.forward(ctx.tx, &mut out).await {
        return Err(fail(e, decoder));
    }
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    loop {
        let bytes = match watch.network(response.chunk()).await {
            Guarded::Cancelled => return Err(fail(LlmError::Aborted, decoder)),
            Guarded::Idle => return Err(fail(ctx.idle_error(), decoder)),
            Guarded::Ready(Err(e)) => {
                return Err(fail(
                    http::connection_error(&ctx.model.provider, e, ctx.key()),
                    decoder,
                ));
            }
            Guarded::Ready(Ok(None)) => break,
            Guarded::Ready(Ok(Some(b))) => b,
        };
        if let Err(e) = parser.push(&bytes, &mut events) {
            let error = LlmError::MalformedStream {
                provider: ctx.model.provider.clone(),
                detail: e.to_string(),
            };
            return Err(fail(error, decoder));
        }
        let mut terminal = false;
        for ev in &events {
            match decoder.on_event(ev, &mut out) {
                Ok(false) => {}
                Ok(true) => {
                    terminal = true;
                    break;
                }
                Err(e) => return Err(fail(e, decoder)),
            }
        }
        // The next chunk's events are built in these events' buffers.
        parser.recycle(&mut events);
        if let Err(e) = watch.forward(ctx.tx, &mut out).await {
            return Err(fail(e, decoder));
        }
        if terminal {
            // Let the body finish in the background so the connection can go back to the pool
            // without delaying the reply.
            tokio::spawn(drain(response));
            break;
        }
    }
    if let Err(e) = decoder.check_complete() {
        return Err(fail(e, decoder));
    }
    let message = decoder.finish(&mut out);
    match watch.forward(ctx.tx, &mut out).await {
        Ok(()) => Ok(message),
        Err(error) => Err(Failure {
            error,
            partial: message,
        }),
    }
}

/// Read up to [`http::MAX_ERROR_BODY`] bytes of an error response. `None` when cancelled; a
/// body that stalls or breaks is used as far as it arrived.
async fn read_error_body(
    watch: &mut Watch<'_>,
    response: &mut reqwest::Response,
) -> Option<String> {
    let mut body = Vec::new();
    while body.len() < http::MAX_ERROR_BODY {
        match watch.network(response.chunk()).await {
            Guarded::Cancelled => return None,
            Guarded::Ready(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            Guarded::Ready(Ok(None)) | Guarded::Ready(Err(_)) | Guarded::Idle => break,
        }
    }
    body.truncate(http::MAX_ERROR_BODY);
    Some(String::from_utf8_lossy(&body).into_owned())
}

/// Read what is left of a finished response (normally just the end of the chunked body).
async fn drain(mut response: reqwest::Response) {
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while let Ok(Some(_)) = response.chunk().await {}
    })
    .await;
}

fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        })
}

fn empty_message(model: &Model) -> AssistantMessage {
    AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id)
}

fn failed(error: LlmError, mut partial: AssistantMessage) -> StreamEvent {
    partial.stop_reason = StopReason::Error;
    partial.error_message = Some(error.to_string());
    StreamEvent::Failed { error, partial }
}

fn aborted(mut partial: AssistantMessage) -> StreamEvent {
    partial.stop_reason = StopReason::Aborted;
    partial.error_message = Some(LlmError::Aborted.to_string());
    StreamEvent::Failed {
        error: LlmError::Aborted,
        partial,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod watch_tests {
    //! The request's one cancellation future and one timer, driven on tokio's paused clock:
    //! the timer only moves when every task waits, so these are exact, not timing-dependent.

    use super::*;

    const IDLE: Duration = Duration::from_secs(10);

    /// A network step that completes after `d`.
    async fn step(d: Duration) -> u32 {
        tokio::time::sleep(d).await;
        7
    }

    fn delta(i: usize) -> StreamEvent {
        StreamEvent::Delta(AssistantMessageEvent::TextStart { content_index: i })
    }

    #[tokio::test(start_paused = true)]
    async fn steady_progress_never_times_out_however_long_the_stream() {
        let cancel = CancellationToken::new();
        let mut watch = Watch::new(&cancel, IDLE);
        // Fifty steps of just under the idle timeout: five times longer than it in total.
        for _ in 0..50 {
            let r = watch.network(step(IDLE - Duration::from_millis(1))).await;
            assert!(matches!(r, Guarded::Ready(7)));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn silence_after_progress_times_out_and_the_timer_rearms() {
        let cancel = CancellationToken::new();
        let mut watch = Watch::new(&cancel, IDLE);
        assert!(matches!(
            watch.network(step(Duration::from_secs(3))).await,
            Guarded::Ready(7)
        ));
        let start = Instant::now();
        assert!(matches!(
            watch.network(std::future::pending::<()>()).await,
            Guarded::Idle
        ));
        // Counted from the start of the silent wait, not from the request's start.
        assert_eq!(Instant::now() - start, IDLE);
        // After it fired, the same timer serves the next attempt.
        assert!(matches!(
            watch.network(step(IDLE / 2)).await,
            Guarded::Ready(7)
        ));
        let start = Instant::now();
        assert!(matches!(
            watch.network(std::future::pending::<()>()).await,
            Guarded::Idle
        ));
        assert_eq!(Instant::now() - start, IDLE);
    }

    #[tokio::test(start_paused = true)]
    async fn time_spent_handing_events_over_is_not_network_silence() {
        let cancel = CancellationToken::new();
        let mut watch = Watch::new(&cancel, IDLE);
        let (tx, mut rx) = mpsc::channel(1);
        watch.send(&tx, delta(0)).await.unwrap();
        // The consumer takes the next event only after three idle timeouts.
        let consumer = tokio::spawn(async move {
            tokio::time::sleep(IDLE * 3).await;
            let mut n = 0;
            while rx.recv().await.is_some() {
                n += 1;
            }
            n
        });
        watch.send(&tx, delta(1)).await.unwrap();
        assert!(matches!(
            watch.network(step(IDLE / 2)).await,
            Guarded::Ready(7)
        ));
        drop(tx);
        assert_eq!(consumer.await.unwrap(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn abort_wins_over_a_ready_step_and_ends_a_pending_one() {
        let cancel = CancellationToken::new();
        let mut watch = Watch::new(&cancel, IDLE);
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(IDLE / 2).await;
            trigger.cancel();
        });
        assert!(matches!(
            watch.network(std::future::pending::<()>()).await,
            Guarded::Cancelled
        ));
        assert!(matches!(
            watch.network(std::future::ready(1)).await,
            Guarded::Cancelled
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn sending_stops_on_abort_or_a_closed_channel() {
        let cancel = CancellationToken::new();
        let mut watch = Watch::new(&cancel, IDLE);
        let (tx, rx) = mpsc::channel(1);
        watch.send(&tx, delta(0)).await.unwrap();
        // Full channel, nobody reading: the abort ends the wait for room.
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(IDLE).await;
            trigger.cancel();
        });
        assert!(matches!(
            watch.send(&tx, delta(1)).await,
            Err(LlmError::Aborted)
        ));
        drop(rx);
        let fresh = CancellationToken::new();
        let mut watch = Watch::new(&fresh, IDLE);
        assert!(matches!(
            watch.send(&tx, delta(2)).await,
            Err(LlmError::Aborted)
        ));
        // Room in the channel does not let an event past an abort.
        let (tx, mut rx) = mpsc::channel(4);
        fresh.cancel();
        assert!(matches!(
            watch.send(&tx, delta(3)).await,
            Err(LlmError::Aborted)
        ));
        assert!(rx.try_recv().is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_waits_its_delay_unless_aborted() {
        let cancel = CancellationToken::new();
        let mut watch = Watch::new(&cancel, IDLE);
        let start = Instant::now();
        assert!(watch.pause(IDLE * 3).await);
        assert_eq!(Instant::now() - start, IDLE * 3);
        // The timer is back to the idle timeout for the next network step.
        assert!(matches!(
            watch.network(step(IDLE - Duration::from_millis(1))).await,
            Guarded::Ready(7)
        ));
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(IDLE).await;
            trigger.cancel();
        });
        assert!(!watch.pause(IDLE * 100).await);
    }

    #[test]
    fn an_unrepresentable_deadline_is_far_away_instead_of_a_panic() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            assert!(deadline_after(Duration::MAX) > Instant::now() + IDLE);
        });
    }
}
