//! Event emission that costs nothing when no one listens.

use cadre_protocol::AgentEvent;
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
}

impl Emitter {
    pub(crate) fn new(events: Option<mpsc::UnboundedSender<AgentEvent>>) -> Self {
        Emitter {
            tx: events,
            detail: EventDetail::All,
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
