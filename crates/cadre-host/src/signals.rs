//! SIGINT and SIGTERM for every front end: the first ends the run properly, the second exits.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::service::InterruptHandle;

const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

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
            let line = format!(
                "cadre: error: interrupted again; exiting without waiting for {waited_for}\n"
            );
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            // Exiting runs no destructor: the MCP servers' process groups are ended here.
            cadre_mcp::stop_all();
            std::process::exit(128 + again);
        }
    });
    (received, task)
}
