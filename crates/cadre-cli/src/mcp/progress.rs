//! `notifications/progress` for a foreground `Agent` call, from the task manager's events:
//! turns, tool calls and tokens of the tasks the call launched.
//!
//! Task events do not say which call launched a task, so a call claims the root-level tasks
//! that start while it runs with one of its descriptions (first come, first served across
//! concurrent calls), and the tasks those tasks launch.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use cadre_core::orchestrator::manager::{TaskEvent, TaskManager};
use cadre_protocol::TaskUsage;
use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Task ids claimed by the in-flight calls of one session.
#[derive(Clone, Default)]
pub struct Claims(Arc<Mutex<HashSet<String>>>);

impl Claims {
    /// Claim `id`; false when another call has it.
    fn claim(&self, id: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_string())
    }

    fn release(&self, ids: impl Iterator<Item = String>) {
        let mut set = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for id in ids {
            set.remove(&id);
        }
    }
}

pub struct Reporter {
    /// `None`: nothing to report (no token, or not a foreground `Agent` call).
    target: Option<(ProgressToken, Peer<RoleServer>)>,
    descriptions: Vec<String>,
    events: broadcast::Receiver<TaskEvent>,
    claims: Claims,
    /// Where an ended task's final usage is read: a run's tokens are recorded at its end.
    manager: TaskManager,
}

impl Reporter {
    pub fn new(
        tool: &str,
        args: &Value,
        token: Option<ProgressToken>,
        peer: Peer<RoleServer>,
        manager: TaskManager,
        claims: Claims,
    ) -> Reporter {
        let background = args.get("run_in_background").and_then(Value::as_bool) == Some(true);
        let target = token
            .filter(|_| tool == "Agent" && !background)
            .map(|t| (t, peer));
        Reporter {
            target,
            descriptions: descriptions(args),
            events: manager.subscribe(),
            claims,
            manager,
        }
    }

    /// Report until `done` is cancelled (the call has its result), then report the events
    /// already sent (the tasks' ends) and return: progress must come before the response.
    pub async fn run(mut self, done: CancellationToken) {
        let Some((token, peer)) = self.target.take() else {
            return;
        };
        let mut state = State::default();
        let mut guard = Release {
            claims: self.claims.clone(),
            ids: Vec::new(),
        };
        let mut sent = 0.0;
        let mut ending = false;
        loop {
            let received = if ending {
                match self.events.try_recv() {
                    Ok(event) => Ok(event),
                    Err(broadcast::error::TryRecvError::Lagged(n)) => {
                        Err(broadcast::error::RecvError::Lagged(n))
                    }
                    Err(_) => return,
                }
            } else {
                tokio::select! {
                    biased;
                    received = self.events.recv() => received,
                    () = done.cancelled() => {
                        ending = true;
                        continue;
                    }
                }
            };
            let event = match received {
                Ok(event) => event,
                // A lagging listener misses events; the next turn carries the totals anyway.
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            };
            if let TaskEvent::Ended { task_id, .. } = &event
                && let Some(slot) = state.tasks.get_mut(task_id)
                && let Ok(snapshot) = self.manager.snapshot(task_id)
            {
                *slot = snapshot.usage;
            }
            let Some(message) = state.apply(&event, &self.descriptions, &self.claims) else {
                continue;
            };
            guard.ids = state.tasks.keys().cloned().collect();
            sent += 1.0;
            let mut param = ProgressNotificationParam::new(token.clone(), sent);
            param.message = Some(message);
            if peer.notify_progress(param).await.is_err() {
                return;
            }
        }
    }
}

/// Gives the call's claims back when its reporter ends.
struct Release {
    claims: Claims,
    ids: Vec<String>,
}

impl Drop for Release {
    fn drop(&mut self) {
        self.claims.release(self.ids.drain(..));
    }
}

/// The descriptions an `Agent` call launches tasks with.
fn descriptions(args: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(d) = args.get("description").and_then(Value::as_str) {
        out.push(d.to_string());
    }
    if let Some(tasks) = args.get("tasks").and_then(Value::as_array) {
        out.extend(
            tasks
                .iter()
                .filter_map(|t| t.get("description").and_then(Value::as_str))
                .map(str::to_string),
        );
    }
    out
}

#[derive(Default)]
struct State {
    /// The call's tasks and their latest usage.
    tasks: BTreeMap<String, TaskUsage>,
    ended: usize,
}

impl State {
    /// Take `event` into account; the progress message when it concerns this call.
    fn apply(
        &mut self,
        event: &TaskEvent,
        descriptions: &[String],
        claims: &Claims,
    ) -> Option<String> {
        match event {
            TaskEvent::Started {
                task_id,
                parent_task_id,
                description,
                agent,
                ..
            } => {
                let ours = match parent_task_id {
                    Some(parent) => self.tasks.contains_key(parent),
                    None => descriptions.iter().any(|d| d == description),
                };
                if !ours || !claims.claim(task_id) {
                    return None;
                }
                self.tasks.insert(task_id.clone(), TaskUsage::default());
                Some(format!(
                    "{} started {agent} \"{description}\"; {}",
                    short(task_id),
                    self.totals()
                ))
            }
            TaskEvent::Turn {
                task_id,
                usage,
                preview,
            } => {
                let slot = self.tasks.get_mut(task_id)?;
                // Turn events carry the counters; tokens arrive with the end (kept if known).
                let tokens = slot.tokens;
                *slot = *usage;
                if usage.tokens.total_tokens == 0 && usage.tokens.input == 0 {
                    slot.tokens = tokens;
                }
                let preview = preview.chars().take(120).collect::<String>();
                Some(format!("{}; {}: {preview}", self.totals(), short(task_id)))
            }
            TaskEvent::Ended {
                task_id, status, ..
            } => {
                if !self.tasks.contains_key(task_id) {
                    return None;
                }
                self.ended += 1;
                Some(format!(
                    "{} {}; {}",
                    short(task_id),
                    status.as_str(),
                    self.totals()
                ))
            }
        }
    }

    /// Turns, tool calls and tokens over the call's tasks.
    fn totals(&self) -> String {
        let (mut turns, mut tools, mut tokens) = (0u64, 0u64, 0u64);
        for u in self.tasks.values() {
            turns += u64::from(u.turns);
            tools += u64::from(u.tool_calls_executed);
            tokens += u.tokens.input + u.tokens.output + u.tokens.cache_read + u.tokens.cache_write;
        }
        format!(
            "tasks {}/{} done, turns {turns}, tool calls {tools}, tokens {tokens}",
            self.ended,
            self.tasks.len()
        )
    }
}

/// A task id's first characters, enough to tell tasks apart in a message.
fn short(id: &str) -> String {
    format!("task {}", id.chars().take(13).collect::<String>())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_protocol::TaskStatus;
    use serde_json::json;

    fn started(id: &str, parent: Option<&str>, description: &str) -> TaskEvent {
        TaskEvent::Started {
            task_id: id.into(),
            parent_task_id: parent.map(str::to_string),
            agent: "Explore".into(),
            description: description.into(),
            background: false,
        }
    }

    #[test]
    fn a_call_follows_its_tasks_and_their_children_only() {
        let claims = Claims::default();
        let d = descriptions(&json!({"tasks": [{"description": "a"}, {"description": "b"}]}));
        let mut s = State::default();
        assert!(s.apply(&started("1", None, "a"), &d, &claims).is_some());
        assert!(s.apply(&started("2", None, "other"), &d, &claims).is_none());
        assert!(
            s.apply(&started("3", Some("1"), "nested"), &d, &claims)
                .is_some()
        );
        let mut usage = TaskUsage {
            turns: 2,
            tool_calls_executed: 3,
            ..TaskUsage::default()
        };
        usage.tokens.input = 10;
        let turn = TaskEvent::Turn {
            task_id: "1".into(),
            usage,
            preview: "looking".into(),
        };
        let m = s.apply(&turn, &d, &claims).unwrap();
        assert!(m.contains("turns 2, tool calls 3, tokens 10"), "{m}");
        let end = TaskEvent::Ended {
            task_id: "1".into(),
            status: TaskStatus::Completed,
            termination: None,
        };
        assert!(
            s.apply(&end, &d, &claims)
                .unwrap()
                .contains("tasks 1/2 done")
        );
        // Another call with the same description cannot take a claimed task.
        let mut other = State::default();
        assert!(other.apply(&started("1", None, "a"), &d, &claims).is_none());
    }
}
