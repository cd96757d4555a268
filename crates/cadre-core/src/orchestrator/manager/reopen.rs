//! Continuation (O2): a message to a live task is a steer; a finished task is reopened from its
//! session file with what its record persisted (tools, read-only, shell policy, budgets), narrowed
//! by its role as it is now and by the project's trust now, and its counters continue. Plan mode
//! refuses what it would refuse to launch (`continuation.rs`). Every way a task is continued —
//! `SendMessage` from any front end (the root's tool, which RPC, MCP and ACP clients call too) and
//! a nested child's notice reopening its parent task — comes through [`steer_or_reopen`].

use std::path::PathBuf;
use std::sync::Arc;

use cadre_protocol::{Message, TaskStatus, ThinkingLevel};

use super::child::{ChildBuild, build_child_agent};
use super::continuation::{continuation_boundary, plan_mode_refusal, recorded};
use super::end::outcome_of;
use super::handle::{ChildGate, RunState, TaskHandle, lock};
use super::refusal_code::RefusalCode;
use super::run::{RunPlan, Slot, drive};
use super::scope::ProbeScope;
use super::spawn::spawn_run;
use super::types::{Delivery, LaunchError, ParentRef, SendOutcome};
use super::{Inner, RunInfo, TaskManager};
use crate::handoff::packet::SHA256_TOOL;
use crate::orchestrator::capability::{
    AGENT_TOOL, CapabilityInput, CapabilitySet, resolve_capabilities,
};
use crate::orchestrator::lifecycle::{Lifecycle, LifecycleConfig, ReopenError};
use crate::orchestrator::store::claim_ownership;
use crate::roles::{RoleDef, SkillSearch, ToolList, load_skills};
use crate::session::{SessionWriter, load_session};

pub(crate) async fn send_message(
    inner: &Arc<Inner>,
    _parent: &ParentRef,
    to: &str,
    message: &str,
) -> Result<SendOutcome, LaunchError> {
    if message.trim().is_empty() {
        return Err(LaunchError::Invalid("`message` must not be empty".into()));
    }
    let id = TaskManager::from_inner(Arc::clone(inner)).resolve(to)?;
    let h = match steer_or_reopen(inner, &id, message, false).await? {
        Continued::Steered => return Ok(SendOutcome::Steered { task_id: id }),
        Continued::Reopened(h) => h,
    };
    if h.is_background() {
        return Ok(SendOutcome::ResumedInBackground { task_id: id });
    }
    let delivery = match h.wait(true).await {
        RunState::Promoted => Delivery::Promoted,
        _ => Delivery::Finished,
    };
    Ok(SendOutcome::Continued(Box::new(outcome_of(
        inner, &h, delivery,
    ))))
}

/// Where a message to a task went.
pub(crate) enum Continued {
    /// Into its live run.
    Steered,
    /// It reopened the finished task: its new run.
    Reopened(Arc<TaskHandle>),
}

/// Steer `message` into task `id`'s live run, or reopen the task with it once its run has
/// ended. One message at a time per task: a second message that waited for a finishing run
/// must reach the run the first one started, not reopen the task again.
pub(crate) async fn steer_or_reopen(
    inner: &Arc<Inner>,
    id: &str,
    message: &str,
    force_background: bool,
) -> Result<Continued, LaunchError> {
    let turn = Arc::clone(lock(&inner.continuing).entry(id.to_string()).or_default());
    let _turn = turn.lock().await;
    inner.refuse_if_closed()?;
    if let Some(h) = inner.handle(id)
        && h.state() != RunState::Ended
    {
        // A live run was started under this manager's rules; plan mode may have been armed
        // since, and a steer directs the run as a continuation would.
        if inner.plan_mode.load(std::sync::atomic::Ordering::SeqCst) {
            let record = h.data().record.clone();
            if let Some(refusal) = plan_mode_refusal(&record, &recorded(&record)) {
                return Err(refusal);
            }
        }
        if h.deliver(message) {
            return Ok(Continued::Steered);
        }
        // The run is finishing: wait for its record, then reopen.
        h.wait(false).await;
        inner.refuse_if_closed()?;
    }
    reopen_with(inner, id, message, force_background)
        .await
        .map(Continued::Reopened)
}

/// Reopen finished task `id` with `message` and start its next run. `force_background` makes
/// its end a notification to its parent (used when a nested child's notice wakes it).
async fn reopen_with(
    inner: &Arc<Inner>,
    id: &str,
    message: &str,
    force_background: bool,
) -> Result<Arc<TaskHandle>, LaunchError> {
    let mut record = inner.store.load(&inner.root_session_id, id)?;
    if record.one_shot {
        return Err(LaunchError::refused(
            RefusalCode::OneShot,
            format!(
                "task {id}: {} ({}); launch a new task instead",
                ReopenError::OneShot,
                record.agent
            ),
        ));
    }
    if record.status == TaskStatus::Running {
        return Err(LaunchError::refused(
            RefusalCode::StillRunning,
            format!("task {id} is still running in another process"),
        ));
    }
    // Checked as a launch is, before anything changes: the role as it is now (a role that can no
    // longer launch — removed, blocked, or a project role of a project no longer trusted —
    // cannot be continued either), plan mode, and the tool set the role allows now.
    let role = inner.roster.get(&record.agent).map_err(|e| {
        // The role's own code (unknown, or a refused definition) with the task's words.
        let code = LaunchError::Role(e.clone()).code();
        LaunchError::refused(
            code,
            format!("task {id} cannot be continued: its role is not available now: {e}"),
        )
    })?;
    let role = role.def.clone();
    let plan_mode = inner.plan_mode.load(std::sync::atomic::Ordering::SeqCst);
    let boundary = continuation_boundary(&record, &role, plan_mode)?;
    let caps = continuation_caps(inner, &record, &role, boundary.readonly)?;
    // Project skills, roles and servers load only while the project is trusted: the trust the
    // task was launched with does not outlive a `cadre trust` revocation.
    let trusted = record.trusted && inner.trusted;
    let session_path = record
        .session_file
        .as_ref()
        .map(PathBuf::from)
        .ok_or_else(|| {
            LaunchError::refused(
                RefusalCode::NoSession,
                format!("task {id} has no session file to continue"),
            )
        })?;
    let loaded = load_session(&session_path)?;
    let history = loaded.messages();
    let session = SessionWriter::resume(&session_path, &loaded).await?;

    let previous = lock(&inner.runs).get(id).cloned();
    // The model the task last ran on: the registry's, else (e.g. the parent's own model, which
    // the registry may not list) the one this process ran it with.
    let model = match inner.models.resolve(&record.model) {
        Ok(m) => m,
        Err(e) => match previous
            .as_ref()
            .filter(|r| r.model.full_name() == record.model)
        {
            Some(r) => r.model.clone(),
            None => {
                return Err(LaunchError::Model(format!(
                    "cannot continue task {id}: model `{}`: {e}",
                    record.model
                )));
            }
        },
    };
    // Its budget: what it spent before stays spent; its cap is its own (as raised with
    // `cadre task budget`) and what its parent can give it now.
    let spent_before = record
        .budget
        .map(|b| b.spent)
        .unwrap_or_else(|| crate::budget::Spend::of_usage(&record.usage.tokens));
    let reservation = inner.reserve_budget(
        record.parent_task_id.as_deref(),
        record.budgets.limits(),
        spent_before,
        crate::budget::CHILD_SHARE,
        &model,
    )?;
    let budget = Arc::clone(reservation.node());
    let thinking = ThinkingLevel::parse(&record.effective_thinking).unwrap_or_default();
    let cwd = Some(PathBuf::from(&record.cwd))
        .filter(|p| p.is_dir())
        .unwrap_or_else(|| inner.cwd.clone());
    let skills = if role.skills.is_empty() {
        Vec::new()
    } else {
        let home = crate::config::CadreHome::new(inner.cadre_home.clone());
        let home_dir = std::env::var_os("HOME").map(PathBuf::from);
        let search = SkillSearch::new(&home, home_dir.as_deref(), &cwd, trusted);
        load_skills(&role.skills, &search).unwrap_or_else(|e| {
            record
                .diagnostics
                .push(format!("continuation without skills: {e}"));
            Vec::new()
        })
    };
    let background = record.background || force_background;
    let notices = record
        .parent_task_id
        .as_ref()
        .and_then(|pid| lock(&inner.sinks).get(pid).cloned())
        .unwrap_or_else(|| inner.root_notices.clone());
    // The boundary persisted in the record, whatever the role file says now (O2).
    let scope = ProbeScope::new(&cwd, &record.scope);
    let gate_cwd = cwd.clone();
    let (mut agent, events) = build_child_agent(
        inner,
        ChildBuild {
            readonly: boundary.readonly,
            shell_policy: boundary.shell_policy,
            // The record's patterns, narrowed by the role file's now, never widened.
            bash_allow: &boundary.bash_allow,
            task_id: id,
            depth: record.depth,
            role: &role,
            skills: &skills,
            caps: &caps,
            model: model.clone(),
            thinking,
            cwd,
            system_prompt: previous.as_ref().and_then(|r| r.system_prompt.clone()),
            history,
            session,
            structured: None,
            budget: &budget,
        },
    )?;
    let lifecycle = Lifecycle::resume(
        LifecycleConfig {
            budgets: record.budgets.clone(),
            warnings: Some(record.warnings),
            one_shot: record.one_shot,
            background,
        },
        &record.usage,
    );
    // What this run is held to is what the next continuation starts from: a narrowing sticks.
    if caps.tools != record.tools {
        record.diagnostics.push(format!(
            "continued with the tools its role allows now: {}",
            if caps.tools.is_empty() {
                "none".to_string()
            } else {
                caps.tools.join(", ")
            }
        ));
    }
    if record.trusted && !trusted {
        record
            .diagnostics
            .push("continued without the project's trust, which was revoked".to_string());
    }
    record.tools = caps.tools.clone();
    record.readonly = boundary.readonly;
    record.shell_policy = boundary.shell_policy.as_str().into();
    record.bash_allow = boundary.bash_allow.clone();
    record.trusted = trusted;
    record.status = TaskStatus::Running;
    record.phase = lifecycle.phase();
    record.termination = None;
    record.error = None;
    record.ended_at = None;
    record.background = background;
    record.budget = super::launch::budget_view(&budget);
    claim_ownership(&mut record);
    inner.store.save(&mut record)?;

    let handle = Arc::new(TaskHandle::new(
        record,
        lifecycle,
        caps,
        notices,
        background,
        reservation.keep(),
    ));
    super::launch::watch_budget(&handle);
    agent.set_tool_gate(Arc::new(ChildGate {
        handle: Arc::clone(&handle),
    }));
    // The probe's scope holds across continuations; its read budget starts afresh.
    handle.data().scope = scope;
    if !handle.data().record.readonly {
        handle.data().write_boundary = Some(super::handle::WriteGate {
            boundary: super::child::writer_boundary(inner, &gate_cwd, None),
            cwd: gate_cwd.clone(),
        });
    }
    lock(&inner.runs).insert(
        id.to_string(),
        RunInfo {
            model,
            system_prompt: previous.and_then(|r| r.system_prompt),
        },
    );
    lock(&inner.tasks).insert(id.to_string(), Arc::clone(&handle));
    let guard = inner.pending.guard();
    spawn_run(
        inner,
        &handle,
        drive(
            Arc::clone(inner),
            Arc::clone(&handle),
            agent,
            events,
            RunPlan {
                input: vec![Message::user(message)],
                guard,
                slot: Slot::queue(&inner.quota),
                worktree: None,
                continuation: true,
                retry: None,
                review: None,
            },
        ),
    );
    Ok(handle)
}

/// The tools a continuation of `record` gets: its recorded set, which is the upper bound, as
/// the role allows it now (its `tools` and `disallowedTools`, `Agent` and the depth limit,
/// edit/write and unannotated MCP tools when read-only — S1, as at launch). Tools no longer in
/// this runtime are left out; the packet digest tool a review task was given is kept.
fn continuation_caps(
    inner: &Inner,
    record: &cadre_protocol::TaskRecord,
    role: &RoleDef,
    readonly: bool,
) -> Result<CapabilitySet, LaunchError> {
    let known = inner.known_tools();
    let recorded: Vec<String> = record
        .tools
        .iter()
        .filter(|t| known.contains(t))
        .cloned()
        .collect();
    let mcp_read_only = inner.mcp_read_only_tools();
    let mut caps = resolve_capabilities(CapabilityInput {
        parent_active: &recorded,
        role_tools: role.tools.as_named(),
        disallowed: &role.disallowed_tools,
        readonly,
        depth: record.depth,
        max_depth: inner.settings.max_agent_depth,
        role_allows_agent: inner.settings.enable_nested_agents
            && matches!(&role.tools, ToolList::Named(n) if n.iter().any(|t| t == AGENT_TOOL)),
        tool_policy_no_tools: false,
        known_tools: &known,
        mcp_read_only: &mcp_read_only,
    })?;
    if record.tools.iter().any(|t| t == SHA256_TOOL) && !caps.contains(SHA256_TOOL) {
        caps.tools.push(SHA256_TOOL.to_string());
    }
    Ok(caps)
}
