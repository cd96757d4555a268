//! Launching: validate a task before any model call, create its record and session, start it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use cadre_llm::{Model, resolve_thinking};
use cadre_protocol::{
    ContentBlock, Message, TaskBudgets, TaskPhase, TaskRecord, TaskStatus, ThinkingLevel,
    ToolResultMessage, WarningSchedule, now_millis,
};
use cadre_tools::ToolRegistry;
use futures_util::future::join_all;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::handle::{ChildGate, RunState, TaskHandle, lock};
use super::prompt::{child_system_prompt, task_message};
use super::run::{RebuildAgent, Retry, Slot, drive, outcome_of};
use super::types::{
    Delivery, EntryOutcome, LaunchError, LaunchSpec, ParentNotice, ParentRef, TaskSpec,
};
use super::{Inner, RunInfo, TaskManager};
use crate::agent::{Agent, AgentConfig};
use crate::handoff::contract::{render_packet, render_scope};
use crate::orchestrator::capability::{
    AGENT_TOOL, CapabilityInput, CapabilitySet, resolve_capabilities,
};
use crate::orchestrator::lifecycle::{Lifecycle, LifecycleConfig};
use crate::orchestrator::settings::{Authorization, DispatchMode};
use crate::orchestrator::store::{claim_ownership, new_task_id, timestamp};
use crate::orchestrator::tools::AgentTool;
use crate::orchestrator::worktree::Worktree;
use crate::roles::{
    AgentOverride, ContextMode, Isolation, ResolveInputs, RoleDef, ShellPolicy, Skill, SkillSearch,
    SubagentModelConfig, ToolList, load_skills, resolve_model,
};
use cadre_tools::BashTool;
use cadre_tools::sandbox::{SandboxConfig, create_scratch_dir};
use cadre_tools::shell_policy::ShellPolicy as ToolShellPolicy;

const BASH_TOOL: &str = "bash";
/// Under CADRE_HOME: the parent of read-only tasks' private scratch directories.
const SCRATCH_DIR: &str = "scratch";
/// Under the project root: where a role with `allowPlanFiles` may write.
const PLANS_DIR: &str = ".cadre/plans";
use crate::session::SessionWriter;

/// The synthetic result of tool calls still open when a fork starts (O9).
pub const FORK_OPEN_CALL_RESULT: &str = "fork started; this call continues outside the child";

/// A task that passed every check and is ready to start.
pub(crate) struct Prepared {
    pub spec: TaskSpec,
    pub role: RoleDef,
    pub model: Model,
    pub fallback: Option<String>,
    /// The fallback to retry with when the first model call fails (T7).
    pub retry_model: Option<Model>,
    pub requested_thinking: ThinkingLevel,
    pub thinking: ThinkingLevel,
    pub clamp_reason: Option<String>,
    pub caps: CapabilitySet,
    pub budgets: TaskBudgets,
    pub warnings: WarningSchedule,
    pub background: bool,
    pub cwd: PathBuf,
    pub worktree: bool,
    pub skills: Vec<Skill>,
    /// For a fork: the parent's conversation, open calls answered.
    pub fork_history: Option<Vec<Message>>,
    pub diagnostics: Vec<String>,
}

pub(crate) async fn launch(
    inner: &Arc<Inner>,
    parent: &ParentRef,
    spec: LaunchSpec,
    cancel: Option<CancellationToken>,
) -> Result<Vec<EntryOutcome>, LaunchError> {
    let max = inner.settings.max_tasks_per_launch;
    if spec.tasks.len() > max {
        return Err(LaunchError::TooManyTasks {
            given: spec.tasks.len(),
            max,
        });
    }
    let max_depth = inner.settings.max_agent_depth;
    if parent.depth >= max_depth {
        return Err(LaunchError::DepthLimit { max_depth });
    }
    let single = spec.tasks.is_empty();
    let raw = spec_raw(&spec);
    let entries = spec.entries();
    authorize(inner, &entries).await?;
    // D4: one foreground child at a time per parent, and no background launches.
    let sequential = inner.settings.dispatch == DispatchMode::Sequential;
    if sequential && entries.iter().any(|e| e.run_in_background == Some(true)) {
        return Err(LaunchError::NotAllowed(
            "background launches are refused: subagents.dispatch is sequential; launch in the \
             foreground"
                .into(),
        ));
    }
    let _turn = if sequential {
        let lock = Arc::clone(
            lock(&inner.sequential)
                .entry(parent.task_id.clone())
                .or_default(),
        );
        Some(lock.lock_owned().await)
    } else {
        None
    };
    let mut slots: Vec<Result<Arc<TaskHandle>, (String, LaunchError)>> = Vec::new();
    for entry in entries {
        let description = entry.description.clone();
        let started = match prepare(inner, parent, entry, raw.as_ref()).await {
            Ok(p) => start(inner, parent, p).await,
            Err(e) => Err(e),
        };
        match started {
            Ok(h) => {
                if sequential {
                    wait_foreground(inner, std::slice::from_ref(&h), cancel.clone()).await;
                }
                slots.push(Ok(h));
            }
            Err(e) if single => return Err(e),
            Err(e) => slots.push(Err((description, e))),
        }
    }

    let foreground: Vec<Arc<TaskHandle>> = slots
        .iter()
        .filter_map(|s| s.as_ref().ok())
        .filter(|h| !h.is_background())
        .cloned()
        .collect();
    wait_foreground(inner, &foreground, cancel).await;

    Ok(slots
        .into_iter()
        .map(|s| match s {
            Ok(h) => {
                let delivery = match h.state() {
                    RunState::Ended => Delivery::Finished,
                    RunState::Promoted => Delivery::Promoted,
                    _ => Delivery::Background,
                };
                EntryOutcome::Started(Box::new(outcome_of(inner, &h, delivery)))
            }
            Err((description, error)) => EntryOutcome::Refused { description, error },
        })
        .collect())
}

/// D3: whether this session may launch at all.
async fn authorize(inner: &Inner, entries: &[TaskSpec]) -> Result<(), LaunchError> {
    const REASON: &str = "host_authorization_required";
    match inner.settings.authorization {
        Authorization::Standing => Ok(()),
        Authorization::Solo => Err(LaunchError::NotAllowed(format!(
            "{REASON}: this session may not launch subagents (subagents.authorization is solo); \
             do the work yourself"
        ))),
        Authorization::Ask => {
            let Some(confirm) = &inner.confirm else {
                return Err(LaunchError::NotAllowed(format!(
                    "{REASON}: launches need confirmation (subagents.authorization is ask) and \
                     nobody can confirm in this mode"
                )));
            };
            let summary = entries
                .iter()
                .map(|e| {
                    format!(
                        "{} \"{}\"",
                        e.subagent_type
                            .as_deref()
                            .unwrap_or(crate::roles::builtin::DEFAULT_ROLE),
                        e.description.trim()
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            if confirm.confirm(&summary).await {
                Ok(())
            } else {
                Err(LaunchError::NotAllowed(format!(
                    "{REASON}: the launch was declined"
                )))
            }
        }
    }
}

/// The raw `Agent` arguments a fork looks its call up by.
fn spec_raw(spec: &LaunchSpec) -> Option<serde_json::Value> {
    spec.raw.clone()
}

/// Wait for foreground tasks to end or be promoted; an aborted parent call stops them.
pub(crate) async fn wait_foreground(
    inner: &Arc<Inner>,
    handles: &[Arc<TaskHandle>],
    cancel: Option<CancellationToken>,
) {
    if handles.is_empty() {
        return;
    }
    let all = join_all(handles.iter().map(|h| h.wait(true)));
    match cancel {
        None => {
            all.await;
        }
        Some(cancel) => {
            tokio::select! {
                _ = all => {}
                _ = cancel.cancelled() => {
                    for h in handles.iter().filter(|h| h.state() != RunState::Promoted) {
                        let actions = lock(&h.lifecycle).on_parent_shutdown();
                        super::run::apply_actions(inner, h, actions);
                        h.abort();
                    }
                    join_all(handles.iter().map(|h| h.wait(true))).await;
                }
            }
        }
    }
}

fn is_fork(role: &RoleDef) -> bool {
    role.context == ContextMode::Fork
}

/// The model keys of the settings, in the shape `roles::resolve_model` takes.
fn model_config(inner: &Inner) -> SubagentModelConfig {
    let s = &inner.settings;
    SubagentModelConfig {
        default_model: s.default_model.clone(),
        fallback_model: s.fallback_model.clone(),
        agent_overrides: s
            .agent_overrides
            .iter()
            .map(|(name, o)| {
                (
                    name.clone(),
                    AgentOverride {
                        model: o.model.clone(),
                        fallback_model: o.fallback_model.clone(),
                        thinking: o.thinking,
                    },
                )
            })
            .collect(),
    }
}

/// Check everything a launch needs before anything is created or any model is called.
pub(crate) async fn prepare(
    inner: &Arc<Inner>,
    parent: &ParentRef,
    spec: TaskSpec,
    raw: Option<&serde_json::Value>,
) -> Result<Prepared, LaunchError> {
    if spec.prompt.trim().is_empty() {
        return Err(LaunchError::Invalid("`prompt` must not be empty".into()));
    }
    let role_name = spec
        .subagent_type
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(crate::roles::builtin::DEFAULT_ROLE);
    let role = inner.roster.get(role_name)?.def.clone();
    let mut diagnostics = Vec::new();

    // Model and thinking (T6, T7).
    let call_thinking = match spec.thinking.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(t) => Some(ThinkingLevel::parse(t).ok_or_else(|| {
            LaunchError::Invalid(format!(
                "unknown thinking level `{t}` (use off, minimal, low, medium, high, xhigh or max)"
            ))
        })?),
    };
    let config = model_config(inner);
    let parent_model_name = parent.model.full_name();
    let resolved = resolve_model(&ResolveInputs {
        role: &role,
        call_model: spec
            .model
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty()),
        call_thinking,
        config: &config,
        parent_model: &parent_model_name,
        parent_thinking: parent.thinking,
    });
    diagnostics.extend(resolved.notes.iter().cloned());
    let mut switched = false;
    let model = if resolved.model == parent_model_name {
        parent.model.clone()
    } else {
        match inner.models.resolve(&resolved.model) {
            Ok(m) => m,
            Err(primary) => match resolved.fallback.as_deref() {
                Some(fb) => match inner.models.resolve(fb) {
                    Ok(m) => {
                        diagnostics.push(format!(
                            "model `{}` unavailable ({primary}); using fallback `{fb}`",
                            resolved.model
                        ));
                        switched = true;
                        m
                    }
                    Err(e) => {
                        return Err(LaunchError::Model(format!(
                            "model `{}` is not available ({primary}) and neither is its fallback `{fb}` ({e}). Known models: {}",
                            resolved.model,
                            known_models(inner)
                        )));
                    }
                },
                None => {
                    return Err(LaunchError::Model(format!(
                        "model `{}` is not available: {primary}. Known models: {}",
                        resolved.model,
                        known_models(inner)
                    )));
                }
            },
        }
    };
    let thinking = resolve_thinking(&model, resolved.thinking);
    // T7: the fallback a child is retried with, once, when its very first call fails.
    let retry_model = match resolved.fallback.as_deref() {
        Some(fb) if !switched && fb != model.full_name() => match inner.models.resolve(fb) {
            Ok(m) => Some(m),
            Err(e) => {
                diagnostics.push(format!("fallback model `{fb}` unavailable: {e}"));
                None
            }
        },
        _ => None,
    };

    // Fork (O9).
    let fork_history = if is_fork(&role) {
        if !parent.is_root() {
            return Err(LaunchError::NotAllowed(
                "a fork starts only from the root session".into(),
            ));
        }
        if !inner.settings.enable_fork {
            return Err(LaunchError::NotAllowed(
                "forks are disabled (subagents.enableFork is false)".into(),
            ));
        }
        let source = parent.conversation.as_ref().ok_or_else(|| {
            LaunchError::NotAllowed(
                "this session cannot fork: its conversation is not available".into(),
            )
        })?;
        let args = raw.cloned().unwrap_or(serde_json::Value::Null);
        let history = source.snapshot_for_call(&args).await.ok_or_else(|| {
            LaunchError::NotAllowed("cannot find the fork call in the parent's conversation".into())
        })?;
        Some(close_open_calls(history))
    } else {
        None
    };

    // Tools (S1, O8).
    let depth = parent.depth + 1;
    let role_tools: Option<Vec<String>> = match &role.tools {
        ToolList::All => None,
        ToolList::Named(names) => Some(names.clone()),
    };
    let role_allows_agent = inner.settings.enable_nested_agents
        && matches!(&role.tools, ToolList::Named(n) if n.iter().any(|t| t == AGENT_TOOL));
    let known = inner.known_tools();
    let caps = resolve_capabilities(CapabilityInput {
        parent_active: &parent.active_tools,
        role_tools: role_tools.as_deref(),
        disallowed: &role.disallowed_tools,
        readonly: role.readonly,
        depth,
        max_depth: inner.settings.max_agent_depth,
        role_allows_agent,
        tool_policy_no_tools: spec.packet.as_ref().is_some_and(|p| p.no_tools()),
        known_tools: &known,
    })?;

    // Budgets and supervision (L2–L5).
    let defaults = inner.settings.default_budgets();
    let budgets = TaskBudgets {
        max_turns: role.max_turns.or(defaults.max_turns),
        grace_turns: role.grace_turns.unwrap_or(defaults.grace_turns),
        max_tool_calls: role.max_tool_calls.or(defaults.max_tool_calls),
        soft_tool_calls: role.soft_tool_calls.or(defaults.soft_tool_calls),
        tool_budget_block: match &role.tool_budget_block {
            Some(ToolList::All) => vec!["*".to_string()],
            Some(ToolList::Named(names)) => names.clone(),
            None => defaults.tool_budget_block,
        },
        timeout_ms: role.timeout_ms.or(defaults.timeout_ms),
    };
    let default_warnings = inner.settings.warning_schedule();
    let warnings = WarningSchedule {
        warning_turns: spec
            .warning_turns
            .or(role.warning_turns)
            .unwrap_or(default_warnings.warning_turns)
            .max(1),
        warning_interval_turns: spec
            .warning_interval_turns
            .or(role.warning_interval_turns)
            .unwrap_or(default_warnings.warning_interval_turns),
    };
    let background = inner.settings.enable_background
        && inner.settings.dispatch != DispatchMode::Sequential
        && spec.run_in_background.or(role.background).unwrap_or(false);

    // Where it runs (O11).
    let cwd = match spec.cwd.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
        None => parent.cwd.clone(),
        Some(c) => {
            let p = parent.cwd.join(c);
            if !p.is_dir() {
                return Err(LaunchError::Invalid(format!(
                    "cwd `{}` is not a directory",
                    p.display()
                )));
            }
            p
        }
    };
    let worktree = match spec.isolation.as_deref().map(str::trim) {
        None | Some("") => role.isolation == Isolation::Worktree,
        Some("none") => false,
        Some("worktree") => true,
        Some(other) => {
            return Err(LaunchError::Invalid(format!(
                "unknown isolation `{other}` (use none or worktree)"
            )));
        }
    };
    if inner.plan_mode.load(std::sync::atomic::Ordering::SeqCst) {
        if !role.plan_mode_compatible() {
            return Err(LaunchError::NotAllowed(format!(
                "plan mode: `{}` may not launch; only read-only planning roles (such as Explore, \
                 Plan, research, review, advisor) may",
                role.name
            )));
        }
        if worktree {
            return Err(LaunchError::NotAllowed(
                "plan mode: worktree isolation is refused".into(),
            ));
        }
    }
    if worktree && !inner.settings.enable_worktrees {
        return Err(LaunchError::NotAllowed(
            "worktree isolation is disabled (subagents.enableWorktrees is false)".into(),
        ));
    }

    // Skills (T8): a missing skill fails the launch.
    let skills = if role.skills.is_empty() {
        Vec::new()
    } else {
        let home = crate::config::CadreHome::new(inner.cadre_home.clone());
        let home_dir = std::env::var_os("HOME").map(PathBuf::from);
        let search = SkillSearch::new(&home, home_dir.as_deref(), &cwd, inner.trusted);
        load_skills(&role.skills, &search)?
    };

    Ok(Prepared {
        spec,
        model,
        fallback: resolved.fallback,
        retry_model,
        requested_thinking: thinking.requested,
        thinking: thinking.effective,
        clamp_reason: thinking.clamp_reason,
        caps,
        budgets,
        warnings,
        background,
        cwd,
        worktree,
        skills,
        fork_history,
        diagnostics,
        role,
    })
}

fn known_models(inner: &Inner) -> String {
    let known = inner.models.known();
    if known.is_empty() {
        "none with credentials".into()
    } else {
        known.join(", ")
    }
}

/// Answer every call the last assistant message left open (the fork call and its siblings).
fn close_open_calls(mut history: Vec<Message>) -> Vec<Message> {
    let Some(last_assistant) = history
        .iter()
        .rposition(|m| matches!(m, Message::Assistant(_)))
    else {
        return history;
    };
    let Message::Assistant(a) = &history[last_assistant] else {
        return history;
    };
    let answered: Vec<String> = history[last_assistant + 1..]
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.tool_call_id.clone()),
            _ => None,
        })
        .collect();
    let open: Vec<ToolResultMessage> = a
        .tool_calls()
        .filter(|c| !answered.contains(&c.id))
        .map(|c| ToolResultMessage {
            tool_call_id: c.id.clone(),
            tool_name: c.name.clone(),
            content: vec![ContentBlock::text(FORK_OPEN_CALL_RESULT)],
            details: None,
            is_error: false,
            timestamp: now_millis(),
        })
        .collect();
    // Keep only results that directly follow the assistant message, then add the new ones.
    history.truncate(last_assistant + 1 + answered.len());
    history.extend(open.into_iter().map(Message::ToolResult));
    history
}

/// The task as the child reads it: the delegation packet (D1), the prompt, the probe's scope
/// (D2), and the output contract at the very end (V1).
fn task_text(spec: &TaskSpec) -> String {
    let mut text = String::new();
    if let Some(packet) = &spec.packet {
        text.push_str(render_packet(packet).trim_end());
        text.push_str("\n\n");
    }
    text.push_str(spec.prompt.trim_end());
    let scope = render_scope(&spec.scope, spec.stop_condition.as_deref());
    if !scope.trim().is_empty() {
        text.push_str("\n\n");
        text.push_str(scope.trim_end());
    }
    task_message(&text, spec.expected_output.as_deref())
}

/// A fork's first message: the fork role's instructions, then the task.
fn fork_message(role: &RoleDef, spec: &TaskSpec) -> String {
    let task = task_text(spec);
    let intro = role.prompt.trim();
    let intro = if intro.is_empty() {
        "You are a fork of the agent above: you share its conversation so far and now work on \
         your own. Your final message is all the agent above will see."
    } else {
        intro
    };
    format!("{intro}\n\nYour task:\n\n{task}")
}

/// What a child agent is built from (a fresh launch or a reopened task).
pub(crate) struct ChildBuild<'a> {
    /// The enforced read-only flag and shell policy (the role's, or as persisted on reopen).
    pub readonly: bool,
    pub shell_policy: ShellPolicy,
    pub task_id: &'a str,
    pub depth: u32,
    pub role: &'a RoleDef,
    pub skills: &'a [Skill],
    pub caps: &'a CapabilitySet,
    pub model: Model,
    pub thinking: ThinkingLevel,
    pub cwd: PathBuf,
    /// `Some` for forks: the parent's system prompt.
    pub system_prompt: Option<String>,
    pub history: Vec<Message>,
    pub session: SessionWriter,
}

/// Build the child's agent: its tools (the parent's tool objects, its own `bash` under the
/// role's shell policy and sandbox, its own `Agent` tool when nesting is allowed), system prompt
/// and event channel.
pub(crate) fn build_child_agent(
    inner: &Arc<Inner>,
    b: ChildBuild<'_>,
) -> Result<(Agent, mpsc::UnboundedReceiver<cadre_protocol::AgentEvent>), LaunchError> {
    let mut tools = ToolRegistry::new();
    for name in &b.caps.tools {
        if name == AGENT_TOOL {
            if let Some(manager) = inner.manager() {
                let child_parent = child_parent_ref(inner, &b);
                tools.register(Arc::new(AgentTool::new(manager, child_parent)));
            }
        } else if name == BASH_TOOL && (b.readonly || b.shell_policy != ShellPolicy::Unrestricted) {
            tools.register(child_bash(inner, &b)?);
        } else if let Some(tool) = inner.tools.get(name) {
            tools.register(Arc::clone(tool));
        }
    }
    let system_prompt = match b.system_prompt {
        Some(p) => p,
        None => child_system_prompt(b.role, b.skills, &tools.specs(), &b.cwd, &inner.cadre_home),
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let config = AgentConfig {
        provider: Arc::clone(&inner.provider),
        model: b.model,
        thinking: b.thinking,
        system_prompt,
        tools,
        cwd: b.cwd,
        artifacts_dir: inner.artifacts_dir.clone(),
        events: Some(tx),
    };
    let mut agent = Agent::new(config, b.history, Some(b.session));
    // The supervisor needs turn and tool boundaries only, not a copy of every delta.
    agent.set_streaming_updates(false);
    Ok((agent, rx))
}

/// The child's bash: its role's shell policy is checked before every command (S3); a read-only
/// role's commands run only inside the kernel sandbox, writable beneath a private scratch
/// directory (and `.cadre/plans/` with `allowPlanFiles`), never unsandboxed (S2).
fn child_bash(
    inner: &Inner,
    b: &ChildBuild<'_>,
) -> Result<Arc<dyn cadre_tools::Tool>, LaunchError> {
    let policy = tool_shell_policy(b.shell_policy);
    if !b.readonly {
        return Ok(Arc::new(BashTool::new().with_policy(policy)));
    }
    let sandbox_error = |what: &str, e: std::io::Error| {
        LaunchError::NotAllowed(format!("cannot prepare the read-only sandbox: {what}: {e}"))
    };
    let scratch = create_scratch_dir(&inner.cadre_home.join(SCRATCH_DIR))
        .map_err(|e| sandbox_error("scratch directory", e))?;
    let mut extra_writable = Vec::new();
    if b.role.allow_plan_files {
        let plans = crate::config::project_root(&b.cwd).join(PLANS_DIR);
        std::fs::create_dir_all(&plans).map_err(|e| sandbox_error("plans directory", e))?;
        extra_writable.push(plans);
    }
    Ok(Arc::new(BashTool::sandboxed(SandboxConfig {
        exe: inner.sandbox_exe.clone(),
        scratch_dir: scratch,
        extra_writable,
        policy,
    })))
}

/// The role's shell policy in the bash tool's terms.
fn tool_shell_policy(p: ShellPolicy) -> ToolShellPolicy {
    match p {
        ShellPolicy::Unrestricted => ToolShellPolicy::Unrestricted,
        ShellPolicy::Inspect => ToolShellPolicy::Inspect,
        ShellPolicy::Verify => ToolShellPolicy::Verify,
        ShellPolicy::None => ToolShellPolicy::None,
    }
}

/// A shell policy as persisted in a task record; an unknown value is the strictest.
pub(crate) fn parse_shell_policy(s: &str) -> ShellPolicy {
    [
        ShellPolicy::Unrestricted,
        ShellPolicy::Inspect,
        ShellPolicy::Verify,
        ShellPolicy::None,
    ]
    .into_iter()
    .find(|p| p.as_str() == s)
    .unwrap_or(ShellPolicy::None)
}

/// The child as a parent of its own children (O8): its notices are delivered into it.
fn child_parent_ref(inner: &Arc<Inner>, b: &ChildBuild<'_>) -> ParentRef {
    let sink = child_sink(inner, b.task_id);
    ParentRef {
        task_id: Some(b.task_id.to_string()),
        depth: b.depth,
        session_id: Some(b.session.session_id().to_string()),
        session_file: Some(b.session.path().to_path_buf()),
        cwd: b.cwd.clone(),
        active_tools: b.caps.tools.clone(),
        model: b.model.clone(),
        thinking: b.thinking,
        system_prompt: String::new(),
        notices: sink,
        conversation: None,
    }
}

/// The notice channel of a nesting task, created once. Notices are steered into its live run;
/// one arriving after the run ended reopens the task with it, in the background, so its new
/// answer reaches its own parent as a notification.
fn child_sink(inner: &Arc<Inner>, task_id: &str) -> mpsc::UnboundedSender<ParentNotice> {
    let mut sinks = lock(&inner.sinks);
    if let Some(tx) = sinks.get(task_id) {
        return tx.clone();
    }
    let (tx, mut rx) = mpsc::unbounded_channel::<ParentNotice>();
    sinks.insert(task_id.to_string(), tx.clone());
    let weak = Arc::downgrade(inner);
    let id = task_id.to_string();
    tokio::spawn(async move {
        while let Some(notice) = rx.recv().await {
            let Some(inner) = weak.upgrade() else { return };
            if let Some(h) = inner.handle(&id) {
                if h.state() != RunState::Ended && h.deliver(notice.text()) {
                    continue;
                }
                h.wait(false).await;
            }
            let _ = super::reopen::reopen_with(&inner, &id, notice.text(), true).await;
            drop(notice);
        }
    });
    tx
}

/// Create the record and session and start the run.
pub(crate) async fn start(
    inner: &Arc<Inner>,
    parent: &ParentRef,
    p: Prepared,
) -> Result<Arc<TaskHandle>, LaunchError> {
    let id = new_task_id();
    let description = if p.spec.description.trim().is_empty() {
        p.spec
            .prompt
            .split_whitespace()
            .take(5)
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        p.spec.description.trim().to_string()
    };
    let mut record = TaskRecord {
        id: id.clone(),
        name: p
            .spec
            .name
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string),
        agent: p.role.name.clone(),
        description,
        prompt: p.spec.prompt.clone(),
        cwd: p.cwd.to_string_lossy().into_owned(),
        parent_session_id: parent.session_id.clone(),
        root_session_id: inner.root_session_id.clone(),
        parent_task_id: parent.task_id.clone(),
        depth: parent.depth + 1,
        status: TaskStatus::Running,
        phase: TaskPhase::Starting,
        termination: None,
        background: p.background,
        forked: p.fork_history.is_some(),
        model: p.model.full_name(),
        fallback_model: p.fallback.clone(),
        requested_thinking: p.requested_thinking.as_str().into(),
        effective_thinking: p.thinking.as_str().into(),
        thinking_clamp_reason: p.clamp_reason.clone(),
        budgets: p.budgets.clone(),
        warnings: p.warnings,
        tools: p.caps.tools.clone(),
        readonly: p.role.readonly,
        shell_policy: p.role.shell_policy.as_str().into(),
        one_shot: p.role.one_shot,
        trusted: inner.trusted,
        diagnostics: p.diagnostics.clone(),
        created_at: timestamp(SystemTime::now()),
        ..TaskRecord::default()
    };
    claim_ownership(&mut record);
    inner.store.create(&mut record)?;
    let mut lifecycle = Lifecycle::new(LifecycleConfig {
        budgets: p.budgets.clone(),
        warnings: Some(p.warnings),
        one_shot: p.role.one_shot,
        background: p.background,
    });

    // From here on a failure is the task's own: recorded as `startup_error` (L1).
    let worktree = if p.worktree {
        match Worktree::create(&p.cwd, &id).await {
            Ok(w) => Some(w),
            Err(e) => {
                let e = LaunchError::from(e);
                fail_startup(inner, &mut record, &mut lifecycle, &e);
                return Err(e);
            }
        }
    } else {
        None
    };
    let cwd = worktree
        .as_ref()
        .map(|w| w.cwd().to_path_buf())
        .unwrap_or_else(|| p.cwd.clone());
    let session = match SessionWriter::create(
        inner.session_dir(),
        &cwd,
        parent.session_file.as_deref(),
    )
    .await
    {
        Ok(s) => s,
        Err(e) => {
            if let Some(w) = &worktree {
                w.remove().await;
            }
            let e = LaunchError::from(e);
            fail_startup(inner, &mut record, &mut lifecycle, &e);
            return Err(e);
        }
    };
    record.cwd = cwd.to_string_lossy().into_owned();
    record.session_file = Some(session.path().to_string_lossy().into_owned());
    record.worktree = worktree.as_ref().map(Worktree::info);
    inner.store.save(&mut record)?;

    let (history, first) = match &p.fork_history {
        Some(h) => (h.clone(), fork_message(&p.role, &p.spec)),
        None => (Vec::new(), task_text(&p.spec)),
    };
    let retry_history = history.clone();
    let retry_cwd = cwd.clone();
    let built = build_child_agent(
        inner,
        ChildBuild {
            readonly: p.role.readonly,
            shell_policy: p.role.shell_policy,
            task_id: &id,
            depth: parent.depth + 1,
            role: &p.role,
            skills: &p.skills,
            caps: &p.caps,
            model: p.model.clone(),
            thinking: p.thinking,
            cwd,
            system_prompt: p
                .fork_history
                .as_ref()
                .map(|_| parent.system_prompt.clone()),
            history,
            session,
        },
    );
    let (mut agent, events) = match built {
        Ok(b) => b,
        Err(e) => {
            if let Some(w) = &worktree {
                w.remove().await;
            }
            fail_startup(inner, &mut record, &mut lifecycle, &e);
            return Err(e);
        }
    };
    let handle = Arc::new(TaskHandle::new(
        record,
        lifecycle,
        p.caps.clone(),
        parent.notices.clone(),
        p.background,
    ));
    agent.set_tool_gate(Arc::new(ChildGate {
        handle: Arc::clone(&handle),
    }));

    // A foreground child of a task borrows its blocked parent's slot (O7).
    let slot = match (&parent.task_id, p.background) {
        (Some(pid), false) => inner
            .handle(pid)
            .and_then(|ph| lock(&ph.permit).as_ref().and_then(|permit| permit.lend()))
            .map(Slot::Ready)
            .unwrap_or_else(|| Slot::queue(&inner.quota)),
        _ => Slot::queue(&inner.quota),
    };
    let retry = p.retry_model.clone().map(|model| Retry {
        model,
        build: rebuild_agent(inner, parent, &p, &id, &retry_cwd, retry_history),
    });
    lock(&inner.runs).insert(
        id.clone(),
        RunInfo {
            model: p.model.clone(),
            system_prompt: p
                .fork_history
                .as_ref()
                .map(|_| parent.system_prompt.clone()),
        },
    );
    lock(&inner.tasks).insert(id.clone(), Arc::clone(&handle));
    let guard = inner.pending.guard();
    tokio::spawn(drive(
        Arc::clone(inner),
        Arc::clone(&handle),
        agent,
        events,
        vec![Message::user(first)],
        guard,
        slot,
        worktree,
        false,
        retry,
    ));
    Ok(handle)
}

/// How to build the task's agent again on its fallback model, in a new session file (T7).
fn rebuild_agent(
    inner: &Arc<Inner>,
    parent: &ParentRef,
    p: &Prepared,
    id: &str,
    cwd: &std::path::Path,
    history: Vec<Message>,
) -> RebuildAgent {
    let inner = Arc::clone(inner);
    let id = id.to_string();
    let role = p.role.clone();
    let skills = p.skills.clone();
    let caps = p.caps.clone();
    let requested = p.requested_thinking;
    let cwd = cwd.to_path_buf();
    let system_prompt = p
        .fork_history
        .as_ref()
        .map(|_| parent.system_prompt.clone());
    let parent_session = parent.session_file.clone();
    let depth = parent.depth + 1;
    Box::new(move |model: Model| {
        Box::pin(async move {
            let session =
                SessionWriter::create(inner.session_dir(), &cwd, parent_session.as_deref()).await?;
            let thinking = resolve_thinking(&model, requested).effective;
            build_child_agent(
                &inner,
                ChildBuild {
                    readonly: role.readonly,
                    shell_policy: role.shell_policy,
                    task_id: &id,
                    depth,
                    role: &role,
                    skills: &skills,
                    caps: &caps,
                    model,
                    thinking,
                    cwd: cwd.clone(),
                    system_prompt,
                    history,
                    session,
                },
            )
        })
    })
}

/// Record a task that could not start (its record exists, no model was called).
fn fail_startup(
    inner: &Inner,
    record: &mut TaskRecord,
    lifecycle: &mut Lifecycle,
    error: &LaunchError,
) {
    let message = error.to_string();
    let kind = lifecycle.on_startup_error(&message);
    record.status = kind.status();
    record.termination = Some(kind);
    record.phase = lifecycle.phase();
    record.error = Some(message);
    record.ended_at = Some(timestamp(SystemTime::now()));
    record.owner_pid = None;
    record.owner_start_time = None;
    // The launch error reaches the caller either way; a record that cannot be saved adds nothing.
    let _ = inner.store.save(record);
}

impl TaskManager {
    /// The tools a child of `parent` with `role` would get (for displays and tests).
    pub fn child_tools(&self, parent: &ParentRef, role: &str) -> Result<Vec<String>, LaunchError> {
        let inner = &self.inner;
        let def = inner.roster.get(role)?.def.clone();
        let role_tools: Option<Vec<String>> = match &def.tools {
            ToolList::All => None,
            ToolList::Named(names) => Some(names.clone()),
        };
        let known = inner.known_tools();
        let caps = resolve_capabilities(CapabilityInput {
            parent_active: &parent.active_tools,
            role_tools: role_tools.as_deref(),
            disallowed: &def.disallowed_tools,
            readonly: def.readonly,
            depth: parent.depth + 1,
            max_depth: inner.settings.max_agent_depth,
            role_allows_agent: inner.settings.enable_nested_agents
                && matches!(&def.tools, ToolList::Named(n) if n.iter().any(|t| t == AGENT_TOOL)),
            tool_policy_no_tools: false,
            known_tools: &known,
        })?;
        Ok(caps.tools)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_protocol::{AssistantMessage, ToolCall};

    fn assistant(calls: &[&str]) -> Message {
        let mut a = AssistantMessage::empty("x", "y", "z");
        for id in calls {
            a.content.push(ContentBlock::ToolCall(ToolCall {
                id: (*id).into(),
                name: "ls".into(),
                arguments: serde_json::json!({}),
            }));
        }
        Message::Assistant(a)
    }

    fn result(id: &str) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "ls".into(),
            content: vec![ContentBlock::text("done")],
            details: None,
            is_error: false,
            timestamp: 0,
        })
    }

    fn ids(history: &[Message]) -> Vec<(String, String)> {
        history
            .iter()
            .filter_map(|m| match m {
                Message::ToolResult(r) => Some((
                    r.tool_call_id.clone(),
                    cadre_protocol::join_text(&r.content),
                )),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_open_call_of_the_forking_message_gets_the_fork_result() {
        let h = close_open_calls(vec![
            Message::user("go"),
            assistant(&["a"]),
            result("a"),
            assistant(&["b", "c", "d"]),
            result("c"),
        ]);
        assert_eq!(h.len(), 7);
        assert_eq!(
            ids(&h),
            [
                ("a".to_string(), "done".to_string()),
                ("c".into(), "done".into()),
                ("b".into(), FORK_OPEN_CALL_RESULT.into()),
                ("d".into(), FORK_OPEN_CALL_RESULT.into()),
            ]
        );
    }

    #[test]
    fn a_history_without_assistant_messages_is_unchanged() {
        let h = close_open_calls(vec![Message::user("go")]);
        assert_eq!(h.len(), 1);
        assert!(close_open_calls(Vec::new()).is_empty());
        let h = close_open_calls(vec![Message::user("go"), assistant(&[])]);
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn a_fork_message_carries_the_role_prompt_then_the_task() {
        let role = RoleDef {
            prompt: "FORK RULES".into(),
            ..RoleDef::default()
        };
        let spec = TaskSpec {
            prompt: "do it".into(),
            expected_output: Some("- x".into()),
            ..TaskSpec::default()
        };
        let m = fork_message(&role, &spec);
        assert!(m.starts_with("FORK RULES\n\nYour task:\n\ndo it"));
        assert!(m.ends_with("- x"));
        let m = fork_message(&RoleDef::default(), &spec);
        assert!(m.starts_with("You are a fork"));
    }
}
