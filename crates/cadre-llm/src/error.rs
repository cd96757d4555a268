//! Typed provider errors.

use std::time::Duration;

/// How the caller should treat a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Transient: try again after a delay (429 without quota exhaustion, 5xx, resets, cut or
    /// silent streams, malformed SSE).
    Retryable,
    /// The request does not fit the model's context window.
    ContextOverflow,
    /// Credentials missing or refused.
    Auth,
    /// The account is out of quota or credit; retrying will not help.
    Quota,
    /// The request was cancelled by the caller.
    Aborted,
    /// Anything else: a bad request, an unknown model, a protocol violation.
    Fatal,
}

/// A provider failure with enough detail for one clear line to the user.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error("HTTP {status} from {provider}: {message}")]
    Http {
        provider: String,
        status: u16,
        message: String,
        /// Parsed `retry-after` (seconds or HTTP date) or `retry-after-ms`.
        retry_after: Option<Duration>,
        kind: ErrorKind,
    },
    #[error("connection to {provider} failed: {message}")]
    Connection { provider: String, message: String },
    #[error("{provider} stream went silent for {}s", .after.as_secs())]
    IdleTimeout { provider: String, after: Duration },
    #[error("{provider} stream ended before its terminal event ({detail})")]
    IncompleteStream { provider: String, detail: String },
    #[error("malformed stream from {provider}: {detail}")]
    MalformedStream { provider: String, detail: String },
    #[error("request aborted")]
    Aborted,
    #[error("{0}")]
    Fatal(String),
}

impl LlmError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            LlmError::Http { kind, .. } => *kind,
            LlmError::Connection { .. }
            | LlmError::IdleTimeout { .. }
            | LlmError::IncompleteStream { .. }
            | LlmError::MalformedStream { .. } => ErrorKind::Retryable,
            LlmError::Aborted => ErrorKind::Aborted,
            LlmError::Fatal(_) => ErrorKind::Fatal,
        }
    }

    pub fn is_retryable(&self) -> bool {
        self.kind() == ErrorKind::Retryable
    }

    /// Delay the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}
