//! [`Watch`]: what every wait of a request races against — its cancellation and its deadlines.
//!
//! A request has three deadlines ([`RequestTimeouts`]): the whole-request deadline, fixed when
//! the request starts, and one *progress* deadline that is the first-content deadline until an
//! attempt's first content and the idle deadline after it. Only [`Watch::content`] moves the
//! progress deadline; bytes, comments and events without content never do, so a provider that
//! keeps the connection busy without answering still runs into it.
//!
//! Both deadlines share one timer, set to the earlier of the two, and the cancellation future
//! is created once: a fresh `cancelled()` future and `timeout` per awaited chunk registered a
//! waiter in the token's tree and a timer-wheel entry each time and removed both again (SPEC
//! P1). Moving the deadline of a registered timer later is a single atomic store.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use cadre_protocol::AssistantMessageEvent;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::error::{LlmError, Received, Waited};
use crate::provider::StreamEvent;
use crate::retry::RequestTimeouts;

/// How a guarded wait ended.
pub(crate) enum Guarded<T> {
    Ready(T),
    Expired(Deadline),
    Cancelled,
}

/// The deadline that passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deadline {
    FirstContent,
    Idle,
    Total,
}

pub(crate) struct Watch<'a> {
    cancel: &'a CancellationToken,
    cancelled: Pin<Box<WaitForCancellationFuture<'a>>>,
    /// The earlier deadline during network reads, the backoff between attempts.
    timer: Pin<Box<Sleep>>,
    timeouts: RequestTimeouts,
    /// Set once, when the request starts: nothing extends it.
    total_at: Instant,
    /// The first-content deadline, or the idle deadline once the attempt had content.
    progress_at: Instant,
    /// The current attempt has had content (so `progress_at` is the idle deadline).
    had_content: bool,
}

impl<'a> Watch<'a> {
    /// The request starts now (its whole-request deadline with it), as does its first attempt.
    pub(crate) fn new(cancel: &'a CancellationToken, timeouts: RequestTimeouts) -> Self {
        let now = Instant::now();
        let total_at = deadline_after(now, timeouts.total);
        let progress_at = deadline_after(now, timeouts.first_content);
        Watch {
            cancel,
            cancelled: Box::pin(cancel.cancelled()),
            timer: Box::pin(tokio::time::sleep_until(progress_at.min(total_at))),
            timeouts,
            total_at,
            progress_at,
            had_content: false,
        }
    }

    /// An attempt is about to send its request: its first-content deadline starts now.
    pub(crate) fn start_attempt(&mut self) {
        self.progress_at = deadline_after(Instant::now(), self.timeouts.first_content);
        self.had_content = false;
    }

    /// Content arrived and was handed to the consumer: the idle deadline starts again now, so
    /// the time the consumer took to accept it never counts as provider silence.
    pub(crate) fn content(&mut self) {
        self.progress_at = deadline_after(Instant::now(), self.timeouts.idle);
        self.had_content = true;
    }

    /// The error for a passed deadline; `received` is what came while no content did.
    pub(crate) fn error(&self, provider: &str, deadline: Deadline, received: Received) -> LlmError {
        let provider = provider.to_string();
        let (waited, after) = match deadline {
            Deadline::Total => {
                return LlmError::RequestDeadline {
                    provider,
                    limit: self.timeouts.total,
                };
            }
            Deadline::FirstContent => (Waited::FirstContent, self.timeouts.first_content),
            Deadline::Idle => (Waited::Idle, self.timeouts.idle),
        };
        LlmError::NoContent {
            provider,
            waited,
            after,
            received,
        }
    }

    /// Time left until the whole-request deadline.
    pub(crate) fn remaining(&self) -> Duration {
        self.total_at.saturating_duration_since(Instant::now())
    }

    /// Await a network step unless the request is cancelled (checked first) or a deadline
    /// passes first.
    pub(crate) async fn network<F: Future>(&mut self, fut: F) -> Guarded<F::Output> {
        let total_first = self.total_at <= self.progress_at;
        let at = if total_first {
            self.total_at
        } else {
            self.progress_at
        };
        self.timer.as_mut().reset(at);
        tokio::select! {
            biased;
            _ = self.cancelled.as_mut() => Guarded::Cancelled,
            v = fut => Guarded::Ready(v),
            _ = self.timer.as_mut() => Guarded::Expired(if total_first {
                Deadline::Total
            } else if self.had_content {
                Deadline::Idle
            } else {
                Deadline::FirstContent
            }),
        }
    }

    /// Wait `delay` (a retry backoff); false when the request was cancelled first. The caller
    /// checks the delay against [`Watch::remaining`] first.
    pub(crate) async fn pause(&mut self, delay: Duration) -> bool {
        self.timer
            .as_mut()
            .reset(deadline_after(Instant::now(), delay));
        tokio::select! {
            biased;
            _ = self.cancelled.as_mut() => false,
            _ = self.timer.as_mut() => true,
        }
    }

    /// Hand one event to the consumer; a cancelled request or a closed channel is an abort.
    pub(crate) async fn send(
        &mut self,
        tx: &mpsc::Sender<StreamEvent>,
        ev: StreamEvent,
    ) -> Result<(), LlmError> {
        // Abort wins over an event the consumer could still take.
        if self.cancel.is_cancelled() {
            return Err(LlmError::Aborted);
        }
        let ev = match tx.try_send(ev) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Closed(_)) => return Err(LlmError::Aborted),
            Err(TrySendError::Full(ev)) => ev,
        };
        // The consumer is behind: wait for room, abortable. The consumer's pace is its own:
        // the next network wait still ends at the whole-request deadline.
        tokio::select! {
            biased;
            _ = self.cancelled.as_mut() => Err(LlmError::Aborted),
            r = tx.send(ev) => r.map_err(|_| LlmError::Aborted),
        }
    }

    /// Forward events to the consumer, in order (see [`Watch::send`]).
    pub(crate) async fn forward(
        &mut self,
        tx: &mpsc::Sender<StreamEvent>,
        events: &mut Vec<AssistantMessageEvent>,
    ) -> Result<(), LlmError> {
        for ev in events.drain(..) {
            self.send(tx, StreamEvent::Delta(ev)).await?;
        }
        Ok(())
    }
}

/// The instant `after` from `now`; a duration too long to represent waits practically forever,
/// as `tokio::time::sleep` does.
pub(crate) fn deadline_after(now: Instant, after: Duration) -> Instant {
    now.checked_add(after)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30))
}

#[cfg(test)]
#[path = "watch_tests.rs"]
mod tests;
