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
    /// A token or cost budget refused the request before it was sent.
    Budget,
    /// Anything else: a bad request, an unknown model, a protocol violation, a request that
    /// used up its whole-request deadline.
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
    /// A first-content or idle deadline of [`crate::retry::RequestTimeouts`] passed without
    /// content. Retryable, like the cut and malformed streams.
    #[error("{}", no_content_message(provider, *waited, *after, *received))]
    NoContent {
        provider: String,
        waited: Waited,
        after: Duration,
        received: Received,
    },
    /// The whole-request deadline passed. Not retryable: it bounds the retries too, so the
    /// request's time is used up.
    #[error("request to {provider} exceeded the {} limit", human_duration(*limit))]
    RequestDeadline { provider: String, limit: Duration },
    #[error("{provider} stream ended before its terminal event ({detail})")]
    IncompleteStream { provider: String, detail: String },
    #[error("malformed stream from {provider}: {detail}")]
    MalformedStream { provider: String, detail: String },
    /// One assistant message grew past its size limit while it streamed
    /// ([`crate::assemble::MAX_MESSAGE_BYTES`]). Not retryable: the same request would stream
    /// the same flood again.
    #[error(
        "the model's message exceeded {} (text, thinking and tool-call arguments together); \
         the reply from {provider} was stopped and discarded",
        human_size(*limit)
    )]
    MessageTooLarge { provider: String, limit: usize },
    #[error("request aborted")]
    Aborted,
    /// A token or cost budget refused the request before it was sent. Not retryable: only a
    /// raised budget lets it through.
    #[error("{0}")]
    Budget(String),
    #[error("{0}")]
    Fatal(String),
}

impl LlmError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            LlmError::Http { kind, .. } => *kind,
            LlmError::Connection { .. }
            | LlmError::NoContent { .. }
            | LlmError::IncompleteStream { .. }
            | LlmError::MalformedStream { .. } => ErrorKind::Retryable,
            LlmError::Aborted => ErrorKind::Aborted,
            LlmError::RequestDeadline { .. }
            | LlmError::MessageTooLarge { .. }
            | LlmError::Fatal(_) => ErrorKind::Fatal,
            LlmError::Budget(_) => ErrorKind::Budget,
        }
    }

    pub fn is_retryable(&self) -> bool {
        self.kind() == ErrorKind::Retryable
    }

    /// A first-content or idle deadline passed (the retries of these are limited separately).
    pub fn is_deadline(&self) -> bool {
        matches!(self, LlmError::NoContent { .. })
    }

    /// Delay the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// Which deadline passed without content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The first content of an attempt, counted from sending its request.
    FirstContent,
    /// More content, counted from the last content.
    Idle,
}

/// What the provider did send while no content came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// Nothing: no response head (first content) or no bytes at all (idle).
    Nothing,
    /// The response head and no body bytes.
    Headers,
    /// Body bytes, and an event still unfinished when the deadline passed: a trickle.
    PartialEvent,
    /// Body bytes that were SSE comments, events without content (pings, empty deltas) or
    /// blank lines: keep-alives.
    KeepAlives,
}

fn no_content_message(provider: &str, waited: Waited, after: Duration, got: Received) -> String {
    let got = match (got, waited) {
        (Received::Nothing, Waited::FirstContent) => "no response",
        (Received::Nothing, Waited::Idle) => "nothing at all",
        (Received::Headers, _) => "only the response headers",
        (Received::PartialEvent, _) => "only bytes of an unfinished event",
        (Received::KeepAlives, _) => "only keep-alives",
    };
    let after = human_duration(after);
    match waited {
        Waited::FirstContent => {
            format!("no content from {provider} within {after} of sending the request ({got})")
        }
        Waited::Idle => format!("no content from {provider} for {after} ({got})"),
    }
}

/// `16 MiB`, `64 KiB`, `1000 bytes`: a size limit as it was most likely written.
fn human_size(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * KIB;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// `30 min`, `120 s`, `1.5 s`, `300 ms`: the unit a configured limit was most likely written in.
fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    // Minutes only for long limits: `120 s` reads better than `2 min` next to an idle timeout.
    if ms >= 600_000 && ms.is_multiple_of(60_000) {
        format!("{} min", ms / 60_000)
    } else if ms >= 1000 && ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else if ms >= 1000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{ms} ms")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn no_content(waited: Waited, secs: u64, received: Received) -> String {
        LlmError::NoContent {
            provider: "anthropic".into(),
            waited,
            after: Duration::from_secs(secs),
            received,
        }
        .to_string()
    }

    #[test]
    fn deadline_messages_say_which_deadline_and_what_came() {
        assert_eq!(
            no_content(Waited::Idle, 120, Received::KeepAlives),
            "no content from anthropic for 120 s (only keep-alives)"
        );
        assert_eq!(
            no_content(Waited::Idle, 120, Received::Nothing),
            "no content from anthropic for 120 s (nothing at all)"
        );
        assert_eq!(
            no_content(Waited::FirstContent, 180, Received::Nothing),
            "no content from anthropic within 180 s of sending the request (no response)"
        );
        assert_eq!(
            no_content(Waited::FirstContent, 180, Received::Headers),
            "no content from anthropic within 180 s of sending the request (only the response \
             headers)"
        );
        assert_eq!(
            no_content(Waited::FirstContent, 180, Received::PartialEvent),
            "no content from anthropic within 180 s of sending the request (only bytes of an \
             unfinished event)"
        );
        let total = LlmError::RequestDeadline {
            provider: "openai".into(),
            limit: Duration::from_secs(1800),
        };
        assert_eq!(
            total.to_string(),
            "request to openai exceeded the 30 min limit"
        );
        assert_eq!(total.kind(), ErrorKind::Fatal);
        assert!(!total.is_deadline());
        let idle = LlmError::NoContent {
            provider: "p".into(),
            waited: Waited::Idle,
            after: Duration::from_secs(1),
            received: Received::KeepAlives,
        };
        assert!(idle.is_retryable() && idle.is_deadline());
    }

    #[test]
    fn a_message_over_its_limit_is_named_and_never_retried() {
        let e = LlmError::MessageTooLarge {
            provider: "openai".into(),
            limit: 16 * 1024 * 1024,
        };
        assert_eq!(
            e.to_string(),
            "the model's message exceeded 16 MiB (text, thinking and tool-call arguments \
             together); the reply from openai was stopped and discarded"
        );
        assert_eq!(e.kind(), ErrorKind::Fatal);
        assert!(!e.is_retryable() && !e.is_deadline());
        assert_eq!(human_size(64 * 1024), "64 KiB");
        assert_eq!(human_size(1000), "1000 bytes");
    }

    #[test]
    fn durations_read_as_they_were_configured() {
        let ms = Duration::from_millis;
        assert_eq!(human_duration(ms(1_800_000)), "30 min");
        assert_eq!(human_duration(ms(90_000)), "90 s");
        assert_eq!(human_duration(ms(120_000)), "120 s");
        assert_eq!(human_duration(ms(600_000)), "10 min");
        assert_eq!(human_duration(ms(1_500)), "1.5 s");
        assert_eq!(human_duration(ms(300)), "300 ms");
        assert_eq!(human_duration(Duration::ZERO), "0 ms");
        assert!(!human_duration(Duration::MAX).is_empty());
    }
}
