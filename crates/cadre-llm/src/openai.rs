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

use std::fmt::{self, Write as _};

use bytes::Bytes;
use cadre_protocol::{
    AssistantMessage, AssistantMessageEvent, ContentBlock, Message, StopReason, ThinkingLevel,
    ToolCall, ToolSpec, Usage, UserContent,
};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::assemble::{BlockKey, MessageAssembler};
use crate::client::{Decoder, WireRequest};
use crate::encoded_tools::{EncodedTools, Json};
use crate::error::LlmError;
use crate::lenient::{Arr, Num, Obj, Str, StrOrObject};
use crate::model::Model;
use crate::provider::CompletionRequest;
use crate::sse::SseEvent;

/// Output tokens requested when the model allows more (Pi's default cap): larger budgets only
/// make servers reserve context the reply will not use.
pub const DEFAULT_MAX_OUTPUT: u64 = 32_000;

/// Build the HTTP request for a Chat Completions call.
pub fn build_request(req: &CompletionRequest) -> Result<WireRequest, LlmError> {
    let model = &req.model;
    Ok(WireRequest {
        url: format!("{}/chat/completions", model.base_url.trim_end_matches('/')),
        headers: request_headers(model),
        body: build_body(req)?,
    })
}

/// The headers of an OpenAI request (Chat Completions or Responses): JSON in, SSE out, and the
/// bearer key when the model has one.
pub(crate) fn request_headers(model: &Model) -> Vec<(String, String)> {
    let mut headers = vec![
        ("content-type".to_string(), "application/json".to_string()),
        ("accept".to_string(), "text/event-stream".to_string()),
    ];
    if let Some(key) = model.api_key.as_deref().filter(|k| !k.is_empty()) {
        headers.push(("authorization".to_string(), format!("Bearer {key}")));
    }
    headers
}

/// The JSON body of a streamed Chat Completions request, encoded straight from the request: the
/// conversation, system prompt and tool schemas are borrowed, not copied into a JSON tree.
pub fn build_body(req: &CompletionRequest) -> Result<Bytes, LlmError> {
    let tools = if req.tools.is_empty() {
        None
    } else {
        Some(TOOLS.get(&req.tools, || Tools(&req.tools))?)
    };
    let messages = crate::convert::for_model(&req.messages, &req.model);
    crate::client::encode_body(&Body {
        req,
        messages: &messages,
        tools,
    })
}

/// The JSON of the tool sets sent last (see [`crate::encoded_tools`]).
static TOOLS: EncodedTools = EncodedTools::new();

/// The body, written field by field: the name of the max-tokens field comes from the model's
/// compat settings, so it is not a fixed struct field.
struct Body<'a> {
    req: &'a CompletionRequest,
    /// The request's conversation, converted for the model.
    messages: &'a [Message],
    tools: Option<Json>,
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let req = self.req;
        let model = &req.model;
        let compat = &model.compat;
        let mut body = s.serialize_map(None)?;
        body.serialize_entry("model", &model.id)?;
        body.serialize_entry("messages", &Messages(req, self.messages))?;
        body.serialize_entry("stream", &true)?;
        if compat.supports_usage_in_streaming != Some(false) {
            body.serialize_entry(
                "stream_options",
                &StreamOptions {
                    include_usage: true,
                },
            )?;
        }
        if compat.supports_store == Some(true) {
            body.serialize_entry("store", &false)?;
        }
        if model.max_tokens > 0 {
            let field = compat
                .max_tokens_field
                .as_deref()
                .filter(|f| !f.is_empty())
                .unwrap_or("max_completion_tokens");
            body.serialize_entry(field, &model.max_tokens.min(DEFAULT_MAX_OUTPUT))?;
        }
        if let Some(tools) = &self.tools {
            body.serialize_entry("tools", tools)?;
        }
        if let Some(effort) = reasoning_effort(model, req.thinking) {
            body.serialize_entry("reasoning_effort", &effort)?;
        }
        body.end()
    }
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The tool definitions, each borrowing its schema.
struct Tools<'a>(&'a [ToolSpec]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tool<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            function: Function<'a>,
        }
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters: &'a Value,
        }
        s.collect_seq(self.0.iter().map(|t| Tool {
            kind: "function",
            function: Function {
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            },
        }))
    }
}

/// The `reasoning_effort` value for a level, or `None` to send nothing. The mapping (map
/// values, `null` entries, `compat.supportsReasoningEffort`, `off`) is
/// [`crate::thinking::resolve_thinking`]'s, so the value recorded with a session is the value
/// sent.
pub fn reasoning_effort(model: &Model, level: ThinkingLevel) -> Option<String> {
    crate::thinking::resolve_thinking(model, level).wire_value
}

/// A message of the request: its role and content (`C` is the content's wire form).
#[derive(Serialize)]
struct Msg<'a, C> {
    role: &'a str,
    content: C,
}

/// The conversation as Chat Completions messages, written one by one as they are mapped.
struct Messages<'a>(&'a CompletionRequest, &'a [Message]);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (req, messages) = (self.0, self.1);
        let mut out = s.serialize_seq(None)?;
        if !req.system_prompt.is_empty() {
            let role =
                if req.model.reasoning && req.model.compat.supports_developer_role != Some(false) {
                    "developer"
                } else {
                    "system"
                };
            out.serialize_element(&Msg {
                role,
                content: &req.system_prompt,
            })?;
        }
        // Images returned by tools cannot ride in a `tool` message; those of a run of tool
        // results follow it as one user message.
        let mut run_start = None;
        for (i, msg) in messages.iter().enumerate() {
            if !matches!(msg, Message::ToolResult(_))
                && let Some(start) = run_start.take()
            {
                tool_images(&mut out, &messages[start..i])?;
            }
            match msg {
                Message::User(u) => out.serialize_element(&user_message(&u.content))?,
                Message::Custom(c) => out.serialize_element(&user_message(&c.content))?,
                // Turned into user messages by `convert::for_model` before this runs.
                Message::BashExecution(_) => {}
                Message::Assistant(a) => {
                    if let Some(m) = assistant_message(a) {
                        out.serialize_element(&m)?;
                    }
                }
                Message::ToolResult(r) => {
                    run_start.get_or_insert(i);
                    out.serialize_element(&ToolMessage {
                        role: "tool",
                        tool_call_id: ToolId(&r.tool_call_id),
                        content: ToolText(&r.content),
                    })?;
                }
            }
        }
        if let Some(start) = run_start {
            tool_images(&mut out, &messages[start..])?;
        }
        out.end()
    }
}

#[derive(Serialize)]
struct ToolMessage<'a> {
    role: &'static str,
    tool_call_id: ToolId<'a>,
    content: ToolText<'a>,
}

/// A tool result's text blocks joined with newlines; a result that is only images says so,
/// since its images follow in a user message.
struct ToolText<'a>(&'a [ContentBlock]);

impl Serialize for ToolText<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let text = JoinedText(self.0);
        if text.is_empty() && self.0.iter().any(is_image) {
            s.serialize_str("(see attached image)")
        } else {
            text.serialize(s)
        }
    }
}

/// The user message carrying the images of a run of tool results, if they returned any.
fn tool_images<S: SerializeSeq>(out: &mut S, run: &[Message]) -> Result<(), S::Error> {
    let has_images = run.iter().any(|m| match m {
        Message::ToolResult(r) => r.content.iter().any(is_image),
        _ => false,
    });
    if has_images {
        out.serialize_element(&Msg {
            role: "user",
            content: ToolImages(run),
        })?;
    }
    Ok(())
}

struct ToolImages<'a>(&'a [Message]);

impl Serialize for ToolImages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut parts = s.serialize_seq(None)?;
        parts.serialize_element(&Part::Text {
            text: "Attached image(s) from tool result:",
        })?;
        for msg in self.0 {
            if let Message::ToolResult(r) = msg {
                for block in &r.content {
                    if let Some(part) = Part::image(block) {
                        parts.serialize_element(&part)?;
                    }
                }
            }
        }
        parts.end()
    }
}

/// A content part of a user message.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
}

impl<'a> Part<'a> {
    fn image(block: &'a ContentBlock) -> Option<Self> {
        match block {
            ContentBlock::Image { data, mime_type } => Some(Part::ImageUrl {
                image_url: ImageUrl {
                    url: DataUrl { mime_type, data },
                },
            }),
            _ => None,
        }
    }
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: DataUrl<'a>,
}

/// `data:<mime>;base64,<data>`, written without first building the (large) string.
struct DataUrl<'a> {
    mime_type: &'a str,
    data: &'a str,
}

impl Serialize for DataUrl<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!(
            "data:{};base64,{}",
            self.mime_type, self.data
        ))
    }
}

fn is_image(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Image { .. })
}

/// The text blocks of a block list joined with newlines, as
/// [`cadre_protocol::message::join_text`] joins them, written without building the string.
#[derive(Clone, Copy)]
struct JoinedText<'a>(&'a [ContentBlock]);

impl JoinedText<'_> {
    fn texts(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
    }

    fn is_empty(&self) -> bool {
        self.texts().all(str::is_empty)
    }
}

impl fmt::Display for JoinedText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A newline goes before every text once something was written, as in `join_text`.
        let mut written = false;
        for text in self.texts() {
            if written {
                f.write_char('\n')?;
            }
            f.write_str(text)?;
            written |= !text.is_empty();
        }
        Ok(())
    }
}

impl Serialize for JoinedText<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// User content: a plain string when it is text only (what every compatible server accepts),
/// content parts when it holds images.
enum UserParts<'a> {
    Text(&'a str),
    Joined(JoinedText<'a>),
    Parts(&'a [ContentBlock]),
}

fn user_message(content: &UserContent) -> Msg<'static, UserParts<'_>> {
    let content = match content {
        UserContent::Text(t) => UserParts::Text(t),
        UserContent::Blocks(blocks) if !blocks.iter().any(is_image) => {
            UserParts::Joined(JoinedText(blocks))
        }
        UserContent::Blocks(blocks) => UserParts::Parts(blocks),
    };
    Msg {
        role: "user",
        content,
    }
}

impl Serialize for UserParts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            UserParts::Text(t) => s.serialize_str(t),
            UserParts::Joined(text) => text.serialize(s),
            UserParts::Parts(blocks) => s.collect_seq(blocks.iter().filter_map(|b| match b {
                ContentBlock::Text { text } => Some(Part::Text { text }),
                _ => Part::image(b),
            })),
        }
    }
}

/// An assistant message: text joined (`null` when there is none), tool calls as `tool_calls`,
/// thinking dropped (servers do not take reasoning back).
#[derive(Serialize)]
struct AssistantWire<'a> {
    role: &'static str,
    content: Option<JoinedText<'a>>,
    #[serde(skip_serializing_if = "ToolCalls::is_empty")]
    tool_calls: ToolCalls<'a>,
}

/// `None` when nothing is left to send.
fn assistant_message(a: &AssistantMessage) -> Option<AssistantWire<'_>> {
    let text = JoinedText(&a.content);
    let calls = ToolCalls(&a.content);
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    Some(AssistantWire {
        role: "assistant",
        content: (!text.is_empty()).then_some(text),
        tool_calls: calls,
    })
}

/// The tool calls among an assistant message's blocks.
struct ToolCalls<'a>(&'a [ContentBlock]);

impl ToolCalls<'_> {
    fn calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.0.iter().filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(c),
            _ => None,
        })
    }

    fn is_empty(&self) -> bool {
        self.calls().next().is_none()
    }
}

impl Serialize for ToolCalls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Call<'a> {
            id: ToolId<'a>,
            #[serde(rename = "type")]
            kind: &'static str,
            function: Function<'a>,
        }
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            arguments: Arguments<'a>,
        }
        s.collect_seq(self.calls().map(|c| Call {
            id: ToolId(&c.id),
            kind: "function",
            function: Function {
                name: &c.name,
                arguments: Arguments(&c.arguments),
            },
        }))
    }
}

/// A tool call id as Chat Completions takes it. A call made through the Responses API is
/// stored as `call_id|item_id` (Pi's form), whose item part is long and may hold characters
/// OpenAI refuses here; as Pi does, only the call id is sent, sanitized to `[A-Za-z0-9_-]` and cut
/// at OpenAI's 40 characters. The call and its result map alike, so they still pair.
struct ToolId<'a>(&'a str);

impl Serialize for ToolId<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some((call, _item)) = self.0.split_once('|') else {
            return s.serialize_str(self.0);
        };
        let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        let id: String = call
            .chars()
            .map(|c| if valid(c) { c } else { '_' })
            .take(40)
            .collect();
        s.serialize_str(&id)
    }
}

/// Tool-call arguments as the JSON string the API wants.
struct Arguments<'a>(&'a Value);

impl Serialize for Arguments<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            // Invalid JSON the model produced is sent back verbatim.
            Value::String(raw) => s.serialize_str(raw),
            // `Value`'s Display is its compact JSON text.
            other => s.collect_str(other),
        }
    }
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
    // A `&Value` deserializes without copying; the lenient fields cannot fail.
    UsageReport::deserialize(u).map_or_else(|_| Usage::default(), |u| u.to_usage())
}

/// The fields of a stream chunk that cadre reads; everything else is skipped without being
/// built, and a field of an unexpected JSON type counts as absent (see [`crate::lenient`]).
#[derive(Default, Deserialize)]
#[serde(default)]
struct Chunk<'a> {
    /// The completion id (`chatcmpl-…`), the same in every chunk: Pi's `responseId`.
    #[serde(borrow)]
    id: Str<'a>,
    /// `null` counts as no error.
    error: Option<Value>,
    usage: Obj<UsageReport>,
    #[serde(borrow)]
    choices: Arr<Obj<Choice<'a>>>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct UsageReport {
    prompt_tokens: Num,
    completion_tokens: Num,
    prompt_tokens_details: Obj<PromptDetails>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct PromptDetails {
    cached_tokens: Num,
}

impl UsageReport {
    fn to_usage(&self) -> Usage {
        let n = |count: Num| count.0.unwrap_or(0);
        let cached = self
            .prompt_tokens_details
            .0
            .as_ref()
            .map_or(0, |d| n(d.cached_tokens));
        usage_from_counts(
            n(self.prompt_tokens),
            cached,
            n(self.completion_tokens),
            None,
        )
    }
}

/// OpenAI's counts (Chat Completions and Responses) as a [`Usage`]: cached input is reported
/// apart from the uncached input, as Pi does, so cost uses the cache-read price for it. Counts
/// come from the server: they saturate rather than overflow, and the total is theirs when given.
pub(crate) fn usage_from_counts(input: u64, cached: u64, output: u64, total: Option<u64>) -> Usage {
    let cached = cached.min(input);
    Usage {
        input: input - cached,
        output,
        cache_read: cached,
        cache_write: 0,
        total_tokens: total.unwrap_or_else(|| input.saturating_add(output)),
        ..Usage::default()
    }
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct Choice<'a> {
    index: Num,
    #[serde(borrow)]
    delta: Obj<Delta<'a>>,
    #[serde(borrow)]
    finish_reason: Str<'a>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct Delta<'a> {
    #[serde(borrow)]
    reasoning_content: Str<'a>,
    #[serde(borrow)]
    reasoning: Str<'a>,
    #[serde(borrow)]
    reasoning_text: Str<'a>,
    #[serde(borrow)]
    content: Str<'a>,
    #[serde(borrow)]
    tool_calls: Arr<Obj<ToolCallDelta<'a>>>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct ToolCallDelta<'a> {
    index: Num,
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(borrow)]
    function: Obj<FunctionDelta<'a>>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct FunctionDelta<'a> {
    #[serde(borrow)]
    name: Str<'a>,
    /// A piece of the JSON text, or (a few servers) the whole arguments object at once.
    #[serde(borrow)]
    arguments: StrOrObject<'a>,
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
        chunk: &Chunk,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> Result<(), LlmError> {
        if let Some(err) = &chunk.error {
            return Err(stream_error(&self.provider, err));
        }
        if let Some(id) = chunk.id.get() {
            self.asm.response_id(id);
        }
        if let Some(u) = &chunk.usage.0 {
            self.asm.set_usage(u.to_usage());
        }
        let Some(choices) = &chunk.choices.0 else {
            return Ok(());
        };
        // Only the first choice is used: cadre never asks for `n > 1`. An entry that is not an
        // object has no index, which counts as 0.
        let Some(choice) = choices
            .iter()
            .find(|c| c.0.as_ref().map_or(0, |c| c.index.0.unwrap_or(0)) == 0)
        else {
            return Ok(());
        };
        let Some(choice) = &choice.0 else {
            return Ok(());
        };
        if let Some(delta) = &choice.delta.0 {
            self.on_delta(delta, out);
        }
        if let Some(reason) = choice.finish_reason.get() {
            self.finish_seen = true;
            self.asm.set_stop_reason(map_finish_reason(reason));
        }
        Ok(())
    }

    /// Like Pi's client, every block stays open until the reply ends (one text block and one
    /// thinking block per reply, whatever comes between), and all end together in content
    /// order.
    fn on_delta(&mut self, delta: &Delta, out: &mut Vec<AssistantMessageEvent>) {
        // Text before reasoning, in Pi's order.
        if let Some(text) = delta.content.get().filter(|s| !s.is_empty()) {
            self.asm.text(BlockKey::Text, text, out);
        }
        // Reasoning arrives as `reasoning_content` (DeepSeek, vLLM, llama.cpp), `reasoning`
        // (OpenRouter, Ollama) or `reasoning_text`; the first field with text counts, and its
        // name is the block's signature, as in Pi.
        let reasoning = [
            ("reasoning_content", &delta.reasoning_content),
            ("reasoning", &delta.reasoning),
            ("reasoning_text", &delta.reasoning_text),
        ]
        .into_iter()
        .find_map(|(field, value)| value.get().filter(|s| !s.is_empty()).map(|s| (field, s)));
        if let Some((field, r)) = reasoning {
            self.asm.thinking_origin(field);
            self.asm.thinking(BlockKey::Thinking, r, out);
        }
        let Some(calls) = &delta.tool_calls.0 else {
            return;
        };
        for (pos, call) in calls.iter().enumerate() {
            // An entry that is not an object carries nothing, but still counts for positions.
            let Some(call) = &call.0 else {
                continue;
            };
            let index = call.index.0.unwrap_or(pos as u64);
            let key = BlockKey::Tool(index);
            let id = call.id.get();
            let function = call.function.0.as_ref();
            let name = function.and_then(|f| f.name.get());
            let named = id.is_some() || name.is_some();
            if named {
                self.asm.tool_start(key, id, name.unwrap_or(""), out);
            }
            match function.map(|f| &f.arguments) {
                Some(StrOrObject::Str(s)) => self.asm.tool_args(key, s, out),
                // A few servers send the arguments as an object in one piece.
                Some(StrOrObject::Object(args)) => {
                    self.asm.tool_args(key, &args.to_string(), out);
                }
                // The entry that names the call has a (first) delta even without arguments.
                Some(StrOrObject::Absent) | None if named => self.asm.tool_args(key, "", out),
                Some(StrOrObject::Absent) | None => {}
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
        let Obj(chunk) = serde_json::from_str::<Obj<Chunk>>(data)
            .map_err(|e| self.malformed(format!("invalid JSON chunk: {e}")))?;
        let Some(chunk) = chunk else {
            return Err(self.malformed("chunk is not a JSON object"));
        };
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

    fn exceeded(&self) -> Option<usize> {
        self.asm.exceeded()
    }

    fn set_limit(&mut self, bytes: usize) {
        self.asm.set_limit(bytes);
    }
}

#[cfg(test)]
#[path = "openai_tests.rs"]
mod tests;
