//! How far the editor is behind: updates handed to the connection and not yet written to
//! stdout. An editor that stops reading (suspended, busy) while a command streams output would
//! otherwise have every intermediate update kept in memory for it, ten a second, each up to
//! 16 KiB. Behind by more than a bound, intermediate tool-call updates are not sent: each holds
//! the output so far and is replaced by the next, and a call's last update (with its status)
//! always goes out. Message chunks are never skipped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// Updates the editor may be behind before intermediate ones are skipped.
const MAX_BEHIND: usize = 256;
/// Overrides [`MAX_BEHIND`], e.g. for tests.
const MAX_BEHIND_VAR: &str = "CADRE_ACP_MAX_BEHIND";

#[derive(Clone, Default)]
pub struct Backlog(Arc<AtomicUsize>);

impl Backlog {
    /// An update was handed to the connection.
    pub fn queued(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    /// An update was written to stdout.
    pub fn written(&self) {
        let _ = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    /// Whether `update` may be left out now: the editor is far behind and the update is one
    /// a later update of the same call replaces.
    pub fn skips(&self, update: &Value) -> bool {
        self.0.load(Ordering::SeqCst) > max_behind() && superseded(update)
    }
}

/// An intermediate tool-call update (no status): its content is replaced by the next one.
fn superseded(update: &Value) -> bool {
    update["sessionUpdate"] == "tool_call_update" && update.get("status").is_none()
}

fn max_behind() -> usize {
    std::env::var(MAX_BEHIND_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(MAX_BEHIND)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_intermediate_tool_updates_are_skipped_and_only_when_far_behind() {
        let backlog = Backlog::default();
        let partial = json!({"sessionUpdate": "tool_call_update", "toolCallId": "c"});
        let last = json!({"sessionUpdate": "tool_call_update", "toolCallId": "c",
                          "status": "completed"});
        let chunk = json!({"sessionUpdate": "agent_message_chunk"});
        assert!(!backlog.skips(&partial));
        for _ in 0..=MAX_BEHIND {
            backlog.queued();
        }
        assert!(backlog.skips(&partial));
        assert!(!backlog.skips(&last));
        assert!(!backlog.skips(&chunk));
        backlog.written();
        assert!(!backlog.skips(&partial));
        for _ in 0..MAX_BEHIND * 2 {
            backlog.written();
        }
        assert_eq!(backlog.0.load(Ordering::SeqCst), 0);
    }
}
