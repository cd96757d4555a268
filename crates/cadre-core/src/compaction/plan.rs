//! What a compaction summarises (Pi's `prepareCompaction`), computed on the conversation as the
//! model sees it.
//!
//! A conversation that was compacted before starts with the summary message: the region to
//! cut in starts after it, and its summary is updated rather than replaced (iterative
//! compaction). Everything before the cut is summarised; the cut message and everything after
//! it are kept verbatim.

use cadre_protocol::Message;
use serde_json::Value;

use super::cut::find_cut_point;
use super::estimate::estimate_context;
use super::prompt::FileOps;
use super::summary::parse_summary_message;
use super::{CompactionError, CompactionSettings};

/// A compaction ready to be summarised.
#[derive(Debug, Clone, PartialEq)]
pub struct Preparation {
    /// Index (in the conversation given) of the first message kept verbatim.
    pub first_kept: usize,
    /// The messages the history summary covers (not the previous summary itself).
    pub to_summarize: Vec<Message>,
    /// The start of a turn the cut splits, summarised on its own; empty when no turn is split.
    pub turn_prefix: Vec<Message>,
    /// The context estimate before compacting.
    pub tokens_before: u64,
    /// The summary of the previous compaction, to be updated.
    pub previous_summary: Option<String>,
    /// Files read and changed by everything summarised so far.
    pub file_ops: FileOps,
}

/// Whether `messages` start with a summary and hold nothing newer than it: a conversation just
/// loaded from a file whose last entry is its compaction. (A running agent knows this exactly:
/// it counts the messages added since its own last compaction; timestamps within one
/// millisecond cannot tell.)
pub fn nothing_new_since_summary(messages: &[Message]) -> bool {
    match messages.first().and_then(parse_summary_message) {
        Some((_, at)) => messages[1..].iter().all(|m| timestamp(m) <= at),
        None => false,
    }
}

/// The time (ms) of the summary a conversation starts with, if it starts with one: usage
/// reported up to then is stale.
pub fn compacted_at(messages: &[Message]) -> Option<u64> {
    messages
        .first()
        .and_then(parse_summary_message)
        .map(|(_, t)| t)
}

/// Where the message at `index` is after a compaction that kept the conversation from
/// `first_kept` on and put the summary first; a message that was summarised maps to the first
/// kept one (for an index into the conversation kept across a compaction, e.g. where a run's
/// messages begin).
pub fn reindexed(index: usize, first_kept: usize) -> usize {
    if index >= first_kept {
        index - first_kept + 1
    } else {
        1
    }
}

fn timestamp(message: &Message) -> u64 {
    match message {
        Message::User(m) => m.timestamp,
        Message::Assistant(m) => m.timestamp,
        Message::ToolResult(m) => m.timestamp,
        Message::Custom(m) => m.timestamp,
        Message::BashExecution(m) => m.timestamp,
    }
}

/// Plan a compaction of `messages`. `previous_details` are the `details` of the compaction the
/// conversation's summary came from (its file lists carry over).
pub fn prepare(
    messages: &[Message],
    previous_details: Option<&Value>,
    settings: &CompactionSettings,
) -> Result<Preparation, CompactionError> {
    let previous = messages.first().and_then(parse_summary_message);
    let start = usize::from(previous.is_some());
    let stale_until = previous.map(|(_, t)| t);
    let tokens_before = estimate_context(messages, stale_until).tokens;
    let cut = find_cut_point(messages, start, settings.keep_recent_tokens);
    let history_end = cut.split_turn_start.unwrap_or(cut.first_kept);
    let to_summarize = messages[start..history_end].to_vec();
    let turn_prefix = match cut.split_turn_start {
        Some(turn_start) => messages[turn_start..cut.first_kept].to_vec(),
        None => Vec::new(),
    };
    if to_summarize.is_empty() && turn_prefix.is_empty() {
        return Err(CompactionError::NothingToCompact);
    }
    let mut file_ops = FileOps::from_details(previous_details);
    file_ops.add_calls(&to_summarize);
    file_ops.add_calls(&turn_prefix);
    Ok(Preparation {
        first_kept: cut.first_kept,
        to_summarize,
        turn_prefix,
        tokens_before,
        previous_summary: previous.map(|(s, _)| s.to_string()),
        file_ops,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::summary::summary_message;
    use cadre_protocol::{AssistantMessage, ContentBlock, ToolCall, ToolResultMessage};
    use serde_json::json;

    fn settings(keep: u64) -> CompactionSettings {
        CompactionSettings {
            keep_recent_tokens: keep,
            ..CompactionSettings::default()
        }
    }

    fn user(text: &str, t: u64) -> Message {
        let Message::User(mut u) = Message::user(text) else {
            unreachable!()
        };
        u.timestamp = t;
        Message::User(u)
    }

    fn assistant(text: &str, t: u64) -> Message {
        let mut a = AssistantMessage::empty("api", "p", "m");
        a.content.push(ContentBlock::text(text));
        a.timestamp = t;
        Message::Assistant(a)
    }

    fn call(id: &str, path: &str, t: u64) -> Message {
        let mut a = AssistantMessage::empty("api", "p", "m");
        a.content.push(ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: json!({"path": path}),
        }));
        a.timestamp = t;
        Message::Assistant(a)
    }

    fn result(id: &str, size: usize, t: u64) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text("r".repeat(size))],
            details: None,
            is_error: false,
            timestamp: t,
        })
    }

    #[test]
    fn summarises_what_comes_before_the_kept_turns() {
        let m = vec![
            user(&"a".repeat(400), 1),
            assistant(&"b".repeat(400), 2),
            user(&"c".repeat(400), 3),
            assistant(&"d".repeat(400), 4),
        ];
        let p = prepare(&m, None, &settings(200)).unwrap();
        assert_eq!(p.first_kept, 2);
        assert_eq!(p.to_summarize, m[..2].to_vec());
        assert!(p.turn_prefix.is_empty());
        assert_eq!(p.tokens_before, 400);
        assert_eq!(p.previous_summary, None);
    }

    #[test]
    fn a_split_turn_summarises_its_prefix_apart() {
        let m = vec![
            user("old question", 1),
            assistant("old answer", 2),
            user("read both", 3),
            call("c1", "a.rs", 4),
            result("c1", 4000, 5),
            call("c2", "b.rs", 6),
            result("c2", 40, 7),
        ];
        let p = prepare(&m, None, &settings(1000)).unwrap();
        assert_eq!(
            p.first_kept, 5,
            "kept from the second call, with its result"
        );
        assert_eq!(p.to_summarize, m[..2].to_vec());
        assert_eq!(p.turn_prefix, m[2..5].to_vec());
        // The kept call's file is not in the summarised part's lists.
        assert_eq!(
            p.file_ops.details(),
            json!({"readFiles": ["a.rs"], "modifiedFiles": []})
        );
    }

    #[test]
    fn a_compacted_conversation_updates_its_summary() {
        let m = vec![
            summary_message("FIRST", 10),
            user(&"k".repeat(400), 5),
            assistant(&"k".repeat(400), 6),
            user(&"n".repeat(400), 11),
            assistant(&"n".repeat(400), 12),
        ];
        let details = json!({"readFiles": ["x.rs"], "modifiedFiles": []});
        let p = prepare(&m, Some(&details), &settings(200)).unwrap();
        assert_eq!(p.previous_summary.as_deref(), Some("FIRST"));
        assert_eq!(p.first_kept, 3);
        assert_eq!(
            p.to_summarize,
            m[1..3].to_vec(),
            "not the summary message itself"
        );
        assert_eq!(p.file_ops.details()["readFiles"], json!(["x.rs"]));
    }

    #[test]
    fn indices_follow_the_kept_part() {
        // [s, k0, k1] from [m0, m1, m2, m3] cut at 2: m2 is now at 1, m3 at 2.
        assert_eq!(reindexed(2, 2), 1);
        assert_eq!(reindexed(3, 2), 2);
        // A summarised message maps to the first kept one.
        assert_eq!(reindexed(0, 2), 1);
    }

    #[test]
    fn refuses_when_nothing_would_be_summarised() {
        let small = vec![user("hi", 1), assistant("hello", 2)];
        assert_eq!(
            prepare(&small, None, &settings(20_000)),
            Err(CompactionError::NothingToCompact)
        );
        assert_eq!(
            prepare(&[], None, &settings(1)),
            Err(CompactionError::NothingToCompact)
        );
        // Right after a compaction: only the summary and what it kept, nothing newer.
        let compacted = vec![summary_message("S", 10), user("kept", 5)];
        assert!(nothing_new_since_summary(&compacted));
        assert!(!nothing_new_since_summary(&small));
        let newer = vec![summary_message("S", 10), user("kept", 5), user("new", 11)];
        assert!(!nothing_new_since_summary(&newer));
        assert_eq!(compacted_at(&compacted), Some(10));
        assert_eq!(compacted_at(&small), None);
    }
}
