//! The request of a Responses call: headers, and the body encoded straight from the request
//! (the conversation, system prompt and tool schemas are borrowed, not copied into a JSON tree).

use bytes::Bytes;
use cadre_protocol::{
    AssistantMessage, ContentBlock, Message, StopReason, ThinkingLevel, ToolSpec, UserContent,
};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::client::WireRequest;
use crate::encoded_tools::{EncodedTools, Json};
use crate::error::LlmError;
use crate::model::Model;
use crate::openai::DEFAULT_MAX_OUTPUT;
use crate::provider::CompletionRequest;

/// Build the HTTP request for a Responses call: `POST {baseUrl}/responses`, with the headers
/// and bearer key of the Chat Completions client.
pub fn build_request(req: &CompletionRequest) -> Result<WireRequest, LlmError> {
    let model = &req.model;
    Ok(WireRequest {
        url: format!("{}/responses", model.base_url.trim_end_matches('/')),
        headers: crate::openai::request_headers(model),
        body: build_body(req)?,
    })
}

/// The JSON body of a streamed, stateless Responses request.
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
        let mut body = s.serialize_map(None)?;
        body.serialize_entry("model", &model.id)?;
        body.serialize_entry("input", &Input(req, self.messages))?;
        body.serialize_entry("stream", &true)?;
        // Nothing is kept on the server: each turn carries the whole conversation, reasoning
        // included (encrypted), so no response id has to outlive the process.
        body.serialize_entry("store", &false)?;
        if model.max_tokens > 0 {
            body.serialize_entry(
                "max_output_tokens",
                &model.max_tokens.min(DEFAULT_MAX_OUTPUT),
            )?;
        }
        if let Some(tools) = &self.tools {
            body.serialize_entry("tools", tools)?;
        }
        if let Some(reasoning) = reasoning(model, req.thinking) {
            body.serialize_entry("reasoning", &reasoning)?;
        }
        if model.reasoning {
            // Asked for whenever the model reasons, not only when an effort is sent: with
            // `store: false` a reasoning item without its encrypted content cannot be sent back,
            // and the server reasons by default even when no effort is named.
            body.serialize_entry("include", &["reasoning.encrypted_content"])?;
        }
        body.end()
    }
}

/// The `reasoning` object.
#[derive(Debug, PartialEq, Serialize)]
pub(super) struct Reasoning {
    pub effort: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<&'static str>,
}

/// The `reasoning` object for a level: the effort is
/// [`crate::thinking::resolve_thinking`]'s wire value, so the value recorded with a session is
/// the value sent, with summaries so the reasoning shows. No wire value (thinking off without a
/// mapped value, `compat.supportsReasoningEffort: false`, a model that does not reason) sends no
/// `reasoning` at all: the model's default is the one form no model refuses (Pi sends
/// `effort: "none"` for off, which models before GPT-5.1 reject).
pub(super) fn reasoning(model: &Model, level: ThinkingLevel) -> Option<Reasoning> {
    let effort = crate::thinking::resolve_thinking(model, level).wire_value?;
    // With no reasoning there is nothing to summarize; Pi sends the effort alone then too.
    let summary = (effort != "none").then_some("auto");
    Some(Reasoning { effort, summary })
}

/// Responses function tools. `strict` is sent as `false`: the API's default is `true`, which
/// demands schemas closed with `additionalProperties: false` that tools do not promise.
struct Tools<'a>(&'a [ToolSpec]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tool<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            name: &'a str,
            description: &'a str,
            parameters: &'a Value,
            strict: bool,
        }
        s.collect_seq(self.0.iter().map(|t| Tool {
            kind: "function",
            name: &t.name,
            description: &t.description,
            parameters: &t.parameters,
            strict: false,
        }))
    }
}

/// A message item with plain text content (the system prompt).
#[derive(Serialize)]
struct TextMessage<'a> {
    role: &'a str,
    content: &'a str,
}

/// The conversation as input items, written one by one as they are mapped.
struct Input<'a>(&'a CompletionRequest, &'a [Message]);

impl Serialize for Input<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (req, messages) = (self.0, self.1);
        let model = &req.model;
        let mut out = s.serialize_seq(None)?;
        if !req.system_prompt.is_empty() {
            // As Pi does: a message in the input rather than `instructions`, which is the same
            // to a stateless request.
            let role = if model.reasoning && model.compat.supports_developer_role != Some(false) {
                "developer"
            } else {
                "system"
            };
            out.serialize_element(&TextMessage {
                role,
                content: &req.system_prompt,
            })?;
        }
        // The calls of the last reply still waiting for their output. The API refuses a call
        // without an output and an output without its call, so (as Pi does) a call left
        // unanswered gets a stand-in output before the conversation moves on, and an output
        // whose call is not in the input is left out.
        let mut pending: Vec<&str> = Vec::new();
        for msg in messages {
            match msg {
                Message::User(u) => {
                    unanswered(&mut out, &mut pending)?;
                    user_item(&mut out, &u.content)?;
                }
                Message::Custom(c) => {
                    unanswered(&mut out, &mut pending)?;
                    user_item(&mut out, &c.content)?;
                }
                // Turned into user messages by `convert::for_model` before this runs.
                Message::BashExecution(_) => {}
                Message::Assistant(a) => {
                    if sent(a) {
                        unanswered(&mut out, &mut pending)?;
                        pending.extend(a.tool_calls().map(|c| call_id_of(&c.id)));
                        assistant_items(&mut out, a, model)?;
                    }
                }
                Message::ToolResult(r) => {
                    let id = call_id_of(&r.tool_call_id);
                    if let Some(pos) = pending.iter().position(|p| *p == id) {
                        pending.remove(pos);
                        out.serialize_element(&ToolOutput {
                            kind: "function_call_output",
                            call_id: CallId(id),
                            output: OutputContent(&r.content),
                        })?;
                    }
                }
            }
        }
        unanswered(&mut out, &mut pending)?;
        out.end()
    }
}

/// Pi's stand-in output for each call in `pending`, which is emptied.
fn unanswered<S: SerializeSeq>(out: &mut S, pending: &mut Vec<&str>) -> Result<(), S::Error> {
    #[derive(Serialize)]
    struct StandIn<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        call_id: CallId<'a>,
        output: &'static str,
    }
    for id in pending.drain(..) {
        out.serialize_element(&StandIn {
            kind: "function_call_output",
            call_id: CallId(id),
            output: NO_RESULT,
        })?;
    }
    Ok(())
}

/// The output sent for a call that has none (Pi's words).
pub(super) const NO_RESULT: &str = "No result provided";

/// Whether an earlier reply is sent at all: one that failed or was aborted is left out, as Pi
/// does (a reasoning item without the item that followed it is refused, and a cut call has no
/// output).
fn sent(a: &AssistantMessage) -> bool {
    !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted)
}

/// A user content part.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    InputText {
        text: &'a str,
    },
    InputImage {
        detail: &'static str,
        image_url: DataUrl<'a>,
    },
}

impl<'a> Part<'a> {
    fn of(block: &'a ContentBlock) -> Option<Self> {
        match block {
            ContentBlock::Text { text } => Some(Part::InputText { text }),
            ContentBlock::Image { data, mime_type } => Some(Part::InputImage {
                detail: "auto",
                image_url: DataUrl { mime_type, data },
            }),
            _ => None,
        }
    }
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

#[derive(Serialize)]
struct UserItem<C> {
    role: &'static str,
    content: C,
}

/// A user (or custom) message; one with no text or image parts is left out.
fn user_item<S: SerializeSeq>(out: &mut S, content: &UserContent) -> Result<(), S::Error> {
    match content {
        UserContent::Text(text) => out.serialize_element(&UserItem {
            role: "user",
            content: [Part::InputText { text }],
        }),
        UserContent::Blocks(blocks) => {
            let parts: Vec<Part<'_>> = blocks.iter().filter_map(Part::of).collect();
            if parts.is_empty() {
                return Ok(());
            }
            out.serialize_element(&UserItem {
                role: "user",
                content: parts,
            })
        }
    }
}

/// The items of an earlier reply: reasoning items (same model only), text as output messages,
/// tool calls as `function_call` items.
///
/// The API pairs items of one reply and refuses a pair sent half: a reasoning item needs the
/// item that followed it, so one after the reply's last text or call (a reply cut at its output
/// limit while still reasoning) is left out; and a `function_call` whose `fc_` item id is sent
/// needs the reasoning item that came before it, so the id is left out (the call still pairs
/// with its output by `call_id`) when that reasoning item is not sent — another model's, or one
/// without its encrypted content.
fn assistant_items<S: SerializeSeq>(
    out: &mut S,
    a: &AssistantMessage,
    model: &Model,
) -> Result<(), S::Error> {
    // Reasoning items and function-call item ids are only valid for the model that made them.
    let same_model =
        a.api == model.api.as_str() && a.provider == model.provider && a.model == model.id;
    let followed_until = a.content.iter().rposition(is_output_item);
    // Whether the reasoning item before the current block was sent (only one of this model's
    // can be).
    let mut reasoning_sent = false;
    for (at, block) in a.content.iter().enumerate() {
        match block {
            ContentBlock::Thinking {
                signature,
                redacted,
                ..
            } => {
                let followed = followed_until.is_some_and(|last| at < last);
                let item = signature
                    .as_deref()
                    .filter(|_| same_model && !*redacted && followed)
                    .and_then(reasoning_item);
                if let Some(item) = item {
                    out.serialize_element(item)?;
                }
                reasoning_sent = item.is_some();
            }
            ContentBlock::Text { text } if !text.is_empty() => {
                out.serialize_element(&OutputMessage {
                    kind: "message",
                    role: "assistant",
                    content: [OutputText {
                        kind: "output_text",
                        text,
                    }],
                })?;
            }
            ContentBlock::ToolCall(call) => {
                let (call_id, item_id) = split_call_id(&call.id);
                let paired = reasoning_sent;
                out.serialize_element(&FunctionCall {
                    kind: "function_call",
                    id: item_id.filter(|id| paired && id.starts_with("fc")),
                    call_id: CallId(call_id),
                    name: &call.name,
                    arguments: Arguments(&call.arguments),
                })?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether a block is sent as an item a reasoning item can be followed by.
fn is_output_item(block: &ContentBlock) -> bool {
    match block {
        ContentBlock::Text { text } => !text.is_empty(),
        ContentBlock::ToolCall(_) => true,
        _ => false,
    }
}

/// The reasoning item kept in a thinking block's signature, to send back as it was received.
/// Anything else in a signature (another provider's, a hand-edited session) is left out, and so
/// is an item without `encrypted_content`: with `store: false` the server cannot resolve it.
pub(super) fn reasoning_item(signature: &str) -> Option<&RawValue> {
    let raw: &RawValue = serde_json::from_str(signature).ok()?;
    let item: Value = serde_json::from_str(raw.get()).ok()?;
    let is_reasoning = item.get("type").and_then(Value::as_str) == Some("reasoning");
    let encrypted = item
        .get("encrypted_content")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    (is_reasoning && encrypted).then_some(raw)
}

#[derive(Serialize)]
struct OutputMessage<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    content: [OutputText<'a>; 1],
}

#[derive(Serialize)]
struct OutputText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    call_id: CallId<'a>,
    name: &'a str,
    arguments: Arguments<'a>,
}

#[derive(Serialize)]
struct ToolOutput<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: CallId<'a>,
    output: OutputContent<'a>,
}

/// A tool call id as `(call_id, item_id)`: Responses calls are stored as `call_id|item_id`.
pub(super) fn split_call_id(id: &str) -> (&str, Option<&str>) {
    match id.split_once('|') {
        Some((call, item)) => (call, Some(item)),
        None => (id, None),
    }
}

fn call_id_of(id: &str) -> &str {
    split_call_id(id).0
}

/// A call id as the API takes it: other providers' ids may hold characters it refuses, so
/// anything outside `[A-Za-z0-9_-]` becomes `_` and the id is cut at 64 characters (Pi's
/// normalisation). The same mapping runs on the call and on its result, so they still pair.
struct CallId<'a>(&'a str);

impl Serialize for CallId<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if self.0.len() <= 64 && self.0.chars().all(valid) {
            return s.serialize_str(self.0);
        }
        let mut id: String = self
            .0
            .chars()
            .map(|c| if valid(c) { c } else { '_' })
            .take(64)
            .collect();
        let kept = id.trim_end_matches('_').len();
        id.truncate(kept);
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

/// A tool result's output: its text blocks joined with newlines, or, when it returned images,
/// input parts (text first, then the images). A result that is only images says so in text if
/// the model cannot take them (they were replaced by notes before this runs).
struct OutputContent<'a>(&'a [ContentBlock]);

impl Serialize for OutputContent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let texts = || {
            self.0.iter().filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
        };
        let text = texts().collect::<Vec<_>>().join("\n");
        let has_images = self
            .0
            .iter()
            .any(|b| matches!(b, ContentBlock::Image { .. }));
        if !has_images {
            return s.serialize_str(&text);
        }
        let mut parts = s.serialize_seq(None)?;
        if !text.is_empty() {
            parts.serialize_element(&Part::InputText { text: &text })?;
        }
        for block in self.0 {
            if let (ContentBlock::Image { .. }, Some(part)) = (block, Part::of(block)) {
                parts.serialize_element(&part)?;
            }
        }
        parts.end()
    }
}
