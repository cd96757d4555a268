//! Removing known secrets from text before it is kept or shown (S5).
//!
//! The provider keys a process resolved are registered once ([`set_secrets`]); every message
//! that is recorded (history, session file, task output) and every tool result passes through
//! [`redact_message`], and front ends pass what they print through [`redact_str`]. A key can
//! still reach text cadre records without cadre putting it there — a provider or proxy that
//! echoes it, a file the model reads that holds it — and must not be stored or shown.
//!
//! Thinking blocks are left alone in memory: they are signed by the provider, and a changed
//! one would be refused when sent back. [`redacted_for_storage`] also cleans them for files.

use std::borrow::Cow;
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::Value;

use crate::message::{AssistantMessage, ContentBlock, Message, UserContent};

/// What stands in for a secret.
pub const REDACTED: &str = "[redacted]";

/// Shorter values are not treated as secrets: too likely to be ordinary words.
const MIN_SECRET_LEN: usize = 8;

static SECRETS: RwLock<Option<Arc<[String]>>> = RwLock::new(None);

/// Register the secrets of this process (normally the resolved provider keys), added to those
/// registered before: a session that switches to another provider's model registers its key
/// too. Values shorter than 8 bytes are ignored.
pub fn set_secrets(secrets: impl IntoIterator<Item = String>) {
    let mut guard = SECRETS.write().unwrap_or_else(PoisonError::into_inner);
    let mut list: Vec<String> = guard.as_deref().unwrap_or_default().to_vec();
    list.extend(secrets.into_iter().filter(|s| s.len() >= MIN_SECRET_LEN));
    // Longest first, so a secret that contains another is replaced whole.
    list.sort_by_key(|s| std::cmp::Reverse(s.len()));
    list.dedup();
    *guard = Some(list.into());
}

fn secrets() -> Arc<[String]> {
    SECRETS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .unwrap_or_else(|| Arc::from(Vec::new()))
}

/// `text` with every registered secret replaced by [`REDACTED`]; borrowed when none occurs.
pub fn redact_str(text: &str) -> Cow<'_, str> {
    redact_with(text, &secrets())
}

fn redact_with<'a>(text: &'a str, secrets: &[String]) -> Cow<'a, str> {
    let mut out: Cow<'a, str> = Cow::Borrowed(text);
    for secret in secrets {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
        }
    }
    out
}

/// Streamed text, shown as it arrives without ever showing a registered secret: the text is
/// redacted as it grows, and a tail that could be the start of a secret is held back until
/// the next piece shows whether it is one.
#[derive(Debug, Default, Clone)]
pub struct StreamRedactor {
    held: String,
}

impl StreamRedactor {
    /// The part of `delta` (with what was held before) that is safe to show now.
    pub fn push(&mut self, delta: &str) -> String {
        let mut text = std::mem::take(&mut self.held);
        text.push_str(delta);
        let secrets = secrets();
        let mut text = match redact_with(&text, &secrets) {
            Cow::Borrowed(_) => text,
            Cow::Owned(clean) => clean,
        };
        let hold = secret_start_at_end(&text, &secrets);
        self.held = text.split_off(text.len() - hold);
        text
    }

    /// The end of the stream: what was held back (it was not a secret).
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

/// The length of the longest end of `text` that is the start (not the whole) of a secret.
fn secret_start_at_end(text: &str, secrets: &[String]) -> usize {
    secrets
        .iter()
        .filter_map(|secret| {
            (1..secret.len().min(text.len() + 1))
                .rev()
                .filter(|&k| secret.is_char_boundary(k))
                .find(|&k| text.ends_with(&secret[..k]))
        })
        .max()
        .unwrap_or(0)
}

fn redact_string(s: &mut String, secrets: &[String]) -> bool {
    if let Cow::Owned(clean) = redact_with(s, secrets) {
        *s = clean;
        true
    } else {
        false
    }
}

fn redact_value(v: &mut Value, secrets: &[String]) -> bool {
    match v {
        Value::String(s) => redact_string(s, secrets),
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |any, item| redact_value(item, secrets) | any),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |any, item| redact_value(item, secrets) | any),
        _ => false,
    }
}

fn redact_blocks(blocks: &mut [ContentBlock], secrets: &[String], thinking: bool) -> bool {
    let mut changed = false;
    for block in blocks {
        changed |= match block {
            ContentBlock::Text { text } => redact_string(text, secrets),
            ContentBlock::Thinking { thinking: t, .. } if thinking => redact_string(t, secrets),
            ContentBlock::ToolCall(call) => {
                // Ids and names come from the provider too.
                let id = redact_string(&mut call.id, secrets);
                let name = redact_string(&mut call.name, secrets);
                redact_value(&mut call.arguments, secrets) | id | name
            }
            _ => false,
        };
    }
    changed
}

fn redact_user(content: &mut UserContent, secrets: &[String]) -> bool {
    match content {
        UserContent::Text(text) => redact_string(text, secrets),
        UserContent::Blocks(blocks) => redact_blocks(blocks, secrets, true),
    }
}

fn redact_in(message: &mut Message, secrets: &[String], thinking: bool) -> bool {
    match message {
        Message::User(m) => redact_user(&mut m.content, secrets),
        Message::Assistant(m) => {
            let mut changed = redact_blocks(&mut m.content, secrets, thinking);
            if let Some(e) = &mut m.error_message {
                changed |= redact_string(e, secrets);
            }
            changed
        }
        Message::ToolResult(m) => {
            let mut changed = redact_blocks(&mut m.content, secrets, true);
            changed |= redact_string(&mut m.tool_call_id, secrets);
            changed |= redact_string(&mut m.tool_name, secrets);
            if let Some(d) = &mut m.details {
                changed |= redact_value(d, secrets);
            }
            changed
        }
        Message::Custom(m) => {
            let mut changed = redact_user(&mut m.content, secrets);
            if let Some(d) = &mut m.details {
                changed |= redact_value(d, secrets);
            }
            changed
        }
        Message::BashExecution(m) => {
            let mut changed = redact_string(&mut m.command, secrets);
            changed |= redact_string(&mut m.output, secrets);
            if let Some(p) = &mut m.full_output_path {
                changed |= redact_string(p, secrets);
            }
            changed
        }
    }
}

/// Redact `message` in place, thinking blocks excepted (they are signed). True if anything
/// changed.
pub fn redact_message(message: &mut Message) -> bool {
    let secrets = &*secrets();
    !secrets.is_empty() && redact_in(message, secrets, false)
}

/// Redact an assistant message in place, thinking blocks excepted.
pub fn redact_assistant(message: &mut AssistantMessage) -> bool {
    let secrets = &*secrets();
    if secrets.is_empty() {
        return false;
    }
    let mut changed = redact_blocks(&mut message.content, secrets, false);
    if let Some(e) = &mut message.error_message {
        changed |= redact_string(e, secrets);
    }
    changed
}

/// The form of an (already redacted) message to write to a file: thinking blocks cleaned too.
/// `None` when it is the same as `message`.
pub fn redacted_for_storage(message: &Message) -> Option<Message> {
    let secrets = &*secrets();
    // Only thinking is left unredacted in memory: a copy is made only for a message whose
    // thinking holds a secret, not for every message recorded.
    if secrets.is_empty() || !thinking_holds_secret(message, secrets) {
        return None;
    }
    let mut copy = message.clone();
    redact_in(&mut copy, secrets, true).then_some(copy)
}

fn thinking_holds_secret(message: &Message, secrets: &[String]) -> bool {
    let Message::Assistant(m) = message else {
        return false;
    };
    m.content.iter().any(|block| match block {
        ContentBlock::Thinking { thinking, .. } => {
            secrets.iter().any(|s| thinking.contains(s.as_str()))
        }
        _ => false,
    })
}

/// Redact a tool result's content blocks and details in place.
pub fn redact_tool_output(content: &mut [ContentBlock], details: Option<&mut Value>) {
    let secrets = &*secrets();
    if secrets.is_empty() {
        return;
    }
    redact_blocks(content, secrets, true);
    if let Some(d) = details {
        redact_value(d, secrets);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_never_shows_a_secret_split_across_pieces() {
        let secrets = ["sk-stream-secret-0123456789".to_string()];
        set_secrets(secrets.clone());
        let mut r = StreamRedactor::default();
        let mut shown = String::new();
        for piece in ["key: sk-", "stream-sec", "ret-0123456789 and sk-s", "o on"] {
            let out = r.push(piece);
            // No prefix of the secret longer than what any text could start with is shown
            // before the piece that completes it.
            assert!(!out.contains("sk-stream"), "{out:?}");
            shown.push_str(&out);
        }
        shown.push_str(&r.finish());
        assert_eq!(shown, format!("key: {REDACTED} and sk-so on"));
    }

    fn list(items: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = items.iter().map(|s| s.to_string()).collect();
        v.sort_by_key(|s| std::cmp::Reverse(s.len()));
        v
    }

    #[test]
    fn every_occurrence_is_replaced_and_clean_text_is_borrowed() {
        let s = list(&["sk-secret-123", "sk-secret-123-long"]);
        assert_eq!(
            redact_with("a sk-secret-123-long b sk-secret-123", &s),
            "a [redacted] b [redacted]"
        );
        assert!(matches!(redact_with("nothing here", &s), Cow::Borrowed(_)));
    }

    #[test]
    fn messages_are_cleaned_but_thinking_only_for_storage() {
        let s = list(&["sk-secret-123"]);
        let mut m: Message = serde_json::from_value(serde_json::json!({
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "the key sk-secret-123", "thinkingSignature": "sig"},
                {"type": "text", "text": "key: sk-secret-123"},
                {"type": "toolCall", "id": "1", "name": "bash", "arguments": {"command": "echo sk-secret-123"}}
            ],
            "api": "a", "provider": "p", "model": "m",
            "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "stop", "timestamp": 0
        }))
        .unwrap();
        assert!(redact_in(&mut m, &s, false));
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(
            json.matches("sk-secret-123").count(),
            1,
            "thinking kept: {json}"
        );
        assert!(redact_in(&mut m, &s, true));
        assert!(!serde_json::to_string(&m).unwrap().contains("sk-secret-123"));
    }

    #[test]
    fn tool_result_details_are_cleaned_deeply() {
        let s = list(&["sk-secret-123"]);
        let mut v = serde_json::json!({"a": ["x sk-secret-123", {"b": "sk-secret-123"}], "n": 1});
        assert!(redact_value(&mut v, &s));
        assert!(!v.to_string().contains("sk-secret"));
    }
}
