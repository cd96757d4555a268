//! The session service: one root session served to a front end, operations in, events out.
//!
//! A [`Host`] is a cheap handle. Everything that needs the agent itself (a prompt, a model
//! change, a session switch, compaction) goes to one actor task that owns the root session and
//! runs one operation at a time; while a run is in progress, operations wait in its queue in
//! order. Everything that must answer at once while the agent runs — steer, follow-up, abort,
//! state, messages, the task operations — is served from shared handles (the agent's
//! controller, the conversation mirror, the task manager) without the actor.
//!
//! The actor also owns the idle parent's wake-up (O6): a task notice that arrives while the
//! parent runs is steered into the run; one that arrives while it is idle starts a run on the
//! notice. No front end has to keep a run alive for notifications.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use anyhow::Result;
use cadre_core::agent::{AgentController, RunOutcome};
use cadre_core::orchestrator::manager::{ConversationMirror, ParentNotice, TaskEvent, TaskManager};
use cadre_llm::{Model, resolve_thinking};
use cadre_protocol::{
    AgentEvent, CompactionResult, Message, SessionHeader, ThinkingLevel, UserContent,
};
use tokio::sync::{mpsc, oneshot};

use crate::context::{HostContext, parse_thinking};
use crate::error::HostError;
use crate::options::{HostOptions, SessionChoice};
use crate::root::{Root, RootInputs, ToolChoice};
use crate::session_open::{self, OpenedSession};

/// What a front end receives: the root agent's events and its tasks' events.
#[derive(Debug, Clone)]
pub enum HostEvent {
    Agent(AgentEvent),
    Task(TaskEvent),
}

/// How a prompt that arrives while the agent runs is delivered (Pi's `streamingBehavior`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// After the current tool calls, before the next model request.
    Steer,
    /// When the agent would otherwise stop.
    FollowUp,
}

/// The state a front end shows (Pi's `get_state`).
#[derive(Debug, Clone)]
pub struct HostState {
    pub model: Model,
    pub thinking: ThinkingLevel,
    pub is_streaming: bool,
    pub is_compacting: bool,
    pub session_file: Option<PathBuf>,
    pub session_id: String,
    pub session_name: Option<String>,
    pub auto_compaction: bool,
    pub message_count: usize,
    pub pending_message_count: usize,
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
    /// The session's token and cost budget (`None`: no cap).
    pub budget: Option<cadre_protocol::BudgetState>,
}

/// How a session switch went.
#[derive(Debug, Clone, PartialEq)]
pub struct Switched {
    /// The new session's header (`None` without a session file).
    pub header: Option<SessionHeader>,
    /// For a fork: the text of the user message it was forked before.
    pub text: Option<String>,
    /// Notes from building the new session and closing the old one.
    pub warnings: Vec<String>,
}

/// A started host: the handle, the event stream, and what the person should be told.
pub struct StartedHost {
    pub host: Host,
    pub events: mpsc::UnboundedReceiver<HostEvent>,
    /// Notes from building the session (clamped thinking, broken role files, …), each
    /// starting with its kind (`note: …`, `warning: …`).
    pub warnings: Vec<String>,
    /// The session header (`None` with `--no-session`).
    pub header: Option<SessionHeader>,
}

type Reply<T> = oneshot::Sender<Result<T, HostError>>;

enum Op {
    Prompt(Vec<Message>),
    Settle(Reply<Option<RunOutcome>>),
    SetModel(String, Reply<Model>),
    SetThinking(ThinkingLevel, Reply<ThinkingLevel>),
    Switch(SwitchTo, Reply<Switched>),
    SetSessionName(String, Reply<()>),
    Compact(Option<String>, Reply<CompactionResult>),
    SetAutoCompaction(bool, Reply<()>),
    /// Boxed: a message is far larger than the other operations.
    Append(Box<Message>, Reply<()>),
    /// Several messages, recorded next to each other.
    AppendAll(Vec<Message>, Reply<()>),
    Shutdown(Reply<Option<PathBuf>>),
}

enum SwitchTo {
    /// A new session, naming `parent` as its parent session when given.
    New(Option<PathBuf>),
    Path(PathBuf),
    Fork(String),
    Clone,
}

/// The parts of the root session that answer while a run holds the agent. Replaced together
/// when the session is switched.
struct Live {
    controller: AgentController,
    manager: TaskManager,
    orchestration_tools: Vec<Arc<dyn cadre_tools::Tool>>,
    mirror: Arc<ConversationMirror>,
    model: Model,
    thinking: ThinkingLevel,
    session_file: Option<PathBuf>,
    session_id: String,
    header: Option<SessionHeader>,
    session_name: Option<String>,
    auto_compaction: bool,
}

struct Shared {
    live: Mutex<Live>,
    streaming: AtomicBool,
    compacting: AtomicBool,
    /// Set by [`Host::interrupt`]: notices no longer wake the parent.
    interrupted: AtomicBool,
    /// Cancels the running RPC `bash` command.
    bash: Mutex<Option<tokio_util::sync::CancellationToken>>,
}

impl Shared {
    fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
        let (controller, manager) = {
            let live = lock(&self.live);
            (live.controller.clone(), live.manager.clone())
        };
        controller.abort();
        if let Some(cancel) = lock(&self.bash).take() {
            cancel.cancel();
        }
        tokio::spawn(async move { manager.shutdown().await });
    }
}

/// See [`Host::interrupt_handle`].
#[derive(Clone)]
pub struct InterruptHandle(std::sync::Weak<Shared>);

impl InterruptHandle {
    /// [`Host::interrupt`], if the session still exists.
    pub fn interrupt(&self) {
        if let Some(shared) = self.0.upgrade() {
            shared.interrupt();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A handle to a running root session. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    ops: mpsc::UnboundedSender<Op>,
    shared: Arc<Shared>,
    ctx: Arc<HostContext>,
}

impl Host {
    /// Build the root session `options` describe and start serving it.
    pub async fn start(ctx: Arc<HostContext>, options: HostOptions) -> Result<StartedHost> {
        let tools = ToolChoice::from_options(&options)?;
        let session_dir = ctx.session_dir(options.session_dir.as_deref());
        let choice = ctx.resolve_session(&options.session, &session_dir)?;
        let restored = session_open::peek_selection(&choice, &session_dir);
        let mut notes = Vec::new();
        // The session's own model and level unless flags say otherwise (as Pi keeps them); a
        // recorded model that is gone falls back to the default, with a note.
        let model = match (&options.model, restored.model_name()) {
            (None, Some(name)) => match ctx.registry.resolve(&name) {
                Ok(model) => model,
                Err(e) => {
                    let model = ctx.pick_model(None)?;
                    notes.push(format!(
                        "note: the session's model {name} is not available ({e}); continuing with {}",
                        model.full_name()
                    ));
                    model
                }
            },
            _ => ctx.pick_model(options.model.as_deref())?,
        };
        let flag = options
            .thinking
            .as_deref()
            .map(parse_thinking)
            .transpose()?;
        let thinking = restored.thinking_level(flag, ctx.settings.default_thinking_level);
        let opened = session_open::open_session(
            &choice,
            &session_dir,
            &ctx.cwd,
            options.session_file_when_used,
        )
        .await?;
        ctx.install_shell_env(&model)?;
        let (events_tx, events) = mpsc::unbounded_channel();
        let (agent_tx, agent_rx) = mpsc::unbounded_channel();
        let name = opened.name.clone();
        // Started once for this root session, before its tools are chosen; shared by its
        // children and stopped when the session ends (the actor drops the set).
        let mcp = crate::mcp::start(&ctx, &options).await;
        notes.extend(mcp.warnings.iter().cloned());
        let root = Root::build(RootInputs {
            ctx: &ctx,
            options: &options,
            tools: &tools,
            mcp: mcp.tools(),
            session: opened,
            model,
            thinking,
            events: agent_tx,
        })?;
        notes.extend(root.warnings.iter().cloned());
        let warnings = notes;
        let live = live_of(&root, name);
        let header = live.header.clone();
        let shared = Arc::new(Shared {
            live: Mutex::new(live),
            streaming: AtomicBool::new(false),
            compacting: AtomicBool::new(false),
            interrupted: AtomicBool::new(false),
            bash: Mutex::new(None),
        });
        let (ops_tx, ops_rx) = mpsc::unbounded_channel();
        let barrier = spawn_forwarder(
            agent_rx,
            root.orchestration.mirror.clone(),
            events_tx.clone(),
        );
        let actor = Actor {
            ctx: ctx.clone(),
            options,
            tools,
            mcp,
            task_events: spawn_task_events(&root.orchestration.manager, events_tx.clone()),
            stop_requests: root.orchestration.watch_stop_requests(),
            barrier,
            session_dir,
            root,
            ops: ops_rx,
            events: events_tx,
            shared: shared.clone(),
            last_outcome: None,
            settle: Vec::new(),
        };
        tokio::spawn(actor.serve());
        Ok(StartedHost {
            host: Host {
                ops: ops_tx,
                shared,
                ctx,
            },
            events,
            warnings,
            header,
        })
    }

    fn send(&self, op: Op) -> Result<(), HostError> {
        self.ops
            .send(op)
            .map_err(|_| HostError::Ended("the session has ended".into()))
    }

    /// Queue `op` now (operations are served in the order they were asked for) and return
    /// the wait for its answer.
    fn ask<T: Send + 'static, F: FnOnce(Reply<T>) -> Op>(
        &self,
        make: F,
    ) -> impl Future<Output = Result<T, HostError>> + Send + 'static + use<T, F> {
        let (tx, rx) = oneshot::channel();
        let sent = self.send(make(tx));
        async move {
            sent?;
            rx.await
                .unwrap_or_else(|_| Err(HostError::Ended("the session has ended".into())))
        }
    }

    pub fn context(&self) -> &HostContext {
        &self.ctx
    }

    /// Send a prompt. While the agent runs, `delivery` says how it is queued (without one
    /// the prompt is refused, as Pi refuses it); when idle it starts a run. Returns once the
    /// prompt is accepted; the run's progress comes as events.
    pub fn prompt(
        &self,
        content: UserContent,
        delivery: Option<Delivery>,
    ) -> Result<(), HostError> {
        if self.is_streaming() {
            let text = queued_text(&content)?;
            let controller = lock(&self.shared.live).controller.clone();
            return match delivery {
                Some(Delivery::Steer) => {
                    controller.steer(text);
                    Ok(())
                }
                Some(Delivery::FollowUp) => {
                    controller.follow_up(text);
                    Ok(())
                }
                None => Err(HostError::Busy(
                    "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
                        .into(),
                )),
            };
        }
        self.send(Op::Prompt(vec![Message::User(
            cadre_protocol::UserMessage {
                content,
                timestamp: cadre_protocol::now_millis(),
            },
        )]))
    }

    /// Queue a steering message (delivered after the current tool calls; at the start of the
    /// next run when idle).
    pub fn steer(&self, content: UserContent) -> Result<(), HostError> {
        let text = queued_text(&content)?;
        lock(&self.shared.live).controller.steer(text);
        Ok(())
    }

    /// Queue a follow-up message (delivered when the agent would otherwise stop). When idle,
    /// it starts a run, as a prompt would.
    pub fn follow_up(&self, content: UserContent) -> Result<(), HostError> {
        if !self.is_streaming() {
            return self.prompt(content, None);
        }
        let text = queued_text(&content)?;
        lock(&self.shared.live).controller.follow_up(text);
        Ok(())
    }

    /// Take back the person's steers and follow-ups still queued (task notices stay queued),
    /// oldest first: the interactive mode's Esc puts them back into the editor.
    pub fn withdraw_queued(&self) -> Vec<String> {
        lock(&self.shared.live).controller.withdraw_queued()
    }

    /// Abort the current run (tools are stopped, every tool call gets a result). The tasks
    /// keep running; [`Host::interrupt`] stops them too.
    pub fn abort(&self) {
        lock(&self.shared.live).controller.abort();
    }

    /// The run is being ended (a signal): no notice wakes the parent any more, the current
    /// run is aborted and every task is stopped with `parent_shutdown` (L6).
    pub fn interrupt(&self) {
        self.shared.interrupt();
    }

    /// A handle that interrupts this session without keeping it alive (a signal watcher that
    /// outlives the session must not hold its channels open).
    pub fn interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle(Arc::downgrade(&self.shared))
    }

    pub fn is_streaming(&self) -> bool {
        self.shared.streaming.load(Ordering::SeqCst)
    }

    /// Wait until the parent is idle and every task it started has ended and been answered
    /// (O6), or until a run ends in an error or an abort. Returns the last run's outcome.
    pub fn settle(
        &self,
    ) -> impl Future<Output = Result<Option<RunOutcome>, HostError>> + Send + 'static + use<> {
        self.ask(Op::Settle)
    }

    pub fn state(&self) -> HostState {
        let live = lock(&self.shared.live);
        let (steering, follow_up) = live.controller.queued();
        HostState {
            model: live.model.clone(),
            thinking: live.thinking,
            is_streaming: self.is_streaming(),
            is_compacting: self.shared.compacting.load(Ordering::SeqCst),
            session_file: live.session_file.clone(),
            session_id: live.session_id.clone(),
            session_name: live.session_name.clone(),
            auto_compaction: live.auto_compaction,
            message_count: live.mirror.messages().len(),
            pending_message_count: steering.len() + follow_up.len(),
            steering,
            follow_up,
            budget: live.manager.budget(),
        }
    }

    /// The conversation so far (as its events showed it).
    pub fn messages(&self) -> Vec<Message> {
        lock(&self.shared.live).mirror.messages()
    }

    /// The root agent's controller (queues and their modes).
    pub fn controller(&self) -> AgentController {
        lock(&self.shared.live).controller.clone()
    }

    /// The session's tasks as front ends see them: snapshots, records, events, roles, budget,
    /// and stopping one. (Launching and continuing are the model's, through the tools.)
    pub fn tasks(&self) -> crate::SessionTasks {
        crate::SessionTasks::new(self.manager())
    }

    /// The root session's task manager, for the host's own operations.
    pub(crate) fn manager(&self) -> TaskManager {
        lock(&self.shared.live).manager.clone()
    }

    /// Use `provider/id` from the next request on (recorded in the session).
    pub fn set_model(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Model, HostError>> + Send + 'static + use<> {
        let name = name.to_string();
        self.ask(move |r| Op::SetModel(name, r))
    }

    /// Use `level` from the next request on; returns the level in effect (clamped to what the
    /// model takes).
    pub fn set_thinking(
        &self,
        level: ThinkingLevel,
    ) -> impl Future<Output = Result<ThinkingLevel, HostError>> + Send + 'static + use<> {
        self.ask(move |r| Op::SetThinking(level, r))
    }

    /// Start a new session (the current one's live tasks are stopped first, L6); `parent` is
    /// recorded as its parent session (Pi's `parentSession`).
    pub fn new_session(
        &self,
        parent: Option<PathBuf>,
    ) -> impl Future<Output = Result<Switched, HostError>> + Send + 'static + use<> {
        self.ask(move |r| Op::Switch(SwitchTo::New(parent), r))
    }

    /// Continue the session in `path`.
    pub fn switch_session(
        &self,
        path: PathBuf,
    ) -> impl Future<Output = Result<Switched, HostError>> + Send + 'static + use<> {
        self.ask(move |r| Op::Switch(SwitchTo::Path(path), r))
    }

    /// A new session holding the conversation before the user message `entry_id`.
    pub fn fork(
        &self,
        entry_id: &str,
    ) -> impl Future<Output = Result<Switched, HostError>> + Send + 'static + use<> {
        let id = entry_id.to_string();
        self.ask(move |r| Op::Switch(SwitchTo::Fork(id), r))
    }

    /// A new session holding the whole current conversation.
    pub fn clone_session(
        &self,
    ) -> impl Future<Output = Result<Switched, HostError>> + Send + 'static + use<> {
        self.ask(move |r| Op::Switch(SwitchTo::Clone, r))
    }

    /// Name the session (Pi's `session_info` entry).
    pub fn set_session_name(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<(), HostError>> + Send + 'static + use<> {
        let name = name.to_string();
        self.ask(move |r| Op::SetSessionName(name, r))
    }

    /// Compact the conversation now (RPC `compact`), the children's settings unchanged. While
    /// it runs, `abort` cancels it.
    pub fn compact(
        &self,
        custom_instructions: Option<String>,
    ) -> impl Future<Output = Result<CompactionResult, HostError>> + Send + 'static + use<> {
        self.ask(move |r| Op::Compact(custom_instructions, r))
    }

    /// Turn automatic compaction on or off, for the root and the children launched from now
    /// on.
    pub fn set_auto_compaction(
        &self,
        enabled: bool,
    ) -> impl Future<Output = Result<(), HostError>> + Send + 'static + use<> {
        self.ask(move |r| Op::SetAutoCompaction(enabled, r))
    }

    /// Run `command` now, in the session's directory (RPC `bash`); while it runs,
    /// [`Host::abort_bash`] ends it. Its output reaches the model with the next prompt, as Pi's
    /// `bashExecution` message: added at once when the agent is idle, after the current run
    /// otherwise.
    pub fn bash(
        &self,
        command: &str,
    ) -> impl Future<Output = Result<cadre_protocol::BashExecutionMessage, HostError>>
    + Send
    + 'static
    + use<> {
        let cancel = tokio_util::sync::CancellationToken::new();
        // One command at a time, so abort_bash always reaches the one that runs.
        let busy = {
            let mut slot = lock(&self.shared.bash);
            let busy = slot.as_ref().is_some_and(|c| !c.is_cancelled());
            if !busy {
                *slot = Some(cancel.clone());
            }
            busy
        };
        let host = self.clone();
        let command = command.to_string();
        async move {
            if busy {
                return Err(HostError::Busy(
                    "a bash command is already running; wait for it or send abort_bash".into(),
                ));
            }
            let cwd = host.ctx.cwd.clone();
            let artifacts = host.ctx.home.root().join("artifacts");
            let env = host.ctx.shell_env();
            let message =
                crate::bash::run_bash(&command, &cwd, &artifacts, env, cancel.clone()).await;
            // Done: the slot is free (cancelling a finished command's token is harmless).
            cancel.cancel();
            // Queued now, so a prompt sent after this answer comes after the output.
            let appended = host.append_message(Message::BashExecution(message.clone()));
            tokio::spawn(appended);
            Ok(message)
        }
    }

    /// End the running `bash` command, if any.
    pub fn abort_bash(&self) {
        if let Some(cancel) = lock(&self.shared.bash).take() {
            cancel.cancel();
        }
    }

    /// Add a message to the context without a run (it reaches the model with the next
    /// prompt), e.g. the output of a command the person ran.
    pub fn append_message(
        &self,
        message: Message,
    ) -> impl Future<Output = Result<(), HostError>> + Send + 'static + use<> {
        self.ask(move |r| Op::Append(Box::new(message), r))
    }

    /// Add several messages to the context without a run, next to each other (a tool call its
    /// client made and its result).
    pub fn append_messages(
        &self,
        messages: Vec<Message>,
    ) -> impl Future<Output = Result<(), HostError>> + Send + 'static + use<> {
        self.ask(move |r| Op::AppendAll(messages, r))
    }

    /// The root's orchestration tool `name` (`Agent`, `SendMessage`, `TaskOutput`,
    /// `TaskStop`), for a client that calls it without a model turn; `None` when the session
    /// does not have it.
    pub fn orchestration_tool(&self, name: &str) -> Option<Arc<dyn cadre_tools::Tool>> {
        lock(&self.shared.live)
            .orchestration_tools
            .iter()
            .find(|t| t.name() == name)
            .cloned()
    }

    /// The root's orchestration tools.
    pub fn orchestration_tools(&self) -> Vec<Arc<dyn cadre_tools::Tool>> {
        lock(&self.shared.live).orchestration_tools.clone()
    }

    /// The user messages a fork can start from.
    pub fn fork_points(&self) -> Result<Vec<session_open::ForkPoint>, HostError> {
        // A session with no message yet may not have its header on disk either.
        if self.messages().is_empty() {
            return Ok(Vec::new());
        }
        let Some(path) = lock(&self.shared.live).session_file.clone() else {
            return Err(HostError::InvalidInput(
                "this session is not saved (--no-session), so it has no entries to fork from"
                    .into(),
            ));
        };
        session_open::fork_points(&path).map_err(HostError::from_any)
    }

    /// End the session: live tasks are stopped (L6) and the session file is closed. Returns
    /// its path.
    pub fn shutdown(
        &self,
    ) -> impl Future<Output = Result<Option<PathBuf>, HostError>> + Send + 'static + use<> {
        self.ask(Op::Shutdown)
    }
}

/// The text of a queued message; images can only come with a prompt that starts a run.
fn queued_text(content: &UserContent) -> Result<String, HostError> {
    if let UserContent::Blocks(blocks) = content
        && blocks
            .iter()
            .any(|b| matches!(b, cadre_protocol::ContentBlock::Image { .. }))
    {
        return Err(HostError::InvalidInput(
            "images cannot be queued while the agent runs; send them with a prompt when it is idle"
                .into(),
        ));
    }
    Ok(content.to_text())
}

fn live_of(root: &Root, session_name: Option<String>) -> Live {
    let agent = &root.agent;
    let header = agent.session_header().cloned();
    Live {
        controller: agent.controller(),
        manager: root.orchestration.manager.clone(),
        orchestration_tools: root.orchestration_tools.clone(),
        mirror: root.orchestration.mirror.clone(),
        model: agent.config().model.clone(),
        thinking: agent.config().thinking,
        session_file: agent.session_path().map(PathBuf::from),
        session_id: root.orchestration.manager.root_session_id().to_string(),
        header,
        session_name,
        auto_compaction: agent.compaction_settings().enabled,
    }
}

/// Pass the root agent's events on, keeping the conversation mirror as they go. A barrier
/// is answered once every event sent before it has been passed on: an operation's answer then
/// follows its events (`compaction_end` before `compact`'s response, as in Pi).
async fn forward_agent_events(
    mut rx: mpsc::UnboundedReceiver<AgentEvent>,
    mut barriers: mpsc::UnboundedReceiver<oneshot::Sender<()>>,
    mirror: Arc<ConversationMirror>,
    tx: mpsc::UnboundedSender<HostEvent>,
) {
    let pass = |event: AgentEvent| {
        mirror.observe(&event);
        // A front end that is gone no longer reads; the agent must never block on it.
        let _ = tx.send(HostEvent::Agent(event));
    };
    loop {
        tokio::select! {
            biased;
            event = rx.recv() => match event {
                Some(event) => pass(event),
                None => return,
            },
            Some(done) = barriers.recv() => {
                while let Ok(event) = rx.try_recv() {
                    pass(event);
                }
                let _ = done.send(());
            }
        }
    }
}

/// Starts the forwarder of a root's events; returns the barrier sender.
fn spawn_forwarder(
    agent_rx: mpsc::UnboundedReceiver<AgentEvent>,
    mirror: Arc<ConversationMirror>,
    tx: mpsc::UnboundedSender<HostEvent>,
) -> mpsc::UnboundedSender<oneshot::Sender<()>> {
    let (barrier_tx, barrier_rx) = mpsc::unbounded_channel();
    tokio::spawn(forward_agent_events(agent_rx, barrier_rx, mirror, tx));
    barrier_tx
}

/// Forward a manager's task events until it is replaced (abort the handle).
fn spawn_task_events(
    manager: &TaskManager,
    tx: mpsc::UnboundedSender<HostEvent>,
) -> tokio::task::JoinHandle<()> {
    let mut events = manager.subscribe();
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(event) => {
                    if tx.send(HostEvent::Task(event)).is_err() {
                        return;
                    }
                }
                // A slow front end misses task events rather than slowing tasks down.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    })
}

struct Actor {
    ctx: Arc<HostContext>,
    options: HostOptions,
    tools: ToolChoice,
    /// The root session's MCP servers.
    mcp: cadre_mcp::McpSet,
    root: Root,
    ops: mpsc::UnboundedReceiver<Op>,
    events: mpsc::UnboundedSender<HostEvent>,
    task_events: tokio::task::JoinHandle<()>,
    /// Turns `cadre task stop` run elsewhere into stops of this session's tasks.
    stop_requests: tokio::task::JoinHandle<()>,
    /// Barriers for the current root's event forwarder.
    barrier: mpsc::UnboundedSender<oneshot::Sender<()>>,
    /// Where new sessions of this host go (`--session-dir` and its fallbacks).
    session_dir: PathBuf,
    shared: Arc<Shared>,
    last_outcome: Option<RunOutcome>,
    settle: Vec<Reply<Option<RunOutcome>>>,
}

impl Actor {
    async fn serve(mut self) {
        loop {
            self.answer_settled();
            let waiting = !self.settle.is_empty();
            let manager = self.root.orchestration.manager.clone();
            tokio::select! {
                op = self.ops.recv() => match op {
                    None => {
                        let _ = self.close().await;
                        return;
                    }
                    Some(Op::Shutdown(reply)) => {
                        let _ = reply.send(self.close().await);
                        return;
                    }
                    Some(op) => self.handle(op).await,
                },
                notice = self.root.orchestration.notices.recv() => {
                    if let Some(notice) = notice {
                        self.wake(notice).await;
                    }
                }
                // Only to re-check the settle waiters once the last task is answered.
                () = manager.wait_idle(), if waiting => {}
            }
        }
    }

    /// Answer settle waiters once nothing is pending, or at once after a failed run.
    fn answer_settled(&mut self) {
        if self.settle.is_empty() {
            return;
        }
        let failed = self
            .last_outcome
            .as_ref()
            .is_some_and(|o| o.error.is_some());
        let (steer, follow_up) = self.root.agent.controller().queued();
        let idle = steer.is_empty()
            && follow_up.is_empty()
            && !self.root.orchestration.manager.has_pending();
        if failed || idle || self.shared.interrupted.load(Ordering::SeqCst) {
            for reply in self.settle.drain(..) {
                let _ = reply.send(Ok(self.last_outcome.clone()));
            }
        }
    }

    /// Wait until every event of the current root sent so far has reached the front end's
    /// channel.
    async fn flush_events(&self) {
        let (done, wait) = oneshot::channel();
        if self.barrier.send(done).is_ok() {
            let _ = wait.await;
        }
    }

    async fn handle(&mut self, op: Op) {
        let ending = self.shared.interrupted.load(Ordering::SeqCst);
        match op {
            // The session is ending: what was queued before the end does not start.
            Op::Prompt(_) if ending => {}
            Op::Switch(_, reply) if ending => {
                let _ = reply.send(Err(HostError::Ended("the session is ending".into())));
            }
            Op::Prompt(messages) => self.run(messages).await,
            Op::Settle(reply) => self.settle.push(reply),
            Op::SetModel(name, reply) => {
                let _ = reply.send(self.set_model(&name));
            }
            Op::SetThinking(level, reply) => {
                let _ = reply.send(Ok(self.set_thinking(level)));
            }
            Op::Switch(to, reply) => {
                let _ = reply.send(self.switch(to).await);
            }
            Op::SetSessionName(name, reply) => {
                let result = match self.root.agent.session_mut() {
                    Some(writer) => {
                        writer.append(cadre_protocol::SessionEntryKind::SessionInfo {
                            name: Some(name.clone()),
                        });
                        lock(&self.shared.live).session_name = Some(name);
                        Ok(())
                    }
                    None => Err(HostError::InvalidInput(
                        "this session is not saved (--no-session), so it cannot be named".into(),
                    )),
                };
                let _ = reply.send(result);
            }
            Op::Compact(instructions, reply) => {
                self.shared.compacting.store(true, Ordering::SeqCst);
                let done = self.root.agent.compact(instructions).await;
                self.shared.compacting.store(false, Ordering::SeqCst);
                self.flush_events().await;
                self.sync_mirror();
                let _ = reply.send(done.map_err(|e| HostError::Failed(e.to_string())));
            }
            Op::SetAutoCompaction(enabled, reply) => {
                self.root.agent.set_auto_compaction(enabled);
                let mut settings = self.root.agent.compaction_settings();
                settings.enabled = enabled;
                self.root.orchestration.manager.set_compaction(settings);
                lock(&self.shared.live).auto_compaction = enabled;
                let _ = reply.send(Ok(()));
            }
            Op::Append(message, reply) => {
                self.root.agent.append_silently(*message);
                self.sync_mirror();
                let _ = reply.send(Ok(()));
            }
            Op::AppendAll(messages, reply) => {
                for message in messages {
                    self.root.agent.append_silently(message);
                }
                self.sync_mirror();
                let _ = reply.send(Ok(()));
            }
            Op::Shutdown(_) => {}
        }
    }

    /// A notice reached the idle parent: answer it with a run, unless the run is being ended.
    async fn wake(&mut self, notice: ParentNotice) {
        if self.shared.interrupted.load(Ordering::SeqCst) {
            return;
        }
        let message = notice.message();
        if self.options.client_is_parent {
            // The client reads results itself (TaskOutput, the task resources); the notice is
            // kept in the session as a run would have kept it.
            self.root.agent.append_silently(message);
            self.sync_mirror();
            return;
        }
        // Taken once the run has started: the notice is in the conversation then.
        self.run_holding(vec![message], Some(notice)).await;
    }

    async fn run(&mut self, messages: Vec<Message>) {
        self.run_holding(messages, None).await;
    }

    /// Run on `messages`, steering notices that arrive meanwhile into the run, then answer
    /// what was steered in as the run was ending.
    async fn run_holding(&mut self, messages: Vec<Message>, mut taken: Option<ParentNotice>) {
        self.shared.streaming.store(true, Ordering::SeqCst);
        let mut first = Some(messages);
        loop {
            let controller = self.root.agent.controller();
            let interrupted = &self.shared.interrupted;
            let Root {
                agent,
                orchestration,
                ..
            } = &mut self.root;
            let run = async {
                match first.take() {
                    Some(messages) => agent.prompt_messages(messages).await,
                    None => agent.run_queued().await,
                }
            };
            tokio::pin!(run);
            let result = loop {
                tokio::select! {
                    biased;
                    res = &mut run => break res,
                    Some(notice) = orchestration.notices.recv() => {
                        if !interrupted.load(Ordering::SeqCst) {
                            // A custom message, as Pi steers one in.
                            controller.steer_message(notice.message());
                        }
                        drop(notice);
                    }
                }
            };
            drop(taken.take());
            match result {
                Ok(outcome) => {
                    let failed = outcome.error.is_some();
                    let aborted = outcome.stop_reason == cadre_protocol::StopReason::Aborted;
                    self.last_outcome = Some(outcome);
                    // A stopped turn (Esc) stops the turn, not the tasks' reports: a notice
                    // steered into it and not yet delivered is answered now, as one arriving
                    // while idle would be (O6). Any other failure ends here.
                    if failed && !(aborted && controller.has_queued()) {
                        break;
                    }
                }
                Err(e) => {
                    // A session file that cannot be written: the run ends with that error.
                    self.last_outcome = Some(RunOutcome {
                        final_message: None,
                        stop_reason: cadre_protocol::StopReason::Error,
                        error: Some(e.to_string()),
                        failure: Some(cadre_llm::ErrorKind::Fatal),
                        turns: 0,
                        usage: cadre_protocol::Usage::default(),
                    });
                    break;
                }
            }
            // Texts, follow-ups or notices still queued get a run of their own.
            if !controller.has_queued() || self.shared.interrupted.load(Ordering::SeqCst) {
                break;
            }
        }
        // The mirror starts over from the agent's history only after it has seen every event
        // of the run (a late message_end would otherwise be added twice).
        self.flush_events().await;
        self.sync_mirror();
        self.shared.streaming.store(false, Ordering::SeqCst);
    }

    /// The mirror follows events; after changes made without events it starts over. Call it
    /// after [`Actor::flush_events`].
    fn sync_mirror(&self) {
        self.root
            .orchestration
            .mirror
            .replace(self.root.agent.messages().to_vec());
    }

    fn set_model(&mut self, name: &str) -> Result<Model, HostError> {
        let model = self
            .ctx
            .registry
            .resolve(name)
            .map_err(|e| HostError::InvalidInput(e.to_string()))?;
        // Under a cost cap, a model the cap cannot count is refused here as at start-up.
        crate::budget::check_priced(&self.root.orchestration.budget, &model)
            .map_err(|e| HostError::InvalidInput(e.to_string()))?;
        HostContext::register_secret(&model);
        let requested = self.root.agent.config().thinking;
        self.root.agent.set_model(model.clone());
        // The level is clamped anew for the new model.
        let thinking = resolve_thinking(&model, requested).effective;
        self.root.agent.set_thinking(thinking);
        self.root.equip(&self.ctx, &self.options, &model, thinking);
        let mut live = lock(&self.shared.live);
        live.orchestration_tools = self.root.orchestration_tools.clone();
        live.model = model.clone();
        live.thinking = thinking;
        Ok(model)
    }

    fn set_thinking(&mut self, requested: ThinkingLevel) -> ThinkingLevel {
        let model = self.root.agent.config().model.clone();
        let effective = resolve_thinking(&model, requested).effective;
        self.root.agent.set_thinking(effective);
        self.root.equip(&self.ctx, &self.options, &model, effective);
        let mut live = lock(&self.shared.live);
        live.orchestration_tools = self.root.orchestration_tools.clone();
        live.thinking = effective;
        drop(live);
        effective
    }

    /// Replace the root session: the old one's tasks are stopped (L6) and its file closed,
    /// then the new one is built with the same options, model and level.
    async fn switch(&mut self, to: SwitchTo) -> Result<Switched, HostError> {
        let current = self.root.agent.session_path().map(PathBuf::from);
        let (opened, text): (OpenedSession, Option<String>) = match to {
            SwitchTo::New(parent) => {
                let opened = match (&self.options.session, parent) {
                    (SessionChoice::None, _) => {
                        session_open::open_session(
                            &SessionChoice::None,
                            &self.session_dir,
                            &self.ctx.cwd,
                            false,
                        )
                        .await
                    }
                    (_, parent) => {
                        session_open::new_session(
                            &self.session_dir,
                            &self.ctx.cwd,
                            parent.as_deref(),
                            self.options.session_file_when_used,
                        )
                        .await
                    }
                };
                (opened.map_err(HostError::from_any)?, None)
            }
            SwitchTo::Path(path) => (
                session_open::continue_session(&path)
                    .await
                    .map_err(HostError::from_any)?,
                None,
            ),
            SwitchTo::Fork(entry) => {
                let from = self.saved_session(current.as_deref(), "forked")?;
                session_open::branch_session(&from, Some(&entry), &self.ctx.cwd)
                    .await
                    .map_err(HostError::from_any)?
            }
            SwitchTo::Clone => {
                let from = self.saved_session(current.as_deref(), "cloned")?;
                session_open::branch_session(&from, None, &self.ctx.cwd)
                    .await
                    .map_err(HostError::from_any)?
            }
        };
        // A continued session keeps its own model and level; a new one keeps the current ones.
        let current = self.root.agent.config();
        let model = opened
            .restored
            .model_name()
            .and_then(|name| self.ctx.registry.resolve(&name).ok())
            .unwrap_or_else(|| current.model.clone());
        let thinking = opened
            .restored
            .thinking
            .filter(|_| opened.restored.has_messages)
            .unwrap_or(current.thinking);
        HostContext::register_secret(&model);
        let name = opened.name.clone();
        self.root.orchestration.manager.shutdown().await;
        let (agent_tx, agent_rx) = mpsc::unbounded_channel();
        let root = Root::build(RootInputs {
            ctx: &self.ctx,
            options: &self.options,
            tools: &self.tools,
            mcp: self.mcp.tools(),
            session: opened,
            model,
            thinking,
            events: agent_tx,
        })
        .map_err(HostError::from_any)?;
        let barrier = spawn_forwarder(
            agent_rx,
            root.orchestration.mirror.clone(),
            self.events.clone(),
        );
        let mut warnings = root.warnings.clone();
        self.flush_events().await;
        self.barrier = barrier;
        let old = std::mem::replace(&mut self.root, root);
        if let Err(e) = old.agent.close().await {
            // The new session is in place; the old file's tail is what could not be written.
            warnings.push(format!(
                "warning: the previous session could not be closed: {e}"
            ));
        }
        self.task_events.abort();
        self.task_events = spawn_task_events(&self.root.orchestration.manager, self.events.clone());
        self.stop_requests.abort();
        self.stop_requests = self.root.orchestration.watch_stop_requests();
        self.last_outcome = None;
        let live = live_of(&self.root, name);
        let header = live.header.clone();
        *lock(&self.shared.live) = live;
        Ok(Switched {
            header,
            text,
            warnings,
        })
    }

    fn saved_session(
        &self,
        current: Option<&std::path::Path>,
        verb: &str,
    ) -> Result<PathBuf, HostError> {
        current.map(PathBuf::from).ok_or_else(|| {
            HostError::InvalidInput(format!(
                "this session is not saved (--no-session), so it cannot be {verb}"
            ))
        })
    }

    /// Stop the tasks (L6) and write out the session file. The actor ends after this.
    async fn close(&mut self) -> Result<Option<PathBuf>, HostError> {
        self.stop_requests.abort();
        self.root.orchestration.manager.shutdown().await;
        self.task_events.abort();
        for reply in self.settle.drain(..) {
            let _ = reply.send(Ok(self.last_outcome.clone()));
        }
        let path = self.root.agent.session_path().map(PathBuf::from);
        if let Some(writer) = self.root.agent.session_mut() {
            writer
                .flush()
                .await
                .map_err(|e| HostError::Failed(e.to_string()))?;
        }
        Ok(path)
    }
}
