//! Event emission that costs nothing when no one listens.

use cadre_protocol::AgentEvent;
use tokio::sync::mpsc;

#[derive(Clone, Default)]
pub(crate) struct Emitter(Option<mpsc::UnboundedSender<AgentEvent>>);

impl Emitter {
    pub(crate) fn new(events: Option<mpsc::UnboundedSender<AgentEvent>>) -> Self {
        Emitter(events)
    }

    pub(crate) fn enabled(&self) -> bool {
        self.0.is_some()
    }

    /// Build and send the event only if there is a listener. A listener that went away is
    /// not an error: the run goes on.
    pub(crate) fn emit_with(&self, build: impl FnOnce() -> AgentEvent) {
        if let Some(tx) = &self.0 {
            let _ = tx.send(build());
        }
    }

    pub(crate) fn emit(&self, event: AgentEvent) {
        self.emit_with(|| event);
    }
}
