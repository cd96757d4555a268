//! The streamed response of a Responses call, decoded into assistant message events.
//!
//! Each output item (`output_index`) becomes one block: a `message` a text block, a
//! `reasoning` item a thinking block (its summary text, or the raw reasoning text some servers
//! stream), a `function_call` a tool call. Deltas stream into the block; `output_item.done`
//! carries the finished item, which fills in what no delta carried and, for reasoning, becomes
//! the block's signature as received. Other item kinds (hosted tools) are skipped, as are event
//! types this decoder does not know.

use std::collections::{HashMap, HashSet};

use cadre_protocol::{AssistantMessage, AssistantMessageEvent, ContentBlock, StopReason, Usage};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::assemble::{BlockKey, MessageAssembler};
use crate::client::Decoder;
use crate::error::LlmError;
use crate::lenient::{Arr, Num, Obj, Str};
use crate::model::Model;
use crate::sse::SseEvent;

/// The fields of a stream event that cadre reads; a field of an unexpected JSON type counts as
/// absent (see [`crate::lenient`]).
#[derive(Default, Deserialize)]
#[serde(default)]
struct Event<'a> {
    #[serde(borrow, rename = "type")]
    kind: Str<'a>,
    output_index: Num,
    #[serde(borrow)]
    delta: Str<'a>,
    /// `function_call_arguments.done`: the whole arguments text.
    #[serde(borrow)]
    arguments: Str<'a>,
    /// `output_item.added`/`.done`: kept as received, for the reasoning item's signature.
    #[serde(borrow)]
    item: Option<&'a RawValue>,
    #[serde(borrow)]
    response: Obj<ResponseInfo<'a>>,
    /// `error` events: `code`/`message` at the top, or (some proxies) an `error` object.
    #[serde(borrow)]
    code: Str<'a>,
    #[serde(borrow)]
    message: Str<'a>,
    error: Option<Value>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct ResponseInfo<'a> {
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(borrow)]
    status: Str<'a>,
    usage: Obj<UsageReport>,
    #[serde(borrow)]
    incomplete_details: Obj<IncompleteDetails<'a>>,
    /// `null` counts as no error.
    error: Option<Value>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct IncompleteDetails<'a> {
    #[serde(borrow)]
    reason: Str<'a>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct UsageReport {
    input_tokens: Num,
    output_tokens: Num,
    total_tokens: Num,
    input_tokens_details: Obj<InputDetails>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct InputDetails {
    cached_tokens: Num,
}

impl UsageReport {
    /// Reasoning tokens are part of `output_tokens` already.
    fn to_usage(&self) -> Usage {
        let n = |count: Num| count.0.unwrap_or(0);
        let cached = self
            .input_tokens_details
            .0
            .as_ref()
            .map_or(0, |d| n(d.cached_tokens));
        crate::openai::usage_from_counts(
            n(self.input_tokens),
            cached,
            n(self.output_tokens),
            self.total_tokens.0,
        )
    }
}

/// An output item, as far as cadre reads it.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Item<'a> {
    #[serde(borrow, rename = "type")]
    kind: Str<'a>,
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(borrow)]
    call_id: Str<'a>,
    #[serde(borrow)]
    name: Str<'a>,
    #[serde(borrow)]
    arguments: Str<'a>,
    /// Reasoning summary parts, and message (or raw reasoning) content parts.
    #[serde(borrow)]
    summary: Arr<Obj<TextPart<'a>>>,
    #[serde(borrow)]
    content: Arr<Obj<TextPart<'a>>>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct TextPart<'a> {
    #[serde(borrow)]
    text: Str<'a>,
    #[serde(borrow)]
    refusal: Str<'a>,
}

impl Item<'_> {
    /// The texts of `parts` (a refusal counts as text, as in Pi), joined with `sep`.
    fn joined(parts: &Arr<Obj<TextPart<'_>>>, sep: &str) -> String {
        let texts = parts.0.iter().flatten().filter_map(|p| p.0.as_ref());
        let texts: Vec<&str> = texts
            .filter_map(|p| p.text.get().or_else(|| p.refusal.get()))
            .collect();
        texts.join(sep)
    }

    /// The finished reasoning text: the summary, else the raw reasoning content.
    fn reasoning_text(&self) -> String {
        let summary = Self::joined(&self.summary, "\n\n");
        if summary.is_empty() {
            Self::joined(&self.content, "\n\n")
        } else {
            summary
        }
    }
}

fn parse_item(raw: &RawValue) -> Option<Item<'_>> {
    serde_json::from_str::<Obj<Item>>(raw.get()).ok()?.0
}

/// Which kind of block an output item streams into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Thinking,
    Tool,
}

impl Kind {
    fn key(self, output_index: u64) -> BlockKey {
        match self {
            Kind::Tool => BlockKey::Tool(output_index),
            Kind::Text | Kind::Thinking => BlockKey::Indexed(output_index),
        }
    }
}

/// An output item whose block is open.
#[derive(Debug)]
struct Open {
    output_index: u64,
    kind: Kind,
    /// The block's content index.
    index: usize,
    /// Reasoning summary parts begun, so the next one starts on a new paragraph.
    parts: u32,
    /// Whether a tool call's id and name came with it (not when its argument deltas opened it).
    identified: bool,
}

/// Streaming decoder for Responses events.
#[derive(Debug)]
pub struct ResponsesDecoder {
    asm: MessageAssembler,
    provider: String,
    open: Vec<Open>,
    /// Output items already finished (`output_item.done`), by output index and by item id: a
    /// repeated `done` or a late delta for one would open a second block (a tool call run
    /// twice, duplicate ids on the next turn), so events for them are ignored.
    finished: HashSet<u64>,
    finished_ids: HashSet<String>,
    /// The output index of each tool call's `call_id`: a call repeated under another output
    /// index is the same call, kept once.
    calls: HashMap<String, u64>,
    terminal_seen: bool,
}

impl ResponsesDecoder {
    pub fn new(model: &Model) -> Self {
        ResponsesDecoder {
            asm: MessageAssembler::new(model.api.as_str(), &model.provider, &model.id),
            provider: model.provider.clone(),
            open: Vec::new(),
            finished: HashSet::new(),
            finished_ids: HashSet::new(),
            calls: HashMap::new(),
            terminal_seen: false,
        }
    }

    fn malformed(&self, detail: impl Into<String>) -> LlmError {
        LlmError::MalformedStream {
            provider: self.provider.clone(),
            detail: detail.into(),
        }
    }

    fn find(&self, output_index: u64, kind: Kind) -> Option<&Open> {
        self.open
            .iter()
            .find(|o| o.output_index == output_index && o.kind == kind)
    }

    /// Open the block of an output item (once); returns its content index.
    fn open_block(
        &mut self,
        output_index: u64,
        kind: Kind,
        tool: Option<(Option<&str>, &str)>,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> usize {
        if let Some(o) = self.find(output_index, kind) {
            return o.index;
        }
        // Another kind under the same output index is a protocol slip: the assembler closes
        // it, and so forgets it here.
        self.open.retain(|o| o.output_index != output_index);
        let index = self.asm.partial().content.len();
        let key = kind.key(output_index);
        match kind {
            Kind::Text => self.asm.text(key, "", out),
            Kind::Thinking => self.asm.thinking(key, "", out),
            Kind::Tool => {
                let (id, name) = tool.unwrap_or((None, ""));
                self.asm.tool_start(key, id, name, out);
            }
        }
        self.open.push(Open {
            output_index,
            kind,
            index,
            parts: 0,
            identified: tool.is_some(),
        });
        index
    }

    fn close(&mut self, output_index: u64, kind: Kind, out: &mut Vec<AssistantMessageEvent>) {
        self.open
            .retain(|o| !(o.output_index == output_index && o.kind == kind));
        self.asm.end(kind.key(output_index), out);
    }

    /// What the block at `index` holds so far: text, thinking or raw tool arguments.
    fn streamed(&self, index: usize, kind: Kind) -> &str {
        match (kind, self.asm.partial().content.get(index)) {
            (Kind::Text, Some(ContentBlock::Text { text })) => text,
            (Kind::Thinking, Some(ContentBlock::Thinking { thinking, .. })) => thinking,
            (Kind::Tool, _) => self.asm.raw_arguments(index).unwrap_or(""),
            _ => "",
        }
    }

    /// Bring an open block up to the finished text of its item: what the deltas did not carry
    /// is sent as one more delta. A finished text that is not a continuation of the streamed
    /// one is left alone; the streamed text is what the consumer saw.
    fn complete(
        &mut self,
        output_index: u64,
        kind: Kind,
        full: &str,
        out: &mut Vec<AssistantMessageEvent>,
    ) {
        let Some(index) = self.find(output_index, kind).map(|o| o.index) else {
            return;
        };
        let rest = match full.strip_prefix(self.streamed(index, kind)) {
            Some(rest) if !rest.is_empty() => rest.to_string(),
            _ => return,
        };
        self.delta(output_index, kind, &rest, out);
    }

    fn delta(
        &mut self,
        output_index: u64,
        kind: Kind,
        delta: &str,
        out: &mut Vec<AssistantMessageEvent>,
    ) {
        let key = kind.key(output_index);
        match kind {
            Kind::Text => self.asm.text(key, delta, out),
            Kind::Thinking => self.asm.thinking(key, delta, out),
            Kind::Tool => self.asm.tool_args(key, delta, out),
        }
    }

    /// Whether an `added`/`done` item is one already finished, or a tool call already seen
    /// under another output index; such an item is ignored, and the events of its output
    /// index with it.
    fn is_repeat(&mut self, output_index: u64, item: &Item) -> bool {
        let id = item.id.get().filter(|i| !i.is_empty());
        if self.finished.contains(&output_index)
            || id.is_some_and(|i| self.finished_ids.contains(i))
        {
            return true;
        }
        if item.kind.get() != Some("function_call") {
            return false;
        }
        let Some(call) = item.call_id.get().filter(|c| !c.is_empty()) else {
            return false;
        };
        match self.calls.get(call) {
            Some(at) if *at != output_index => {
                self.finished.insert(output_index);
                true
            }
            Some(_) => false,
            None => {
                self.calls.insert(call.to_string(), output_index);
                false
            }
        }
    }

    /// Open a tool call's block with its id and name, or give them to the block its argument
    /// deltas opened before the item arrived.
    fn open_call(&mut self, output_index: u64, item: &Item, out: &mut Vec<AssistantMessageEvent>) {
        let id = call_id(item);
        let name = item.name.or_empty();
        let late = self
            .open
            .iter_mut()
            .find(|o| o.output_index == output_index && o.kind == Kind::Tool)
            .filter(|o| !o.identified);
        if let Some(open) = late {
            open.identified = true;
            let key = BlockKey::Tool(output_index);
            self.asm.tool_identity(key, id.as_deref(), name);
            return;
        }
        self.open_block(output_index, Kind::Tool, Some((id.as_deref(), name)), out);
    }

    fn item_added(
        &mut self,
        output_index: u64,
        raw: &RawValue,
        out: &mut Vec<AssistantMessageEvent>,
    ) {
        let Some(item) = parse_item(raw) else {
            return;
        };
        if self.is_repeat(output_index, &item) {
            return;
        }
        match item.kind.or_empty() {
            // Opened now, so a reasoning item that carries no summary still holds its place
            // (and its signature) in the message.
            "reasoning" => {
                self.open_block(output_index, Kind::Thinking, None, out);
            }
            "function_call" => {
                self.open_call(output_index, &item, out);
                if let Some(args) = item.arguments.get().filter(|a| !a.is_empty()) {
                    self.asm.tool_args(BlockKey::Tool(output_index), args, out);
                }
            }
            // Opened now, as Pi does: the model has begun its answer, which is progress for the
            // deadlines even before the first text arrives.
            "message" => {
                self.open_block(output_index, Kind::Text, None, out);
            }
            _ => {}
        }
    }

    fn item_done(
        &mut self,
        output_index: u64,
        raw: &RawValue,
        out: &mut Vec<AssistantMessageEvent>,
    ) {
        let Some(item) = parse_item(raw) else {
            return;
        };
        if self.is_repeat(output_index, &item) {
            return;
        }
        let kind = item.kind.or_empty();
        if matches!(kind, "message" | "reasoning" | "function_call") {
            self.finished.insert(output_index);
            if let Some(id) = item.id.get().filter(|i| !i.is_empty()) {
                self.finished_ids.insert(id.to_string());
            }
        }
        match kind {
            "message" => {
                let full = Item::joined(&item.content, "");
                if self.find(output_index, Kind::Text).is_none() && !full.is_empty() {
                    self.open_block(output_index, Kind::Text, None, out);
                }
                self.complete(output_index, Kind::Text, &full, out);
                self.close(output_index, Kind::Text, out);
            }
            "reasoning" => {
                self.open_block(output_index, Kind::Thinking, None, out);
                self.complete(output_index, Kind::Thinking, &item.reasoning_text(), out);
                // The item exactly as received: the next turn sends it back.
                self.asm
                    .thinking_signature(BlockKey::Indexed(output_index), raw.get(), out);
                self.close(output_index, Kind::Thinking, out);
            }
            "function_call" => {
                self.open_call(output_index, &item, out);
                self.complete(output_index, Kind::Tool, item.arguments.or_empty(), out);
                self.close(output_index, Kind::Tool, out);
            }
            _ => {}
        }
    }

    fn on_parsed(
        &mut self,
        ev: &Event,
        name: &str,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> Result<bool, LlmError> {
        let kind = ev.kind.get().unwrap_or(name);
        let oi = ev.output_index.0.unwrap_or(0);
        let delta = ev.delta.or_empty();
        if let Some(r) = &ev.response.0 {
            if let Some(id) = r.id.get() {
                self.asm.response_id(id);
            }
            if let Some(u) = &r.usage.0 {
                self.asm.set_usage(u.to_usage());
            }
        }
        // A late delta (or a repeated `done`) for an item that finished would reopen it.
        let per_item = kind.starts_with("response.output_text.")
            || kind.starts_with("response.refusal.")
            || kind.starts_with("response.reasoning_")
            || kind.starts_with("response.function_call_arguments.");
        if per_item && self.finished.contains(&oi) {
            return Ok(false);
        }
        match kind {
            "response.output_item.added" => {
                if let Some(raw) = ev.item {
                    self.item_added(oi, raw, out);
                }
            }
            "response.output_item.done" => {
                if let Some(raw) = ev.item {
                    self.item_done(oi, raw, out);
                }
            }
            "response.output_text.delta" | "response.refusal.delta" if !delta.is_empty() => {
                self.open_block(oi, Kind::Text, None, out);
                self.delta(oi, Kind::Text, delta, out);
            }
            "response.reasoning_summary_part.added" => {
                let index = self.open_block(oi, Kind::Thinking, None, out);
                let parts = self.open.iter_mut().find(|o| o.index == index);
                let earlier = parts.map_or(0, |o| {
                    o.parts += 1;
                    o.parts - 1
                });
                if earlier > 0 && !self.streamed(index, Kind::Thinking).is_empty() {
                    self.delta(oi, Kind::Thinking, "\n\n", out);
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta"
                if !delta.is_empty() =>
            {
                self.open_block(oi, Kind::Thinking, None, out);
                self.delta(oi, Kind::Thinking, delta, out);
            }
            "response.function_call_arguments.delta" if !delta.is_empty() => {
                self.open_block(oi, Kind::Tool, None, out);
                self.delta(oi, Kind::Tool, delta, out);
            }
            "response.function_call_arguments.done" => {
                if let Some(args) = ev.arguments.get() {
                    self.complete(oi, Kind::Tool, args, out);
                }
            }
            "response.completed" | "response.incomplete" => {
                self.terminal_seen = true;
                let info = ev.response.0.as_ref();
                let status = info.and_then(|r| r.status.get());
                let reason = info
                    .and_then(|r| r.incomplete_details.0.as_ref())
                    .and_then(|d| d.reason.get());
                let incomplete = kind == "response.incomplete" || status == Some("incomplete");
                if !incomplete && matches!(status, Some("failed" | "cancelled")) {
                    // A "completed" event whose response says otherwise is a failure, not a
                    // reply that merely stopped.
                    let detail = Value::String(format!("response {}", status.unwrap_or("")));
                    let error = info.and_then(|r| r.error.as_ref()).filter(|e| !e.is_null());
                    return Err(stream_error(&self.provider, error.unwrap_or(&detail)));
                }
                self.asm
                    .set_stop_reason(map_stop_reason(incomplete, reason));
                return Ok(true);
            }
            "response.failed" => {
                let info = ev.response.0.as_ref();
                let error = info.and_then(|r| r.error.as_ref()).filter(|e| !e.is_null());
                return Err(match error {
                    Some(e) => stream_error(&self.provider, e),
                    None => {
                        let reason = info
                            .and_then(|r| r.incomplete_details.0.as_ref())
                            .and_then(|d| d.reason.get())
                            .unwrap_or("no error details");
                        stream_error(&self.provider, &Value::String(format!("failed: {reason}")))
                    }
                });
            }
            "error" => {
                let nested = ev.error.as_ref().filter(|e| e.is_object());
                let error = match nested {
                    Some(e) => e.clone(),
                    None => serde_json::json!({
                        "code": ev.code.get(),
                        "message": ev.message.get().unwrap_or("error event in stream"),
                    }),
                };
                return Err(stream_error(&self.provider, &error));
            }
            // `response.created`, `.in_progress`, `.queued`, content and summary part
            // boundaries, `.done` events the item's `done` repeats, annotations, hosted tools,
            // and whatever comes next: nothing to add.
            _ => {}
        }
        Ok(false)
    }
}

/// A tool call's id as Pi stores it: `call_id|item_id` (the item id pairs the call with its
/// reasoning when sent back), or whichever of the two there is.
fn call_id(item: &Item) -> Option<String> {
    let call = item.call_id.get().filter(|s| !s.is_empty());
    let id = item.id.get().filter(|s| !s.is_empty());
    match (call, id) {
        (Some(c), Some(i)) => Some(format!("{c}|{i}")),
        (Some(c), None) => Some(c.to_string()),
        (None, _) => None,
    }
}

/// The stop reason of a finished response. A reply cut by `max_output_tokens` (or for any
/// reason but the content filter) stopped at a length; a filtered one stopped, as Chat
/// Completions' `content_filter` does. Tool calls turn `stop` into `toolUse` in the assembler.
fn map_stop_reason(incomplete: bool, reason: Option<&str>) -> StopReason {
    match (incomplete, reason) {
        (true, Some("content_filter")) => StopReason::Stop,
        (true, _) => StopReason::Length,
        (false, _) => StopReason::Stop,
    }
}

/// An error object of the stream (`error` event, `response.failed`'s `response.error`) as an
/// error typed like the HTTP status it stands for. Unknown codes count as server errors, which
/// are retryable: a response that fails mid-stream is overwhelmingly an overloaded server.
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
        "context_length_exceeded"
        | "invalid_request_error"
        | "invalid_prompt"
        | "invalid_image"
        | "invalid_image_format"
        | "invalid_base64_image"
        | "invalid_image_url"
        | "image_too_large"
        | "image_too_small"
        | "image_parse_error"
        | "image_content_policy_violation"
        | "invalid_image_mode"
        | "image_file_too_large"
        | "unsupported_image_media_type"
        | "empty_image_file"
        | "failed_to_download_image"
        | "image_file_not_found" => 400,
        _ => 500,
    });
    let body = if code.is_empty() {
        message.clone()
    } else {
        format!("{code} {message}")
    };
    crate::http::stream_event_error(provider, status, &body, &body)
}

impl Decoder for ResponsesDecoder {
    fn begin(&mut self, out: &mut Vec<AssistantMessageEvent>) {
        self.asm.start(out);
    }

    fn on_event(
        &mut self,
        ev: &SseEvent,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> Result<bool, LlmError> {
        let data = ev.data.trim();
        // Some servers (and the SDKs' recordings) end with Chat Completions' sentinel; the
        // terminal event came before it.
        if data.is_empty() || data == "[DONE]" {
            return Ok(false);
        }
        let Obj(parsed) = serde_json::from_str::<Obj<Event>>(data)
            .map_err(|e| self.malformed(format!("invalid JSON event: {e}")))?;
        let Some(parsed) = parsed else {
            return Err(self.malformed("event is not a JSON object"));
        };
        self.on_parsed(&parsed, &ev.event, out)
    }

    fn check_complete(&self) -> Result<(), LlmError> {
        if self.terminal_seen {
            return Ok(());
        }
        Err(LlmError::IncompleteStream {
            provider: self.provider.clone(),
            detail: "no response.completed".to_string(),
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
