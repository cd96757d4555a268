//! Why a launch or a task operation was refused, as a stable code a front end can branch on.
//!
//! The text of a refusal is written for the model and may change; its code does not. Every
//! [`super::LaunchError`] has one ([`super::LaunchError::code`]); each front end maps it to
//! its wire in one place: the orchestration tools' result `details` (`{"refusal": {"code"}}`,
//! which RPC and JSON events carry as they are), the MCP server's `_meta`, ACP's tool-call
//! `_meta`, and the host's `HostError` for task commands.
//!
//! Not to be confused with [`crate::handoff::refusal::RefusalReason`], which is why a child's
//! tool call was refused at dispatch.

use serde::Serialize;

/// A launch refusal's stable code (snake_case on every wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalCode {
    /// The call's arguments are not usable: an empty prompt or message, an unknown thinking
    /// level or isolation, an unusable `output_schema`.
    InvalidCall,
    /// No role has that name.
    UnknownRole,
    /// The role exists but its definition is refused (a malformed or unreadable role file).
    RoleUnavailable,
    /// The model asked for (or the task last ran on) cannot be used.
    ModelUnavailable,
    /// The role's tool lists name tools that exist nowhere.
    Capability,
    /// A skill the role needs is missing or invalid.
    SkillUnavailable,
    /// The maximum nesting depth is reached.
    DepthLimit,
    /// More tasks in one call than `subagents.maxTasksPerLaunch`.
    TooManyTasks,
    /// Plan mode refuses the role, the worktree, or continuing the task (S6).
    PlanMode,
    /// The session may not launch (`subagents.authorization` is solo, or ask without anyone to
    /// ask, or the launch was declined: D3). The text begins `host_authorization_required:`.
    NotAuthorized,
    /// A background launch under `subagents.dispatch: sequential` (D4).
    SequentialDispatch,
    /// A fork that cannot start here (not the root, disabled, no conversation, O9).
    ForkUnavailable,
    /// The read-only sandbox a child's bash needs cannot be prepared.
    SandboxUnavailable,
    /// The role's `Bash(…)` command patterns do not parse.
    BashPatterns,
    /// The role's `Bash(…)` patterns are not among its parent task's.
    OutsideParentLimits,
    /// `review: true` for a role the review gate does not take.
    NotReviewable,
    /// Worktree isolation failed (no repository, no commits, …).
    Worktree,
    /// Worktree isolation is disabled (`subagents.enableWorktrees: false`).
    WorktreeDisabled,
    /// No task matches the target.
    UnknownTask,
    /// More than one task matches the target.
    AmbiguousTask,
    /// `TaskStop` for a task that is not running.
    NotRunning,
    /// The parent session is shutting down: nothing starts or continues (L6).
    ShuttingDown,
    /// The task's role is one-shot: it cannot be continued.
    OneShot,
    /// The task is running in another process.
    StillRunning,
    /// The task has no session file to continue from.
    NoSession,
    /// The task's role now has other `Bash(…)` patterns than the task ran under.
    RoleChanged,
    /// The budget this launch would spend from is exhausted.
    BudgetExhausted,
    /// A cost budget is in force and the model has no price to count it by.
    UnpricedModel,
    /// A task record could not be read or written (internal).
    TaskRecord,
    /// A task's session file could not be read or written (internal).
    TaskSession,
}

impl RefusalCode {
    /// Every code, for documentation and tests.
    pub const ALL: &'static [RefusalCode] = &[
        RefusalCode::InvalidCall,
        RefusalCode::UnknownRole,
        RefusalCode::RoleUnavailable,
        RefusalCode::ModelUnavailable,
        RefusalCode::Capability,
        RefusalCode::SkillUnavailable,
        RefusalCode::DepthLimit,
        RefusalCode::TooManyTasks,
        RefusalCode::PlanMode,
        RefusalCode::NotAuthorized,
        RefusalCode::SequentialDispatch,
        RefusalCode::ForkUnavailable,
        RefusalCode::SandboxUnavailable,
        RefusalCode::BashPatterns,
        RefusalCode::OutsideParentLimits,
        RefusalCode::NotReviewable,
        RefusalCode::Worktree,
        RefusalCode::WorktreeDisabled,
        RefusalCode::UnknownTask,
        RefusalCode::AmbiguousTask,
        RefusalCode::NotRunning,
        RefusalCode::ShuttingDown,
        RefusalCode::OneShot,
        RefusalCode::StillRunning,
        RefusalCode::NoSession,
        RefusalCode::RoleChanged,
        RefusalCode::BudgetExhausted,
        RefusalCode::UnpricedModel,
        RefusalCode::TaskRecord,
        RefusalCode::TaskSession,
    ];

    /// The code as every wire spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalCode::InvalidCall => "invalid_call",
            RefusalCode::UnknownRole => "unknown_role",
            RefusalCode::RoleUnavailable => "role_unavailable",
            RefusalCode::ModelUnavailable => "model_unavailable",
            RefusalCode::Capability => "capability",
            RefusalCode::SkillUnavailable => "skill_unavailable",
            RefusalCode::DepthLimit => "depth_limit",
            RefusalCode::TooManyTasks => "too_many_tasks",
            RefusalCode::PlanMode => "plan_mode",
            RefusalCode::NotAuthorized => "not_authorized",
            RefusalCode::SequentialDispatch => "sequential_dispatch",
            RefusalCode::ForkUnavailable => "fork_unavailable",
            RefusalCode::SandboxUnavailable => "sandbox_unavailable",
            RefusalCode::BashPatterns => "bash_patterns",
            RefusalCode::OutsideParentLimits => "outside_parent_limits",
            RefusalCode::NotReviewable => "not_reviewable",
            RefusalCode::Worktree => "worktree",
            RefusalCode::WorktreeDisabled => "worktree_disabled",
            RefusalCode::UnknownTask => "unknown_task",
            RefusalCode::AmbiguousTask => "ambiguous_task",
            RefusalCode::NotRunning => "not_running",
            RefusalCode::ShuttingDown => "shutting_down",
            RefusalCode::OneShot => "one_shot",
            RefusalCode::StillRunning => "still_running",
            RefusalCode::NoSession => "no_session",
            RefusalCode::RoleChanged => "role_changed",
            RefusalCode::BudgetExhausted => "budget_exhausted",
            RefusalCode::UnpricedModel => "unpriced_model",
            RefusalCode::TaskRecord => "task_record",
            RefusalCode::TaskSession => "task_session",
        }
    }

    /// A broken runtime (a record or session file that cannot be read or written) rather than
    /// a refusal of what was asked.
    pub fn is_internal(self) -> bool {
        matches!(self, RefusalCode::TaskRecord | RefusalCode::TaskSession)
    }

    /// The target named no task (or not exactly one).
    pub fn is_not_found(self) -> bool {
        matches!(self, RefusalCode::UnknownTask)
    }
}

impl std::fmt::Display for RefusalCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_snake_case_unique_and_serialized_as_spelled() {
        let mut seen = std::collections::HashSet::new();
        for code in RefusalCode::ALL {
            let s = code.as_str();
            assert!(s.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{s}");
            assert!(seen.insert(s), "duplicate {s}");
            assert_eq!(serde_json::to_value(code).unwrap(), serde_json::json!(s));
            assert_eq!(code.to_string(), s);
        }
        assert!(seen.contains("budget_exhausted") && seen.contains("depth_limit"));
    }
}
