//! Task vocabulary and the durable task record (`task.json`, SPEC O12, L1).

use serde::{Deserialize, Serialize};

use crate::message::Usage;

/// Where a task is in its life (L1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TaskPhase {
    #[default]
    Starting,
    Working,
    FinalHandoff,
    Terminal,
}

/// The status a user sees (L1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    #[default]
    Running,
    Completed,
    Partial,
    Failed,
    Stopped,
}

impl TaskStatus {
    pub fn is_terminal(self) -> bool {
        self != TaskStatus::Running
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::Partial => "partial",
            TaskStatus::Failed => "failed",
            TaskStatus::Stopped => "stopped",
        }
    }
}

/// Why a task ended (L1). Each kind maps to exactly one status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminationKind {
    Normal,
    TurnBudget,
    ToolBudget,
    Timeout,
    ManualStop,
    ParentShutdown,
    ProviderError,
    StartupError,
    /// The review gate (V5) did not pass the implementer's work. An extension of L1's kinds.
    ReviewFailed,
    /// The task's cost budget (or an ancestor's) ran out. Ranked after `turn_budget`.
    CostBudget,
    /// The task's token budget (or an ancestor's) ran out. Ranked after `turn_budget`.
    TokenBudget,
}

impl TerminationKind {
    pub fn status(self) -> TaskStatus {
        match self {
            TerminationKind::Normal => TaskStatus::Completed,
            TerminationKind::TurnBudget
            | TerminationKind::ToolBudget
            | TerminationKind::Timeout
            | TerminationKind::CostBudget
            | TerminationKind::TokenBudget => TaskStatus::Partial,
            TerminationKind::ManualStop | TerminationKind::ParentShutdown => TaskStatus::Stopped,
            TerminationKind::ProviderError
            | TerminationKind::StartupError
            | TerminationKind::ReviewFailed => TaskStatus::Failed,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TerminationKind::Normal => "normal",
            TerminationKind::TurnBudget => "turn_budget",
            TerminationKind::ToolBudget => "tool_budget",
            TerminationKind::Timeout => "timeout",
            TerminationKind::ManualStop => "manual_stop",
            TerminationKind::ParentShutdown => "parent_shutdown",
            TerminationKind::ProviderError => "provider_error",
            TerminationKind::StartupError => "startup_error",
            TerminationKind::ReviewFailed => "review_failed",
            TerminationKind::CostBudget => "cost_budget",
            TerminationKind::TokenBudget => "token_budget",
        }
    }
}

/// Budgets of one task (unset = unlimited).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskBudgets {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    pub grace_turns: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soft_tool_calls: Option<u32>,
    /// Tools blocked once `max_tool_calls` is reached; `["*"]` = all.
    pub tool_budget_block: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The task's own cost cap in USD (its role's `maxCostUsd`, or raised with `cadre task
    /// budget`); the cap in force is in [`TaskRecord::budget`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// The task's own token cap (its role's `maxTokens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
}

impl TaskBudgets {
    /// The task's own token and cost caps.
    pub fn limits(&self) -> crate::Limits {
        crate::Limits {
            max_tokens: self.max_tokens,
            max_cost_usd: self.max_cost_usd,
        }
    }
}

/// Supervision checkpoints (L5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WarningSchedule {
    pub warning_turns: u32,
    pub warning_interval_turns: u32,
}

impl Default for WarningSchedule {
    fn default() -> Self {
        WarningSchedule {
            warning_turns: 40,
            warning_interval_turns: 25,
        }
    }
}

/// Usage of one task: tokens and cost plus the turn and tool counters (L3).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskUsage {
    #[serde(flatten)]
    pub tokens: Usage,
    pub turns: u32,
    pub tool_calls_requested: u32,
    pub tool_calls_executed: u32,
    pub tool_calls_blocked: u32,
}

/// A kept worktree (O11).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WorktreeInfo {
    pub path: String,
    pub branch: String,
    /// The commit the worktree was created from.
    pub base: String,
    /// The tree the child started from (HEAD plus the parent's replayed changes); its changes are
    /// the difference between this tree and the worktree's final state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_tree: Option<String>,
    pub kept: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_stat: Option<String>,
}

/// `task.json`: the authoritative record of one task (O12).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskRecord {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Role name as resolved (e.g. `Explore`).
    pub agent: String,
    pub description: String,
    pub prompt: String,
    pub cwd: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    pub root_session_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_task_id: Option<String>,
    pub depth: u32,
    pub status: TaskStatus,
    pub phase: TaskPhase,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub termination: Option<TerminationKind>,
    pub background: bool,
    pub forked: bool,
    /// `provider/model-id`.
    pub model: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback_model: Option<String>,
    pub requested_thinking: String,
    pub effective_thinking: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_clamp_reason: Option<String>,
    pub budgets: TaskBudgets,
    /// Its token and cost budget: the cap in force, what it and its subtree spent, what its
    /// live children reserve. Absent for a task under no cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::BudgetState>,
    pub warnings: WarningSchedule,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    pub output_file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeInfo>,
    pub tools: Vec<String>,
    pub readonly: bool,
    pub shell_policy: String,
    /// The role's `Bash(…)` command patterns, kept so a continuation runs only them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bash_allow: Vec<String>,
    /// A scoped probe's paths (S4), kept so a continuation stays inside them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
    pub one_shot: bool,
    pub trusted: bool,
    pub usage: TaskUsage,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Earlier failures kept for diagnosis (e.g. the primary model's before a fallback).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<String>,
    /// First line of the output, at most 300 characters.
    pub preview: String,
    /// Process id of the owning cadre process while running (orphan detection, O13).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner_pid: Option<u32>,
    /// Start time of the owning process (clock ticks since boot, `/proc/<pid>/stat` field 22), so a
    /// reused pid is not mistaken for a live owner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner_start_time: Option<u64>,
    /// RFC 3339 timestamps.
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_termination_kind_maps_to_its_status() {
        use TerminationKind::*;
        let table = [
            (Normal, TaskStatus::Completed),
            (TurnBudget, TaskStatus::Partial),
            (ToolBudget, TaskStatus::Partial),
            (Timeout, TaskStatus::Partial),
            (ManualStop, TaskStatus::Stopped),
            (ParentShutdown, TaskStatus::Stopped),
            (ProviderError, TaskStatus::Failed),
            (StartupError, TaskStatus::Failed),
        ];
        for (kind, status) in table {
            assert_eq!(kind.status(), status, "{kind:?}");
            let v = serde_json::to_value(kind).unwrap();
            assert_eq!(v, kind.as_str());
        }
    }

    #[test]
    fn record_round_trips_with_camel_case_fields() {
        let mut r = TaskRecord {
            id: "t1".into(),
            agent: "Explore".into(),
            termination: Some(TerminationKind::Timeout),
            status: TaskStatus::Partial,
            ..TaskRecord::default()
        };
        r.usage.tool_calls_blocked = 2;
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["termination"], "timeout");
        assert_eq!(v["usage"]["toolCallsBlocked"], 2);
        assert_eq!(v["rootSessionId"], "");
        let back: TaskRecord = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }
}
