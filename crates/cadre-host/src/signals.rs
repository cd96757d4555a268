//! SIGINT and SIGTERM for every front end: the first ends the run properly, the second exits.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use crate::service::InterruptHandle;

const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

/// The lines of a live view's frame on stderr now (print mode's task tree), with the cursor
/// at the start of the line below them; 0 when none is drawn.
static LIVE_FRAME_LINES: AtomicUsize = AtomicUsize::new(0);

/// A live view drew (or cleared) a frame of `lines` lines on stderr, ending with a newline:
/// the second signal's message replaces it rather than landing under a frame that no longer
/// changes. Call it while holding stderr's lock, as the message is written under it.
pub fn note_live_frame(lines: usize) {
    LIVE_FRAME_LINES.store(lines, Ordering::SeqCst);
}

/// The signal's name for messages.
pub fn signal_name(signal: i32) -> String {
    match signal {
        SIGINT => "SIGINT".to_string(),
        SIGTERM => "SIGTERM".to_string(),
        n => format!("signal {n}"),
    }
}

/// SIGINT and SIGTERM as one stream (Ctrl-C only where there is no SIGTERM).
pub struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    pub fn new() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// Waits for the next signal and returns its number; `None` if signals can no longer be
    /// received.
    pub async fn next(&mut self) -> Option<i32> {
        #[cfg(unix)]
        {
            tokio::select! {
                got = self.interrupt.recv() => got.map(|()| SIGINT),
                got = self.terminate.recv() => got.map(|()| SIGTERM),
            }
        }
        #[cfg(not(unix))]
        tokio::signal::ctrl_c().await.ok().map(|()| SIGINT)
    }
}

/// The first SIGINT or SIGTERM interrupts `host`: no notice wakes the parent any more, the
/// run is aborted (tools killed, every tool call answered, the session closed properly) and
/// the tasks are stopped (L6) — a supervisor stopping a subagent sends SIGTERM. A second
/// signal exits at once, for when the abort itself is stuck (ending the MCP servers' process
/// groups first). The first signal's number is
/// stored in the returned cell, so the front end can say the run was interrupted and exit as a
/// shell expects (128 + signal). Register it before the run starts, so no signal slips
/// through to the default handler; abort the task when the run is over.
pub fn interrupt_on_signal(host: InterruptHandle) -> (Arc<AtomicI32>, tokio::task::JoinHandle<()>) {
    on_signal(move || host.interrupt(), "the abort")
}

/// The first SIGINT or SIGTERM calls `first`; a second exits at once with 128 + signal
/// (ending the MCP servers' process groups first), saying it did not wait for `waited_for`.
/// The first signal's number is stored in the returned cell (0: none yet); abort the task
/// when it is no longer wanted.
pub fn on_signal(
    first: impl FnOnce() + Send + 'static,
    waited_for: &'static str,
) -> (Arc<AtomicI32>, tokio::task::JoinHandle<()>) {
    let received = Arc::new(AtomicI32::new(0));
    let cell = received.clone();
    let signals = Signals::new().ok();
    let task = tokio::spawn(async move {
        let Some(mut signals) = signals else {
            return;
        };
        let Some(signal) = signals.next().await else {
            return;
        };
        cell.store(signal, Ordering::SeqCst);
        first();
        if let Some(again) = signals.next().await {
            // Under stderr's lock, the frame count cannot change before the line is written.
            let mut stderr = std::io::stderr().lock();
            let line = format!(
                "{}cadre: error: interrupted again; exiting without waiting for {waited_for}\n",
                line_start(
                    stderr.is_terminal(),
                    std::env::var("TERM").ok().as_deref(),
                    LIVE_FRAME_LINES.load(Ordering::SeqCst),
                )
            );
            let _ = std::io::Write::write_all(&mut stderr, line.as_bytes());
            drop(stderr);
            // Exiting runs no destructor: the MCP servers' process groups are ended here.
            cadre_mcp::stop_all();
            std::process::exit(128 + again);
        }
    });
    (received, task)
}

/// What goes before the second signal's message so that it starts on a line of its own. At a
/// terminal that moves its cursor, the cursor sits after the `^C` the terminal echoed, on the
/// line below the live view's frame (if one is drawn): the message goes back to the frame's
/// first line and clears to the end of the screen (just the line without a frame). Elsewhere
/// (a pipe, a log, a `dumb` terminal) nothing, as escape sequences would show as text there.
fn line_start(stderr_is_terminal: bool, term: Option<&str>, frame_lines: usize) -> String {
    match term {
        Some(term) if stderr_is_terminal && !term.is_empty() && term != "dumb" => match frame_lines
        {
            0 => "\r\x1b[K".to_string(),
            n => format!("\r\x1b[{n}A\x1b[J"),
        },
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_second_signal_message_starts_a_clean_line_at_a_terminal_only() {
        assert_eq!(line_start(true, Some("xterm-256color"), 0), "\r\x1b[K");
        // Over a live frame of 3 lines: back up to its first line and clear it all.
        assert_eq!(line_start(true, Some("xterm"), 3), "\r\x1b[3A\x1b[J");
        assert_eq!(line_start(false, Some("xterm-256color"), 3), "");
        assert_eq!(line_start(true, Some("dumb"), 0), "");
        assert_eq!(line_start(true, Some(""), 0), "");
        assert_eq!(line_start(true, None, 0), "");
    }
}
