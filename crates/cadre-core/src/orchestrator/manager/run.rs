//! Running one task: the quota slot, the child's run under supervision, and the end (record,
//! output, notification).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime};

use cadre_protocol::{
    AgentEvent, Message, StopReason, TaskPhase, TaskStatus, TerminationKind, Usage, WorktreeInfo,
};
use tokio::sync::mpsc;

use super::Inner;
use super::handle::{ChildGate, RunState, TaskHandle, lock};
use super::pending::PendingGuard;
use super::review::{self, ReviewSetup, ReviewStep};
use super::types::{Delivery, NoticeKind, ParentNotice, TaskEvent, TaskOutcome};
use crate::agent::{Agent, AgentError, RunOutcome};
use crate::handoff::contract::EMPTY_COMPLETION_NUDGE;
use crate::handoff::gate::fix_prompt;
use crate::orchestrator::lifecycle::{Action, FinalFacts, Lifecycle, LifecycleConfig, TurnFacts};
use crate::orchestrator::output::{parent_result, preview};
use crate::orchestrator::policy::{
    NotificationFacts, WarningFacts, notification_text, progress_warning_text, summary_line,
};
use crate::orchestrator::quota::{Permit, Quota};
use crate::orchestrator::store::timestamp;
use crate::orchestrator::worktree::{Worktree, WorktreeOutcome};

/// How a run gets its quota slot (O7).
pub(crate) enum Slot {
    /// Borrowed from a parent blocked on this foreground child, or free at once.
    Ready(Permit),
    /// In the quota's FIFO queue: its place was taken when the task was started.
    Queued(Pin<Box<dyn Future<Output = Permit> + Send>>),
}

impl Slot {
    /// Join the queue now, so tasks are served in the order they were started, not the order
    /// their tokio tasks happen to be polled.
    pub(crate) fn queue(quota: &Quota) -> Slot {
        let quota = quota.clone();
        Slot::join(Box::pin(async move { quota.acquire().await }))
    }

    /// A foreground child of a task whose slot is lent to a sibling: queued, and also waiting
    /// for the loan to come back, whichever is first (O7).
    pub(crate) fn borrow_or_queue(quota: &Quota, parent: Arc<Permit>) -> Slot {
        let quota = quota.clone();
        Slot::join(Box::pin(async move {
            quota.acquire_for_foreground_child(Some(&parent)).await
        }))
    }

    fn join(mut wait: Pin<Box<dyn Future<Output = Permit> + Send>>) -> Slot {
        // One poll registers the waiter; the run's task polls it again with its own waker.
        let mut cx = Context::from_waker(Waker::noop());
        match wait.as_mut().poll(&mut cx) {
            Poll::Ready(permit) => Slot::Ready(permit),
            Poll::Pending => Slot::Queued(wait),
        }
    }
}

/// The one retry of a task whose very first model call failed, with its fallback model (T7).
pub(crate) struct Retry {
    pub model: cadre_llm::Model,
    pub build: RebuildAgent,
}

/// Builds a fresh child agent (and its new session file) on another model.
pub(crate) type RebuildAgent = Box<
    dyn FnOnce(
            cadre_llm::Model,
        ) -> futures_util::future::BoxFuture<
            'static,
            Result<(Agent, mpsc::UnboundedReceiver<AgentEvent>), super::types::LaunchError>,
        > + Send,
>;

/// Whether a run failed on its first model call having done nothing: no text, no tool call.
fn failed_on_first_call(res: &Result<RunOutcome, AgentError>, h: &TaskHandle) -> bool {
    let Ok(o) = res else { return false };
    let empty = o
        .final_message
        .as_ref()
        .is_none_or(|m| m.text().trim().is_empty() && m.tool_calls().next().is_none());
    let mut u = cadre_protocol::TaskUsage::default();
    lock(&h.lifecycle).write_counters(&mut u);
    o.stop_reason == StopReason::Error
        && o.turns == 1
        && empty
        && u.tool_calls_requested == 0
        && !h.is_aborting()
}

/// Run a task to its end and record it. Owns the child agent for the run.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn drive(
    inner: Arc<Inner>,
    h: Arc<TaskHandle>,
    mut agent: Agent,
    mut events: mpsc::UnboundedReceiver<AgentEvent>,
    input: Vec<Message>,
    guard: PendingGuard,
    slot: Slot,
    worktree: Option<Worktree>,
    continuation: bool,
    mut retry: Option<Retry>,
    review: Option<ReviewSetup>,
) {
    let permit = match slot {
        Slot::Ready(p) => Some(p),
        Slot::Queued(wait) => tokio::select! {
            p = wait => Some(p),
            _ = h.aborted() => None,
        },
    };
    if let Some(p) = permit {
        *lock(&h.permit) = Some(Arc::new(p));
    }
    h.open_inbox(agent.controller());
    h.set_state(RunState::Running);
    {
        let mut r = lock(&h.record);
        // A run that got its slot at launch was created with its start time; only one that
        // waited in the queue has news for readers of task.json.
        if r.started_at.is_none() {
            r.started_at = Some(timestamp(SystemTime::now()));
            let _ = inner.store.save(&mut r);
        }
        let _ = inner.events.send(TaskEvent::Started {
            task_id: r.id.clone(),
            parent_task_id: r.parent_task_id.clone(),
            name: r.name.clone(),
            agent: r.agent.clone(),
            description: r.description.clone(),
            background: h.is_background(),
            phase: r.phase,
        });
    }

    let timeout = lock(&h.record)
        .budgets
        .timeout_ms
        .map(Duration::from_millis);
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let mut usage = Usage::default();
    let mut last: Option<Result<RunOutcome, AgentError>> = None;
    let mut next: Option<Vec<Message>> = Some(input.clone());
    let mut nudged = false;
    let mut timed_out = false;
    let mut review_attempt = 0u32;
    let mut review_findings: Vec<String> = Vec::new();
    let mut review_failure: Option<String> = None;
    while !h.is_aborting() {
        let res = match next.take() {
            Some(messages) => {
                supervise(
                    &inner,
                    &h,
                    agent.prompt_messages(messages),
                    &mut events,
                    deadline,
                    &mut timed_out,
                )
                .await
            }
            None => {
                supervise(
                    &inner,
                    &h,
                    agent.run_queued(),
                    &mut events,
                    deadline,
                    &mut timed_out,
                )
                .await
            }
        };
        while let Ok(ev) = events.try_recv() {
            on_event(&inner, &h, ev);
        }
        if let Ok(o) = &res {
            usage.add(&o.usage);
        }
        // Only the task's very first run may be retried: the chance is used up either way.
        if let Some(r) = retry.take()
            && failed_on_first_call(&res, &h)
        {
            let error = match &res {
                Ok(o) => o.error.clone().unwrap_or_default(),
                Err(e) => e.to_string(),
            };
            let fallback = r.model.full_name();
            match (r.build)(r.model).await {
                Ok((mut fresh, fresh_events)) => {
                    fresh.set_tool_gate(Arc::new(ChildGate {
                        handle: Arc::clone(&h),
                    }));
                    let old = std::mem::replace(&mut agent, fresh);
                    let _ = old.close().await;
                    events = fresh_events;
                    h.open_inbox(agent.controller());
                    let mut r = lock(&h.record);
                    let note = format!(
                        "model `{}` failed on its first call ({error}); retried once with fallback `{fallback}`",
                        r.model
                    );
                    r.diagnostics.push(note);
                    r.model = fallback;
                    r.effective_thinking = agent.config().thinking.as_str().into();
                    r.session_file = agent
                        .session_path()
                        .map(|p| p.to_string_lossy().into_owned());
                    *lock(&h.lifecycle) = Lifecycle::new(LifecycleConfig {
                        budgets: r.budgets.clone(),
                        warnings: Some(r.warnings),
                        one_shot: r.one_shot,
                        background: h.is_background(),
                    });
                    let _ = inner.store.save(&mut r);
                    drop(r);
                    next = Some(input.clone());
                    continue;
                }
                Err(e) => lock(&h.record)
                    .diagnostics
                    .push(format!("the fallback retry could not start: {e}")),
            }
        }
        // A structured answer was accepted: the run is over, whatever its abort says (V8).
        if h.structured_value().is_some() && !h.is_aborting() {
            last = Some(res);
            break;
        }
        let clean = matches!(&res, Ok(o) if o.error.is_none());
        let text = match &res {
            Ok(o) => o
                .final_message
                .as_ref()
                .map(|m| m.text())
                .unwrap_or_default(),
            Err(_) => String::new(),
        };
        last = Some(res);
        if !clean || h.is_aborting() {
            break;
        }
        // V2: a child that ran tools and stopped without text is asked once to summarise.
        let ran_tools = {
            let mut u = cadre_protocol::TaskUsage::default();
            lock(&h.lifecycle).write_counters(&mut u);
            u.tool_calls_executed > 0
        };
        if text.trim().is_empty() && ran_tools && !nudged {
            nudged = true;
            next = Some(vec![Message::user(EMPTY_COMPLETION_NUDGE)]);
            continue;
        }
        // Messages that arrived as the run ended are answered before the task ends.
        if h.try_close_inbox() {
            // V5: a finished implementer with `review: true` is reviewed; at most one fix
            // round, in its own live session.
            if let Some(setup) = review.as_ref() {
                review_attempt += 1;
                match review::review(&inner, &h, setup, review_attempt, &review_findings).await {
                    ReviewStep::Passed => {}
                    ReviewStep::Failed(message) => review_failure = Some(message),
                    ReviewStep::Fix(findings) => {
                        if !review::reacquire_slot(&inner, &h).await {
                            break;
                        }
                        next = Some(vec![Message::user(fix_prompt(&findings))]);
                        review_findings = findings;
                        h.open_inbox(agent.controller());
                        continue;
                    }
                }
            }
            break;
        }
    }
    h.force_close_inbox();
    finish(
        &inner,
        &h,
        agent,
        last,
        usage,
        guard,
        worktree,
        continuation,
        review_failure,
    )
    .await;
}

/// Poll the run while feeding its events to the lifecycle, firing the timeout and honouring
/// aborts.
async fn supervise<F>(
    inner: &Arc<Inner>,
    h: &Arc<TaskHandle>,
    run: F,
    events: &mut mpsc::UnboundedReceiver<AgentEvent>,
    deadline: Option<tokio::time::Instant>,
    timed_out: &mut bool,
) -> Result<RunOutcome, AgentError>
where
    F: Future<Output = Result<RunOutcome, AgentError>>,
{
    tokio::pin!(run);
    let sleep = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending::<()>().await,
        }
    };
    tokio::pin!(sleep);
    let mut abort_seen = false;
    loop {
        tokio::select! {
            biased;
            res = &mut run => return res,
            Some(ev) = events.recv() => on_event(inner, h, ev),
            _ = &mut sleep, if !*timed_out => {
                *timed_out = true;
                let actions = lock(&h.lifecycle).on_timeout();
                apply_actions(inner, h, actions);
            }
            _ = h.aborted(), if !abort_seen => {
                // The run has been polled (biased order), so it is running and the abort lands.
                abort_seen = true;
                if let Some(c) = h.controller() {
                    c.abort();
                }
            }
        }
    }
}

fn on_event(inner: &Arc<Inner>, h: &Arc<TaskHandle>, ev: AgentEvent) {
    match ev {
        AgentEvent::TurnStart => lock(&h.lifecycle).on_turn_start(),
        AgentEvent::TurnEnd {
            message: Message::Assistant(a),
            ..
        } => {
            let text = a.text();
            h.set_latest_text(&text);
            let facts = TurnFacts {
                has_tool_calls: a.tool_calls().next().is_some()
                    && !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted),
                text_len: text.len(),
            };
            let actions = lock(&h.lifecycle).on_turn_end(facts);
            let mut r = lock(&h.record);
            let lc = lock(&h.lifecycle);
            lc.write_counters(&mut r.usage);
            r.phase = lc.phase();
            drop(lc);
            if r.budget.is_some() {
                r.budget = super::launch::budget_view(&h.budget);
            }
            // The record's tokens grow once, at the run's end; a turn event carries them
            // with the tokens of this run's turns so far.
            let mut live = lock(&h.live_tokens);
            live.add(&a.usage);
            if inner.events.receiver_count() > 0 {
                let mut usage = r.usage;
                usage.tokens.add(&live);
                let _ = inner.events.send(TaskEvent::Turn {
                    task_id: r.id.clone(),
                    usage,
                    preview: preview(&text),
                    phase: r.phase,
                    budget: r.budget,
                });
            }
            drop(live);
            drop(r);
            apply_actions(inner, h, actions);
        }
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            result,
            is_error,
            ..
        } => h.on_tool_end(&tool_call_id, &result, is_error),
        _ => {}
    }
}

/// Carry out what the lifecycle decided (L2–L5).
pub(crate) fn apply_actions(inner: &Arc<Inner>, h: &Arc<TaskHandle>, actions: Vec<Action>) {
    for action in actions {
        match action {
            Action::Steer(text) => {
                h.deliver(&text);
            }
            Action::Abort(_) => h.abort(),
            Action::PromoteToBackground => {
                h.background
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                lock(&h.record).background = true;
                h.set_state(RunState::Promoted);
            }
            Action::Warn(w) => {
                let r = h.record();
                let latest = h.latest_text();
                let text = progress_warning_text(&WarningFacts {
                    task_id: &r.id,
                    name: r.name.as_deref(),
                    agent: &r.agent,
                    description: &r.description,
                    turn: w.turn,
                    next_checkpoint: w.next_checkpoint,
                    count: w.count,
                    usage: &r.usage,
                    elapsed_ms: h.started.elapsed().as_millis() as u64,
                    preview: &preview(&latest),
                });
                // Warnings go to the root parent, whoever launched the task (L5).
                let _ = inner.root_notices.send(ParentNotice::new(
                    NoticeKind::ProgressWarning,
                    r.id.clone(),
                    text,
                    None,
                ));
            }
        }
    }
}

/// Record the end: termination, usage, output, worktree; release the slot; notify.
#[allow(clippy::too_many_arguments)]
async fn finish(
    inner: &Arc<Inner>,
    h: &Arc<TaskHandle>,
    agent: Agent,
    last: Option<Result<RunOutcome, AgentError>>,
    usage: Usage,
    guard: PendingGuard,
    worktree: Option<Worktree>,
    continuation: bool,
    review_failure: Option<String>,
) {
    // O10: the result is the final message's text, never an older one; a failed or aborted
    // final message gives an empty result plus the error.
    let (text, run_error) = match &last {
        Some(Ok(_)) if h.structured_value().is_some() && !h.is_aborting() => (
            h.structured_value()
                .map(|v| serde_json::to_string_pretty(&v).unwrap_or_default())
                .unwrap_or_default(),
            None,
        ),
        None => (String::new(), Some("stopped before it started".to_string())),
        Some(Ok(o)) => match o.stop_reason {
            StopReason::Error | StopReason::Aborted => (String::new(), o.error.clone()),
            _ => (
                o.final_message
                    .as_ref()
                    .map(|m| m.text())
                    .unwrap_or_default(),
                None,
            ),
        },
        Some(Err(e)) => (String::new(), Some(e.to_string())),
    };
    let closed = agent.close().await;
    let kind = {
        let mut lc = lock(&h.lifecycle);
        let failed_on_its_own = matches!(&last, Some(Ok(o)) if o.stop_reason == StopReason::Error)
            || matches!(&last, Some(Err(_)));
        if failed_on_its_own && !h.is_aborting() {
            let message = run_error.as_deref().unwrap_or("the model request failed");
            // A request its budget refused: the run ended on the budget, not on the provider.
            if let Some(meter) = h.budget.state().exhausted {
                lc.on_spend_budget(spend_termination(meter), message);
            }
            lc.on_provider_error(message);
        }
        if let Err(e) = &closed {
            lc.on_provider_error(&format!("session file: {e}"));
        }
        lc.on_finished(FinalFacts {
            has_final_text: !text.trim().is_empty(),
        })
    };
    // A run that ended normally but did not pass its review fails (V5 step 5).
    let kind = match &review_failure {
        Some(_) if kind == TerminationKind::Normal => TerminationKind::ReviewFailed,
        _ => kind,
    };

    let worktree_info: Option<WorktreeInfo> = match worktree {
        None => None,
        Some(w) => {
            let info = w.info();
            match w.finish().await {
                Ok(WorktreeOutcome::Kept(kept)) => Some(kept),
                Ok(WorktreeOutcome::Removed) => Some(WorktreeInfo {
                    kept: false,
                    ..info
                }),
                Err(e) => {
                    lock(&h.record).diagnostics.push(format!("worktree: {e}"));
                    Some(WorktreeInfo { kept: true, ..info })
                }
            }
        }
    };

    // output.md keeps the whole text; without a final answer, the latest visible text is kept
    // as partial output (O4) under a note saying so.
    let output = if !text.trim().is_empty() {
        text.clone()
    } else {
        let partial = h.latest_text();
        if partial.trim().is_empty() {
            String::new()
        } else {
            format!(
                "[Partial output: the task ended ({}) before a final answer.]\n\n{partial}",
                kind.as_str()
            )
        }
    };
    let record = {
        let mut r = lock(&h.record);
        let lc = lock(&h.lifecycle);
        r.status = kind.status();
        r.termination = Some(kind);
        r.phase = TaskPhase::Terminal;
        lc.write_counters(&mut r.usage);
        r.usage.tokens.add(&usage);
        *lock(&h.live_tokens) = Usage::default();
        r.error = lc
            .error()
            .map(str::to_string)
            .or(run_error.clone())
            .or(review_failure.filter(|_| kind == TerminationKind::ReviewFailed))
            .filter(|_| r.status != TaskStatus::Completed);
        drop(lc);
        if worktree_info.is_some() {
            r.worktree = worktree_info;
        }
        r.budget = super::launch::budget_view(&h.budget);
        r.preview = preview(&output);
        r.ended_at = Some(timestamp(SystemTime::now()));
        r.owner_pid = None;
        r.owner_start_time = None;
        let written = if continuation {
            inner
                .store
                .append_output(&r.root_session_id, &r.id, &output)
        } else {
            inner.store.write_output(&r.root_session_id, &r.id, &output)
        };
        if let Err(e) = written {
            r.diagnostics.push(format!("output.md: {e}"));
        }
        if let Err(e) = inner.store.save(&mut r) {
            r.diagnostics.push(format!("task.json: {e}"));
        }
        r.clone()
    };
    *lock(&h.final_text) = text;
    *lock(&h.receipt) = h.receipt_text();
    lock(&h.permit).take();

    // Exactly once: this is the run's single end. The pending count moves into the notice (a
    // foreground run's is released here, before its waiter wakes); a parent that went away
    // drops the notice, and with it the count.
    let notice = if h.is_background() {
        Some(ParentNotice::new(
            NoticeKind::Completion,
            record.id.clone(),
            completion_text(inner, h, &record),
            Some(guard),
        ))
    } else {
        drop(guard);
        None
    };
    announce_end(inner, h, &record, notice);
}

/// Make a recorded end known, in the order every end keeps: listeners see it before any waiter
/// wakes, then the parent gets the notice of a background task, then the task leaves the live
/// set. Shared by a run's normal end and the end recorded for a run that panicked.
pub(crate) fn announce_end(
    inner: &Arc<Inner>,
    h: &Arc<TaskHandle>,
    record: &cadre_protocol::TaskRecord,
    notice: Option<ParentNotice>,
) {
    let _ = inner.events.send(TaskEvent::Ended {
        task_id: record.id.clone(),
        status: record.status,
        termination: record.termination,
        budget: record.budget,
    });
    h.set_state(RunState::Ended);
    // What the task did not spend of its reservation goes back to its parent.
    h.budget.close();
    if let Some(notice) = notice {
        let _ = h.notices.send(notice);
    }
    inner.retire(h);
}

/// The termination of a run a budget stopped.
fn spend_termination(meter: cadre_protocol::Meter) -> TerminationKind {
    match meter {
        cadre_protocol::Meter::Tokens => TerminationKind::TokenBudget,
        cadre_protocol::Meter::Cost => TerminationKind::CostBudget,
    }
}

/// The `<task-notification>` of a finished run (O6).
pub(crate) fn completion_text(
    inner: &Inner,
    h: &TaskHandle,
    record: &cadre_protocol::TaskRecord,
) -> String {
    let outcome = outcome_of(inner, h, Delivery::Finished);
    let summary = summary_line(&record.agent, &record.description, record.status);
    notification_text(&NotificationFacts {
        task_id: &record.id,
        name: record.name.as_deref(),
        agent: &record.agent,
        description: &record.description,
        status: record.status,
        termination: record.termination,
        summary: &summary,
        output_file: &record.output_file,
        usage: &record.usage,
        elapsed_ms: Some(h.started.elapsed().as_millis() as u64),
        worktree: record.worktree.as_ref(),
        error: record.error.as_deref(),
        receipt: Some(&outcome.receipt),
        result: &outcome.result,
    })
}

/// The task as its launcher sees it now.
pub(crate) fn outcome_of(inner: &Inner, h: &TaskHandle, delivery: Delivery) -> TaskOutcome {
    let r = h.record();
    let text = lock(&h.final_text).clone();
    let capped = parent_result(
        &text,
        inner.settings.max_output_bytes,
        inner.settings.max_output_lines,
        &r.output_file,
    );
    TaskOutcome {
        task_id: r.id,
        name: r.name,
        agent: r.agent,
        description: r.description,
        delivery,
        status: r.status,
        phase: r.phase,
        termination: r.termination,
        result: capped.text,
        truncated: capped.truncated,
        error: r.error,
        output_file: r.output_file,
        usage: r.usage,
        worktree: r.worktree,
        receipt: lock(&h.receipt).clone(),
    }
}
