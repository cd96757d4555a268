//! SIGINT and SIGTERM for `cadre mcp`: the first ends the server properly (its tasks stopped,
//! its sessions closed, exit 128 + n), the second exits at once.
//!
//! The host's own handler only interrupts a root session; here the first signal must also
//! end the connection, which would otherwise wait for the client's end of input.

use std::sync::Arc;
use std::sync::atomic::AtomicI32;

use tokio_util::sync::CancellationToken;

/// The first signal's number (0: none yet), a token cancelled by it, and the listening task
/// (abort it when the server has ended).
pub fn first_signal_stops() -> (
    Arc<AtomicI32>,
    CancellationToken,
    tokio::task::JoinHandle<()>,
) {
    let stop = CancellationToken::new();
    let token = stop.clone();
    let (received, task) = cadre_host::on_signal(move || token.cancel(), "the tasks to stop");
    (received, stop, task)
}
