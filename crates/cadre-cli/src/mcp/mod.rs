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
mod progress;
mod resources;
mod session;

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

/// One connection on stdin/stdout: one root session, ended with the input.
async fn serve_stdio(setup: config::Setup) -> Result<ExitCode> {
    use rmcp::ServiceExt;
    let served = session::Served::start(&setup).await?;
    let handler = handler::CadreMcp::new(served.clone());
    let (interrupted, signals) = cadre_host::interrupt_on_signal(served.host().interrupt_handle());
    let running = handler.serve(rmcp::transport::stdio()).await;
    let outcome = match running {
        Ok(service) => service
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| e.to_string()),
        // The client went away or sent no valid initialisation: nothing was served.
        Err(e) => Err(e.to_string()),
    };
    // End of input, a signal or a broken connection: the tasks are stopped (L6) and the
    // session file written out, as the other front ends do at exit.
    let closed = served.close().await;
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
