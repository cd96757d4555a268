//! The JSON shapes front ends show: Pi's `Model` object and session stats, and cadre's task
//! snapshots and task events. One place, so RPC, MCP and ACP say the same thing.

use cadre_core::orchestrator::manager::{TaskEvent, TaskSnapshot};
use cadre_llm::Model;
use cadre_protocol::{ContentBlock, Message};
use serde_json::{Value, json};

/// Pi's `Model` object (`get_state`, `set_model`, `get_available_models`).
pub fn model_json(model: &Model) -> Value {
    json!({
        "id": model.id,
        "name": model.name,
        "api": model.api.as_str(),
        "provider": model.provider,
        "baseUrl": model.base_url,
        "reasoning": model.reasoning,
        "input": ["text"],
        "contextWindow": model.context_window,
        "maxTokens": model.max_tokens,
        "cost": {
            "input": model.cost.input,
            "output": model.cost.output,
            "cacheRead": model.cost.cache_read,
            "cacheWrite": model.cost.cache_write,
        },
    })
}

/// Pi's `get_session_stats` data for `messages`, minus `contextUsage` (added by the caller
/// when it knows the context window).
pub fn session_stats_json(
    messages: &[Message],
    session_file: Option<&std::path::Path>,
    session_id: &str,
) -> Value {
    let mut users = 0;
    let mut assistants = 0;
    let mut results = 0;
    let mut calls = 0;
    let mut usage = cadre_protocol::Usage::default();
    for message in messages {
        match message {
            Message::User(_) => users += 1,
            Message::Assistant(a) => {
                assistants += 1;
                calls += a
                    .content
                    .iter()
                    .filter(|b| matches!(b, ContentBlock::ToolCall(_)))
                    .count();
                usage.add(&a.usage);
            }
            Message::ToolResult(_) => results += 1,
            _ => {}
        }
    }
    json!({
        "sessionFile": session_file.map(|p| p.to_string_lossy().into_owned()),
        "sessionId": session_id,
        "userMessages": users,
        "assistantMessages": assistants,
        "toolCalls": calls,
        "toolResults": results,
        "totalMessages": messages.len(),
        "tokens": {
            "input": usage.input,
            "output": usage.output,
            "cacheRead": usage.cache_read,
            "cacheWrite": usage.cache_write,
            "total": usage.input + usage.output + usage.cache_read + usage.cache_write,
        },
        "cost": usage.cost.total,
    })
}

/// The text of the last assistant message, `None` when there is none.
pub fn last_assistant_text(messages: &[Message]) -> Option<String> {
    messages.iter().rev().find_map(|m| match m {
        Message::Assistant(a) => Some(a.text()),
        _ => None,
    })
}

/// A task as front ends show it.
pub fn task_json(t: &TaskSnapshot) -> Value {
    json!({
        "taskId": t.task_id,
        "name": t.name,
        "agent": t.agent,
        "description": t.description,
        "status": t.status.as_str(),
        "phase": t.phase,
        "termination": t.termination,
        "usage": t.usage,
        "preview": t.preview,
        "outputFile": t.output_file,
        "error": t.error,
        "worktree": t.worktree,
    })
}

/// A task event as a front-end event line: `task_start`, `task_update` (a turn ended) and
/// `task_end`.
pub fn task_event_json(event: &TaskEvent) -> Value {
    match event {
        TaskEvent::Started {
            task_id,
            parent_task_id,
            name,
            agent,
            description,
            background,
            phase,
        } => json!({
            "type": "task_start",
            "taskId": task_id,
            "parentTaskId": parent_task_id,
            "name": name,
            "agent": agent,
            "description": description,
            "background": background,
            "phase": phase,
        }),
        TaskEvent::Turn {
            task_id,
            usage,
            preview,
            phase,
            budget,
        } => with_budget(
            json!({
                "type": "task_update",
                "taskId": task_id,
                "usage": usage,
                "preview": preview,
                "phase": phase,
            }),
            budget,
        ),
        TaskEvent::Ended {
            task_id,
            status,
            termination,
            budget,
        } => with_budget(
            json!({
                "type": "task_end",
                "taskId": task_id,
                "status": status.as_str(),
                "termination": termination,
            }),
            budget,
        ),
    }
}

/// A task's budget goes in its event only under a cap (cadre's addition to the event).
fn with_budget(mut event: Value, budget: &Option<cadre_protocol::BudgetState>) -> Value {
    if let Some(b) = budget {
        event["budget"] = json!(b);
    }
    event
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_protocol::{TaskPhase, TaskUsage};

    #[test]
    fn task_events_carry_the_name_and_the_phase() {
        let start = task_event_json(&TaskEvent::Started {
            task_id: "t1".into(),
            parent_task_id: None,
            name: Some("auth-scan".into()),
            agent: "Explore".into(),
            description: "scan".into(),
            background: false,
            phase: TaskPhase::Starting,
        });
        assert_eq!(start["type"], "task_start");
        assert_eq!(start["name"], "auth-scan");
        assert_eq!(start["phase"], "starting");
        let unnamed = task_event_json(&TaskEvent::Started {
            task_id: "t2".into(),
            parent_task_id: Some("t1".into()),
            name: None,
            agent: "Explore".into(),
            description: "scan".into(),
            background: true,
            phase: TaskPhase::Working,
        });
        assert_eq!(unnamed["name"], Value::Null);
        assert_eq!(unnamed["phase"], "working");
        let update = task_event_json(&TaskEvent::Turn {
            budget: None,
            task_id: "t1".into(),
            usage: TaskUsage::default(),
            preview: "looking".into(),
            phase: TaskPhase::FinalHandoff,
        });
        assert_eq!(update["type"], "task_update");
        assert_eq!(update["phase"], "final_handoff");
        assert_eq!(update["preview"], "looking");
    }

    // ------------------------------------------------------------ snapshots of the wire shapes

    fn pretty(v: &Value) -> String {
        serde_json::to_string_pretty(v).unwrap()
    }

    fn usage() -> TaskUsage {
        TaskUsage {
            tokens: cadre_protocol::Usage {
                input: 1200,
                output: 340,
                cache_read: 800,
                cache_write: 100,
                total_tokens: 2440,
                cost: cadre_protocol::UsageCost {
                    total: 0.0125,
                    ..Default::default()
                },
            },
            turns: 7,
            tool_calls_requested: 12,
            tool_calls_executed: 10,
            tool_calls_blocked: 2,
        }
    }

    #[test]
    fn task_event_lines() {
        use cadre_protocol::{TaskStatus, TerminationKind};
        let events = [
            TaskEvent::Started {
                task_id: "t-0001".into(),
                parent_task_id: Some("t-0000".into()),
                name: Some("auth-scan".into()),
                agent: "Explore".into(),
                description: "scan the auth module".into(),
                background: true,
                phase: TaskPhase::Starting,
            },
            TaskEvent::Turn {
                budget: None,
                task_id: "t-0001".into(),
                usage: usage(),
                preview: "Reading src/auth/token.rs".into(),
                phase: TaskPhase::Working,
            },
            TaskEvent::Ended {
                budget: None,
                task_id: "t-0001".into(),
                status: TaskStatus::Partial,
                termination: Some(TerminationKind::TurnBudget),
            },
        ];
        let lines: Vec<String> = events.iter().map(|e| pretty(&task_event_json(e))).collect();
        insta::assert_snapshot!(lines.join("\n"));
    }

    #[test]
    fn task_snapshot_json() {
        use cadre_protocol::{TaskStatus, TerminationKind, WorktreeInfo};
        let t = TaskSnapshot {
            task_id: "t-0001".into(),
            name: Some("auth-fix".into()),
            agent: "code".into(),
            description: "fix the token bug".into(),
            status: TaskStatus::Completed,
            phase: TaskPhase::Terminal,
            termination: Some(TerminationKind::Normal),
            usage: usage(),
            preview: "Fixed the expiry check".into(),
            output: "Fixed the expiry check in src/auth/token.rs.".into(),
            output_file: "/home/u/.cadre/tasks/root/t-0001/output.md".into(),
            error: None,
            worktree: Some(WorktreeInfo {
                path: "/home/u/.cadre/worktrees/t-0001".into(),
                branch: "cadre/t-0001".into(),
                base: "0123456789abcdef".into(),
                baseline_tree: None,
                kept: true,
                diff_stat: Some(" src/auth/token.rs | 3 ++-".into()),
            }),
        };
        insta::assert_snapshot!(pretty(&task_json(&t)));
    }

    #[test]
    fn model_and_session_stats_json() {
        let mut model = cadre_testkit::scripted::model("m1");
        model.cost.input = 3.0;
        model.cost.output = 15.0;
        insta::assert_snapshot!("model_json", pretty(&model_json(&model)));
        let mut answer = cadre_testkit::scripted::assistant(
            vec![
                ContentBlock::text("Reading it."),
                ContentBlock::ToolCall(cadre_testkit::scripted::tool_call(
                    "c1",
                    "read",
                    json!({ "path": "a" }),
                )),
            ],
            cadre_protocol::StopReason::ToolUse,
        );
        answer.usage.cost.total = 0.002;
        let messages = vec![Message::user("read a"), Message::Assistant(answer)];
        insta::assert_snapshot!(
            "session_stats_json",
            pretty(&session_stats_json(
                &messages,
                Some(std::path::Path::new("/home/u/.cadre/sessions/s.jsonl")),
                "0192-session",
            ))
        );
    }
}
