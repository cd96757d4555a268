//! `notifications/progress` for a foreground `Agent` call, from the task manager's events:
//! turns, tool calls and tokens of the tasks the call launched.
//!
//! The manager tells the call which tasks it launched, by id (`observe_launches`), so two
//! concurrent calls never take each other's tasks, whatever their descriptions; the tasks
//! those tasks launch are known by their parent task id. A task's `Started` event can come
//! before the call learns its id; it is kept until then.

use std::collections::{BTreeMap, HashMap};

use cadre_core::orchestrator::manager::{LaunchObserver, TaskEvent};
use cadre_host::SessionTasks;
use cadre_protocol::TaskUsage;
use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

/// The most `Started` events of tasks not (yet) known to be this call's that are kept.
const MAX_UNKNOWN_STARTS: usize = 1024;

pub struct Reporter {
    /// `None`: nothing to report (no token, or not a foreground `Agent` call).
    target: Option<(ProgressToken, Peer<RoleServer>)>,
    events: broadcast::Receiver<TaskEvent>,
    launched: mpsc::UnboundedReceiver<String>,
    /// Where an ended task's final usage is read: a run's tokens are recorded at its end.
    tasks: SessionTasks,
}

impl Reporter {
    /// The reporter of one call, and the observer the call's launches are run under.
    pub fn new(
        tool: &str,
        args: &Value,
        token: Option<ProgressToken>,
        peer: Peer<RoleServer>,
        tasks: SessionTasks,
    ) -> (Reporter, LaunchObserver) {
        let background = args.get("run_in_background").and_then(Value::as_bool) == Some(true);
        let target = token
            .filter(|_| tool == "Agent" && !background)
            .map(|t| (t, peer));
        let (tx, launched) = mpsc::unbounded_channel();
        let observer = LaunchObserver::new(move |id| {
            let _ = tx.send(id.to_string());
        });
        let reporter = Reporter {
            target,
            events: tasks.events(),
            launched,
            tasks,
        };
        (reporter, observer)
    }

    /// Report until `done` is cancelled (the call has its result), then report the events
    /// already sent (the tasks' ends) and return: progress must come before the response.
    pub async fn run(mut self, done: CancellationToken) {
        let Some((token, peer)) = self.target.take() else {
            return;
        };
        let mut state = State::default();
        let mut sent = 0.0;
        let mut ending = false;
        loop {
            let messages = if ending {
                // Launch ids first: an end already sent may be of a task just learnt.
                if let Ok(id) = self.launched.try_recv() {
                    state.learn(&id)
                } else {
                    match self.events.try_recv() {
                        Ok(event) => self.apply(&mut state, &event),
                        Err(broadcast::error::TryRecvError::Lagged(_)) => continue,
                        Err(_) => return,
                    }
                }
            } else {
                tokio::select! {
                    biased;
                    Some(id) = self.launched.recv() => state.learn(&id),
                    received = self.events.recv() => match received {
                        Ok(event) => self.apply(&mut state, &event),
                        // A lagging listener misses events; the next turn carries the totals.
                        Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                    () = done.cancelled() => {
                        ending = true;
                        continue;
                    }
                }
            };
            for message in messages {
                sent += 1.0;
                let mut param = ProgressNotificationParam::new(token.clone(), sent);
                param.message = Some(message);
                if peer.notify_progress(param).await.is_err() {
                    return;
                }
            }
        }
    }

    fn apply(&self, state: &mut State, event: &TaskEvent) -> Vec<String> {
        if let TaskEvent::Ended { task_id, .. } = event
            && let Some(slot) = state.tasks.get_mut(task_id)
            && let Ok(snapshot) = self.tasks.snapshot(task_id)
        {
            *slot = snapshot.usage;
        }
        state.apply(event)
    }
}

#[derive(Default)]
struct State {
    /// The call's tasks and their latest usage.
    tasks: BTreeMap<String, TaskUsage>,
    /// Tasks the call launched whose start has not been seen yet.
    launched: Vec<String>,
    /// Started events of tasks not known to be the call's (yet): id → (agent, description,
    /// parent).
    unknown: HashMap<String, (String, String, Option<String>)>,
    ended: usize,
}

impl State {
    /// The call launched `id`: its start (and its children's), if already seen, is reported.
    fn learn(&mut self, id: &str) -> Vec<String> {
        if self.tasks.contains_key(id) {
            return Vec::new();
        }
        match self.unknown.remove(id) {
            Some((agent, description, _)) => {
                let mut out = vec![self.start(id, &agent, &description)];
                out.extend(self.adopt_children());
                out
            }
            None => {
                self.launched.push(id.to_string());
                Vec::new()
            }
        }
    }

    /// Kept starts whose parent is now one of the call's tasks.
    fn adopt_children(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        loop {
            let next = self.unknown.iter().find_map(|(id, (_, _, parent))| {
                parent
                    .as_ref()
                    .filter(|p| self.tasks.contains_key(*p))
                    .map(|_| id.clone())
            });
            let Some(id) = next else { return out };
            if let Some((agent, description, _)) = self.unknown.remove(&id) {
                out.push(self.start(&id, &agent, &description));
            }
        }
    }

    fn start(&mut self, id: &str, agent: &str, description: &str) -> String {
        self.launched.retain(|l| l != id);
        self.tasks.insert(id.to_string(), TaskUsage::default());
        format!(
            "{} started {agent} \"{description}\"; {}",
            short(id),
            self.totals()
        )
    }

    /// Take `event` into account; the progress messages it gives when it concerns this call.
    fn apply(&mut self, event: &TaskEvent) -> Vec<String> {
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
                    None => self.launched.iter().any(|l| l == task_id),
                };
                if !ours {
                    if self.unknown.len() < MAX_UNKNOWN_STARTS {
                        self.unknown.insert(
                            task_id.clone(),
                            (agent.clone(), description.clone(), parent_task_id.clone()),
                        );
                    }
                    return Vec::new();
                }
                if self.tasks.contains_key(task_id) {
                    return Vec::new();
                }
                let mut out = vec![self.start(task_id, agent, description)];
                out.extend(self.adopt_children());
                out
            }
            TaskEvent::Turn {
                task_id,
                usage,
                preview,
                ..
            } => {
                let Some(slot) = self.tasks.get_mut(task_id) else {
                    return Vec::new();
                };
                // Turn events carry the counters; tokens arrive with the end (kept if known).
                let tokens = slot.tokens;
                *slot = *usage;
                if usage.tokens.total_tokens == 0 && usage.tokens.input == 0 {
                    slot.tokens = tokens;
                }
                let preview = preview.chars().take(120).collect::<String>();
                vec![format!("{}; {}: {preview}", self.totals(), short(task_id))]
            }
            TaskEvent::Ended {
                task_id, status, ..
            } => {
                if !self.tasks.contains_key(task_id) {
                    self.unknown.remove(task_id);
                    return Vec::new();
                }
                self.ended += 1;
                vec![format!(
                    "{} {}; {}",
                    short(task_id),
                    status.as_str(),
                    self.totals()
                )]
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

/// A task as a message names it: by its whole id (ids made in the same millisecond share
/// their first characters).
fn short(id: &str) -> String {
    format!("task {id}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_protocol::{TaskPhase, TaskStatus};

    fn started(id: &str, parent: Option<&str>, description: &str) -> TaskEvent {
        TaskEvent::Started {
            task_id: id.into(),
            parent_task_id: parent.map(str::to_string),
            name: None,
            agent: "Explore".into(),
            description: description.into(),
            background: false,
            phase: TaskPhase::Starting,
        }
    }

    #[test]
    fn a_call_follows_the_tasks_it_launched_and_their_children_only() {
        let mut s = State::default();
        // Its own task's start may come before or after the launch is known.
        assert!(s.apply(&started("1", None, "same")).is_empty());
        assert_eq!(s.learn("1").len(), 1);
        assert!(s.learn("4").is_empty());
        assert_eq!(s.apply(&started("4", None, "same")).len(), 1);
        // Another call's task with the same description is not this call's.
        assert!(s.apply(&started("2", None, "same")).is_empty());
        assert_eq!(s.apply(&started("3", Some("1"), "nested")).len(), 1);
        assert!(s.apply(&started("5", Some("2"), "theirs")).is_empty());
        let mut usage = TaskUsage {
            turns: 2,
            tool_calls_executed: 3,
            ..TaskUsage::default()
        };
        usage.tokens.input = 10;
        let turn = TaskEvent::Turn {
            budget: None,
            task_id: "1".into(),
            usage,
            preview: "looking".into(),
            phase: TaskPhase::Working,
        };
        let m = s.apply(&turn).pop().unwrap();
        assert!(m.contains("turns 2, tool calls 3, tokens 10"), "{m}");
        let end = |id: &str| TaskEvent::Ended {
            budget: None,
            task_id: id.into(),
            status: TaskStatus::Completed,
            termination: None,
        };
        assert!(s.apply(&end("2")).is_empty());
        let m = s.apply(&end("1")).pop().unwrap();
        assert!(m.contains("tasks 1/3 done"), "{m}");
    }

    #[test]
    fn a_child_started_before_its_parent_was_known_is_adopted() {
        let mut s = State::default();
        assert!(s.apply(&started("1", None, "a")).is_empty());
        assert!(s.apply(&started("2", Some("1"), "b")).is_empty());
        let messages = s.learn("1");
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(s.unknown.is_empty());
    }
}
