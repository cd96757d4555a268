//! SIGINT and SIGTERM for `cadre mcp`: the first ends the server properly (its tasks stopped,
//! its sessions closed, exit 128 + n), the second exits at once.
//!
//! The host's own handler only interrupts a root session; here the first signal must also
//! end the connection, which would otherwise wait for the client's end of input.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use tokio_util::sync::CancellationToken;

/// The first signal's number (0: none yet), a token cancelled by it, and the listening task
/// (abort it when the server has ended).
pub fn first_signal_stops() -> (
    Arc<AtomicI32>,
    CancellationToken,
    tokio::task::JoinHandle<()>,
) {
    let received = Arc::new(AtomicI32::new(0));
    let stop = CancellationToken::new();
    let signals = cadre_host::Signals::new().ok();
    let (cell, token) = (received.clone(), stop.clone());
    let task = tokio::spawn(async move {
        let Some(mut signals) = signals else {
            return;
        };
        let Some(signal) = signals.next().await else {
            return;
        };
        cell.store(signal, Ordering::SeqCst);
        token.cancel();
        if let Some(again) = signals.next().await {
            errln!(
                "cadre: error: interrupted again; exiting without waiting for the tasks to stop"
            );
            // Exiting runs no destructor: the MCP servers' process groups are ended here.
            cadre_mcp::stop_all();
            std::process::exit(128 + again);
        }
    });
    (received, stop, task)
}
