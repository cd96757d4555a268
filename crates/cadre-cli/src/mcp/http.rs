//! `cadre mcp --http ADDR`: streamable HTTP (rmcp's `StreamableHttpService`) on hyper, HTTP/1.
//!
//! Loopback only: anyone who can reach the port can run agents in this project with its
//! credentials, so a non-loopback address is refused, and since every local user can reach
//! loopback, every request must carry the server's bearer token (`http_auth`). `Host` is
//! checked against the loopback names (DNS rebinding) and a browser's `Origin` must be a
//! loopback origin; request bodies are capped. Each MCP session (an initialised client) gets
//! its own root session, at most [`MAX_SESSIONS`] at a time; stateless requests (protocol
//! 2026-07-28, no session) share the process's root session. Connections are bounded in
//! number and in the time their headers may take, and accept failures are waited out
//! (`http_accept`).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio::sync::OnceCell;

use super::config::Setup;
use super::handler::CadreMcp;
use super::http_accept::{self, Backoff, LOG_EVERY, MAX_CONNECTIONS, Throttle};
use super::http_gate::Gate;
use super::session::{Served, Sessions};

/// The largest request body accepted.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The most MCP sessions (each a root session with its tasks) served at once.
pub const MAX_SESSIONS: usize = 16;

pub async fn serve(setup: Setup, addr: &str) -> Result<ExitCode> {
    let addr = parse_loopback(addr)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener
        .local_addr()
        .context("cannot read the bound address")?;
    let setup = Arc::new(setup);
    let process: Arc<OnceCell<Served>> = Arc::new(OnceCell::new());
    let shutdown = tokio_util::sync::CancellationToken::new();
    let port = bound.port();
    let token = super::http_auth::Token::new()?;
    let token_file = super::http_auth::token_path(setup.ctx.home.root(), port);
    super::http_auth::write_token(&token_file, token.value())?;
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts([
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "[::1]".to_string(),
            "::1".to_string(),
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
        ])
        .with_allowed_origins([
            format!("http://localhost:{port}"),
            format!("http://127.0.0.1:{port}"),
            format!("http://[::1]:{port}"),
        ])
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(shutdown.child_token());
    let sessions: Sessions = Arc::default();
    let mcp_sessions = Arc::new(LocalSessionManager::default());
    let factory_setup = setup.clone();
    let factory_process = process.clone();
    let factory_sessions = sessions.clone();
    let service = StreamableHttpService::new(
        move || {
            Ok(CadreMcp::lazy(
                factory_setup.clone(),
                factory_process.clone(),
                factory_sessions.clone(),
            ))
        },
        mcp_sessions.clone(),
        config,
    );
    errln!("cadre: mcp: serving streamable HTTP on http://{bound}/mcp");
    if token.is_from_env() {
        errln!(
            "cadre: mcp: requests need `Authorization: Bearer` with the token of {} (also in {})",
            super::http_auth::TOKEN_VAR,
            token_file.display()
        );
    } else {
        errln!(
            "cadre: mcp: requests need `Authorization: Bearer {}` (also in {})",
            token.value(),
            token_file.display()
        );
    }
    let gate = Arc::new(Gate::new(token, mcp_sessions, MAX_SESSIONS));
    let (interrupted, signals) = signal_flag();
    // Connections are a resource every local user can take (`http_accept`): a bounded number,
    // each with a deadline for its headers, and accept failures waited out, never spun on.
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let header_timeout = http_accept::header_timeout();
    let mut backoff = Backoff::default();
    let mut failed_log = Throttle::new(LOG_EVERY);
    let mut refused_log = Throttle::new(LOG_EVERY);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = wait_flag(&interrupted) => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                backoff.reset();
                stream
            }
            Err(e) => {
                if let Some(held_back) = failed_log.admit(std::time::Instant::now()) {
                    errln!(
                        "cadre: mcp: accept failed: {e}{}",
                        http_accept::held_back_note(held_back)
                    );
                }
                if !http_accept::affects_one_connection(&e) {
                    // Out of descriptors or memory: accepting again at once fails again.
                    tokio::select! {
                        () = tokio::time::sleep(backoff.pause()) => {}
                        () = wait_flag(&interrupted) => break,
                    }
                }
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            drop(stream);
            if let Some(held_back) = refused_log.admit(std::time::Instant::now()) {
                errln!(
                    "cadre: mcp: closed a new connection: {MAX_CONNECTIONS} are open already{}",
                    http_accept::held_back_note(held_back)
                );
            }
            continue;
        };
        let service = service.clone();
        let gate = gate.clone();
        tokio::spawn(async move {
            // The slot is freed when the connection ends, however it ends.
            let _slot = slot;
            let io = hyper_util::rt::TokioIo::new(stream);
            let inner = hyper_util::service::TowerToHyperService::new(service);
            let gated = hyper::service::service_fn(move |request| {
                let (gate, inner) = (gate.clone(), inner.clone());
                async move { gate.serve(request, &inner).await }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(io, gated)
                .await;
        });
    }
    shutdown.cancel();
    signals.abort();
    let _ = std::fs::remove_file(&token_file);
    // Every root session still open — the MCP sessions' and the stateless requests' — has
    // its tasks stopped and its file written out before the process ends.
    let mut open: Vec<Served> = sessions
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .filter_map(|s| s.upgrade())
        .collect();
    open.extend(process.get().cloned());
    let mut failed = false;
    for served in open {
        if let Err(e) = served.close().await {
            errln!("cadre: error: {e}");
            failed = true;
        }
    }
    if failed {
        return Ok(ExitCode::FAILURE);
    }
    match interrupted.load(std::sync::atomic::Ordering::SeqCst) {
        0 => Ok(ExitCode::SUCCESS),
        n => Ok(ExitCode::from(u8::try_from(128 + n).unwrap_or(1))),
    }
}

/// `ADDR` as a loopback socket address; any other address is refused.
fn parse_loopback(addr: &str) -> Result<SocketAddr> {
    let trimmed = addr.trim();
    let with_host = match trimmed.strip_prefix("localhost:") {
        Some(port) => format!("127.0.0.1:{port}"),
        None => trimmed.to_string(),
    };
    let parsed: SocketAddr = with_host.parse().with_context(|| {
        format!("--http needs HOST:PORT with a loopback host (e.g. 127.0.0.1:8765), got `{addr}`")
    })?;
    if !parsed.ip().is_loopback() {
        bail!(
            "--http refuses {addr}: cadre mcp serves on loopback only (127.0.0.1, ::1, localhost), \
             since anyone who reaches the port can run agents with your credentials; \
             to serve other machines, put an authenticating proxy or an SSH tunnel in front"
        );
    }
    Ok(parsed)
}

/// SIGINT/SIGTERM as a flag (the first one ends the server).
fn signal_flag() -> (
    Arc<std::sync::atomic::AtomicI32>,
    tokio::task::JoinHandle<()>,
) {
    let flag = Arc::new(std::sync::atomic::AtomicI32::new(0));
    let set = flag.clone();
    let handle = tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return;
        };
        let n = tokio::select! {
            _ = int.recv() => 2,
            _ = term.recv() => 15,
        };
        set.store(n, std::sync::atomic::Ordering::SeqCst);
    });
    (flag, handle)
}

async fn wait_flag(flag: &std::sync::atomic::AtomicI32) {
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
    loop {
        tick.tick().await;
        if flag.load(std::sync::atomic::Ordering::SeqCst) != 0 {
            return;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_are_served() {
        assert!(parse_loopback("127.0.0.1:8765").is_ok());
        assert!(parse_loopback("[::1]:0").is_ok());
        assert_eq!(parse_loopback("localhost:9").unwrap().port(), 9);
        let err = parse_loopback("0.0.0.0:8765").unwrap_err().to_string();
        assert!(err.contains("loopback only"), "{err}");
        assert!(parse_loopback("192.168.1.2:80").is_err());
        let err = parse_loopback("example.com:80").unwrap_err().to_string();
        assert!(err.contains("HOST:PORT"), "{err}");
    }
}
