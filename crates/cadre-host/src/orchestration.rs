//! A root session's subagents: its task manager, its four tools, the conversation mirror that
//! forks branch from, and the watcher of stop requests left by `cadre task stop`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use cadre_core::config::CadreHome;
use cadre_core::orchestrator::manager::{
    ConversationMirror, ConversationSource, ManagerConfig, ManagerOptions, ParentNotice,
    TaskManager,
};
use cadre_core::orchestrator::policy::parent_policy_prompt;
use cadre_core::orchestrator::settings::SubagentSettings;
use cadre_core::orchestrator::store::{TaskStore, pid_is_alive};
use cadre_core::orchestrator::tools::root_tools;
use cadre_core::roles::{DiscoverOptions, ProjectTrust, Roster, discover};
use cadre_llm::{Model, ModelRegistry, Provider};
use cadre_protocol::ThinkingLevel;
use cadre_tools::{Tool, ToolRegistry};
use tokio::sync::mpsc;

/// How often a run looks for stop requests that `cadre task stop` left for its live tasks.
const STOP_REQUEST_POLL: Duration = Duration::from_millis(200);

/// Names of the orchestration tools, as the model sees them.
pub const ORCHESTRATION_TOOLS: &[&str] = &["Agent", "SendMessage", "TaskOutput", "TaskStop"];

/// The root's orchestration tool specs as a session built from `home`, `cwd`, `trust` and
/// `settings` would give them, without building one (a front end answering `tools/list`
/// while its session starts). `root_polls`: see `TaskManager::set_root_polls`.
pub fn root_tool_specs(
    home: &CadreHome,
    cwd: &Path,
    trust: ProjectTrust,
    settings: Option<&serde_json::Value>,
    root_polls: bool,
) -> Result<Vec<cadre_protocol::ToolSpec>> {
    let parsed = SubagentSettings::from_value(settings).context("invalid `subagents` settings")?;
    let roster = discover(&DiscoverOptions::new(home.clone(), cwd, trust));
    Ok(cadre_core::orchestrator::tools::root_tool_specs(
        &parsed.settings,
        &roster,
        root_polls,
    ))
}

/// What the root session needs to delegate.
pub struct Orchestration {
    pub manager: TaskManager,
    /// Notices for the root (finished background tasks, checkpoints); the host's wake-up
    /// loop takes them.
    pub notices: mpsc::UnboundedReceiver<ParentNotice>,
    pub mirror: Arc<ConversationMirror>,
    pub roster: Arc<Roster>,
    pub settings: SubagentSettings,
    /// What the person running cadre should be told about settings and role files, each
    /// starting with its kind (`warning: …`).
    pub warnings: Vec<String>,
    /// The session's token and cost budget: the root's requests and every task's count here.
    pub budget: crate::budget::SessionBudget,
}

/// Inputs for [`Orchestration::new`].
pub struct Setup<'a> {
    pub home: &'a CadreHome,
    pub cwd: &'a Path,
    pub trust: ProjectTrust,
    pub settings: Option<&'a serde_json::Value>,
    pub provider: Arc<dyn Provider>,
    pub registry: Arc<ModelRegistry>,
    /// The root's active built-in tools (children get subsets of these).
    pub tools: ToolRegistry,
    pub root_session_id: String,
    pub root_session_file: Option<PathBuf>,
    pub history: Vec<cadre_protocol::Message>,
    pub artifacts_dir: PathBuf,
    /// Who confirms launches under `subagents.authorization: ask` (D3).
    pub confirm: Option<Arc<dyn cadre_core::orchestrator::manager::LaunchConfirmer>>,
    /// The environment children's bash commands start from (the root's).
    pub shell_env: Arc<cadre_tools::shell_env::ShellEnv>,
    /// The whole settings document (its `budgets`) and the run's budget flags.
    pub all_settings: &'a cadre_core::config::Settings,
    pub budget_flags: cadre_core::budget::Limits,
}

impl Orchestration {
    pub fn new(setup: Setup<'_>) -> Result<Orchestration> {
        let parsed =
            SubagentSettings::from_value(setup.settings).context("invalid `subagents` settings")?;
        let mut warnings: Vec<String> = parsed
            .warnings
            .iter()
            .map(|w| format!("warning: settings: {w}"))
            .collect();
        let settings = parsed.settings;
        let trusted = matches!(setup.trust, ProjectTrust::Trusted);
        let roster = Arc::new(discover(&DiscoverOptions::new(
            setup.home.clone(),
            setup.cwd,
            setup.trust,
        )));
        // A broken role file makes its name unavailable (the model is told when it asks for it);
        // the person running cadre is told here, once, instead of only by `cadre doctor`.
        for blocked in &roster.blocked {
            warnings.push(format!(
                "warning: agent type `{}` is unavailable: {} ({}); `cadre agents` shows the roles",
                blocked.name,
                blocked
                    .reason
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
                blocked.file.display()
            ));
        }
        let store = TaskStore::new(setup.home.tasks_dir());
        // Tasks a dead process left `running` are failed/orphaned before anything else (O13).
        let recovery = store.recover_orphans(pid_is_alive);
        if let Some(days) = settings.cleanup_period_days {
            let _ = store.cleanup(u64::from(days), std::time::SystemTime::now());
        }
        drop(recovery);
        // After recovery: a task a killed process left running counts what it spent.
        let budget = crate::budget::session_budget(
            setup.all_settings,
            setup.budget_flags,
            setup.root_session_file.as_deref(),
            &store,
            &setup.root_session_id,
        )?;
        let (notice_tx, notices) = mpsc::unbounded_channel();
        let manager = TaskManager::with_options(
            ManagerConfig {
                provider: setup.provider,
                models: setup.registry,
                tools: setup.tools,
                roster: roster.clone(),
                settings: settings.clone(),
                store,
                root_session_id: setup.root_session_id,
                root_session_file: setup.root_session_file,
                sessions_dir: cadre_core::session::session_dir_for_cwd(
                    setup.home.root(),
                    setup.cwd,
                ),
                cadre_home: setup.home.root().to_path_buf(),
                cwd: setup.cwd.to_path_buf(),
                trusted,
                artifacts_dir: setup.artifacts_dir,
                root_notices: notice_tx,
            },
            ManagerOptions {
                confirm: setup.confirm,
                shell_env: Some(setup.shell_env),
                budget: Some(Arc::clone(&budget.node)),
                unknown_price: budget.unknown_price,
                ..ManagerOptions::default()
            },
        );
        Ok(Orchestration {
            budget,
            manager,
            notices,
            mirror: ConversationMirror::new(setup.history),
            roster,
            settings,
            warnings,
        })
    }

    /// The parent's delegation policy for its system prompt (O14).
    pub fn policy_prompt(&self) -> Option<String> {
        parent_policy_prompt(&self.settings, &self.roster.summary())
    }

    /// The root's orchestration tools, restricted to `wanted`.
    pub fn tools(
        &self,
        model: &Model,
        thinking: ThinkingLevel,
        system_prompt: &str,
        active_tools: Vec<String>,
        wanted: &[String],
    ) -> Vec<Arc<dyn Tool>> {
        let conversation: Arc<dyn ConversationSource> = self.mirror.clone();
        let parent = self.manager.root_parent(
            model.clone(),
            thinking,
            system_prompt.to_string(),
            active_tools,
            Some(conversation),
        );
        root_tools(&self.manager, &parent)
            .into_iter()
            .filter(|t| wanted.iter().any(|w| w == t.name()))
            .collect()
    }

    /// Honour `cadre task stop` run from another process: it cannot reach into this one, so it
    /// leaves a stop request in the root session's request directory, which this watcher turns
    /// into a `TaskStop` (partial output kept, the parent notified). Each tick costs one lookup of
    /// that directory, however many tasks run. A request older than the watcher was left for a
    /// process that is gone; it is removed without effect, so continuing that task later does
    /// not stop it at once. Abort the returned handle when the run ends.
    pub fn watch_stop_requests(&self) -> tokio::task::JoinHandle<()> {
        let manager = self.manager.clone();
        let since = SystemTime::now();
        tokio::spawn(async move {
            let Ok(dir) = manager.store().stop_requests_dir(manager.root_session_id()) else {
                return;
            };
            let mut tick = tokio::time::interval(STOP_REQUEST_POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tick.tick().await;
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                let live = manager.live_tasks();
                for entry in entries.filter_map(Result::ok) {
                    let Some(id) = entry.file_name().to_str().map(str::to_string) else {
                        continue;
                    };
                    let request = entry.path();
                    if id.starts_with('.') {
                        // A writer's temp file: the request is not complete yet.
                        continue;
                    }
                    // A request for a task this process does not run (yet) waits for it.
                    if !live.contains(&id) {
                        continue;
                    }
                    let Ok(meta) = entry.metadata() else { continue };
                    // Removed first: a request is honoured once, and a failed removal must not
                    // stop the task again at every tick.
                    if std::fs::remove_file(&request).is_err() {
                        continue;
                    }
                    if meta.modified().is_ok_and(|at| at < since) {
                        continue;
                    }
                    let manager = manager.clone();
                    // Each stop waits for its task to end; one slow task must not hold the others.
                    tokio::spawn(async move {
                        let _ = manager.stop(&id).await;
                    });
                }
            }
        })
    }
}
