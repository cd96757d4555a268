//! Event emission that costs nothing when no one listens.

use cadre_protocol::AgentEvent;
use tokio::sync::mpsc;

#[derive(Clone, Default)]
pub(crate) struct Emitter {
    tx: Option<mpsc::UnboundedSender<AgentEvent>>,
    /// Whether streaming updates (`message_update`, `tool_execution_update`) are built. Each
    /// copies the message or output so far, which a listener that only needs message, turn and
    /// tool boundaries (a task supervisor) should not pay for.
    updates: bool,
}

impl Emitter {
    pub(crate) fn new(events: Option<mpsc::UnboundedSender<AgentEvent>>) -> Self {
        Emitter {
            tx: events,
            updates: true,
        }
    }

    pub(crate) fn with_updates(mut self, on: bool) -> Self {
        self.updates = on;
        self
    }

    pub(crate) fn enabled(&self) -> bool {
        self.tx.is_some()
    }

    pub(crate) fn updates_enabled(&self) -> bool {
        self.updates && self.tx.is_some()
    }

    /// Build and send the event only if there is a listener. A listener that went away is
    /// not an error: the run goes on.
    pub(crate) fn emit_with(&self, build: impl FnOnce() -> AgentEvent) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(build());
        }
    }

    pub(crate) fn emit(&self, event: AgentEvent) {
        self.emit_with(|| event);
    }
}
