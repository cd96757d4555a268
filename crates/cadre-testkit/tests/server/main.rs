//! End-to-end tests of the fake server over real TCP connections.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod anthropic;
mod client;
mod faults;
mod keep_alive;
mod openai;
mod reqwest_compat;
mod responses;
mod routing;

use serde_json::{Value, json};

/// An OpenAI request with one user message.
pub fn openai_body(user: &str) -> Value {
    json!({
        "model": "gpt-e2e",
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": user}]
    })
}

/// An Anthropic request with one user message.
pub fn anthropic_body(user: &str) -> Value {
    json!({
        "model": "claude-e2e",
        "stream": true,
        "max_tokens": 1024,
        "system": "be brief",
        "messages": [{"role": "user", "content": user}]
    })
}

/// A Responses request with one user message.
pub fn responses_body(user: &str) -> Value {
    json!({
        "model": "gpt-r-e2e",
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "instructions": "be brief",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": user}]}]
    })
}

pub const OPENAI_PATH: &str = "/v1/chat/completions";
pub const RESPONSES_PATH: &str = "/v1/responses";
pub const ANTHROPIC_PATH: &str = "/v1/messages";
