//! Checking a launch before anything is created or any model is called: role, model and
//! thinking (T6, T7), fork source (O9), tool set (S1, O8), budgets and supervision (L2–L5), cwd
//! and isolation (O11), plan mode (S6) and skills (T8).

use std::path::PathBuf;
use std::sync::Arc;

use cadre_llm::{Model, resolve_thinking};
use cadre_protocol::{
    ContentBlock, Message, TaskBudgets, ThinkingLevel, ToolResultMessage, WarningSchedule,
    now_millis,
};

use super::Inner;
use super::refusal_code::RefusalCode;
use super::structured::STRUCTURED_OUTPUT_TOOL;
use super::types::{InheritedLimits, LaunchError, ParentRef, TaskSpec};
use crate::handoff::schema::check_schema;
use crate::orchestrator::capability::{
    AGENT_TOOL, CapabilityInput, CapabilitySet, DropReason, bash_runs_read_only,
    resolve_capabilities,
};
use crate::orchestrator::settings::DispatchMode;
use crate::roles::model_alias::{ExpandContext, ModelPlan, Settled, expanded_name, settle};
use crate::roles::{
    AgentOverride, ContextMode, Isolation, ResolveInputs, RoleDef, ShellPolicy, Skill, SkillSearch,
    SubagentModelConfig, ToolList, load_skills, resolve_model,
};

/// The synthetic result of tool calls still open when a fork starts (O9).
pub const FORK_OPEN_CALL_RESULT: &str = "fork started; this call continues outside the child";

/// A task that passed every check and is ready to start.
pub(crate) struct Prepared {
    pub spec: TaskSpec,
    pub role: RoleDef,
    pub model: Model,
    pub fallback: Option<String>,
    /// The fallback to retry with when the first model call fails (T7).
    pub retry_model: Option<Model>,
    pub requested_thinking: ThinkingLevel,
    pub thinking: ThinkingLevel,
    pub clamp_reason: Option<String>,
    pub caps: CapabilitySet,
    pub budgets: TaskBudgets,
    pub warnings: WarningSchedule,
    pub background: bool,
    pub cwd: PathBuf,
    pub worktree: bool,
    pub skills: Vec<Skill>,
    /// For a fork: the parent's conversation, open calls answered.
    pub fork_history: Option<Vec<Message>>,
    pub diagnostics: Vec<String>,
}

/// A child is held to its parent task's restrictions as well as its role's (see
/// [`InheritedLimits`]): read-only when the parent is, the narrower shell policy, and the
/// parent's `Bash(…)` patterns unless the role's own are among them. A role with other patterns
/// than its parent's cannot launch under it: the two lists cannot be combined into one.
fn apply_parent_limits(
    role: &mut RoleDef,
    limits: &InheritedLimits,
    diagnostics: &mut Vec<String>,
) -> Result<(), LaunchError> {
    if limits.readonly && !role.readonly {
        role.readonly = true;
        diagnostics.push("runs read-only: its parent task is read-only".to_string());
    }
    if let Some(parent_policy) = limits.shell_policy {
        let narrower = narrower_policy(role.shell_policy, parent_policy);
        if narrower != role.shell_policy {
            diagnostics.push(format!(
                "its bash runs under the `{narrower}` shell policy of its parent task"
            ));
            role.shell_policy = narrower;
        }
    }
    if !limits.bash_allow.is_empty() {
        if role.bash_allow.is_empty() {
            role.bash_allow = limits.bash_allow.clone();
            diagnostics.push(format!(
                "its bash runs only the commands its parent task may run: {}",
                limits.bash_allow.join(", ")
            ));
        } else if !role
            .bash_allow
            .iter()
            .all(|p| limits.bash_allow.contains(p))
        {
            return Err(LaunchError::refused(
                RefusalCode::OutsideParentLimits,
                format!(
                    "`{}` has its own Bash(…) command patterns ({}), which are not among its parent \
                 task's ({}); launch a role without patterns, or with some of the parent's",
                    role.name,
                    role.bash_allow.join(", "),
                    limits.bash_allow.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The narrower of two shell policies: `none` < `inspect` < `verify` < `unrestricted`
/// (`verify` is `inspect` plus the verifiers).
pub(crate) fn narrower_policy(a: ShellPolicy, b: ShellPolicy) -> ShellPolicy {
    let rank = |p: ShellPolicy| match p {
        ShellPolicy::None => 0,
        ShellPolicy::Inspect => 1,
        ShellPolicy::Verify => 2,
        ShellPolicy::Unrestricted => 3,
    };
    if rank(a) <= rank(b) { a } else { b }
}

fn is_fork(role: &RoleDef) -> bool {
    role.context == ContextMode::Fork
}

/// The model keys of the settings, in the shape `roles::resolve_model` takes.
fn model_config(inner: &Inner) -> SubagentModelConfig {
    let s = &inner.settings;
    SubagentModelConfig {
        default_model: s.default_model.clone(),
        fallback_model: s.fallback_model.clone(),
        agent_overrides: s
            .agent_overrides
            .iter()
            .map(|(name, o)| {
                (
                    name.clone(),
                    AgentOverride {
                        model: o.model.clone(),
                        fallback_model: o.fallback_model.clone(),
                        thinking: o.thinking,
                    },
                )
            })
            .collect(),
        model_aliases: s.model_aliases.clone(),
    }
}

/// Check everything a launch needs before anything is created or any model is called.
pub(crate) async fn prepare(
    inner: &Arc<Inner>,
    parent: &ParentRef,
    spec: TaskSpec,
    raw: Option<&serde_json::Value>,
) -> Result<Prepared, LaunchError> {
    if spec.prompt.trim().is_empty() {
        return Err(LaunchError::Invalid("`prompt` must not be empty".into()));
    }
    let role_name = spec
        .subagent_type
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(crate::roles::builtin::DEFAULT_ROLE);
    let mut role = inner.roster.get(role_name)?.def.clone();
    let mut diagnostics = Vec::new();
    apply_parent_limits(&mut role, &parent.limits, &mut diagnostics)?;
    if spec.review && !super::review::REVIEWABLE_ROLES.contains(&role.name.as_str()) {
        return Err(LaunchError::refused(
            RefusalCode::NotReviewable,
            format!(
                "`review: true` is only for {} tasks; `{}` cannot be reviewed by the gate (launch a \
             `review` task yourself instead)",
                super::review::REVIEWABLE_ROLES.join(" and "),
                role.name
            ),
        ));
    }

    // Model and thinking (T6, T7).
    let call_thinking = match spec.thinking.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(t) => Some(ThinkingLevel::parse(t).ok_or_else(|| {
            LaunchError::Invalid(format!(
                "unknown thinking level `{t}` (use off, minimal, low, medium, high, xhigh or max)"
            ))
        })?),
    };
    let config = model_config(inner);
    let parent_model_name = parent.model.full_name();
    let resolved = resolve_model(&ResolveInputs {
        role: &role,
        call_model: spec
            .model
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty()),
        call_thinking,
        config: &config,
        parent_model: &parent_model_name,
        parent_thinking: parent.thinking,
    });
    diagnostics.extend(resolved.notes.iter().cloned());
    // Aliases and Claude ids by family (`roles::model_alias`): the same reading `cadre agents`
    // shows. A role file's model that cannot be had runs the child on the parent's model.
    let catalog = inner.models.catalog();
    let cx = ExpandContext {
        readonly: role.readonly,
        parent_provider: Some(parent.model.provider.as_str()),
        aliases: &config.model_aliases,
        catalog: &catalog,
    };
    let plan = ModelPlan::new(resolved.model_source, &resolved.model, &cx);
    diagnostics.extend(plan.note());
    let fallback = resolved
        .fallback
        .as_deref()
        .map(|f| expanded_name(f, &cx))
        .filter(|f| Some(f.as_str()) != plan.target());
    let mut switched = false;
    let settled = settle(&plan, fallback.as_deref(), |name| {
        if name == parent_model_name {
            Ok(parent.model.clone())
        } else {
            inner.models.resolve(name)
        }
    });
    let model = match settled {
        Settled::Model {
            model,
            fallback_note,
            ..
        } => {
            if let Some(note) = fallback_note {
                diagnostics.push(note);
                switched = true;
            }
            model
        }
        Settled::Parent { note } => {
            // A fallback already tried is not retried.
            switched = note.is_some();
            diagnostics.extend(note);
            parent.model.clone()
        }
        Settled::Failed {
            name,
            error,
            fallback: Some((fb, e)),
        } => {
            return Err(LaunchError::Model(format!(
                "model `{name}` is not available ({error}) and neither is its fallback `{fb}` ({e}). Known models: {}",
                known_models(inner)
            )));
        }
        Settled::Failed { name, error, .. } => {
            return Err(LaunchError::Model(format!(
                "model `{name}` is not available: {error}. Known models: {}",
                known_models(inner)
            )));
        }
    };
    let thinking = resolve_thinking(&model, resolved.thinking);
    // T7: the fallback a child is retried with, once, when its very first call fails.
    let retry_model = match fallback.as_deref() {
        Some(fb) if !switched && fb != model.full_name() => match inner.models.resolve(fb) {
            Ok(m) => Some(m),
            Err(e) => {
                diagnostics.push(format!("fallback model `{fb}` unavailable: {e}"));
                None
            }
        },
        _ => None,
    };

    // Fork (O9).
    let fork_history = if is_fork(&role) {
        if !parent.is_root() {
            return Err(LaunchError::refused(
                RefusalCode::ForkUnavailable,
                "a fork starts only from the root session",
            ));
        }
        if !inner.settings.enable_fork {
            return Err(LaunchError::refused(
                RefusalCode::ForkUnavailable,
                "forks are disabled (subagents.enableFork is false)",
            ));
        }
        let source = parent.conversation.as_ref().ok_or_else(|| {
            LaunchError::refused(
                RefusalCode::ForkUnavailable,
                "this session cannot fork: its conversation is not available",
            )
        })?;
        let args = raw.cloned().unwrap_or(serde_json::Value::Null);
        let history = source.snapshot_for_call(&args).await.ok_or_else(|| {
            LaunchError::refused(
                RefusalCode::ForkUnavailable,
                "cannot find the fork call in the parent's conversation",
            )
        })?;
        Some(close_open_calls(history))
    } else {
        None
    };

    // Tools (S1, O8).
    let depth = parent.depth + 1;
    let role_tools: Option<Vec<String>> = match &role.tools {
        ToolList::All => None,
        ToolList::Named(names) => Some(names.clone()),
    };
    let role_allows_agent = inner.settings.enable_nested_agents
        && matches!(&role.tools, ToolList::Named(n) if n.iter().any(|t| t == AGENT_TOOL));
    let known = inner.known_tools();
    let mcp_read_only = inner.mcp_read_only_tools();
    let mut caps = resolve_capabilities(CapabilityInput {
        parent_active: &parent.active_tools,
        role_tools: role_tools.as_deref(),
        disallowed: &role.disallowed_tools,
        readonly: role.readonly,
        depth,
        max_depth: inner.settings.max_agent_depth,
        role_allows_agent,
        tool_policy_no_tools: spec.packet.as_ref().is_some_and(|p| p.no_tools()),
        known_tools: &known,
        mcp_read_only: &mcp_read_only,
    })?;
    // What a portable role file asked for and does not get is said in the task record (T9):
    // the file's own notes (dropped host-only tools, ignored keys) and the tools it names that
    // this session lacks (an MCP server that is not configured).
    diagnostics.extend(role.notes.iter().map(|n| format!("role file: {n}")));
    if let Some(named) = role_tools.as_deref() {
        for d in caps.dropped.iter().filter(|d| {
            named.contains(&d.name)
                && matches!(
                    d.reason,
                    DropReason::NotInParent | DropReason::McpServerAbsent
                )
        }) {
            diagnostics.push(format!("`{}` is left out: {}", d.name, d.reason));
        }
    }

    // A task without a write tool gets a shell that cannot write either (S2), whatever its
    // `Bash(…)` patterns: said in the record, since the role file may expect otherwise.
    if !role.readonly && caps.contains("bash") && bash_runs_read_only(false, &caps.tools) {
        diagnostics.push(
            "its bash runs in the read-only sandbox: its tools hold no edit or write".to_string(),
        );
    }

    // Structured output (V8): a schema the validator cannot fully enforce is refused.
    if let Some(schema) = &spec.output_schema {
        check_schema(schema)
            .map_err(|e| LaunchError::Invalid(format!("output_schema is not usable: {e}")))?;
        if spec.review {
            return Err(LaunchError::Invalid(
                "`review: true` and `output_schema` cannot be combined: a structured answer \
                 ends the task before any review"
                    .into(),
            ));
        }
        if !caps.tools.iter().any(|t| t == STRUCTURED_OUTPUT_TOOL) {
            caps.tools.push(STRUCTURED_OUTPUT_TOOL.to_string());
        }
    }

    // Budgets and supervision (L2–L5).
    let defaults = inner.settings.default_budgets();
    let budgets = TaskBudgets {
        max_turns: role.max_turns.or(defaults.max_turns),
        grace_turns: role.grace_turns.unwrap_or(defaults.grace_turns),
        max_tool_calls: role.max_tool_calls.or(defaults.max_tool_calls),
        soft_tool_calls: role.soft_tool_calls.or(defaults.soft_tool_calls),
        tool_budget_block: match &role.tool_budget_block {
            Some(ToolList::All) => vec!["*".to_string()],
            Some(ToolList::Named(names)) => names.clone(),
            None => defaults.tool_budget_block,
        },
        timeout_ms: role.timeout_ms.or(defaults.timeout_ms),
        max_cost_usd: role.max_cost_usd,
        max_tokens: role.max_tokens,
    };
    let default_warnings = inner.settings.warning_schedule();
    let warnings = WarningSchedule {
        warning_turns: spec
            .warning_turns
            .or(role.warning_turns)
            .unwrap_or(default_warnings.warning_turns)
            .max(1),
        warning_interval_turns: spec
            .warning_interval_turns
            .or(role.warning_interval_turns)
            .unwrap_or(default_warnings.warning_interval_turns),
    };
    let background = inner.settings.enable_background
        && inner.settings.dispatch != DispatchMode::Sequential
        && spec.run_in_background.or(role.background).unwrap_or(
            parent.depth == 0
                && inner
                    .root_background_default
                    .load(std::sync::atomic::Ordering::SeqCst),
        );

    // Where it runs (O11).
    let cwd = match spec.cwd.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
        None => parent.cwd.clone(),
        Some(c) => {
            let p = parent.cwd.join(c);
            if !p.is_dir() {
                return Err(LaunchError::Invalid(format!(
                    "cwd `{}` is not a directory",
                    p.display()
                )));
            }
            p
        }
    };
    let worktree = match spec.isolation.as_deref().map(str::trim) {
        None | Some("") => role.isolation == Isolation::Worktree,
        Some("none") => false,
        Some("worktree") => true,
        Some(other) => {
            return Err(LaunchError::Invalid(format!(
                "unknown isolation `{other}` (use none or worktree)"
            )));
        }
    };
    if inner.plan_mode.load(std::sync::atomic::Ordering::SeqCst) {
        if !role.plan_mode_compatible() {
            return Err(LaunchError::refused(
                RefusalCode::PlanMode,
                format!(
                    "plan mode: `{}` may not launch; only read-only planning roles (such as Explore, \
                 Plan, research, review, advisor) may",
                    role.name
                ),
            ));
        }
        if worktree {
            return Err(LaunchError::refused(
                RefusalCode::PlanMode,
                "plan mode: worktree isolation is refused",
            ));
        }
    }
    if worktree && !inner.settings.enable_worktrees {
        return Err(LaunchError::refused(
            RefusalCode::WorktreeDisabled,
            "worktree isolation is disabled (subagents.enableWorktrees is false)",
        ));
    }

    // Skills (T8): a missing skill fails the launch.
    let skills = if role.skills.is_empty() {
        Vec::new()
    } else {
        let home = crate::config::CadreHome::new(inner.cadre_home.clone());
        let home_dir = std::env::var_os("HOME").map(PathBuf::from);
        let search = SkillSearch::new(&home, home_dir.as_deref(), &cwd, inner.trusted);
        load_skills(&role.skills, &search)?
    };

    Ok(Prepared {
        spec,
        model,
        fallback,
        retry_model,
        requested_thinking: thinking.requested,
        thinking: thinking.effective,
        clamp_reason: thinking.clamp_reason,
        caps,
        budgets,
        warnings,
        background,
        cwd,
        worktree,
        skills,
        fork_history,
        diagnostics,
        role,
    })
}

fn known_models(inner: &Inner) -> String {
    let known = inner.models.known();
    if known.is_empty() {
        "none with credentials".into()
    } else {
        known.join(", ")
    }
}

/// Answer every call the last assistant message left open (the fork call and its siblings).
fn close_open_calls(mut history: Vec<Message>) -> Vec<Message> {
    let Some(last_assistant) = history
        .iter()
        .rposition(|m| matches!(m, Message::Assistant(_)))
    else {
        return history;
    };
    let Message::Assistant(a) = &history[last_assistant] else {
        return history;
    };
    let answered: Vec<String> = history[last_assistant + 1..]
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.tool_call_id.clone()),
            _ => None,
        })
        .collect();
    let open: Vec<ToolResultMessage> = a
        .tool_calls()
        .filter(|c| !answered.contains(&c.id))
        .map(|c| ToolResultMessage {
            tool_call_id: c.id.clone(),
            tool_name: c.name.clone(),
            content: vec![ContentBlock::text(FORK_OPEN_CALL_RESULT)],
            details: None,
            is_error: false,
            timestamp: now_millis(),
        })
        .collect();
    // Keep only results that directly follow the assistant message, then add the new ones.
    history.truncate(last_assistant + 1 + answered.len());
    history.extend(open.into_iter().map(Message::ToolResult));
    history
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_protocol::{AssistantMessage, ToolCall};

    fn assistant(calls: &[&str]) -> Message {
        let mut a = AssistantMessage::empty("x", "y", "z");
        for id in calls {
            a.content.push(ContentBlock::ToolCall(ToolCall {
                id: (*id).into(),
                name: "ls".into(),
                arguments: serde_json::json!({}),
            }));
        }
        Message::Assistant(a)
    }

    fn result(id: &str) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "ls".into(),
            content: vec![ContentBlock::text("done")],
            details: None,
            is_error: false,
            timestamp: 0,
        })
    }

    fn ids(history: &[Message]) -> Vec<(String, String)> {
        history
            .iter()
            .filter_map(|m| match m {
                Message::ToolResult(r) => Some((
                    r.tool_call_id.clone(),
                    cadre_protocol::join_text(&r.content),
                )),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_open_call_of_the_forking_message_gets_the_fork_result() {
        let h = close_open_calls(vec![
            Message::user("go"),
            assistant(&["a"]),
            result("a"),
            assistant(&["b", "c", "d"]),
            result("c"),
        ]);
        assert_eq!(h.len(), 7);
        assert_eq!(
            ids(&h),
            [
                ("a".to_string(), "done".to_string()),
                ("c".into(), "done".into()),
                ("b".into(), FORK_OPEN_CALL_RESULT.into()),
                ("d".into(), FORK_OPEN_CALL_RESULT.into()),
            ]
        );
    }

    #[test]
    fn a_history_without_assistant_messages_is_unchanged() {
        let h = close_open_calls(vec![Message::user("go")]);
        assert_eq!(h.len(), 1);
        assert!(close_open_calls(Vec::new()).is_empty());
        let h = close_open_calls(vec![Message::user("go"), assistant(&[])]);
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn a_child_is_held_to_its_parent_tasks_limits() {
        let role = |readonly, policy, patterns: &[&str]| RoleDef {
            name: "r".into(),
            readonly,
            shell_policy: policy,
            bash_allow: patterns.iter().map(|p| p.to_string()).collect(),
            ..RoleDef::default()
        };
        let limits = |readonly, policy, patterns: &[&str]| InheritedLimits {
            readonly,
            shell_policy: policy,
            bash_allow: patterns.iter().map(|p| p.to_string()).collect(),
        };
        use ShellPolicy::{Inspect, None as NoShell, Unrestricted, Verify};
        // (role, parent limits, effective readonly, policy, patterns) — or refused.
        type Want = Option<(bool, ShellPolicy, Vec<&'static str>)>;
        let cases: Vec<(RoleDef, InheritedLimits, Want)> = vec![
            (
                role(false, Unrestricted, &[]),
                InheritedLimits::default(),
                Some((false, Unrestricted, vec![])),
            ),
            (
                role(false, Unrestricted, &[]),
                limits(true, Some(Inspect), &[]),
                Some((true, Inspect, vec![])),
            ),
            (
                role(true, Verify, &[]),
                limits(false, Some(Inspect), &[]),
                Some((true, Inspect, vec![])),
            ),
            (
                role(false, Inspect, &[]),
                limits(false, Some(Verify), &[]),
                Some((false, Inspect, vec![])),
            ),
            (
                role(false, Unrestricted, &[]),
                limits(false, Some(NoShell), &[]),
                Some((false, NoShell, vec![])),
            ),
            (
                role(false, Unrestricted, &[]),
                limits(false, Some(Unrestricted), &["git status:*"]),
                Some((false, Unrestricted, vec!["git status:*"])),
            ),
            (
                role(false, Unrestricted, &["git status:*"]),
                limits(false, Some(Unrestricted), &["git status:*", "ls"]),
                Some((false, Unrestricted, vec!["git status:*"])),
            ),
            (
                role(false, Unrestricted, &["rm:*"]),
                limits(false, Some(Unrestricted), &["git status:*"]),
                None,
            ),
        ];
        for (mut r, l, want) in cases {
            let mut notes = Vec::new();
            let got = apply_parent_limits(&mut r, &l, &mut notes).map(|()| {
                (
                    r.readonly,
                    r.shell_policy,
                    r.bash_allow.iter().map(String::as_str).collect::<Vec<_>>(),
                )
            });
            match (got, want) {
                (Ok((ro, p, pats)), Some((wro, wp, wpats))) => {
                    assert_eq!((ro, p, pats.clone()), (wro, wp, wpats.clone()), "{l:?}");
                }
                (Err(e), None) => assert!(e.to_string().contains("not among"), "{e}"),
                (got, want) => panic!("{l:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}
