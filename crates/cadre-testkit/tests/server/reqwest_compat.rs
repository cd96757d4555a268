//! The client stack the providers use (reqwest over hyper) reads the server as a real service.

use cadre_testkit::prelude::*;
use futures_util::StreamExt;

use crate::{ANTHROPIC_PATH, OPENAI_PATH, anthropic_body, openai_body, responses_body};

fn client() -> reqwest::Client {
    // reqwest is built without a bundled TLS provider; plain HTTP still needs one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().unwrap()
}

/// Reads the whole streamed body, returning it and whether the stream ended in an error.
async fn read_stream(url: String, body: String) -> (u16, String, bool) {
    let response = client()
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let mut stream = response.bytes_stream();
    let mut text = Vec::new();
    let mut failed = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(bytes) => text.extend_from_slice(&bytes),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    (status, String::from_utf8(text).unwrap(), failed)
}

#[tokio::test]
async fn reqwest_reads_complete_streams_from_every_format() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("over reqwest")));
    let openai_url = format!("{}/chat/completions", server.openai_base_url());
    let (status, text, failed) = read_stream(openai_url, openai_body("hi").to_string()).await;
    assert_eq!((status, failed), (200, false));
    assert!(text.ends_with("data: [DONE]\n\n"));

    let anthropic_url = format!("{}{ANTHROPIC_PATH}", server.anthropic_base_url());
    let (status, text, failed) = read_stream(anthropic_url, anthropic_body("hi").to_string()).await;
    assert_eq!((status, failed), (200, false));
    assert!(text.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));

    let responses_url = format!("{}/responses", server.openai_base_url());
    let (status, text, failed) = read_stream(responses_url, responses_body("hi").to_string()).await;
    assert_eq!((status, failed), (200, false));
    let last = text.rsplit_terminator("\n\n").next().unwrap();
    assert!(last.starts_with("event: response.completed\ndata: {\"type\":\"response.completed\""));
    assert_eq!(
        server.requests()[0].header("content-type"),
        Some("application/json")
    );
}

#[tokio::test]
async fn reqwest_sees_a_cut_connection_as_an_error() {
    let server = FakeServer::start().await.unwrap();
    server.script(
        Rule::always().reply(Reply::text("cut short").fault(Fault::CutAfter { events: 2 })),
    );
    let url = format!("http://{}{OPENAI_PATH}", server.addr());
    let (status, text, failed) = read_stream(url, openai_body("hi").to_string()).await;
    assert_eq!(status, 200);
    assert!(
        failed,
        "an unterminated chunked body must surface as an error"
    );
    assert_eq!(crate::client::parse_sse(&text).len(), 2);
}

#[tokio::test]
async fn reqwest_reads_error_statuses() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::failing(Fault::rate_limited("2"))));
    let response = client()
        .post(format!("http://{}{OPENAI_PATH}", server.addr()))
        .body(openai_body("hi").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 429);
    assert_eq!(
        response
            .headers()
            .get("retry-after")
            .unwrap()
            .to_str()
            .unwrap(),
        "2"
    );
    let body: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
}
