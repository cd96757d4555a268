//! The provider interface the agent loop streams from.

use std::sync::Arc;

use cadre_protocol::{AssistantMessage, AssistantMessageEvent, Message, ThinkingLevel, ToolSpec};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::LlmError;
use crate::model::Model;

/// One model request.
#[derive(Debug, Clone)]
pub struct CompletionRequest {
    pub model: Model,
    pub system_prompt: String,
    pub messages: Vec<Message>,
    /// Shared: an agent sends the same tool schemas with every request, so each request takes
    /// a reference to them instead of a deep copy.
    pub tools: Arc<[ToolSpec]>,
    /// Effective (already clamped) thinking level.
    pub thinking: ThinkingLevel,
}

/// What a provider stream yields. After `Done` or `Failed` nothing else follows.
#[derive(Debug, Clone)]
pub enum StreamEvent {
    /// An incremental change to the reply being assembled.
    Delta(AssistantMessageEvent),
    /// The attempt failed with a retryable error and will be retried after `delay_ms`; the
    /// partial reply streamed so far must be discarded.
    Retry {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error: LlmError,
    },
    /// The reply is complete (usage and cost filled in).
    Done(AssistantMessage),
    /// The request failed for good. `partial` holds what had arrived (stop reason `error` or
    /// `aborted`, `error_message` set).
    Failed {
        error: LlmError,
        partial: AssistantMessage,
    },
}

/// A streaming model client. Implementations spawn their work and return at once; dropping the
/// receiver or cancelling the token stops the request.
pub trait Provider: Send + Sync {
    fn stream(
        &self,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> mpsc::Receiver<StreamEvent>;
}
