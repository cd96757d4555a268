//! The summarisation requests: a normal streamed completion of the conversation's own model,
//! with the summarisation system prompt, no tools, and an output limit taken from
//! `reserveTokens` (80% for the history, 50% for a split turn's prefix, as in Pi).

use std::sync::Arc;

use cadre_llm::{CompletionRequest, ErrorKind, Model, Provider, StreamEvent};
use cadre_protocol::{ContentBlock, Message, StopReason, ThinkingLevel, Usage, UserContent};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::plan::Preparation;
use super::prompt::{
    SUMMARIZATION_SYSTEM_PROMPT, history_prompt, merge_split_turn, turn_prefix_prompt,
};
use super::{CompactionError, CompactionSettings};

/// What the summariser needs from the agent.
pub struct Summarizer<'a> {
    pub provider: &'a dyn Provider,
    pub model: &'a Model,
    pub thinking: ThinkingLevel,
    pub settings: &'a CompactionSettings,
    pub cancel: &'a CancellationToken,
}

/// A finished summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The summary text, file lists appended.
    pub text: String,
    /// Pi's `{readFiles, modifiedFiles}`.
    pub details: Value,
    /// What the summarisation requests cost.
    pub usage: Usage,
}

impl Summarizer<'_> {
    /// Summarise a prepared compaction. `custom_instructions` are appended to the history
    /// prompt as Pi's "Additional focus".
    pub async fn summarize(
        &self,
        prep: &Preparation,
        custom_instructions: Option<&str>,
    ) -> Result<Summary, CompactionError> {
        let mut usage = Usage::default();
        let history_limit = self.settings.reserve_tokens * 8 / 10;
        let history = if prep.to_summarize.is_empty() {
            None
        } else {
            Some(self.complete(
                history_prompt(
                    &prep.to_summarize,
                    prep.previous_summary.as_deref(),
                    custom_instructions,
                ),
                history_limit,
            ))
        };
        let text = if prep.turn_prefix.is_empty() {
            let Some(history) = history else {
                return Err(CompactionError::NothingToCompact);
            };
            let (text, u) = history.await?;
            usage.add(&u);
            text
        } else {
            let prefix = self.complete(
                turn_prefix_prompt(&prep.turn_prefix),
                self.settings.reserve_tokens / 2,
            );
            let (history, prefix) = match history {
                Some(h) => {
                    let (h, p) = futures_util::future::join(h, prefix).await;
                    (Some(h?), p?)
                }
                None => (None, prefix.await?),
            };
            usage.add(&prefix.1);
            let history_text = match history {
                Some((text, u)) => {
                    usage.add(&u);
                    text
                }
                // Only the turn is cut: an earlier summary still stands for the history.
                None => prep
                    .previous_summary
                    .clone()
                    .unwrap_or_else(|| "No prior history.".to_string()),
            };
            merge_split_turn(&history_text, &prefix.0)
        };
        Ok(Summary {
            text: text + &prep.file_ops.summary_suffix(),
            details: prep.file_ops.details(),
            usage,
        })
    }

    /// One summarisation request: its text answer and usage.
    async fn complete(
        &self,
        prompt: String,
        max_tokens: u64,
    ) -> Result<(String, Usage), CompactionError> {
        let mut model = self.model.clone();
        let limit = match model.max_tokens {
            0 => max_tokens,
            m => m.min(max_tokens),
        };
        model.max_tokens = limit.max(1);
        let request = CompletionRequest {
            model,
            system_prompt: SUMMARIZATION_SYSTEM_PROMPT.to_string(),
            messages: vec![Message::User(cadre_protocol::UserMessage {
                content: UserContent::Blocks(vec![ContentBlock::text(prompt)]),
                timestamp: cadre_protocol::now_millis(),
            })],
            tools: Arc::from(Vec::new()),
            thinking: if self.model.reasoning {
                self.thinking
            } else {
                ThinkingLevel::Off
            },
        };
        let mut rx = self.provider.stream(request, self.cancel.clone());
        loop {
            let event = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return Err(CompactionError::Aborted),
                event = rx.recv() => event,
            };
            match event {
                Some(StreamEvent::Delta(_) | StreamEvent::Retry { .. }) => {}
                Some(StreamEvent::Done(message)) => {
                    return match message.stop_reason {
                        StopReason::Aborted => Err(CompactionError::Aborted),
                        StopReason::Error => Err(CompactionError::Failed(format!(
                            "Summarization failed: {}",
                            message.error_message.as_deref().unwrap_or("Unknown error")
                        ))),
                        _ => {
                            let text = joined_text(&message.content);
                            if text.trim().is_empty() {
                                // An empty summary would replace the history with nothing.
                                return Err(CompactionError::Failed(
                                    "Summarization failed: the model answered without text".into(),
                                ));
                            }
                            Ok((text, message.usage))
                        }
                    };
                }
                Some(StreamEvent::Failed { error, .. }) => {
                    if error.kind() == ErrorKind::Aborted || self.cancel.is_cancelled() {
                        return Err(CompactionError::Aborted);
                    }
                    return Err(CompactionError::Failed(format!(
                        "Summarization failed: {error}"
                    )));
                }
                None => {
                    return Err(CompactionError::Failed(
                        "Summarization failed: the model stream ended without a final message"
                            .into(),
                    ));
                }
            }
        }
    }
}

/// The text blocks of an answer joined by newlines (thinking left out).
fn joined_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}
