//! Agent events, named as Pi names them (`--mode json` prints one per line).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{AssistantMessage, Message, ToolCall, ToolResultMessage};

/// Incremental change to the assistant message being streamed (Pi's `AssistantMessageEvent`,
/// without the `partial` copy: `message_update` already carries the partial message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantMessageEvent {
    Start,
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
    },
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        #[serde(rename = "contentIndex")]
        content_index: usize,
        id: String,
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
        #[serde(rename = "toolCall")]
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
        #[serde(rename = "toolResults")]
        tool_results: Vec<ToolResultMessage>,
    },
    MessageStart {
        message: Message,
    },
    MessageUpdate {
        /// Serialised with `"role": "assistant"`, as Pi's `message_update` carries a whole
        /// `AgentMessage`.
        #[serde(serialize_with = "assistant_with_role")]
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

/// Serialise an assistant message the way it appears in a message list: with its role tag.
fn assistant_with_role<S: serde::Serializer>(
    message: &AssistantMessage,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Tagged<'a> {
        role: &'static str,
        #[serde(flatten)]
        message: &'a AssistantMessage,
    }
    Tagged {
        role: "assistant",
        message,
    }
    .serialize(serializer)
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
}
