//! Context compaction (SPEC R10), compatible with Pi's.
//!
//! Older turns are summarised by the conversation's own model and replaced by the summary; the
//! most recent `keepRecentTokens` (by estimate) stay verbatim. The session file gets Pi's
//! `compaction` entry (`summary`, `firstKeptEntryId`, `tokensBefore`, `details`), and the
//! context is rebuilt from it the way Pi rebuilds it (the summary as a user message with Pi's
//! fixed wrapper, then the kept messages, then everything after the entry), so cadre and Pi
//! each continue the other's compacted sessions.
//!
//! The pieces are pure and tested on their own: [`estimate`] (how full the context is),
//! [`cut`] (where the kept part starts; never between a tool call and its result), [`plan`]
//! (what to summarise), [`prompt`] (Pi's summarisation prompts and the conversation rendered as
//! text), [`summary`] (the summary message sent to the model). [`summarize`] makes the model
//! request. The agent (`crate::agent`) decides when to compact and swaps its history.

pub mod cut;
pub mod estimate;
pub mod plan;
pub mod prompt;
pub mod summarize;
pub mod summary;

pub use cadre_protocol::{CompactionReason, CompactionResult};

/// Pi's `compaction` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionSettings {
    /// Compact automatically (near the context window, and after a context-overflow error).
    /// Manual compaction works either way.
    pub enabled: bool,
    /// Tokens kept free for the model's answer: compaction starts when the context estimate
    /// passes `contextWindow - reserveTokens`. Also bounds the summary's length (80% of it).
    pub reserve_tokens: u64,
    /// Roughly how many tokens of the newest messages stay verbatim.
    pub keep_recent_tokens: u64,
}

impl CompactionSettings {
    pub const DEFAULT_RESERVE_TOKENS: u64 = 16_384;
    pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20_000;

    /// The context size above which automatic compaction runs, or `None` when the model's
    /// window is unknown (0): the estimate would have nothing to be compared with.
    pub fn threshold(&self, context_window: u64) -> Option<u64> {
        (context_window > 0).then(|| context_window.saturating_sub(self.reserve_tokens))
    }
}

impl Default for CompactionSettings {
    /// Pi's defaults.
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: Self::DEFAULT_RESERVE_TOKENS,
            keep_recent_tokens: Self::DEFAULT_KEEP_RECENT_TOKENS,
        }
    }
}

/// Why a compaction did not happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompactionError {
    /// Nothing was added since the last compaction.
    #[error("Already compacted")]
    AlreadyCompacted,
    /// Everything fits in the kept part: there is nothing older to summarise.
    #[error("Nothing to compact (session too small)")]
    NothingToCompact,
    /// Aborted (through the agent's controller) before the summary was recorded; the history is
    /// unchanged.
    #[error("Compaction cancelled")]
    Aborted,
    /// The summarisation request failed.
    #[error("{0}")]
    Failed(String),
    /// The compaction entry could not be written.
    #[error("session file: {0}")]
    Session(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_threshold_are_pis() {
        let s = CompactionSettings::default();
        assert!(s.enabled);
        assert_eq!((s.reserve_tokens, s.keep_recent_tokens), (16_384, 20_000));
        assert_eq!(s.threshold(200_000), Some(200_000 - 16_384));
        assert_eq!(s.threshold(1_000), Some(0));
        assert_eq!(s.threshold(0), None);
    }
}
