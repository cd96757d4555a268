//! Anthropic Messages (`anthropic-messages`): request body and streamed response.
//!
//! The reply is complete only when `message_stop` arrived; a stream that ends before it is
//! `IncompleteStream` (retryable). Thinking blocks are sent back with their signature (the API
//! requires them unchanged during tool use); thinking produced by another provider has no valid
//! signature and is left out. The system prompt and the last message carry `cache_control`
//! breakpoints so an agent loop pays the cache-read price for the repeated prefix.

use std::borrow::Cow;

use bytes::Bytes;
use cadre_protocol::{
    AssistantMessage, AssistantMessageEvent, ContentBlock, Message, StopReason, ThinkingLevel,
    ToolSpec, UserContent,
};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::assemble::{BlockKey, MessageAssembler};
use crate::claude_thinking::ThinkingForm;
use crate::client::{Decoder, WireRequest};
use crate::encoded_tools::{EncodedTools, Json};
use crate::error::LlmError;
use crate::lenient::{Num, Obj, Str};
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
pub fn build_request(req: &CompletionRequest) -> Result<WireRequest, LlmError> {
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
    Ok(WireRequest {
        url,
        headers,
        body: build_body(req)?,
    })
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

/// The JSON body of a streamed Messages request, encoded straight from the request: the
/// conversation, system prompt and tool schemas are borrowed, not copied into a JSON tree.
pub fn build_body(req: &CompletionRequest) -> Result<Bytes, LlmError> {
    let messages = crate::convert::for_model(&req.messages, &req.model);
    crate::client::encode_body(&body(req, &messages)?)
}

/// The JSON of the tool sets sent last (see [`crate::encoded_tools`]).
static TOOLS: EncodedTools = EncodedTools::new();

/// The body's fields; serialized in this order.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u64,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[Block<'a>; 1]>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Json>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig>,
}

/// The `thinking` field in the form the model takes (see [`crate::claude_thinking`]).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Thinking<'a> {
    /// `{"type": "enabled", "budget_tokens": N}`.
    Enabled { budget_tokens: u64 },
    /// `{"type": "adaptive", "display": "summarized"}`: Opus 4.7 omits the thinking text unless
    /// asked for a summary, which older Claude 4 models give by default (Pi sends the same).
    Adaptive { display: &'a str },
}

/// `{"effort": E}`, sent with adaptive thinking.
#[derive(Serialize)]
struct OutputConfig {
    effort: String,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

/// A content block of a message (or of the system prompt), with the cache breakpoint flag.
#[derive(Serialize)]
struct Block<'a> {
    #[serde(flatten)]
    kind: BlockKind<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

impl<'a> From<BlockKind<'a>> for Block<'a> {
    fn from(kind: BlockKind<'a>) -> Self {
        Block {
            kind,
            cache_control: None,
        }
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockKind<'a> {
    Text {
        text: &'a str,
    },
    Image {
        source: ImageSource<'a>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: Cow<'a, str>,
        name: &'a str,
        input: ToolInput<'a>,
    },
    ToolResult {
        tool_use_id: Cow<'a, str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        content: Vec<BlockKind<'a>>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

impl BlockKind<'_> {
    fn is_thinking(&self) -> bool {
        matches!(
            self,
            BlockKind::Thinking { .. } | BlockKind::RedactedThinking { .. }
        )
    }
}

#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

/// `{"type": "ephemeral"}`
#[derive(Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

/// A tool call's `input`, which must be an object: arguments that were not (invalid JSON the
/// model wrote) go as `{}`, and the tool result says what was wrong.
struct ToolInput<'a>(&'a Value);

impl Serialize for ToolInput<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_object() {
            self.0.serialize(s)
        } else {
            s.serialize_map(Some(0))?.end()
        }
    }
}

/// The tool definitions, each borrowing its schema.
struct Tools<'a>(&'a [ToolSpec]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tool<'a> {
            name: &'a str,
            description: &'a str,
            input_schema: &'a Value,
        }
        s.collect_seq(self.0.iter().map(|t| Tool {
            name: &t.name,
            description: &t.description,
            input_schema: &t.parameters,
        }))
    }
}

/// The body of `req`, with `messages` (the request's, converted for the model) as its
/// conversation.
fn body<'a>(req: &'a CompletionRequest, messages: &'a [Message]) -> Result<Body<'a>, LlmError> {
    let model = &req.model;
    let messages = build_messages(req, messages);
    let (mut max_tokens, mut budget) = token_limits(model, req.thinking);
    if budget.is_some() && !thinking_can_continue(&messages) {
        // The API rejects thinking when the tool-use turn in progress was produced without it
        // (another provider, or thinking switched on mid-turn); this request goes without.
        // Adaptive thinking may skip thinking on any turn, so it carries no such rule.
        (max_tokens, budget) = token_limits(model, ThinkingLevel::Off);
    }
    let effort = adaptive_effort(model, req.thinking);
    let thinking = match (&effort, budget) {
        (Some(_), _) => Some(Thinking::Adaptive {
            display: "summarized",
        }),
        (None, Some(budget_tokens)) => Some(Thinking::Enabled { budget_tokens }),
        (None, None) => None,
    };
    let system = (!req.system_prompt.is_empty()).then(|| {
        [Block {
            kind: BlockKind::Text {
                text: &req.system_prompt,
            },
            cache_control: Some(EPHEMERAL),
        }]
    });
    let tools = if req.tools.is_empty() {
        None
    } else {
        Some(TOOLS.get(&req.tools, || Tools(&req.tools))?)
    };
    Ok(Body {
        model: &model.id,
        max_tokens,
        stream: true,
        system,
        messages,
        tools,
        thinking,
        output_config: effort.map(|effort| OutputConfig { effort }),
    })
}

/// The effort to send with adaptive thinking, `None` for a budget model or thinking off.
fn adaptive_effort(model: &Model, level: ThinkingLevel) -> Option<String> {
    if crate::claude_thinking::thinking_form(model) != ThinkingForm::Adaptive {
        return None;
    }
    crate::thinking::resolve_thinking(model, level).wire_value
}

/// With thinking enabled, an assistant message that is still being continued (the conversation
/// ends with the tool results it asked for) must start with a thinking block.
fn thinking_can_continue(messages: &[WireMessage]) -> bool {
    let [.., assistant, last] = messages else {
        return true;
    };
    let only_results = last.role == "user"
        && last
            .content
            .iter()
            .all(|b| matches!(b.kind, BlockKind::ToolResult { .. }));
    if !only_results || assistant.role != "assistant" {
        return true;
    }
    assistant
        .content
        .first()
        .is_some_and(|b| b.kind.is_thinking())
}

/// Anthropic tool ids must match `[a-zA-Z0-9_-]+` and be at most 64 characters long; ids minted
/// by other providers (a Responses `call_id|item_id` is longer) are mapped onto that alphabet
/// and cut, as Pi's `normalizeToolCallId` does — the same way for the call and its result, so
/// they still pair up.
pub fn sanitize_tool_id(id: &str) -> String {
    sanitized_tool_id(id).into_owned()
}

/// The longest tool id Anthropic takes.
const MAX_TOOL_ID: usize = 64;

/// [`sanitize_tool_id`], borrowing the id when it is valid already (Anthropic's own ids are).
fn sanitized_tool_id(id: &str) -> Cow<'_, str> {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !id.is_empty() && id.len() <= MAX_TOOL_ID && id.chars().all(valid) {
        return Cow::Borrowed(id);
    }
    let s: String = id
        .chars()
        .map(|c| if valid(c) { c } else { '_' })
        .take(MAX_TOOL_ID)
        .collect();
    Cow::Owned(if s.is_empty() { "_".to_string() } else { s })
}

/// Map the conversation to Messages `messages`; consecutive tool results become one user
/// message of `tool_result` blocks.
fn build_messages<'a>(req: &'a CompletionRequest, messages: &'a [Message]) -> Vec<WireMessage<'a>> {
    let mut out: Vec<WireMessage> = Vec::with_capacity(messages.len());
    let mut results: Vec<Block> = Vec::new();
    for msg in messages {
        if !matches!(msg, Message::ToolResult(_)) && !results.is_empty() {
            out.push(WireMessage {
                role: "user",
                content: std::mem::take(&mut results),
            });
        }
        match msg {
            Message::User(u) => push_user(&mut out, &u.content),
            Message::Custom(c) => push_user(&mut out, &c.content),
            // Turned into user messages by `convert::for_model` before this runs.
            Message::BashExecution(_) => {}
            Message::Assistant(a) => {
                let content = assistant_blocks(a, &req.model);
                if !content.is_empty() {
                    out.push(WireMessage {
                        role: "assistant",
                        content,
                    });
                }
            }
            Message::ToolResult(r) => results.push(Block::from(BlockKind::ToolResult {
                tool_use_id: sanitized_tool_id(&r.tool_call_id),
                content: r.content.iter().filter_map(user_block).collect(),
                is_error: r.is_error,
            })),
        }
    }
    if !results.is_empty() {
        out.push(WireMessage {
            role: "user",
            content: results,
        });
    }
    mark_cache_breakpoint(&mut out);
    out
}

/// Put a cache breakpoint on the last block of the last message: the whole conversation so far
/// becomes a cacheable prefix for the next turn.
fn mark_cache_breakpoint(messages: &mut [WireMessage]) {
    let last_block = messages.last_mut().and_then(|m| m.content.last_mut());
    if let Some(block) = last_block
        && !block.kind.is_thinking()
    {
        block.cache_control = Some(EPHEMERAL);
    }
}

fn push_user<'a>(out: &mut Vec<WireMessage<'a>>, content: &'a UserContent) {
    let content: Vec<Block> = match content {
        UserContent::Text(t) if t.is_empty() => Vec::new(),
        UserContent::Text(t) => vec![Block::from(BlockKind::Text { text: t })],
        UserContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(user_block)
            .map(Block::from)
            .collect(),
    };
    // The API rejects empty content; an empty user message carries nothing to say.
    if !content.is_empty() {
        out.push(WireMessage {
            role: "user",
            content,
        });
    }
}

/// A text or image block of user or tool-result content.
fn user_block(b: &ContentBlock) -> Option<BlockKind<'_>> {
    match b {
        ContentBlock::Text { text } if !text.is_empty() => Some(BlockKind::Text { text }),
        ContentBlock::Image { data, mime_type } => Some(BlockKind::Image {
            source: ImageSource {
                kind: "base64",
                media_type: mime_type,
                data,
            },
        }),
        _ => None,
    }
}

fn assistant_blocks<'a>(a: &'a AssistantMessage, model: &Model) -> Vec<Block<'a>> {
    // Signatures are only valid for the API (and provider) that produced them.
    let same_origin = a.api == model.api.as_str() && a.provider == model.provider;
    a.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } if !text.is_empty() => Some(BlockKind::Text { text }),
            ContentBlock::Thinking {
                thinking,
                signature: Some(sig),
                redacted,
            } if same_origin && !sig.is_empty() => Some(if *redacted {
                BlockKind::RedactedThinking { data: sig }
            } else {
                BlockKind::Thinking {
                    thinking,
                    signature: sig,
                }
            }),
            ContentBlock::ToolCall(c) => Some(BlockKind::ToolUse {
                id: sanitized_tool_id(&c.id),
                name: &c.name,
                input: ToolInput(&c.arguments),
            }),
            _ => None,
        })
        .map(Block::from)
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

/// The fields of a Messages stream event that cadre reads. Each event type uses a few of them;
/// unknown fields are skipped without being built, and a field of an unexpected JSON type
/// counts as absent (see [`crate::lenient`]).
#[derive(Default, Deserialize)]
#[serde(default)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    index: Num,
    #[serde(borrow)]
    message: Obj<StartedMessage<'a>>,
    #[serde(borrow)]
    content_block: Obj<StartedBlock<'a>>,
    /// A block delta (`content_block_delta`) or the message's stop reason (`message_delta`).
    #[serde(borrow)]
    delta: Obj<Delta<'a>>,
    usage: Obj<UsageCounts>,
    #[serde(borrow)]
    error: Obj<StreamError<'a>>,
}

/// `message_start`'s `message`.
#[derive(Default, Deserialize)]
#[serde(default)]
struct StartedMessage<'a> {
    /// The message id (`msg_…`), Pi's `responseId`.
    #[serde(borrow)]
    id: Str<'a>,
    usage: Obj<UsageCounts>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct UsageCounts {
    input_tokens: Num,
    output_tokens: Num,
    cache_read_input_tokens: Num,
    cache_creation_input_tokens: Num,
}

/// `content_block_start`'s `content_block`: the fields of every block type cadre models.
#[derive(Default, Deserialize)]
#[serde(default)]
struct StartedBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    text: Str<'a>,
    #[serde(borrow)]
    thinking: Str<'a>,
    #[serde(borrow)]
    signature: Str<'a>,
    #[serde(borrow)]
    data: Str<'a>,
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(borrow)]
    name: Str<'a>,
    /// A tool call's input when it arrives whole (normally `{}`, then `input_json_delta`s).
    input: Option<Value>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    text: Str<'a>,
    #[serde(borrow)]
    thinking: Str<'a>,
    #[serde(borrow)]
    signature: Str<'a>,
    #[serde(borrow)]
    partial_json: Str<'a>,
    #[serde(borrow)]
    stop_reason: Str<'a>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct StreamError<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    message: Str<'a>,
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
        let mut asm = MessageAssembler::new(model.api.as_str(), &model.provider, &model.id);
        // The signature streams in at the end of the block.
        asm.thinking_origin("");
        AnthropicDecoder {
            asm,
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

    fn index(&self, index: Num, event: &str) -> Result<u64, LlmError> {
        index
            .0
            .ok_or_else(|| self.malformed(format!("{event} without an index")))
    }

    fn update_usage(&mut self, u: &UsageCounts) {
        let usage = self.asm.usage_mut();
        // Counts are cumulative; a later event that omits or zeroes a count (some proxies send
        // `input_tokens: 0` in `message_delta`) must not erase the earlier one.
        let set = |field: &mut u64, count: Num| {
            if let Some(n) = count.0.filter(|n| *n > 0) {
                *field = n;
            }
        };
        set(&mut usage.input, u.input_tokens);
        set(&mut usage.output, u.output_tokens);
        set(&mut usage.cache_read, u.cache_read_input_tokens);
        set(&mut usage.cache_write, u.cache_creation_input_tokens);
        usage.total_tokens = usage.token_sum();
    }

    fn on_block_start(
        &mut self,
        ev: &Event,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> Result<(), LlmError> {
        let index = self.index(ev.index, "content_block_start")?;
        let key = BlockKey::Indexed(index);
        let none = StartedBlock::default();
        let block = ev.content_block.0.as_ref().unwrap_or(&none);
        match block.kind.or_empty() {
            "text" => self.asm.text(key, block.text.or_empty(), out),
            "thinking" => {
                self.asm.thinking(key, block.thinking.or_empty(), out);
                let signature = block.signature.or_empty();
                if !signature.is_empty() {
                    self.asm.thinking_signature(key, signature, out);
                }
            }
            "redacted_thinking" => {
                self.asm.redacted_thinking(block.data.or_empty(), out);
                self.ignored.push(index);
            }
            "tool_use" => {
                self.asm
                    .tool_start(key, Some(block.id.or_empty()), block.name.or_empty(), out);
                if let Some(input) = block
                    .input
                    .as_ref()
                    .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                {
                    self.asm.tool_args(key, &input.to_string(), out);
                }
            }
            _ => self.ignored.push(index),
        }
        Ok(())
    }

    fn on_block_delta(
        &mut self,
        ev: &Event,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> Result<(), LlmError> {
        let index = self.index(ev.index, "content_block_delta")?;
        if self.ignored.contains(&index) {
            return Ok(());
        }
        let key = BlockKey::Indexed(index);
        let Some(delta) = &ev.delta.0 else {
            return Ok(());
        };
        match delta.kind.or_empty() {
            "text_delta" => self.asm.text(key, delta.text.or_empty(), out),
            "thinking_delta" => self.asm.thinking(key, delta.thinking.or_empty(), out),
            "signature_delta" => self
                .asm
                .thinking_signature(key, delta.signature.or_empty(), out),
            "input_json_delta" => self.asm.tool_args(key, delta.partial_json.or_empty(), out),
            // citations_delta and future delta types carry nothing cadre keeps.
            _ => {}
        }
        Ok(())
    }

    fn stream_error(&self, error: Option<&StreamError>) -> LlmError {
        let kind = error.and_then(|e| e.kind.get()).unwrap_or("api_error");
        let message = error
            .and_then(|e| e.message.get())
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
        let Obj(data) = serde_json::from_str::<Obj<Event>>(&ev.data)
            .map_err(|e| self.malformed(format!("invalid JSON in {:?} event: {e}", ev.event)))?;
        let Some(data) = data else {
            return Err(self.malformed("event data is not a JSON object"));
        };
        // The data's own `type` is authoritative; the SSE event name is the fallback.
        match data.kind.get().unwrap_or(&ev.event) {
            "message_start" => {
                if let Some(message) = data.message.0.as_ref() {
                    if let Some(id) = message.id.get() {
                        self.asm.response_id(id);
                    }
                    if let Some(usage) = message.usage.0.as_ref() {
                        self.update_usage(usage);
                    }
                }
            }
            "content_block_start" => self.on_block_start(&data, out)?,
            "content_block_delta" => self.on_block_delta(&data, out)?,
            "content_block_stop" => {
                let index = self.index(data.index, "content_block_stop")?;
                self.asm.end(BlockKey::Indexed(index), out);
            }
            "message_delta" => {
                if let Some(r) = data.delta.0.as_ref().and_then(|d| d.stop_reason.get()) {
                    self.asm.set_stop_reason(map_stop_reason(r));
                }
                if let Some(usage) = &data.usage.0 {
                    self.update_usage(usage);
                }
            }
            "message_stop" => {
                self.stop_seen = true;
                return Ok(true);
            }
            "error" => return Err(self.stream_error(data.error.0.as_ref())),
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

    fn exceeded(&self) -> Option<usize> {
        self.asm.exceeded()
    }

    fn set_limit(&mut self, bytes: usize) {
        self.asm.set_limit(bytes);
    }
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "anthropic_sdk_tests.rs"]
mod sdk_tests;
