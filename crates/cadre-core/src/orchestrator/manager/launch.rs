//! Launching: a launch's checks (authorization, limits, sequential dispatch), then for each
//! task its record, session and start; foreground tasks are waited for.

use std::sync::Arc;
use std::time::SystemTime;

use cadre_llm::{Model, resolve_thinking};
use cadre_protocol::{Message, TaskPhase, TaskRecord, TaskStatus};
use futures_util::future::join_all;
use tokio_util::sync::CancellationToken;

use super::child::{ChildBuild, build_child_agent, fork_message, task_text};
use super::end::outcome_of;
use super::handle::{ChildGate, RunState, TaskHandle, lock};
use super::prepare::{Prepared, prepare};
use super::refusal_code::RefusalCode;
use super::review::ReviewSetup;
use super::run::{RebuildAgent, Retry, RunPlan, Slot, drive};
use super::scope::ProbeScope;
use super::spawn::spawn_run;
use super::structured::StructuredSlot;
use super::types::{Delivery, EntryOutcome, LaunchError, LaunchSpec, ParentRef, TaskSpec};
use super::{Inner, RunInfo, TaskManager};
use crate::orchestrator::capability::{AGENT_TOOL, CapabilityInput, resolve_capabilities};
use crate::orchestrator::lifecycle::{Lifecycle, LifecycleConfig};
use crate::orchestrator::settings::{Authorization, DispatchMode};
use crate::orchestrator::store::{claim_ownership, new_task_id, timestamp};
use crate::orchestrator::worktree::Worktree;
use crate::roles::ToolList;
use crate::session::SessionWriter;

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
        return Err(LaunchError::refused(
            RefusalCode::SequentialDispatch,
            "background launches are refused: subagents.dispatch is sequential; launch in the \
             foreground",
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
    // The tasks of one call share half of what their parent has left equally: the i-th of n
    // reserves 1/(2n - i) of what is left when it starts, which is 1/(2n) of the whole for
    // each. Sequential tasks run one at a time, so each may have half.
    let batch = if sequential { 1 } else { entries.len().max(1) };
    for (i, entry) in entries.into_iter().enumerate() {
        let description = entry.description.clone();
        let share = 1.0 / (2 * batch - i.min(batch - 1)) as f64;
        let started = match prepare(inner, parent, entry, raw.as_ref()).await {
            Ok(p) => start(inner, parent, p, share).await,
            Err(e) => Err(e),
        };
        match started {
            Ok(h) => {
                super::observe::launched(&h.data().record.id);
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
                    // A background task (launched so, or promoted at a checkpoint) reports
                    // through its completion notice, also when it ended before this looked:
                    // reporting it Finished here too would report it twice.
                    RunState::Ended if !h.is_background() => Delivery::Finished,
                    _ if h.is_background() && foreground.iter().any(|f| Arc::ptr_eq(f, &h)) => {
                        Delivery::Promoted
                    }
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
        Authorization::Solo => Err(LaunchError::refused(
            RefusalCode::NotAuthorized,
            format!(
                "{REASON}: this session may not launch subagents (subagents.authorization is solo); \
             do the work yourself"
            ),
        )),
        Authorization::Ask => {
            let Some(confirm) = &inner.confirm else {
                return Err(LaunchError::refused(
                    RefusalCode::NotAuthorized,
                    format!(
                        "{REASON}: launches need confirmation (subagents.authorization is ask) and \
                     nobody can confirm in this mode"
                    ),
                ));
            };
            let summary = entries
                .iter()
                .map(launch_summary)
                .collect::<Vec<_>>()
                .join(", ");
            if confirm.confirm(&summary).await {
                Ok(())
            } else {
                Err(LaunchError::refused(
                    RefusalCode::NotAuthorized,
                    format!("{REASON}: the launch was declined"),
                ))
            }
        }
    }
}

/// What a person is asked to allow: the role and description, and what the model wrote that
/// they do not show — the start of the prompt and its length, and where and on what it runs
/// when the call says. The description alone is the model's to choose and may not match what
/// it asks the child to do.
fn launch_summary(e: &TaskSpec) -> String {
    /// How much of the prompt is quoted.
    const PROMPT_SHOWN: usize = 160;
    let role = e
        .subagent_type
        .as_deref()
        .unwrap_or(crate::roles::builtin::DEFAULT_ROLE);
    let words: Vec<&str> = e.prompt.split_whitespace().collect();
    let prompt = words.join(" ");
    let quoted: String = prompt.chars().take(PROMPT_SHOWN).collect();
    let more = if quoted.len() < prompt.len() {
        "…"
    } else {
        ""
    };
    let mut out = format!(
        "{role} \"{}\" — prompt ({} chars): \"{quoted}{more}\"",
        e.description.trim(),
        e.prompt.chars().count()
    );
    if let Some(isolation) = &e.isolation {
        out.push_str(&format!(" · isolation {isolation}"));
    }
    if let Some(cwd) = &e.cwd {
        out.push_str(&format!(" · cwd {cwd}"));
    }
    if let Some(model) = &e.model {
        out.push_str(&format!(" · model {model}"));
    }
    out
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
                        let actions = h.data().lifecycle.on_parent_shutdown();
                        super::run::apply_actions(inner, h, actions);
                        h.abort();
                    }
                    join_all(handles.iter().map(|h| h.wait(true))).await;
                }
            }
        }
    }
}

/// Create the record and session and start the run.
pub(crate) async fn start(
    inner: &Arc<Inner>,
    parent: &ParentRef,
    p: Prepared,
    budget_share: f64,
) -> Result<Arc<TaskHandle>, LaunchError> {
    // The budget first: a launch its parent cannot pay for creates nothing.
    let reservation = inner.reserve_budget(
        parent.task_id.as_deref(),
        p.budgets.limits(),
        crate::budget::Spend::default(),
        budget_share,
        &p.model,
    )?;
    let budget = Arc::clone(reservation.node());
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
        budget: budget_view(&budget),
        warnings: p.warnings,
        tools: p.caps.tools.clone(),
        readonly: p.role.readonly,
        shell_policy: p.role.shell_policy.as_str().into(),
        bash_allow: p.role.bash_allow.clone(),
        scope: p.spec.scope.clone(),
        one_shot: p.role.one_shot,
        trusted: inner.trusted,
        diagnostics: p.diagnostics.clone(),
        created_at: timestamp(SystemTime::now()),
        ..TaskRecord::default()
    };
    claim_ownership(&mut record);
    // Join the quota's queue now, in launch order. A slot that is free at once means the run
    // starts now, so the record is created with its start time and the run need not rewrite it.
    // A foreground child of a task borrows its blocked parent's slot (O7).
    let slot = match (&parent.task_id, p.background) {
        (Some(pid), false) => match inner.handle(pid).and_then(|ph| ph.data().permit.clone()) {
            Some(lender) => match lender.lend() {
                Some(lent) => Slot::Ready(lent),
                // Lent to a sibling: it comes back when that one ends (O7).
                None => Slot::borrow_or_queue(&inner.quota, lender),
            },
            None => Slot::queue(&inner.quota),
        },
        _ => Slot::queue(&inner.quota),
    };
    if matches!(slot, Slot::Ready(_)) {
        record.started_at = Some(record.created_at.clone());
    }
    let mut lifecycle = Lifecycle::new(LifecycleConfig {
        budgets: p.budgets.clone(),
        warnings: Some(p.warnings),
        one_shot: p.role.one_shot,
        background: p.background,
    });
    // Without a worktree the session file can be made first, so the record is written once,
    // complete with its session file, when the task is created (every task.json write is a
    // temp file, fsync and rename). A session that cannot be made still gets a record.
    let early_session = if p.worktree {
        None
    } else {
        let made =
            SessionWriter::create(&inner.session_dir(), &p.cwd, parent.session_file.as_deref())
                .await;
        if let Ok(s) = &made {
            record.session_file = Some(s.path().to_string_lossy().into_owned());
        }
        Some(made)
    };
    if let Err(e) = inner.store.create(&mut record) {
        if let Some(Ok(s)) = &early_session {
            // No task names this session: leave no orphan file behind.
            let _ = std::fs::remove_file(s.path());
        }
        return Err(e.into());
    }

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
    let made = match early_session {
        Some(made) => made,
        None => {
            SessionWriter::create(&inner.session_dir(), &cwd, parent.session_file.as_deref()).await
        }
    };
    let session = match made {
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
    if worktree.is_some() {
        record.cwd = cwd.to_string_lossy().into_owned();
        record.session_file = Some(session.path().to_string_lossy().into_owned());
        record.worktree = worktree.as_ref().map(Worktree::info);
        if let Err(e) = inner.store.save(&mut record) {
            // The record exists (as `running`, owned by us): it must end, and the worktree
            // must not outlive a task that never started.
            if let Some(w) = &worktree {
                w.remove().await;
            }
            let e = LaunchError::from(e);
            fail_startup(inner, &mut record, &mut lifecycle, &e);
            return Err(e);
        }
    }

    let (history, first) = match &p.fork_history {
        Some(h) => (h.clone(), fork_message(&p.role, &p.spec)),
        None => (Vec::new(), task_text(&p.spec)),
    };
    let retry_history = history.clone();
    let retry_cwd = cwd.clone();
    let structured = p
        .spec
        .output_schema
        .clone()
        .map(|schema| (schema, StructuredSlot::default()));
    let built = build_child_agent(
        inner,
        ChildBuild {
            readonly: p.role.readonly,
            shell_policy: p.role.shell_policy,
            bash_allow: &p.role.bash_allow,
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
            structured: structured.clone(),
            budget: &budget,
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
        reservation.keep(),
    ));
    watch_budget(&handle);
    agent.set_tool_gate(Arc::new(ChildGate {
        handle: Arc::clone(&handle),
    }));
    handle.data().scope = ProbeScope::new(&retry_cwd, &p.spec.scope);
    if !p.role.readonly {
        handle.data().write_boundary = Some(super::handle::WriteGate {
            boundary: super::child::writer_boundary(inner, &retry_cwd, None),
            cwd: retry_cwd.clone(),
        });
    }
    handle.data().structured = structured.as_ref().map(|(_, slot)| Arc::clone(slot));

    let retry = p.retry_model.clone().map(|model| Retry {
        model,
        build: rebuild_agent(
            inner,
            parent,
            &p,
            &id,
            RetrySeed {
                cwd: retry_cwd.clone(),
                history: retry_history,
                structured: structured.clone(),
                budget: Arc::clone(&budget),
            },
        ),
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
    let review = p.spec.review.then(|| ReviewSetup {
        parent: parent.clone(),
        criteria: p.spec.prompt.clone(),
        expected_output: p.spec.expected_output.clone(),
    });
    lock(&inner.tasks).insert(id.clone(), Arc::clone(&handle));
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
                input: vec![Message::user(first)],
                guard,
                slot,
                worktree,
                continuation: false,
                retry,
                review,
            },
        ),
    );
    Ok(handle)
}

/// What a fallback retry starts again from: the task's directory, the history it was given,
/// its structured-output slot and its budget node (the retry spends the same budget).
struct RetrySeed {
    cwd: std::path::PathBuf,
    history: Vec<Message>,
    structured: Option<(serde_json::Value, StructuredSlot)>,
    budget: Arc<crate::budget::BudgetNode>,
}

/// How to build the task's agent again on its fallback model, in a new session file (T7).
fn rebuild_agent(
    inner: &Arc<Inner>,
    parent: &ParentRef,
    p: &Prepared,
    id: &str,
    seed: RetrySeed,
) -> RebuildAgent {
    let RetrySeed {
        cwd,
        history,
        structured,
        budget,
    } = seed;
    let inner = Arc::clone(inner);
    let id = id.to_string();
    let role = p.role.clone();
    let skills = p.skills.clone();
    let caps = p.caps.clone();
    let requested = p.requested_thinking;
    let system_prompt = p
        .fork_history
        .as_ref()
        .map(|_| parent.system_prompt.clone());
    let parent_session = parent.session_file.clone();
    let depth = parent.depth + 1;
    Box::new(move |model: Model| {
        Box::pin(async move {
            let session =
                SessionWriter::create(&inner.session_dir(), &cwd, parent_session.as_deref())
                    .await?;
            let thinking = resolve_thinking(&model, requested).effective;
            build_child_agent(
                &inner,
                ChildBuild {
                    readonly: role.readonly,
                    shell_policy: role.shell_policy,
                    bash_allow: &role.bash_allow,
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
                    structured,
                    budget: &budget,
                },
            )
        })
    })
}

/// The budget a record shows: `None` for a task under no cap.
pub(crate) fn budget_view(node: &crate::budget::BudgetNode) -> Option<cadre_protocol::BudgetState> {
    let state = node.state();
    (!state.cap.is_unlimited()).then_some(state)
}

/// At 80% of its cap a task is steered once to hand over what it has (the hook holds the
/// handle weakly: the handle owns the node).
pub(crate) fn watch_budget(h: &Arc<TaskHandle>) {
    let weak = Arc::downgrade(h);
    h.budget.on_warning(Arc::new(move |meter, state| {
        if let Some(h) = weak.upgrade() {
            h.deliver(&crate::budget::text::final_handoff_steer(meter, &state));
        }
    }));
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
        let mcp_read_only = inner.mcp_read_only_tools();
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
            mcp_read_only: &mcp_read_only,
        })?;
        Ok(caps.tools)
    }
}
