//! Anthropic Messages streaming over the wire.

use cadre_testkit::prelude::*;
use serde_json::{Value, json};

use crate::client::post;
use crate::{ANTHROPIC_PATH, anthropic_body};

#[tokio::test]
async fn text_reply_exact_framing() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("Hello world").usage(12, 3)));
    let r = post(server.addr(), ANTHROPIC_PATH, &anthropic_body("hi")).await;

    assert_eq!(r.status_line, "HTTP/1.1 200 OK");
    assert_eq!(
        r.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    assert_eq!(r.header("request-id"), Some("req_fake000001"));
    assert!(r.complete);
    let frames = [
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_fake000001\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-e2e\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: ping\ndata: {\"type\":\"ping\"}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo w\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"orld\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    ];
    r.assert_chunk_per_frame(&frames);
}

#[tokio::test]
async fn thinking_tool_use_and_cache_usage() {
    let server = FakeServer::start().await.unwrap();
    server.script(
        Rule::always().reply(
            Reply::new()
                .thinking_signed("Check the file first.", "sig-xyz")
                .text("Reading.")
                .tool_call(
                    "toolu_01",
                    "read",
                    json!({"path": "src/lib.rs", "offset": 10}),
                )
                .usage(50, 30)
                .cache(400, 25),
        ),
    );
    let r = post(server.addr(), ANTHROPIC_PATH, &anthropic_body("go")).await;
    let events = r.events();
    for (name, data) in &events {
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(Some(v["type"].as_str().unwrap()), name.as_deref());
    }
    let data = r.data_json();
    assert_eq!(data[0]["message"]["model"], "claude-e2e");
    assert_eq!(
        data[0]["message"]["usage"],
        json!({"input_tokens": 50, "cache_creation_input_tokens": 25,
               "cache_read_input_tokens": 400, "output_tokens": 1})
    );

    let blocks: Vec<&Value> = data
        .iter()
        .filter(|v| v["type"] == "content_block_start")
        .collect();
    assert_eq!(
        blocks[0]["content_block"],
        json!({"type": "thinking", "thinking": ""})
    );
    assert_eq!(
        blocks[1]["content_block"],
        json!({"type": "text", "text": ""})
    );
    assert_eq!(
        blocks[2]["content_block"],
        json!({"type": "tool_use", "id": "toolu_01", "name": "read", "input": {}})
    );

    let deltas = |index: u64, kind: &str, field: &str| -> Vec<String> {
        data.iter()
            .filter(|v| v["type"] == "content_block_delta" && v["index"] == index)
            .filter(|v| v["delta"]["type"] == kind)
            .map(|v| v["delta"][field].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        deltas(0, "thinking_delta", "thinking").concat(),
        "Check the file first."
    );
    assert_eq!(deltas(0, "signature_delta", "signature"), ["sig-xyz"]);
    assert_eq!(deltas(1, "text_delta", "text").concat(), "Reading.");
    let pieces = deltas(2, "input_json_delta", "partial_json");
    assert!(pieces.len() >= 2);
    assert_eq!(
        serde_json::from_str::<Value>(&pieces.concat()).unwrap(),
        json!({"path": "src/lib.rs", "offset": 10})
    );
    let stops = data
        .iter()
        .filter(|v| v["type"] == "content_block_stop")
        .count();
    assert_eq!(stops, 3);

    let message_delta = &data[data.len() - 2];
    assert_eq!(message_delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(message_delta["usage"], json!({"output_tokens": 30}));
    assert_eq!(data.last().unwrap()["type"], "message_stop");
}

#[tokio::test]
async fn max_tokens_stop() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("trunc").stop(StopKind::Length)));
    let r = post(server.addr(), ANTHROPIC_PATH, &anthropic_body("hi")).await;
    let data = r.data_json();
    assert_eq!(data[data.len() - 2]["delta"]["stop_reason"], "max_tokens");
}

#[tokio::test]
async fn non_streaming_message() {
    let server = FakeServer::start().await.unwrap();
    server.script(
        Rule::always().reply(
            Reply::new()
                .text("whole")
                .tool_call("toolu_1", "ls", json!({})),
        ),
    );
    let mut body = anthropic_body("hi");
    body.as_object_mut().unwrap().remove("stream");
    let r = post(server.addr(), ANTHROPIC_PATH, &body).await;
    assert_eq!(r.status(), 200);
    let v = r.json();
    assert_eq!(v["type"], "message");
    assert_eq!(v["model"], "claude-e2e");
    assert_eq!(
        v["content"],
        json!([{"type": "text", "text": "whole"},
               {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}])
    );
    assert_eq!(v["stop_reason"], "tool_use");
}
