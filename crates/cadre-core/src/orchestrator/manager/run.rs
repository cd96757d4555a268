//! Running one task: the quota slot, the child's agent runs under supervision, and what follows
//! each of them (`step.rs` decides; the end is `end.rs`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime};

use cadre_protocol::{AgentEvent, Message, StopReason, Usage, WorktreeInfo};
use futures_util::FutureExt;
use tokio::sync::mpsc;

use super::Inner;
use super::end::{OutputWrite, RunEnd, end_task};
use super::handle::{ChildGate, RunState, TaskHandle};
use super::pending::PendingGuard;
use super::review::{self, ReviewSetup, ReviewStep};
use super::step::{RunError, RunFacts, Step, next_step};
use super::types::{NoticeKind, ParentNotice, TaskEvent};
use crate::agent::{Agent, AgentError, RunOutcome};
use crate::handoff::contract::EMPTY_COMPLETION_NUDGE;
use crate::handoff::gate::fix_prompt;
use crate::orchestrator::lifecycle::{Action, Lifecycle, LifecycleConfig, TurnFacts};
use crate::orchestrator::output::preview;
use crate::orchestrator::policy::{WarningFacts, progress_warning_text};
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
    h.data().lifecycle.write_counters(&mut u);
    o.stop_reason == StopReason::Error
        && o.turns == 1
        && empty
        && u.tool_calls_requested == 0
        && !h.is_aborting()
}

/// What one run of a task is given besides its agent: built by a launch or a continuation and
/// handed to [`drive`] whole.
pub(crate) struct RunPlan {
    /// The messages the run starts with (the task, or a continuation's message).
    pub input: Vec<Message>,
    /// Counts the run as owed to its parent until its end is delivered.
    pub guard: PendingGuard,
    pub slot: Slot,
    /// The worktree the task works in (O11), finished (kept or removed) at the end.
    pub worktree: Option<Worktree>,
    /// Whether the run continues a finished task (its output is appended to).
    pub continuation: bool,
    /// The one fallback retry of a new task's first call (T7).
    pub retry: Option<Retry>,
    /// The review gate of an implementer with `review: true` (V5).
    pub review: Option<ReviewSetup>,
}

/// The run's agent and the events it emits, replaced together by a fallback retry.
struct Child {
    agent: Agent,
    events: mpsc::UnboundedReceiver<AgentEvent>,
}

/// Run a task to its end and record it. Owns the child agent for the run. Each agent run's
/// facts go to [`next_step`], which decides what follows; the end goes through
/// [`end_task`], the one end every task has.
pub(crate) async fn drive(
    inner: Arc<Inner>,
    h: Arc<TaskHandle>,
    agent: Agent,
    events: mpsc::UnboundedReceiver<AgentEvent>,
    plan: RunPlan,
) {
    let RunPlan {
        input,
        guard,
        slot,
        worktree,
        continuation,
        mut retry,
        review,
    } = plan;
    let mut child = Child { agent, events };
    // Stopped while it waited for its slot: the loop does not run, and the end says so.
    start_run(&inner, &h, slot).await;
    h.open_inbox(child.agent.controller());

    let deadline = h
        .data()
        .record
        .budgets
        .timeout_ms
        .map(|t| tokio::time::Instant::now() + Duration::from_millis(t));
    let mut usage = Usage::default();
    let mut last: Option<Result<RunOutcome, AgentError>> = None;
    let mut next: Option<Vec<Message>> = Some(input.clone());
    let mut nudged = false;
    let mut timed_out = false;
    let mut review_attempt = 0u32;
    let mut review_findings: Vec<String> = Vec::new();
    let mut review_failure: Option<String> = None;
    while !h.is_aborting() {
        let res = {
            let run = match next.take() {
                Some(messages) => child.agent.prompt_messages(messages).boxed(),
                None => child.agent.run_queued().boxed(),
            };
            supervise(&inner, &h, run, &mut child.events, deadline, &mut timed_out).await
        };
        while let Ok(ev) = child.events.try_recv() {
            on_event(&inner, &h, ev);
        }
        if let Ok(o) = &res {
            usage.add(&o.usage);
        }
        // Only the task's very first run may be retried: the chance is used up either way.
        let fallback = retry.take().filter(|_| failed_on_first_call(&res, &h));
        let facts = RunFacts {
            aborting: h.is_aborting(),
            structured_accepted: h.structured_value().is_some(),
            clean: matches!(&res, Ok(o) if o.error.is_none()),
            has_text: matches!(&res, Ok(o) if o.final_message.as_ref().is_some_and(|m| !m.text().trim().is_empty())),
            ran_tools: ran_tools(&h),
            nudged,
            fallback_due: fallback.is_some(),
        };
        let step = next_step(facts);
        if step == Step::FallBack
            && let Some(r) = fallback
        {
            let error = match &res {
                Ok(o) => o.error.clone().unwrap_or_default(),
                Err(e) => e.to_string(),
            };
            if fall_back(&inner, &h, &mut child, r, &error).await {
                next = Some(input.clone());
                continue;
            }
            // The fallback could not start: the first run's end is the task's.
            last = Some(res);
            break;
        }
        last = Some(res);
        match step {
            Step::FallBack | Step::End => break,
            Step::Nudge => {
                // V2: a child that ran tools and stopped without text is asked once to
                // summarise.
                nudged = true;
                next = Some(vec![Message::user(EMPTY_COMPLETION_NUDGE)]);
            }
            Step::Settle => {
                // Messages that arrived as the run ended are answered before the task ends.
                if !h.try_close_inbox() {
                    continue;
                }
                // V5: a finished implementer with `review: true` is reviewed; at most one fix
                // round, in its own live session.
                let Some(setup) = review.as_ref() else { break };
                review_attempt += 1;
                match review::review(&inner, &h, setup, review_attempt, &review_findings).await {
                    ReviewStep::Passed => break,
                    ReviewStep::Failed(message) => {
                        review_failure = Some(message);
                        break;
                    }
                    ReviewStep::Fix(findings) => {
                        if !review::reacquire_slot(&inner, &h).await {
                            break;
                        }
                        next = Some(vec![Message::user(fix_prompt(&findings))]);
                        review_findings = findings;
                        h.open_inbox(child.agent.controller());
                    }
                }
            }
        }
    }
    h.force_close_inbox();
    let (text, mut error) = run_result(&h, last);
    if let Err(e) = child.agent.close().await
        && error.is_none()
    {
        error = Some(RunError::Runtime(format!("session file: {e}")));
    }
    let end = RunEnd {
        text,
        error,
        usage,
        worktree: finish_worktree(&h, worktree).await,
        output: output_write(continuation),
        review_failure,
    };
    end_task(&inner, &h, end, guard);
}

/// Wait for the quota slot (or an abort), then mark the run started.
async fn start_run(inner: &Arc<Inner>, h: &Arc<TaskHandle>, slot: Slot) {
    let permit = match slot {
        Slot::Ready(p) => Some(p),
        Slot::Queued(wait) => tokio::select! {
            p = wait => Some(p),
            _ = h.aborted() => None,
        },
    };
    if let Some(permit) = permit {
        h.data().permit = Some(Arc::new(permit));
    }
    h.set_state(RunState::Running);
    let background = h.is_background();
    let mut d = h.data();
    let r = &mut d.record;
    // A run that got its slot at launch was created with its start time; only one that
    // waited in the queue has news for readers of task.json.
    if r.started_at.is_none() {
        r.started_at = Some(timestamp(SystemTime::now()));
        let _ = inner.store.save(r);
    }
    let _ = inner.events.send(TaskEvent::Started {
        task_id: r.id.clone(),
        parent_task_id: r.parent_task_id.clone(),
        name: r.name.clone(),
        agent: r.agent.clone(),
        description: r.description.clone(),
        background,
        phase: r.phase,
    });
}

/// Whether the task has run a tool so far.
fn ran_tools(h: &TaskHandle) -> bool {
    let mut u = cadre_protocol::TaskUsage::default();
    h.data().lifecycle.write_counters(&mut u);
    u.tool_calls_executed > 0
}

/// Replace the child's agent with one on the fallback model (T7). `false`: it could not be
/// built (said in the record's diagnostics).
async fn fall_back(
    inner: &Arc<Inner>,
    h: &Arc<TaskHandle>,
    child: &mut Child,
    retry: Retry,
    error: &str,
) -> bool {
    let fallback = retry.model.full_name();
    // A fallback the cost cap cannot count is not taken: the first run's failure stands.
    if inner.cannot_price(&h.budget, &retry.model) {
        let mut d = h.data();
        let note = format!(
            "model `{}` failed on its first call ({error}); its fallback `{fallback}` has no \
             price and the task runs under a cost cap, so it was not retried",
            d.record.model
        );
        d.record.diagnostics.push(note);
        return false;
    }
    match (retry.build)(retry.model).await {
        Ok((mut fresh, fresh_events)) => {
            fresh.set_tool_gate(Arc::new(ChildGate {
                handle: Arc::clone(h),
            }));
            let old = std::mem::replace(&mut child.agent, fresh);
            let _ = old.close().await;
            child.events = fresh_events;
            h.open_inbox(child.agent.controller());
            let background = h.is_background();
            let mut guard = h.data();
            let d = &mut *guard;
            let r = &mut d.record;
            let note = format!(
                "model `{}` failed on its first call ({error}); retried once with fallback `{fallback}`",
                r.model
            );
            r.diagnostics.push(note);
            r.model = fallback;
            r.effective_thinking = child.agent.config().thinking.as_str().into();
            r.session_file = child
                .agent
                .session_path()
                .map(|p| p.to_string_lossy().into_owned());
            d.lifecycle = Lifecycle::new(LifecycleConfig {
                budgets: r.budgets.clone(),
                warnings: Some(r.warnings),
                one_shot: r.one_shot,
                background,
            });
            let _ = inner.store.save(r);
            true
        }
        Err(e) => {
            h.data()
                .record
                .diagnostics
                .push(format!("the fallback retry could not start: {e}"));
            false
        }
    }
}

/// The task's answer and how its run failed, from its last agent run (O10: the result is the
/// final message's text, never an older one; a failed or aborted final message gives an empty
/// result and the error). An accepted structured answer is the result whatever came after.
fn run_result(
    h: &TaskHandle,
    last: Option<Result<RunOutcome, AgentError>>,
) -> (String, Option<RunError>) {
    match last {
        Some(Ok(_)) if h.structured_value().is_some() && !h.is_aborting() => (
            h.structured_value()
                .map(|v| serde_json::to_string_pretty(&v).unwrap_or_default())
                .unwrap_or_default(),
            None,
        ),
        None => (String::new(), Some(RunError::NotStarted)),
        Some(Ok(o)) => match o.stop_reason {
            StopReason::Error | StopReason::Aborted => {
                let message = o
                    .error
                    .clone()
                    .unwrap_or_else(|| "the model request failed".into());
                let failure = match o.stop_reason {
                    StopReason::Aborted => Some(cadre_llm::ErrorKind::Aborted),
                    _ => o.failure.filter(|k| *k != cadre_llm::ErrorKind::Aborted),
                };
                (
                    String::new(),
                    Some(RunError::of_run(
                        failure,
                        message,
                        h.budget.state().exhausted,
                    )),
                )
            }
            _ => (
                o.final_message
                    .as_ref()
                    .map(|m| m.text())
                    .unwrap_or_default(),
                None,
            ),
        },
        Some(Err(e)) => (String::new(), Some(RunError::Runtime(e.to_string()))),
    }
}

fn output_write(continuation: bool) -> OutputWrite {
    if continuation {
        OutputWrite::Append
    } else {
        OutputWrite::Replace
    }
}

/// Keep or remove the task's worktree (O11); a worktree that cannot be finished is kept and
/// said in the record's diagnostics.
async fn finish_worktree(h: &TaskHandle, worktree: Option<Worktree>) -> Option<WorktreeInfo> {
    let w = worktree?;
    let info = w.info();
    Some(match w.finish().await {
        Ok(WorktreeOutcome::Kept(kept)) => kept,
        Ok(WorktreeOutcome::Removed) => WorktreeInfo {
            kept: false,
            ..info
        },
        Err(e) => {
            h.data().record.diagnostics.push(format!("worktree: {e}"));
            WorktreeInfo { kept: true, ..info }
        }
    })
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
                let actions = h.data().lifecycle.on_timeout();
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
        AgentEvent::TurnStart => h.data().lifecycle.on_turn_start(),
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
            let budget = super::launch::budget_view(&h.budget);
            let actions = {
                let mut guard = h.data();
                let d = &mut *guard;
                let actions = d.lifecycle.on_turn_end(facts);
                let r = &mut d.record;
                d.lifecycle.write_counters(&mut r.usage);
                r.phase = d.lifecycle.phase();
                if r.budget.is_some() {
                    r.budget = budget;
                }
                // The record's tokens grow once, at the run's end; a turn event carries them
                // with the tokens of this run's turns so far.
                d.live_tokens.add(&a.usage);
                if inner.events.receiver_count() > 0 {
                    let mut usage = r.usage;
                    usage.tokens.add(&d.live_tokens);
                    let _ = inner.events.send(TaskEvent::Turn {
                        task_id: r.id.clone(),
                        usage,
                        preview: preview(&text),
                        phase: r.phase,
                        budget: r.budget,
                    });
                }
                actions
            };
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
                h.data().record.background = true;
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
