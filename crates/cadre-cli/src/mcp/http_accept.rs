//! How `cadre mcp --http` takes connections. Every local user can reach loopback, so a
//! connection is a resource any of them can take: the server holds at most
//! [`MAX_CONNECTIONS`] at once (another is closed as soon as it is accepted), a connection that
//! does not send a request's headers within the header deadline is closed (hyper's
//! `header_read_timeout`, also between the requests of a kept-alive connection), an accept
//! that fails for want of descriptors or memory (`EMFILE`, `ENFILE`, `ENOBUFS`) is retried
//! after a pause that grows while it keeps failing, and such failures are written to stderr
//! at most once a second, with a count of the ones left out.

use std::io;
use std::time::{Duration, Instant};

/// The most connections served at once; past it a new connection is closed at once.
pub const MAX_CONNECTIONS: usize = 64;

/// How long a connection may take to send a request's headers (the first request, or the next
/// one on a kept-alive connection) before it is closed.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The header deadline in milliseconds instead of [`HEADER_TIMEOUT`] (for tests; not
/// documented as a setting).
pub const HEADER_TIMEOUT_VAR: &str = "CADRE_MCP_HTTP_HEADER_TIMEOUT_MS";

/// The first pause after a failed accept, and the longest.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LONGEST_PAUSE: Duration = Duration::from_secs(1);

/// How often a kind of failure may be written to stderr.
pub const LOG_EVERY: Duration = Duration::from_secs(1);

/// The header deadline: [`HEADER_TIMEOUT_VAR`] when it holds a positive number of
/// milliseconds, else [`HEADER_TIMEOUT`].
pub fn header_timeout() -> Duration {
    header_timeout_from(std::env::var(HEADER_TIMEOUT_VAR).ok().as_deref())
}

fn header_timeout_from(value: Option<&str>) -> Duration {
    value
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map_or(HEADER_TIMEOUT, Duration::from_millis)
}

/// Whether a failed accept concerns one connection only (it was reset or aborted before it
/// was taken, or the call was interrupted): the listener is fine and the next accept may
/// follow at once. Anything else (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`) fails again until
/// something is freed, so it is waited out.
pub fn affects_one_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    ) || e.raw_os_error() == Some(libc::EPROTO)
}

/// The pause after each failed accept: 100 ms, doubled after every failure up to 1 s, and
/// back to 100 ms after an accept succeeds.
#[derive(Debug)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { next: FIRST_PAUSE }
    }
}

impl Backoff {
    /// The pause to take now; the next one is longer.
    pub fn pause(&mut self) -> Duration {
        let now = self.next;
        self.next = (self.next * 2).min(LONGEST_PAUSE);
        now
    }

    /// An accept succeeded.
    pub fn reset(&mut self) {
        self.next = FIRST_PAUSE;
    }
}

/// Lets one line through per interval and counts the ones held back, which the next line
/// that passes reports.
#[derive(Debug)]
pub struct Throttle {
    every: Duration,
    last: Option<Instant>,
    held_back: u64,
}

impl Throttle {
    pub fn new(every: Duration) -> Throttle {
        Throttle {
            every,
            last: None,
            held_back: 0,
        }
    }

    /// Whether a line may be written at `now`: `Some(n)` with the number of lines held back
    /// since the last one written, else `None` (and this one is counted).
    pub fn admit(&mut self, now: Instant) -> Option<u64> {
        if self
            .last
            .is_some_and(|last| now.saturating_duration_since(last) < self.every)
        {
            self.held_back += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.held_back))
    }
}

/// What a written line adds about the ones held back before it.
pub fn held_back_note(n: u64) -> String {
    match n {
        0 => String::new(),
        1 => " (1 more like it not shown)".to_string(),
        n => format!(" ({n} more like it not shown)"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_grows_to_a_second_and_starts_again_after_a_success() {
        let mut b = Backoff::default();
        let pauses: Vec<u64> = (0..6).map(|_| b.pause().as_millis() as u64).collect();
        assert_eq!(pauses, [100, 200, 400, 800, 1000, 1000]);
        b.reset();
        assert_eq!(b.pause(), Duration::from_millis(100));
    }

    #[test]
    fn one_line_a_second_with_the_count_of_the_others() {
        let mut t = Throttle::new(Duration::from_secs(1));
        let start = Instant::now();
        assert_eq!(t.admit(start), Some(0));
        for ms in [1, 10, 500, 999] {
            assert_eq!(t.admit(start + Duration::from_millis(ms)), None);
        }
        assert_eq!(t.admit(start + Duration::from_millis(1000)), Some(4));
        assert_eq!(t.admit(start + Duration::from_millis(1500)), None);
        assert_eq!(t.admit(start + Duration::from_millis(2500)), Some(1));
        assert_eq!(held_back_note(0), "");
        assert_eq!(held_back_note(4), " (4 more like it not shown)");
    }

    #[test]
    fn which_failures_are_waited_out() {
        for errno in [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM] {
            assert!(!affects_one_connection(&io::Error::from_raw_os_error(
                errno
            )));
        }
        for errno in [libc::ECONNABORTED, libc::EINTR, libc::EPROTO] {
            assert!(affects_one_connection(&io::Error::from_raw_os_error(errno)));
        }
    }

    #[test]
    fn the_header_deadline_takes_positive_milliseconds_only() {
        assert_eq!(header_timeout_from(None), HEADER_TIMEOUT);
        assert_eq!(header_timeout_from(Some("250")), Duration::from_millis(250));
        assert_eq!(header_timeout_from(Some("0")), HEADER_TIMEOUT);
        assert_eq!(header_timeout_from(Some("soon")), HEADER_TIMEOUT);
    }
}
