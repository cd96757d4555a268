//! [`HttpProvider`]: the request loop shared by the wire formats.
//!
//! One attempt = send the request, check the status, stream the body through the wire format's
//! [`Decoder`] ([`crate::stream`]), forward the resulting deltas. Every await of an attempt is
//! raced against the cancellation token (so abort is immediate: dropping the reqwest future
//! closes the connection) and, for network reads, against the request's deadlines; one
//! [`Watch`] per request holds both, so a streamed chunk costs no new waiter or timer. Failed
//! attempts are retried as [`RetryPolicy`] decides, with a `Retry` event before each wait; the
//! retries share the whole-request deadline, so however often a request is retried it ends by
//! then. As in Pi's `auto_retry_start`, `Retry.attempt` is the number of the retry about to
//! happen (1 for the first) and `Retry.max_attempts` the most retries there can be
//! (`RetryPolicy::max_attempts - 1`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use cadre_protocol::{AssistantMessage, AssistantMessageEvent, StopReason};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::anthropic::{self, AnthropicDecoder};
use crate::error::{LlmError, Received};
use crate::http;
use crate::model::{Api, Model};
use crate::openai::{self, OpenAiDecoder};
use crate::openai_responses::{self, ResponsesDecoder};
use crate::provider::{CompletionRequest, Provider, StreamEvent};
use crate::retry::{RetryDecision, RetryPolicy, Spent};
use crate::sse::SseEvent;
use crate::stream::{Body, Failure, read_stream};
use crate::watch::{Guarded, Watch};

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
    /// `Some(limit)` once the message went past its size limit
    /// ([`crate::assemble::MessageAssembler::exceeded`]): reading must stop.
    fn exceeded(&self) -> Option<usize>;
    /// Keep at most `bytes` of the message instead of [`crate::assemble::MAX_MESSAGE_BYTES`].
    fn set_limit(&mut self, bytes: usize);
}

/// The provider for `openai-completions`, `openai-responses` and `anthropic-messages` models
/// over HTTP.
#[derive(Debug, Clone, Default)]
pub struct HttpProvider {
    policy: RetryPolicy,
    control: Arc<RetryControl>,
}

/// Switches a front end flips while requests run (Pi's RPC `set_auto_retry`, `abort_retry`).
#[derive(Debug, Default)]
pub struct RetryControl {
    disabled: AtomicBool,
    abort: tokio::sync::Notify,
}

impl RetryControl {
    /// With retries off, the first failure of a request is its last.
    pub fn set_enabled(&self, on: bool) {
        self.disabled.store(!on, Ordering::SeqCst);
    }

    pub fn enabled(&self) -> bool {
        !self.disabled.load(Ordering::SeqCst)
    }

    /// End the retry waits in progress now: those requests fail with the error they were
    /// about to retry.
    pub fn abort_retry(&self) {
        self.abort.notify_waiters();
    }
}

impl HttpProvider {
    pub fn new(policy: RetryPolicy) -> Self {
        HttpProvider {
            policy,
            control: Arc::new(RetryControl::default()),
        }
    }

    pub fn policy(&self) -> RetryPolicy {
        self.policy
    }

    /// The retry switches of every request this provider makes.
    pub fn retry_control(&self) -> Arc<RetryControl> {
        self.control.clone()
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
        let control = self.control.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    let last = drive(policy, &control, request, &cancel, &tx).await;
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
}

/// Run a request with retries; returns the terminal event.
async fn drive(
    policy: RetryPolicy,
    control: &RetryControl,
    req: CompletionRequest,
    cancel: &CancellationToken,
    tx: &mpsc::Sender<StreamEvent>,
) -> StreamEvent {
    let wire = match req.model.api {
        Api::OpenAiCompletions => openai::build_request(&req),
        Api::AnthropicMessages => anthropic::build_request(&req),
        Api::OpenAiResponses => openai_responses::build_request(&req),
    };
    let wire = match wire {
        Ok(wire) => wire,
        Err(e) => return failed(e, empty_message(&req.model)),
    };
    // The conversation, tools and system prompt are in the encoded body now: free them rather
    // than hold a second copy for as long as the reply streams.
    let CompletionRequest { model, .. } = req;
    let model = &model;
    let ctx = match prepare(model, wire, tx) {
        Ok(ctx) => ctx,
        Err(e) => return failed(e, empty_message(model)),
    };
    // The whole-request deadline starts here, before the first attempt, and bounds them all.
    let mut watch = Watch::new(cancel, policy.timeouts);
    let attempts = policy.attempts();
    let mut attempt = 1;
    let mut deadline_hits = 0;
    loop {
        watch.start_attempt();
        let result = match model.api {
            Api::AnthropicMessages => {
                run_attempt(&ctx, &mut watch, AnthropicDecoder::new(model)).await
            }
            Api::OpenAiResponses => {
                run_attempt(&ctx, &mut watch, ResponsesDecoder::new(model)).await
            }
            Api::OpenAiCompletions => {
                run_attempt(&ctx, &mut watch, OpenAiDecoder::new(model)).await
            }
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
        if error.is_deadline() {
            deadline_hits += 1;
        }
        let spent = Spent {
            attempts: attempt,
            deadline_hits,
            remaining: watch.remaining(),
        };
        if !control.enabled() {
            return failed(error, partial);
        }
        let delay = match policy.decide(spent, &error, fastrand::f64()) {
            RetryDecision::GiveUp => return failed(error, partial),
            RetryDecision::RetryAfter(d) => d,
        };
        let last_error = error.clone();
        // Numbered as Pi's `auto_retry_start`: the n-th retry of at most `attempts - 1`.
        let retry = StreamEvent::Retry {
            attempt,
            max_attempts: attempts - 1,
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error,
        };
        if watch.send(tx, retry).await.is_err() {
            return aborted(empty_message(model));
        }
        let paused = tokio::select! {
            paused = watch.pause(delay) => paused,
            () = control.abort.notified() => return failed(last_error, partial),
        };
        if !paused {
            return aborted(empty_message(model));
        }
        attempt += 1;
    }
}

fn prepare<'a>(
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
    })
}

impl Ctx<'_> {
    fn key(&self) -> Option<&str> {
        self.model.api_key.as_deref()
    }
}

/// One attempt: request, status check, streamed body.
async fn run_attempt<D: Decoder>(
    ctx: &Ctx<'_>,
    watch: &mut Watch<'_>,
    decoder: D,
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
        Guarded::Expired(deadline) => {
            let error = watch.error(&ctx.model.provider, deadline, Received::Nothing);
            return Err(fail(error, decoder));
        }
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
        // A refused thinking form says which setting to change.
        let error = crate::claude_thinking::explain_rejection(ctx.model, error);
        let error = crate::openai_rejection::explain_rejection(ctx.model, error, &body);
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

    let body = HttpBody {
        response,
        provider: &ctx.model.provider,
        key: ctx.key(),
    };
    read_stream(&ctx.model.provider, ctx.tx, watch, decoder, body).await
}

/// A successful response's body, its read errors typed.
struct HttpBody<'a> {
    response: reqwest::Response,
    provider: &'a str,
    key: Option<&'a str>,
}

impl Body for HttpBody<'_> {
    async fn chunk(&mut self) -> Result<Option<Bytes>, LlmError> {
        self.response
            .chunk()
            .await
            .map_err(|e| http::connection_error(self.provider, e, self.key))
    }

    fn done(self) {
        // Let the body finish in the background so the connection can go back to the pool
        // without delaying the reply.
        tokio::spawn(drain(self.response));
    }
}

/// Read up to [`http::MAX_ERROR_BODY`] bytes of an error response. `None` when cancelled; a
/// body that breaks, or is still arriving at a deadline, is used as far as it arrived (these
/// bytes are no content, so a trickled error body ends at the first-content deadline).
async fn read_error_body(
    watch: &mut Watch<'_>,
    response: &mut reqwest::Response,
) -> Option<String> {
    let mut body = Vec::new();
    while body.len() < http::MAX_ERROR_BODY {
        match watch.network(response.chunk()).await {
            Guarded::Cancelled => return None,
            Guarded::Ready(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            Guarded::Ready(Ok(None)) | Guarded::Ready(Err(_)) | Guarded::Expired(_) => break,
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
