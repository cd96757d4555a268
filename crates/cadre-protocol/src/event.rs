//! Agent events, named as Pi names them (`--mode json` prints one per line).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{AssistantMessage, Message, ToolCall, ToolResultMessage};

/// Incremental change to the assistant message being streamed (Pi's `AssistantMessageEvent`).
///
/// Pi's events each carry the message so far as `partial`; here they do not (a provider would
/// copy the message for every delta), and `message_update` adds it when it is serialised, from
/// the message it carries anyway. `start` and `response_id` only change the message: like Pi,
/// the agent sends no `message_update` for them. Pi's `done` and `error` end a provider stream
/// and are not forwarded by Pi's agent either; here the stream's end is the provider's
/// `StreamEvent::Done`/`Failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantMessageEvent {
    Start,
    /// The provider's id of the response arrived (Pi's `responseId`).
    ResponseId {
        #[serde(rename = "responseId")]
        response_id: String,
    },
    TextStart {
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    TextDelta {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        delta: String,
    },
    TextEnd {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        content: String,
    },
    ThinkingStart {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The block's signature so far (Pi starts Anthropic's at `""` and an OpenAI-style
        /// block's at the field name the reasoning arrives in). Not written: Pi's event has it
        /// only in `partial`.
        #[serde(skip)]
        signature: Option<String>,
    },
    ThinkingDelta {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        delta: String,
    },
    ThinkingEnd {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        content: String,
        /// The block's whole signature, when one arrived. Not written, as in `thinking_start`.
        #[serde(skip)]
        signature: Option<String>,
    },
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// Not written: Pi's `toolcall_start` has the call only in `partial`.
        #[serde(skip_serializing, default)]
        id: String,
        #[serde(skip_serializing, default)]
        name: String,
    },
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        delta: String,
    },
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// Written as Pi's content block, with `"type": "toolCall"`.
        #[serde(rename = "toolCall", serialize_with = "tool_call_block")]
        tool_call: ToolCall,
    },
}

/// Events of one agent run. Names and fields follow Pi's `AgentEvent` / `AgentSessionEvent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    AgentStart,
    AgentEnd {
        messages: Vec<Message>,
    },
    TurnStart,
    TurnEnd {
        message: Message,
        /// Written as messages, with `"role": "toolResult"`, as Pi writes them.
        #[serde(rename = "toolResults", serialize_with = "tool_results_with_role")]
        tool_results: Vec<ToolResultMessage>,
    },
    MessageStart {
        message: Message,
    },
    /// Serialised as Pi's: `message` with `"role": "assistant"` (a whole `AgentMessage`), and
    /// the same message as the event's `partial`.
    #[serde(serialize_with = "message_update")]
    MessageUpdate {
        message: Box<AssistantMessage>,
        #[serde(rename = "assistantMessageEvent")]
        assistant_message_event: AssistantMessageEvent,
    },
    MessageEnd {
        message: Message,
    },
    ToolExecutionStart {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        #[serde(rename = "toolName")]
        tool_name: String,
        args: Value,
    },
    ToolExecutionUpdate {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        #[serde(rename = "toolName")]
        tool_name: String,
        args: Value,
        #[serde(rename = "partialResult")]
        partial_result: Value,
    },
    ToolExecutionEnd {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        #[serde(rename = "toolName")]
        tool_name: String,
        result: Value,
        #[serde(rename = "isError")]
        is_error: bool,
    },
    QueueUpdate {
        steering: Vec<String>,
        #[serde(rename = "followUp")]
        follow_up: Vec<String>,
    },
    AutoRetryStart {
        attempt: u32,
        #[serde(rename = "maxAttempts")]
        max_attempts: u32,
        #[serde(rename = "delayMs")]
        delay_ms: u64,
        #[serde(rename = "errorMessage")]
        error_message: String,
    },
    AutoRetryEnd {
        success: bool,
        attempt: u32,
        #[serde(
            rename = "finalError",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        final_error: Option<String>,
    },
    /// Context compaction begins (manual, or automatic near or over the context window).
    CompactionStart {
        reason: CompactionReason,
    },
    /// Context compaction ended. Pi leaves `result` and `errorMessage` out when they are
    /// undefined, so they are omitted here too (and read back when null or absent).
    CompactionEnd {
        reason: CompactionReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<CompactionResult>,
        aborted: bool,
        #[serde(rename = "willRetry")]
        will_retry: bool,
        #[serde(
            rename = "errorMessage",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        error_message: Option<String>,
    },
}

/// Why a compaction ran (Pi's `compaction_start.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionReason {
    /// Asked for (RPC `compact`, `/compact`).
    Manual,
    /// The context estimate passed `contextWindow - reserveTokens`.
    Threshold,
    /// The provider refused the request as too long; the request is retried after it.
    Overflow,
}

/// What a compaction produced: the RPC `compact` result and `compaction_end.result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionResult {
    pub summary: String,
    /// The first entry kept verbatim after the summary.
    pub first_kept_entry_id: String,
    /// The context estimate before compacting.
    pub tokens_before: u64,
    /// Pi's `{readFiles, modifiedFiles}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// An assistant message the way it appears in a message list: with its role tag.
#[derive(Serialize)]
struct TaggedAssistant<'a> {
    role: &'static str,
    #[serde(flatten)]
    message: &'a AssistantMessage,
}

impl<'a> TaggedAssistant<'a> {
    fn new(message: &'a AssistantMessage) -> Self {
        TaggedAssistant {
            role: "assistant",
            message,
        }
    }
}

/// The fields of `message_update` (the tag is added by the enum).
fn message_update<S: serde::Serializer>(
    message: &AssistantMessage,
    event: &AssistantMessageEvent,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct WithPartial<'a> {
        #[serde(flatten)]
        event: &'a AssistantMessageEvent,
        partial: TaggedAssistant<'a>,
    }
    #[derive(Serialize)]
    struct Update<'a> {
        message: TaggedAssistant<'a>,
        #[serde(rename = "assistantMessageEvent")]
        event: WithPartial<'a>,
    }
    Update {
        message: TaggedAssistant::new(message),
        event: WithPartial {
            event,
            partial: TaggedAssistant::new(message),
        },
    }
    .serialize(serializer)
}

/// A tool call as a content block (`"type": "toolCall"`).
fn tool_call_block<S: serde::Serializer>(
    call: &ToolCall,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Block<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(flatten)]
        call: &'a ToolCall,
    }
    Block {
        kind: "toolCall",
        call,
    }
    .serialize(serializer)
}

/// Tool results as messages (`"role": "toolResult"`).
fn tool_results_with_role<S: serde::Serializer>(
    results: &[ToolResultMessage],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Tagged<'a> {
        role: &'static str,
        #[serde(flatten)]
        result: &'a ToolResultMessage,
    }
    serializer.collect_seq(results.iter().map(|result| Tagged {
        role: "toolResult",
        result,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_match_pi() {
        let cases = [
            (AgentEvent::AgentStart, "agent_start"),
            (AgentEvent::TurnStart, "turn_start"),
            (
                AgentEvent::ToolExecutionStart {
                    tool_call_id: "a".into(),
                    tool_name: "read".into(),
                    args: Value::Null,
                },
                "tool_execution_start",
            ),
        ];
        for (ev, name) in cases {
            let v = serde_json::to_value(&ev).unwrap();
            assert_eq!(v["type"], name);
        }
        let update = AgentEvent::MessageUpdate {
            message: Box::new(AssistantMessage::empty("anthropic-messages", "p", "m")),
            assistant_message_event: AssistantMessageEvent::Start,
        };
        let v = serde_json::to_value(&update).unwrap();
        assert_eq!(
            v["message"]["role"], "assistant",
            "Pi's message_update has a role"
        );
        let back: AgentEvent = serde_json::from_value(v).unwrap();
        assert_eq!(back, update);
        let d = AssistantMessageEvent::ToolCallDelta {
            content_index: 1,
            delta: "{".into(),
        };
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["type"], "toolcall_delta");
        assert_eq!(v["contentIndex"], 1);
    }

    #[test]
    fn compaction_events_match_pi() {
        let start = AgentEvent::CompactionStart {
            reason: CompactionReason::Threshold,
        };
        assert_eq!(
            serde_json::to_value(&start).unwrap(),
            serde_json::json!({"type": "compaction_start", "reason": "threshold"})
        );
        let end = AgentEvent::CompactionEnd {
            reason: CompactionReason::Overflow,
            result: Some(CompactionResult {
                summary: "S".into(),
                first_kept_entry_id: "abc12345".into(),
                tokens_before: 150000,
                details: Some(serde_json::json!({"readFiles": [], "modifiedFiles": []})),
            }),
            aborted: false,
            will_retry: true,
            error_message: None,
        };
        let v = serde_json::to_value(&end).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"type": "compaction_end", "reason": "overflow",
                "result": {"summary": "S", "firstKeptEntryId": "abc12345", "tokensBefore": 150000,
                           "details": {"readFiles": [], "modifiedFiles": []}},
                "aborted": false, "willRetry": true})
        );
        assert_eq!(serde_json::from_value::<AgentEvent>(v).unwrap(), end);
        // Pi's aborted end: no result, no error message; `null` reads the same.
        let aborted: AgentEvent = serde_json::from_value(serde_json::json!({
            "type": "compaction_end", "reason": "manual", "result": null,
            "aborted": true, "willRetry": false}))
        .unwrap();
        assert_eq!(
            aborted,
            AgentEvent::CompactionEnd {
                reason: CompactionReason::Manual,
                result: None,
                aborted: true,
                will_retry: false,
                error_message: None,
            }
        );
    }

    #[test]
    fn message_update_carries_the_partial_in_its_event() {
        let mut message = AssistantMessage::empty("anthropic-messages", "p", "m");
        message.content.push(crate::ContentBlock::text("Hel"));
        let update = AgentEvent::MessageUpdate {
            message: Box::new(message),
            assistant_message_event: AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "Hel".into(),
            },
        };
        let v = serde_json::to_value(&update).unwrap();
        assert_eq!(v["type"], "message_update");
        let event = &v["assistantMessageEvent"];
        assert_eq!(event["type"], "text_delta");
        assert_eq!(event["delta"], "Hel");
        assert_eq!(event["partial"], v["message"]);
        assert_eq!(event["partial"]["role"], "assistant");
        assert_eq!(event["partial"]["content"][0]["text"], "Hel");
        let back: AgentEvent = serde_json::from_value(v).unwrap();
        assert_eq!(back, update);
    }

    #[test]
    fn tool_calls_and_results_are_written_as_pi_writes_them() {
        let call = ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: serde_json::json!({"path": "a"}),
        };
        let start = AssistantMessageEvent::ToolCallStart {
            content_index: 0,
            id: "c1".into(),
            name: "read".into(),
        };
        assert_eq!(
            serde_json::to_value(&start).unwrap(),
            serde_json::json!({"type": "toolcall_start", "contentIndex": 0})
        );
        let end = AssistantMessageEvent::ToolCallEnd {
            content_index: 0,
            tool_call: call,
        };
        let v = serde_json::to_value(&end).unwrap();
        assert_eq!(
            v["toolCall"],
            serde_json::json!({"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}})
        );
        let back: AssistantMessageEvent = serde_json::from_value(v).unwrap();
        assert_eq!(back, end);

        let result = ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            content: vec![crate::ContentBlock::text("x")],
            details: None,
            is_error: false,
            timestamp: 1,
        };
        let turn_end = AgentEvent::TurnEnd {
            message: Message::Assistant(AssistantMessage::empty("a", "p", "m")),
            tool_results: vec![result],
        };
        let v = serde_json::to_value(&turn_end).unwrap();
        assert_eq!(v["toolResults"][0]["role"], "toolResult");
        assert_eq!(v["toolResults"][0]["toolCallId"], "c1");
        let back: AgentEvent = serde_json::from_value(v).unwrap();
        assert_eq!(back, turn_end);
    }
}
