//! The listening server: accepts connections, records requests, picks replies, applies faults.

use std::collections::{HashMap, HashSet};
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::http::{self, HttpError};
use crate::request::{RecordedRequest, WireApi};
use crate::script::{FLOOD_PIECE, Fault, Reply, Rule};
use crate::wire::{Frame, RenderCtx, Usage};
use crate::{anthropic, efforts, openai, responses, responses_check};

/// A scripted fake model server on `127.0.0.1`, serving all three wire formats on one port.
///
/// It stops accepting and closes every open connection when dropped.
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    cancel: CancellationToken,
}

#[derive(Default)]
struct Shared {
    /// Rules in insertion order with how many times each has answered.
    rules: Mutex<Vec<(Rule, usize)>>,
    requests: Mutex<Vec<RecordedRequest>>,
    seq: AtomicU64,
    /// Connections accepted so far.
    connections: AtomicU64,
    /// Responses output items produced after a reasoning item, by id, with that reasoning
    /// item's id (the service refuses such an item back without it).
    issued: Mutex<HashMap<String, String>>,
    /// The reasoning efforts each named model takes ([`FakeServer::model_efforts`]).
    efforts: Mutex<HashMap<String, Vec<String>>>,
}

/// Locks ignoring poisoning: a panicking test thread must not hide later diagnostics.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn record(&self, request: RecordedRequest) {
        lock(&self.requests).push(request);
    }

    /// The reply of the first matching rule, advancing that rule's sequence.
    fn pick(&self, request: &RecordedRequest) -> Option<Reply> {
        let mut rules = lock(&self.rules);
        let (rule, used) = rules
            .iter_mut()
            .find(|(rule, _)| rule.matcher.matches(request))?;
        let reply = rule.reply_for(*used);
        *used += 1;
        Some(reply)
    }

    /// The 400 body for a request the service would refuse before generating, if any.
    fn refusal(&self, request: &RecordedRequest) -> Option<String> {
        let api = request.api;
        if let Some(refused) = efforts::check(api, &request.body, &lock(&self.efforts)) {
            return Some(refused);
        }
        (api == WireApi::OpenAiResponses)
            .then(|| responses_check::check(&request.body, &lock(&self.issued)))
            .flatten()
    }
}

impl FakeServer {
    /// Binds `127.0.0.1:0` and serves on the current tokio runtime.
    pub async fn start() -> io::Result<FakeServer> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let server = FakeServer::new(listener.local_addr()?);
        tokio::spawn(accept_loop(
            listener,
            server.shared.clone(),
            server.cancel.clone(),
        ));
        Ok(server)
    }

    /// Like [`FakeServer::start`] but runs on its own thread and runtime, for synchronous
    /// tests (e.g. ones that drive the `cadre` binary as a child process).
    pub fn start_blocking() -> io::Result<FakeServer> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let server = FakeServer::new(listener.local_addr()?);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let (shared, cancel) = (server.shared.clone(), server.cancel.clone());
        std::thread::Builder::new()
            .name("cadre-testkit-server".into())
            .spawn(move || {
                runtime.block_on(async move {
                    if let Ok(listener) = TcpListener::from_std(listener) {
                        accept_loop(listener, shared, cancel).await;
                    }
                });
            })?;
        Ok(server)
    }

    fn new(addr: SocketAddr) -> FakeServer {
        FakeServer {
            addr,
            shared: Arc::new(Shared::default()),
            cancel: CancellationToken::new(),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Base URL for OpenAI-style clients, which append `/chat/completions` (Chat Completions)
    /// or `/responses` (Responses).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Base URL for Anthropic-style clients, which append `/v1/messages`.
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Adds a rule after the existing ones; the first matching rule answers a request.
    pub fn script(&self, rule: Rule) {
        lock(&self.shared.rules).push((rule, 0));
    }

    /// Makes `model` refuse every reasoning effort but `efforts` with the service's HTTP 400
    /// `unsupported_value` (Responses `reasoning.effort`, Chat Completions `reasoning_effort`),
    /// before a rule is picked. Models never named here take any effort.
    ///
    /// ```no_run
    /// # fn demo(server: &cadre_testkit::FakeServer) {
    /// server.model_efforts("gpt-5.5", &["none", "low", "medium", "high", "xhigh"]);
    /// # }
    /// ```
    pub fn model_efforts(&self, model: &str, efforts: &[&str]) {
        let efforts = efforts.iter().map(|e| e.to_string()).collect();
        lock(&self.shared.efforts).insert(model.to_string(), efforts);
    }

    /// Every request received so far, in arrival order (unmatched and faulted ones included).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Forgets the recorded requests (long benchmarks keep memory flat this way).
    pub fn clear_requests(&self) {
        lock(&self.shared.requests).clear();
    }

    /// How many connections clients have opened so far (a client that keeps its connections
    /// alive opens fewer than it sends requests).
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// The most recent request, if any.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        lock(&self.shared.requests).last().cloned()
    }

    /// Every tool call in every recorded conversation is answered by a tool result with the
    /// same id (checked per request, every format). `Err` lists the offenders.
    pub fn check_tool_calls_answered(&self) -> Result<(), String> {
        let problems: Vec<String> = lock(&self.shared.requests)
            .iter()
            .enumerate()
            .filter_map(|(index, request)| {
                let answered: HashSet<String> = request
                    .tool_results()
                    .into_iter()
                    .map(|(id, _)| id)
                    .collect();
                let missing: Vec<String> = request
                    .tool_call_ids()
                    .into_iter()
                    .filter(|id| !answered.contains(id))
                    .collect();
                (!missing.is_empty()).then(|| {
                    format!(
                        "request #{index} ({:?} {}): tool calls without a result: {}",
                        request.api,
                        request.path,
                        missing.join(", ")
                    )
                })
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

impl std::fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, cancel: CancellationToken) {
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    shared.connections.fetch_add(1, Ordering::Relaxed);
                    let (shared, cancel) = (shared.clone(), cancel.clone());
                    tokio::spawn(async move {
                        tokio::select! {
                            () = cancel.cancelled() => {}
                            () = serve_connection(stream, &shared) => {}
                        }
                    });
                }
                // Transient (e.g. out of file descriptors): back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
    }
}

/// Which wire format a path belongs to; `None` for paths this server does not serve.
fn route(method: &str, path: &str) -> Option<WireApi> {
    if method != "POST" {
        return None;
    }
    if path.ends_with("/chat/completions") {
        Some(WireApi::OpenAi)
    } else if path.ends_with("/responses") {
        Some(WireApi::OpenAiResponses)
    } else if path.ends_with("/messages") {
        Some(WireApi::Anthropic)
    } else {
        None
    }
}

/// Best guess at the client's format for errors on unknown routes.
fn guess_api(request: &http::Request) -> WireApi {
    if request.header("anthropic-version").is_some() || request.header("x-api-key").is_some() {
        WireApi::Anthropic
    } else {
        WireApi::OpenAi
    }
}

/// Serves requests on one connection, one after another like a real provider's keep-alive
/// connection, until a response ends it or the client leaves.
async fn serve_connection(mut stream: TcpStream, shared: &Shared) {
    // Each SSE frame must leave immediately; batching would hide streaming bugs.
    let _ = stream.set_nodelay(true);
    let mut carry = Vec::new();
    // Write errors only mean the client went away; there is nobody to report them to.
    while let Ok(true) = serve_request(&mut stream, shared, &mut carry).await {}
}

/// Reads and answers one request; `Ok(true)` when the connection may carry another.
async fn serve_request(
    stream: &mut TcpStream,
    shared: &Shared,
    carry: &mut Vec<u8>,
) -> io::Result<bool> {
    let request = match http::read_request(stream, carry).await {
        Ok(request) => request,
        Err(HttpError::Closed | HttpError::Io(_)) => return Ok(false),
        Err(error) => {
            // The rest of the stream cannot be framed after a bad request: close.
            let body = format!("cadre-testkit: {error}");
            let headers = [("content-type", "text/plain; charset=utf-8".to_string())];
            http::write_full(stream, 400, &headers, body.as_bytes(), true).await?;
            return Ok(false);
        }
    };
    let keep_alive = request.keep_alive();
    let routed = route(&request.method, &request.path);
    let body_len = request.body.len();
    let body = serde_json::from_slice::<Value>(&request.body).unwrap_or(Value::Null);
    let recorded = RecordedRequest {
        api: routed.unwrap_or_else(|| guess_api(&request)),
        path: request.path,
        headers: request.headers,
        body,
    };
    shared.record(recorded.clone());
    let seq = shared.seq.fetch_add(1, Ordering::Relaxed) + 1;
    let api = recorded.api;

    let close = !keep_alive;
    if routed.is_none() {
        let message = format!(
            "cadre-testkit: no route for {} (serve POST …/chat/completions, …/responses or …/v1/messages)",
            recorded.path
        );
        let body = error_body(api, 404, Some(&message));
        send_error(stream, api, seq, 404, None, &body, close).await?;
    } else if recorded.body.is_null() {
        let body = error_body(
            api,
            400,
            Some("cadre-testkit: request body is not valid JSON"),
        );
        send_error(stream, api, seq, 400, None, &body, close).await?;
    } else if let Some(body) = shared.refusal(&recorded) {
        // Checked before a rule is picked, so a rejected request uses up no scripted reply.
        send_error(stream, api, seq, 400, None, &body, close).await?;
    } else if let Some(reply) = shared.pick(&recorded) {
        if api == WireApi::OpenAiResponses {
            // Remembered before sending: a client can only return items it received, and the
            // ids of a reply a fault cut short are never reused.
            lock(&shared.issued).extend(responses::reasoning_links(&reply, seq));
        }
        return respond(stream, &recorded, &reply, seq, body_len, keep_alive).await;
    } else {
        let message = format!(
            "cadre-testkit: no scripted reply matches: {}",
            recorded.summary()
        );
        let body = error_body(api, 400, Some(&message));
        send_error(stream, api, seq, 400, None, &body, close).await?;
    }
    Ok(keep_alive)
}

fn error_body(api: WireApi, status: u16, message: Option<&str>) -> String {
    match api {
        WireApi::OpenAi | WireApi::OpenAiResponses => openai::error_body(status, message),
        WireApi::Anthropic => anthropic::error_body(status, message),
    }
}

/// The request-id header each service sends.
fn request_id_header(api: WireApi, seq: u64) -> (&'static str, String) {
    let name = match api {
        WireApi::OpenAi | WireApi::OpenAiResponses => "x-request-id",
        WireApi::Anthropic => "request-id",
    };
    (name, format!("req_fake{seq:06}"))
}

async fn send_error(
    stream: &mut TcpStream,
    api: WireApi,
    seq: u64,
    status: u16,
    retry_after: Option<&str>,
    body: &str,
    close: bool,
) -> io::Result<()> {
    let mut headers = vec![
        ("content-type", "application/json".to_string()),
        request_id_header(api, seq),
    ];
    if let Some(retry_after) = retry_after {
        headers.push(("retry-after", retry_after.to_string()));
    }
    http::write_full(stream, status, &headers, body.as_bytes(), close).await
}

/// Sends the scripted reply; `Ok(true)` when the connection may carry another request (the
/// client allows it and no fault cut the response short).
async fn respond(
    stream: &mut TcpStream,
    request: &RecordedRequest,
    reply: &Reply,
    seq: u64,
    body_len: usize,
    keep_alive: bool,
) -> io::Result<bool> {
    let api = request.api;
    if !reply.latency.is_zero() {
        tokio::time::sleep(reply.latency).await;
    }
    let usage = Usage::for_reply(reply, body_len);
    match &reply.fault {
        Some(Fault::Status {
            status,
            retry_after,
            body,
        }) => {
            let body = body
                .clone()
                .unwrap_or_else(|| error_body(api, *status, None));
            let close = !keep_alive;
            send_error(
                stream,
                api,
                seq,
                *status,
                retry_after.as_deref(),
                &body,
                close,
            )
            .await?;
            return Ok(keep_alive);
        }
        Some(Fault::NoResponse) => {
            return wait_for_client_to_leave(stream).await.map(|()| false);
        }
        Some(Fault::ContextOverflow) => {
            let body = match api {
                WireApi::OpenAi => openai::context_overflow_body(usage.input),
                WireApi::Anthropic => anthropic::context_overflow_body(usage.input),
                WireApi::OpenAiResponses => responses::context_overflow_body(),
            };
            send_error(stream, api, seq, 400, None, &body, !keep_alive).await?;
            return Ok(keep_alive);
        }
        _ => {}
    }
    let ctx = RenderCtx {
        model: request.model().to_string(),
        seq,
        include_usage: request.body["stream_options"]["include_usage"].as_bool() == Some(true),
        usage,
    };
    if !request.is_stream() {
        return respond_whole(stream, request, reply, &ctx, keep_alive).await;
    }

    let frames = match api {
        WireApi::OpenAi => openai::stream_frames(reply, &ctx),
        WireApi::Anthropic => anthropic::stream_frames(reply, &ctx),
        WireApi::OpenAiResponses => responses::stream_frames(reply, &ctx, &request.body),
    };
    // A fault's event count never reaches the terminal frame, so the fault is always visible.
    let before_terminal = |events: usize| events.min(frames.len().saturating_sub(1));
    let (sent, ending) = match &reply.fault {
        None => (frames.len(), Ending::Complete),
        Some(Fault::NoTerminal) => (frames.len(), Ending::Complete),
        Some(Fault::CutAfter { events }) => (before_terminal(*events), Ending::Cut),
        Some(Fault::SilentAfter { events }) => (before_terminal(*events), Ending::Silent),
        // Responses events carry their position, so the extra frame is numbered as the next.
        Some(Fault::MalformedAfter { events }) => {
            let sent = before_terminal(*events);
            let extra = match api {
                WireApi::OpenAi => openai::malformed_frame(&ctx),
                WireApi::Anthropic => anthropic::malformed_frame(),
                WireApi::OpenAiResponses => responses::malformed_frame(&ctx, sent),
            };
            (sent, Ending::Extra(extra))
        }
        Some(Fault::ErrorEvent { events }) => {
            let sent = before_terminal(*events);
            let extra = match api {
                WireApi::OpenAi => openai::error_event_frame(),
                WireApi::Anthropic => anthropic::error_event_frame(),
                WireApi::OpenAiResponses => responses::error_event_frame(sent),
            };
            (sent, Ending::Extra(extra))
        }
        Some(Fault::ResponseFailed { events }) => {
            let sent = before_terminal(*events);
            let extra = match api {
                WireApi::OpenAi => openai::error_event_frame(),
                WireApi::Anthropic => anthropic::error_event_frame(),
                WireApi::OpenAiResponses => responses::failed_frame(&ctx, &request.body, sent),
            };
            (sent, Ending::Extra(extra))
        }
        Some(Fault::TextFloodAfter { events, bytes }) => {
            (before_terminal(*events), Ending::Flood { bytes: *bytes })
        }
        Some(Fault::KeepAlivesAfter { events, every }) => {
            let ending = Ending::repeat(*every, b"", b": ping\n\n");
            (before_terminal(*events), ending)
        }
        Some(Fault::PingsAfter { events, every }) => {
            let sent = before_terminal(*events);
            let ping = match api {
                WireApi::OpenAi => openai::empty_delta_frame(&ctx),
                WireApi::Anthropic => anthropic::ping_frame(),
                WireApi::OpenAiResponses => responses::ping_frame(&ctx, &request.body, sent),
            };
            let ending = Ending::repeat(*every, b"", ping.bytes.as_bytes());
            (sent, ending)
        }
        Some(Fault::TrickleAfter { events, every }) => {
            // The start of a real event, then padding: its blank line never comes.
            let lead: &[u8] = match api {
                WireApi::OpenAi => b"data: {\"choices\":",
                WireApi::Anthropic => b"event: content_block_delta\ndata: {\"type\":",
                WireApi::OpenAiResponses => responses::TRICKLE_LEAD,
            };
            (before_terminal(*events), Ending::repeat(*every, lead, b" "))
        }
        // Handled above.
        Some(Fault::Status { .. } | Fault::ContextOverflow | Fault::NoResponse) => {
            (0, Ending::Complete)
        }
    };
    // A body that is cut or left hanging leaves the connection unusable, so it says so.
    let close =
        !keep_alive || matches!(ending, Ending::Cut | Ending::Silent | Ending::Repeat { .. });
    let headers = [
        (
            "content-type",
            "text/event-stream; charset=utf-8".to_string(),
        ),
        ("cache-control", "no-cache".to_string()),
        ("transfer-encoding", "chunked".to_string()),
        request_id_header(api, seq),
    ];
    http::write_head(stream, 200, &headers, close).await?;

    let skip_terminal = matches!(reply.fault, Some(Fault::NoTerminal));
    let outgoing = frames
        .iter()
        .take(sent)
        .filter(|frame| !(skip_terminal && frame.terminal));
    let extra = match &ending {
        Ending::Extra(frame) => Some(frame),
        _ => None,
    };
    for (i, frame) in outgoing.chain(extra).enumerate() {
        if i > 0 && !reply.chunk_delay.is_zero() {
            tokio::time::sleep(reply.chunk_delay).await;
        }
        http::write_chunk(stream, frame.bytes.as_bytes()).await?;
    }
    match ending {
        Ending::Complete | Ending::Extra(_) => {
            http::write_last_chunk(stream).await?;
            Ok(!close)
        }
        Ending::Flood { bytes } => {
            let filler = "flood ".repeat(FLOOD_PIECE / 6 + 1);
            let mut left = bytes;
            let mut number = sent;
            while left > 0 {
                let piece = &filler[..left.min(FLOOD_PIECE)];
                let frame = match api {
                    WireApi::OpenAi => openai::text_delta_frame(&ctx, piece),
                    WireApi::Anthropic => anthropic::text_delta_frame(piece),
                    WireApi::OpenAiResponses => responses::text_delta_frame(&ctx, number, piece),
                };
                http::write_chunk(stream, frame.bytes.as_bytes()).await?;
                left -= piece.len();
                number += 1;
                if !reply.chunk_delay.is_zero() {
                    tokio::time::sleep(reply.chunk_delay).await;
                }
            }
            for frame in &frames[sent..] {
                http::write_chunk(stream, frame.bytes.as_bytes()).await?;
            }
            http::write_last_chunk(stream).await?;
            Ok(!close)
        }
        // Returning drops the socket mid-body.
        Ending::Cut => Ok(false),
        Ending::Silent => wait_for_client_to_leave(stream).await.map(|()| false),
        Ending::Repeat { every, lead, piece } => {
            // Ends when a write fails, that is once the client has left.
            for byte in lead.chunks(1) {
                tokio::time::sleep(every).await;
                http::write_chunk(stream, byte).await?;
            }
            loop {
                tokio::time::sleep(every).await;
                http::write_chunk(stream, &piece).await?;
            }
        }
    }
}

/// How a streamed body ends.
enum Ending {
    /// The chunked body is terminated properly.
    Complete,
    /// This frame is sent last, then the body is terminated properly.
    Extra(Frame),
    /// `bytes` of text deltas, then the frames not sent yet, then the body is terminated
    /// properly.
    Flood { bytes: usize },
    /// The connection is dropped without terminating the body.
    Cut,
    /// Nothing more is sent; the connection stays open until the client closes it.
    Silent,
    /// The bytes of `lead` one at a time, then `piece` again and again, one send every
    /// `every`, until the client leaves.
    Repeat {
        every: Duration,
        lead: Vec<u8>,
        piece: Vec<u8>,
    },
}

impl Ending {
    fn repeat(every: Duration, lead: &[u8], piece: &[u8]) -> Ending {
        Ending::Repeat {
            every,
            lead: lead.to_vec(),
            piece: piece.to_vec(),
        }
    }
}

/// Non-streamed requests get the whole message as JSON. Stream faults have no partial form
/// here: the ones that hold the connection (`SilentAfter`, keep-alives, pings, trickle) hang
/// without a response, the others close without one.
async fn respond_whole(
    stream: &mut TcpStream,
    request: &RecordedRequest,
    reply: &Reply,
    ctx: &RenderCtx,
    keep_alive: bool,
) -> io::Result<bool> {
    match reply.fault {
        None => {}
        Some(
            Fault::SilentAfter { .. }
            | Fault::KeepAlivesAfter { .. }
            | Fault::PingsAfter { .. }
            | Fault::TrickleAfter { .. },
        ) => {
            return wait_for_client_to_leave(stream).await.map(|()| false);
        }
        Some(_) => return Ok(false),
    }
    let body = match request.api {
        WireApi::OpenAi => openai::completion_body(reply, ctx),
        WireApi::Anthropic => anthropic::message_body(reply, ctx),
        WireApi::OpenAiResponses => responses::response_body(reply, ctx, &request.body),
    };
    let headers = [
        ("content-type", "application/json".to_string()),
        request_id_header(request.api, ctx.seq),
    ];
    http::write_full(stream, 200, &headers, body.as_bytes(), !keep_alive).await?;
    Ok(keep_alive)
}

/// Holds the connection open, discarding input, until the peer closes it.
async fn wait_for_client_to_leave(stream: &mut TcpStream) -> io::Result<()> {
    let mut sink = [0u8; 1024];
    loop {
        if stream.read(&mut sink).await? == 0 {
            return Ok(());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route("POST", "/v1/chat/completions"), Some(WireApi::OpenAi));
        assert_eq!(route("POST", "/chat/completions"), Some(WireApi::OpenAi));
        assert_eq!(route("POST", "/v1/messages"), Some(WireApi::Anthropic));
        assert_eq!(
            route("POST", "/v1/responses"),
            Some(WireApi::OpenAiResponses)
        );
        assert_eq!(route("GET", "/v1/messages"), None);
        assert_eq!(route("POST", "/v1/models"), None);
    }
}
