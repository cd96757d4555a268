//! The one end of a task, shared by a run that ended (normally, on an error or an abort) and a
//! run whose tokio task panicked: the termination resolved once from a typed [`RunError`], the
//! record, output, receipt and budget written, the quota slot released, the parent notified,
//! the reservation given back.

use std::sync::Arc;
use std::time::SystemTime;

use cadre_protocol::{TaskPhase, TaskRecord, TaskStatus, TerminationKind, Usage, WorktreeInfo};

use super::Inner;
use super::handle::{RunState, TaskHandle};
use super::pending::PendingGuard;
use super::step::RunError;
use super::types::{Delivery, NoticeKind, ParentNotice, TaskOutcome};
use crate::orchestrator::lifecycle::FinalFacts;
use crate::orchestrator::output::{parent_result, preview};
use crate::orchestrator::policy::{NotificationFacts, notification_text, summary_line};
use crate::orchestrator::store::timestamp;

/// What happens to `output.md` at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputWrite {
    /// A new task's output replaces the file.
    Replace,
    /// A continuation's output is appended to what the task said before.
    Append,
    /// Nothing is written (a panicked run has no output of its own).
    Keep,
}

/// How a task's run ended.
pub(crate) struct RunEnd {
    /// The final answer; empty for a failed or aborted run.
    pub text: String,
    pub error: Option<RunError>,
    /// The tokens of the run's agent runs, added to the record once.
    pub usage: Usage,
    pub worktree: Option<WorktreeInfo>,
    pub output: OutputWrite,
    /// The review gate did not pass the work (V5).
    pub review_failure: Option<String>,
}

impl RunEnd {
    /// The end of a run whose task panicked.
    pub(crate) fn panicked(why: &str) -> RunEnd {
        RunEnd {
            text: String::new(),
            error: Some(RunError::Panicked(why.to_string())),
            usage: Usage::default(),
            worktree: None,
            output: OutputWrite::Keep,
            review_failure: None,
        }
    }
}

/// Record the end, release the slot and notify, exactly once per run: the caller is the run
/// itself or, if it panicked, its watcher (which checks that the run had not ended).
pub(crate) fn end_task(inner: &Arc<Inner>, h: &Arc<TaskHandle>, end: RunEnd, guard: PendingGuard) {
    h.force_close_inbox();
    let kind = resolve(h, &end);
    // output.md keeps the whole text; without a final answer, the latest visible text is kept
    // as partial output (O4) under a note saying so.
    let output = if !end.text.trim().is_empty() {
        end.text.clone()
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
        let mut guard = h.data();
        let d = &mut *guard;
        let r = &mut d.record;
        let lc = &d.lifecycle;
        r.status = kind.status();
        r.termination = Some(kind);
        r.phase = TaskPhase::Terminal;
        lc.write_counters(&mut r.usage);
        r.usage.tokens.add(&end.usage);
        d.live_tokens = Usage::default();
        r.error = lc
            .error()
            .map(str::to_string)
            .or_else(|| end.error.as_ref().map(RunError::message))
            .or(end
                .review_failure
                .clone()
                .filter(|_| kind == TerminationKind::ReviewFailed))
            .filter(|_| r.status != TaskStatus::Completed);
        if end.worktree.is_some() {
            r.worktree = end.worktree.clone();
        }
        r.budget = super::launch::budget_view(&h.budget);
        r.ended_at = Some(timestamp(SystemTime::now()));
        r.owner_pid = None;
        r.owner_start_time = None;
        if end.output != OutputWrite::Keep {
            r.preview = preview(&output);
            let written = match end.output {
                OutputWrite::Append => {
                    inner
                        .store
                        .append_output(&r.root_session_id, &r.id, &output)
                }
                _ => inner.store.write_output(&r.root_session_id, &r.id, &output),
            };
            if let Err(e) = written {
                r.diagnostics.push(format!("output.md: {e}"));
            }
        }
        if let Err(e) = inner.store.save(r) {
            r.diagnostics.push(format!("task.json: {e}"));
        }
        r.clone()
    };
    let receipt = h.receipt_text();
    let released = {
        let mut d = h.data();
        d.final_text = end.text;
        d.receipt = receipt;
        d.permit.take()
    };
    // The slot goes back to the quota outside the task's lock.
    drop(released);

    // The pending count moves into the notice (a foreground run's is released here, before its
    // waiter wakes); a parent that went away drops the notice, and with it the count.
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

/// The termination, resolved once by the lifecycle from how the run ended (L1).
fn resolve(h: &TaskHandle, end: &RunEnd) -> TerminationKind {
    let aborting = h.is_aborting();
    let mut guard = h.data();
    let lc = &mut guard.lifecycle;
    if let Some(error) = &end.error
        && error.is_own_failure()
        && (!aborting || matches!(error, RunError::Panicked(_)))
    {
        let message = error.message();
        if let RunError::Budget { meter, .. } = error {
            lc.on_spend_budget(spend_termination(*meter), &message);
        }
        lc.on_provider_error(&message);
    }
    let kind = lc.on_finished(FinalFacts {
        has_final_text: !end.text.trim().is_empty(),
    });
    // A run that ended normally but did not pass its review fails (V5 step 5).
    match &end.review_failure {
        Some(_) if kind == TerminationKind::Normal => TerminationKind::ReviewFailed,
        _ => kind,
    }
}

/// The termination of a run a budget stopped.
fn spend_termination(meter: cadre_protocol::Meter) -> TerminationKind {
    match meter {
        cadre_protocol::Meter::Tokens => TerminationKind::TokenBudget,
        cadre_protocol::Meter::Cost => TerminationKind::CostBudget,
    }
}

/// Make a recorded end known, in the order every end keeps: listeners see it before any waiter
/// wakes, then the parent gets the notice of a background task, then the task leaves the live
/// set and gives back what it did not spend of its budget.
fn announce_end(
    inner: &Arc<Inner>,
    h: &Arc<TaskHandle>,
    record: &TaskRecord,
    notice: Option<ParentNotice>,
) {
    let _ = inner.events.send(super::types::TaskEvent::Ended {
        task_id: record.id.clone(),
        status: record.status,
        termination: record.termination,
        budget: record.budget,
    });
    h.set_state(RunState::Ended);
    h.budget.close();
    if let Some(notice) = notice {
        let _ = h.notices.send(notice);
    }
    inner.retire(h);
}

/// The `<task-notification>` of a finished run (O6).
pub(crate) fn completion_text(inner: &Inner, h: &TaskHandle, record: &TaskRecord) -> String {
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
    let (r, text, receipt) = {
        let d = h.data();
        (d.record.clone(), d.final_text.clone(), d.receipt.clone())
    };
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
        receipt,
    }
}
