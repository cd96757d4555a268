//! The task manager: launches children, runs them, delivers their results (SPEC O, L, S1).
//!
//! One [`TaskManager`] serves a root session and every task under it. A child is an in-process
//! [`crate::agent::Agent`] on a tokio task. A launch is checked before anything is created
//! (`prepare`), recorded and started (`launch`) with an agent built for the child (`child`),
//! run under a lifecycle controller and a dispatch gate (`run`, `handle`), and recorded in the
//! task store. Foreground launches wait for their tasks; background ones return at once and
//! their `<task-notification>` reaches the direct parent exactly once, through the parent's
//! notice channel (`pending` counts what is still owed). Continuation (`SendMessage`) of a
//! finished task reopens it from its session file (`reopen`).
//!
//! # Wiring a front end
//!
//! 1. At start-up, mark tasks a dead process left running: `store.recover_orphans(pid_is_alive)`.
//! 2. Build the manager ([`ManagerConfig`]: provider, model registry, the root's built-in tools,
//!    roster, `subagents` settings, task store, root session id and file, the session catalogue,
//!    trust) with the sending half of a [`ParentNotice`] channel.
//! 3. Make the root parent with [`TaskManager::root_parent`] and register
//!    [`crate::orchestrator::tools::root_tools`] in the root agent's tools. For forks, create a
//!    [`ConversationMirror`], pass it as the root's conversation and use `mirror.tap(..)` as the
//!    root agent's event sender.
//! 4. Deliver notices (O6): `controller.steer_message(notice.message())` while the parent runs,
//!    `agent.prompt_messages(vec![notice.message()])` when it is idle, then drop the notice;
//!    wait for [`TaskManager::wait_idle`] before ending. `cadre-host`'s session service does
//!    this for every front end.
//! 5. On exit, Ctrl-C or an RPC abort of the session: [`TaskManager::shutdown`] (L6).

mod child;
mod continuation;
mod digest;
mod end;
mod handle;
mod launch;
mod mirror;
mod observe;
mod pending;
mod prepare;
mod prompt;
mod refusal_code;
mod reopen;
mod review;
mod run;
mod sandbox_dirs;
mod scope;
mod spawn;
mod step;
mod structured;
mod types;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use cadre_llm::{Model, Provider};
use cadre_protocol::{TaskStatus, ThinkingLevel};
use cadre_tools::ToolRegistry;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use handle::{RunState, TaskHandle, lock};
use pending::Pending;

pub use crate::handoff::contract::{EMPTY_COMPLETION_NUDGE, OUTPUT_CONTRACT_HEADING};
pub use mirror::ConversationMirror;
pub use observe::{LaunchObserver, observe_launches};
pub use pending::PendingGuard;
pub use prepare::FORK_OPEN_CALL_RESULT;
pub use refusal_code::RefusalCode;
pub use types::{
    ConversationSource, Delivery, EntryOutcome, InheritedLimits, LaunchConfirmer, LaunchError,
    LaunchSpec, ModelResolver, NoticeKind, ParentNotice, ParentRef, SendOutcome, TaskEvent,
    TaskOutcome, TaskSnapshot, TaskSpec,
};

use super::artifacts::sweep_artifacts;
use super::capability::{AGENT_TOOL, ROOT_ONLY_TOOLS};
use super::output::{parent_result, preview};
use super::quota::Quota;
use super::settings::SubagentSettings;
use super::store::TaskStore;
use super::target::{TargetCandidate, resolve_target};
use crate::roles::Roster;

/// `TaskOutput`'s default wait when blocking (O3).
pub const DEFAULT_OUTPUT_WAIT_MS: u64 = 300_000;

/// The directory, inside the session catalogue, that holds child sessions.
pub const CHILD_SESSIONS_DIR: &str = "subagents";

/// How many ended ancestors a continuation's budget is rebuilt through (deeper ones are bounded
/// by the nodes rebuilt below them, whose recorded caps already held them).
const MAX_STAND_INS: u32 = 8;

/// Task events kept for a slow listener before it starts missing them.
const EVENT_BUFFER: usize = 256;

/// Everything a manager needs; see the field docs.
pub struct ManagerConfig {
    pub provider: Arc<dyn Provider>,
    pub models: Arc<dyn ModelResolver>,
    /// The tool objects children may get (the root's active built-in tools). Orchestration
    /// tools in it are ignored: the manager makes a child's `Agent` tool itself.
    pub tools: ToolRegistry,
    pub roster: Arc<Roster>,
    pub settings: SubagentSettings,
    pub store: TaskStore,
    pub root_session_id: String,
    pub root_session_file: Option<PathBuf>,
    /// The root session's catalogue; child sessions go in its `subagents` directory.
    pub sessions_dir: PathBuf,
    pub cadre_home: PathBuf,
    pub cwd: PathBuf,
    /// The project's trust, inherited by every child (T4).
    pub trusted: bool,
    /// Where tools put artifacts (e.g. bash's full output).
    pub artifacts_dir: PathBuf,
    /// The root parent's notice channel: its background completions and every progress warning.
    pub root_notices: mpsc::UnboundedSender<ParentNotice>,
}

/// Optional parts of a manager (see [`TaskManager::with_options`]).
#[derive(Default, Clone)]
pub struct ManagerOptions {
    /// The cadre binary read-only children's bash re-executes into the sandbox (S2); `None` =
    /// the running executable.
    pub sandbox_exe: Option<PathBuf>,
    /// Who confirms launches under `subagents.authorization: ask` (D3); `None` refuses them.
    pub confirm: Option<Arc<dyn LaunchConfirmer>>,
    /// The environment children's bash commands start from (the root session's: its
    /// settings' allowlist, its model's key removed); `None`: the process's, scrubbed by name.
    pub shell_env: Option<Arc<cadre_tools::shell_env::ShellEnv>>,
    /// The root session's budget node (its caps and what it spent before); `None`: no cap.
    pub budget: Option<Arc<crate::budget::BudgetNode>>,
    /// What a cost budget does with a model without a price.
    pub unknown_price: crate::budget::UnknownPrice,
}

pub(crate) struct Inner {
    pub provider: Arc<dyn Provider>,
    pub models: Arc<dyn ModelResolver>,
    pub tools: ToolRegistry,
    pub roster: Arc<Roster>,
    pub settings: SubagentSettings,
    pub store: TaskStore,
    pub root_session_id: String,
    pub root_session_file: Option<PathBuf>,
    pub sessions_dir: PathBuf,
    pub cadre_home: PathBuf,
    pub cwd: PathBuf,
    pub trusted: bool,
    pub artifacts_dir: PathBuf,
    pub root_notices: mpsc::UnboundedSender<ParentNotice>,
    pub sandbox_exe: PathBuf,
    pub confirm: Option<Arc<dyn LaunchConfirmer>>,
    pub shell_env: Option<Arc<cadre_tools::shell_env::ShellEnv>>,
    /// The root session's budget node: every task's node hangs below it.
    pub budget: Arc<crate::budget::BudgetNode>,
    pub unknown_price: crate::budget::UnknownPrice,
    /// Per parent (`None` = the root): held while a sequential-dispatch launch runs (D4).
    pub sequential: Mutex<HashMap<Option<String>, Arc<tokio::sync::Mutex<()>>>>,
    /// Plan mode (S6): only planning roles launch, nothing is isolated in a worktree.
    pub plan_mode: std::sync::atomic::AtomicBool,
    /// The compaction settings children run with (the root's: R10).
    pub compaction: Mutex<crate::compaction::CompactionSettings>,
    /// Whether the root's `Agent` calls that do not say run in the background (front ends
    /// where the person keeps working while tasks run: RPC, interactive).
    pub root_background_default: std::sync::atomic::AtomicBool,
    /// The root parent reads its tasks' results by polling `TaskOutput` (an MCP client): it
    /// gets no `<task-notification>` messages.
    pub root_polls: std::sync::atomic::AtomicBool,
    pub quota: Quota,
    pub pending: Pending,
    pub events: tokio::sync::broadcast::Sender<TaskEvent>,
    /// Every task run by this process, by id (finished ones stay for their final state).
    pub tasks: Mutex<HashMap<String, Arc<TaskHandle>>>,
    /// What a continuation reuses of a task's last run in this process: its model and, for a
    /// fork, its system prompt (a fresh child's is rebuilt from its role).
    pub runs: Mutex<HashMap<String, RunInfo>>,
    /// Each nesting parent task's own notice channel, by task id.
    pub sinks: Mutex<HashMap<String, mpsc::UnboundedSender<ParentNotice>>>,
    /// Per task id: held while a message is steered into the task or reopens it, so two
    /// messages never both reopen it (the second reaches the run the first started).
    pub continuing: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Tool specs of children by the shape of their tool set (see `child::shared_specs`), so
    /// the children of a fan-out share one copy instead of building their own.
    pub child_specs: Mutex<HashMap<String, Arc<[cadre_protocol::ToolSpec]>>>,
    /// Set by [`TaskManager::shutdown`]: the parent is ending, so no run starts any more (L6).
    pub closed: std::sync::atomic::AtomicBool,
    /// The checked parent of read-only tasks' scratch directories, resolved at the first
    /// launch that needs it rather than at every one (see `sandbox_dirs::scratch_parent`).
    pub scratch_parent: std::sync::OnceLock<PathBuf>,
    pub me: Weak<Inner>,
}

/// See [`Inner::runs`].
#[derive(Clone)]
pub(crate) struct RunInfo {
    pub model: Model,
    pub system_prompt: Option<String>,
}

/// The task manager of one root session. Cheap to clone.
#[derive(Clone)]
pub struct TaskManager {
    inner: Arc<Inner>,
}

impl TaskManager {
    pub fn new(config: ManagerConfig) -> TaskManager {
        TaskManager::with_options(config, ManagerOptions::default())
    }

    pub fn with_options(config: ManagerConfig, options: ManagerOptions) -> TaskManager {
        let mut tools = config.tools;
        let keep: Vec<String> = tools
            .names()
            .into_iter()
            .filter(|n| n != AGENT_TOOL && !ROOT_ONLY_TOOLS.contains(&n.as_str()))
            .collect();
        // Every name comes from the registry itself, so this cannot fail.
        let _ = tools.retain_named(&keep);
        let quota = Quota::new(config.settings.max_concurrent_tasks);
        // Retention (O13) covers what tools left in the artifacts directory as well as task
        // records: a manager starts once per process, so old outputs go at start-up, after
        // the same period. What cannot be removed now is tried again at the next start.
        if let Some(days) = config.settings.cleanup_period_days {
            let _ = sweep_artifacts(
                &config.artifacts_dir,
                u64::from(days),
                std::time::SystemTime::now(),
            );
        }
        let inner = Arc::new_cyclic(|me| Inner {
            provider: config.provider,
            models: config.models,
            tools,
            roster: config.roster,
            settings: config.settings,
            store: config.store,
            root_session_id: config.root_session_id,
            root_session_file: config.root_session_file,
            sessions_dir: config.sessions_dir,
            cadre_home: config.cadre_home,
            cwd: config.cwd,
            trusted: config.trusted,
            artifacts_dir: config.artifacts_dir,
            root_notices: config.root_notices,
            sandbox_exe: options
                .sandbox_exe
                .or_else(|| std::env::current_exe().ok())
                .unwrap_or_else(|| PathBuf::from("cadre")),
            confirm: options.confirm,
            shell_env: options.shell_env,
            budget: options.budget.unwrap_or_else(|| {
                crate::budget::BudgetNode::root(
                    crate::budget::Limits::default(),
                    crate::budget::Spend::default(),
                )
            }),
            unknown_price: options.unknown_price,
            sequential: Mutex::new(HashMap::new()),
            plan_mode: std::sync::atomic::AtomicBool::new(false),
            compaction: Mutex::new(crate::compaction::CompactionSettings::default()),
            root_background_default: std::sync::atomic::AtomicBool::new(false),
            root_polls: std::sync::atomic::AtomicBool::new(false),
            quota,
            pending: Pending::new(),
            events: tokio::sync::broadcast::channel(EVENT_BUFFER).0,
            tasks: Mutex::new(HashMap::new()),
            runs: Mutex::new(HashMap::new()),
            sinks: Mutex::new(HashMap::new()),
            continuing: Mutex::new(HashMap::new()),
            child_specs: Mutex::new(HashMap::new()),
            closed: std::sync::atomic::AtomicBool::new(false),
            scratch_parent: std::sync::OnceLock::new(),
            me: me.clone(),
        });
        // At 80% of the session's cap the root is warned, like a progress warning (L5).
        let notices = inner.root_notices.clone();
        inner.budget.on_warning(Arc::new(move |meter, state| {
            let _ = notices.send(ParentNotice::new(
                NoticeKind::BudgetWarning,
                String::new(),
                crate::budget::text::root_warning(meter, &state),
                None,
            ));
        }));
        TaskManager { inner }
    }

    pub(crate) fn from_inner(inner: Arc<Inner>) -> TaskManager {
        TaskManager { inner }
    }

    pub fn settings(&self) -> &SubagentSettings {
        &self.inner.settings
    }

    pub fn roster(&self) -> &Roster {
        &self.inner.roster
    }

    pub fn root_session_id(&self) -> &str {
        &self.inner.root_session_id
    }

    /// The session's budget: its caps, what the root and every task spent, what live tasks
    /// still reserve. `None` when no cap is set.
    pub fn budget(&self) -> Option<cadre_protocol::BudgetState> {
        launch::budget_view(&self.inner.budget)
    }

    pub fn store(&self) -> &TaskStore {
        &self.inner.store
    }

    /// The root session as a parent. `active_tools` are the root's tool names (including the
    /// orchestration tools it has); `conversation` enables forks.
    pub fn root_parent(
        &self,
        model: Model,
        thinking: ThinkingLevel,
        system_prompt: String,
        active_tools: Vec<String>,
        conversation: Option<Arc<dyn ConversationSource>>,
    ) -> ParentRef {
        ParentRef {
            task_id: None,
            depth: 0,
            session_id: Some(self.inner.root_session_id.clone()),
            session_file: self.inner.root_session_file.clone(),
            cwd: self.inner.cwd.clone(),
            active_tools,
            model,
            thinking,
            system_prompt,
            notices: self.inner.root_notices.clone(),
            conversation,
            limits: InheritedLimits::default(),
        }
    }

    /// Launch the task(s) of one `Agent` call (O1). A single task's refusal is an `Err`; in a
    /// `tasks` launch each entry settles on its own (V6). Foreground entries are waited for
    /// (until they end or are promoted); `cancel` (the parent's tool call being aborted) stops
    /// them with `parent_shutdown`.
    pub async fn launch(
        &self,
        parent: &ParentRef,
        spec: LaunchSpec,
        cancel: Option<CancellationToken>,
    ) -> Result<Vec<EntryOutcome>, LaunchError> {
        self.inner.refuse_if_closed()?;
        launch::launch(&self.inner, parent, spec, cancel).await
    }

    /// `SendMessage` (O2): steer a live task, or reopen a finished one.
    pub async fn send_message(
        &self,
        parent: &ParentRef,
        to: &str,
        message: &str,
    ) -> Result<SendOutcome, LaunchError> {
        reopen::send_message(&self.inner, parent, to, message).await
    }

    /// `TaskOutput` (O3): a snapshot, optionally after waiting up to `timeout` for the end.
    pub async fn task_output(
        &self,
        target: &str,
        block: bool,
        timeout: Duration,
    ) -> Result<TaskSnapshot, LaunchError> {
        let id = self.resolve(target)?;
        if block && let Some(h) = self.inner.handle(&id) {
            let _ = tokio::time::timeout(timeout, h.wait(false)).await;
        }
        self.snapshot(&id)
    }

    /// `TaskStop` (O4): stop a live task; its partial output is kept.
    pub async fn stop(&self, target: &str) -> Result<TaskSnapshot, LaunchError> {
        let id = self.resolve(target)?;
        let Some(h) = self
            .inner
            .handle(&id)
            .filter(|h| h.state() != RunState::Ended)
        else {
            let snap = self.snapshot(&id)?;
            return Err(LaunchError::refused(
                RefusalCode::NotRunning,
                format!(
                    "task {id} is not running (status {}); nothing to stop",
                    snap.status.as_str()
                ),
            ));
        };
        let actions = h.data().lifecycle.on_stop_requested();
        run::apply_actions(&self.inner, &h, actions);
        h.abort();
        h.wait(false).await;
        self.snapshot(&id)
    }

    /// Stop every live task with `parent_shutdown` and wait until their records are final (L6).
    /// The manager is closed from then on: launches and continuations are refused, and a
    /// notice that would reopen a finished nesting task (a child stopped here) is dropped.
    pub async fn shutdown(&self) {
        self.inner
            .closed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        loop {
            let live: Vec<Arc<TaskHandle>> = lock(&self.inner.tasks)
                .values()
                .filter(|h| h.state() != RunState::Ended)
                .cloned()
                .collect();
            if live.is_empty() {
                return;
            }
            for h in &live {
                let actions = h.data().lifecycle.on_parent_shutdown();
                run::apply_actions(&self.inner, h, actions);
                h.abort();
            }
            for h in &live {
                h.wait(false).await;
            }
        }
    }

    /// The delegation policy for the root's system prompt (O14), from the live roster; `None`
    /// when `subagents.proactivePrompt` is off.
    pub fn parent_policy_prompt(&self) -> Option<String> {
        super::policy::parent_policy_prompt(&self.inner.settings, &self.inner.roster.summary())
    }

    /// Arm or disarm plan mode (S6): while armed, only planning-compatible (read-only, in-place,
    /// fresh-context) roles may launch, and worktree isolation is refused, before anything
    /// changes.
    pub fn set_plan_mode(&self, on: bool) {
        self.inner
            .plan_mode
            .store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// The compaction settings of the children launched or continued from now on (the root
    /// passes its own: children compact like the root).
    pub fn set_compaction(&self, settings: crate::compaction::CompactionSettings) {
        *lock(&self.inner.compaction) = settings;
    }

    /// Make the root's `Agent` calls run in the background unless the call or its role says
    /// otherwise (as the Pi subagent packages do in their interactive modes). Nested launches
    /// keep the foreground default: a child waits for its own helpers.
    pub fn set_root_background_default(&self, on: bool) {
        self.inner
            .root_background_default
            .store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// Say that the root parent gets no task notices and polls `TaskOutput` for results (an
    /// MCP client is the parent): what the root's tools tell it follows.
    pub fn set_root_polls(&self, on: bool) {
        self.inner
            .root_polls
            .store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether `parent` reads its background results by polling (the root, when
    /// [`TaskManager::set_root_polls`] said so); other parents get notices.
    pub fn parent_polls(&self, parent: &ParentRef) -> bool {
        parent.depth == 0
            && self
                .inner
                .root_polls
                .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Whether the root parent polls (see [`TaskManager::set_root_polls`]).
    pub fn root_polls(&self) -> bool {
        self.inner
            .root_polls
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn plan_mode(&self) -> bool {
        self.inner
            .plan_mode
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Live task events (start, turns, end) of every task of this manager.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<TaskEvent> {
        self.inner.events.subscribe()
    }

    /// Snapshots of every task of the root session, oldest first (for a live task tree).
    pub fn tasks(&self) -> Vec<TaskSnapshot> {
        let mut ids: Vec<(String, String)> = lock(&self.inner.tasks)
            .values()
            .map(|h| {
                let d = h.data();
                (d.record.created_at.clone(), d.record.id.clone())
            })
            .collect();
        if let Ok(listing) = self.inner.store.list_root(&self.inner.root_session_id) {
            for r in listing.records {
                if !ids.iter().any(|(_, id)| *id == r.id) {
                    ids.push((r.created_at, r.id));
                }
            }
        }
        ids.sort();
        ids.into_iter()
            .filter_map(|(_, id)| self.inner.snapshot(&id).ok())
            .collect()
    }

    /// Whether a task is running or a notice has not been taken by its parent yet.
    pub fn has_pending(&self) -> bool {
        self.inner.pending.get() > 0
    }

    /// Wait until every task has ended and every notice has been taken (O6).
    pub async fn wait_idle(&self) {
        self.inner.pending.wait_zero().await
    }

    /// Ids of tasks of this process that are still running.
    pub fn live_tasks(&self) -> Vec<String> {
        lock(&self.inner.tasks)
            .values()
            .filter(|h| h.state() != RunState::Ended)
            .map(|h| h.id.clone())
            .collect()
    }

    /// Resolve a target to a task id (O5) among this root session's tasks.
    pub fn resolve(&self, target: &str) -> Result<String, LaunchError> {
        let candidates = self.inner.candidates();
        Ok(resolve_target(target, &candidates)?.id.clone())
    }

    /// A snapshot of a task by id.
    pub fn snapshot(&self, id: &str) -> Result<TaskSnapshot, LaunchError> {
        self.inner.snapshot(id)
    }
}

impl Inner {
    /// The compaction settings a child starts with.
    pub(crate) fn compaction(&self) -> crate::compaction::CompactionSettings {
        *lock(&self.compaction)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// No run starts once the parent is shutting down (L6).
    pub(crate) fn refuse_if_closed(&self) -> Result<(), LaunchError> {
        if self.is_closed() {
            return Err(LaunchError::refused(
                RefusalCode::ShuttingDown,
                "the parent session is shutting down: no task starts or continues",
            ));
        }
        Ok(())
    }

    /// Reserve the budget of a new task (or a continued one, which spent `spent_before`)
    /// below `parent`, `share` of what the parent has left: refused when the parent has nothing left, or when a cost cap meets a
    /// model without a price (unless `budgets.unknownPrice` is `tokens_only`).
    pub(crate) fn reserve_budget(
        &self,
        parent_task: Option<&str>,
        own: crate::budget::Limits,
        spent_before: crate::budget::Spend,
        share: f64,
        model: &Model,
    ) -> Result<crate::budget::Reservation, LaunchError> {
        let parent = self.budget_parent(parent_task, MAX_STAND_INS)?;
        let node = parent
            .child(own, spent_before, share)
            .map_err(LaunchError::BudgetExhausted)?;
        let reservation = crate::budget::Reservation::new(node);
        if self.cannot_price(reservation.node(), model) {
            return Err(LaunchError::UnpricedModel(model.full_name()));
        }
        Ok(reservation)
    }

    /// The budget node a task launched or continued under `parent_task` hangs below: the live
    /// parent's, the root's, or — for a parent that has ended — a stand-in rebuilt from its
    /// record (its cap and what its subtree spent), so a continued task stays inside the cap of
    /// the subtree it belongs to.
    fn budget_parent(
        &self,
        parent_task: Option<&str>,
        depth: u32,
    ) -> Result<Arc<crate::budget::BudgetNode>, LaunchError> {
        let Some(id) = parent_task else {
            return Ok(Arc::clone(&self.budget));
        };
        if let Some(h) = self.handle(id) {
            return Ok(Arc::clone(&h.budget));
        }
        let Ok(record) = self.store.load(&self.root_session_id, id) else {
            return Ok(Arc::clone(&self.budget));
        };
        let above = match depth {
            0 => Arc::clone(&self.budget),
            _ => self.budget_parent(record.parent_task_id.as_deref(), depth - 1)?,
        };
        match record.budget {
            Some(state) if !record.budgets.limits().is_unlimited() || !state.cap.is_unlimited() => {
                above
                    .stand_in(record.budgets.limits(), state.spent)
                    .map_err(LaunchError::BudgetExhausted)
            }
            _ => Ok(above),
        }
    }

    /// Whether `model` would run under a cost cap it cannot be counted against: no price in the
    /// model table, and `budgets.unknownPrice` is not `tokens_only`.
    pub(crate) fn cannot_price(&self, node: &crate::budget::BudgetNode, model: &Model) -> bool {
        let unpriced = !(model.cost.input > 0.0 || model.cost.output > 0.0);
        unpriced
            && node.cap().max_cost_usd.is_some()
            && self.unknown_price == crate::budget::UnknownPrice::Fail
    }

    pub(crate) fn handle(&self, id: &str) -> Option<Arc<TaskHandle>> {
        lock(&self.tasks).get(id).cloned()
    }

    /// Forget a run that ended: its record and output are on disk, and keeping every finished
    /// task's state (and final text) would grow a long session without bound. A continuation
    /// that already replaced it stays.
    pub(crate) fn retire(&self, h: &Arc<TaskHandle>) {
        let mut tasks = lock(&self.tasks);
        if tasks.get(&h.id).is_some_and(|cur| Arc::ptr_eq(cur, h)) {
            tasks.remove(&h.id);
        }
    }

    pub(crate) fn manager(&self) -> Option<TaskManager> {
        self.me.upgrade().map(TaskManager::from_inner)
    }

    /// Every task of the root session: this process's and those on disk.
    fn candidates(&self) -> Vec<TargetCandidate> {
        let mut out: Vec<TargetCandidate> = lock(&self.tasks)
            .values()
            .map(|h| {
                let d = h.data();
                let r = &d.record;
                TargetCandidate {
                    id: r.id.clone(),
                    name: r.name.clone(),
                    status: r.status,
                    created_at: r.created_at.clone(),
                }
            })
            .collect();
        if let Ok(listing) = self.store.list_root(&self.root_session_id) {
            for r in listing.records {
                if !out.iter().any(|c| c.id == r.id) {
                    out.push(TargetCandidate {
                        id: r.id,
                        name: r.name,
                        status: r.status,
                        created_at: r.created_at,
                    });
                }
            }
        }
        out
    }

    fn snapshot(&self, id: &str) -> Result<TaskSnapshot, LaunchError> {
        let (record, live_text) = match self.handle(id) {
            Some(h) => {
                let live = (h.state() != RunState::Ended).then(|| h.latest_text());
                (h.record(), live)
            }
            None => (self.store.load(&self.root_session_id, id)?, None),
        };
        let full = match live_text {
            Some(text) => text,
            None => self.store.read_output(&self.root_session_id, id)?,
        };
        let capped = parent_result(
            &full,
            self.settings.max_output_bytes,
            self.settings.max_output_lines,
            &record.output_file,
        );
        let preview_text = if record.status == TaskStatus::Running {
            preview(&full)
        } else {
            record.preview.clone()
        };
        Ok(TaskSnapshot {
            task_id: record.id,
            name: record.name,
            agent: record.agent,
            description: record.description,
            status: record.status,
            phase: record.phase,
            termination: record.termination,
            usage: record.usage,
            preview: preview_text,
            output: capped.text,
            output_file: record.output_file,
            error: record.error,
            worktree: record.worktree,
        })
    }

    /// Every tool name that exists in this runtime (for S1's unknown-tool check).
    pub(crate) fn known_tools(&self) -> Vec<String> {
        let mut names = self.tools.names();
        names.push(AGENT_TOOL.to_string());
        names.extend(ROOT_ONLY_TOOLS.iter().map(|s| s.to_string()));
        names
    }

    /// The MCP tools children may get that their servers annotate read-only (an MCP tool
    /// reports itself as not mutating exactly then).
    pub(crate) fn mcp_read_only_tools(&self) -> Vec<String> {
        let mcp = self.tools.names();
        mcp.into_iter()
            .filter(|n| n.starts_with(super::capability::MCP_TOOL_PREFIX))
            .filter(|n| self.tools.get(n).is_some_and(|t| !t.is_mutating()))
            .collect()
    }

    /// Where child sessions are created: a `subagents` directory inside the session catalogue.
    /// Kept out of the catalogue's top level because `--continue` resumes the newest file
    /// there, and a child that finishes after its root (a background task at exit, or a root
    /// without a session file) would otherwise be taken for the user's last conversation.
    pub(crate) fn session_dir(&self) -> PathBuf {
        self.sessions_dir.join(CHILD_SESSIONS_DIR)
    }
}
