//! One running MCP server: started (a child process or an HTTP session), initialized, its tools
//! listed, and called with a bound on every wait.
//!
//! A child process runs in its own process group, with stdin and stdout as the MCP channel and
//! stderr into a capped log file — never into cadre's own output, which is a protocol channel
//! in some modes. It inherits cadre's environment (credentials were removed from it at
//! start-up) plus what its configuration names, and no descriptor past stdio (cadre marks
//! the ones it inherited close-on-exec). The group is killed when the server is dropped, when
//! the process exits through [`stop_all`], and as soon as the server itself exits (what it
//! started goes with it, and the group's id is never signalled again once it could have been
//! reused). A SIGKILL of cadre runs none of that: the server then gets SIGKILL from the kernel
//! (`PR_SET_PDEATHSIG`, Linux), but what it started lives on unless it ends itself when its
//! parent does — cadre's bash supervisor cannot help here, since it takes stdin for its
//! lifeline and the server needs stdin for MCP.
//!
//! A message over [`MAX_MESSAGE_BYTES`] from a child ends the connection at once (rmcp would
//! drop the line and leave the call waiting until its timeout): every call in flight fails
//! with a message that says so.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    PaginatedRequestParams, Tool,
};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};
use tokio_util::sync::CancellationToken;

use crate::cause::{init_cause, service_cause};
use crate::config::{McpServerConfig, McpTransport};
pub use crate::log::MAX_LOG_BYTES;

/// The most tools taken from one server (a server listing more is cut, with a warning).
pub const MAX_TOOLS: usize = 512;
/// The most `tools/list` pages read from one server.
pub const MAX_TOOL_PAGES: usize = 64;
/// The most bytes of tool definitions (serialized) read from one server's listing.
pub const MAX_LIST_BYTES: usize = 8 * 1024 * 1024;
/// The largest message taken from a child server (rmcp's own limit is 16 MiB, past which it
/// drops the line and keeps waiting).
pub const MAX_MESSAGE_BYTES: usize = 15 * 1024 * 1024;

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
    /// Where `<server>-<pid>-<n>.log` (a child's stderr) goes; `None`: stderr is discarded.
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

/// End `pgid` if it is still a live server's group, and forget it. Called while the server
/// (the group's leader) has exited but is not yet reaped, so the id cannot have been reused.
fn end_group(pgid: i32) {
    let mut live = live_groups();
    if let Some(i) = live.iter().position(|g| *g == pgid) {
        live.swap_remove(i);
        kill_group(pgid);
    }
}

/// Whether `pgid` is still a live server's group (it was not ended yet).
pub fn is_live_group(pgid: i32) -> bool {
    live_groups().contains(&pgid)
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
        end_group(self.0);
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
    /// A child's process group id (while it runs).
    pub pgid: Option<i32>,
    /// Set when a child sent a message over [`MAX_MESSAGE_BYTES`] (which ended the channel).
    oversized: Arc<AtomicBool>,
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
            // Causes are cadre's own phrases; a URL in one must still not show its secrets.
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
            Err(rmcp::ServiceError::TransportClosed) if self.oversized.load(Ordering::Relaxed) => {
                self.mark_lost();
                Err(CallFailure::Closed(format!(
                    "it sent a message over {} MiB, which ended the connection",
                    MAX_MESSAGE_BYTES / (1024 * 1024)
                )))
            }
            Err(rmcp::ServiceError::TransportClosed) => {
                self.mark_lost();
                Err(CallFailure::Closed("the connection closed".into()))
            }
            Err(e @ rmcp::ServiceError::TransportSend(_)) => {
                self.mark_lost();
                Err(CallFailure::Closed(self.clean(&service_cause(&e))))
            }
            // An answer of the wrong kind and the like: the channel itself is fine.
            Err(e) => Err(CallFailure::Error(self.clean(&service_cause(&e)))),
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
    let oversized = Arc::new(AtomicBool::new(false));
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
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            die_with_parent(&mut cmd);
            let mut child = cmd
                .spawn()
                .map_err(|e| format!("cannot run {command}: {}", spawn_cause(&e)))?;
            let group = child
                .id()
                .and_then(|pid| i32::try_from(pid).ok())
                .map(ProcessGroup::new);
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                return Err("its stdin or stdout could not be opened".into());
            };
            let log = place
                .log_dir
                .as_ref()
                .map(|dir| crate::log::new_log_path(dir, &config.name));
            if let Some(stderr) = child.stderr.take() {
                tokio::spawn(drain_stderr(stderr, log.clone()));
            }
            reap(child, group.as_ref().map(|g| g.0));
            let stdout = FrameGuard {
                inner: stdout,
                line: 0,
                tripped: oversized.clone(),
            };
            let service = client.serve((stdout, stdin)).await.map_err(|e| {
                format!(
                    "initialization failed: {}{}",
                    init_cause(&e),
                    log_hint(log.as_deref())
                )
            })?;
            (service, group, log)
        }
        McpTransport::Http { url, headers } => {
            let http = http_client()?;
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let name =
                    reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                        format!(
                            "header name {:?} is not valid",
                            crate::shown::server_text(name)
                        )
                    })?;
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
                .map_err(|e| format!("initialization failed: {}", init_cause(&e)))?;
            (service, None, None)
        }
    };
    let peer = service.peer().clone();
    let (tools, notes) = list_tools(&peer).await?;
    Ok(Server {
        name: config.name.clone(),
        tools,
        log,
        notes,
        pgid: group.as_ref().map(|g| g.0),
        oversized,
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

/// The server's tools, page by page, up to [`MAX_TOOLS`], [`MAX_TOOL_PAGES`] pages and
/// [`MAX_LIST_BYTES`]: a server that pages without end costs a bounded start-up. Anything cut
/// is a note.
async fn list_tools(peer: &Peer<RoleClient>) -> Result<(Vec<Tool>, Vec<String>), String> {
    let mut tools: Vec<Tool> = Vec::new();
    let mut notes = Vec::new();
    let mut cursor: Option<String> = None;
    let mut bytes = 0usize;
    for page in 1..=MAX_TOOL_PAGES {
        let params = cursor
            .take()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let listed = peer
            .list_tools(params)
            .await
            .map_err(|e| format!("cannot list its tools: {}", service_cause(&e)))?;
        for tool in listed.tools {
            bytes += serde_json::to_string(&tool).map_or(usize::MAX / 2, |t| t.len());
            if tools.len() >= MAX_TOOLS || bytes > MAX_LIST_BYTES {
                notes.push(format!(
                    "it lists more than {} tools or {} MiB of tool definitions; only the first \
                     {} are used",
                    MAX_TOOLS,
                    MAX_LIST_BYTES / (1024 * 1024),
                    tools.len()
                ));
                return Ok((tools, notes));
            }
            tools.push(tool);
        }
        match listed.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok((tools, notes)),
        }
        if page == MAX_TOOL_PAGES {
            notes.push(format!(
                "it lists its tools in more than {MAX_TOOL_PAGES} pages; only the first \
                 {MAX_TOOL_PAGES} are used ({} tools)",
                tools.len()
            ));
        }
    }
    Ok((tools, notes))
}

/// Wait for the child's exit, end its process group while the exited server still holds the
/// group's id (a zombie keeps its pid), then reap it. Where the exit cannot be awaited without
/// reaping, the group is only forgotten: never signal an id that may belong to someone else.
fn reap(mut child: tokio::process::Child, pgid: Option<i32>) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let watcher = pgid.and_then(|pgid| {
        std::thread::Builder::new()
            .name("mcp-server-exit".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                if wait_exited(pgid) {
                    end_group(pgid);
                } else {
                    forget_group(pgid);
                }
                let _ = tx.send(());
            })
            .ok()
    });
    tokio::spawn(async move {
        if watcher.is_some() {
            // Not reaped before the watcher has seen the exit (or given up).
            let _ = rx.await;
        }
        let _ = child.wait().await;
        if let Some(pgid) = pgid {
            forget_group(pgid);
        }
    });
}

/// Forget `pgid` without signalling it.
fn forget_group(pgid: i32) {
    live_groups().retain(|g| *g != pgid);
}

/// Block until process `pid` has exited, leaving it unreaped; false if that cannot be waited
/// for.
#[allow(unsafe_code)]
fn wait_exited(pid: i32) -> bool {
    #[cfg(target_os = "linux")]
    loop {
        // SAFETY: siginfo_t is plain data, for which all zero bytes is a valid value; waitid
        // writes only into `info`, which lives on this stack.
        let r = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return true;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        false
    }
}

/// A child's stdout that fails (ending the MCP channel) once a line passes
/// [`MAX_MESSAGE_BYTES`], and says so in `tripped`.
struct FrameGuard<R> {
    inner: R,
    /// Bytes since the last newline.
    line: usize,
    tripped: Arc<AtomicBool>,
}

impl<R: AsyncRead + Unpin> AsyncRead for FrameGuard<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.tripped.load(Ordering::Relaxed) {
            return Poll::Ready(Err(oversize_error()));
        }
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        let new = &buf.filled()[before..];
        this.line = match new.iter().rposition(|b| *b == b'\n') {
            Some(i) => new.len() - i - 1,
            None => this.line.saturating_add(new.len()),
        };
        if this.line > MAX_MESSAGE_BYTES {
            this.tripped.store(true, Ordering::Relaxed);
            return Poll::Ready(Err(oversize_error()));
        }
        Poll::Ready(Ok(()))
    }
}

fn oversize_error() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "a message from the MCP server is too large",
    )
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
/// is always read, so a chatty server never blocks on it. What is written is redacted as it
/// streams (a key split across two reads is caught too): a server that prints its
/// environment or an echoing error never puts a registered secret on disk.
async fn drain_stderr(mut stderr: tokio::process::ChildStderr, log: Option<PathBuf>) {
    let mut file = match &log {
        Some(path) => {
            if let Some(dir) = path.parent() {
                let _ = tokio::fs::create_dir_all(dir).await;
            }
            create_private(path).await
        }
        None => None,
    };
    let mut redactor = cadre_protocol::redact::StreamRedactor::default();
    let mut written: u64 = 0;
    let mut buf = vec![0u8; 8192];
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let Some(f) = file.as_mut() else { continue };
        let shown = redactor.push(&String::from_utf8_lossy(&buf[..n]));
        if !write_capped(f, shown.as_bytes(), &mut written).await {
            file = None;
        }
    }
    if let Some(mut f) = file {
        let rest = redactor.finish();
        let _ = write_capped(&mut f, rest.as_bytes(), &mut written).await;
        let _ = f.flush().await;
    }
}

/// A new log file readable by its owner only.
async fn create_private(path: &std::path::Path) -> Option<tokio::fs::File> {
    tokio::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .await
        .ok()
}

/// Write `bytes` within [`MAX_LOG_BYTES`] in all; `false` once the log is full (a note ends
/// it) or cannot be written.
async fn write_capped(f: &mut tokio::fs::File, bytes: &[u8], written: &mut u64) -> bool {
    let room = MAX_LOG_BYTES.saturating_sub(*written);
    let take = bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX));
    if take > 0 && f.write_all(&bytes[..take]).await.is_err() {
        return false;
    }
    *written += take as u64;
    if take < bytes.len() {
        let _ = f
            .write_all(b"\n[log cut: the server wrote more than 1 MiB to stderr]\n")
            .await;
        let _ = f.flush().await;
        return false;
    }
    true
}

/// Why a server's command could not be started, in words a person can act on.
fn spawn_cause(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such program (is it installed and on PATH?)".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied (is it executable?)".into(),
        kind => kind.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod log_tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A server that prints a registered key to stderr, split across two writes: the log has
    /// it redacted, and only its owner can read the log.
    #[tokio::test]
    async fn a_server_s_stderr_reaches_its_log_redacted_and_private() {
        cadre_protocol::redact::set_secrets(["sk-mcp-log-secret-42ab".to_string()]);
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("srv-1-1.log");
        let mut child = tokio::process::Command::new("sh")
            .args([
                "-c",
                "printf 'token=sk-mcp-lo' >&2; sleep 0.1; printf 'g-secret-42ab done\\n' >&2",
            ])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        drain_stderr(stderr, Some(log.clone())).await;
        let _ = child.wait().await;
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(!text.contains("sk-mcp-log-secret-42ab"), "{text}");
        assert!(
            !text.contains("sk-mcp-lo"),
            "no first characters either: {text}"
        );
        assert!(text.contains("token=[redacted] done"), "{text}");
        let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
