//! Keeping a conversation valid for the next request: every tool call answered.

use std::collections::HashSet;

use cadre_protocol::{ContentBlock, Message, ToolCall, ToolResultMessage, now_millis};

/// An error result for a tool call that did not run.
pub(crate) fn unexecuted_result(call: &ToolCall, reason: &str) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![ContentBlock::text(reason)],
        details: None,
        is_error: true,
        timestamp: now_millis(),
    }
}

/// Reason recorded for calls a loaded history left without a result (a crash or an abort
/// before results were written).
const INTERRUPTED: &str = "Tool call was interrupted before it returned a result.";

/// Give every tool call in `history` a result: after each assistant message, the tool results
/// that directly follow it are checked, and an error result is inserted for each call they do
/// not answer. Returns the repaired history and the results added after its last message
/// (those are worth persisting; earlier gaps are only fixed in memory).
pub fn repair_history(history: Vec<Message>) -> (Vec<Message>, Vec<ToolResultMessage>) {
    let (tagged, added) = repair_tagged(history.into_iter().map(|m| (m, ())).collect());
    (tagged.into_iter().map(|(m, ())| m).collect(), added)
}

/// [`repair_history`] for messages that carry a tag (their session entry id): each message
/// keeps its tag, an inserted result gets `T::default()`.
pub(crate) fn repair_tagged<T: Default>(
    history: Vec<(Message, T)>,
) -> (Vec<(Message, T)>, Vec<ToolResultMessage>) {
    let mut out: Vec<(Message, T)> = Vec::with_capacity(history.len());
    let mut open: Vec<ToolCall> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    let mut iter = history.into_iter().peekable();
    while let Some((message, tag)) = iter.next() {
        if let Message::Assistant(a) = &message {
            open = a.tool_calls().cloned().collect();
            answered.clear();
        } else if let Message::ToolResult(r) = &message {
            answered.insert(r.tool_call_id.clone());
        }
        out.push((message, tag));
        let batch_ends = !matches!(iter.peek(), Some((Message::ToolResult(_), _)));
        if batch_ends && !open.is_empty() {
            let is_last = iter.peek().is_none();
            let missing: Vec<ToolResultMessage> = open
                .iter()
                .filter(|c| !answered.contains(&c.id))
                .map(|c| unexecuted_result(c, INTERRUPTED))
                .collect();
            open.clear();
            let inserted = missing
                .iter()
                .cloned()
                .map(|r| (Message::ToolResult(r), T::default()));
            out.extend(inserted);
            if is_last {
                return (out, missing);
            }
        }
    }
    (out, Vec::new())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_protocol::AssistantMessage;
    use serde_json::json;

    fn assistant(calls: &[&str]) -> Message {
        let mut a = AssistantMessage::empty("api", "p", "m");
        for c in calls {
            a.content.push(ContentBlock::ToolCall(ToolCall {
                id: (*c).into(),
                name: "t".into(),
                arguments: json!({}),
            }));
        }
        Message::Assistant(a)
    }

    fn result(id: &str) -> Message {
        Message::ToolResult(unexecuted_result(
            &ToolCall {
                id: id.into(),
                name: "t".into(),
                arguments: json!({}),
            },
            "ok",
        ))
    }

    fn shape(messages: &[Message]) -> Vec<String> {
        messages
            .iter()
            .map(|m| match m {
                Message::User(_) => "u".into(),
                Message::Assistant(a) => format!("a{}", a.tool_calls().count()),
                Message::ToolResult(r) => format!("r:{}", r.tool_call_id),
                Message::Custom(_) => "c".into(),
                Message::BashExecution(_) => "b".into(),
            })
            .collect()
    }

    #[test]
    fn valid_history_is_unchanged() {
        let h = vec![
            Message::user("q"),
            assistant(&["1", "2"]),
            result("2"),
            result("1"),
            assistant(&[]),
        ];
        let (out, added) = repair_history(h.clone());
        assert_eq!(out, h);
        assert!(added.is_empty());
        assert!(repair_history(Vec::new()).0.is_empty());
    }

    #[test]
    fn missing_results_are_added_after_the_batch() {
        let h = vec![
            Message::user("q"),
            assistant(&["1", "2"]),
            result("1"),
            Message::user("again"),
            assistant(&["3"]),
        ];
        let (out, added) = repair_history(h);
        assert_eq!(shape(&out), vec!["u", "a2", "r:1", "r:2", "u", "a1", "r:3"]);
        assert_eq!(added.len(), 1);
        assert_eq!(added[0].tool_call_id, "3");
        assert!(added[0].is_error);
    }
}
