//! State shared between a running agent and its controllers: queues, abort, running flag.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cadre_protocol::AgentEvent;
use tokio_util::sync::CancellationToken;

use super::emit::Emitter;

#[derive(Default)]
struct Queues {
    steering: VecDeque<String>,
    follow_up: VecDeque<String>,
}

pub(crate) struct Shared {
    queues: Mutex<Queues>,
    cancel: Mutex<CancellationToken>,
    running: AtomicBool,
    emitter: Emitter,
}

/// Lock ignoring poisoning: the guarded data stays consistent because no code panics while
/// holding these locks.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn new(emitter: Emitter) -> Arc<Shared> {
        Arc::new(Shared {
            queues: Mutex::new(Queues::default()),
            cancel: Mutex::new(CancellationToken::new()),
            running: AtomicBool::new(false),
            emitter,
        })
    }

    /// Emit `queue_update` with the current queues (called with the queue lock held so the
    /// updates come out in the order the changes happened).
    fn announce(&self, q: &Queues) {
        self.emitter.emit_with(|| AgentEvent::QueueUpdate {
            steering: q.steering.iter().cloned().collect(),
            follow_up: q.follow_up.iter().cloned().collect(),
        });
    }

    pub(crate) fn take_steering(&self) -> Vec<String> {
        let mut q = lock(&self.queues);
        if q.steering.is_empty() {
            return Vec::new();
        }
        let taken = q.steering.drain(..).collect();
        self.announce(&q);
        taken
    }

    pub(crate) fn pop_follow_up(&self) -> Option<String> {
        let mut q = lock(&self.queues);
        let next = q.follow_up.pop_front()?;
        self.announce(&q);
        Some(next)
    }

    pub(crate) fn has_queued(&self) -> bool {
        let q = lock(&self.queues);
        !q.steering.is_empty() || !q.follow_up.is_empty()
    }

    /// Start a run: a fresh cancellation token (an abort before this run does not leak into
    /// it) and the running flag.
    pub(crate) fn begin_run(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *lock(&self.cancel) = token.clone();
        self.running.store(true, Ordering::SeqCst);
        token
    }

    pub(crate) fn end_run(&self) {
        self.running.store(false, Ordering::SeqCst);
    }
}

/// Steers, queues and aborts an [`super::Agent`] from anywhere. Cheap to clone.
#[derive(Clone)]
pub struct AgentController {
    pub(crate) shared: Arc<Shared>,
}

impl AgentController {
    /// Queue a message delivered after the current tool batch (or at the start of the next
    /// run when the agent is idle).
    pub fn steer(&self, text: impl Into<String>) {
        let mut q = lock(&self.shared.queues);
        q.steering.push_back(text.into());
        self.shared.announce(&q);
    }

    /// Queue a message delivered when the agent would otherwise stop.
    pub fn follow_up(&self, text: impl Into<String>) {
        let mut q = lock(&self.shared.queues);
        q.follow_up.push_back(text.into());
        self.shared.announce(&q);
    }

    /// Abort the current run: the model request and running tools are cancelled and the run
    /// returns promptly with a valid history. Does nothing when the agent is idle.
    pub fn abort(&self) {
        if self.is_running() {
            lock(&self.shared.cancel).cancel();
        }
    }

    pub fn is_running(&self) -> bool {
        self.shared.running.load(Ordering::SeqCst)
    }

    /// The queued steering and follow-up messages.
    pub fn queued(&self) -> (Vec<String>, Vec<String>) {
        let q = lock(&self.shared.queues);
        (
            q.steering.iter().cloned().collect(),
            q.follow_up.iter().cloned().collect(),
        )
    }
}
