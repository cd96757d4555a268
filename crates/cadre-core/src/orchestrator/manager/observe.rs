//! Which tasks one `Agent` call launched, told to whoever runs the call (an MCP front end
//! reporting that call's progress), by task id rather than by description.
//!
//! The observer is task-local to the call's future: launches made inside it are the call's,
//! while the children's own launches run on their own tasks and are not seen here (they are
//! known by their parent task id).

use std::future::Future;
use std::sync::Arc;

tokio::task_local! {
    static OBSERVER: LaunchObserver;
}

/// Told the id of each task a call launches, as soon as the task exists.
#[derive(Clone)]
pub struct LaunchObserver(Arc<dyn Fn(&str) + Send + Sync>);

impl LaunchObserver {
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> LaunchObserver {
        LaunchObserver(Arc::new(f))
    }
}

/// Run `call` (an `Agent` tool's execution) with `observer` told of its launches.
pub async fn observe_launches<F: Future>(observer: LaunchObserver, call: F) -> F::Output {
    OBSERVER.scope(observer, call).await
}

/// Tell the current call's observer, if any, that it launched `task_id`.
pub(crate) fn launched(task_id: &str) {
    let _ = OBSERVER.try_with(|o| (o.0)(task_id));
}
