//! Anthropic Messages (`anthropic-messages`): request body and streamed response.
//!
//! The reply is complete only when `message_stop` arrived; a stream that ends before it is
//! `IncompleteStream` (retryable). Thinking blocks are sent back with their signature (the API
//! requires them unchanged during tool use); thinking produced by another provider has no valid
//! signature and is left out. The system prompt and the last message carry `cache_control`
//! breakpoints so an agent loop pays the cache-read price for the repeated prefix.

use cadre_protocol::{
    AssistantMessage, AssistantMessageEvent, ContentBlock, Message, StopReason, ThinkingLevel,
    UserContent,
};
use serde_json::{Map, Value, json};

use crate::assemble::{BlockKey, MessageAssembler};
use crate::client::{Decoder, WireRequest};
use crate::error::LlmError;
use crate::model::Model;
use crate::provider::CompletionRequest;
use crate::sse::SseEvent;

pub const API_VERSION: &str = "2023-06-01";

/// Output tokens requested without thinking when the model allows more (Pi's default cap).
pub const DEFAULT_MAX_OUTPUT: u64 = 32_000;
/// `max_tokens` is required; used when the model entry does not say.
pub const FALLBACK_MAX_OUTPUT: u64 = 4_096;
/// The smallest thinking budget the API accepts.
pub const MIN_THINKING_BUDGET: u64 = 1_024;

/// Build the HTTP request for a Messages call.
pub fn build_request(req: &CompletionRequest) -> WireRequest {
    let model = &req.model;
    let mut headers = vec![
        ("content-type".to_string(), "application/json".to_string()),
        ("accept".to_string(), "text/event-stream".to_string()),
        ("anthropic-version".to_string(), API_VERSION.to_string()),
    ];
    if let Some(key) = model.api_key.as_deref().filter(|k| !k.is_empty()) {
        headers.push(("x-api-key".to_string(), key.to_string()));
    }
    let base = model.base_url.trim_end_matches('/');
    // Pi's base URL for Anthropic has no version path; accept one that does.
    let url = if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    };
    WireRequest {
        url,
        headers,
        body: build_body(req),
    }
}

/// `max_tokens` and the thinking budget for a request. The budget is
/// [`crate::thinking::resolve_thinking`]'s (map value or default table, kept below the model's
/// output limit, `None` when thinking is off or does not fit); `max_tokens` is then raised above
/// the budget, up to the model's limit, so the answer keeps room after the thinking.
pub fn token_limits(model: &Model, level: ThinkingLevel) -> (u64, Option<u64>) {
    let limit = if model.max_tokens > 0 {
        model.max_tokens
    } else {
        FALLBACK_MAX_OUTPUT
    };
    let base = limit.min(DEFAULT_MAX_OUTPUT);
    let budget = crate::thinking::resolve_thinking(model, level)
        .budget_tokens()
        .filter(|b| *b >= MIN_THINKING_BUDGET);
    match budget {
        Some(budget) => {
            let max_tokens = base.saturating_add(budget).min(limit);
            // The API requires budget < max_tokens; resolve_thinking already keeps room, this
            // guards a model entry it did not foresee.
            if max_tokens > budget {
                (max_tokens, Some(budget))
            } else {
                (base, None)
            }
        }
        None => (base, None),
    }
}

/// The JSON body of a streamed Messages request.
pub fn build_body(req: &CompletionRequest) -> Value {
    let model = &req.model;
    let messages = build_messages(req);
    let (mut max_tokens, mut budget) = token_limits(model, req.thinking);
    if budget.is_some() && !thinking_can_continue(&messages) {
        // The API rejects thinking when the tool-use turn in progress was produced without it
        // (another provider, or thinking switched on mid-turn); this request goes without.
        (max_tokens, budget) = token_limits(model, ThinkingLevel::Off);
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));
    if !req.system_prompt.is_empty() {
        body.insert(
            "system".into(),
            json!([{
                "type": "text",
                "text": req.system_prompt,
                "cache_control": {"type": "ephemeral"},
            }]),
        );
    }
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(budget) = budget {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    Value::Object(body)
}

/// With thinking enabled, an assistant message that is still being continued (the conversation
/// ends with the tool results it asked for) must start with a thinking block.
fn thinking_can_continue(messages: &[Value]) -> bool {
    let [.., assistant, last] = messages else {
        return true;
    };
    let only_results = last["role"] == "user"
        && last["content"]
            .as_array()
            .is_some_and(|b| b.iter().all(|b| b["type"] == "tool_result"));
    if !only_results || assistant["role"] != "assistant" {
        return true;
    }
    matches!(
        assistant["content"][0]["type"].as_str(),
        Some("thinking" | "redacted_thinking")
    )
}

/// Anthropic tool ids must match `[a-zA-Z0-9_-]+`; ids minted by other providers are mapped
/// onto that alphabet (the same way for the call and its result, so they still pair up).
pub fn sanitize_tool_id(id: &str) -> String {
    let s: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "_".to_string() } else { s }
}

/// Map the conversation to Messages `messages`; consecutive tool results become one user
/// message of `tool_result` blocks.
pub fn build_messages(req: &CompletionRequest) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(req.messages.len());
    let mut results: Vec<Value> = Vec::new();
    for msg in &req.messages {
        if !matches!(msg, Message::ToolResult(_)) && !results.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut results)}));
        }
        match msg {
            Message::User(u) => push_user(&mut out, &u.content),
            Message::Custom(c) => push_user(&mut out, &c.content),
            Message::Assistant(a) => {
                let blocks = assistant_blocks(a, &req.model);
                if !blocks.is_empty() {
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            Message::ToolResult(r) => {
                let content: Vec<Value> = r.content.iter().filter_map(user_block).collect();
                let mut block = Map::new();
                block.insert("type".into(), json!("tool_result"));
                block.insert(
                    "tool_use_id".into(),
                    json!(sanitize_tool_id(&r.tool_call_id)),
                );
                if !content.is_empty() {
                    block.insert("content".into(), Value::Array(content));
                }
                if r.is_error {
                    block.insert("is_error".into(), json!(true));
                }
                results.push(Value::Object(block));
            }
        }
    }
    if !results.is_empty() {
        out.push(json!({"role": "user", "content": results}));
    }
    mark_cache_breakpoint(&mut out);
    out
}

/// Put a cache breakpoint on the last block of the last message: the whole conversation so far
/// becomes a cacheable prefix for the next turn.
fn mark_cache_breakpoint(messages: &mut [Value]) {
    let last_block = messages
        .last_mut()
        .and_then(|m| m.get_mut("content"))
        .and_then(Value::as_array_mut)
        .and_then(|blocks| blocks.last_mut())
        .and_then(Value::as_object_mut);
    if let Some(block) = last_block
        && !matches!(
            block.get("type").and_then(Value::as_str),
            Some("thinking" | "redacted_thinking")
        )
    {
        block.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

fn push_user(out: &mut Vec<Value>, content: &UserContent) {
    let blocks: Vec<Value> = match content {
        UserContent::Text(t) if t.is_empty() => Vec::new(),
        UserContent::Text(t) => vec![json!({"type": "text", "text": t})],
        UserContent::Blocks(blocks) => blocks.iter().filter_map(user_block).collect(),
    };
    // The API rejects empty content; an empty user message carries nothing to say.
    if !blocks.is_empty() {
        out.push(json!({"role": "user", "content": blocks}));
    }
}

/// A text or image block of user or tool-result content.
fn user_block(b: &ContentBlock) -> Option<Value> {
    match b {
        ContentBlock::Text { text } if !text.is_empty() => {
            Some(json!({"type": "text", "text": text}))
        }
        ContentBlock::Image { data, mime_type } => Some(json!({
            "type": "image",
            "source": {"type": "base64", "media_type": mime_type, "data": data},
        })),
        _ => None,
    }
}

fn assistant_blocks(a: &AssistantMessage, model: &Model) -> Vec<Value> {
    // Signatures are only valid for the API (and provider) that produced them.
    let same_origin = a.api == model.api.as_str() && a.provider == model.provider;
    a.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } if !text.is_empty() => {
                Some(json!({"type": "text", "text": text}))
            }
            ContentBlock::Thinking {
                thinking,
                signature: Some(sig),
                redacted,
            } if same_origin && !sig.is_empty() => Some(if *redacted {
                json!({"type": "redacted_thinking", "data": sig})
            } else {
                json!({"type": "thinking", "thinking": thinking, "signature": sig})
            }),
            ContentBlock::ToolCall(c) => Some(json!({
                "type": "tool_use",
                "id": sanitize_tool_id(&c.id),
                "name": c.name,
                // `input` must be an object; arguments that were not (invalid JSON the model
                // wrote) are answered by the tool result, which says what was wrong.
                "input": if c.arguments.is_object() { c.arguments.clone() } else { json!({}) },
            })),
            _ => None,
        })
        .collect()
}

/// Map a `stop_reason`.
pub fn map_stop_reason(reason: &str) -> StopReason {
    match reason {
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::Length,
        // end_turn, stop_sequence, pause_turn, refusal and anything new.
        _ => StopReason::Stop,
    }
}

/// HTTP status an in-stream error type stands for, so it is classified like the HTTP error.
fn error_type_status(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => 500,
    }
}

/// Streaming decoder for Messages events.
#[derive(Debug)]
pub struct AnthropicDecoder {
    asm: MessageAssembler,
    provider: String,
    /// Indices of blocks cadre does not model (server tools, web search results): their deltas
    /// are skipped.
    ignored: Vec<u64>,
    stop_seen: bool,
}

impl AnthropicDecoder {
    pub fn new(model: &Model) -> Self {
        AnthropicDecoder {
            asm: MessageAssembler::new(model.api.as_str(), &model.provider, &model.id),
            provider: model.provider.clone(),
            ignored: Vec::new(),
            stop_seen: false,
        }
    }

    fn malformed(&self, detail: impl Into<String>) -> LlmError {
        LlmError::MalformedStream {
            provider: self.provider.clone(),
            detail: detail.into(),
        }
    }

    fn index(&self, v: &Value, event: &str) -> Result<u64, LlmError> {
        v.get("index")
            .and_then(Value::as_u64)
            .ok_or_else(|| self.malformed(format!("{event} without an index")))
    }

    fn update_usage(&mut self, u: &Value) {
        let usage = self.asm.usage_mut();
        // Counts are cumulative; a later event that omits or zeroes a count (some proxies send
        // `input_tokens: 0` in `message_delta`) must not erase the earlier one.
        let set = |field: &mut u64, key: &str| {
            if let Some(n) = u.get(key).and_then(Value::as_u64).filter(|n| *n > 0) {
                *field = n;
            }
        };
        set(&mut usage.input, "input_tokens");
        set(&mut usage.output, "output_tokens");
        set(&mut usage.cache_read, "cache_read_input_tokens");
        set(&mut usage.cache_write, "cache_creation_input_tokens");
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
    }

    fn on_block_start(
        &mut self,
        v: &Value,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> Result<(), LlmError> {
        let index = self.index(v, "content_block_start")?;
        let key = BlockKey::Indexed(index);
        let block = v.get("content_block").cloned().unwrap_or(Value::Null);
        let s = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("");
        match s("type") {
            "text" => self.asm.text(key, s("text"), out),
            "thinking" => {
                self.asm.thinking(key, s("thinking"), out);
                if !s("signature").is_empty() {
                    self.asm.thinking_signature(key, s("signature"), out);
                }
            }
            "redacted_thinking" => {
                self.asm.redacted_thinking(s("data"), out);
                self.ignored.push(index);
            }
            "tool_use" => {
                self.asm.tool_start(key, Some(s("id")), s("name"), out);
                if let Some(input) = block.get("input").and_then(Value::as_object)
                    && !input.is_empty()
                {
                    let whole = Value::Object(input.clone()).to_string();
                    self.asm.tool_args(key, &whole, out);
                }
            }
            _ => self.ignored.push(index),
        }
        Ok(())
    }

    fn on_block_delta(
        &mut self,
        v: &Value,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> Result<(), LlmError> {
        let index = self.index(v, "content_block_delta")?;
        if self.ignored.contains(&index) {
            return Ok(());
        }
        let key = BlockKey::Indexed(index);
        let delta = v.get("delta").cloned().unwrap_or(Value::Null);
        let s = |k: &str| delta.get(k).and_then(Value::as_str).unwrap_or("");
        match s("type") {
            "text_delta" => self.asm.text(key, s("text"), out),
            "thinking_delta" => self.asm.thinking(key, s("thinking"), out),
            "signature_delta" => self.asm.thinking_signature(key, s("signature"), out),
            "input_json_delta" => self.asm.tool_args(key, s("partial_json"), out),
            // citations_delta and future delta types carry nothing cadre keeps.
            _ => {}
        }
        Ok(())
    }

    fn stream_error(&self, v: &Value) -> LlmError {
        let kind = v
            .pointer("/error/type")
            .and_then(Value::as_str)
            .unwrap_or("api_error");
        let message = v
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("error event in stream");
        let status = error_type_status(kind);
        crate::http::stream_event_error(
            &self.provider,
            status,
            &format!("{kind} {message}"),
            &format!("{kind}: {message}"),
        )
    }
}

impl Decoder for AnthropicDecoder {
    fn begin(&mut self, out: &mut Vec<AssistantMessageEvent>) {
        self.asm.start(out);
    }

    fn on_event(
        &mut self,
        ev: &SseEvent,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> Result<bool, LlmError> {
        let v: Value = serde_json::from_str(&ev.data)
            .map_err(|e| self.malformed(format!("invalid JSON in {:?} event: {e}", ev.event)))?;
        if !v.is_object() {
            return Err(self.malformed("event data is not a JSON object"));
        }
        // The data's own `type` is authoritative; the SSE event name is the fallback.
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(ev.event.as_str())
            .to_string();
        match kind.as_str() {
            "message_start" => {
                if let Some(u) = v.pointer("/message/usage") {
                    self.update_usage(u);
                }
            }
            "content_block_start" => self.on_block_start(&v, out)?,
            "content_block_delta" => self.on_block_delta(&v, out)?,
            "content_block_stop" => {
                let index = self.index(&v, "content_block_stop")?;
                self.asm.end(BlockKey::Indexed(index), out);
            }
            "message_delta" => {
                if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.asm.set_stop_reason(map_stop_reason(r));
                }
                if let Some(u) = v.get("usage") {
                    self.update_usage(u);
                }
            }
            "message_stop" => {
                self.stop_seen = true;
                return Ok(true);
            }
            "error" => return Err(self.stream_error(&v)),
            // ping and event types added later.
            _ => {}
        }
        Ok(false)
    }

    fn check_complete(&self) -> Result<(), LlmError> {
        if self.stop_seen {
            return Ok(());
        }
        Err(LlmError::IncompleteStream {
            provider: self.provider.clone(),
            detail: "no message_stop".to_string(),
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
#[path = "anthropic_tests.rs"]
mod tests;
