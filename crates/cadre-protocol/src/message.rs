//! Conversation messages in Pi's shape (`role`-tagged, camelCase fields).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Milliseconds since the Unix epoch, the timestamp unit of Pi messages.
pub fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// One content block of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    Thinking {
        thinking: String,
        /// Provider signature needed to send the block back (Anthropic), or the OpenAI
        /// field name the reasoning arrived in.
        #[serde(
            rename = "thinkingSignature",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        signature: Option<String>,
        /// Anthropic `redacted_thinking`: the opaque payload lives in `signature`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
    },
    ToolCall(ToolCall),
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// Parsed JSON arguments. Arguments that were not valid JSON are kept as a string so the
    /// tool can report the problem to the model instead of the call vanishing.
    pub arguments: Value,
}

/// User message content: Pi allows a plain string or a list of text/image blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

impl UserContent {
    /// All text of the content, blocks joined by newlines.
    pub fn to_text(&self) -> String {
        match self {
            UserContent::Text(t) => t.clone(),
            UserContent::Blocks(blocks) => join_text(blocks),
        }
    }
}

/// Concatenate the text blocks of a block list with newlines.
pub fn join_text(blocks: &[ContentBlock]) -> String {
    let mut out = String::new();
    for b in blocks {
        if let ContentBlock::Text { text } = b {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(text);
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// Written as blocks, as Pi writes every user message it makes (in events and session
    /// files); a plain string (Pi's other form) is read too.
    #[serde(serialize_with = "content_as_blocks")]
    pub content: UserContent,
    #[serde(default)]
    pub timestamp: u64,
}

fn content_as_blocks<S: serde::Serializer>(
    content: &UserContent,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match content {
        UserContent::Text(text) => serializer.collect_seq([ContentBlock::text(text.as_str())]),
        UserContent::Blocks(blocks) => blocks.serialize(serializer),
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    #[default]
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UsageCost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total: f64,
}

/// Token usage and cost of one assistant message (or a sum of several).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    pub cost: UsageCost,
}

impl Usage {
    /// Input, output and cache tokens summed; counts come from a server, so the sum saturates
    /// rather than overflows.
    pub fn token_sum(&self) -> u64 {
        [self.output, self.cache_read, self.cache_write]
            .into_iter()
            .fold(self.input, u64::saturating_add)
    }

    /// Add another usage into this one (token counts and costs).
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.cost.input += other.cost.input;
        self.cost.output += other.cost.output;
        self.cost.cache_read += other.cost.cache_read;
        self.cost.cache_write += other.cost.cache_write;
        self.cost.total += other.cost.total;
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub content: Vec<ContentBlock>,
    #[serde(default)]
    pub api: String,
    #[serde(default)]
    pub provider: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub usage: Usage,
    #[serde(default)]
    pub stop_reason: StopReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(default)]
    pub timestamp: u64,
    /// The provider's id of the response (Anthropic's message id, OpenAI's completion id), as
    /// Pi records it; absent when no response arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
}

impl AssistantMessage {
    /// An empty message for the given model, to be filled while streaming.
    pub fn empty(api: &str, provider: &str, model: &str) -> Self {
        AssistantMessage {
            content: Vec::new(),
            api: api.to_string(),
            provider: provider.to_string(),
            model: model.to_string(),
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            error_message: None,
            timestamp: now_millis(),
            response_id: None,
        }
    }

    /// The tool calls of this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolCall(tc) => Some(tc),
            _ => None,
        })
    }

    /// All text blocks joined with newlines (thinking excluded).
    pub fn text(&self) -> String {
        join_text(&self.content)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default)]
    pub is_error: bool,
    #[serde(default)]
    pub timestamp: u64,
}

/// A message injected by the runtime (Pi's `custom` role); it takes part in the model context
/// as a user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessage {
    pub custom_type: String,
    pub content: UserContent,
    #[serde(default)]
    pub display: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default)]
    pub timestamp: u64,
}

/// Any message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
    Custom(CustomMessage),
    /// A command the user ran (Pi's `bashExecution`).
    BashExecution(crate::bash_execution::BashExecutionMessage),
}

impl Message {
    /// A user message of one text block, as Pi writes a prompt (in events and session files).
    pub fn user(text: impl Into<String>) -> Self {
        Message::User(UserMessage {
            content: UserContent::Blocks(vec![ContentBlock::text(text)]),
            timestamp: now_millis(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn assistant_message_round_trips_in_pi_shape() {
        let v = json!({
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "Hi"},
                {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}}
            ],
            "api": "anthropic-messages", "provider": "anthropic", "model": "m",
            "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
                      "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}},
            "stopReason": "toolUse", "timestamp": 5
        });
        let m: Message = serde_json::from_value(v.clone()).unwrap();
        let Message::Assistant(a) = &m else {
            panic!("not assistant")
        };
        assert_eq!(a.stop_reason, StopReason::ToolUse);
        assert_eq!(a.tool_calls().count(), 1);
        assert_eq!(a.text(), "Hi");
        assert_eq!(serde_json::to_value(&m).unwrap(), v);
    }

    #[test]
    fn user_content_accepts_string_or_blocks() {
        let a: Message =
            serde_json::from_value(json!({"role":"user","content":"x","timestamp":1})).unwrap();
        let b: Message = serde_json::from_value(
            json!({"role":"user","content":[{"type":"text","text":"x"}],"timestamp":1}),
        )
        .unwrap();
        for m in [a, b] {
            let v = serde_json::to_value(&m).unwrap();
            assert_eq!(
                v["content"],
                json!([{"type": "text", "text": "x"}]),
                "written as blocks"
            );
            let Message::User(u) = m else { panic!() };
            assert_eq!(u.content.to_text(), "x");
        }
    }

    #[test]
    fn a_prompt_is_one_text_block() {
        let v = serde_json::to_value(Message::user("hi")).unwrap();
        assert_eq!(v["role"], "user");
        assert_eq!(v["content"], json!([{"type": "text", "text": "hi"}]));
    }

    #[test]
    fn response_id_is_written_only_when_known() {
        let mut a = AssistantMessage::empty("anthropic-messages", "p", "m");
        let v = serde_json::to_value(Message::Assistant(a.clone())).unwrap();
        assert!(v.get("responseId").is_none(), "{v}");
        a.response_id = Some("msg_1".into());
        let v = serde_json::to_value(Message::Assistant(a)).unwrap();
        assert_eq!(v["responseId"], "msg_1");
        let back: Message = serde_json::from_value(v).unwrap();
        let Message::Assistant(back) = back else {
            panic!("not assistant")
        };
        assert_eq!(back.response_id.as_deref(), Some("msg_1"));
    }

    #[test]
    fn tool_result_uses_camel_case() {
        let m = Message::ToolResult(ToolResultMessage {
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            content: vec![ContentBlock::text("out")],
            details: None,
            is_error: true,
            timestamp: 0,
        });
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v["role"], "toolResult");
        assert_eq!(v["toolCallId"], "c");
        assert_eq!(v["isError"], true);
    }
}
