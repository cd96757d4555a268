//! `openai-responses` through `HttpProvider` against a tiny HTTP server that serves canned
//! responses byte for byte and records the requests: the SDKs' recorded streams, the request on
//! the wire, and the faults the retry loop handles (HTTP 429/500, an in-stream error, a stream
//! cut before its terminal event, a stream that goes silent).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use cadre_llm::{Api, Compat, ErrorKind, LlmError, Model, ModelCost, RetryPolicy, Waited};
use cadre_protocol::{ContentBlock, StopReason};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::{fast_policy, request, run_with};

#[derive(Clone)]
struct Canned {
    head: String,
    body: Vec<u8>,
    /// The connection stays open after the body (which then never ends).
    hold_open: bool,
}

fn sse_ok(body: impl Into<Vec<u8>>, hold_open: bool) -> Canned {
    Canned {
        head: "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
            .into(),
        body: body.into(),
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

/// A request as the server read it.
#[derive(Debug, Clone)]
struct Seen {
    /// The request line and headers, lower-cased.
    head: String,
    body: Value,
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// Serve `responses` in order (the last repeats), one request per connection. Returns the base
/// URL and the requests seen.
async fn serve(responses: Vec<Canned>) -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log: Log = Arc::default();
    let seen = log.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let n = {
                let mut seen = seen.lock().unwrap();
                seen.push(Seen {
                    head: String::new(),
                    body: Value::Null,
                });
                seen.len() - 1
            };
            let canned = responses[n.min(responses.len() - 1)].clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                if let Some(req) = read_request(&mut sock).await {
                    seen.lock().unwrap()[n] = req;
                }
                let _ = sock.write_all(canned.head.as_bytes()).await;
                let _ = sock.write_all(&canned.body).await;
                let _ = sock.flush().await;
                if canned.hold_open {
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
    (format!("http://{addr}/v1"), log)
}

async fn read_request(sock: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let len = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if buf.len() >= end + 4 + len {
            let body = serde_json::from_slice(&buf[end + 4..end + 4 + len]).unwrap_or(Value::Null);
            return Some(Seen { head, body });
        }
    }
}

fn model(base_url: &str) -> Model {
    Model {
        provider: "openai".into(),
        id: "gpt-test".into(),
        name: "GPT test".into(),
        api: Api::OpenAiResponses,
        base_url: base_url.into(),
        api_key: Some("sk-test-key-123".into()),
        headers: BTreeMap::new(),
        reasoning: true,
        thinking_level_map: BTreeMap::new(),
        input: vec!["text".into(), "image".into()],
        context_window: 400_000,
        max_tokens: 128_000,
        cost: ModelCost {
            input: 1.25,
            output: 10.0,
            cache_read: 0.125,
            cache_write: 0.0,
        },
        compat: Compat::default(),
    }
}

fn fixture(path: &str) -> Vec<u8> {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sdk")
        .join(path);
    std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

const OK_STREAM: &str = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_ok\",\"status\":\"in_progress\"}}\n\n\
event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}\n\n\
event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"hi\"}\n\n\
event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"hi\",\"annotations\":[]}]}}\n\n\
event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_ok\",\"status\":\"completed\",\"usage\":{\"input_tokens\":1000,\"input_tokens_details\":{\"cached_tokens\":200},\"output_tokens\":100,\"output_tokens_details\":{\"reasoning_tokens\":60},\"total_tokens\":1100}}}\n\n";

/// The stream up to (not including) its terminal event.
fn cut_stream() -> String {
    let end = OK_STREAM.find("event: response.completed").unwrap();
    OK_STREAM[..end].to_string()
}

fn policy() -> RetryPolicy {
    fast_policy()
}

#[tokio::test]
async fn a_reply_streams_and_the_request_is_a_stateless_responses_call() {
    let (base, log) = serve(vec![sse_ok(OK_STREAM, false)]).await;
    let mut req = request(model(&base), "hello");
    req.thinking = cadre_protocol::ThinkingLevel::Medium;
    let out = run_with(policy(), req).await;
    let msg = out.done();
    assert_eq!(msg.text(), "hi");
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(msg.response_id.as_deref(), Some("resp_ok"));
    assert_eq!(msg.api, "openai-responses");
    assert_eq!(
        (msg.usage.input, msg.usage.cache_read, msg.usage.output),
        (800, 200, 100)
    );
    // 800 × 1.25 + 200 × 0.125 + 100 × 10 per million.
    assert!(
        (msg.usage.cost.total - 0.002025).abs() < 1e-12,
        "{:?}",
        msg.usage
    );
    assert_eq!(out.rebuilt().content, msg.content);
    assert_eq!(out.after_terminal, 0);

    let seen = log.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0].head.starts_with("post /v1/responses "),
        "{}",
        seen[0].head
    );
    assert!(
        seen[0]
            .head
            .contains("authorization: bearer sk-test-key-123"),
        "{}",
        seen[0].head
    );
    let body = &seen[0].body;
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
    assert_eq!(body["max_output_tokens"], 32_000);
    assert_eq!(body["reasoning"]["effort"], "medium");
    assert_eq!(body["include"][0], "reasoning.encrypted_content");
    assert_eq!(body["input"][0]["role"], "developer");
    assert_eq!(body["input"][1]["content"][0]["text"], "hello");
    assert_eq!(body["tools"][0]["strict"], false);
}

#[tokio::test]
async fn http_429_and_500_are_retried() {
    let rate_limited = status(
        "429 Too Many Requests",
        "retry-after-ms: 20\r\n",
        r#"{"error":{"message":"Rate limit reached for gpt-test","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
    );
    let overloaded = status(
        "500 Internal Server Error",
        "",
        r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}"#,
    );
    let (base, log) = serve(vec![rate_limited, overloaded, sse_ok(OK_STREAM, false)]).await;
    let out = run_with(policy(), request(model(&base), "x")).await;
    assert_eq!(out.done().text(), "hi");
    assert_eq!(out.retries.len(), 2, "{:?}", out.retries);
    let first = &out.retries[0].3;
    assert!(
        matches!(first, LlmError::Http { status: 429, .. }),
        "{first}"
    );
    assert!(first.to_string().contains("Rate limit reached"), "{first}");
    assert!(!first.to_string().contains("sk-test-key-123"));
    assert!(matches!(
        out.retries[1].3,
        LlmError::Http { status: 500, .. }
    ));
    assert_eq!(log.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn a_bad_request_is_not_retried_and_says_why() {
    let bad = status(
        "400 Bad Request",
        "",
        r#"{"error":{"message":"Unsupported value: 'reasoning.effort' does not support 'none' with this model.","type":"invalid_request_error","param":"reasoning.effort","code":"unsupported_value"}}"#,
    );
    let (base, log) = serve(vec![bad]).await;
    let out = run_with(policy(), request(model(&base), "x")).await;
    let (error, partial) = out.failed();
    assert_eq!(error.kind(), ErrorKind::Fatal, "{error}");
    assert!(
        error.to_string().contains("does not support 'none'"),
        "{error}"
    );
    // And what to change: the level, or the model's map.
    let text = error.to_string();
    assert!(
        text.contains("--thinking") && text.contains("thinkingLevelMap"),
        "{text}"
    );
    assert_eq!(partial.stop_reason, StopReason::Error);
    assert!(out.retries.is_empty());
    assert_eq!(log.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn in_stream_errors_and_cut_streams_are_retried() {
    let in_stream_error = format!(
        "{}event: error\ndata: {{\"type\":\"error\",\"code\":\"server_error\",\"message\":\"overloaded\",\"param\":null}}\n\n",
        cut_stream()
    );
    let failed = "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_f\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"The model failed\"}}}\n\n";
    let (base, log) = serve(vec![
        sse_ok(in_stream_error, false),
        sse_ok(failed, false),
        sse_ok(cut_stream(), false),
        sse_ok(OK_STREAM, false),
    ])
    .await;
    let mut policy = policy();
    policy.max_attempts = 4;
    let out = run_with(policy, request(model(&base), "x")).await;
    assert_eq!(out.done().text(), "hi");
    let errors: Vec<String> = out.retries.iter().map(|r| r.3.to_string()).collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].contains("overloaded"), "{errors:?}");
    assert!(errors[1].contains("The model failed"), "{errors:?}");
    assert!(
        matches!(out.retries[2].3, LlmError::IncompleteStream { .. }),
        "{errors:?}"
    );
    // Only the last attempt's deltas count.
    assert_eq!(out.rebuilt().text(), "hi");
    assert_eq!(log.lock().unwrap().len(), 4);
}

#[tokio::test]
async fn a_stream_that_goes_silent_ends_at_the_idle_deadline_and_is_retried() {
    let (base, _log) = serve(vec![sse_ok(cut_stream(), true), sse_ok(OK_STREAM, false)]).await;
    let out = run_with(policy(), request(model(&base), "x")).await;
    assert_eq!(out.done().text(), "hi");
    assert_eq!(out.retries.len(), 1);
    assert!(
        matches!(
            out.retries[0].3,
            LlmError::NoContent {
                waited: Waited::Idle,
                ..
            }
        ),
        "{}",
        out.retries[0].3
    );

    // Silent every time: the deadline retries run out and the partial reply is kept.
    let (base, log) = serve(vec![sse_ok(cut_stream(), true)]).await;
    let out = run_with(policy(), request(model(&base), "x")).await;
    let (error, partial) = out.failed();
    assert!(error.is_deadline(), "{error}");
    assert_eq!(partial.text(), "hi");
    assert_eq!(log.lock().unwrap().len(), 2, "one deadline retry");
}

/// What a decoded fixture must hold.
type Check = dyn Fn(&cadre_protocol::AssistantMessage);

#[tokio::test]
async fn the_sdks_recorded_streams_assemble_into_messages() {
    let cases: [(&str, &Check); 3] = [
        ("openai__openai-node/response_stream_text.sse", &|m| {
            assert_eq!(m.content, vec![ContentBlock::text("Hello world")]);
            assert_eq!(m.response_id.as_deref(), Some("resp_test_1"));
            assert_eq!(
                (m.usage.input, m.usage.output, m.usage.total_tokens),
                (10, 2, 12)
            );
            assert_eq!(m.stop_reason, StopReason::Stop);
        }),
        ("openai__openai-node/response_stream_reasoning.sse", &|m| {
            assert_eq!(
                m.content,
                vec![
                    ContentBlock::Thinking {
                        thinking: "Chain: Step 1. Step 2.".into(),
                        signature: None,
                        redacted: false,
                    },
                    ContentBlock::text("The answer is 42"),
                ]
            );
            assert_eq!(m.response_id.as_deref(), Some("resp_reason_1"));
            assert_eq!(m.usage.output, 6);
            assert_eq!(m.stop_reason, StopReason::Stop);
        }),
        (
            "openai__openai-python/response_completed_minimal.sse",
            &|m| {
                assert!(m.content.is_empty(), "{:?}", m.content);
                assert_eq!(m.response_id.as_deref(), Some("resp_test"));
                assert_eq!(m.stop_reason, StopReason::Stop);
            },
        ),
    ];
    for (path, check) in cases {
        let (base, _log) = serve(vec![sse_ok(fixture(path), false)]).await;
        let out = run_with(policy(), request(model(&base), "x")).await;
        assert!(out.retries.is_empty(), "{path}: {:?}", out.retries);
        let msg = out.done();
        check(msg);
        assert_eq!(out.rebuilt().content, msg.content, "{path}");
    }
}
