//! The ACP sessions of one connection: each is one cadre root session (a [`Host`]).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{SessionNotification, StopReason};
use cadre_core::agent::RunOutcome;
use cadre_host::{
    Confirmer, Delivery, Host, HostContext, HostEvent, HostOptions, McpServerConfig, McpTransport,
    SessionChoice,
};
use cadre_protocol::StopReason as CadreStop;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, oneshot};

use super::backlog::Backlog;
use super::permission::EditorConfirmer;
use super::view::{CurrentCall, Update, View};
use crate::args::ServeArgs;

/// How long the end of the connection waits for one session to close.
const CLOSE_WAIT: Duration = Duration::from_secs(15);

/// How often a cancelled turn is aborted again until it has ended.
const ABORT_AGAIN: Duration = Duration::from_millis(100);

/// What every session of the connection shares: the flags and the client's capabilities.
pub struct Sessions {
    args: ServeArgs,
    /// How far the editor is behind in reading updates.
    pub backlog: Backlog,
    /// The client declared the `subagents` capability (children as subagent sessions).
    pub subagents: AtomicBool,
    open: Mutex<HashMap<String, Arc<Session>>>,
    /// Ids being loaded now: a second load of one of them is refused, as a load of an open
    /// session is (two hosts must never write one session file).
    loading: Mutex<std::collections::HashSet<String>>,
}

pub struct Session {
    pub host: Host,
    running: AtomicBool,
    cancelled: AtomicBool,
    cancel: Arc<Notify>,
    /// Answered once every update received so far has been sent.
    barrier: mpsc::UnboundedSender<oneshot::Sender<()>>,
}

/// A request refused, in words for the editor.
pub type Refusal = String;

impl Sessions {
    pub fn new(args: ServeArgs, backlog: Backlog) -> Sessions {
        Sessions {
            args,
            backlog,
            subagents: AtomicBool::new(false),
            open: Mutex::new(HashMap::new()),
            loading: Mutex::new(std::collections::HashSet::new()),
        }
    }

    /// Whether the model sessions start with takes images (the `image` prompt capability).
    /// Worked out for the directory cadre was started in; a session elsewhere may use another
    /// model, whose images are then replaced by a note, as in every cadre mode.
    pub fn model_takes_images(&self) -> bool {
        let Ok(cwd) = std::env::current_dir() else {
            return false;
        };
        HostContext::load(&cwd, self.args.trust, runtime_key(&self.args))
            .and_then(|ctx| ctx.pick_model(model_arg(&self.args).as_deref()))
            .is_ok_and(|model| model.accepts_images())
    }

    fn get(&self, id: &str) -> Result<Arc<Session>, Refusal> {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| {
                format!("unknown session `{id}`: create it with session/new or session/load")
            })
    }

    /// Start a root session in `cwd` (`session/new`, or `session/load` with `load` = its id).
    /// Returns its id and, for a load, the history to replay.
    pub async fn open(
        &self,
        cx: &ConnectionTo<Client>,
        cwd: &Path,
        mcp_servers: &[Value],
        load: Option<&str>,
    ) -> Result<(String, Vec<cadre_protocol::Message>), Refusal> {
        if !cwd.is_absolute() {
            return Err(format!(
                "cwd must be an absolute path, got `{}`",
                cwd.display()
            ));
        }
        if !cwd.is_dir() {
            return Err(format!(
                "cwd `{}` is not an existing directory",
                cwd.display()
            ));
        }
        if let Some(id) = load {
            // An id, never a path: only sessions this agent handed out can be loaded.
            if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                return Err(format!("`{id}` is not a session id"));
            }
            let fresh = self
                .loading
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id.to_string());
            if !fresh || self.get(id).is_ok() {
                if fresh {
                    self.done_loading(id);
                }
                return Err(format!("session `{id}` is already open"));
            }
            let opened = self.start(cx, cwd, mcp_servers, load).await;
            self.done_loading(id);
            return opened;
        }
        self.start(cx, cwd, mcp_servers, load).await
    }

    fn done_loading(&self, id: &str) {
        self.loading
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    async fn start(
        &self,
        cx: &ConnectionTo<Client>,
        cwd: &Path,
        mcp_servers: &[Value],
        load: Option<&str>,
    ) -> Result<(String, Vec<cadre_protocol::Message>), Refusal> {
        let servers = mcp_configs(mcp_servers)?;
        let ctx = HostContext::load(cwd, self.args.trust, runtime_key(&self.args))
            .map_err(|e| crate::one_line(&e))?;
        for note in &ctx.notes {
            errln!("cadre: {note}");
        }
        let session = match load {
            // The exact id among this directory's sessions, never `--session`'s rules.
            Some(id) => {
                let dir = ctx.session_dir(self.args.session_dir.as_deref());
                let path = cadre_core::session::find_session_by_id(&dir, id).ok_or_else(|| {
                    format!(
                        "no session with the id `{id}` among the sessions of `{}` (in {})",
                        cwd.display(),
                        dir.display()
                    )
                })?;
                SessionChoice::Path(path)
            }
            None => SessionChoice::New,
        };
        let session_cell = Arc::new(OnceLock::new());
        let current: CurrentCall = Arc::new(tokio::sync::watch::channel(None).0);
        let cancel = Arc::new(Notify::new());
        let options = HostOptions {
            model: model_arg(&self.args),
            thinking: self.args.thinking.clone(),
            session,
            session_dir: self.args.session_dir.clone(),
            trust: self.args.trust,
            plan: self.args.plan,
            budget: self.args.budget(),
            background_by_default: false,
            stream_updates: true,
            mcp_servers: servers,
            confirm: Some(Confirmer(Arc::new(EditorConfirmer {
                cx: cx.clone(),
                session: session_cell.clone(),
                current: current.clone(),
                cancelled: cancel.clone(),
            }))),
            ..HostOptions::default()
        };
        let started = Host::start(Arc::new(ctx), options)
            .await
            .map_err(|e| crate::one_line(&e))?;
        for warning in &started.warnings {
            errln!("cadre: {warning}");
        }
        let host = started.host;
        let id = host.state().session_id;
        if let Some(wanted) = load
            && wanted != id
        {
            // The file's header named the id; a session whose entries say otherwise is not it.
            host.interrupt();
            let _ = tokio::time::timeout(CLOSE_WAIT, host.shutdown()).await;
            return Err(format!("no session with the id `{wanted}`"));
        }
        let _ = session_cell.set(id.clone());
        let history = if load.is_some() {
            host.messages()
        } else {
            Vec::new()
        };
        let view = View::new(
            id.clone(),
            cwd.to_path_buf(),
            self.subagents.load(Ordering::SeqCst),
            current,
            Some(host.tasks()),
        );
        let (barrier, barriers) = mpsc::unbounded_channel();
        tokio::spawn(forward(
            started.events,
            barriers,
            view,
            cx.clone(),
            self.backlog.clone(),
        ));
        let session = Arc::new(Session {
            host,
            running: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
            cancel,
            barrier,
        });
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), session);
        Ok((id, history))
    }

    /// Claim `id` for a prompt turn. Called in the order requests arrive, before the turn runs
    /// on a task of its own: a `session/cancel` read after the prompt always finds the turn.
    pub fn begin(&self, id: &str) -> Result<Arc<Session>, Refusal> {
        let session = self.get(id)?;
        if session.running.swap(true, Ordering::SeqCst) {
            return Err(
                "a prompt is already running in this session; wait for its answer or send session/cancel"
                    .into(),
            );
        }
        session.cancelled.store(false, Ordering::SeqCst);
        Ok(session)
    }

    /// Run a turn [`Sessions::begin`] claimed to its end: the turn and the tasks it started
    /// have reported. A turn cancelled before it started does not start.
    pub async fn prompt(
        session: Arc<Session>,
        content: cadre_protocol::UserContent,
    ) -> Result<StopReason, Refusal> {
        let outcome = if session.cancelled.load(Ordering::SeqCst) {
            Ok(None)
        } else {
            run_turn(&session, content).await
        };
        // Every update of the turn goes out before its answer.
        let (done, wait) = oneshot::channel();
        if session.barrier.send(done).is_ok() {
            let _ = wait.await;
        }
        session.running.store(false, Ordering::SeqCst);
        let outcome = outcome?;
        if session.cancelled.load(Ordering::SeqCst) {
            return Ok(StopReason::Cancelled);
        }
        stop_reason(outcome.as_ref())
    }

    /// `session/cancel`: the turn is aborted (its foreground tasks with it) and a pending
    /// permission question is withdrawn.
    pub fn cancel(&self, id: &str) {
        if let Ok(session) = self.get(id) {
            session.cancelled.store(true, Ordering::SeqCst);
            session.cancel.notify_waiters();
            session.host.abort();
        }
    }

    /// End every session: runs aborted, tasks stopped, session files closed.
    pub async fn close_all(&self) {
        let sessions: Vec<Arc<Session>> = self
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, s)| s)
            .collect();
        for session in sessions {
            session.cancel.notify_waiters();
            session.host.interrupt();
            match tokio::time::timeout(CLOSE_WAIT, session.host.shutdown()).await {
                Ok(Err(e)) => errln!("cadre: error: {e}"),
                Err(_) => errln!("cadre: a session did not close in time"),
                Ok(Ok(_)) => {}
            }
        }
    }
}

async fn run_turn(
    session: &Session,
    content: cadre_protocol::UserContent,
) -> Result<Option<RunOutcome>, Refusal> {
    // While an idle parent answers a task's notice, the prompt follows that run.
    session
        .host
        .prompt(content, Some(Delivery::FollowUp))
        .map_err(|e| e.message())?;
    let settle = session.host.settle();
    tokio::pin!(settle);
    loop {
        let cancelled = session.cancel.notified();
        tokio::pin!(cancelled);
        cancelled.as_mut().enable();
        if session.cancelled.load(Ordering::SeqCst) {
            // An abort only reaches a run that has started: one sent between the prompt and
            // the start of its run finds nothing to stop, so it is repeated until the turn ends.
            session.host.abort();
            match tokio::time::timeout(ABORT_AGAIN, &mut settle).await {
                Ok(outcome) => return outcome.map_err(|e| e.message()),
                Err(_) => continue,
            }
        }
        tokio::select! {
            outcome = &mut settle => return outcome.map_err(|e| e.message()),
            () = cancelled => {}
        }
    }
}

fn stop_reason(outcome: Option<&RunOutcome>) -> Result<StopReason, Refusal> {
    let Some(outcome) = outcome else {
        return Ok(StopReason::EndTurn);
    };
    match outcome.stop_reason {
        CadreStop::Aborted => Ok(StopReason::Cancelled),
        CadreStop::Length => Ok(StopReason::MaxTokens),
        CadreStop::Error => Err(outcome
            .error
            .clone()
            .unwrap_or_else(|| "the model request failed".into())),
        CadreStop::Stop | CadreStop::ToolUse => Ok(StopReason::EndTurn),
    }
}

/// Host events to `session/update`s, in order; a barrier is answered after the events
/// received before it are sent.
async fn forward(
    mut events: mpsc::UnboundedReceiver<HostEvent>,
    mut barriers: mpsc::UnboundedReceiver<oneshot::Sender<()>>,
    mut view: View,
    cx: ConnectionTo<Client>,
    backlog: Backlog,
) {
    let send = |view: &mut View, event: &HostEvent| {
        for update in view.on_event(event) {
            if !backlog.skips(&update.update) {
                send_update(&cx, &backlog, update);
            }
        }
    };
    loop {
        tokio::select! {
            biased;
            event = events.recv() => match event {
                Some(event) => send(&mut view, &event),
                None => break,
            },
            Some(done) = barriers.recv() => {
                while let Ok(event) = events.try_recv() {
                    send(&mut view, &event);
                }
                let _ = done.send(());
            }
        }
    }
    // The host is gone: answer barriers still waiting.
    while let Ok(done) = barriers.try_recv() {
        let _ = done.send(());
    }
}

pub fn send_update(cx: &ConnectionTo<Client>, backlog: &Backlog, update: Update) {
    let value = json!({"sessionId": update.session, "update": update.update});
    match serde_json::from_value::<SessionNotification>(value) {
        Ok(notification) => {
            if cx.send_notification(notification).is_ok() {
                backlog.queued();
            }
        }
        Err(e) => errln!("cadre acp: an update could not be built: {e}"),
    }
}

/// The editor's MCP servers (`stdio` and `http`) as cadre's server configurations.
fn mcp_configs(servers: &[Value]) -> Result<Vec<McpServerConfig>, Refusal> {
    let pairs = |v: Option<&Value>| -> std::collections::BTreeMap<String, String> {
        v.and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| {
                        Some((
                            i.get("name")?.as_str()?.to_string(),
                            i.get("value")?.as_str()?.to_string(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for server in servers {
        let name = server
            .get("name")
            .and_then(Value::as_str)
            .ok_or("an MCP server needs a `name`")?
            .to_string();
        let transport = match server.get("type").and_then(Value::as_str) {
            Some("http") => McpTransport::Http {
                url: server
                    .get("url")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("MCP server `{name}`: `url` is missing"))?
                    .to_string(),
                headers: pairs(server.get("headers")),
            },
            Some("sse") => {
                return Err(format!(
                    "MCP server `{name}`: SSE servers are not supported (use stdio or http)"
                ));
            }
            _ => McpTransport::Stdio {
                command: server
                    .get("command")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("MCP server `{name}`: `command` is missing"))?
                    .to_string(),
                args: server
                    .get("args")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
                env: pairs(server.get("env")),
                cwd: None,
            },
        };
        out.push(McpServerConfig { name, transport });
    }
    Ok(out)
}

/// `--model`, joined with `--provider` when it names a bare model id.
fn model_arg(args: &ServeArgs) -> Option<String> {
    match (&args.provider, &args.model) {
        (Some(provider), Some(model)) if !model.contains('/') => {
            Some(format!("{provider}/{model}"))
        }
        (_, model) => model.clone(),
    }
}

fn runtime_key(args: &ServeArgs) -> Option<cadre_host::RuntimeKey> {
    Some(cadre_host::RuntimeKey {
        model: model_arg(args)?,
        key: args.api_key.as_ref()?.expose().to_string(),
    })
}
