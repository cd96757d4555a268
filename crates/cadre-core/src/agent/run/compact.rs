//! Compaction in the agent: when it runs (on request; before a model request whose context
//! estimate passes the threshold; after a context-overflow error, followed by one retry), and
//! how the history and the session file take the summary.
//!
//! The history keeps, next to each message, the id of the session entry it was written as, so
//! a compaction can name its first kept entry (`firstKeptEntryId`) as Pi does. A compaction
//! appends Pi's `compaction` entry and replaces the history with what a reload of the file
//! gives: the summary message, then the kept messages.

use std::time::{SystemTime, UNIX_EPOCH};

use cadre_protocol::{
    AgentEvent, CompactionReason, CompactionResult, Message, SessionEntryKind, Usage,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Agent, RunGuard};
use crate::agent::repair::repair_tagged;
use crate::compaction::estimate::{ContextEstimate, estimate_context};
use crate::compaction::plan::{Preparation, compacted_at, prepare};
use crate::compaction::summarize::Summarizer;
use crate::compaction::summary::summary_message;
use crate::compaction::{CompactionError, CompactionSettings};
use crate::session::SessionWriter;

/// Pi's message when an overflow comes back after its one compact-and-retry.
const OVERFLOW_AGAIN: &str = "Context overflow recovery failed after one compact-and-retry \
                              attempt. Try reducing context or switching to a larger-context model.";

/// A history to start from, each message with its session entry id (`None`: not in the file),
/// after repair (see [`crate::agent::repair_history`]); the results the repair added at the end
/// are written to the session. Also the `details` of the compaction the history starts from.
pub(super) struct StartingHistory {
    pub messages: Vec<Message>,
    pub entry_ids: Vec<Option<String>>,
    pub compaction_details: Option<Value>,
}

/// The history an agent starts with. Entry ids are known when the history is the context the
/// session file was resumed with (the usual `load_session` → `SessionWriter::resume` path);
/// otherwise (a fork's inherited conversation, a history built in memory) its messages are not
/// in the file.
pub(super) fn starting_history(
    history: Vec<Message>,
    mut session: Option<&mut SessionWriter>,
) -> StartingHistory {
    let resumed = session
        .as_deref_mut()
        .and_then(SessionWriter::take_resumed)
        .filter(|r| r.entry_ids.len() == history.len());
    let (ids, compaction_details): (Vec<Option<String>>, _) = match resumed {
        Some(r) => (
            r.entry_ids.into_iter().map(Some).collect(),
            r.compaction_details,
        ),
        None => (vec![None; history.len()], None),
    };
    let (tagged, added) = repair_tagged(history.into_iter().zip(ids).collect());
    let (messages, mut entry_ids): (Vec<Message>, Vec<Option<String>>) = tagged.into_iter().unzip();
    if let Some(writer) = session {
        let first_added = entry_ids.len() - added.len();
        for (slot, result) in entry_ids[first_added..].iter_mut().zip(added) {
            *slot = Some(writer.append_message(&Message::ToolResult(result)));
        }
    }
    StartingHistory {
        messages,
        entry_ids,
        compaction_details,
    }
}

impl Agent {
    /// Compact the conversation now (Pi's RPC `compact`): older turns are summarised, with
    /// `custom_instructions` as the summary's additional focus, and replaced by the summary.
    /// Emits `compaction_start` and `compaction_end` with reason `manual`. The agent's
    /// controller aborts it (`AgentController::abort`): the history is then unchanged and the
    /// result is [`CompactionError::Aborted`]. Works whether or not automatic compaction is on.
    pub async fn compact(
        &mut self,
        custom_instructions: Option<String>,
    ) -> Result<CompactionResult, CompactionError> {
        let token = self.shared.begin_run();
        let shared = self.shared.clone();
        let _guard = RunGuard {
            shared: &shared,
            token: token.clone(),
        };
        let reason = CompactionReason::Manual;
        self.emitter.emit(AgentEvent::CompactionStart { reason });
        let settings = self.config.compaction;
        let done = match self.plan(&settings) {
            Ok(prep) => {
                self.compact_prepared(prep, custom_instructions.as_deref(), &token)
                    .await
            }
            Err(e) => Err(e),
        };
        let flushed = match (&done, &self.session) {
            (Ok(_), Some(writer)) => writer
                .flush()
                .await
                .map_err(|e| CompactionError::Session(e.to_string())),
            _ => Ok(()),
        };
        let done = done.and_then(|(result, _)| flushed.map(|()| result));
        self.emit_end(reason, &done, false);
        done
    }

    /// Plan a compaction; refused when nothing was added since the last one.
    fn plan(&self, settings: &CompactionSettings) -> Result<Preparation, CompactionError> {
        if self.compacted_len == Some(self.messages.len()) {
            return Err(CompactionError::AlreadyCompacted);
        }
        prepare(&self.messages, self.compaction_details.as_ref(), settings)
    }

    /// Turn automatic compaction on or off (Pi's `set_auto_compaction`).
    pub fn set_auto_compaction(&mut self, enabled: bool) {
        self.config.compaction.enabled = enabled;
    }

    /// Use other compaction settings from now on.
    pub fn set_compaction_settings(&mut self, settings: CompactionSettings) {
        self.config.compaction = settings;
    }

    pub fn compaction_settings(&self) -> CompactionSettings {
        self.config.compaction
    }

    /// The context estimate automatic compaction compares with `contextWindow - reserveTokens`:
    /// the last reply's reported usage plus an estimate of what follows it. Usage reported
    /// before the last compaction is not used.
    pub fn context_estimate(&self) -> ContextEstimate {
        estimate_context(&self.messages, compacted_at(&self.messages))
    }

    /// Before a model request: compact when the context estimate passes the threshold and there
    /// is something to summarise. A failure leaves the history as it was; the request goes on.
    /// Returns where the kept part started (see [`crate::compaction::plan::reindexed`]) when the history was replaced.
    pub(super) async fn compact_if_over_threshold(
        &mut self,
        token: &CancellationToken,
        usage: &mut Usage,
    ) -> Option<usize> {
        let settings = self.config.compaction;
        if !settings.enabled {
            return None;
        }
        let threshold = settings.threshold(self.config.model.context_window)?;
        if self.context_estimate().tokens <= threshold {
            return None;
        }
        // Nothing to summarise (everything is recent, or just compacted): no events, the
        // request goes ahead as it is.
        let prep = self.plan(&settings).ok()?;
        self.auto_compact(CompactionReason::Threshold, prep, token, usage)
            .await
    }

    /// After a request failed because the context does not fit: compact, and say whether the
    /// request should be sent again (once per run until a request succeeds, as in Pi): `Some`
    /// (where the kept part started, see [`crate::compaction::plan::reindexed`]) when it should. The failed reply is
    /// then not kept: the retry replaces it.
    pub(super) async fn recover_from_overflow(
        &mut self,
        token: &CancellationToken,
        usage: &mut Usage,
        attempted: &mut bool,
    ) -> Option<usize> {
        if !self.config.compaction.enabled || token.is_cancelled() {
            return None;
        }
        let reason = CompactionReason::Overflow;
        if *attempted {
            self.emitter.emit(AgentEvent::CompactionEnd {
                reason,
                result: None,
                aborted: false,
                will_retry: false,
                error_message: Some(OVERFLOW_AGAIN.into()),
            });
            return None;
        }
        *attempted = true;
        let settings = self.config.compaction;
        match self.plan(&settings) {
            Ok(prep) => self.auto_compact(reason, prep, token, usage).await,
            Err(e) => {
                self.emitter.emit(AgentEvent::CompactionStart { reason });
                self.emit_end(reason, &Err::<CompactionResult, _>(e), false);
                None
            }
        }
    }

    /// An automatic compaction with its events; where the kept part started when it replaced
    /// the history.
    async fn auto_compact(
        &mut self,
        reason: CompactionReason,
        prep: Preparation,
        token: &CancellationToken,
        usage: &mut Usage,
    ) -> Option<usize> {
        let first_kept = prep.first_kept;
        self.emitter.emit(AgentEvent::CompactionStart { reason });
        let done = self.compact_prepared(prep, None, token).await;
        if let Ok((_, spent)) = &done {
            usage.add(spent);
        }
        let done = done.map(|(result, _)| result);
        self.emit_end(reason, &done, reason == CompactionReason::Overflow);
        done.ok().map(|_| first_kept)
    }

    fn emit_end(
        &self,
        reason: CompactionReason,
        done: &Result<CompactionResult, CompactionError>,
        retry_on_success: bool,
    ) {
        let (result, aborted, error_message) = match done {
            Ok(r) => (Some(r.clone()), false, None),
            Err(CompactionError::Aborted) => (None, true, None),
            Err(e) => {
                let message = match reason {
                    CompactionReason::Manual => format!("Compaction failed: {e}"),
                    CompactionReason::Threshold => format!("Auto-compaction failed: {e}"),
                    CompactionReason::Overflow => format!("Context overflow recovery failed: {e}"),
                };
                (None, false, Some(message))
            }
        };
        let will_retry = retry_on_success && result.is_some();
        self.emitter.emit(AgentEvent::CompactionEnd {
            reason,
            result,
            aborted,
            will_retry,
            error_message,
        });
    }

    /// Summarise, record the compaction entry and swap the history for the summary and the
    /// kept messages. Returns the result and what the summary cost (also added to the agent's
    /// usage). Nothing changes unless the summary arrived before an abort.
    async fn compact_prepared(
        &mut self,
        prep: Preparation,
        custom_instructions: Option<&str>,
        token: &CancellationToken,
    ) -> Result<(CompactionResult, Usage), CompactionError> {
        let settings = self.config.compaction;
        let summarizer = Summarizer {
            provider: self.config.provider.as_ref(),
            model: &self.config.model,
            thinking: self.config.thinking,
            settings: &settings,
            cancel: token,
        };
        let summary = summarizer.summarize(&prep, custom_instructions).await?;
        if token.is_cancelled() {
            return Err(CompactionError::Aborted);
        }
        self.usage.add(&summary.usage);
        let text = cadre_protocol::redact::redact_str(&summary.text).into_owned();
        let first_kept_entry_id = self.first_kept_entry_id(prep.first_kept);
        // The summary message and the entry it is rebuilt from on load carry the same time
        // (to the millisecond, the precision of an entry's timestamp).
        let now = SystemTime::now();
        let millis = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let entry_id = self.session.as_mut().map(|writer| {
            writer.append_at(
                SessionEntryKind::Compaction {
                    summary: text.clone(),
                    first_kept_entry_id: first_kept_entry_id.clone(),
                    tokens_before: prep.tokens_before,
                    details: Some(summary.details.clone()),
                    from_hook: Some(false),
                },
                now,
            )
        });
        let kept = self.messages.split_off(prep.first_kept);
        let kept_ids = self.entry_ids.split_off(prep.first_kept);
        self.messages = vec![summary_message(&text, millis)];
        self.messages.extend(kept);
        self.entry_ids = vec![entry_id];
        self.entry_ids.extend(kept_ids);
        self.compaction_details = Some(summary.details.clone());
        self.compacted_len = Some(self.messages.len());
        Ok((
            CompactionResult {
                summary: text,
                first_kept_entry_id,
                tokens_before: prep.tokens_before,
                details: Some(summary.details),
            },
            summary.usage,
        ))
    }

    /// The entry the kept part starts at: the first kept message that is in the session file.
    /// Messages that never were in it (a fork's inherited conversation) cannot be named; an
    /// agent without a session file gets a fresh id, so the result still has one.
    fn first_kept_entry_id(&self, first_kept: usize) -> String {
        self.entry_ids[first_kept..]
            .iter()
            .flatten()
            .find(|id| self.session.as_ref().is_none_or(|w| w.has_entry(id)))
            .cloned()
            .unwrap_or_else(|| format!("{:08x}", fastrand::u32(..)))
    }
}
