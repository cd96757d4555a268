//! OpenAI Chat Completions (`openai-completions`): request body and streamed response.
//!
//! Works with any OpenAI-compatible server; Pi's `compat` switches turn off the parts a server
//! does not understand (`developer` role, `reasoning_effort`, usage in streaming, the name of
//! the max-tokens field).
//!
//! Completion rule: a reply is complete only when a choice carried a `finish_reason` AND the
//! `data: [DONE]` sentinel arrived. A stream that closes without both is `IncompleteStream`
//! (retryable), however much text it carried: a server that stops without `[DONE]` may have been
//! cut anywhere, and an answer cut at a sentence boundary looks complete to nobody but the
//! parser. Reading stops at `[DONE]`, so a server that keeps the connection open does not stall us.

use cadre_protocol::{
    AssistantMessage, AssistantMessageEvent, ContentBlock, Message, StopReason, ThinkingLevel,
    Usage, UserContent,
};
use serde_json::{Map, Value, json};

use crate::assemble::{BlockKey, MessageAssembler};
use crate::client::{Decoder, WireRequest};
use crate::error::LlmError;
use crate::model::Model;
use crate::provider::CompletionRequest;
use crate::sse::SseEvent;

/// Output tokens requested when the model allows more (Pi's default cap): larger budgets only
/// make servers reserve context the reply will not use.
pub const DEFAULT_MAX_OUTPUT: u64 = 32_000;

/// Build the HTTP request for a Chat Completions call.
pub fn build_request(req: &CompletionRequest) -> WireRequest {
    let model = &req.model;
    let mut headers = vec![
        ("content-type".to_string(), "application/json".to_string()),
        ("accept".to_string(), "text/event-stream".to_string()),
    ];
    if let Some(key) = model.api_key.as_deref().filter(|k| !k.is_empty()) {
        headers.push(("authorization".to_string(), format!("Bearer {key}")));
    }
    WireRequest {
        url: format!("{}/chat/completions", model.base_url.trim_end_matches('/')),
        headers,
        body: build_body(req),
    }
}

/// The JSON body of a streamed Chat Completions request.
pub fn build_body(req: &CompletionRequest) -> Value {
    let model = &req.model;
    let compat = &model.compat;
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("messages".into(), Value::Array(build_messages(req)));
    body.insert("stream".into(), json!(true));
    if compat.supports_usage_in_streaming != Some(false) {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.supports_store == Some(true) {
        body.insert("store".into(), json!(false));
    }
    if model.max_tokens > 0 {
        let field = compat
            .max_tokens_field
            .as_deref()
            .filter(|f| !f.is_empty())
            .unwrap_or("max_completion_tokens");
        body.insert(
            field.to_string(),
            json!(model.max_tokens.min(DEFAULT_MAX_OUTPUT)),
        );
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(effort) = reasoning_effort(model, req.thinking) {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    Value::Object(body)
}

/// The `reasoning_effort` value for a level, or `None` to send nothing. The mapping (map
/// values, `null` entries, `compat.supportsReasoningEffort`, `off`) is
/// [`crate::thinking::resolve_thinking`]'s, so the value recorded with a session is the value
/// sent.
pub fn reasoning_effort(model: &Model, level: ThinkingLevel) -> Option<String> {
    crate::thinking::resolve_thinking(model, level).wire_value
}

/// Map the conversation to Chat Completions messages.
pub fn build_messages(req: &CompletionRequest) -> Vec<Value> {
    let mut out = Vec::with_capacity(req.messages.len() + 1);
    if !req.system_prompt.is_empty() {
        let role = if req.model.reasoning && req.model.compat.supports_developer_role != Some(false)
        {
            "developer"
        } else {
            "system"
        };
        out.push(json!({"role": role, "content": req.system_prompt}));
    }
    // Images returned by tools cannot ride in a `tool` message; they follow the tool results as
    // one user message.
    let mut pending_images: Vec<Value> = Vec::new();
    for msg in &req.messages {
        if !matches!(msg, Message::ToolResult(_)) && !pending_images.is_empty() {
            out.push(tool_images_message(std::mem::take(&mut pending_images)));
        }
        match msg {
            Message::User(u) => out.push(user_message(&u.content)),
            Message::Custom(c) => out.push(user_message(&c.content)),
            Message::Assistant(a) => {
                if let Some(m) = assistant_message(a) {
                    out.push(m);
                }
            }
            Message::ToolResult(r) => {
                let mut text = String::new();
                for block in &r.content {
                    match block {
                        ContentBlock::Text { text: t } => {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(t);
                        }
                        ContentBlock::Image { data, mime_type } => {
                            pending_images.push(image_part(data, mime_type));
                        }
                        _ => {}
                    }
                }
                if text.is_empty()
                    && r.content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::Image { .. }))
                {
                    text.push_str("(see attached image)");
                }
                out.push(json!({
                    "role": "tool",
                    "tool_call_id": r.tool_call_id,
                    "content": text,
                }));
            }
        }
    }
    if !pending_images.is_empty() {
        out.push(tool_images_message(pending_images));
    }
    out
}

fn tool_images_message(images: Vec<Value>) -> Value {
    let mut parts = vec![json!({"type": "text", "text": "Attached image(s) from tool result:"})];
    parts.extend(images);
    json!({"role": "user", "content": parts})
}

fn image_part(data: &str, mime_type: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}})
}

/// A user message: a plain string when the content is text only (what every compatible server
/// accepts), content parts when it holds images.
fn user_message(content: &UserContent) -> Value {
    match content {
        UserContent::Text(t) => json!({"role": "user", "content": t}),
        UserContent::Blocks(blocks) => {
            if !blocks
                .iter()
                .any(|b| matches!(b, ContentBlock::Image { .. }))
            {
                return json!({"role": "user", "content": content.to_text()});
            }
            let parts: Vec<Value> = blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text } => Some(json!({"type": "text", "text": text})),
                    ContentBlock::Image { data, mime_type } => Some(image_part(data, mime_type)),
                    _ => None,
                })
                .collect();
            json!({"role": "user", "content": parts})
        }
    }
}

/// An assistant message: text joined, tool calls as `tool_calls`, thinking dropped (servers do
/// not take reasoning back). `None` when nothing is left to send.
fn assistant_message(a: &AssistantMessage) -> Option<Value> {
    let text = a.text();
    let calls: Vec<Value> = a
        .tool_calls()
        .map(|c| {
            let arguments = match &c.arguments {
                // Invalid JSON the model produced is sent back verbatim.
                Value::String(raw) => raw.clone(),
                other => other.to_string(),
            };
            json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": arguments},
            })
        })
        .collect();
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    m.insert(
        "content".into(),
        if text.is_empty() {
            Value::Null
        } else {
            json!(text)
        },
    );
    if !calls.is_empty() {
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    Some(Value::Object(m))
}

/// Map a `finish_reason`.
pub fn map_finish_reason(reason: &str) -> StopReason {
    match reason {
        "length" => StopReason::Length,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        // `stop`, `content_filter`, `eos` and anything new: the model stopped on its own.
        _ => StopReason::Stop,
    }
}

/// Map a Chat Completions `usage` object. Cached prompt tokens are reported separately from the
/// uncached input, as Pi does, so cost uses the cheaper cache-read price for them.
pub fn map_usage(u: &Value) -> Usage {
    let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let prompt = n("/prompt_tokens");
    let cached = n("/prompt_tokens_details/cached_tokens").min(prompt);
    let output = n("/completion_tokens");
    Usage {
        input: prompt - cached,
        output,
        cache_read: cached,
        cache_write: 0,
        total_tokens: prompt + output,
        ..Usage::default()
    }
}

/// Streaming decoder for Chat Completions chunks.
#[derive(Debug)]
pub struct OpenAiDecoder {
    asm: MessageAssembler,
    provider: String,
    finish_seen: bool,
    done_seen: bool,
}

impl OpenAiDecoder {
    pub fn new(model: &Model) -> Self {
        OpenAiDecoder {
            asm: MessageAssembler::new(model.api.as_str(), &model.provider, &model.id),
            provider: model.provider.clone(),
            finish_seen: false,
            done_seen: false,
        }
    }

    fn malformed(&self, detail: impl Into<String>) -> LlmError {
        LlmError::MalformedStream {
            provider: self.provider.clone(),
            detail: detail.into(),
        }
    }

    fn on_chunk(
        &mut self,
        chunk: &Value,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> Result<(), LlmError> {
        if let Some(err) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(stream_error(&self.provider, err));
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            self.asm.set_usage(map_usage(u));
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return Ok(());
        };
        // Only the first choice is used: cadre never asks for `n > 1`.
        let Some(choice) = choices
            .iter()
            .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        else {
            return Ok(());
        };
        if let Some(delta) = choice.get("delta").filter(|d| d.is_object()) {
            self.on_delta(delta, out);
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_seen = true;
            self.asm.set_stop_reason(map_finish_reason(reason));
        }
        Ok(())
    }

    fn on_delta(&mut self, delta: &Value, out: &mut Vec<AssistantMessageEvent>) {
        // Reasoning arrives as `reasoning_content` (DeepSeek, vLLM, llama.cpp) or `reasoning`
        // (OpenRouter, Ollama).
        let reasoning = ["reasoning_content", "reasoning"]
            .iter()
            .find_map(|k| delta.get(*k).and_then(Value::as_str))
            .filter(|s| !s.is_empty());
        if let Some(r) = reasoning {
            self.asm.end(BlockKey::Text, out);
            self.asm.thinking(BlockKey::Thinking, r, out);
        }
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            self.asm.end(BlockKey::Thinking, out);
            self.asm.text(BlockKey::Text, text, out);
        }
        let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) else {
            return;
        };
        for (pos, call) in calls.iter().enumerate() {
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(pos as u64);
            let key = BlockKey::Tool(index);
            let id = call.get("id").and_then(Value::as_str);
            let name = call.pointer("/function/name").and_then(Value::as_str);
            if id.is_some() || name.is_some() {
                self.asm.end(BlockKey::Text, out);
                self.asm.end(BlockKey::Thinking, out);
                self.asm.tool_start(key, id, name.unwrap_or(""), out);
            }
            if let Some(args) = call.pointer("/function/arguments") {
                match args {
                    Value::String(s) => self.asm.tool_args(key, s, out),
                    // A few servers send the arguments as an object in one piece.
                    Value::Object(_) => self.asm.tool_args(key, &args.to_string(), out),
                    _ => {}
                }
            }
        }
    }
}

/// An `{"error": ...}` object inside the stream, as an error typed like the HTTP status it
/// stands for (servers that fail mid-stream are overwhelmingly overloaded, so unknown errors are
/// retryable).
fn stream_error(provider: &str, err: &Value) -> LlmError {
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| err.as_str())
        .unwrap_or("error event in stream")
        .to_string();
    let code = ["code", "type"]
        .iter()
        .filter_map(|k| err.get(*k))
        .find_map(|v| {
            v.as_str()
                .map(str::to_string)
                .or_else(|| v.as_u64().map(|n| n.to_string()))
        })
        .unwrap_or_default();
    let status = code.parse::<u16>().unwrap_or(match code.as_str() {
        "rate_limit_exceeded" | "rate_limit_error" => 429,
        "insufficient_quota" => 402,
        "invalid_api_key" => 401,
        "context_length_exceeded" | "invalid_request_error" => 400,
        _ => 500,
    });
    crate::http::stream_event_error(provider, status, &format!("{code} {message}"), &message)
}

impl Decoder for OpenAiDecoder {
    fn begin(&mut self, out: &mut Vec<AssistantMessageEvent>) {
        self.asm.start(out);
    }

    fn on_event(
        &mut self,
        ev: &SseEvent,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> Result<bool, LlmError> {
        let data = ev.data.trim();
        if data == "[DONE]" {
            self.done_seen = true;
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| self.malformed(format!("invalid JSON chunk: {e}")))?;
        if !chunk.is_object() {
            return Err(self.malformed("chunk is not a JSON object"));
        }
        self.on_chunk(&chunk, out)?;
        Ok(false)
    }

    fn check_complete(&self) -> Result<(), LlmError> {
        let detail = match (self.finish_seen, self.done_seen) {
            (true, true) => return Ok(()),
            (false, false) => "no finish_reason and no [DONE]",
            (false, true) => "[DONE] without a finish_reason",
            (true, false) => "finish_reason but no [DONE]",
        };
        Err(LlmError::IncompleteStream {
            provider: self.provider.clone(),
            detail: detail.to_string(),
        })
    }

    fn finish(self, out: &mut Vec<AssistantMessageEvent>) -> AssistantMessage {
        self.asm.finish(out)
    }

    fn into_partial(self) -> AssistantMessage {
        self.asm.into_partial()
    }
}

#[cfg(test)]
#[path = "openai_tests.rs"]
mod tests;
