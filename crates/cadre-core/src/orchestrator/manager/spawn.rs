//! Starting a run on its own tokio task so that it always ends.
//!
//! A run records its own end (`run::drive` → `finish`). If its task panics instead (a bug in a
//! provider, the agent or the manager), nothing else would: the record would stay `running`, a
//! foreground launcher would wait forever, the quota slot kept in the handle would never come
//! back and a background parent would never hear of the task. A watcher task turns such a
//! panic into a `failed` end, recorded and notified like any other (Z1, O6).

use std::future::Future;
use std::sync::Arc;
use std::time::SystemTime;

use cadre_protocol::TaskPhase;

use super::Inner;
use super::handle::{RunState, TaskHandle, lock};
use super::run::{announce_end, completion_text};
use super::types::{NoticeKind, ParentNotice};
use crate::orchestrator::lifecycle::FinalFacts;
use crate::orchestrator::store::timestamp;

/// Spawn the run `run` of task `h` with a watcher that ends the task if the run panics.
pub(crate) fn spawn_run<F>(inner: &Arc<Inner>, h: &Arc<TaskHandle>, run: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    // A run that got past the launch checks as the parent began shutting down is stopped
    // before it calls a model. Its handle is already listed, so either this sees the flag or
    // the shutdown sees the handle (L6).
    if inner.is_closed() {
        let _ = lock(&h.lifecycle).on_parent_shutdown();
        h.abort();
    }
    // Held until the watcher is done: a panic drops the run's own pending guard, and the count
    // must not reach zero before the task's notice exists.
    let watching = inner.pending.guard();
    // Boxed: a run's future is tens of KiB, and tokio moves a task's whole future (or the
    // stage that replaces it) by value at spawn and at every stage change; a box moves as a
    // pointer (SPEC P1).
    let task = tokio::spawn(Box::pin(run));
    let inner = Arc::clone(inner);
    let h = Arc::clone(h);
    tokio::spawn(async move {
        if let Err(e) = task.await
            && e.is_panic()
        {
            let why = panic_message(e.into_panic());
            end_after_panic(&inner, &h, &why);
        }
        drop(watching);
    });
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown cause".into())
}

/// Record, release and notify the end of a run whose task panicked (unless it had ended).
fn end_after_panic(inner: &Arc<Inner>, h: &Arc<TaskHandle>, why: &str) {
    if h.state() == RunState::Ended {
        return;
    }
    h.force_close_inbox();
    let error = format!("internal error: the task's run panicked ({why})");
    let record = {
        let mut r = lock(&h.record);
        let mut lc = lock(&h.lifecycle);
        lc.on_provider_error(&error);
        let kind = lc.on_finished(FinalFacts {
            has_final_text: false,
        });
        r.status = kind.status();
        r.termination = Some(kind);
        r.phase = TaskPhase::Terminal;
        lc.write_counters(&mut r.usage);
        r.error = Some(lc.error().unwrap_or(&error).to_string());
        drop(lc);
        r.ended_at = Some(timestamp(SystemTime::now()));
        r.owner_pid = None;
        r.owner_start_time = None;
        if let Err(e) = inner.store.save(&mut r) {
            r.diagnostics.push(format!("task.json: {e}"));
        }
        r.clone()
    };
    lock(&h.final_text).clear();
    *lock(&h.receipt) = h.receipt_text();
    lock(&h.permit).take();
    let notice = h.is_background().then(|| {
        ParentNotice::new(
            NoticeKind::Completion,
            record.id.clone(),
            completion_text(inner, h, &record),
            Some(inner.pending.guard()),
        )
    });
    announce_end(inner, h, &record, notice);
}
