//! The manager's public vocabulary: what a launch asks for, who the parent is, what comes back.

use std::path::PathBuf;
use std::sync::Arc;

use cadre_llm::Model;
use cadre_protocol::{
    CustomMessage, Message, TaskPhase, TaskStatus, TaskUsage, TerminationKind, ThinkingLevel,
    UserContent, WorktreeInfo, now_millis,
};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use tokio::sync::mpsc;

use super::pending::PendingGuard;
use super::refusal_code::RefusalCode;
use crate::handoff::contract::DelegationPacket;
use crate::orchestrator::capability::CapabilityError;
use crate::orchestrator::store::StoreError;
use crate::orchestrator::target::TargetError;
use crate::orchestrator::worktree::WorktreeError;
use crate::roles::{RoleLookupError, SkillError};
use crate::session::SessionError;

/// Resolves a model name (`provider/id` or an alias the registry knows) to a usable model.
/// A trait so tests can inject models without a registry file.
pub trait ModelResolver: Send + Sync {
    /// The model, or why it cannot be used (unknown, no credentials).
    fn resolve(&self, name: &str) -> Result<Model, String>;
    /// Names to list when a model is unknown.
    fn known(&self) -> Vec<String>;
    /// Every model with whether it is usable, for model aliases (`roles::model_alias`); none
    /// when the resolver cannot list its models.
    fn catalog(&self) -> Vec<crate::roles::CatalogModel> {
        Vec::new()
    }
}

impl ModelResolver for cadre_llm::ModelRegistry {
    fn resolve(&self, name: &str) -> Result<Model, String> {
        cadre_llm::ModelRegistry::resolve(self, name).map_err(|e| e.to_string())
    }

    fn known(&self) -> Vec<String> {
        self.list()
            .into_iter()
            .filter(|m| m.has_credentials)
            .map(|m| m.full_name)
            .collect()
    }

    fn catalog(&self) -> Vec<crate::roles::CatalogModel> {
        crate::roles::catalog_of(self)
    }
}

/// Asks the user whether a launch may go ahead (`subagents.authorization: ask`, D3).
pub trait LaunchConfirmer: Send + Sync {
    /// `summary` names the agent type and the task; `true` allows the launch.
    fn confirm<'a>(&'a self, summary: &'a str) -> BoxFuture<'a, bool>;
}

/// The conversation of a parent agent, for forks (O9).
pub trait ConversationSource: Send + Sync {
    /// The parent's messages up to and including the assistant message whose tool call has
    /// these `Agent` arguments (the call that asks for the fork).
    fn snapshot_for_call<'a>(
        &'a self,
        args: &'a serde_json::Value,
    ) -> BoxFuture<'a, Option<Vec<Message>>>;
}

/// What a parent is told: a finished background task or a supervision checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    /// `<task-notification>` (O6).
    Completion,
    /// `<progress-warning>` (L5).
    ProgressWarning,
    /// `<budget-warning>`: the session reached 80% of its token or cost cap.
    BudgetWarning,
}

/// A message for a parent agent, handed to the parent's front end through its notice channel.
///
/// The front end steers it into a running parent as a custom message, as Pi steers one
/// (`controller.steer_message(notice.message())`), or, for an idle parent, runs
/// `agent.prompt_messages(vec![notice.message()])`. Dropping the notice tells the manager it
/// was delivered; [`super::TaskManager::wait_idle`] counts undelivered notices, so a front end
/// keeps a notice until it has handed it to its agent.
#[derive(Debug)]
pub struct ParentNotice {
    pub kind: NoticeKind,
    pub task_id: String,
    text: String,
    pub(crate) _pending: Option<PendingGuard>,
}

impl ParentNotice {
    pub(crate) fn new(
        kind: NoticeKind,
        task_id: String,
        text: String,
        pending: Option<PendingGuard>,
    ) -> ParentNotice {
        ParentNotice {
            kind,
            task_id,
            text,
            _pending: pending,
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The notice handed on to the parent of `via`, the task it was meant for, which has ended
    /// and cannot take it: said up front so the receiver knows why a task it did not launch
    /// reports to it.
    pub(crate) fn passed_up(mut self, via: &str) -> ParentNotice {
        self.text = format!(
            "Task {via} launched this task and has ended without taking its result, so it is \
             passed on to you.\n{}",
            self.text
        );
        self
    }

    /// The notice as a runtime message (Pi's `custom` role, shown and sent as user content).
    pub fn message(&self) -> Message {
        let custom_type = match self.kind {
            NoticeKind::Completion => "task-notification",
            NoticeKind::ProgressWarning => "progress-warning",
            NoticeKind::BudgetWarning => "budget-warning",
        };
        Message::Custom(CustomMessage {
            custom_type: custom_type.into(),
            content: UserContent::Text(self.text.clone()),
            display: true,
            details: Some(serde_json::json!({ "taskId": self.task_id })),
            timestamp: now_millis(),
        })
    }
}

/// Who launches a task: the root session or a task that has the `Agent` tool.
#[derive(Clone)]
pub struct ParentRef {
    /// `None` for the root session.
    pub task_id: Option<String>,
    /// 0 for the root; a child is one deeper than its parent.
    pub depth: u32,
    pub session_id: Option<String>,
    pub session_file: Option<PathBuf>,
    pub cwd: PathBuf,
    /// The parent's active tool names (a child's tools are a subset, S1).
    pub active_tools: Vec<String>,
    pub model: Model,
    pub thinking: ThinkingLevel,
    /// For forks: the child runs with the same system prompt.
    pub system_prompt: String,
    /// Where this parent's notices go.
    pub notices: mpsc::UnboundedSender<ParentNotice>,
    /// For forks; `None` where the conversation is not observable.
    pub conversation: Option<Arc<dyn ConversationSource>>,
    /// What the parent task itself may not do; its children inherit it (none for the root).
    pub limits: InheritedLimits,
}

/// A task's restrictions that hold for everything below it: a child of a read-only task is
/// read-only, its shell policy is at most as wide as its parent's, and a parent's `Bash(…)`
/// patterns bind the child too. Without this a restricted role that may launch subagents would
/// hand any command to an unrestricted grandchild.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InheritedLimits {
    pub readonly: bool,
    /// `None`: no limit (the root).
    pub shell_policy: Option<cadre_tools::shell_policy::ShellPolicy>,
    /// Empty: no allowlist.
    pub bash_allow: Vec<String>,
}

impl ParentRef {
    pub fn is_root(&self) -> bool {
        self.task_id.is_none()
    }
}

/// One task of a launch: the `Agent` parameters (O1) except `tasks`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TaskSpec {
    pub description: String,
    pub prompt: String,
    pub subagent_type: Option<String>,
    pub name: Option<String>,
    pub model: Option<String>,
    pub thinking: Option<String>,
    pub run_in_background: Option<bool>,
    pub isolation: Option<String>,
    pub cwd: Option<String>,
    pub expected_output: Option<String>,
    pub warning_turns: Option<u32>,
    pub warning_interval_turns: Option<u32>,
    /// A delegation packet (D1), rendered before the prompt; `tool_policy: "no tools"` gives the
    /// child no tools at all.
    pub packet: Option<DelegationPacket>,
    /// A scoped probe's paths and stop condition (D2), rendered into the prompt.
    pub scope: Vec<String>,
    pub stop_condition: Option<String>,
    /// Run the review gate after the implementer ends (V5; `code` and `general-purpose`).
    pub review: bool,
    /// A JSON Schema: the child answers through a terminating `structured_output` tool (V8).
    pub output_schema: Option<serde_json::Value>,
}

/// The `Agent` call: one task, or `tasks` run in parallel (O1, V6).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct LaunchSpec {
    #[serde(flatten)]
    pub task: TaskSpec,
    pub tasks: Vec<TaskSpec>,
    /// The call's raw arguments (a fork finds its call in the parent's conversation by them).
    #[serde(skip)]
    pub raw: Option<serde_json::Value>,
}

impl LaunchSpec {
    /// The entries to launch: `tasks` (each inheriting the top-level warning values and
    /// background flag when it sets none), or the top-level task.
    pub fn entries(&self) -> Vec<TaskSpec> {
        if self.tasks.is_empty() {
            return vec![self.task.clone()];
        }
        self.tasks
            .iter()
            .map(|t| {
                let mut t = t.clone();
                t.warning_turns = t.warning_turns.or(self.task.warning_turns);
                t.warning_interval_turns = t
                    .warning_interval_turns
                    .or(self.task.warning_interval_turns);
                t.run_in_background = t.run_in_background.or(self.task.run_in_background);
                t
            })
            .collect()
    }
}

/// Whether the caller got the task's end or only its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// The task ended; `result` is its final text.
    Finished,
    /// Launched in the background; the result comes as a `<task-notification>`.
    Background,
    /// A foreground task promoted to supervised background at its first warning (L5).
    Promoted,
}

/// One task as its launcher sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskOutcome {
    pub task_id: String,
    pub name: Option<String>,
    pub agent: String,
    pub description: String,
    pub delivery: Delivery,
    pub status: TaskStatus,
    pub phase: TaskPhase,
    pub termination: Option<TerminationKind>,
    /// The final text as the parent may see it (neutralised, capped, O10); empty for an
    /// aborted or failed final message.
    pub result: String,
    pub truncated: bool,
    pub error: Option<String>,
    pub output_file: String,
    pub usage: TaskUsage,
    pub worktree: Option<WorktreeInfo>,
    /// The machine-built `<execution-receipt>` of the run (V3); empty while it runs.
    pub receipt: String,
}

impl TaskOutcome {
    /// `ok` for a completed task (or one still running in the background), `degraded` for a
    /// partial, failed or stopped one (V6).
    pub fn is_ok(&self) -> bool {
        matches!(self.status, TaskStatus::Completed | TaskStatus::Running)
    }
}

/// One entry of a launch: started (and maybe finished), or refused before it started.
#[derive(Debug)]
pub enum EntryOutcome {
    Started(Box<TaskOutcome>),
    Refused {
        description: String,
        error: LaunchError,
    },
}

/// A snapshot of one task (O3).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSnapshot {
    pub task_id: String,
    pub name: Option<String>,
    pub agent: String,
    pub description: String,
    pub status: TaskStatus,
    pub phase: TaskPhase,
    pub termination: Option<TerminationKind>,
    pub usage: TaskUsage,
    pub preview: String,
    /// The output so far (capped like a result).
    pub output: String,
    pub output_file: String,
    pub error: Option<String>,
    pub worktree: Option<WorktreeInfo>,
}

/// What `SendMessage` did.
#[derive(Debug, Clone, PartialEq)]
pub enum SendOutcome {
    /// A live task got the message as a steer.
    Steered { task_id: String },
    /// A finished task was reopened and ran to its end.
    Continued(Box<TaskOutcome>),
    /// A finished background task was reopened; its end comes as a notification.
    ResumedInBackground { task_id: String },
}

/// What happens to tasks, for live views (a task tree, progress notifications). Sent on a
/// broadcast channel: a slow listener misses events rather than slowing tasks down.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskEvent {
    /// A run started (after its quota slot was granted).
    Started {
        task_id: String,
        parent_task_id: Option<String>,
        /// The task's `name` (addressable by `SendMessage`), if it was given one.
        name: Option<String>,
        agent: String,
        description: String,
        background: bool,
        /// `starting` for a new task; a continued one resumes `working`. It becomes `working`
        /// at the first model call without an event of its own: the next `Turn` carries it.
        phase: TaskPhase,
    },
    /// A turn ended.
    Turn {
        task_id: String,
        usage: TaskUsage,
        /// The turn's text, first line.
        preview: String,
        /// The phase after the turn (`final_handoff` once the turn budget is reached).
        phase: TaskPhase,
        /// The task's token and cost budget after the turn (`None`: no cap).
        budget: Option<cadre_protocol::BudgetState>,
    },
    /// A run ended; the record is final.
    Ended {
        task_id: String,
        status: TaskStatus,
        termination: Option<TerminationKind>,
        /// What the task spent of its budget (`None`: no cap).
        budget: Option<cadre_protocol::BudgetState>,
    },
}

/// Why a launch (or a task operation) was refused. Every message is meant for the model.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("invalid Agent call: {0}")]
    Invalid(String),
    #[error("{0}")]
    Role(#[from] RoleLookupError),
    #[error("{0}")]
    Model(String),
    #[error("{0}")]
    Capability(#[from] CapabilityError),
    #[error(
        "cannot launch a subagent here: the maximum nesting depth ({max_depth}) is reached; do the work yourself"
    )]
    DepthLimit { max_depth: u32 },
    #[error("too many tasks in one call: {given} (at most {max})")]
    TooManyTasks { given: usize, max: usize },
    /// Refused by a rule of the manager: the code says which, the message says it to the
    /// model.
    #[error("{message}")]
    Refused { code: RefusalCode, message: String },
    /// The parent's (or the session's) token or cost budget has nothing left for a new task.
    #[error("cannot launch a subagent: {0}. Finish the work yourself with what you have")]
    BudgetExhausted(crate::budget::Exhausted),
    /// A cost budget is in force and the model has no price to count it by.
    #[error(
        "model `{0}` has no price in the model table, so a cost budget cannot be kept; choose a priced model, or set budgets.unknownPrice to \"tokens_only\" to count only its tokens"
    )]
    UnpricedModel(String),
    #[error("{0}")]
    Skill(#[from] SkillError),
    #[error("worktree isolation failed: {0}")]
    Worktree(#[from] WorktreeError),
    #[error("task record: {0}")]
    Store(#[from] StoreError),
    #[error("task session: {0}")]
    Session(#[from] SessionError),
    #[error("{0}")]
    Target(#[from] TargetError),
}

impl LaunchError {
    /// A refusal by one of the manager's rules.
    pub fn refused(code: RefusalCode, message: impl Into<String>) -> LaunchError {
        LaunchError::Refused {
            code,
            message: message.into(),
        }
    }

    /// The refusal's stable code, for front ends (the message is for the model).
    pub fn code(&self) -> RefusalCode {
        match self {
            LaunchError::Invalid(_) => RefusalCode::InvalidCall,
            LaunchError::Role(RoleLookupError::Unknown { .. }) => RefusalCode::UnknownRole,
            LaunchError::Role(RoleLookupError::Blocked { .. }) => RefusalCode::RoleUnavailable,
            LaunchError::Model(_) => RefusalCode::ModelUnavailable,
            LaunchError::Capability(_) => RefusalCode::Capability,
            LaunchError::DepthLimit { .. } => RefusalCode::DepthLimit,
            LaunchError::TooManyTasks { .. } => RefusalCode::TooManyTasks,
            LaunchError::Refused { code, .. } => *code,
            LaunchError::BudgetExhausted(_) => RefusalCode::BudgetExhausted,
            LaunchError::UnpricedModel(_) => RefusalCode::UnpricedModel,
            LaunchError::Skill(_) => RefusalCode::SkillUnavailable,
            LaunchError::Worktree(_) => RefusalCode::Worktree,
            LaunchError::Store(_) => RefusalCode::TaskRecord,
            LaunchError::Session(_) => RefusalCode::TaskSession,
            LaunchError::Target(TargetError::Unknown { .. }) => RefusalCode::UnknownTask,
            LaunchError::Target(TargetError::Ambiguous { .. }) => RefusalCode::AmbiguousTask,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_single_task_is_its_own_entry() {
        let s: LaunchSpec = serde_json::from_value(json!({
            "description": "d", "prompt": "p", "subagent_type": "Explore",
            "run_in_background": true, "warning_turns": 3
        }))
        .unwrap();
        let e = s.entries();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].prompt, "p");
        assert_eq!(e[0].subagent_type.as_deref(), Some("Explore"));
        assert_eq!(e[0].run_in_background, Some(true));
        assert_eq!(e[0].warning_turns, Some(3));
    }

    #[test]
    fn task_entries_inherit_top_level_warnings_and_background() {
        let s: LaunchSpec = serde_json::from_value(json!({
            "warning_turns": 5, "warning_interval_turns": 2, "run_in_background": true,
            "tasks": [
                {"prompt": "a"},
                {"prompt": "b", "warning_turns": 9, "run_in_background": false}
            ]
        }))
        .unwrap();
        let e = s.entries();
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[0].warning_turns, e[0].warning_interval_turns),
            (Some(5), Some(2))
        );
        assert_eq!(e[0].run_in_background, Some(true));
        assert_eq!(
            (e[1].warning_turns, e[1].warning_interval_turns),
            (Some(9), Some(2))
        );
        assert_eq!(e[1].run_in_background, Some(false));
    }

    #[test]
    fn bad_argument_types_are_rejected_and_unknown_keys_ignored() {
        assert!(serde_json::from_value::<LaunchSpec>(json!({"prompt": 5})).is_err());
        assert!(serde_json::from_value::<LaunchSpec>(json!({"tasks": "x"})).is_err());
        assert!(
            serde_json::from_value::<LaunchSpec>(json!({"prompt": "p", "warning_turns": -1}))
                .is_err()
        );
        let s: LaunchSpec =
            serde_json::from_value(json!({"prompt": "p", "something_new": true})).unwrap();
        assert_eq!(s.task.prompt, "p");
        assert_eq!(s.raw, None);
    }

    #[test]
    fn notices_become_custom_messages() {
        let n = ParentNotice::new(
            NoticeKind::Completion,
            "t1".into(),
            "<task-notification>x</task-notification>".into(),
            None,
        );
        let Message::Custom(c) = n.message() else {
            panic!("not custom")
        };
        assert_eq!(c.custom_type, "task-notification");
        assert!(c.display);
        assert_eq!(c.content.to_text(), n.text());
        let w = ParentNotice::new(NoticeKind::ProgressWarning, "t1".into(), "w".into(), None);
        let Message::Custom(c) = w.message() else {
            panic!("not custom")
        };
        assert_eq!(c.custom_type, "progress-warning");
    }

    #[test]
    fn only_completed_and_running_tasks_are_ok() {
        let mut o = TaskOutcome {
            task_id: "t".into(),
            name: None,
            agent: "a".into(),
            description: "d".into(),
            delivery: Delivery::Finished,
            status: TaskStatus::Completed,
            phase: TaskPhase::Terminal,
            termination: None,
            result: String::new(),
            truncated: false,
            error: None,
            output_file: String::new(),
            usage: TaskUsage::default(),
            worktree: None,
            receipt: String::new(),
        };
        assert!(o.is_ok());
        o.status = TaskStatus::Running;
        assert!(o.is_ok());
        for s in [TaskStatus::Partial, TaskStatus::Failed, TaskStatus::Stopped] {
            o.status = s;
            assert!(!o.is_ok(), "{s:?}");
        }
    }
}
