//! Retry policy: how often, how long to wait, and when to stop waiting for a silent stream.
//!
//! Pure decisions only; the request loop in [`crate::client`] applies them. Delays grow
//! exponentially from `base_delay` with random jitter (so many clients that failed together do
//! not retry together), capped at `max_delay`. A server's `retry-after` is honoured as given, but
//! a server asking for more than `max_delay` makes the request fail with its error at once: an
//! unattended run waiting an hour for a rate-limit window is worse than a clear failure the caller
//! can fall back from.

use std::time::Duration;

use crate::error::LlmError;

/// Retry and timeout settings of a provider.
///
/// Pi's settings map onto it as `max_attempts = retry.maxRetries + 1`,
/// `base_delay = retry.baseDelayMs`, `max_delay = retry.provider.maxRetryDelayMs`; the defaults
/// are Pi's (three retries after 2 s, 4 s, 8 s; server delays up to 60 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts, the first one included (so `4` means up to three retries). `0` behaves as
    /// `1`.
    pub max_attempts: u32,
    /// Delay before the first retry; doubled for each further one.
    pub base_delay: Duration,
    /// Cap on the computed backoff and on an honoured `retry-after`.
    pub max_delay: Duration,
    /// A stream (or a response head) with no bytes for this long is abandoned as `IdleTimeout`.
    /// Generous by default: reasoning models may think for a long time before their first byte.
    pub idle_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    /// Wait this long, then try again.
    RetryAfter(Duration),
    /// Report the error.
    GiveUp,
}

impl RetryPolicy {
    /// The attempt count actually used (at least one).
    pub fn attempts(&self) -> u32 {
        self.max_attempts.max(1)
    }

    /// Decide after attempt number `failed_attempt` (1-based) failed with `error`. `unit_random`
    /// is a number in `[0, 1)` used for jitter (passed in so the decision is testable).
    pub fn decide(&self, failed_attempt: u32, error: &LlmError, unit_random: f64) -> RetryDecision {
        if !error.is_retryable() || failed_attempt >= self.attempts() {
            return RetryDecision::GiveUp;
        }
        match error.retry_after() {
            Some(asked) if asked > self.max_delay => RetryDecision::GiveUp,
            Some(asked) => RetryDecision::RetryAfter(asked),
            None => RetryDecision::RetryAfter(self.backoff(failed_attempt, unit_random)),
        }
    }

    /// Exponential backoff for the retry after attempt `failed_attempt`: `base_delay` doubled per
    /// further attempt, with ±20% jitter, never above `max_delay`.
    pub fn backoff(&self, failed_attempt: u32, unit_random: f64) -> Duration {
        let exp = failed_attempt.saturating_sub(1).min(20);
        let full = self.base_delay.saturating_mul(1u32 << exp);
        let r = if unit_random.is_finite() {
            unit_random.clamp(0.0, 1.0)
        } else {
            0.5
        };
        full.mul_f64(0.8 + 0.4 * r).min(self.max_delay)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(5),
        }
    }

    fn http(status: u16, kind: ErrorKind, retry_after: Option<Duration>) -> LlmError {
        LlmError::Http {
            provider: "p".into(),
            status,
            message: "m".into(),
            retry_after,
            kind,
        }
    }

    fn conn() -> LlmError {
        LlmError::Connection {
            provider: "p".into(),
            message: "reset".into(),
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_and_cap() {
        let p = policy();
        assert_eq!(p.backoff(1, 0.5), Duration::from_secs(1));
        assert_eq!(p.backoff(1, 0.0), Duration::from_millis(800));
        assert_eq!(p.backoff(1, 1.0), Duration::from_millis(1200));
        assert_eq!(p.backoff(2, 0.5), Duration::from_secs(2));
        assert_eq!(p.backoff(3, 0.5), Duration::from_secs(4));
        assert_eq!(
            p.backoff(4, 1.0),
            Duration::from_secs(9) + Duration::from_millis(600)
        );
        assert_eq!(p.backoff(5, 0.0), Duration::from_secs(10), "capped");
        assert_eq!(p.backoff(1000, 1.0), Duration::from_secs(10), "no overflow");
        assert_eq!(p.backoff(0, 0.5), Duration::from_secs(1));
        assert_eq!(p.backoff(1, f64::NAN), Duration::from_secs(1));
        assert_eq!(p.backoff(1, 7.0), Duration::from_millis(1200));
    }

    #[test]
    fn retries_only_retryable_errors_within_the_budget() {
        let p = policy();
        assert_eq!(
            p.decide(1, &conn(), 0.5),
            RetryDecision::RetryAfter(Duration::from_secs(1))
        );
        assert_eq!(
            p.decide(3, &conn(), 0.5),
            RetryDecision::RetryAfter(Duration::from_secs(4))
        );
        assert_eq!(p.decide(4, &conn(), 1.0), RetryDecision::GiveUp);
        for kind in [
            ErrorKind::Auth,
            ErrorKind::Quota,
            ErrorKind::ContextOverflow,
            ErrorKind::Fatal,
        ] {
            assert_eq!(
                p.decide(1, &http(400, kind, None), 1.0),
                RetryDecision::GiveUp
            );
        }
        assert_eq!(p.decide(1, &LlmError::Aborted, 1.0), RetryDecision::GiveUp);
    }

    #[test]
    fn honours_retry_after_up_to_the_cap() {
        let p = policy();
        let e = http(429, ErrorKind::Retryable, Some(Duration::from_secs(3)));
        assert_eq!(
            p.decide(1, &e, 0.0),
            RetryDecision::RetryAfter(Duration::from_secs(3))
        );
        let e = http(429, ErrorKind::Retryable, Some(Duration::from_secs(10)));
        assert_eq!(
            p.decide(1, &e, 0.0),
            RetryDecision::RetryAfter(Duration::from_secs(10))
        );
        let e = http(429, ErrorKind::Retryable, Some(Duration::from_secs(11)));
        assert_eq!(p.decide(1, &e, 0.0), RetryDecision::GiveUp);
    }

    #[test]
    fn defaults_are_pis() {
        let d = RetryPolicy::default();
        assert_eq!(d.max_attempts, 4);
        assert_eq!(d.backoff(1, 0.5), Duration::from_secs(2));
        assert_eq!(d.backoff(3, 0.5), Duration::from_secs(8));
        assert_eq!(d.max_delay, Duration::from_secs(60));
    }

    #[test]
    fn zero_attempts_means_one() {
        let p = RetryPolicy {
            max_attempts: 0,
            ..policy()
        };
        assert_eq!(p.attempts(), 1);
        assert_eq!(p.decide(1, &conn(), 0.5), RetryDecision::GiveUp);
    }
}
