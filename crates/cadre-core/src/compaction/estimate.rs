//! How full the context is: the last assistant message's reported usage plus a chars/4
//! estimate of everything after it, as Pi estimates it.

use cadre_protocol::{ContentBlock, Message, StopReason, Usage, UserContent};

/// Characters counted for an image in a tool result or custom message (Pi's 1200 tokens).
const IMAGE_CHARS: usize = 4800;

/// The context estimate of a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextEstimate {
    pub tokens: u64,
    /// From the usage the provider reported for the last assistant message counted.
    pub usage_tokens: u64,
    /// Estimated for the messages after it.
    pub trailing_tokens: u64,
    pub last_usage_index: Option<usize>,
}

/// The context size a usage stands for: `totalTokens`, else the sum of its parts.
pub fn context_tokens(usage: &Usage) -> u64 {
    if usage.total_tokens > 0 {
        usage.total_tokens
    } else {
        usage.input + usage.output + usage.cache_read + usage.cache_write
    }
}

/// Length as JavaScript counts it (UTF-16 units), so the estimate is Pi's to the token.
fn js_len(text: &str) -> usize {
    text.encode_utf16().count()
}

fn user_chars(content: &UserContent, images: bool) -> usize {
    match content {
        UserContent::Text(t) => js_len(t),
        UserContent::Blocks(blocks) => block_chars(blocks, images),
    }
}

fn block_chars(blocks: &[ContentBlock], images: bool) -> usize {
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => js_len(text),
            ContentBlock::Image { .. } if images => IMAGE_CHARS,
            _ => 0,
        })
        .sum()
}

/// Estimated tokens of one message: characters / 4, rounded up (conservative: it
/// overestimates). Images count in tool results and custom messages, not in user messages,
/// as in Pi.
pub fn estimate_tokens(message: &Message) -> u64 {
    let chars = match message {
        Message::User(u) => user_chars(&u.content, false),
        Message::Custom(c) => user_chars(&c.content, true),
        Message::ToolResult(r) => block_chars(&r.content, true),
        Message::BashExecution(b) => js_len(&b.command) + js_len(&b.output),
        Message::Assistant(a) => a
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text } => js_len(text),
                ContentBlock::Thinking { thinking, .. } => js_len(thinking),
                ContentBlock::ToolCall(call) => {
                    js_len(&call.name)
                        + serde_json::to_string(&call.arguments).map_or(0, |s| js_len(&s))
                }
                ContentBlock::Image { .. } => 0,
            })
            .sum(),
    };
    (chars as u64).div_ceil(4)
}

/// The usage of an assistant message that can stand for the context it was answered with:
/// not a failed or aborted reply (no valid usage), not one answered before `stale_until`
/// (a message kept by a compaction reports the larger context before it), and not an empty
/// usage (a provider that reports none would make the context look empty).
fn usable_usage(message: &Message, stale_until: Option<u64>) -> Option<u64> {
    let Message::Assistant(a) = message else {
        return None;
    };
    if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
        return None;
    }
    if stale_until.is_some_and(|t| a.timestamp <= t) {
        return None;
    }
    Some(context_tokens(&a.usage)).filter(|t| *t > 0)
}

/// Estimate the context of `messages`: the last usable usage plus the estimate of the messages
/// after it, or the estimate of every message when no usage can be used. `stale_until` is the
/// time (ms) of the last compaction: usage from replies up to then is not used.
pub fn estimate_context(messages: &[Message], stale_until: Option<u64>) -> ContextEstimate {
    let found = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| usable_usage(m, stale_until).map(|t| (i, t)));
    let (start, usage_tokens, last_usage_index) = match found {
        Some((i, tokens)) => (i + 1, tokens, Some(i)),
        None => (0, 0, None),
    };
    let trailing_tokens = messages[start..].iter().map(estimate_tokens).sum();
    ContextEstimate {
        tokens: usage_tokens + trailing_tokens,
        usage_tokens,
        trailing_tokens,
        last_usage_index,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cadre_protocol::{AssistantMessage, ToolCall, ToolResultMessage, UserMessage};
    use serde_json::json;

    fn assistant(text: &str, total: u64, stop: StopReason, timestamp: u64) -> Message {
        let mut a = AssistantMessage::empty("api", "p", "m");
        a.content.push(ContentBlock::text(text));
        a.usage.total_tokens = total;
        a.stop_reason = stop;
        a.timestamp = timestamp;
        Message::Assistant(a)
    }

    fn result(text: &str) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: "c".into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text(text)],
            details: None,
            is_error: false,
            timestamp: 0,
        })
    }

    #[test]
    fn chars_over_four_rounded_up_per_message() {
        assert_eq!(estimate_tokens(&Message::user("abcde")), 2);
        assert_eq!(estimate_tokens(&Message::user("")), 0);
        // UTF-16 units, as JavaScript counts: one astral character is two.
        assert_eq!(estimate_tokens(&Message::user("😀😀")), 1);
        let mut a = AssistantMessage::empty("api", "p", "m");
        a.content.push(ContentBlock::Thinking {
            thinking: "hmm".into(),
            signature: Some("ignored signature".into()),
            redacted: false,
        });
        a.content.push(ContentBlock::ToolCall(ToolCall {
            id: "id-not-counted".into(),
            name: "read".into(),
            arguments: json!({"path": "a"}),
        }));
        // 3 + 4 + len(`{"path":"a"}`) = 19 chars.
        assert_eq!(estimate_tokens(&Message::Assistant(a)), 5);
        let image = ContentBlock::Image {
            data: "x".repeat(100_000),
            mime_type: "image/png".into(),
        };
        let Message::ToolResult(mut r) = result("ab") else {
            unreachable!()
        };
        r.content.push(image.clone());
        assert_eq!(estimate_tokens(&Message::ToolResult(r)), 1201);
        let user_with_image = Message::User(UserMessage {
            content: UserContent::Blocks(vec![ContentBlock::text("abcd"), image]),
            timestamp: 0,
        });
        assert_eq!(estimate_tokens(&user_with_image), 1);
    }

    #[test]
    fn last_usage_plus_trailing_estimate() {
        let messages = vec![
            Message::user("q"),
            assistant("a", 1000, StopReason::ToolUse, 10),
            result(&"x".repeat(40)),
        ];
        let e = estimate_context(&messages, None);
        assert_eq!(e.last_usage_index, Some(1));
        assert_eq!(
            (e.usage_tokens, e.trailing_tokens, e.tokens),
            (1000, 10, 1010)
        );
    }

    #[test]
    fn failed_stale_and_empty_usage_is_not_used() {
        let messages = vec![
            Message::user("abcd"),
            assistant("abcd", 900, StopReason::Stop, 10),
            assistant("abcd", 0, StopReason::Stop, 30),
            assistant("abcd", 5000, StopReason::Error, 40),
        ];
        // The reply with an empty usage and the failed one are skipped: the one at index 1 counts.
        let e = estimate_context(&messages, None);
        assert_eq!((e.last_usage_index, e.tokens), (Some(1), 902));
        // Answered before a compaction at t=20: nothing usable, everything is estimated.
        let e = estimate_context(&messages, Some(20));
        assert_eq!((e.last_usage_index, e.tokens), (None, 4));
    }
}
