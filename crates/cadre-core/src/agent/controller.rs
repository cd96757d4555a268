//! State shared between a running agent and its controllers: queues, abort, running flag.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cadre_protocol::{AgentEvent, Message};
use tokio_util::sync::CancellationToken;

use super::emit::Emitter;

/// How many queued messages one delivery takes (Pi's steering and follow-up modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueMode {
    /// Every queued message at once.
    All,
    /// The oldest one; the rest wait for the next delivery.
    OneAtATime,
}

impl QueueMode {
    /// Pi's names: `all`, `one-at-a-time`.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueMode::All => "all",
            QueueMode::OneAtATime => "one-at-a-time",
        }
    }

    pub fn parse(s: &str) -> Option<QueueMode> {
        match s {
            "all" => Some(QueueMode::All),
            "one-at-a-time" => Some(QueueMode::OneAtATime),
            _ => None,
        }
    }
}

/// A queued steering message: a person's text (listed in `queue_update`, delivered as a user
/// message) or a runtime message delivered as it is (Pi's steered custom messages, which
/// `queue_update` does not list).
enum Steer {
    Text(String),
    /// Boxed: a message is far larger than a text.
    Message(Box<Message>),
}

impl Steer {
    fn text(&self) -> Option<&String> {
        match self {
            Steer::Text(text) => Some(text),
            Steer::Message(_) => None,
        }
    }

    fn into_message(self) -> Message {
        match self {
            Steer::Text(text) => Message::user(text),
            Steer::Message(message) => *message,
        }
    }
}

struct Queues {
    steering: VecDeque<Steer>,
    follow_up: VecDeque<String>,
    steering_mode: QueueMode,
    follow_up_mode: QueueMode,
}

impl Default for Queues {
    /// Steering all at once (a parent gets every task notice that arrived during a tool batch
    /// in one turn), follow-ups one per stop, as Pi.
    fn default() -> Self {
        Queues {
            steering: VecDeque::new(),
            follow_up: VecDeque::new(),
            steering_mode: QueueMode::All,
            follow_up_mode: QueueMode::OneAtATime,
        }
    }
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
            steering: q.steering.iter().filter_map(Steer::text).cloned().collect(),
            follow_up: q.follow_up.iter().cloned().collect(),
        });
    }

    pub(crate) fn take_steering(&self) -> Vec<Message> {
        let mut q = lock(&self.queues);
        if q.steering.is_empty() {
            return Vec::new();
        }
        let taken: Vec<Steer> = match q.steering_mode {
            QueueMode::All => q.steering.drain(..).collect(),
            QueueMode::OneAtATime => q.steering.pop_front().into_iter().collect(),
        };
        if taken.iter().any(|s| s.text().is_some()) {
            self.announce(&q);
        }
        taken.into_iter().map(Steer::into_message).collect()
    }

    /// The follow-ups of one delivery (empty when none is queued).
    pub(crate) fn take_follow_up(&self) -> Vec<String> {
        let mut q = lock(&self.queues);
        if q.follow_up.is_empty() {
            return Vec::new();
        }
        let taken = match q.follow_up_mode {
            QueueMode::All => q.follow_up.drain(..).collect(),
            QueueMode::OneAtATime => q.follow_up.pop_front().into_iter().collect(),
        };
        self.announce(&q);
        taken
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
        q.steering.push_back(Steer::Text(text.into()));
        self.shared.announce(&q);
    }

    /// Queue a whole message (e.g. a task notification, Pi's `custom` role) delivered as
    /// [`AgentController::steer`] delivers text. Like Pi's steered custom messages it is not
    /// listed in `queue_update` or [`AgentController::queued`].
    pub fn steer_message(&self, message: Message) {
        lock(&self.shared.queues)
            .steering
            .push_back(Steer::Message(Box::new(message)));
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

    /// How steering messages are delivered from now on.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        lock(&self.shared.queues).steering_mode = mode;
    }

    /// How follow-up messages are delivered from now on.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        lock(&self.shared.queues).follow_up_mode = mode;
    }

    /// The steering and follow-up modes.
    pub fn queue_modes(&self) -> (QueueMode, QueueMode) {
        let q = lock(&self.shared.queues);
        (q.steering_mode, q.follow_up_mode)
    }

    /// Take back the person's queued texts — steers, then follow-ups — leaving the whole
    /// messages of [`AgentController::steer_message`] (task notices) queued: what an aborted
    /// turn hands back to the editor, so a cancelled instruction never reaches a later run.
    pub fn withdraw_queued(&self) -> Vec<String> {
        let mut q = lock(&self.shared.queues);
        let mut taken = Vec::new();
        q.steering.retain(|s| match s.text() {
            Some(text) => {
                taken.push(text.clone());
                false
            }
            None => true,
        });
        taken.extend(q.follow_up.drain(..));
        if !taken.is_empty() {
            self.shared.announce(&q);
        }
        taken
    }

    /// Whether anything waits to be delivered: texts, follow-ups or whole messages (task
    /// notices).
    pub fn has_queued(&self) -> bool {
        self.shared.has_queued()
    }

    /// The queued steering and follow-up texts (not the whole messages of
    /// [`AgentController::steer_message`]).
    pub fn queued(&self) -> (Vec<String>, Vec<String>) {
        let q = lock(&self.shared.queues);
        (
            q.steering.iter().filter_map(Steer::text).cloned().collect(),
            q.follow_up.iter().cloned().collect(),
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn withdrawing_takes_the_persons_texts_and_keeps_task_notices() {
        let controller = AgentController {
            shared: Shared::new(Emitter::new(None)),
        };
        controller.steer("also delete the build dir");
        controller.steer_message(Message::user("<task-notification>…</task-notification>"));
        controller.follow_up("then summarise");
        assert_eq!(
            controller.withdraw_queued(),
            ["also delete the build dir", "then summarise"]
        );
        assert_eq!(controller.queued(), (vec![], vec![]));
        assert!(controller.shared.has_queued(), "the notice stays queued");
    }
}
