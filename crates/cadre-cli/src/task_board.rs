//! The tasks of a session as the live views show them — the interactive mode's task panel and
//! print mode's live tree: every task, from the host's task events, with what a row shows.
//!
//! Events carry everything a row shows (ids, parent, name, phase, usage, status); the final
//! usage of an ended task comes from its snapshot, which the loop reads from the task manager
//! when a task ends (cheap: in memory). Rows are kept in tree order — children under their parent, each level
//! in start order — and the order is rebuilt only when a task is added.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use cadre_core::orchestrator::manager::{TaskEvent, TaskSnapshot};
use cadre_protocol::{TaskPhase, TaskStatus, TaskUsage};

/// The most tasks the panel keeps (a session that launched more shows the newest).
const MAX_TASKS: usize = 5_000;

#[derive(Debug, Clone)]
pub struct TaskRow {
    pub id: String,
    pub parent: Option<String>,
    pub agent: String,
    pub name: Option<String>,
    pub description: String,
    pub background: bool,
    pub status: TaskStatus,
    pub phase: TaskPhase,
    pub usage: TaskUsage,
    pub started: Instant,
    pub ended: Option<Instant>,
    /// The last turn's first line.
    pub preview: String,
    /// Its token and cost budget as of its last turn (`None`: no cap).
    pub budget: Option<cadre_protocol::BudgetState>,
}

impl TaskRow {
    pub fn elapsed(&self, now: Instant) -> Duration {
        self.ended
            .unwrap_or(now)
            .saturating_duration_since(self.started)
    }
}

/// `42s`, `3m05s`, `1h02m`.
pub fn elapsed_text(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[derive(Debug, Default)]
pub struct Board {
    rows: Vec<TaskRow>,
    index: HashMap<String, usize>,
    /// Row indices in tree order with their depth.
    order: Vec<(usize, usize)>,
    /// Bumped on every change.
    pub version: u64,
}

impl Board {
    /// Take in one task event received at `now`.
    pub fn apply(&mut self, event: &TaskEvent, now: Instant) {
        match event {
            TaskEvent::Started {
                task_id,
                parent_task_id,
                name,
                agent,
                description,
                background,
                phase,
            } => {
                if let Some(&i) = self.index.get(task_id) {
                    // A reopened task (SendMessage) runs again in its old place.
                    let row = &mut self.rows[i];
                    row.status = TaskStatus::Running;
                    row.ended = None;
                    row.started = now;
                    row.background = *background;
                    row.phase = *phase;
                } else {
                    self.add(TaskRow {
                        id: task_id.clone(),
                        parent: parent_task_id.clone(),
                        agent: agent.clone(),
                        name: name.clone(),
                        description: description.clone(),
                        background: *background,
                        status: TaskStatus::Running,
                        phase: *phase,
                        usage: TaskUsage::default(),
                        started: now,
                        ended: None,
                        preview: String::new(),
                        budget: None,
                    });
                }
            }
            TaskEvent::Turn {
                task_id,
                usage,
                preview,
                phase,
                budget,
            } => {
                if let Some(row) = self.row_mut(task_id) {
                    row.usage = *usage;
                    row.phase = *phase;
                    row.preview = preview.clone();
                    row.budget = *budget;
                }
            }
            TaskEvent::Ended {
                task_id,
                status,
                budget,
                ..
            } => {
                if let Some(row) = self.row_mut(task_id) {
                    row.status = *status;
                    if budget.is_some() {
                        row.budget = *budget;
                    }
                    row.phase = TaskPhase::Terminal;
                    row.ended = Some(now);
                }
            }
        }
        self.version += 1;
    }

    /// What a task's snapshot adds: its name and phase as recorded, and its final usage.
    pub fn fill(&mut self, snapshot: &TaskSnapshot) {
        if let Some(row) = self.row_mut(&snapshot.task_id) {
            row.name = snapshot.name.clone();
            row.phase = snapshot.phase;
            if snapshot.status.is_terminal() {
                row.status = snapshot.status;
                row.usage = snapshot.usage;
            }
            self.version += 1;
        }
    }

    fn add(&mut self, row: TaskRow) {
        if self.rows.len() >= MAX_TASKS {
            // The oldest ended task makes room; with none ended the new one is not listed.
            let Some(oldest) = self.rows.iter().position(|r| r.ended.is_some()) else {
                return;
            };
            self.rows.remove(oldest);
            self.reindex();
        }
        self.index.insert(row.id.clone(), self.rows.len());
        self.rows.push(row);
        self.reorder();
    }

    fn reindex(&mut self) {
        self.index = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.id.clone(), i))
            .collect();
    }

    /// Tree order: roots (tasks whose parent is not listed) in start order, each followed by
    /// its children, depth first. Iterative, so a deep chain cannot overflow the stack, and
    /// each row is placed once, so no parent cycle can loop.
    fn reorder(&mut self) {
        let mut children: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut roots = Vec::new();
        for (i, row) in self.rows.iter().enumerate() {
            match row
                .parent
                .as_deref()
                .filter(|p| self.index.contains_key(*p))
            {
                Some(p) => children.entry(p).or_default().push(i),
                None => roots.push(i),
            }
        }
        let mut placed = vec![false; self.rows.len()];
        let mut order = Vec::with_capacity(self.rows.len());
        let mut stack: Vec<(usize, usize)> = roots.into_iter().rev().map(|i| (i, 0)).collect();
        loop {
            while let Some((i, depth)) = stack.pop() {
                if std::mem::replace(&mut placed[i], true) {
                    continue;
                }
                order.push((i, depth));
                if let Some(kids) = children.get(self.rows[i].id.as_str()) {
                    stack.extend(kids.iter().rev().map(|&k| (k, depth + 1)));
                }
            }
            // Rows only reachable through a cycle still get a line.
            match placed.iter().position(|p| !p) {
                Some(i) => stack.push((i, 0)),
                None => break,
            }
        }
        self.order = order;
    }

    fn row_mut(&mut self, id: &str) -> Option<&mut TaskRow> {
        let i = *self.index.get(id)?;
        self.rows.get_mut(i)
    }

    pub fn get(&self, id: &str) -> Option<&TaskRow> {
        self.rows.get(*self.index.get(id)?)
    }

    /// Rows in tree order with their depth.
    pub fn tree(&self) -> impl Iterator<Item = (usize, &TaskRow)> {
        self.order.iter().map(|&(i, d)| (d, &self.rows[i]))
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn running(&self) -> usize {
        self.rows.iter().filter(|r| r.ended.is_none()).count()
    }

    /// Forget every task (a new or resumed session).
    pub fn clear(&mut self) {
        *self = Board {
            version: self.version + 1,
            ..Board::default()
        };
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub(crate) mod tests {
    use super::*;

    pub fn started(id: &str, parent: Option<&str>, agent: &str, description: &str) -> TaskEvent {
        TaskEvent::Started {
            task_id: id.into(),
            parent_task_id: parent.map(str::to_string),
            name: None,
            agent: agent.into(),
            description: description.into(),
            background: true,
            phase: TaskPhase::Starting,
        }
    }

    #[test]
    fn children_follow_their_parent_in_start_order() {
        let now = Instant::now();
        let mut b = Board::default();
        b.apply(&started("a", None, "explore", "scan"), now);
        b.apply(&started("b", None, "general-purpose", "fix"), now);
        b.apply(&started("a1", Some("a"), "explore", "deeper"), now);
        b.apply(&started("a1x", Some("a1"), "explore", "deepest"), now);
        let order: Vec<(usize, &str)> = b.tree().map(|(d, r)| (d, r.id.as_str())).collect();
        assert_eq!(order, [(0, "a"), (1, "a1"), (2, "a1x"), (0, "b")]);
    }

    #[test]
    fn a_parent_cycle_still_lists_every_task_once() {
        let now = Instant::now();
        let mut b = Board::default();
        b.apply(&started("x", Some("y"), "r", ""), now);
        b.apply(&started("y", Some("x"), "r", ""), now);
        assert_eq!(b.tree().count(), 2);
    }

    #[test]
    fn turns_and_ends_update_a_row_and_a_reopened_task_keeps_its_place() {
        let t0 = Instant::now();
        let mut b = Board::default();
        b.apply(&started("a", None, "explore", "scan"), t0);
        let usage = TaskUsage {
            turns: 3,
            ..TaskUsage::default()
        };
        b.apply(
            &TaskEvent::Turn {
                budget: None,
                task_id: "a".into(),
                usage,
                preview: "found it".into(),
                phase: TaskPhase::Working,
            },
            t0,
        );
        assert_eq!(b.get("a").unwrap().usage.turns, 3);
        assert_eq!(b.get("a").unwrap().phase, TaskPhase::Working);
        let t1 = t0 + Duration::from_secs(5);
        b.apply(
            &TaskEvent::Ended {
                budget: None,
                task_id: "a".into(),
                status: TaskStatus::Completed,
                termination: None,
            },
            t1,
        );
        assert_eq!(
            b.get("a").unwrap().elapsed(t1 + Duration::from_secs(9)),
            Duration::from_secs(5)
        );
        assert_eq!(b.running(), 0);
        b.apply(&started("a", None, "explore", "scan"), t1);
        assert_eq!(b.running(), 1);
        assert_eq!(b.len(), 1);
    }
}
