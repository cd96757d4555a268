//! The four orchestration tools (O1–O4) as ordinary [`Tool`]s. Each owns the task manager and
//! the parent it acts for; descriptions are generated from the live roster.

use std::fmt::Write as _;
use std::time::Duration;

use cadre_protocol::{TaskStatus, ToolSpec};
use cadre_tools::{Tool, ToolContext, ToolOutput};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::manager::{
    DEFAULT_OUTPUT_WAIT_MS, Delivery, EntryOutcome, LaunchError, LaunchSpec, ParentRef,
    SendOutcome, TaskManager, TaskOutcome, TaskSnapshot,
};
use super::output::neutralize;
use super::policy::usage_line;
use super::settings::SubagentSettings;
use crate::roles::Roster;

pub const SEND_MESSAGE_TOOL: &str = "SendMessage";
pub const TASK_OUTPUT_TOOL: &str = "TaskOutput";
pub const TASK_STOP_TOOL: &str = "TaskStop";

/// The four tools for the root session (a child's `Agent` tool is made by the manager).
pub fn root_tools(manager: &TaskManager, root: &ParentRef) -> Vec<std::sync::Arc<dyn Tool>> {
    vec![
        std::sync::Arc::new(AgentTool::new(manager.clone(), root.clone())),
        std::sync::Arc::new(SendMessageTool::new(manager.clone(), root.clone())),
        std::sync::Arc::new(TaskOutputTool::new(manager.clone())),
        std::sync::Arc::new(TaskStopTool::new(manager.clone())),
    ]
}

/// The root's four tool specs from what they depend on: the subagent settings, the roster
/// and whether the root polls for results. A front end can list them before its session
/// exists; the tools' own `spec` gives the same.
pub fn root_tool_specs(
    settings: &SubagentSettings,
    roster: &Roster,
    root_polls: bool,
) -> Vec<ToolSpec> {
    vec![
        agent_spec(settings, roster, root_polls),
        send_message_spec(),
        task_output_spec(root_polls),
        task_stop_spec(),
    ]
}

fn agent_spec(settings: &SubagentSettings, roster: &Roster, polls: bool) -> ToolSpec {
    let mut description = String::from(
        "Launch a subagent: a separate agent with its own context, role and tools, that works \
         on a task and returns its final answer. Use `tasks` to run independent tasks in \
         parallel in one call. A foreground call returns when the task(s) end; with \
         run_in_background it returns the task id(s) at once and each result arrives later \
         as a <task-notification> message (never poll for it).\n\nAgent types:\n",
    );
    if polls {
        description = description.replace(
            "each result arrives later as a <task-notification> message (never poll for it)",
            "TaskOutput with block=true waits for each result (no notification is sent)",
        );
    }
    description.push_str(&roster.summary());
    let _ = write!(
        description,
        "\nAt most {} tasks per call.",
        settings.max_tasks_per_launch
    );
    let mut props = task_properties();
    let entry = json!({
        "type": "object",
        "properties": props.clone(),
        "required": ["description", "prompt"]
    });
    if let Value::Object(map) = &mut props {
        map.insert(
            "tasks".into(),
            json!({
                "type": "array",
                "maxItems": settings.max_tasks_per_launch,
                "items": entry,
                "description": "Independent tasks to run in parallel (instead of the top-level description/prompt). Entries inherit the top-level warning values."
            }),
        );
    }
    ToolSpec {
        name: super::capability::AGENT_TOOL.to_string(),
        description,
        parameters: json!({"type": "object", "properties": props}),
    }
}

fn send_message_spec() -> ToolSpec {
    ToolSpec {
        name: SEND_MESSAGE_TOOL.into(),
        description: "Continue a task: a running task receives the message at its next turn; \
                      a finished one is reopened with its conversation, tools and budgets and \
                      runs again (one-shot agent types refuse). `to` is a task id, a unique id \
                      prefix or a task name."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "to": {"type": "string", "description": "Task id, unique id prefix, or name."},
                "message": {"type": "string", "description": "The message for the task."}
            },
            "required": ["to", "message"]
        }),
    }
}

fn task_output_spec(polls: bool) -> ToolSpec {
    let description = if polls {
        "Snapshot of a task: status, phase, usage, preview and output so far, and its result \
         once it has ended. Background tasks send no notification: this is how their \
         results are read. `block` waits up to timeout_ms (default 300000) for the task to \
         end."
    } else {
        "Snapshot of a task: status, phase, usage, preview and output so far. For \
         explicit status checks and diagnosis only — background results arrive \
         on their own as <task-notification> messages, so never poll. `block` \
         waits up to timeout_ms (default 300000) for the task to end."
    };
    ToolSpec {
        name: TASK_OUTPUT_TOOL.into(),
        description: description.into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "Task id, unique id prefix, or name."},
                "block": {"type": "boolean"},
                "timeout_ms": {"type": "integer", "minimum": 0}
            },
            "required": ["task_id"]
        }),
    }
}

fn task_stop_spec() -> ToolSpec {
    ToolSpec {
        name: TASK_STOP_TOOL.into(),
        description: "Stop a running task. Its partial output is kept; its status becomes \
                      stopped. Use only for explicit cancellation or clearly wasted work."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "Task id, unique id prefix, or name."}
            },
            "required": ["task_id"]
        }),
    }
}

/// `Agent`: launch one task or a parallel set (O1).
pub struct AgentTool {
    manager: TaskManager,
    parent: ParentRef,
}

impl AgentTool {
    pub fn new(manager: TaskManager, parent: ParentRef) -> AgentTool {
        AgentTool { manager, parent }
    }
}

fn task_properties() -> Value {
    json!({
        "description": {"type": "string", "description": "A short (3-5 word) description of the task."},
        "prompt": {"type": "string", "description": "The complete task for the subagent: goal, context it needs, constraints, and what to report back."},
        "subagent_type": {"type": "string", "description": "The agent type (role) to use; default general-purpose. \"fork\" continues this conversation in a child."},
        "name": {"type": "string", "description": "A name to address the task by in SendMessage/TaskOutput/TaskStop."},
        "model": {"type": "string", "description": "Model override (provider/id). Normally omit."},
        "thinking": {"type": "string", "enum": ["off", "minimal", "low", "medium", "high", "xhigh", "max"], "description": "Thinking level override. Normally omit."},
        "run_in_background": {"type": "boolean", "description": "Return at once with the task id; the result arrives later as a <task-notification>. Do not poll."},
        "isolation": {"type": "string", "enum": ["none", "worktree"], "description": "worktree: run in a separate git worktree; changes are kept there for review."},
        "cwd": {"type": "string", "description": "Working directory for the task, relative to yours."},
        "expected_output": {"type": "string", "description": "What the answer must contain; the subagent must answer every item with evidence."},
        "warning_turns": {"type": "integer", "minimum": 1, "description": "Turn of the first supervision checkpoint (default 40)."},
        "warning_interval_turns": {"type": "integer", "minimum": 0, "description": "Turns between later checkpoints (default 25)."},
        "packet": {
            "type": "object",
            "description": "Delegation packet: shared context and this child's focus, rendered before the prompt. focus_delta.tool_policy \"no tools\" gives the child no tools.",
            "properties": {
                "shared_context_summary": {"type": "object", "properties": {
                    "goal": {"type": "string"},
                    "changed_surface": {"type": ["array", "string"], "items": {"type": "string"}},
                    "project_constraints": {"type": ["array", "string"], "items": {"type": "string"}}
                }},
                "focus_delta": {"type": "object", "properties": {
                    "role": {"type": "string"},
                    "lens": {"type": "string"},
                    "specific_changes": {"type": ["array", "string"], "items": {"type": "string"}},
                    "audit_question": {"type": "string"},
                    "tool_policy": {"type": "string"},
                    "boundary": {"type": "string"}
                }}
            }
        },
        "scope": {"type": "array", "items": {"type": "string"}, "description": "Paths a bounded probe may read."},
        "stop_condition": {"type": "string", "description": "When a bounded probe must stop and report."},
        "review": {"type": "boolean", "description": "code and general-purpose only: after the task an independent read-only reviewer checks the change; anything but a verified PASS fails the task (one fix round)."},
        "output_schema": {"type": "object", "description": "A JSON Schema: the subagent must answer by calling structured_output with a matching JSON value, which you get back as its result."}
    })
}

impl Tool for AgentTool {
    fn name(&self) -> &str {
        super::capability::AGENT_TOOL
    }

    fn spec(&self) -> ToolSpec {
        agent_spec(
            self.manager.settings(),
            self.manager.roster(),
            self.manager.parent_polls(&self.parent),
        )
    }

    fn execute<'a>(&'a self, args: Value, ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let polls = self.manager.parent_polls(&self.parent);
            let mut spec: LaunchSpec = match serde_json::from_value(args.clone()) {
                Ok(s) => s,
                Err(e) => return ToolOutput::error(format!("invalid Agent arguments: {e}")),
            };
            spec.raw = Some(args);
            let single = spec.tasks.is_empty();
            match self
                .manager
                .launch(&self.parent, spec, Some(ctx.cancel.clone()))
                .await
            {
                Err(e) => refused(&e),
                Ok(entries) if single => match entries.into_iter().next() {
                    Some(EntryOutcome::Started(o)) => ToolOutput::ok(format_outcome_for(&o, polls)),
                    Some(EntryOutcome::Refused { error, .. }) => refused(&error),
                    None => ToolOutput::error("no task was launched"),
                },
                Ok(entries) => entries_output(&entries, polls),
            }
        })
    }
}

/// The key of a refusal in a tool result's `details`: `{"refusal": {"code": "plan_mode"}}`.
pub const REFUSAL_DETAILS_KEY: &str = "refusal";

/// The key of a `tasks` launch's refused entries in its result's `details`:
/// `{"refusals": [{"task": 2, "code": "unknown_role"}]}` (`task` counts from 1, as the text's
/// `## Task 2` does).
pub const REFUSALS_DETAILS_KEY: &str = "refusals";

/// A refused launch or task operation as the tool result the model reads: its message as the
/// text, its code in `details` for front ends (the one place a refusal becomes a tool result).
pub fn refused(e: &LaunchError) -> ToolOutput {
    ToolOutput::error(e.to_string())
        .with_details(json!({ REFUSAL_DETAILS_KEY: { "code": e.code().as_str() } }))
}

/// A `tasks` launch's result: every entry's text, and the codes of the entries refused.
fn entries_output(entries: &[EntryOutcome], polls: bool) -> ToolOutput {
    let text = format_entries_for(entries, polls);
    let refusals: Vec<Value> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            EntryOutcome::Refused { error, .. } => {
                Some(json!({ "task": i + 1, "code": error.code().as_str() }))
            }
            EntryOutcome::Started(_) => None,
        })
        .collect();
    if refusals.is_empty() {
        ToolOutput::ok(text)
    } else {
        ToolOutput::ok(text).with_details(json!({ REFUSALS_DETAILS_KEY: refusals }))
    }
}

/// The refusal code a tool result's `details` carry (see [`refused`]), for front ends that
/// put it on their wire.
pub fn refusal_code(details: Option<&Value>) -> Option<&str> {
    details?.get(REFUSAL_DETAILS_KEY)?.get("code")?.as_str()
}

/// One task's result for a parent that gets task notices.
pub fn format_outcome(o: &TaskOutcome) -> String {
    format_outcome_for(o, false)
}

/// One task's result for the parent; `polls`: the parent gets no notices and reads results
/// with `TaskOutput` (see [`TaskManager::parent_polls`]).
pub fn format_outcome_for(o: &TaskOutcome, polls: bool) -> String {
    let mut t = String::new();
    // A nested task's name and description were written by its parent, a child model.
    let name = o
        .name
        .as_deref()
        .map(|n| format!(" name={}", neutralize(n)))
        .unwrap_or_default();
    let description = neutralize(&o.description);
    match o.delivery {
        Delivery::Background if polls => {
            let _ = write!(
                t,
                "Launched {} \"{}\" in the background: task_id={}{name}. No notification is sent \
                 when it ends: call TaskOutput with this task_id (block=true waits for the end) \
                 for its result.",
                o.agent, description, o.task_id
            );
            return t;
        }
        Delivery::Promoted if polls => {
            let _ = write!(
                t,
                "Task {}{name} ({} \"{}\") is running (supervised background): it reached a \
                 supervision checkpoint, so this call returns now. Call TaskOutput with this \
                 task_id (block=true waits for the end) for its result.",
                o.task_id, o.agent, description
            );
            return t;
        }
        Delivery::Background => {
            let _ = write!(
                t,
                "Launched {} \"{}\" in the background: task_id={}{name}. Its result will arrive \
                 as a <task-notification> message when it ends; do not poll TaskOutput for it.",
                o.agent, description, o.task_id
            );
            return t;
        }
        Delivery::Promoted => {
            let _ = write!(
                t,
                "Task {}{name} ({} \"{}\") is running (supervised background): it reached a \
                 supervision checkpoint, so this call returns now. Its result will arrive as a \
                 <task-notification> message; progress warnings report its state.",
                o.task_id, o.agent, description
            );
            return t;
        }
        Delivery::Finished => {}
    }
    let _ = write!(
        t,
        "Task {}{name} ({} \"{}\"): {}",
        o.task_id,
        o.agent,
        description,
        o.status.as_str()
    );
    if let Some(kind) = o.termination.filter(|_| o.status != TaskStatus::Completed) {
        let _ = write!(t, " ({})", kind.as_str());
    }
    t.push('\n');
    // The error, the diff stat (file names the child chose) and the preview can carry child
    // text: like the result, they must not open or close one of cadre's elements (V3).
    if let Some(e) = &o.error {
        let _ = writeln!(t, "Error: {}", neutralize(e));
    }
    let _ = writeln!(t, "Usage: {}", usage_line(&o.usage));
    let _ = writeln!(t, "Output file: {}", o.output_file);
    if let Some(w) = &o.worktree {
        if w.kept {
            let _ = writeln!(
                t,
                "Worktree kept: {} (branch {}){}",
                w.path,
                w.branch,
                w.diff_stat
                    .as_deref()
                    .map(|s| format!("\n{}", neutralize(s.trim_end())))
                    .unwrap_or_default()
            );
        } else {
            let _ = writeln!(t, "Worktree removed (no changes).");
        }
    }
    if !o.receipt.is_empty() {
        t.push_str(o.receipt.trim_end());
        t.push('\n');
    }
    t.push_str("<result>\n");
    if !o.result.trim().is_empty() {
        t.push_str(o.result.trim_end());
        t.push('\n');
    }
    t.push_str("</result>");
    t
}

/// A `tasks` launch: every entry, each marked ok or degraded (V6).
pub fn format_entries(entries: &[EntryOutcome]) -> String {
    format_entries_for(entries, false)
}

/// [`format_entries`] for a parent that polls or not (see [`format_outcome_for`]).
pub fn format_entries_for(entries: &[EntryOutcome], polls: bool) -> String {
    let ok = entries
        .iter()
        .filter(|e| matches!(e, EntryOutcome::Started(o) if o.is_ok()))
        .count();
    let mut t = format!(
        "{} tasks: {ok} ok, {} degraded.\n",
        entries.len(),
        entries.len() - ok
    );
    for (i, e) in entries.iter().enumerate() {
        match e {
            EntryOutcome::Started(o) => {
                let mark = if o.is_ok() { "ok" } else { "degraded" };
                let _ = write!(
                    t,
                    "\n## Task {} [{mark}]\n{}\n",
                    i + 1,
                    format_outcome_for(o, polls)
                );
            }
            EntryOutcome::Refused { description, error } => {
                let _ = write!(
                    t,
                    "\n## Task {} [degraded]\n\"{description}\" was not started: {error}\n",
                    i + 1
                );
            }
        }
    }
    t
}

fn format_snapshot(s: &TaskSnapshot) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "Task {}{} ({} \"{}\"): status {}, phase {:?}{}",
        s.task_id,
        s.name
            .as_deref()
            .map(|n| format!(" name={}", neutralize(n)))
            .unwrap_or_default(),
        s.agent,
        neutralize(&s.description),
        s.status.as_str(),
        s.phase,
        s.termination
            .map(|k| format!(", termination {}", k.as_str()))
            .unwrap_or_default()
    );
    let _ = writeln!(t, "Usage: {}", usage_line(&s.usage));
    if let Some(e) = &s.error {
        let _ = writeln!(t, "Error: {}", neutralize(e));
    }
    if !s.preview.is_empty() {
        let _ = writeln!(t, "Preview: {}", neutralize(&s.preview));
    }
    let _ = writeln!(t, "Output file: {}", s.output_file);
    t.push_str("<output>\n");
    if !s.output.trim().is_empty() {
        t.push_str(s.output.trim_end());
        t.push('\n');
    }
    t.push_str("</output>");
    t
}

/// `SendMessage{to, message}` (O2).
pub struct SendMessageTool {
    manager: TaskManager,
    parent: ParentRef,
}

impl SendMessageTool {
    pub fn new(manager: TaskManager, parent: ParentRef) -> SendMessageTool {
        SendMessageTool { manager, parent }
    }
}

#[derive(Deserialize)]
struct SendArgs {
    to: String,
    message: String,
}

impl Tool for SendMessageTool {
    fn name(&self) -> &str {
        SEND_MESSAGE_TOOL
    }

    fn spec(&self) -> ToolSpec {
        send_message_spec()
    }

    fn execute<'a>(&'a self, args: Value, _ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let a: SendArgs = match serde_json::from_value(args) {
                Ok(a) => a,
                Err(e) => return ToolOutput::error(format!("invalid SendMessage arguments: {e}")),
            };
            match self
                .manager
                .send_message(&self.parent, &a.to, &a.message)
                .await
            {
                Ok(SendOutcome::Steered { task_id }) => ToolOutput::ok(format!(
                    "Message delivered to running task {task_id}; it will see it at its next turn."
                )),
                Ok(SendOutcome::ResumedInBackground { task_id }) => ToolOutput::ok(format!(
                    "Task {task_id} resumed in the background; its result will arrive as a \
                     <task-notification> message."
                )),
                Ok(SendOutcome::Continued(o)) => ToolOutput::ok(format_outcome_for(
                    &o,
                    self.manager.parent_polls(&self.parent),
                )),
                Err(e) => refused(&e),
            }
        })
    }
}

/// `TaskOutput{task_id, block?, timeout_ms?}` (O3).
pub struct TaskOutputTool {
    manager: TaskManager,
}

impl TaskOutputTool {
    pub fn new(manager: TaskManager) -> TaskOutputTool {
        TaskOutputTool { manager }
    }
}

#[derive(Deserialize)]
struct OutputArgs {
    task_id: String,
    #[serde(default)]
    block: bool,
    timeout_ms: Option<u64>,
}

impl Tool for TaskOutputTool {
    fn name(&self) -> &str {
        TASK_OUTPUT_TOOL
    }

    fn spec(&self) -> ToolSpec {
        task_output_spec(self.manager.root_polls())
    }

    fn execute<'a>(&'a self, args: Value, _ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let a: OutputArgs = match serde_json::from_value(args) {
                Ok(a) => a,
                Err(e) => return ToolOutput::error(format!("invalid TaskOutput arguments: {e}")),
            };
            let wait = Duration::from_millis(a.timeout_ms.unwrap_or(DEFAULT_OUTPUT_WAIT_MS));
            match self.manager.task_output(&a.task_id, a.block, wait).await {
                Ok(s) => ToolOutput::ok(format_snapshot(&s)),
                Err(e) => refused(&e),
            }
        })
    }
}

/// `TaskStop{task_id}` (O4).
pub struct TaskStopTool {
    manager: TaskManager,
}

impl TaskStopTool {
    pub fn new(manager: TaskManager) -> TaskStopTool {
        TaskStopTool { manager }
    }
}

#[derive(Deserialize)]
struct StopArgs {
    task_id: String,
}

impl Tool for TaskStopTool {
    fn name(&self) -> &str {
        TASK_STOP_TOOL
    }

    fn spec(&self) -> ToolSpec {
        task_stop_spec()
    }

    fn execute<'a>(&'a self, args: Value, _ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let a: StopArgs = match serde_json::from_value(args) {
                Ok(a) => a,
                Err(e) => return ToolOutput::error(format!("invalid TaskStop arguments: {e}")),
            };
            match self.manager.stop(&a.task_id).await {
                Ok(s) => ToolOutput::ok(format_snapshot(&s)),
                Err(e) => refused(&e),
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::orchestrator::manager::RefusalCode;
    use cadre_protocol::{TaskPhase, TaskUsage, TerminationKind, WorktreeInfo};

    fn outcome(delivery: Delivery, status: TaskStatus) -> TaskOutcome {
        TaskOutcome {
            task_id: "0192-abc".into(),
            name: Some("scout".into()),
            agent: "Explore".into(),
            description: "map auth".into(),
            delivery,
            status,
            phase: TaskPhase::Terminal,
            termination: Some(TerminationKind::Normal),
            result: "the answer".into(),
            truncated: false,
            error: None,
            output_file: "/tmp/out.md".into(),
            usage: TaskUsage::default(),
            worktree: None,
            receipt: "<execution-receipt>\nTools: 0 calls\n</execution-receipt>".into(),
        }
    }

    #[test]
    fn a_finished_task_shows_status_usage_file_and_result() {
        let t = format_outcome(&outcome(Delivery::Finished, TaskStatus::Completed));
        assert!(t.starts_with("Task 0192-abc name=scout (Explore \"map auth\"): completed\n"));
        assert!(t.contains("Usage: turns 0"));
        assert!(t.contains("Output file: /tmp/out.md"));
        assert!(t.ends_with("<result>\nthe answer\n</result>"));
        assert!(!t.contains("(normal)"));
    }

    #[test]
    fn a_degraded_task_shows_its_termination_error_and_worktree() {
        let mut o = outcome(Delivery::Finished, TaskStatus::Partial);
        o.termination = Some(TerminationKind::Timeout);
        o.error = Some("Operation aborted".into());
        o.result = String::new();
        o.worktree = Some(WorktreeInfo {
            path: "/w".into(),
            branch: "cadre-1234abcd".into(),
            kept: true,
            diff_stat: Some(" a.txt | 1 +\n".into()),
            ..WorktreeInfo::default()
        });
        let t = format_outcome(&o);
        assert!(t.contains("partial (timeout)"));
        assert!(t.contains("Error: Operation aborted"));
        assert!(t.contains("Worktree kept: /w (branch cadre-1234abcd)\n a.txt | 1 +"));
        assert!(t.ends_with("<result>\n</result>"));
        o.worktree.as_mut().unwrap().kept = false;
        assert!(format_outcome(&o).contains("Worktree removed (no changes)."));
    }

    #[test]
    fn background_and_promoted_tasks_say_where_the_result_will_come() {
        let t = format_outcome(&outcome(Delivery::Background, TaskStatus::Running));
        assert!(t.contains("in the background: task_id=0192-abc"));
        assert!(t.contains("do not poll"));
        let t = format_outcome(&outcome(Delivery::Promoted, TaskStatus::Running));
        assert!(t.contains("running (supervised background)"));
    }

    #[test]
    fn a_parent_that_polls_is_told_to_call_task_output() {
        for delivery in [Delivery::Background, Delivery::Promoted] {
            let t = format_outcome_for(&outcome(delivery, TaskStatus::Running), true);
            assert!(
                t.contains("call TaskOutput") || t.contains("Call TaskOutput"),
                "{t}"
            );
            assert!(!t.contains("do not poll"), "{t}");
            assert!(!t.contains("task-notification"), "{t}");
        }
    }

    #[test]
    fn a_task_set_marks_each_entry() {
        let entries = vec![
            EntryOutcome::Started(Box::new(outcome(Delivery::Finished, TaskStatus::Completed))),
            EntryOutcome::Started(Box::new(outcome(Delivery::Finished, TaskStatus::Failed))),
            EntryOutcome::Refused {
                description: "bad one".into(),
                error: LaunchError::Invalid("`prompt` must not be empty".into()),
            },
        ];
        let t = format_entries(&entries);
        assert!(t.starts_with("3 tasks: 1 ok, 2 degraded.\n"));
        assert!(t.contains("## Task 1 [ok]"));
        assert!(t.contains("## Task 2 [degraded]"));
        assert!(t.contains(
            "## Task 3 [degraded]\n\"bad one\" was not started: invalid Agent call: `prompt` must not be empty"
        ));
    }

    #[test]
    fn a_refusal_keeps_its_text_and_carries_its_code_in_details() {
        let e = LaunchError::DepthLimit { max_depth: 2 };
        let out = refused(&e);
        assert!(out.is_error);
        let cadre_protocol::ContentBlock::Text { text } = &out.content[0] else {
            panic!("not text")
        };
        assert_eq!(text, &e.to_string());
        assert_eq!(
            out.details,
            Some(json!({"refusal": {"code": "depth_limit"}}))
        );
        assert_eq!(refusal_code(out.details.as_ref()), Some("depth_limit"));
        let budget = refused(&LaunchError::BudgetExhausted(crate::budget::Exhausted {
            meter: cadre_protocol::Meter::Cost,
            spent: cadre_protocol::Spend {
                tokens: 0,
                cost_usd: 0.5,
            },
            cap: cadre_protocol::Limits {
                max_cost_usd: Some(0.5),
                max_tokens: None,
            },
        }));
        assert_eq!(
            refusal_code(budget.details.as_ref()),
            Some("budget_exhausted")
        );
        assert_eq!(refusal_code(None), None);
        assert_eq!(refusal_code(Some(&json!({"other": 1}))), None);
    }

    #[test]
    fn a_task_set_lists_the_codes_of_its_refused_entries() {
        let entries = vec![
            EntryOutcome::Started(Box::new(outcome(Delivery::Finished, TaskStatus::Completed))),
            EntryOutcome::Refused {
                description: "writer".into(),
                error: LaunchError::refused(RefusalCode::PlanMode, "plan mode: no"),
            },
        ];
        let out = entries_output(&entries, false);
        assert!(!out.is_error);
        assert_eq!(
            out.details,
            Some(json!({"refusals": [{"task": 2, "code": "plan_mode"}]}))
        );
        let all_ok = entries_output(&entries[..1], false);
        assert_eq!(all_ok.details, None);
    }
}
