//! Starting a run on its own tokio task so that it always ends.
//!
//! A run records its own end (`run::drive` → `end::end_task`). If its task panics instead (a bug in a
//! provider, the agent or the manager), nothing else would: the record would stay `running`, a
//! foreground launcher would wait forever, the quota slot kept in the handle would never come
//! back and a background parent would never hear of the task. A watcher task turns such a
//! panic into a `failed` end, recorded and notified like any other (Z1, O6).

use std::future::Future;
use std::sync::Arc;

use super::Inner;
use super::end::{RunEnd, end_task};
use super::handle::{RunState, TaskHandle};

/// Spawn the run `run` of task `h` with a watcher that ends the task if the run panics.
pub(crate) fn spawn_run<F>(inner: &Arc<Inner>, h: &Arc<TaskHandle>, run: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    // A run that got past the launch checks as the parent began shutting down is stopped
    // before it calls a model. Its handle is already listed, so either this sees the flag or
    // the shutdown sees the handle (L6).
    if inner.is_closed() {
        let _ = h.data().lifecycle.on_parent_shutdown();
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

/// Record, release and notify the end of a run whose task panicked (unless it had ended),
/// through the same end as every other run.
fn end_after_panic(inner: &Arc<Inner>, h: &Arc<TaskHandle>, why: &str) {
    if h.state() == RunState::Ended {
        return;
    }
    end_task(inner, h, RunEnd::panicked(why), inner.pending.guard());
}
