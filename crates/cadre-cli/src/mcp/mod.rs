//! `cadre mcp`: cadre's subagents served to an MCP client (SPEC I3, `docs/mcp-server.md`).
//!
//! The client is the parent: it calls `Agent`, `SendMessage`, `TaskOutput` and `TaskStop` as
//! the root model would, and the calls run the root session's own orchestration tools, so
//! their parameters and behaviour never drift from the built-in ones. stdout carries MCP frames
//! and nothing else; every note goes to stderr.

mod call;
mod config;
mod handler;
mod http;
mod http_accept;
mod http_auth;
mod http_gate;
mod progress;
mod resources;
mod session;
mod signal;
mod stdio;

use std::process::ExitCode;

use anyhow::Result;

use crate::args::McpArgs;

pub async fn run(args: McpArgs) -> Result<ExitCode> {
    let setup = config::Setup::load(&args.serve)?;
    match &args.http {
        Some(addr) => http::serve(setup, addr).await,
        None => serve_stdio(setup).await,
    }
}

/// One connection on stdin/stdout: one root session, ended with the input or the first
/// SIGINT/SIGTERM.
///
/// The handshake is answered at once: the root session (and the MCP servers it starts, which
/// may take their whole start-up timeout) is built in the background from the start, and the
/// first request that needs it waits for it.
async fn serve_stdio(setup: config::Setup) -> Result<ExitCode> {
    use rmcp::ServiceExt;
    let (interrupted, stop, signals) = signal::first_signal_stops();
    let handler = handler::CadreMcp::single(std::sync::Arc::new(setup));
    let warm = {
        let handler = handler.clone();
        tokio::spawn(async move {
            if let Err(e) = handler.start_session().await {
                errln!("cadre: error: {}", e.message);
            }
        })
    };
    let outcome: Result<(), String> = tokio::select! {
        running = handler.clone().serve(stdio::StdioTransport::start()) => match running {
            Ok(service) => {
                let ct = service.cancellation_token();
                let waiting = service.waiting();
                tokio::pin!(waiting);
                tokio::select! {
                    ended = &mut waiting => ended.map(|_| ()).map_err(|e| e.to_string()),
                    () = stop.cancelled() => {
                        // In-flight calls are cancelled; their tasks are stopped below.
                        ct.cancel();
                        let _ = tokio::time::timeout(SERVICE_END, &mut waiting).await;
                        Ok(())
                    }
                }
            }
            // The client went away or sent no valid initialisation: nothing was served.
            Err(e) => Err(e.to_string()),
        },
        () = stop.cancelled() => Ok(()),
    };
    // A session still being built (its MCP servers starting) is abandoned: nothing ran in it.
    warm.abort();
    // End of input, a signal or a broken connection: the tasks are stopped (L6) and the
    // session file written out, as the other front ends do at exit.
    let closed = match handler.started_session() {
        Some(served) => served.close().await,
        None => {
            cadre_mcp::stop_all();
            Ok(())
        }
    };
    signals.abort();
    if let Err(e) = &outcome {
        errln!("cadre: mcp: the connection ended: {e}");
    }
    if let Err(e) = closed {
        errln!("cadre: error: {e}");
        return Ok(ExitCode::FAILURE);
    }
    match interrupted.load(std::sync::atomic::Ordering::SeqCst) {
        0 => Ok(ExitCode::SUCCESS),
        n => Ok(ExitCode::from(u8::try_from(128 + n).unwrap_or(1))),
    }
}

/// How long the MCP service may take to end once a signal cancelled it.
const SERVICE_END: std::time::Duration = std::time::Duration::from_secs(3);
