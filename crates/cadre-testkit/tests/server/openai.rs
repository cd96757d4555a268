//! OpenAI Chat Completions streaming over the wire.

use cadre_testkit::prelude::*;
use serde_json::{Value, json};

use crate::client::post;
use crate::{OPENAI_PATH, openai_body};

#[tokio::test]
async fn text_reply_exact_framing() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("Hello world")));
    let mut body = openai_body("hi");
    body.as_object_mut().unwrap().remove("stream_options");
    let r = post(server.addr(), OPENAI_PATH, &body).await;

    assert_eq!(r.status_line, "HTTP/1.1 200 OK");
    assert_eq!(
        r.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.header("x-request-id"), Some("req_fake000001"));
    assert!(r.complete);

    let head = r#"data: {"id":"chatcmpl-fake000001","object":"chat.completion.chunk","created":1767225600,"model":"gpt-e2e","system_fingerprint":"fp_cadre","choices":[{"index":0,"delta":"#;
    let frames: Vec<String> = [
        r#"{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"content":"Hel"},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"content":"lo w"},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"content":"orld"},"logprobs":null,"finish_reason":null}]}"#,
        r#"{},"logprobs":null,"finish_reason":"stop"}]}"#,
    ]
    .iter()
    .map(|tail| format!("{head}{tail}\n\n"))
    .chain(["data: [DONE]\n\n".to_string()])
    .collect();
    r.assert_chunk_per_frame(&frames);
}

#[tokio::test]
async fn tool_calls_thinking_and_usage() {
    let server = FakeServer::start().await.unwrap();
    server.script(
        Rule::always().reply(
            Reply::new()
                .thinking("Let me look.")
                .text("Reading.")
                .tool_call(
                    "call_1",
                    "read",
                    json!({"path": "src/main.rs", "limit": 20}),
                )
                .tool_call("call_2", "bash", json!({"command": "ls -la"}))
                .usage(100, 40)
                .cache(60, 0),
        ),
    );
    let r = post(server.addr(), OPENAI_PATH, &openai_body("go")).await;
    assert_eq!(r.status(), 200);
    let events = r.events();
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let chunks = r.data_json();

    let mut reasoning = String::new();
    let mut content = String::new();
    let mut calls: Vec<(String, String, String, usize)> = Vec::new();
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "gpt-e2e");
        assert!(chunk.get("usage").is_some());
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        let delta = &choice["delta"];
        reasoning.push_str(delta["reasoning_content"].as_str().unwrap_or(""));
        content.push_str(delta["content"].as_str().unwrap_or(""));
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().unwrap() as usize;
            if index == calls.len() {
                calls.push((
                    call["id"].as_str().unwrap().into(),
                    call["function"]["name"].as_str().unwrap().into(),
                    String::new(),
                    0,
                ));
            }
            calls[index]
                .2
                .push_str(call["function"]["arguments"].as_str().unwrap());
            calls[index].3 += 1;
        }
    }
    assert_eq!(reasoning, "Let me look.");
    assert_eq!(content, "Reading.");
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].0.as_str(), calls[0].1.as_str()),
        ("call_1", "read")
    );
    assert_eq!(
        serde_json::from_str::<Value>(&calls[0].2).unwrap(),
        json!({"path": "src/main.rs", "limit": 20})
    );
    assert_eq!(
        serde_json::from_str::<Value>(&calls[1].2).unwrap(),
        json!({"command": "ls -la"})
    );
    // Header chunk plus at least two argument pieces each.
    assert!(calls.iter().all(|c| c.3 >= 3));

    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": 160, "completion_tokens": 40, "total_tokens": 200,
               "prompt_tokens_details": {"cached_tokens": 60}})
    );
}

#[tokio::test]
async fn default_usage_is_derived_from_sizes() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("x".repeat(40))));
    let body = openai_body("hello");
    let r = post(server.addr(), OPENAI_PATH, &body).await;
    let usage = r.data_json().last().unwrap()["usage"].clone();
    assert_eq!(usage["prompt_tokens"], (body.to_string().len() / 4) as u64);
    assert_eq!(usage["completion_tokens"], 10);
}

#[tokio::test]
async fn length_stop_and_no_usage_without_include_usage() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("cut off").stop(StopKind::Length)));
    let mut body = openai_body("hi");
    body["stream_options"]["include_usage"] = json!(false);
    let r = post(server.addr(), OPENAI_PATH, &body).await;
    let chunks = r.data_json();
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "length"
    );
}

#[tokio::test]
async fn non_streaming_completion() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("whole").usage(3, 1)));
    let mut body = openai_body("hi");
    body["stream"] = json!(false);
    let r = post(server.addr(), OPENAI_PATH, &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "gpt-e2e");
    assert_eq!(
        v["choices"][0]["message"],
        json!({"role": "assistant", "content": "whole"})
    );
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["usage"]["total_tokens"], 4);
}
