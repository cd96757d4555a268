//! One model request: stream the reply, emit message events, end with a recorded message.

use cadre_llm::{CompletionRequest, ErrorKind, Model, Provider, StreamEvent};
use cadre_protocol::{AgentEvent, AssistantMessage, AssistantMessageEvent, Message, StopReason};
use tokio_util::sync::CancellationToken;

use super::emit::Emitter;
use super::partial::PartialMessage;

/// Error text of an aborted request (Pi's wording).
pub(crate) const ABORTED: &str = "Request was aborted";

/// Stream one reply. Always returns a message to record: the complete reply, or what had
/// arrived with stop reason `error`/`aborted` and `error_message` set, with how the request
/// failed (the agent compacts and retries after a context overflow). `message_start` and
/// `message_end` are emitted exactly once for it. A retry is framed as Pi frames it (see
/// [`Emitter::retry`]): the failed attempt's message starts and ends, the run ends, and after
/// `auto_retry_start` a new run begins; `conversation` is the history the request carries.
pub(crate) async fn stream_reply(
    provider: &dyn Provider,
    model: &Model,
    request: CompletionRequest,
    conversation: &[Message],
    cancel: &CancellationToken,
    emitter: &Emitter,
) -> (AssistantMessage, Option<ErrorKind>) {
    let mut rx = provider.stream(request, cancel.clone());
    let mut partial = PartialMessage::new(model);
    let mut started = false;
    let mut retry_attempt: Option<u32> = None;

    let start = |started: &mut bool, message: &AssistantMessage| {
        if !*started {
            *started = true;
            emitter.emit_with(|| AgentEvent::MessageStart {
                message: Message::Assistant(message.clone()),
            });
        }
    };
    let end = |message: &AssistantMessage| {
        emitter.emit_with(|| AgentEvent::MessageEnd {
            message: Message::Assistant(message.clone()),
        });
    };

    loop {
        let event = tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            event = rx.recv() => Some(event),
        };
        let Some(event) = event else {
            // Aborted: keep the deltas that already arrived, then stop listening.
            while let Ok(StreamEvent::Delta(delta)) = rx.try_recv() {
                partial.apply(&delta);
            }
            let message = partial.interrupted(StopReason::Aborted, ABORTED.into());
            retry_failed(emitter, retry_attempt, true, &message);
            start(&mut started, &message);
            end(&message);
            return (message, Some(ErrorKind::Aborted));
        };
        match event {
            Some(StreamEvent::Delta(delta)) => {
                start(&mut started, partial.message());
                partial.apply(&delta);
                // Like Pi, `start` only opens the message (and the response id only names
                // it); every other delta is an update.
                let update = !matches!(
                    delta,
                    AssistantMessageEvent::Start | AssistantMessageEvent::ResponseId { .. }
                );
                if emitter.updates_enabled() && update {
                    emitter.emit(AgentEvent::MessageUpdate {
                        message: Box::new(partial.message().clone()),
                        assistant_message_event: delta,
                    });
                }
            }
            Some(StreamEvent::Retry {
                attempt,
                max_attempts,
                delay_ms,
                error,
            }) => {
                // The failed attempt's message is shown (started if nothing had arrived) and
                // ended, as Pi shows it; it is not kept in the history.
                let abandoned = std::mem::replace(&mut partial, PartialMessage::new(model));
                let failed = abandoned.interrupted(StopReason::Error, error.to_string());
                start(&mut started, &failed);
                end(&failed);
                emitter.retry(
                    conversation,
                    &failed,
                    AgentEvent::AutoRetryStart {
                        attempt,
                        max_attempts,
                        delay_ms,
                        error_message: error.to_string(),
                    },
                );
                retry_attempt = Some(attempt);
                started = false;
            }
            Some(StreamEvent::Done(message)) => {
                start(&mut started, &message);
                end(&message);
                // Pi reports the retry's success when the reply has ended.
                if let Some(attempt) = retry_attempt {
                    emitter.emit(AgentEvent::AutoRetryEnd {
                        success: true,
                        attempt,
                        final_error: None,
                    });
                }
                return (message, None);
            }
            Some(StreamEvent::Failed {
                error,
                partial: mut message,
            }) => {
                let kind = error.kind();
                let aborted = kind == ErrorKind::Aborted || cancel.is_cancelled();
                message.stop_reason = if aborted {
                    StopReason::Aborted
                } else {
                    StopReason::Error
                };
                if message.error_message.is_none() {
                    message.error_message = Some(if aborted {
                        ABORTED.to_string()
                    } else {
                        error.to_string()
                    });
                }
                retry_failed(emitter, retry_attempt, aborted, &message);
                start(&mut started, &message);
                end(&message);
                return (
                    message,
                    Some(if aborted { ErrorKind::Aborted } else { kind }),
                );
            }
            None => {
                // The provider dropped its sender without a terminal event: a provider bug,
                // reported as a failed reply rather than an empty answer.
                let message = partial.interrupted(
                    StopReason::Error,
                    "the model stream ended without a final message".into(),
                );
                retry_failed(emitter, retry_attempt, false, &message);
                start(&mut started, &message);
                end(&message);
                return (message, Some(ErrorKind::Retryable));
            }
        }
    }
}

/// A retried request that failed for good: Pi's `auto_retry_end` goes out after the run's
/// `agent_end` (Pi decides on retrying once a run has ended). An abort is Pi's cancelled retry.
fn retry_failed(
    emitter: &Emitter,
    retry_attempt: Option<u32>,
    aborted: bool,
    message: &AssistantMessage,
) {
    if let Some(attempt) = retry_attempt {
        let final_error = if aborted {
            Some("Retry cancelled".to_string())
        } else {
            message.error_message.clone()
        };
        emitter.after_agent_end(AgentEvent::AutoRetryEnd {
            success: false,
            attempt,
            final_error,
        });
    }
}
