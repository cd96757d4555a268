//! The in-memory side of one task run: its record, lifecycle, controller and run state.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use cadre_protocol::{ContentBlock, TaskRecord, ToolCall, join_text};
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use super::scope::ProbeScope;
use super::structured::StructuredSlot;
use super::types::ParentNotice;
use crate::agent::{AgentController, ToolGate};
use crate::handoff::ToolEvent;
use crate::orchestrator::capability::{CapabilitySet, check_dispatch};
use crate::orchestrator::lifecycle::{Lifecycle, ToolDecision};
use crate::orchestrator::quota::Permit;

/// Lock ignoring poisoning: no code panics while holding these locks.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunState {
    /// Waiting for a quota slot.
    Queued,
    Running,
    /// A foreground run promoted to supervised background (its launcher stopped waiting).
    Promoted,
    /// The record is final.
    Ended,
}

/// Whether a live run still takes messages (steers). Closed once the run decided to end, so a
/// message is either steered into the run or sees `Closed` and reopens the task afterwards.
enum Inbox {
    /// Not started yet: messages wait here and become steers at the start.
    Waiting(Vec<String>),
    Open(AgentController),
    Closed,
}

pub(crate) struct TaskHandle {
    pub id: String,
    pub record: Mutex<TaskRecord>,
    pub lifecycle: Mutex<Lifecycle>,
    pub caps: CapabilitySet,
    /// The direct parent's notice channel (O6, O8).
    pub notices: mpsc::UnboundedSender<ParentNotice>,
    state: watch::Sender<RunState>,
    inbox: Mutex<Inbox>,
    /// An abort was asked for (stop, shutdown, budget): no further run may start.
    aborting: AtomicBool,
    abort_signal: tokio::sync::Notify,
    pub background: AtomicBool,
    pub permit: Mutex<Option<Arc<Permit>>>,
    /// The final text of the last run (empty for a failed or aborted one).
    pub final_text: Mutex<String>,
    /// The latest non-empty assistant text (stage notes, partial output).
    pub latest_text: Mutex<String>,
    /// Calls admitted at dispatch and not yet finished, by id: their tool and the arguments
    /// a receipt reads (for the executed counter and the receipt).
    admitted: Mutex<HashMap<String, (String, Value)>>,
    /// What the run's admitted calls did, from tool events only (V3).
    pub tool_events: Mutex<Vec<ToolEvent>>,
    /// The run's `<execution-receipt>`, once it ended.
    pub receipt: Mutex<String>,
    /// A scoped probe's paths and read budget (S4); `None` for other tasks.
    pub scope: Mutex<Option<ProbeScope>>,
    /// Where a task with `output_schema` keeps its accepted structured output (V8).
    pub structured: Mutex<Option<StructuredSlot>>,
    pub started: Instant,
}

impl TaskHandle {
    pub(crate) fn new(
        record: TaskRecord,
        lifecycle: Lifecycle,
        caps: CapabilitySet,
        notices: mpsc::UnboundedSender<ParentNotice>,
        background: bool,
    ) -> TaskHandle {
        let (state, _) = watch::channel(RunState::Queued);
        TaskHandle {
            id: record.id.clone(),
            record: Mutex::new(record),
            lifecycle: Mutex::new(lifecycle),
            caps,
            notices,
            state,
            inbox: Mutex::new(Inbox::Waiting(Vec::new())),
            aborting: AtomicBool::new(false),
            abort_signal: tokio::sync::Notify::new(),
            background: AtomicBool::new(background),
            permit: Mutex::new(None),
            final_text: Mutex::new(String::new()),
            latest_text: Mutex::new(String::new()),
            admitted: Mutex::new(HashMap::new()),
            tool_events: Mutex::new(Vec::new()),
            receipt: Mutex::new(String::new()),
            scope: Mutex::new(None),
            structured: Mutex::new(None),
            started: Instant::now(),
        }
    }

    pub(crate) fn state(&self) -> RunState {
        *self.state.borrow()
    }

    pub(crate) fn set_state(&self, s: RunState) {
        self.state.send_modify(|cur| {
            // Ended is final; Promoted is not undone by a later Running.
            if *cur == RunState::Ended || (*cur == RunState::Promoted && s == RunState::Running) {
                return;
            }
            *cur = s;
        });
    }

    /// Wait until the run ended, or (with `or_promoted`) was promoted to background.
    pub(crate) async fn wait(&self, or_promoted: bool) -> RunState {
        let mut rx = self.state.subscribe();
        let result = rx
            .wait_for(|s| *s == RunState::Ended || (or_promoted && *s == RunState::Promoted))
            .await
            .map(|s| *s);
        // The sender lives in `self`: the channel cannot close while we hold `self`.
        result.unwrap_or(RunState::Ended)
    }

    pub(crate) fn is_background(&self) -> bool {
        self.background.load(Ordering::SeqCst)
    }

    /// Open the inbox with the run's controller; messages that arrived before are steered.
    pub(crate) fn open_inbox(&self, controller: AgentController) {
        let mut inbox = lock(&self.inbox);
        if let Inbox::Waiting(queued) = &mut *inbox {
            for text in queued.drain(..) {
                controller.steer(text);
            }
        }
        *inbox = Inbox::Open(controller);
    }

    /// Close the inbox if nothing is queued in the controller; `false` means messages arrived
    /// and the run must go on to answer them.
    pub(crate) fn try_close_inbox(&self) -> bool {
        let mut inbox = lock(&self.inbox);
        if let Inbox::Open(c) = &*inbox
            && !self.is_aborting()
        {
            let (steering, follow_up) = c.queued();
            if !steering.is_empty() || !follow_up.is_empty() {
                return false;
            }
        }
        *inbox = Inbox::Closed;
        true
    }

    /// Close the inbox whatever is queued (the run ended on an error or an abort).
    pub(crate) fn force_close_inbox(&self) {
        *lock(&self.inbox) = Inbox::Closed;
    }

    /// Deliver a message to the live run. `false` when the run no longer takes messages.
    pub(crate) fn deliver(&self, text: &str) -> bool {
        let mut inbox = lock(&self.inbox);
        match &mut *inbox {
            Inbox::Waiting(queued) => {
                queued.push(text.to_string());
                true
            }
            Inbox::Open(c) => {
                c.steer(text);
                true
            }
            Inbox::Closed => false,
        }
    }

    pub(crate) fn controller(&self) -> Option<AgentController> {
        match &*lock(&self.inbox) {
            Inbox::Open(c) => Some(c.clone()),
            _ => None,
        }
    }

    pub(crate) fn is_aborting(&self) -> bool {
        self.aborting.load(Ordering::SeqCst)
    }

    /// Abort the run now and keep it from starting another.
    pub(crate) fn abort(&self) {
        self.aborting.store(true, Ordering::SeqCst);
        if let Some(c) = self.controller() {
            c.abort();
        }
        self.abort_signal.notify_waiters();
        self.abort_signal.notify_one();
    }

    /// Resolves once an abort was asked for.
    pub(crate) async fn aborted(&self) {
        loop {
            let notified = self.abort_signal.notified();
            if self.is_aborting() {
                return;
            }
            notified.await;
        }
    }

    pub(crate) fn set_latest_text(&self, text: &str) {
        if !text.trim().is_empty() {
            *lock(&self.latest_text) = text.to_string();
        }
    }

    pub(crate) fn latest_text(&self) -> String {
        lock(&self.latest_text).clone()
    }

    /// The accepted structured output, once the child gave one (V8).
    pub(crate) fn structured_value(&self) -> Option<Value> {
        lock(&self.structured)
            .as_ref()
            .and_then(|slot| lock(slot).clone())
    }

    pub(crate) fn record(&self) -> TaskRecord {
        lock(&self.record).clone()
    }

    /// A call finished executing: count it and keep its event if it was admitted (refused
    /// calls did nothing and are not part of the receipt).
    pub(crate) fn on_tool_end(&self, call_id: &str, result: &Value, is_error: bool) {
        let Some((tool, args)) = lock(&self.admitted).remove(call_id) else {
            return;
        };
        lock(&self.lifecycle).on_tool_executed();
        let text = result
            .get("content")
            .cloned()
            .and_then(|c| serde_json::from_value::<Vec<ContentBlock>>(c).ok())
            .map(|blocks| join_text(&blocks))
            .unwrap_or_default();
        lock(&self.tool_events).push(ToolEvent::from_result(
            &tool,
            args,
            is_error,
            &text,
            Vec::new(),
        ));
    }
}

/// The arguments a receipt reads (a bash command, an edited path); the rest (file contents)
/// is dropped so a long task's events stay small.
fn receipt_args(args: &Value) -> Value {
    let mut kept = serde_json::Map::new();
    for key in ["command", "path"] {
        if let Some(v) = args.get(key) {
            kept.insert(key.to_string(), v.clone());
        }
    }
    Value::Object(kept)
}

/// The dispatch-time check of a child's calls: the capability set (S1) first, then the
/// lifecycle's tool budget (L3). Refusals are counted as blocked by the lifecycle.
pub(crate) struct ChildGate {
    pub handle: Arc<TaskHandle>,
}

impl ToolGate for ChildGate {
    fn check(&self, call: &ToolCall) -> Option<String> {
        let h = &self.handle;
        if let Err(message) = check_dispatch(&h.caps, &call.name) {
            lock(&h.lifecycle).on_policy_block();
            return Some(message);
        }
        let refused = lock(&h.scope)
            .as_mut()
            .and_then(|s| s.check(&call.name, &call.arguments).err());
        if let Some(message) = refused {
            lock(&h.lifecycle).on_policy_block();
            return Some(message);
        }
        let decision = lock(&h.lifecycle).on_tool_call(&call.name);
        match decision {
            ToolDecision::Allow => {
                lock(&h.admitted).insert(
                    call.id.clone(),
                    (call.name.clone(), receipt_args(&call.arguments)),
                );
                None
            }
            ToolDecision::Block(message) => Some(message),
        }
    }
}
