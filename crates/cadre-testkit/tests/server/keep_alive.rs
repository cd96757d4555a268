//! Persistent connections: several requests on one connection, closed when the client asks or
//! when a fault leaves the connection unusable.

use cadre_testkit::prelude::*;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::client::{GUARD, RawResponse, parse_response, request_bytes};
use crate::{ANTHROPIC_PATH, anthropic_body};

/// Sends one request on `stream` and reads exactly its response (the connection stays usable).
async fn exchange(stream: &mut TcpStream, body: &Value, headers: &[(&str, &str)]) -> RawResponse {
    let request = request_bytes(ANTHROPIC_PATH, &body.to_string(), headers);
    tokio::time::timeout(GUARD, async {
        stream.write_all(&request).await.unwrap();
        let mut raw = Vec::new();
        loop {
            let response = parse_response(&raw);
            if response.complete {
                return response;
            }
            let mut buf = [0u8; 4096];
            let read = stream.read(&mut buf).await.unwrap();
            assert!(read > 0, "connection closed before the response ended");
            raw.extend_from_slice(&buf[..read]);
        }
    })
    .await
    .expect("response within the hang guard")
}

/// The whole response on `stream`, once the server has closed it.
async fn read_until_close(stream: &mut TcpStream) -> RawResponse {
    let mut raw = Vec::new();
    tokio::time::timeout(GUARD, stream.read_to_end(&mut raw))
        .await
        .expect("the server closes within the hang guard")
        .unwrap();
    parse_response(&raw)
}

/// True once the server has closed `stream` (reads end).
async fn closed(stream: &mut TcpStream) -> bool {
    let mut rest = Vec::new();
    tokio::time::timeout(GUARD, stream.read_to_end(&mut rest))
        .await
        .is_ok_and(|r| r.is_ok())
}

const KEEP: &[(&str, &str)] = &[("connection", "keep-alive")];

#[tokio::test]
async fn one_connection_serves_requests_until_the_client_asks_to_close() {
    let server = FakeServer::start().await.unwrap();
    server.script(
        Rule::always()
            .reply(Reply::text("first"))
            .reply(Reply::text("second"))
            .reply(Reply::text("third")),
    );
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    let mut whole = anthropic_body("hi");
    whole["stream"] = Value::Bool(false);

    let a = exchange(&mut stream, &anthropic_body("hi"), KEEP).await;
    assert_eq!(a.status(), 200);
    assert_eq!(a.header("connection"), None);
    assert_eq!(a.streamed_text(), "first");

    let b = exchange(&mut stream, &whole, KEEP).await;
    assert_eq!(b.header("connection"), None);
    assert_eq!(b.json()["content"][0]["text"], "second");

    let c = exchange(
        &mut stream,
        &anthropic_body("hi"),
        &[("Connection", "close")],
    )
    .await;
    assert_eq!(c.header("connection"), Some("close"));
    assert_eq!(c.streamed_text(), "third");
    assert!(closed(&mut stream).await);
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn error_statuses_keep_the_connection() {
    let server = FakeServer::start().await.unwrap();
    server.script(
        Rule::always()
            .reply(Reply::failing(Fault::rate_limited("0")))
            .reply(Reply::text("after the retry")),
    );
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    let a = exchange(&mut stream, &anthropic_body("hi"), KEEP).await;
    assert_eq!(a.status(), 429);
    assert_eq!(a.header("connection"), None);
    let b = exchange(&mut stream, &anthropic_body("hi"), KEEP).await;
    assert_eq!(b.status(), 200);
    assert_eq!(b.streamed_text(), "after the retry");
}

#[tokio::test]
async fn a_cut_stream_says_close_and_closes() {
    let server = FakeServer::start().await.unwrap();
    server.script(
        Rule::always().reply(Reply::text("cut short").fault(Fault::CutAfter { events: 2 })),
    );
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    let request = request_bytes(ANTHROPIC_PATH, &anthropic_body("hi").to_string(), KEEP);
    stream.write_all(&request).await.unwrap();
    let r = read_until_close(&mut stream).await;
    assert_eq!(r.header("connection"), Some("close"));
    assert!(!r.complete);
}

#[tokio::test]
async fn a_malformed_request_gets_400_and_a_close() {
    let server = FakeServer::start().await.unwrap();
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    stream
        .write_all(b"POST /v1/messages HTTP/1.1\r\nbroken header\r\n\r\n")
        .await
        .unwrap();
    let r = read_until_close(&mut stream).await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.header("connection"), Some("close"));
}

#[tokio::test]
async fn reqwest_reuses_the_connection() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("pooled")));
    // reqwest is built without a bundled TLS provider; plain HTTP still needs one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder().build().unwrap();
    let url = format!("{}{ANTHROPIC_PATH}", server.anthropic_base_url());
    for _ in 0..3 {
        let text = client
            .post(&url)
            .header("content-type", "application/json")
            .body(anthropic_body("hi").to_string())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(text.contains("message_stop"), "{text}");
    }
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.connections(), 1);
}
