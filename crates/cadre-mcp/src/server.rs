//! One running MCP server: started (a child process or an HTTP session), initialized, its tools
//! listed, and called with a bound on every wait.
//!
//! A child process runs in its own process group, with stdin and stdout as the MCP channel and
//! stderr into a capped log file — never into cadre's own output, which is a protocol channel
//! in some modes. It inherits cadre's environment (credentials were removed from it at
//! start-up) plus what its configuration names, and no descriptor past stdio (cadre marks
//! the ones it inherited close-on-exec). The group is killed when the server is dropped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, Tool};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::config::{McpServerConfig, McpTransport};

/// The most bytes of a server's stderr kept in its log file.
pub const MAX_LOG_BYTES: u64 = 1024 * 1024;
/// The most tools taken from one server (a server listing more is cut, with a warning).
pub const MAX_TOOLS: usize = 512;

/// How servers are started and called.
#[derive(Debug, Clone)]
pub struct ServerLimits {
    /// Bounds starting, initializing and listing tools.
    pub startup_timeout: Duration,
    /// Bounds one tool call.
    pub call_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            startup_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(600),
        }
    }
}

/// Where a server runs and logs.
#[derive(Debug, Clone)]
pub struct ServerPlace {
    /// The working directory of a child process without its own `cwd`.
    pub cwd: PathBuf,
    /// Where `<server>.log` (a child's stderr) goes; `None`: stderr is discarded.
    pub log_dir: Option<PathBuf>,
}

/// The process groups of servers that run, so that [`stop_all`] can end them when the process
/// exits without dropping them.
static LIVE_GROUPS: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

fn live_groups() -> std::sync::MutexGuard<'static, Vec<i32>> {
    LIVE_GROUPS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[allow(unsafe_code)]
fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: killpg takes integers; the group is a server's own (the server leads it).
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// Kill every server process group still running (for a process about to exit).
pub fn stop_all() {
    for pgid in std::mem::take(&mut *live_groups()) {
        kill_group(pgid);
    }
}

/// Kills a child's process group when dropped: the server and whatever it started.
struct ProcessGroup(i32);

impl ProcessGroup {
    fn new(pgid: i32) -> ProcessGroup {
        live_groups().push(pgid);
        ProcessGroup(pgid)
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        let mut live = live_groups();
        if let Some(i) = live.iter().position(|g| *g == self.0) {
            live.swap_remove(i);
            kill_group(self.0);
        }
    }
}

/// The outcome of a tool call that has no MCP result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallFailure {
    Cancelled,
    TimedOut(Duration),
    /// The connection failed or closed (the server died, the HTTP session ended).
    Closed(String),
    /// The server answered with a JSON-RPC error.
    Error(String),
}

/// A started, initialized server.
pub struct Server {
    pub name: String,
    /// Its tools, as it listed them at start-up.
    pub tools: Vec<Tool>,
    /// Where its stderr goes, if it has a log.
    pub log: Option<PathBuf>,
    /// A note about the start (tools cut at [`MAX_TOOLS`]).
    pub notes: Vec<String>,
    peer: Peer<RoleClient>,
    limits: ServerLimits,
    /// A child process's channel, which once closed stays closed (an HTTP request can fail
    /// and the session go on).
    stdio: bool,
    /// Set when a call found the channel closed.
    lost: std::sync::atomic::AtomicBool,
    /// An HTTP server's URL and what to show instead, for errors that quote it.
    url: Option<(String, String)>,
    // Dropped in this order: the service (closing the channel), then the group.
    _service: RunningService<RoleClient, ClientConfig>,
    group: std::sync::Mutex<Option<ProcessGroup>>,
}

impl Server {
    /// Start `config` within the start-up timeout. The error says why, in one line.
    pub async fn start(
        config: &McpServerConfig,
        place: &ServerPlace,
        limits: &ServerLimits,
    ) -> Result<Server, String> {
        // Everything below drops on timeout, which kills a child that was started.
        match tokio::time::timeout(limits.startup_timeout, start(config, place, limits)).await {
            // An error that quotes the URL must not show its query or user info (tokens).
            Ok(Err(why)) => Err(match &config.transport {
                McpTransport::Http { url, .. } => scrub_url(&why, url, &config.transport.target()),
                McpTransport::Stdio { .. } => why,
            }),
            Ok(result) => result,
            Err(_) => Err(format!(
                "it was not ready within {}s",
                limits.startup_timeout.as_secs_f64()
            )),
        }
    }

    /// Call tool `tool` with `arguments`: the result as JSON, or why there is none. Cancelling
    /// `cancel` (or the timeout) abandons the call, which sends `notifications/cancelled`.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        cancel: &CancellationToken,
    ) -> Result<Value, CallFailure> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        let call = self.peer.call_tool(params);
        let timeout = self.limits.call_timeout;
        let result = tokio::select! {
            r = call => r,
            _ = cancel.cancelled() => return Err(CallFailure::Cancelled),
            _ = tokio::time::sleep(timeout) => return Err(CallFailure::TimedOut(timeout)),
        };
        match result {
            Ok(result) => serde_json::to_value(result)
                .map_err(|e| CallFailure::Error(format!("unreadable result: {e}"))),
            Err(rmcp::ServiceError::McpError(e)) => Err(CallFailure::Error(e.message.to_string())),
            Err(rmcp::ServiceError::TransportClosed) => {
                self.mark_lost();
                Err(CallFailure::Closed("the connection closed".into()))
            }
            Err(e @ rmcp::ServiceError::TransportSend(_)) => {
                self.mark_lost();
                Err(CallFailure::Closed(self.clean(&e.to_string())))
            }
            // An answer of the wrong kind and the like: the channel itself is fine.
            Err(e) => Err(CallFailure::Error(self.clean(&e.to_string()))),
        }
    }

    /// Kill its process group now (tools that still hold it then fail as closed).
    pub fn stop(&self) {
        let group = self
            .group
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        drop(group);
    }

    /// `text` without the secret parts of the server's URL.
    fn clean(&self, text: &str) -> String {
        match &self.url {
            Some((url, safe)) => scrub_url(text, url, safe),
            None => text.to_string(),
        }
    }

    fn mark_lost(&self) {
        if self.stdio {
            self.lost.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Whether the connection is closed for good (the server exited or the session ended).
    pub fn is_closed(&self) -> bool {
        self.lost.load(std::sync::atomic::Ordering::Relaxed) || self.peer.is_transport_closed()
    }
}

async fn start(
    config: &McpServerConfig,
    place: &ServerPlace,
    limits: &ServerLimits,
) -> Result<Server, String> {
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("cadre", env!("CARGO_PKG_VERSION")),
    );
    let (service, group, log) = match &config.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args)
                .envs(env)
                .current_dir(cwd.as_deref().unwrap_or(&place.cwd))
                .process_group(0)
                .kill_on_drop(true);
            die_with_parent(&mut cmd);
            let (transport, stderr) = TokioChildProcess::builder(cmd)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot run {command}: {e}"))?;
            let group = transport
                .id()
                .and_then(|pid| i32::try_from(pid).ok())
                .map(ProcessGroup::new);
            let log = place
                .log_dir
                .as_ref()
                .map(|dir| dir.join(format!("{}.log", config.name)));
            if let Some(stderr) = stderr {
                tokio::spawn(drain_stderr(stderr, log.clone()));
            }
            let service = client
                .serve(transport)
                .await
                .map_err(|e| format!("initialization failed: {e}{}", log_hint(log.as_deref())))?;
            (service, group, log)
        }
        McpTransport::Http { url, headers } => {
            let http = http_client()?;
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("header name {name:?} is not valid"))?;
                let value = reqwest::header::HeaderValue::from_str(value)
                    .map_err(|_| format!("the value of header {name} is not valid"))?;
                custom.insert(name, value);
            }
            let transport = StreamableHttpClientTransport::with_client(
                http,
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom),
            );
            let service = client
                .serve(transport)
                .await
                .map_err(|e| format!("initialization failed: {e}"))?;
            (service, None, None)
        }
    };
    let peer = service.peer().clone();
    let mut tools = peer
        .list_all_tools()
        .await
        .map_err(|e| format!("cannot list its tools: {e}"))?;
    let mut notes = Vec::new();
    if tools.len() > MAX_TOOLS {
        notes.push(format!(
            "it lists {} tools; only the first {MAX_TOOLS} are used",
            tools.len()
        ));
        tools.truncate(MAX_TOOLS);
    }
    Ok(Server {
        name: config.name.clone(),
        tools,
        log,
        notes,
        peer,
        limits: limits.clone(),
        stdio: matches!(config.transport, McpTransport::Stdio { .. }),
        url: match &config.transport {
            McpTransport::Http { url, .. } => Some((url.clone(), config.transport.target())),
            McpTransport::Stdio { .. } => None,
        },
        lost: std::sync::atomic::AtomicBool::new(false),
        _service: service,
        group: std::sync::Mutex::new(group),
    })
}

/// The server gets SIGKILL when the thread that started it ends: with cadre's single-threaded
/// runtime that is cadre itself, so a server does not outlive a cadre killed with SIGKILL
/// (which runs no cleanup).
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut tokio::process::Command) {
    #[cfg(target_os = "linux")]
    // SAFETY: the closure runs between fork and exec and calls only prctl, which is
    // async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// `text` without the secret parts of `url`: the whole URL becomes `safe`, and its query,
/// fragment and user info go wherever they appear (an HTTP client quotes the URL its own way).
fn scrub_url(text: &str, url: &str, safe: &str) -> String {
    let mut out = text.replace(url, safe);
    if let Some(i) = url.find(['?', '#'])
        && url.len() > i + 1
    {
        out = out.replace(&url[i..], "");
    }
    if let Some((_, rest)) = url.split_once("://") {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if let Some((userinfo, _)) = authority.rsplit_once('@')
            && !userinfo.is_empty()
        {
            out = out.replace(&format!("{userinfo}@"), "");
        }
    }
    out
}

fn log_hint(log: Option<&Path>) -> String {
    log.map(|p| format!(" (its stderr is in {})", p.display()))
        .unwrap_or_default()
}

/// The HTTP client of MCP servers: no redirects (a redirect would replay the configured
/// headers to wherever it points), bounded connects.
fn http_client() -> Result<reqwest::Client, String> {
    // Fails only when a provider is already installed, which is just as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// Copy a child's stderr into `log`, up to [`MAX_LOG_BYTES`], and discard the rest: the pipe
/// is always read, so a chatty server never blocks on it.
async fn drain_stderr(mut stderr: tokio::process::ChildStderr, log: Option<PathBuf>) {
    let mut file = match &log {
        Some(path) => {
            if let Some(dir) = path.parent() {
                let _ = tokio::fs::create_dir_all(dir).await;
            }
            tokio::fs::File::create(path).await.ok()
        }
        None => None,
    };
    let mut written: u64 = 0;
    let mut buf = vec![0u8; 8192];
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let Some(f) = file.as_mut() else { continue };
        let room = MAX_LOG_BYTES.saturating_sub(written);
        let take = n.min(usize::try_from(room).unwrap_or(usize::MAX));
        if take > 0 && f.write_all(&buf[..take]).await.is_err() {
            file = None;
            continue;
        }
        written += take as u64;
        if take < n {
            let _ = f
                .write_all(b"\n[log cut: the server wrote more than 1 MiB to stderr]\n")
                .await;
            let _ = f.flush().await;
            file = None;
        }
    }
    if let Some(mut f) = file {
        let _ = f.flush().await;
    }
}
