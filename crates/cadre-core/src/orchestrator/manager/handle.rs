//! The in-memory side of one task run: its record, lifecycle, controller and run state.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use cadre_protocol::{ContentBlock, TaskRecord, ToolCall, join_text};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::scope::ProbeScope;
use super::structured::StructuredSlot;
use super::types::ParentNotice;
use crate::agent::{AgentController, ToolGate};
use crate::handoff::refusal::{RefusalReason, Refusals};
use crate::handoff::{ExecutionReceipt, ToolEvent};
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

/// One task's run as the manager holds it: what never changes (its id, tool set, parent's notice
/// channel, budget node), its run state (a watch, so waiters wake), a cancellation token for
/// aborts, and everything else behind one lock ([`TaskData`]).
pub(crate) struct TaskHandle {
    pub id: String,
    pub caps: CapabilitySet,
    /// The direct parent's notice channel (O6, O8).
    pub notices: mpsc::UnboundedSender<ParentNotice>,
    pub started: Instant,
    /// The task's node in the session's budget tree: its requests and its subtree's are
    /// charged here; given back to the parent when the task ends.
    pub budget: Arc<crate::budget::BudgetNode>,
    pub background: AtomicBool,
    state: watch::Sender<RunState>,
    /// Cancelled once an abort was asked for (stop, shutdown, budget): no further run starts.
    cancel: CancellationToken,
    data: Mutex<TaskData>,
}

/// A task's changing state, under its handle's one lock. Nothing holds the lock across an
/// await or while calling into the agent, the store's other tasks or another handle.
pub(crate) struct TaskData {
    pub record: TaskRecord,
    pub lifecycle: Lifecycle,
    inbox: Inbox,
    pub permit: Option<Arc<Permit>>,
    /// The final text of the last run (empty for a failed or aborted one).
    pub final_text: String,
    /// The latest non-empty assistant text (stage notes, partial output).
    pub latest_text: String,
    /// Calls admitted at dispatch and not yet finished, by id: their tool and the arguments
    /// a receipt reads (for the executed counter and the receipt).
    admitted: HashMap<String, (String, Value)>,
    /// What the run's admitted calls did, from tool events only (V3).
    pub tool_events: Vec<ToolEvent>,
    /// The run's calls that never ran: refused at dispatch or by their tool (L3, V3).
    pub refusals: Refusals,
    /// The run's `<execution-receipt>`, once it ended.
    pub receipt: String,
    /// A scoped probe's paths and read budget (S4); `None` for other tasks.
    pub scope: Option<ProbeScope>,
    /// A writing child's writable directories and protected paths, checked for `write` and
    /// `edit` at dispatch (its bash is held to the same boundary by the kernel); `None` for
    /// read-only tasks, whose write tools are not in their set.
    pub write_boundary: Option<WriteGate>,
    /// Where a task with `output_schema` keeps its accepted structured output (V8).
    pub structured: Option<StructuredSlot>,
    /// Tokens of the turns of the current run, for progress (`TaskEvent::Turn`) only: the
    /// record adds the run's usage once, when the run ends, and this goes back to zero then.
    pub live_tokens: cadre_protocol::Usage,
}

impl TaskHandle {
    pub(crate) fn new(
        record: TaskRecord,
        lifecycle: Lifecycle,
        caps: CapabilitySet,
        notices: mpsc::UnboundedSender<ParentNotice>,
        background: bool,
        budget: Arc<crate::budget::BudgetNode>,
    ) -> TaskHandle {
        let (state, _) = watch::channel(RunState::Queued);
        TaskHandle {
            id: record.id.clone(),
            caps,
            notices,
            started: Instant::now(),
            budget,
            background: AtomicBool::new(background),
            state,
            cancel: CancellationToken::new(),
            data: Mutex::new(TaskData {
                record,
                lifecycle,
                inbox: Inbox::Waiting(Vec::new()),
                permit: None,
                final_text: String::new(),
                latest_text: String::new(),
                admitted: HashMap::new(),
                tool_events: Vec::new(),
                refusals: Refusals::default(),
                receipt: String::new(),
                scope: None,
                write_boundary: None,
                structured: None,
                live_tokens: cadre_protocol::Usage::default(),
            }),
        }
    }

    /// The task's data, locked. Keep the guard short: no await, no call that locks it again.
    pub(crate) fn data(&self) -> MutexGuard<'_, TaskData> {
        lock(&self.data)
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
        let mut d = self.data();
        if let Inbox::Waiting(queued) = &mut d.inbox {
            for text in queued.drain(..) {
                controller.steer(text);
            }
        }
        d.inbox = Inbox::Open(controller);
    }

    /// Close the inbox if nothing is queued in the controller; `false` means messages arrived
    /// and the run must go on to answer them.
    pub(crate) fn try_close_inbox(&self) -> bool {
        let mut d = self.data();
        if let Inbox::Open(c) = &d.inbox
            && !self.is_aborting()
        {
            let (steering, follow_up) = c.queued();
            if !steering.is_empty() || !follow_up.is_empty() {
                return false;
            }
        }
        d.inbox = Inbox::Closed;
        true
    }

    /// Close the inbox whatever is queued (the run ended on an error or an abort).
    pub(crate) fn force_close_inbox(&self) {
        self.data().inbox = Inbox::Closed;
    }

    /// Deliver a message to the live run. `false` when the run no longer takes messages.
    pub(crate) fn deliver(&self, text: &str) -> bool {
        let mut d = self.data();
        match &mut d.inbox {
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
        match &self.data().inbox {
            Inbox::Open(c) => Some(c.clone()),
            _ => None,
        }
    }

    pub(crate) fn is_aborting(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Abort the run now and keep it from starting another.
    pub(crate) fn abort(&self) {
        self.cancel.cancel();
        if let Some(c) = self.controller() {
            c.abort();
        }
    }

    /// Resolves once an abort was asked for.
    pub(crate) async fn aborted(&self) {
        self.cancel.cancelled().await;
    }

    pub(crate) fn set_latest_text(&self, text: &str) {
        if !text.trim().is_empty() {
            self.data().latest_text = text.to_string();
        }
    }

    pub(crate) fn latest_text(&self) -> String {
        self.data().latest_text.clone()
    }

    /// The accepted structured output, once the child gave one (V8).
    pub(crate) fn structured_value(&self) -> Option<Value> {
        let slot = self.data().structured.clone();
        slot.and_then(|slot| lock(&slot).clone())
    }

    pub(crate) fn record(&self) -> TaskRecord {
        self.data().record.clone()
    }

    /// A call finished: count it and keep its event if it was admitted and ran. Calls refused
    /// at dispatch were counted there; an admitted call its tool refused before doing anything
    /// (bash under a shell policy or without its sandbox says so in `details.blocked`) is
    /// blocked, not executed, and listed with the refusals rather than the calls that ran.
    pub(crate) fn on_tool_end(&self, call_id: &str, result: &Value, is_error: bool) {
        let mut d = self.data();
        let Some((tool, args)) = d.admitted.remove(call_id) else {
            return;
        };
        let refused = result
            .get("details")
            .and_then(|d| d.get("blocked"))
            .and_then(Value::as_str)
            .and_then(RefusalReason::from_tool_detail)
            .filter(|_| is_error);
        if let Some(reason) = refused {
            d.lifecycle.on_refused_by_tool();
            d.refusals.record(&tool, reason);
            return;
        }
        d.lifecycle.on_tool_executed();
        drop(d);
        let text = result
            .get("content")
            .cloned()
            .and_then(|c| serde_json::from_value::<Vec<ContentBlock>>(c).ok())
            .map(|blocks| join_text(&blocks))
            .unwrap_or_default();
        // Files the call changed as cadre saw them from outside (a writer's bash): the
        // receipt's ground truth, whatever the call's arguments say.
        let changed: Vec<String> = result
            .get("details")
            .and_then(|d| d.get("changedFiles"))
            .and_then(Value::as_array)
            .map(|files| {
                files
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let event = ToolEvent::from_result(&tool, args, is_error, &text, changed);
        self.data().tool_events.push(event);
    }

    /// The receipt of the run so far: its tool events and its refused calls (V3).
    pub(crate) fn execution_receipt(&self) -> ExecutionReceipt {
        let d = self.data();
        ExecutionReceipt::of_run(&d.tool_events, &d.refusals)
    }

    /// The `<execution-receipt>` of an ended run: its receipt and, under a cap, its budget
    /// line (`Budget: $0.41 of $0.50`).
    pub(crate) fn receipt_text(&self) -> String {
        let mut receipt = self.execution_receipt();
        receipt.budget = crate::budget::text::receipt_line(&self.budget.state());
        receipt.render()
    }

    /// Count a call refused before it ran and list it for the receipt.
    fn refuse(d: &mut TaskData, tool: &str, reason: RefusalReason) {
        if reason != RefusalReason::ToolBudget {
            // The budget's own refusals are counted by the lifecycle when it refuses.
            d.lifecycle.on_policy_block();
        }
        d.refusals.record(tool, reason);
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

/// A writing child's boundary for the tools that write in cadre's own process.
pub(crate) struct WriteGate {
    pub cwd: std::path::PathBuf,
    pub boundary: cadre_tools::sandbox::WriterBoundary,
}

/// The tools whose `path` is written by cadre itself, outside every sandbox.
const WRITING_TOOLS: [&str; 2] = ["write", "edit"];

impl WriteGate {
    /// Check one call, given the arguments its tool will run with.
    pub(crate) fn check(&self, tool: &str, args: &Value) -> Result<(), String> {
        if !WRITING_TOOLS.contains(&tool) {
            return Ok(());
        }
        let args = cadre_tools::args::Args::parse(args.clone())
            .map_err(|e| format!("Invalid arguments for {tool}: {e}"))?;
        let raw = args
            .required_str("path")
            .map_err(|e| format!("Invalid arguments for {tool}: {e}"))?;
        let target = cadre_tools::paths::resolve(&raw, &self.cwd);
        self.boundary
            .allows_write(&target)
            .map_err(|why| format!("refused: {why}. Write inside the project instead."))
    }
}

/// The dispatch-time check of a child's calls: the capability set (S1) first, then a scoped
/// probe's scope (S4), a writer's boundary, then the lifecycle's tool budget (L3). It sees the arguments the tool
/// will run with (normalised by the agent loop). Refusals are counted as blocked, and only the
/// budget's count against the budget.
pub(crate) struct ChildGate {
    pub handle: Arc<TaskHandle>,
}

impl ToolGate for ChildGate {
    fn check(&self, call: &ToolCall) -> Option<String> {
        let h = &self.handle;
        let mut guard = h.data();
        let d = &mut *guard;
        if let Err(message) = check_dispatch(&h.caps, &call.name) {
            TaskHandle::refuse(d, &call.name, RefusalReason::NotAllowed);
            return Some(message);
        }
        let refused = d
            .scope
            .as_mut()
            .and_then(|s| s.check(&call.name, &call.arguments).err());
        if let Some(refusal) = refused {
            TaskHandle::refuse(d, &call.name, refusal.reason);
            return Some(refusal.message);
        }
        let outside = d
            .write_boundary
            .as_ref()
            .and_then(|gate| gate.check(&call.name, &call.arguments).err());
        if let Some(message) = outside {
            TaskHandle::refuse(d, &call.name, RefusalReason::WriteBoundary);
            return Some(message);
        }
        match d.lifecycle.on_tool_call(&call.name) {
            ToolDecision::Allow => {
                d.admitted.insert(
                    call.id.clone(),
                    (call.name.clone(), receipt_args(&call.arguments)),
                );
                None
            }
            ToolDecision::Block(message) => {
                TaskHandle::refuse(d, &call.name, RefusalReason::ToolBudget);
                Some(message)
            }
        }
    }

    fn on_unreadable(&self, call: &ToolCall) {
        let mut d = self.handle.data();
        TaskHandle::refuse(&mut d, &call.name, RefusalReason::InvalidArguments);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_protocol::{TaskBudgets, TaskUsage};
    use serde_json::json;

    use crate::orchestrator::lifecycle::LifecycleConfig;

    fn handle(max_tool_calls: Option<u32>) -> Arc<TaskHandle> {
        let (notices, _) = mpsc::unbounded_channel();
        let lifecycle = Lifecycle::new(LifecycleConfig {
            budgets: TaskBudgets {
                max_tool_calls,
                ..TaskBudgets::default()
            },
            ..LifecycleConfig::default()
        });
        let caps = CapabilitySet {
            tools: vec!["bash".into(), "ls".into()],
            dropped: Vec::new(),
        };
        Arc::new(TaskHandle::new(
            TaskRecord::default(),
            lifecycle,
            caps,
            notices,
            false,
            crate::budget::BudgetNode::root(Default::default(), Default::default()),
        ))
    }

    fn bash_call(id: &str, command: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: json!({ "command": command }),
        }
    }

    fn blocked_result(blocked: &str) -> Value {
        json!({
            "content": [{"type": "text", "text": "Command not run: ..."}],
            "details": {"exitCode": null, "blocked": blocked},
        })
    }

    fn usage(h: &TaskHandle) -> TaskUsage {
        let mut u = TaskUsage::default();
        h.data().lifecycle.write_counters(&mut u);
        u
    }

    #[test]
    fn calls_bash_refused_when_they_run_are_blocked_not_executed() {
        let h = handle(Some(1));
        let gate = ChildGate {
            handle: Arc::clone(&h),
        };
        for (i, blocked) in ["shell-policy", "sandbox-unavailable"].iter().enumerate() {
            let call = bash_call(&format!("c{i}"), "touch x");
            assert_eq!(gate.check(&call), None, "admitted at dispatch");
            h.on_tool_end(&call.id, &blocked_result(blocked), true);
        }
        let u = usage(&h);
        assert_eq!(
            (
                u.tool_calls_requested,
                u.tool_calls_executed,
                u.tool_calls_blocked
            ),
            (2, 0, 2)
        );
        // They spent no budget: a call is still admitted under `maxToolCalls: 1`.
        let ran = bash_call("ran", "true");
        assert_eq!(gate.check(&ran), None);
        h.on_tool_end(&ran.id, &json!({"content": [], "details": {}}), false);
        let receipt = h.execution_receipt().render();
        assert!(receipt.contains("Tools: 1 call (1 bash)"), "{receipt}");
        assert!(
            receipt.contains("Refused: 2 calls (1 bash: shell policy; 1 bash: no sandbox)"),
            "{receipt}"
        );
        assert!(receipt.contains("`true` (exit 0)"), "{receipt}");
        assert!(!receipt.contains("touch x"), "{receipt}");
    }

    #[test]
    fn only_a_failed_result_with_a_known_reason_is_a_refusal() {
        let h = handle(None);
        let gate = ChildGate {
            handle: Arc::clone(&h),
        };
        for (i, (result, is_error)) in [
            (blocked_result("shell-policy"), false),
            (blocked_result("something-else"), true),
            (json!({"content": [], "details": {"blocked": true}}), true),
            (json!({"content": []}), true),
        ]
        .into_iter()
        .enumerate()
        {
            let call = bash_call(&format!("c{i}"), "false");
            assert_eq!(gate.check(&call), None);
            h.on_tool_end(&call.id, &result, is_error);
        }
        let u = usage(&h);
        assert_eq!((u.tool_calls_executed, u.tool_calls_blocked), (4, 0));
        assert!(h.data().refusals.is_empty());
    }

    #[test]
    fn every_refusal_at_dispatch_is_counted_once_and_listed() {
        let h = handle(Some(1));
        let gate = ChildGate {
            handle: Arc::clone(&h),
        };
        let call = |id: &str, name: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: json!({}),
        };
        assert!(gate.check(&call("w", "write")).is_some());
        gate.on_unreadable(&call("u", "ls"));
        assert_eq!(gate.check(&call("a", "ls")), None);
        h.on_tool_end("a", &json!({"content": []}), false);
        // Past the budget (ls is in the default block list).
        assert!(gate.check(&call("b", "ls")).is_some());
        let u = usage(&h);
        assert_eq!(
            (
                u.tool_calls_requested,
                u.tool_calls_executed,
                u.tool_calls_blocked
            ),
            (4, 1, 3)
        );
        assert_eq!(
            h.data().refusals.line(),
            "Refused: 3 calls (1 write: not in its tool set; 1 ls: invalid arguments; 1 ls: tool \
             budget reached)"
        );
    }
}
