//! Event emission that costs nothing when no one listens.

use std::sync::{Arc, Mutex, PoisonError};

use cadre_protocol::{AgentEvent, AssistantMessage, Message};
use tokio::sync::mpsc;

/// Which events an agent builds for its listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EventDetail {
    /// Every event, streaming updates included (front ends that render as text arrives).
    #[default]
    All,
    /// Every event but the streaming updates (`message_update`, `tool_execution_update`), each
    /// of which copies the message or tool output so far.
    NoUpdates,
    /// Only what a task supervisor acts on: `turn_start`, `turn_end` and `tool_execution_end`.
    /// The rest (message starts and ends, agent start and end) copies every message, and the
    /// whole conversation at the end of a run, for a listener that would drop them.
    Supervisor,
}

#[derive(Clone, Default)]
pub(crate) struct Emitter {
    tx: Option<mpsc::UnboundedSender<AgentEvent>>,
    detail: EventDetail,
    /// Shared by every clone: the run's framing is one per agent.
    frame: Arc<Mutex<RunFrame>>,
}

/// What Pi's framing of a run needs across a retry.
///
/// Pi retries a failed request by ending the run (`turn_end`, `agent_end` with the failed
/// message), sending `auto_retry_start`, and continuing in a new run (`agent_start`,
/// `turn_start`), whose `agent_end` has only the messages since; a retry that ends in failure
/// sends its `auto_retry_end` after that `agent_end`. cadre's provider retries inside one
/// request, so the stream emits the framing and this keeps where the current run began.
#[derive(Default)]
struct RunFrame {
    /// Index of the run's first message in the conversation.
    start: usize,
    /// Sent right after the run's `agent_end`.
    after_end: Option<AgentEvent>,
}

impl Emitter {
    pub(crate) fn new(events: Option<mpsc::UnboundedSender<AgentEvent>>) -> Self {
        Emitter {
            tx: events,
            detail: EventDetail::All,
            frame: Arc::default(),
        }
    }

    fn frame(&self) -> std::sync::MutexGuard<'_, RunFrame> {
        // The frame is two plain fields; a panic elsewhere cannot leave it half-written.
        self.frame.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `agent_start` of a run whose first message will be `conversation[first]`.
    pub(crate) fn agent_start(&self, first: usize) {
        *self.frame() = RunFrame {
            start: first,
            after_end: None,
        };
        self.emit(AgentEvent::AgentStart);
    }

    /// `agent_end` with the run's messages (since its start or its last retry), then what
    /// waited for it.
    pub(crate) fn agent_end(&self, conversation: &[Message]) {
        let RunFrame { start, after_end } = std::mem::take(&mut *self.frame());
        self.emit_with(|| AgentEvent::AgentEnd {
            messages: conversation.get(start..).unwrap_or_default().to_vec(),
        });
        if let Some(event) = after_end {
            self.emit(event);
        }
    }

    /// A compaction replaced the conversation before `first_kept` with its summary: the run's
    /// first message moved with it.
    pub(crate) fn compacted(&self, first_kept: usize) {
        let mut frame = self.frame();
        frame.start = crate::compaction::plan::reindexed(frame.start, first_kept);
    }

    /// Pi's framing of a retry: the failed attempt ends the turn and the run, `retry` (the
    /// `auto_retry_start`) follows, and a new run and turn begin. `conversation` is the history
    /// the failed request was sent; the failed message is not part of it (it is not kept).
    pub(crate) fn retry(
        &self,
        conversation: &[Message],
        failed: &AssistantMessage,
        retry: AgentEvent,
    ) {
        if !self.enabled() {
            return;
        }
        let start = std::mem::replace(&mut self.frame().start, conversation.len());
        self.emit(AgentEvent::TurnEnd {
            message: Message::Assistant(failed.clone()),
            tool_results: Vec::new(),
        });
        let mut messages = conversation.get(start..).unwrap_or_default().to_vec();
        messages.push(Message::Assistant(failed.clone()));
        self.emit(AgentEvent::AgentEnd { messages });
        self.emit(retry);
        self.emit(AgentEvent::AgentStart);
        self.emit(AgentEvent::TurnStart);
    }

    /// Send `event` right after the run's `agent_end` (Pi's `auto_retry_end` of a retry that
    /// failed).
    pub(crate) fn after_agent_end(&self, event: AgentEvent) {
        if self.enabled() {
            self.frame().after_end = Some(event);
        }
    }

    pub(crate) fn with_detail(mut self, detail: EventDetail) -> Self {
        self.detail = detail;
        self
    }

    /// Whether the events a supervisor does not need are built.
    pub(crate) fn enabled(&self) -> bool {
        self.tx.is_some() && self.detail != EventDetail::Supervisor
    }

    pub(crate) fn updates_enabled(&self) -> bool {
        self.tx.is_some() && self.detail == EventDetail::All
    }

    /// Build and send the event only if there is a listener that wants it. A listener that went
    /// away is not an error: the run goes on.
    pub(crate) fn emit_with(&self, build: impl FnOnce() -> AgentEvent) {
        if self.enabled() {
            self.send(build());
        }
    }

    pub(crate) fn emit(&self, event: AgentEvent) {
        self.emit_with(|| event);
    }

    /// [`Emitter::emit_with`] for a turn or tool boundary, which every listener gets.
    pub(crate) fn emit_boundary_with(&self, build: impl FnOnce() -> AgentEvent) {
        if self.tx.is_some() {
            self.send(build());
        }
    }

    fn send(&self, event: AgentEvent) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(event);
        }
    }
}
