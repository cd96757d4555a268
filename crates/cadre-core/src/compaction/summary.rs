//! The compaction summary as the model sees it: Pi's `compactionSummary` message, which Pi
//! sends as a user message wrapped in a fixed prefix and suffix. cadre's history holds it in
//! that sent form, so a summary is recognised by its wrapper.

use cadre_protocol::{Message, UserContent, UserMessage};

/// Pi's `COMPACTION_SUMMARY_PREFIX`.
pub const COMPACTION_SUMMARY_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// Pi's `COMPACTION_SUMMARY_SUFFIX`.
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";

/// The user message a summary is sent as, dated `timestamp` (ms).
pub fn summary_message(summary: &str, timestamp: u64) -> Message {
    Message::User(UserMessage {
        content: UserContent::Text(format!(
            "{COMPACTION_SUMMARY_PREFIX}{summary}{COMPACTION_SUMMARY_SUFFIX}"
        )),
        timestamp,
    })
}

/// The summary inside a summary message, and the message's time; `None` for any other message.
pub fn parse_summary_message(message: &Message) -> Option<(&str, u64)> {
    let Message::User(UserMessage {
        content: UserContent::Text(text),
        timestamp,
    }) = message
    else {
        return None;
    };
    let summary = text
        .strip_prefix(COMPACTION_SUMMARY_PREFIX)?
        .strip_suffix(COMPACTION_SUMMARY_SUFFIX)?;
    Some((summary, *timestamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_messages_round_trip_and_others_are_not_summaries() {
        let m = summary_message("## Goal\nX", 7);
        assert_eq!(parse_summary_message(&m), Some(("## Goal\nX", 7)));
        assert_eq!(parse_summary_message(&Message::user("hello")), None);
        let unterminated = Message::user(format!("{COMPACTION_SUMMARY_PREFIX}X"));
        assert_eq!(parse_summary_message(&unterminated), None);
    }
}
