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
/// `message_end` are emitted exactly once for it (a retry restarts the partial and so sends a
/// new `message_start` after `auto_retry_start`).
pub(crate) async fn stream_reply(
    provider: &dyn Provider,
    model: &Model,
    request: CompletionRequest,
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
            start(&mut started, &message);
            end(&message);
            return (message, Some(ErrorKind::Aborted));
        };
        match event {
            Some(StreamEvent::Delta(delta)) => {
                start(&mut started, partial.message());
                partial.apply(&delta);
                // Like Pi, `start` only opens the message; every later delta is an update.
                if emitter.updates_enabled() && delta != AssistantMessageEvent::Start {
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
                // Close the abandoned attempt's message so consumers see every
                // message_start matched by a message_end; it is not kept in the history.
                let abandoned = std::mem::replace(&mut partial, PartialMessage::new(model));
                if started {
                    end(&abandoned.interrupted(StopReason::Error, error.to_string()));
                }
                emitter.emit_with(|| AgentEvent::AutoRetryStart {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error_message: error.to_string(),
                });
                retry_attempt = Some(attempt);
                started = false;
            }
            Some(StreamEvent::Done(message)) => {
                if let Some(attempt) = retry_attempt {
                    emitter.emit(AgentEvent::AutoRetryEnd {
                        success: true,
                        attempt,
                        final_error: None,
                    });
                }
                start(&mut started, &message);
                end(&message);
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
                if let Some(attempt) = retry_attempt {
                    emitter.emit(AgentEvent::AutoRetryEnd {
                        success: false,
                        attempt,
                        final_error: message.error_message.clone(),
                    });
                }
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
                start(&mut started, &message);
                end(&message);
                return (message, Some(ErrorKind::Retryable));
            }
        }
    }
}
