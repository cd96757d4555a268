//! Wire details the scripted server does not produce, served byte for byte by a tiny HTTP
//! server: connections held open after the terminal event, `retry-after-ms`, HTTP-date
//! `retry-after`, JSON instead of a stream, CRLF framing with comments.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cadre_llm::{Api, LlmError, RetryPolicy, Waited};
use cadre_testkit::FakeServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::{fast_policy, model, no_deadlines, request, run_with};

/// One canned response: raw bytes after the status line's headers, and whether the connection
/// then stays open (the body never ends).
#[derive(Clone)]
struct Canned {
    head: String,
    body: Vec<u8>,
    hold_open: bool,
}

fn sse_ok(body: &str, hold_open: bool) -> Canned {
    Canned {
        head: "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
            .into(),
        body: body.as_bytes().to_vec(),
        hold_open,
    }
}

fn status(line: &str, extra_headers: &str, body: &str) -> Canned {
    Canned {
        head: format!(
            "HTTP/1.1 {line}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{extra_headers}\r\n",
            body.len()
        ),
        body: body.as_bytes().to_vec(),
        hold_open: false,
    }
}

/// Serve `responses` in order (the last repeats), one request per connection. Returns the base
/// URL and a request counter.
async fn serve(responses: Vec<Canned>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let counter = count.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let canned = responses[n.min(responses.len() - 1)].clone();
            tokio::spawn(async move {
                read_request(&mut sock).await;
                let _ = sock.write_all(canned.head.as_bytes()).await;
                let _ = sock.write_all(&canned.body).await;
                let _ = sock.flush().await;
                if canned.hold_open {
                    // Keep the body open until the client goes away.
                    let mut sink = [0u8; 256];
                    while let Ok(n) = sock.read(&mut sink).await {
                        if n == 0 {
                            break;
                        }
                    }
                }
            });
        }
    });
    (format!("http://{addr}"), count)
}

/// Read one request (head and content-length body).
async fn read_request(sock: &mut tokio::net::TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Ok(n) = sock.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return;
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn model_at(base: &str, api: Api) -> cadre_llm::Model {
    // Any FakeServer gives a complete model; only the base URL matters here.
    let server = FakeServer::start().await.unwrap();
    let mut m = model(&server, api);
    m.base_url = match api {
        Api::AnthropicMessages => base.to_string(),
        _ => format!("{base}/v1"),
    };
    m
}

/// A policy whose deadlines are far beyond the hang guard: a client that waited for the
/// connection to close after the terminal event would fail the test by hanging.
fn never_idle() -> RetryPolicy {
    RetryPolicy {
        timeouts: no_deadlines(),
        max_attempts: 1,
        ..fast_policy()
    }
}

const OPENAI_DONE: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
data: [DONE]\n\n";

const ANTHROPIC_DONE: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

#[tokio::test]
async fn terminal_event_ends_the_reply_even_if_the_connection_stays_open() {
    for (api, body) in [
        (Api::OpenAiCompletions, OPENAI_DONE),
        (Api::AnthropicMessages, ANTHROPIC_DONE),
    ] {
        let (base, _) = serve(vec![sse_ok(body, true)]).await;
        let out = run_with(never_idle(), request(model_at(&base, api).await, "x")).await;
        assert_eq!(out.done().text(), "hi", "{api:?}");
    }
}

#[tokio::test]
async fn a_stream_that_stalls_after_progress_times_out_and_the_retry_completes() {
    // Everything up to the first text delta, then silence on an open connection.
    let cut = ANTHROPIC_DONE.find("event: content_block_stop").unwrap();
    let stalled = sse_ok(&ANTHROPIC_DONE[..cut], true);
    let policy = RetryPolicy {
        max_attempts: 1,
        ..fast_policy()
    };
    let (base, _) = serve(vec![stalled.clone()]).await;
    let m = model_at(&base, Api::AnthropicMessages).await;
    let out = run_with(policy, request(m, "x")).await;
    let (err, partial) = out.failed();
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
    assert_eq!(
        partial.text(),
        "hi",
        "what arrived before the stall is kept"
    );
    // The retry reuses the request's timer after it fired; the second attempt completes.
    let (base, count) = serve(vec![stalled, sse_ok(ANTHROPIC_DONE, false)]).await;
    let m = model_at(&base, Api::AnthropicMessages).await;
    let out = run_with(
        RetryPolicy {
            max_attempts: 2,
            ..policy
        },
        request(m, "x"),
    )
    .await;
    assert_eq!(out.done().text(), "hi");
    assert_eq!(out.retries.len(), 1);
    assert!(matches!(out.retries[0].3, LlmError::NoContent { .. }));
    assert_eq!(count.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn crlf_framing_comments_and_event_names_are_understood() {
    let openai = OPENAI_DONE.replace("\n", "\r\n");
    let openai = format!(": OPENROUTER PROCESSING\r\n\r\nevent: chunk\r\n{openai}");
    let anthropic = format!(
        ": keep-alive\r\n\r\n{}",
        ANTHROPIC_DONE.replace("\n", "\r\n")
    );
    for (api, body) in [
        (Api::OpenAiCompletions, openai),
        (Api::AnthropicMessages, anthropic),
    ] {
        let (base, _) = serve(vec![sse_ok(&body, false)]).await;
        let out = run_with(never_idle(), request(model_at(&base, api).await, "x")).await;
        assert_eq!(out.done().text(), "hi", "{api:?}");
    }
}

#[tokio::test]
async fn retry_after_ms_and_http_date() {
    let body = r#"{"error":{"message":"slow down"}}"#;
    let (base, count) = serve(vec![
        status(
            "429 Too Many Requests",
            "retry-after-ms: 250\r\nretry-after: 1\r\n",
            body,
        ),
        status(
            "503 Service Unavailable",
            "retry-after: Thu, 01 Jan 1970 00:00:00 GMT\r\n",
            body,
        ),
        sse_ok(OPENAI_DONE, false),
    ])
    .await;
    let m = model_at(&base, Api::OpenAiCompletions).await;
    let out = run_with(fast_policy(), request(m, "x")).await;
    assert_eq!(out.done().text(), "hi");
    let delays: Vec<u64> = out.retries.iter().map(|r| r.2).collect();
    assert_eq!(
        delays,
        vec![250, 0],
        "ms header wins; a past date means now"
    );
    assert!(out.retries[0].3.to_string().contains("slow down"));
    assert_eq!(count.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn json_instead_of_a_stream_is_a_clear_error() {
    let body = r#"{"error":{"message":"upstream exploded"}}"#;
    let (base, _) = serve(vec![status("200 OK", "", body)]).await;
    let m = model_at(&base, Api::AnthropicMessages).await;
    let out = run_with(never_idle(), request(m, "x")).await;
    let (err, _) = out.failed();
    assert!(matches!(err, LlmError::MalformedStream { .. }), "{err}");
    assert!(err.to_string().contains("upstream exploded"), "{err}");
}

#[tokio::test]
async fn html_error_pages_are_shortened() {
    let page = format!("<html><body>{}</body></html>", "Bad gateway ".repeat(200));
    let (base, _) = serve(vec![status("502 Bad Gateway", "", &page)]).await;
    let m = model_at(&base, Api::OpenAiCompletions).await;
    let out = run_with(never_idle(), request(m, "x")).await;
    let (err, _) = out.failed();
    assert!(matches!(err, LlmError::Http { status: 502, .. }), "{err}");
    assert!(err.to_string().len() < 500, "{err}");
}
