//! Turning wire deltas into an [`AssistantMessage`].
//!
//! Both wire formats stream a reply as small deltas: text pieces, thinking pieces (with an
//! Anthropic signature), tool calls whose JSON arguments arrive in fragments, usage and a stop
//! reason. [`MessageAssembler`] accepts those deltas keyed by a [`BlockKey`] the wire parser
//! chooses, emits the provider-neutral [`AssistantMessageEvent`]s, and builds the final message.
//!
//! [`PartialMessage`] is the other direction: it rebuilds the partial message from the events
//! alone, for consumers that only see the event stream (the agent loop's `message_update`). The
//! assembler uses it internally, so the two can never disagree about what the events mean.
//!
//! Tool arguments are parsed once, when the call ends (parsing on every fragment would be
//! quadratic for large `write` calls). Arguments that are not valid JSON are kept as a JSON string
//! so the tool can tell the model what was wrong instead of the call silently vanishing.
//!
//! One message holds at most [`MAX_MESSAGE_BYTES`] of content: a model (or a server) that
//! streams without end would otherwise fill memory, and then the session file and task record
//! it is saved to. Content past the limit is not kept; the stream loop sees
//! [`MessageAssembler::exceeded`] and ends the request.

use std::collections::BTreeMap;

use cadre_protocol::{
    AssistantMessage, AssistantMessageEvent, ContentBlock, StopReason, ToolCall, Usage,
};
use serde_json::Value;

/// The most one assistant message may hold while it streams: its text, thinking (signatures and
/// redacted payloads included), tool-call arguments, ids and names together, and
/// [`BLOCK_COST`] for each block. Far beyond a real reply (64k output tokens are about 256 KiB of
/// text; a `write` of a large file a few MiB), small enough that eight children flooded at once
/// stay within a few hundred MiB.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// What each block counts toward [`MAX_MESSAGE_BYTES`] besides its content, so a stream of
/// empty blocks is bounded too.
pub const BLOCK_COST: usize = 64;

/// Parse streamed tool arguments: empty means no arguments (`{}`), invalid JSON is kept verbatim
/// as a JSON string.
pub fn parse_tool_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

/// A partial assistant message rebuilt from [`AssistantMessageEvent`]s.
///
/// While a tool call streams, its `arguments` stay `{}` and the raw fragments are kept aside
/// (see [`PartialMessage::raw_arguments`]); `toolcall_end` carries the parsed call.
#[derive(Debug, Clone, PartialEq)]
pub struct PartialMessage {
    message: AssistantMessage,
    raw_args: BTreeMap<usize, String>,
}

impl PartialMessage {
    /// Start from an (usually empty) message that carries api, provider, model and timestamp.
    pub fn new(message: AssistantMessage) -> Self {
        PartialMessage {
            message,
            raw_args: BTreeMap::new(),
        }
    }

    pub fn message(&self) -> &AssistantMessage {
        &self.message
    }

    pub fn into_message(self) -> AssistantMessage {
        self.message
    }

    /// Argument text received so far for the tool call at `content_index`, while it streams.
    pub fn raw_arguments(&self, content_index: usize) -> Option<&str> {
        self.raw_args.get(&content_index).map(String::as_str)
    }

    /// Apply one event. Events that do not fit the message (an index far ahead, a delta for a
    /// block of another type) are absorbed without panicking: gaps are padded with empty text
    /// blocks and mismatched deltas are ignored. `start` clears the content (a new attempt).
    pub fn apply(&mut self, ev: &AssistantMessageEvent) {
        use AssistantMessageEvent as E;
        match ev {
            E::Start => {
                self.message.content.clear();
                self.raw_args.clear();
            }
            E::ResponseId { response_id } => {
                self.message.response_id = Some(response_id.clone());
            }
            E::TextStart { content_index } => {
                self.set(*content_index, ContentBlock::text(""));
            }
            E::TextDelta {
                content_index,
                delta,
            } => {
                if let ContentBlock::Text { text } =
                    self.slot(*content_index, || ContentBlock::text(""))
                {
                    text.push_str(delta);
                }
            }
            E::TextEnd {
                content_index,
                content,
            } => self.set(*content_index, ContentBlock::text(content.clone())),
            E::ThinkingStart {
                content_index,
                signature,
            } => {
                self.set(
                    *content_index,
                    ContentBlock::Thinking {
                        thinking: String::new(),
                        signature: signature.clone(),
                        redacted: false,
                    },
                );
            }
            E::ThinkingDelta {
                content_index,
                delta,
            } => {
                if let ContentBlock::Thinking { thinking, .. } =
                    self.slot(*content_index, empty_thinking)
                {
                    thinking.push_str(delta);
                }
            }
            E::ThinkingEnd {
                content_index,
                content,
                signature: end_signature,
            } => match self.slot(*content_index, empty_thinking) {
                ContentBlock::Thinking {
                    thinking,
                    signature,
                    ..
                } => {
                    *thinking = content.clone();
                    if end_signature.is_some() {
                        *signature = end_signature.clone();
                    }
                }
                other => {
                    *other = ContentBlock::Thinking {
                        thinking: content.clone(),
                        signature: end_signature.clone(),
                        redacted: false,
                    }
                }
            },
            E::ToolCallStart {
                content_index,
                id,
                name,
            } => {
                self.set(
                    *content_index,
                    ContentBlock::ToolCall(ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments: Value::Object(serde_json::Map::new()),
                    }),
                );
                self.raw_args.insert(*content_index, String::new());
            }
            E::ToolCallDelta {
                content_index,
                delta,
            } => {
                if matches!(
                    self.message.content.get(*content_index),
                    Some(ContentBlock::ToolCall(_))
                ) {
                    self.raw_args
                        .entry(*content_index)
                        .or_default()
                        .push_str(delta);
                }
            }
            E::ToolCallEnd {
                content_index,
                tool_call,
            } => {
                self.set(*content_index, ContentBlock::ToolCall(tool_call.clone()));
                self.raw_args.remove(content_index);
            }
        }
    }

    /// Replace (or create) the block at `index`.
    fn set(&mut self, index: usize, block: ContentBlock) {
        *self.slot(index, || ContentBlock::text("")) = block;
    }

    /// The block at `index`, creating it with `make` (and padding gaps) when missing.
    fn slot(&mut self, index: usize, make: impl Fn() -> ContentBlock) -> &mut ContentBlock {
        let content = &mut self.message.content;
        while content.len() < index {
            content.push(ContentBlock::text(""));
        }
        if content.len() == index {
            content.push(make());
        }
        &mut content[index]
    }
}

fn empty_thinking() -> ContentBlock {
    ContentBlock::Thinking {
        thinking: String::new(),
        signature: None,
        redacted: false,
    }
}

/// How a wire parser names the block a delta belongs to. Anthropic numbers its blocks
/// (`Indexed`); OpenAI has one implicit text stream, one reasoning stream and tool calls by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockKey {
    Text,
    Thinking,
    Tool(u64),
    Indexed(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Thinking,
    Tool,
}

#[derive(Debug)]
struct OpenBlock {
    key: BlockKey,
    index: usize,
    kind: Kind,
    /// Whether an argument delta went out for this tool call.
    delta_sent: bool,
}

/// Builds an assistant message from wire deltas, emitting events as it goes.
#[derive(Debug)]
pub struct MessageAssembler {
    partial: PartialMessage,
    open: Vec<OpenBlock>,
    /// Thinking signatures by content index, attached when the block ends.
    signatures: BTreeMap<usize, String>,
    started: bool,
    usage: Usage,
    stop_reason: Option<StopReason>,
    generated_ids: u32,
    /// The response id, until the next content event carries it out: an id alone is not
    /// content (see `crate::retry::RequestTimeouts`), so it must not make an event of its own.
    pending_id: Option<String>,
    /// What a thinking block's signature starts as (see [`MessageAssembler::thinking_origin`]).
    thinking_origin: Option<String>,
    /// Bytes counted toward `limit` so far.
    size: usize,
    limit: usize,
    /// Content past the limit arrived (and was dropped).
    over: bool,
}

impl MessageAssembler {
    /// An assembler for a reply of the given api/provider/model.
    pub fn new(api: &str, provider: &str, model: &str) -> Self {
        MessageAssembler {
            partial: PartialMessage::new(AssistantMessage::empty(api, provider, model)),
            open: Vec::new(),
            signatures: BTreeMap::new(),
            started: false,
            usage: Usage::default(),
            stop_reason: None,
            generated_ids: 0,
            pending_id: None,
            thinking_origin: None,
            size: 0,
            limit: MAX_MESSAGE_BYTES,
            over: false,
        }
    }

    /// Keep at most `bytes` of content instead of [`MAX_MESSAGE_BYTES`].
    pub fn set_limit(&mut self, bytes: usize) {
        self.limit = bytes;
    }

    /// `Some(limit)` once content past the limit arrived: it was not kept, and the message is
    /// incomplete, so the request must end.
    pub fn exceeded(&self) -> Option<usize> {
        self.over.then_some(self.limit)
    }

    /// Count `bytes` toward the limit; `false` (and nothing counted) when they do not fit, and
    /// from then on.
    fn admit(&mut self, bytes: usize) -> bool {
        if self.over {
            return false;
        }
        match self.size.checked_add(bytes) {
            Some(size) if size <= self.limit => {
                self.size = size;
                true
            }
            _ => {
                self.over = true;
                false
            }
        }
    }

    /// What the signature of the thinking blocks opened from now on starts as, as Pi's clients
    /// start it: `""` for Anthropic (the signature streams in at the end), the name of the
    /// field the reasoning arrives in for OpenAI-style servers.
    pub fn thinking_origin(&mut self, origin: &str) {
        if self.thinking_origin.as_deref() != Some(origin) {
            self.thinking_origin = Some(origin.to_string());
        }
    }

    /// The provider's id of the response. The first one counts (OpenAI repeats it in every
    /// chunk); it goes out with the next content event, or in the final message.
    pub fn response_id(&mut self, id: &str) {
        if !id.is_empty()
            && self.pending_id.is_none()
            && self.partial.message().response_id.is_none()
        {
            self.pending_id = Some(id.to_string());
        }
    }

    /// Emit `start` (once).
    pub fn start(&mut self, out: &mut Vec<AssistantMessageEvent>) {
        if !self.started {
            self.started = true;
            self.emit(AssistantMessageEvent::Start, out);
        }
    }

    /// The message as far as it has arrived.
    pub fn partial(&self) -> &AssistantMessage {
        self.partial.message()
    }

    pub fn set_usage(&mut self, usage: Usage) {
        self.usage = usage;
    }

    pub fn usage_mut(&mut self) -> &mut Usage {
        &mut self.usage
    }

    pub fn set_stop_reason(&mut self, reason: StopReason) {
        self.stop_reason = Some(reason);
    }

    pub fn stop_reason(&self) -> Option<StopReason> {
        self.stop_reason
    }

    /// Argument text received so far for the open tool call at `content_index`.
    pub fn raw_arguments(&self, content_index: usize) -> Option<&str> {
        self.partial.raw_arguments(content_index)
    }

    /// Append text to the text block named `key`, opening it if needed.
    pub fn text(&mut self, key: BlockKey, delta: &str, out: &mut Vec<AssistantMessageEvent>) {
        if !self.admit(delta.len()) {
            return;
        }
        let index = self.open_block(key, Kind::Text, out);
        if !delta.is_empty() {
            self.emit(
                AssistantMessageEvent::TextDelta {
                    content_index: index,
                    delta: delta.to_string(),
                },
                out,
            );
        }
    }

    /// Append reasoning text to the thinking block named `key`, opening it if needed.
    pub fn thinking(&mut self, key: BlockKey, delta: &str, out: &mut Vec<AssistantMessageEvent>) {
        if !self.admit(delta.len()) {
            return;
        }
        let index = self.open_block(key, Kind::Thinking, out);
        if !delta.is_empty() {
            self.emit(
                AssistantMessageEvent::ThinkingDelta {
                    content_index: index,
                    delta: delta.to_string(),
                },
                out,
            );
        }
    }

    /// Add (a piece of) the signature of the thinking block named `key`.
    pub fn thinking_signature(
        &mut self,
        key: BlockKey,
        signature: &str,
        out: &mut Vec<AssistantMessageEvent>,
    ) {
        if !self.admit(signature.len()) {
            return;
        }
        let index = self.open_block(key, Kind::Thinking, out);
        self.signatures
            .entry(index)
            .or_default()
            .push_str(signature);
    }

    /// A complete redacted thinking block: the opaque payload must be sent back verbatim.
    pub fn redacted_thinking(&mut self, data: &str, out: &mut Vec<AssistantMessageEvent>) {
        if !self.admit(data.len().saturating_add(BLOCK_COST)) {
            return;
        }
        self.start(out);
        let index = self.partial.message().content.len();
        self.emit(
            AssistantMessageEvent::ThinkingStart {
                content_index: index,
                signature: Some(data.to_string()),
            },
            out,
        );
        self.emit(
            AssistantMessageEvent::ThinkingEnd {
                content_index: index,
                content: String::new(),
                signature: Some(data.to_string()),
            },
            out,
        );
        if let Some(ContentBlock::Thinking {
            signature,
            redacted,
            ..
        }) = self.partial.message.content.get_mut(index)
        {
            *signature = Some(data.to_string());
            *redacted = true;
        }
    }

    /// Start a tool call. A missing or empty id is replaced by a generated one. A repeated start
    /// for the open call under `key` is ignored (some servers repeat id and name on every
    /// chunk), unless it carries a different id: then it is a new call reusing the key (some
    /// servers put every call at index 0), and the previous one is closed.
    pub fn tool_start(
        &mut self,
        key: BlockKey,
        id: Option<&str>,
        name: &str,
        out: &mut Vec<AssistantMessageEvent>,
    ) {
        if let Some(index) = self.find(key, Kind::Tool) {
            let new_id = id.filter(|i| !i.is_empty());
            let same = match (new_id, self.partial.message().content.get(index)) {
                (Some(new_id), Some(ContentBlock::ToolCall(open))) => open.id == new_id,
                _ => true,
            };
            if same {
                return;
            }
        }
        self.open_tool(key, id, name, out);
    }

    /// Give the open tool call `key` the id and name its server sent late (after its argument
    /// deltas opened it nameless); empty values leave the current ones.
    pub fn tool_identity(&mut self, key: BlockKey, id: Option<&str>, name: &str) {
        let Some(index) = self.find(key, Kind::Tool) else {
            return;
        };
        if !self.admit(id.map_or(0, str::len).saturating_add(name.len())) {
            return;
        }
        if let Some(ContentBlock::ToolCall(call)) = self.partial.message.content.get_mut(index) {
            if let Some(id) = id.filter(|i| !i.is_empty()) {
                call.id = id.to_string();
            }
            if !name.is_empty() {
                call.name = name.to_string();
            }
        }
    }

    /// Append an argument fragment to the tool call named `key` (opening a nameless call if the
    /// server skipped the start). An empty fragment makes a `toolcall_delta` only as the call's
    /// first, as Pi's clients do for the empty arguments servers send with a call's name; more
    /// would be events without content, which must not keep a stalled stream alive.
    pub fn tool_args(
        &mut self,
        key: BlockKey,
        fragment: &str,
        out: &mut Vec<AssistantMessageEvent>,
    ) {
        if !self.admit(fragment.len()) {
            return;
        }
        let index = match self.find(key, Kind::Tool) {
            Some(i) => i,
            None => self.open_tool(key, None, "", out),
        };
        let first = self
            .open
            .iter_mut()
            .find(|b| b.index == index)
            .is_some_and(|b| !std::mem::replace(&mut b.delta_sent, true));
        if !fragment.is_empty() || first {
            self.emit(
                AssistantMessageEvent::ToolCallDelta {
                    content_index: index,
                    delta: fragment.to_string(),
                },
                out,
            );
        }
    }

    /// Close the block named `key` if it is open.
    pub fn end(&mut self, key: BlockKey, out: &mut Vec<AssistantMessageEvent>) {
        if let Some(pos) = self.open.iter().position(|b| b.key == key) {
            let block = self.open.remove(pos);
            self.close(block, out);
        }
    }

    /// Close every open block, in content order.
    pub fn end_all(&mut self, out: &mut Vec<AssistantMessageEvent>) {
        let mut open = std::mem::take(&mut self.open);
        open.sort_by_key(|b| b.index);
        for block in open {
            self.close(block, out);
        }
    }

    /// Close everything and return the final message with usage and stop reason. A reply that
    /// carries tool calls but says `stop` is reported as `toolUse` (some OpenAI-compatible
    /// servers do that), so the caller runs the calls.
    pub fn finish(mut self, out: &mut Vec<AssistantMessageEvent>) -> AssistantMessage {
        self.start(out);
        self.end_all(out);
        let usage = self.usage;
        let mut reason = self.stop_reason.unwrap_or(StopReason::Stop);
        let mut message = self.partial.into_message();
        if let Some(id) = self.pending_id {
            message.response_id = Some(id);
        }
        if reason == StopReason::Stop && message.tool_calls().next().is_some() {
            reason = StopReason::ToolUse;
        }
        message.usage = usage;
        message.stop_reason = reason;
        message
    }

    /// What arrived before a failure: open blocks are closed (tool arguments parsed as far as
    /// possible), usage kept; the caller sets the stop reason and error message.
    pub fn into_partial(mut self) -> AssistantMessage {
        let mut sink = Vec::new();
        self.end_all(&mut sink);
        let usage = self.usage;
        let mut message = self.partial.into_message();
        message.usage = usage;
        if let Some(id) = self.pending_id {
            message.response_id = Some(id);
        }
        message
    }

    fn find(&self, key: BlockKey, kind: Kind) -> Option<usize> {
        self.open
            .iter()
            .find(|b| b.key == key && b.kind == kind)
            .map(|b| b.index)
    }

    /// The content index of the open block `key` of `kind`; a block under the same key with
    /// another kind is closed first (a protocol slip, not worth failing the reply for).
    fn open_block(
        &mut self,
        key: BlockKey,
        kind: Kind,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> usize {
        if let Some(i) = self.find(key, kind) {
            return i;
        }
        self.end(key, out);
        self.start(out);
        // Counted, not refused: the caller's content was admitted, and the stream ends at the
        // next check anyway.
        self.admit(BLOCK_COST);
        let index = self.partial.message().content.len();
        self.open.push(OpenBlock {
            key,
            index,
            kind,
            delta_sent: false,
        });
        let ev = match kind {
            Kind::Text => AssistantMessageEvent::TextStart {
                content_index: index,
            },
            Kind::Thinking => AssistantMessageEvent::ThinkingStart {
                content_index: index,
                signature: self.thinking_origin.clone(),
            },
            Kind::Tool => AssistantMessageEvent::ToolCallStart {
                content_index: index,
                id: String::new(),
                name: String::new(),
            },
        };
        self.emit(ev, out);
        index
    }

    fn open_tool(
        &mut self,
        key: BlockKey,
        id: Option<&str>,
        name: &str,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> usize {
        self.end(key, out);
        self.start(out);
        self.admit(
            BLOCK_COST
                .saturating_add(id.map_or(0, str::len))
                .saturating_add(name.len()),
        );
        let id = match id {
            Some(id) if !id.is_empty() => id.to_string(),
            _ => {
                self.generated_ids += 1;
                format!("call_{}_{}", self.generated_ids, fastrand::u32(..))
            }
        };
        let index = self.partial.message().content.len();
        self.open.push(OpenBlock {
            key,
            index,
            kind: Kind::Tool,
            delta_sent: false,
        });
        self.emit(
            AssistantMessageEvent::ToolCallStart {
                content_index: index,
                id,
                name: name.to_string(),
            },
            out,
        );
        index
    }

    fn close(&mut self, block: OpenBlock, out: &mut Vec<AssistantMessageEvent>) {
        let index = block.index;
        let Some(current) = self.partial.message().content.get(index).cloned() else {
            return;
        };
        // The end events of text and thinking carry the block as the partial message already
        // holds it, so applying them would only copy the text a second time: they go straight
        // out.
        match (block.kind, current) {
            (Kind::Text, ContentBlock::Text { text }) => {
                out.push(AssistantMessageEvent::TextEnd {
                    content_index: index,
                    content: text,
                });
            }
            (Kind::Thinking, ContentBlock::Thinking { thinking, .. }) => {
                let sig = self.signatures.remove(&index);
                if let Some(sig) = &sig
                    && let Some(ContentBlock::Thinking { signature, .. }) =
                        self.partial.message.content.get_mut(index)
                {
                    *signature = Some(sig.clone());
                }
                out.push(AssistantMessageEvent::ThinkingEnd {
                    content_index: index,
                    content: thinking,
                    signature: sig,
                });
            }
            (Kind::Tool, ContentBlock::ToolCall(call)) => {
                let raw = self.partial.raw_arguments(index).unwrap_or("");
                let tool_call = ToolCall {
                    arguments: parse_tool_arguments(raw),
                    ..call
                };
                self.emit(
                    AssistantMessageEvent::ToolCallEnd {
                        content_index: index,
                        tool_call,
                    },
                    out,
                );
            }
            _ => {}
        }
    }

    fn emit(&mut self, ev: AssistantMessageEvent, out: &mut Vec<AssistantMessageEvent>) {
        // `start` stays first: it opens the message the id belongs to.
        if ev != AssistantMessageEvent::Start
            && let Some(response_id) = self.pending_id.take()
        {
            let id = AssistantMessageEvent::ResponseId { response_id };
            self.partial.apply(&id);
            out.push(id);
        }
        self.partial.apply(&ev);
        out.push(ev);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn asm() -> MessageAssembler {
        MessageAssembler::new("openai-completions", "p", "m")
    }

    /// Rebuilding from the emitted events must give the assembler's own partial message.
    fn replay(events: &[AssistantMessageEvent]) -> AssistantMessage {
        let mut p = PartialMessage::new(AssistantMessage::empty("openai-completions", "p", "m"));
        for e in events {
            p.apply(e);
        }
        p.into_message()
    }

    #[test]
    fn parses_tool_arguments() {
        assert_eq!(parse_tool_arguments(""), json!({}));
        assert_eq!(parse_tool_arguments("  "), json!({}));
        assert_eq!(parse_tool_arguments("{\"a\":1}"), json!({"a":1}));
        assert_eq!(parse_tool_arguments("{\"a\":"), json!("{\"a\":"));
        assert_eq!(parse_tool_arguments("[1]"), json!([1]));
    }

    #[test]
    fn the_response_id_goes_out_with_the_first_content() {
        let mut a = asm();
        let mut out = Vec::new();
        a.start(&mut out);
        a.response_id("resp_1");
        a.response_id("resp_2");
        assert_eq!(
            out,
            vec![AssistantMessageEvent::Start],
            "an id is no content"
        );
        a.text(BlockKey::Text, "Hi", &mut out);
        assert_eq!(
            out[1],
            AssistantMessageEvent::ResponseId {
                response_id: "resp_1".into()
            }
        );
        assert_eq!(a.partial().response_id.as_deref(), Some("resp_1"));
        let msg = a.finish(&mut out);
        assert_eq!(msg.response_id.as_deref(), Some("resp_1"));
        assert_eq!(replay(&out).response_id.as_deref(), Some("resp_1"));

        // A reply without content still records the id.
        let mut b = asm();
        let mut out = Vec::new();
        b.start(&mut out);
        b.response_id("resp_3");
        assert_eq!(b.finish(&mut out).response_id.as_deref(), Some("resp_3"));
        let mut c = asm();
        c.response_id("resp_4");
        assert_eq!(c.into_partial().response_id.as_deref(), Some("resp_4"));
    }

    #[test]
    fn an_empty_argument_fragment_is_a_delta_only_as_the_first() {
        let mut a = asm();
        let mut out = Vec::new();
        a.tool_start(BlockKey::Tool(0), Some("c1"), "read", &mut out);
        a.tool_args(BlockKey::Tool(0), "", &mut out);
        a.tool_args(BlockKey::Tool(0), "", &mut out);
        a.tool_args(BlockKey::Tool(0), "{}", &mut out);
        a.tool_args(BlockKey::Tool(0), "", &mut out);
        let deltas: Vec<&str> = out
            .iter()
            .filter_map(|e| match e {
                AssistantMessageEvent::ToolCallDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, vec!["", "{}"]);
    }

    #[test]
    fn thinking_signatures_travel_in_the_events() {
        let mut a = asm();
        a.thinking_origin("");
        let mut out = Vec::new();
        a.thinking(BlockKey::Indexed(0), "hm", &mut out);
        assert_eq!(
            replay(&out).content[0],
            ContentBlock::Thinking {
                thinking: "hm".into(),
                signature: Some(String::new()),
                redacted: false
            },
            "Pi's Anthropic blocks start with an empty signature"
        );
        a.thinking_signature(BlockKey::Indexed(0), "sig", &mut out);
        a.end(BlockKey::Indexed(0), &mut out);
        let rebuilt = replay(&out);
        assert_eq!(rebuilt.content, a.partial().content);
        assert!(matches!(
            &rebuilt.content[0],
            ContentBlock::Thinking { signature: Some(s), .. } if s == "sig"
        ));
    }

    #[test]
    fn text_and_thinking_blocks() {
        let mut a = asm();
        let mut out = Vec::new();
        a.thinking(BlockKey::Thinking, "hm", &mut out);
        a.thinking(BlockKey::Thinking, "m", &mut out);
        a.thinking_signature(BlockKey::Thinking, "sig", &mut out);
        a.end(BlockKey::Thinking, &mut out);
        a.text(BlockKey::Text, "Hel", &mut out);
        a.text(BlockKey::Text, "lo", &mut out);
        a.set_stop_reason(StopReason::Stop);
        let msg = a.finish(&mut out);
        assert_eq!(
            msg.content,
            vec![
                ContentBlock::Thinking {
                    thinking: "hmm".into(),
                    signature: Some("sig".into()),
                    redacted: false
                },
                ContentBlock::text("Hello"),
            ]
        );
        assert_eq!(msg.stop_reason, StopReason::Stop);
        assert_eq!(out[0], AssistantMessageEvent::Start);
        assert_eq!(
            out.last(),
            Some(&AssistantMessageEvent::TextEnd {
                content_index: 1,
                content: "Hello".into()
            })
        );
        let rebuilt = replay(&out);
        assert_eq!(rebuilt.text(), "Hello");
        assert_eq!(rebuilt.content.len(), 2);
    }

    #[test]
    fn interleaved_tool_calls_keep_their_own_arguments() {
        let mut a = asm();
        let mut out = Vec::new();
        a.tool_start(BlockKey::Tool(0), Some("c1"), "read", &mut out);
        a.tool_start(BlockKey::Tool(1), Some("c2"), "bash", &mut out);
        a.tool_args(BlockKey::Tool(0), "{\"pa", &mut out);
        a.tool_args(BlockKey::Tool(1), "{\"command\":", &mut out);
        a.tool_args(BlockKey::Tool(0), "th\":\"a\"}", &mut out);
        a.tool_args(BlockKey::Tool(1), "\"ls\"}", &mut out);
        // A repeated start (same index) is ignored.
        a.tool_start(BlockKey::Tool(0), Some("c1"), "read", &mut out);
        let msg = a.finish(&mut out);
        let calls: Vec<_> = msg.tool_calls().cloned().collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].id, "c1");
        assert_eq!(calls[0].arguments, json!({"path": "a"}));
        assert_eq!(calls[1].arguments, json!({"command": "ls"}));
        assert_eq!(
            msg.stop_reason,
            StopReason::ToolUse,
            "stop upgraded to toolUse"
        );
        assert_eq!(replay(&out).content, msg.content);
    }

    #[test]
    fn a_new_id_under_the_same_key_is_a_new_call() {
        let mut a = asm();
        let mut out = Vec::new();
        a.tool_start(BlockKey::Tool(0), Some("c1"), "read", &mut out);
        a.tool_args(BlockKey::Tool(0), "{\"path\":\"a\"}", &mut out);
        a.tool_start(BlockKey::Tool(0), Some("c1"), "", &mut out);
        a.tool_start(BlockKey::Tool(0), Some(""), "", &mut out);
        a.tool_start(BlockKey::Tool(0), None, "", &mut out);
        a.tool_start(BlockKey::Tool(0), Some("c2"), "bash", &mut out);
        a.tool_args(BlockKey::Tool(0), "{\"command\":\"ls\"}", &mut out);
        let msg = a.finish(&mut out);
        let calls: Vec<_> = msg.tool_calls().collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].arguments, json!({"path": "a"}));
        assert_eq!(
            (calls[1].id.as_str(), calls[1].name.as_str()),
            ("c2", "bash")
        );
        assert_eq!(calls[1].arguments, json!({"command": "ls"}));
        assert_eq!(replay(&out).content, msg.content);
    }

    #[test]
    fn invalid_tool_arguments_are_kept_as_string() {
        let mut a = asm();
        let mut out = Vec::new();
        a.tool_start(BlockKey::Tool(0), Some("c1"), "write", &mut out);
        a.tool_args(BlockKey::Tool(0), "{\"path\": oops", &mut out);
        let msg = a.finish(&mut out);
        let call = msg.tool_calls().next().unwrap();
        assert_eq!(call.arguments, json!("{\"path\": oops"));
    }

    #[test]
    fn args_without_start_and_missing_ids_get_generated_ids() {
        let mut a = asm();
        let mut out = Vec::new();
        a.tool_args(BlockKey::Tool(3), "{}", &mut out);
        a.tool_start(BlockKey::Tool(4), Some(""), "x", &mut out);
        let msg = a.finish(&mut out);
        let calls: Vec<_> = msg.tool_calls().collect();
        assert_eq!(calls.len(), 2);
        assert!(calls[0].id.starts_with("call_"));
        assert!(calls[1].id.starts_with("call_"));
        assert_ne!(calls[0].id, calls[1].id);
    }

    #[test]
    fn redacted_thinking_is_kept_opaque() {
        let mut a = MessageAssembler::new("anthropic-messages", "p", "m");
        let mut out = Vec::new();
        a.redacted_thinking("blob", &mut out);
        a.text(BlockKey::Indexed(1), "ok", &mut out);
        let msg = a.finish(&mut out);
        assert_eq!(
            msg.content[0],
            ContentBlock::Thinking {
                thinking: String::new(),
                signature: Some("blob".into()),
                redacted: true
            }
        );
    }

    #[test]
    fn kind_change_under_one_key_closes_the_old_block() {
        let mut a = MessageAssembler::new("anthropic-messages", "p", "m");
        let mut out = Vec::new();
        a.text(BlockKey::Indexed(0), "a", &mut out);
        a.thinking(BlockKey::Indexed(0), "b", &mut out);
        let msg = a.finish(&mut out);
        assert_eq!(msg.content.len(), 2);
        assert_eq!(msg.text(), "a");
    }

    #[test]
    fn partial_after_failure_keeps_what_arrived() {
        let mut a = asm();
        let mut out = Vec::new();
        a.text(BlockKey::Text, "half", &mut out);
        a.tool_start(BlockKey::Tool(0), Some("c1"), "read", &mut out);
        a.tool_args(BlockKey::Tool(0), "{\"path\":", &mut out);
        a.usage_mut().input = 5;
        let msg = a.into_partial();
        assert_eq!(msg.text(), "half");
        assert_eq!(msg.usage.input, 5);
        let call = msg.tool_calls().next().unwrap();
        assert_eq!(call.arguments, json!("{\"path\":"));
    }

    #[test]
    fn empty_reply_has_start_and_no_blocks() {
        let mut out = Vec::new();
        let msg = asm().finish(&mut out);
        assert!(msg.content.is_empty());
        assert_eq!(out, vec![AssistantMessageEvent::Start]);
    }

    #[test]
    fn partial_message_tolerates_inconsistent_events() {
        use AssistantMessageEvent as E;
        let mut p = PartialMessage::new(AssistantMessage::empty("a", "p", "m"));
        p.apply(&E::TextDelta {
            content_index: 2,
            delta: "x".into(),
        });
        assert_eq!(p.message().content.len(), 3);
        // A thinking delta aimed at a text block is ignored.
        p.apply(&E::ThinkingDelta {
            content_index: 2,
            delta: "y".into(),
        });
        assert_eq!(p.message().content[2], ContentBlock::text("x"));
        // Tool deltas for a non-tool block are ignored.
        p.apply(&E::ToolCallDelta {
            content_index: 0,
            delta: "z".into(),
        });
        assert_eq!(p.raw_arguments(0), None);
        p.apply(&E::ToolCallStart {
            content_index: 3,
            id: "c".into(),
            name: "n".into(),
        });
        p.apply(&E::ToolCallDelta {
            content_index: 3,
            delta: "{".into(),
        });
        assert_eq!(p.raw_arguments(3), Some("{"));
        p.apply(&E::ThinkingEnd {
            content_index: 1,
            content: "t".into(),
            signature: None,
        });
        assert!(matches!(
            &p.message().content[1],
            ContentBlock::Thinking { thinking, .. } if thinking == "t"
        ));
        p.apply(&E::Start);
        assert!(p.message().content.is_empty());
        assert_eq!(p.raw_arguments(3), None);
    }
}
