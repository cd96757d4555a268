//! Where the kept part of a conversation starts (Pi's `findCutPoint`).
//!
//! Walking back from the newest message, estimated sizes are added up until they reach
//! `keepRecentTokens`; the cut is the first valid cut point at or after that message. A valid
//! cut point is a user, custom or assistant message, never a tool result: a tool result must
//! follow its call, and cutting at an assistant message keeps its results (they come after it).
//! A cut at an assistant message splits its turn: the turn's start (its user message) and what
//! came before the cut are summarised separately, as the "turn prefix".

use cadre_protocol::Message;

use super::estimate::estimate_tokens;

/// The cut in a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutPoint {
    /// Index of the first message kept verbatim.
    pub first_kept: usize,
    /// When the cut splits a turn: the index of the user (or custom) message that started it.
    pub split_turn_start: Option<usize>,
}

fn is_cut_point(message: &Message) -> bool {
    !matches!(message, Message::ToolResult(_))
}

/// A command the user ran starts a turn like a prompt, as in Pi.
fn starts_turn(message: &Message) -> bool {
    matches!(
        message,
        Message::User(_) | Message::Custom(_) | Message::BashExecution(_)
    )
}

/// The cut in `messages[start..]` that keeps about `keep_recent_tokens` of the newest messages.
/// With no valid cut point, or when everything fits, the cut is at the first cut point
/// (nothing is summarised).
pub fn find_cut_point(messages: &[Message], start: usize, keep_recent_tokens: u64) -> CutPoint {
    let region = messages.get(start..).unwrap_or_default();
    let cut_points: Vec<usize> = region
        .iter()
        .enumerate()
        .filter(|(_, m)| is_cut_point(m))
        .map(|(i, _)| start + i)
        .collect();
    let Some(&first_point) = cut_points.first() else {
        return CutPoint {
            first_kept: start,
            split_turn_start: None,
        };
    };
    let mut cut = first_point;
    let mut accumulated = 0u64;
    for i in (start..messages.len()).rev() {
        accumulated += estimate_tokens(&messages[i]);
        if accumulated >= keep_recent_tokens {
            if let Some(&c) = cut_points.iter().find(|&&c| c >= i) {
                cut = c;
            }
            break;
        }
    }
    let split_turn_start = match &messages[cut] {
        Message::Assistant(_) => (start..cut).rev().find(|&j| starts_turn(&messages[j])),
        _ => None,
    };
    CutPoint {
        first_kept: cut,
        split_turn_start,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cadre_protocol::{AssistantMessage, ContentBlock, ToolCall, ToolResultMessage};
    use serde_json::json;

    fn user(text: &str) -> Message {
        Message::user(text)
    }

    fn text(t: &str) -> Message {
        let mut a = AssistantMessage::empty("api", "p", "m");
        a.content.push(ContentBlock::text(t));
        Message::Assistant(a)
    }

    fn call(id: &str) -> Message {
        let mut a = AssistantMessage::empty("api", "p", "m");
        a.content.push(ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: json!({}),
        }));
        Message::Assistant(a)
    }

    fn result(id: &str, size: usize) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text("x".repeat(size))],
            details: None,
            is_error: false,
            timestamp: 0,
        })
    }

    #[test]
    fn keeps_the_newest_turns_by_estimate() {
        // 100 tokens per message.
        let m = vec![
            user(&"a".repeat(400)),
            text(&"b".repeat(400)),
            user(&"c".repeat(400)),
            text(&"d".repeat(400)),
        ];
        let cut = find_cut_point(&m, 0, 200);
        assert_eq!(cut.first_kept, 2);
        assert_eq!(cut.split_turn_start, None);
        // Everything fits: the cut is at the first message, nothing is summarised.
        assert_eq!(find_cut_point(&m, 0, 10_000).first_kept, 0);
        // The region starts after a previous summary.
        assert_eq!(find_cut_point(&m, 1, 10_000).first_kept, 1);
    }

    #[test]
    fn never_cuts_between_a_call_and_its_result() {
        // The budget is reached on the big tool result: the cut moves forward to the next cut
        // point, never onto the result.
        let m = vec![
            user("q"),
            call("c1"),
            result("c1", 4000),
            call("c2"),
            result("c2", 40),
        ];
        let cut = find_cut_point(&m, 0, 1000);
        assert_eq!(cut.first_kept, 3);
        assert!(matches!(m[cut.first_kept], Message::Assistant(_)));
        // The cut at the assistant message splits the turn that `q` started.
        assert_eq!(cut.split_turn_start, Some(0));
    }

    #[test]
    fn a_budget_reached_on_the_last_result_keeps_everything() {
        // No cut point at or after the last result: Pi keeps from the first cut point.
        let m = vec![user("q"), call("c1"), result("c1", 40_000)];
        assert_eq!(find_cut_point(&m, 0, 100).first_kept, 0);
    }

    #[test]
    fn only_tool_results_means_no_cut_point() {
        let m = vec![result("c1", 10), result("c2", 10)];
        assert_eq!(
            find_cut_point(&m, 0, 1),
            CutPoint {
                first_kept: 0,
                split_turn_start: None
            }
        );
    }

    #[test]
    fn a_split_turn_without_a_user_message_is_not_split() {
        let m = vec![call("c1"), result("c1", 4000), call("c2"), result("c2", 4)];
        let cut = find_cut_point(&m, 0, 100);
        assert_eq!(cut.first_kept, 2);
        assert_eq!(cut.split_turn_start, None);
    }
}
