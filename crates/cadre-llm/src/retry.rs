//! Retry policy: how often, how long to wait, and how long a request may take at all.
//!
//! Pure decisions only; the request loop in [`crate::client`] applies them. Delays grow
//! exponentially from `base_delay` with random jitter (so many clients that failed together do
//! not retry together), capped at `max_delay`. A server's `retry-after` is honoured as given, but
//! a server asking for more than `max_delay` makes the request fail with its error at once: an
//! unattended run waiting an hour for a rate-limit window is worse than a clear failure the caller
//! can fall back from.
//!
//! Time is bounded by [`RequestTimeouts`]: a provider that sends keep-alives, pings or a trickle
//! of bytes but no content cannot hold a request open, and the retries of a request share its
//! whole-request deadline, so retrying never extends it.

use std::time::Duration;

use crate::error::LlmError;

/// The deadlines of one model request.
///
/// *Content* is what a reply is made of: a text, thinking or tool-call block opening, growing
/// or closing (any [`cadre_protocol::AssistantMessageEvent`] after `Start`). Response headers,
/// SSE comments (`: ping`), Anthropic `ping` events, events without content (`message_start`,
/// usage-only or empty-delta chunks), empty `data:` lines and bytes that do not complete an event
/// are not content: they show the connection is alive, not that the model is making progress, and
/// a hostile or broken server can send them forever.
///
/// The defaults are meant for real models with long thinking:
/// - `first_content` 180 s: Anthropic streams thinking as it happens, so its first content comes
///   within seconds; OpenAI-style reasoning models stream no reasoning over Chat Completions and
///   are silent until they answer, which can take minutes at high effort. A deadline hit is
///   retried, repeating the paid reasoning, so this errs long; three minutes is still a wait a
///   user can accept from a provider that turns out to be dead.
/// - `idle` 120 s: once a reply streams, content keeps coming; two minutes without any is a
///   stalled backend, not a slow one.
/// - `total` 30 min: longer than one reply of today's models takes (64k output tokens, the most
///   of them write at once, take about 21 min at 50 tokens/s), short enough that a run never
///   waits for ever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTimeouts {
    /// From sending an attempt's request until its first content. Counted again from each
    /// attempt's send; the response headers do not stop it.
    pub first_content: Duration,
    /// Longest gap between two pieces of content once content has arrived. Time spent waiting
    /// for the consumer to take events is not counted.
    pub idle: Duration,
    /// From the first attempt's send until the terminal event, every retry and backoff wait
    /// included. Nothing extends it.
    pub total: Duration,
}

impl Default for RequestTimeouts {
    fn default() -> Self {
        RequestTimeouts {
            first_content: Duration::from_secs(180),
            idle: Duration::from_secs(120),
            total: Duration::from_secs(30 * 60),
        }
    }
}

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
    /// How many times a request is retried after a first-content or idle deadline. Each such
    /// retry costs a whole deadline of waiting: with one, a provider that answers nothing fails
    /// after two first-content deadlines (about 6 min by default) instead of four.
    pub max_deadline_retries: u32,
    pub timeouts: RequestTimeouts,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(60),
            max_deadline_retries: 1,
            timeouts: RequestTimeouts::default(),
        }
    }
}

/// What a request has used up when one of its attempts failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spent {
    /// Attempts made so far, the failed one included (1-based).
    pub attempts: u32,
    /// Attempts that ended at a first-content or idle deadline, the failed one included.
    pub deadline_hits: u32,
    /// Time left until the whole-request deadline.
    pub remaining: Duration,
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

    /// Decide after an attempt failed with `error`. `unit_random` is a number in `[0, 1)` used
    /// for jitter (passed in so the decision is testable). A retry whose wait would reach the
    /// whole-request deadline is not made: the request fails with the error it has now rather
    /// than sleep into a deadline it cannot meet.
    pub fn decide(&self, spent: Spent, error: &LlmError, unit_random: f64) -> RetryDecision {
        if !error.is_retryable() || spent.attempts >= self.attempts() {
            return RetryDecision::GiveUp;
        }
        if error.is_deadline() && spent.deadline_hits > self.max_deadline_retries {
            return RetryDecision::GiveUp;
        }
        let delay = match error.retry_after() {
            Some(asked) if asked > self.max_delay => return RetryDecision::GiveUp,
            Some(asked) => asked,
            None => self.backoff(spent.attempts, unit_random),
        };
        if delay >= spent.remaining {
            return RetryDecision::GiveUp;
        }
        RetryDecision::RetryAfter(delay)
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
    use crate::error::{ErrorKind, Received, Waited};

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(10),
            max_deadline_retries: 1,
            timeouts: RequestTimeouts {
                first_content: Duration::from_secs(5),
                idle: Duration::from_secs(5),
                total: Duration::from_secs(100),
            },
        }
    }

    /// After attempt `attempts`, with plenty of time left and no deadline hit.
    fn after(attempts: u32) -> Spent {
        Spent {
            attempts,
            deadline_hits: 0,
            remaining: Duration::from_secs(1000),
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

    fn no_content() -> LlmError {
        LlmError::NoContent {
            provider: "p".into(),
            waited: Waited::Idle,
            after: Duration::from_secs(5),
            received: Received::KeepAlives,
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
            p.decide(after(1), &conn(), 0.5),
            RetryDecision::RetryAfter(Duration::from_secs(1))
        );
        assert_eq!(
            p.decide(after(3), &conn(), 0.5),
            RetryDecision::RetryAfter(Duration::from_secs(4))
        );
        assert_eq!(p.decide(after(4), &conn(), 1.0), RetryDecision::GiveUp);
        for kind in [
            ErrorKind::Auth,
            ErrorKind::Quota,
            ErrorKind::ContextOverflow,
            ErrorKind::Fatal,
        ] {
            assert_eq!(
                p.decide(after(1), &http(400, kind, None), 1.0),
                RetryDecision::GiveUp
            );
        }
        assert_eq!(
            p.decide(after(1), &LlmError::Aborted, 1.0),
            RetryDecision::GiveUp
        );
    }

    #[test]
    fn honours_retry_after_up_to_the_cap() {
        let p = policy();
        let e = http(429, ErrorKind::Retryable, Some(Duration::from_secs(3)));
        assert_eq!(
            p.decide(after(1), &e, 0.0),
            RetryDecision::RetryAfter(Duration::from_secs(3))
        );
        let e = http(429, ErrorKind::Retryable, Some(Duration::from_secs(10)));
        assert_eq!(
            p.decide(after(1), &e, 0.0),
            RetryDecision::RetryAfter(Duration::from_secs(10))
        );
        let e = http(429, ErrorKind::Retryable, Some(Duration::from_secs(11)));
        assert_eq!(p.decide(after(1), &e, 0.0), RetryDecision::GiveUp);
    }

    #[test]
    fn a_wait_that_reaches_the_request_deadline_is_not_made() {
        let p = policy();
        let short = |remaining| Spent {
            remaining,
            ..after(1)
        };
        assert_eq!(
            p.decide(short(Duration::from_millis(1001)), &conn(), 0.5),
            RetryDecision::RetryAfter(Duration::from_secs(1))
        );
        assert_eq!(
            p.decide(short(Duration::from_secs(1)), &conn(), 0.5),
            RetryDecision::GiveUp
        );
        assert_eq!(
            p.decide(short(Duration::ZERO), &conn(), 0.5),
            RetryDecision::GiveUp
        );
        // A server's retry-after is no exception.
        let e = http(429, ErrorKind::Retryable, Some(Duration::from_secs(3)));
        assert_eq!(
            p.decide(short(Duration::from_secs(2)), &e, 0.5),
            RetryDecision::GiveUp
        );
    }

    #[test]
    fn deadline_hits_are_retried_only_as_often_as_allowed() {
        let p = policy();
        let hits = |deadline_hits| Spent {
            deadline_hits,
            ..after(1)
        };
        assert_eq!(
            p.decide(hits(1), &no_content(), 0.5),
            RetryDecision::RetryAfter(Duration::from_secs(1))
        );
        assert_eq!(p.decide(hits(2), &no_content(), 0.5), RetryDecision::GiveUp);
        // Other errors are not limited by earlier deadline hits.
        assert_eq!(
            p.decide(hits(2), &conn(), 0.5),
            RetryDecision::RetryAfter(Duration::from_secs(1))
        );
        let none = RetryPolicy {
            max_deadline_retries: 0,
            ..p
        };
        assert_eq!(
            none.decide(hits(1), &no_content(), 0.5),
            RetryDecision::GiveUp
        );
        // The whole-request deadline is never retried: the request's time is used up.
        let total = LlmError::RequestDeadline {
            provider: "p".into(),
            limit: Duration::from_secs(100),
        };
        assert_eq!(p.decide(after(1), &total, 0.5), RetryDecision::GiveUp);
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
    fn default_deadlines() {
        let t = RetryPolicy::default().timeouts;
        assert_eq!(t.first_content, Duration::from_secs(180));
        assert_eq!(t.idle, Duration::from_secs(120));
        assert_eq!(t.total, Duration::from_secs(1800));
        assert_eq!(RetryPolicy::default().max_deadline_retries, 1);
    }

    #[test]
    fn zero_attempts_means_one() {
        let p = RetryPolicy {
            max_attempts: 0,
            ..policy()
        };
        assert_eq!(p.attempts(), 1);
        assert_eq!(p.decide(after(1), &conn(), 0.5), RetryDecision::GiveUp);
    }
}
