//! What the editor sees of a session: host events turned into ACP `session/update`s.
//!
//! The root's streamed text and reasoning become message and thought chunks; each tool call a
//! `tool_call` when it starts and a `tool_call_update` when it ends. Child tasks are shown in
//! one of two ways. An editor that declares the `subagents` capability gets each child as a
//! subagent session: announced with a `subagent_update` on its parent's session, its turns as
//! message chunks on its own session, its end as an idle state. Any other editor sees a
//! foreground child as lines of progress (turns, tool calls, tokens) in the content of the
//! `Agent` call that launched it, and a background child as a tool call of its own that
//! completes when the task ends.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use cadre_core::orchestrator::manager::TaskEvent;
use cadre_host::HostEvent;
use cadre_host::SessionTasks;
use cadre_protocol::{AgentEvent, AssistantMessageEvent, TaskStatus};
use serde_json::{Value, json};

use super::tools;

/// The longest tool output shown in one update (the model sees the tool's own truncation;
/// this only keeps the editor's updates small).
const MAX_SHOWN_OUTPUT: usize = 16 * 1024;

/// One `session/update`: the session it is sent on and the update itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub session: String,
    pub update: Value,
}

/// The `Agent` call running now, shared with the launch confirmer (a permission request
/// names the call it is about).
pub type CurrentCall = Arc<tokio::sync::watch::Sender<Option<String>>>;

pub struct View {
    session: String,
    cwd: PathBuf,
    subagents: bool,
    /// Tool calls started and not ended: name and arguments.
    calls: HashMap<String, (String, Value)>,
    /// `Agent` calls in progress, oldest first.
    agent_calls: Vec<String>,
    /// `Agent` calls that have ended: their content holds the result now, and a late task
    /// event must not replace it.
    ended_calls: std::collections::HashSet<String>,
    current: CurrentCall,
    tasks: HashMap<String, TaskView>,
    /// Where an ended task's output is read from.
    session_tasks: Option<SessionTasks>,
}

struct TaskView {
    /// The `Agent` call whose content shows this task, or the task's own call (background).
    call: String,
    own_call: bool,
    /// The session a subagent update for this task is sent on (its parent's).
    parent_session: String,
    label: String,
    /// The latest counts (turns, tool calls, tokens) and preview.
    state: String,
}

impl View {
    pub fn new(
        session: String,
        cwd: PathBuf,
        subagents: bool,
        current: CurrentCall,
        session_tasks: Option<SessionTasks>,
    ) -> View {
        View {
            session,
            cwd,
            subagents,
            calls: HashMap::new(),
            agent_calls: Vec::new(),
            ended_calls: std::collections::HashSet::new(),
            current,
            tasks: HashMap::new(),
            session_tasks,
        }
    }

    /// An ended task's output (its result), if it has one.
    fn output_of(&self, task_id: &str) -> Option<String> {
        let snapshot = self.session_tasks.as_ref()?.snapshot(task_id).ok()?;
        let output = snapshot.output.trim();
        (!output.is_empty()).then(|| tail(output).to_string())
    }

    pub fn on_event(&mut self, event: &HostEvent) -> Vec<Update> {
        match event {
            HostEvent::Agent(event) => self.on_agent(event),
            HostEvent::Task(event) => self.on_task(event),
        }
    }

    fn here(&self, update: Value) -> Update {
        Update {
            session: self.session.clone(),
            update,
        }
    }

    fn on_agent(&mut self, event: &AgentEvent) -> Vec<Update> {
        match event {
            AgentEvent::MessageUpdate {
                assistant_message_event,
                ..
            } => match assistant_message_event {
                AssistantMessageEvent::TextDelta { delta, .. } if !delta.is_empty() => {
                    vec![self.here(chunk("agent_message_chunk", delta))]
                }
                AssistantMessageEvent::ThinkingDelta { delta, .. } if !delta.is_empty() => {
                    vec![self.here(chunk("agent_thought_chunk", delta))]
                }
                _ => Vec::new(),
            },
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                self.calls
                    .insert(tool_call_id.clone(), (tool_name.clone(), args.clone()));
                if tool_name == "Agent" {
                    self.agent_calls.push(tool_call_id.clone());
                    self.set_current();
                }
                vec![self.here(tool_call_start(
                    tool_call_id,
                    tool_name,
                    args,
                    &self.cwd,
                    "in_progress",
                ))]
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                partial_result,
                ..
            } if tool_name != "Agent" => {
                let text = tools::result_text(partial_result);
                if text.is_empty() {
                    return Vec::new();
                }
                vec![self.here(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": tool_call_id,
                    "content": [tools::text_content(tail(&text))],
                }))]
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
            } => {
                let args = self
                    .calls
                    .remove(tool_call_id)
                    .map(|(_, args)| args)
                    .unwrap_or(Value::Null);
                let mut content = Vec::new();
                if tool_name == "Agent" {
                    self.agent_calls.retain(|c| c != tool_call_id);
                    self.ended_calls.insert(tool_call_id.clone());
                    self.set_current();
                    content.extend(self.progress_of(tool_call_id));
                } else if !is_error {
                    content.extend(tools::diffs(tool_name, &args, &self.cwd));
                }
                let text = tools::result_text(result);
                if !text.is_empty() {
                    content.push(tools::text_content(tail(&text)));
                }
                let mut update = json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": tool_call_id,
                    "status": if *is_error { "failed" } else { "completed" },
                    "content": content,
                });
                if let Some(meta) = tools::refusal_meta(result.get("details")) {
                    update["_meta"] = meta;
                }
                vec![self.here(update)]
            }
            _ => Vec::new(),
        }
    }

    fn set_current(&self) {
        self.current.send_replace(self.agent_calls.last().cloned());
    }

    /// The progress lines of the tasks an `Agent` call shows (in subagent mode, the child
    /// sessions it started), as tool-call content.
    fn progress_of(&self, call: &str) -> Vec<Value> {
        if self.subagents {
            return self.session_refs(call);
        }
        let mut lines: Vec<&TaskView> = self
            .tasks
            .values()
            .filter(|t| t.call == call && !t.own_call)
            .collect();
        lines.sort_by(|a, b| a.label.cmp(&b.label));
        lines
            .into_iter()
            .map(|t| tools::text_content(&t.line()))
            .collect()
    }

    fn on_task(&mut self, event: &TaskEvent) -> Vec<Update> {
        match event {
            TaskEvent::Started {
                task_id,
                parent_task_id,
                agent,
                description,
                background,
                ..
            } => self.task_started(
                task_id,
                parent_task_id.as_deref(),
                agent,
                description,
                *background,
            ),
            TaskEvent::Turn {
                task_id,
                usage,
                preview,
                ..
            } => {
                let Some(task) = self.tasks.get_mut(task_id) else {
                    return Vec::new();
                };
                let tokens = usage.tokens.input + usage.tokens.output;
                task.state = format!(
                    "turn {}, {} tool call{}, {tokens} tokens — {}",
                    usage.turns,
                    usage.tool_calls_executed,
                    if usage.tool_calls_executed == 1 {
                        ""
                    } else {
                        "s"
                    },
                    preview.trim()
                );
                if self.subagents {
                    if preview.trim().is_empty() {
                        return Vec::new();
                    }
                    return vec![Update {
                        session: task_id.clone(),
                        update: chunk("agent_message_chunk", &format!("{}\n", preview.trim())),
                    }];
                }
                self.task_progress(task_id, None)
            }
            TaskEvent::Ended {
                task_id, status, ..
            } => {
                let Some(task) = self.tasks.get_mut(task_id) else {
                    return Vec::new();
                };
                task.state = match task.state.split_once(" — ") {
                    Some((counts, _)) => format!("{} ({counts})", status.as_str()),
                    None => status.as_str().to_string(),
                };
                if self.subagents {
                    let stop = match status {
                        TaskStatus::Completed | TaskStatus::Partial => json!("end_turn"),
                        TaskStatus::Stopped => json!("cancelled"),
                        TaskStatus::Failed | TaskStatus::Running => json!("error"),
                    };
                    let parent = task.parent_session.clone();
                    let mut out = Vec::new();
                    if let Some(output) = self.output_of(task_id) {
                        out.push(Update {
                            session: task_id.clone(),
                            update: chunk("agent_message_chunk", &output),
                        });
                    }
                    out.push(Update {
                        session: parent,
                        update: json!({
                            "sessionUpdate": "subagent_update",
                            "sessionId": task_id,
                            "state": {"state": "idle", "stopReason": stop},
                        }),
                    });
                    return out;
                }
                let done = match status {
                    TaskStatus::Completed | TaskStatus::Partial => "completed",
                    _ => "failed",
                };
                let mut out = self.task_progress(task_id, Some(done));
                // A background task's own call ends with the task's result.
                if let Some(last) = out.last_mut()
                    && last.update.get("status").is_some()
                    && let Some(output) = self.output_of(task_id)
                    && let Some(content) = last.update["content"].as_array_mut()
                {
                    content.push(tools::text_content(&output));
                }
                out
            }
        }
    }

    fn task_started(
        &mut self,
        task_id: &str,
        parent: Option<&str>,
        agent: &str,
        description: &str,
        background: bool,
    ) -> Vec<Update> {
        let label = format!("{agent} \"{}\" ({task_id})", description.trim());
        // A nested task shows where its top-level ancestor shows.
        let ancestor = parent.and_then(|p| self.tasks.get(p));
        let parent_session = match parent {
            Some(p) if self.subagents => p.to_string(),
            _ => self.session.clone(),
        };
        let (call, own_call) = match (ancestor, self.agent_calls.last()) {
            (Some(a), _) => (a.call.clone(), a.own_call),
            (None, Some(call)) if !background => (call.clone(), false),
            _ => (format!("task-{task_id}"), true),
        };
        self.tasks.insert(
            task_id.to_string(),
            TaskView {
                call: call.clone(),
                own_call,
                parent_session: parent_session.clone(),
                label: label.clone(),
                state: "started".into(),
            },
        );
        if self.subagents {
            let mut out = vec![Update {
                session: parent_session,
                update: json!({
                    "sessionUpdate": "subagent_update",
                    "sessionId": task_id,
                    "title": description.trim(),
                    "description": format!("{agent} task {task_id}"),
                    "cwd": self.cwd,
                    "state": {"state": "running"},
                }),
            }];
            if !own_call && !self.ended_calls.contains(&call) {
                out.push(self.here(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call,
                    "content": self.session_refs(&call),
                })));
            }
            return out;
        }
        if own_call && parent.is_none() {
            return vec![self.here(json!({
                "sessionUpdate": "tool_call",
                "toolCallId": call,
                "title": format!("Agent (background): {}", description.trim()),
                "kind": "think",
                "status": "in_progress",
                "content": [tools::text_content(&format!("{label}: started"))],
            }))];
        }
        self.task_progress(task_id, None)
    }

    /// Subagent mode: the `Agent` call's content names the child sessions it started.
    fn session_refs(&self, call: &str) -> Vec<Value> {
        let mut ids: Vec<&String> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.call == call && !t.own_call)
            .map(|(id, _)| id)
            .collect();
        ids.sort();
        ids.into_iter()
            .map(|id| json!({"type": "session", "sessionId": id}))
            .collect()
    }

    /// The update of the call that shows `task_id`'s progress; `status` ends a task's own call.
    fn task_progress(&self, task_id: &str, status: Option<&str>) -> Vec<Update> {
        let Some(task) = self.tasks.get(task_id) else {
            return Vec::new();
        };
        if !task.own_call && self.ended_calls.contains(&task.call) {
            return Vec::new();
        }
        let content: Vec<Value> = if task.own_call {
            // A background task's own call: its lines (and those of its nested tasks).
            let mut lines: Vec<&TaskView> = self
                .tasks
                .values()
                .filter(|t| t.call == task.call)
                .collect();
            lines.sort_by(|a, b| a.label.cmp(&b.label));
            lines
                .into_iter()
                .map(|t| tools::text_content(&t.line()))
                .collect()
        } else {
            self.progress_of(&task.call)
        };
        let mut update = json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": task.call,
            "content": content,
        });
        // Only the task the call was made for ends it, not a nested one.
        if let Some(status) = status
            && task.own_call
            && task.call == format!("task-{task_id}")
        {
            update["status"] = json!(status);
        }
        vec![self.here(update)]
    }
}

impl TaskView {
    fn line(&self) -> String {
        format!("{}: {}", self.label, self.state)
    }
}

/// A message or thought chunk of text.
pub fn chunk(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

/// The `tool_call` update that announces a call.
pub fn tool_call_start(
    id: &str,
    name: &str,
    args: &Value,
    cwd: &std::path::Path,
    status: &str,
) -> Value {
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "name": name,
        "title": tools::title(name, args),
        "kind": tools::kind(name),
        "status": status,
        "rawInput": args,
        "locations": tools::locations(name, args, cwd),
        "content": tools::diffs(name, args, cwd),
    })
}

/// The end of `text`, at most [`MAX_SHOWN_OUTPUT`] bytes (the newest output matters most).
pub fn tail(text: &str) -> &str {
    if text.len() <= MAX_SHOWN_OUTPUT {
        return text;
    }
    let mut start = text.len() - MAX_SHOWN_OUTPUT;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}
