//! Building a child agent: the task as it reads it, its tools (the parent's objects, its own
//! bash under the role's shell policy and sandbox, its own `Agent` tool when it may nest), its
//! system prompt; and the notice channel of a task that launches children.

use std::path::PathBuf;
use std::sync::Arc;

use cadre_llm::Model;
use cadre_protocol::{Message, ThinkingLevel};
use cadre_tools::sandbox::{SandboxConfig, WriterBoundary, scratch_dir_path};
use cadre_tools::shell_policy::CommandAllowlist;
use cadre_tools::{BashTool, ToolRegistry};
use tokio::sync::mpsc;

use super::Inner;
use super::digest::Sha256Tool;
use super::handle::lock;
use super::prompt::{child_system_prompt, task_message};
use super::refusal_code::RefusalCode;
use super::sandbox_dirs;
use super::structured::{
    STRUCTURED_OUTPUT_INSTRUCTION, STRUCTURED_OUTPUT_TOOL, StructuredOutputTool, StructuredSlot,
};
use super::types::{InheritedLimits, LaunchError, NoticeKind, ParentNotice, ParentRef, TaskSpec};
use crate::agent::{Agent, AgentConfig, EventDetail};
use crate::handoff::contract::{render_packet, render_scope};
use crate::handoff::packet::SHA256_TOOL;
use crate::orchestrator::capability::{AGENT_TOOL, CapabilitySet, bash_runs_read_only};
use crate::orchestrator::tools::AgentTool;
use crate::roles::{RoleDef, ShellPolicy, Skill};
use crate::session::SessionWriter;

const BASH_TOOL: &str = "bash";

/// The task as the child reads it: the delegation packet (D1), the prompt, the probe's scope
/// (D2), and the output contract at the very end (V1).
pub(crate) fn task_text(spec: &TaskSpec) -> String {
    let mut text = String::new();
    if let Some(packet) = &spec.packet {
        text.push_str(render_packet(packet).trim_end());
        text.push_str("\n\n");
    }
    text.push_str(spec.prompt.trim_end());
    let scope = render_scope(&spec.scope, spec.stop_condition.as_deref());
    if !scope.trim().is_empty() {
        text.push_str("\n\n");
        text.push_str(scope.trim_end());
    }
    if spec.output_schema.is_some() {
        text.push_str("\n\n");
        text.push_str(STRUCTURED_OUTPUT_INSTRUCTION);
    }
    task_message(&text, spec.expected_output.as_deref())
}

/// A fork's first message: the fork role's instructions, then the task.
pub(crate) fn fork_message(role: &RoleDef, spec: &TaskSpec) -> String {
    let task = task_text(spec);
    let intro = role.prompt.trim();
    let intro = if intro.is_empty() {
        "You are a fork of the agent above: you share its conversation so far and now work on \
         your own. Your final message is all the agent above will see."
    } else {
        intro
    };
    format!("{intro}\n\nYour task:\n\n{task}")
}

/// What a child agent is built from (a fresh launch or a reopened task).
pub(crate) struct ChildBuild<'a> {
    /// The enforced read-only flag and shell policy (the role's, or as persisted on reopen).
    pub readonly: bool,
    pub shell_policy: ShellPolicy,
    /// The role's `Bash(…)` command patterns (or as persisted on reopen); empty: none.
    pub bash_allow: &'a [String],
    pub task_id: &'a str,
    pub depth: u32,
    pub role: &'a RoleDef,
    pub skills: &'a [Skill],
    pub caps: &'a CapabilitySet,
    pub model: Model,
    pub thinking: ThinkingLevel,
    pub cwd: PathBuf,
    /// `Some` for forks: the parent's system prompt.
    pub system_prompt: Option<String>,
    pub history: Vec<Message>,
    pub session: SessionWriter,
    /// A task with `output_schema`: the schema and where the accepted value goes (V8).
    pub structured: Option<(serde_json::Value, StructuredSlot)>,
    /// The task's budget node: every request its agent makes is admitted and charged there.
    pub budget: &'a Arc<crate::budget::BudgetNode>,
}

/// Build the child's agent: its tools (the parent's tool objects, its own `bash` under the
/// role's shell policy and sandbox, its own `Agent` tool when nesting is allowed), system prompt
/// and event channel.
pub(crate) fn build_child_agent(
    inner: &Arc<Inner>,
    b: ChildBuild<'_>,
) -> Result<(Agent, mpsc::UnboundedReceiver<cadre_protocol::AgentEvent>), LaunchError> {
    let mut tools = ToolRegistry::new();
    let stop = Arc::new(std::sync::OnceLock::new());
    for name in &b.caps.tools {
        if name == AGENT_TOOL {
            if let Some(manager) = inner.manager() {
                let child_parent = child_parent_ref(inner, &b);
                tools.register(Arc::new(AgentTool::new(manager, child_parent)));
            }
        } else if name == SHA256_TOOL {
            tools.register(Arc::new(Sha256Tool));
        } else if name == STRUCTURED_OUTPUT_TOOL {
            if let Some((schema, slot)) = &b.structured {
                tools.register(Arc::new(StructuredOutputTool::new(
                    schema.clone(),
                    Arc::clone(slot),
                    Arc::clone(&stop),
                )));
            }
        } else if name == BASH_TOOL {
            tools.register(child_bash(inner, &b)?);
        } else if let Some(tool) = inner.tools.get(name) {
            tools.register(Arc::clone(tool));
        }
    }
    shared_specs(inner, &b, &mut tools);
    let system_prompt = match b.system_prompt {
        Some(p) => p,
        None => child_system_prompt(b.role, b.skills, &tools.specs(), &b.cwd, &inner.cadre_home),
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let config = AgentConfig {
        provider: crate::budget::MeteredProvider::wrap(Arc::clone(&inner.provider), b.budget),
        model: b.model,
        thinking: b.thinking,
        system_prompt,
        tools,
        cwd: b.cwd,
        artifacts_dir: inner.artifacts_dir.clone(),
        events: Some(tx),
        compaction: inner.compaction(),
    };
    let mut agent = Agent::new(config, b.history, Some(b.session));
    let _ = stop.set(agent.controller());
    // The supervisor acts on turn ends and tool ends only: no copies of deltas, messages or
    // the conversation for events it would drop.
    agent.set_event_detail(EventDetail::Supervisor);
    Ok((agent, rx))
}

/// Give `tools` the specs of an earlier child with the same tool set, or make theirs the shared
/// copy. The specs of the manager's tool objects never change, and a child's own `bash` is
/// described by its read-only flag, shell policy and plan-file permission alone; a set with an
/// `Agent` tool (described per depth) or a structured-output tool (per schema) is not shared.
/// With plan files allowed, a read-only bash names the project's plans directory, so the
/// working directory is part of the shape.
fn shared_specs(inner: &Inner, b: &ChildBuild<'_>, tools: &mut ToolRegistry) {
    if b.structured.is_some() || b.caps.tools.iter().any(|t| t == AGENT_TOOL) {
        return;
    }
    let plans_in = b.role.allow_plan_files.then_some(&b.cwd);
    let key = format!(
        "{:?}|{}|{:?}|{:?}|{}|{:?}",
        b.caps.tools, b.readonly, b.shell_policy, plans_in, b.role.network, b.bash_allow
    );
    let mut cache = lock(&inner.child_specs);
    match cache.get(&key) {
        Some(specs) => {
            tools.reuse_specs(specs);
        }
        None => {
            cache.insert(key, tools.specs());
        }
    }
}

/// The child's bash: its role's shell policy and command patterns are checked before every
/// command (S3; patterns that cannot be read fail the launch, never widen it); the commands of a
/// read-only role, or of a task without a write tool (`bash_runs_read_only`), run only inside
/// the kernel sandbox, writable beneath a private scratch
/// directory (and `.cadre/plans/` with `allowPlanFiles`), never unsandboxed (S2). Every child's
/// commands end with their call — whatever they started, `setsid` included — and time out
/// after the role's `bashTimeoutMs` (else `subagents.bashTimeoutMs`), which a call's own
/// `timeout` may shorten but not lengthen or remove (S8).
fn child_bash(
    inner: &Inner,
    b: &ChildBuild<'_>,
) -> Result<Arc<dyn cadre_tools::Tool>, LaunchError> {
    let timeout = b
        .role
        .bash_timeout_ms
        .or(inner.settings.bash_timeout_ms)
        .map(std::time::Duration::from_millis);
    let policy = b.shell_policy;
    let allowlist = CommandAllowlist::parse(b.bash_allow).map_err(|e| {
        LaunchError::refused(
            RefusalCode::BashPatterns,
            format!("the role's Bash(…) command patterns: {e}"),
        )
    })?;
    let refused = |what: &str, e: String| {
        LaunchError::refused(
            RefusalCode::SandboxUnavailable,
            format!("cannot prepare the read-only sandbox: {what}: {e}"),
        )
    };
    // Named only: bash creates it before its first command, so a child that never runs bash
    // (most read-only children) costs no directory.
    let scratch_parent = match inner.scratch_parent.get() {
        Some(parent) => parent.clone(),
        None => {
            let parent = sandbox_dirs::scratch_parent(&inner.cadre_home)
                .map_err(|e| refused("scratch", e))?;
            inner.scratch_parent.get_or_init(|| parent).clone()
        }
    };
    let scratch = scratch_dir_path(&scratch_parent);
    let bash = if bash_runs_read_only(b.readonly, &b.caps.tools) {
        let mut extra_writable = Vec::new();
        if b.role.allow_plan_files {
            let root = crate::config::project_root(&b.cwd);
            let plans = sandbox_dirs::plans_dir(&root, inner.trusted)
                .map_err(|e| refused("plans directory", e))?;
            extra_writable.extend(plans);
        }
        BashTool::sandboxed(SandboxConfig {
            exe: inner.sandbox_exe.clone(),
            scratch_dir: scratch,
            extra_writable,
            policy,
            network: b.role.network,
        })
    } else {
        BashTool::new()
            .with_policy(policy)
            .contained()
            .within(writer_boundary(inner, &b.cwd, Some(scratch)))
    };
    let bash = match &inner.shell_env {
        Some(env) => bash.with_shell_env(Arc::clone(env)),
        None => bash,
    };
    let bash = bash
        .with_allowlist(allowlist)
        .with_reaping()
        .with_timeout_limit(timeout);
    let bash = if inner.settings.keep_scratch {
        bash
    } else {
        bash.removing_scratch()
    };
    Ok(Arc::new(bash))
}

/// Where a writing child's commands may write: its project (or worktree), its private
/// temporary directory `scratch` (its `TMPDIR`) and the `writableRoots` the user configured;
/// git's configuration and hooks, the hosts' settings in the project and cadre's home stay
/// read-only (`cadre_tools::sandbox::writer`).
pub(crate) fn writer_boundary(
    inner: &Inner,
    cwd: &std::path::Path,
    scratch: Option<std::path::PathBuf>,
) -> WriterBoundary {
    let root = crate::config::project_root(cwd);
    WriterBoundary::for_project(
        &root,
        scratch,
        &inner.settings.writable_roots,
        std::slice::from_ref(&inner.cadre_home),
    )
}

/// A shell policy as persisted in a task record; an unknown value is the strictest.
pub(crate) fn parse_shell_policy(s: &str) -> ShellPolicy {
    s.parse().unwrap_or(ShellPolicy::None)
}

/// The child as a parent of its own children (O8): its notices are delivered into it.
fn child_parent_ref(inner: &Arc<Inner>, b: &ChildBuild<'_>) -> ParentRef {
    let sink = child_sink(inner, b.task_id);
    ParentRef {
        task_id: Some(b.task_id.to_string()),
        depth: b.depth,
        session_id: Some(b.session.session_id().to_string()),
        session_file: Some(b.session.path().to_path_buf()),
        cwd: b.cwd.clone(),
        active_tools: b.caps.tools.clone(),
        model: b.model.clone(),
        thinking: b.thinking,
        system_prompt: String::new(),
        notices: sink,
        conversation: None,
        limits: InheritedLimits {
            readonly: b.readonly,
            shell_policy: Some(b.shell_policy),
            bash_allow: b.bash_allow.to_vec(),
        },
    }
}

/// The notice channel of a nesting task, created once. Notices are steered into its live run;
/// one arriving after the run ended reopens the task with it, in the background, so its new
/// answer reaches its own parent as a notification. A task that cannot be reopened (a one-shot
/// role, a missing session file) passes a completion on to its own parent instead, so a
/// background child's result is never dropped because its launcher has ended.
fn child_sink(inner: &Arc<Inner>, task_id: &str) -> mpsc::UnboundedSender<ParentNotice> {
    let mut sinks = lock(&inner.sinks);
    if let Some(tx) = sinks.get(task_id) {
        return tx.clone();
    }
    let (tx, mut rx) = mpsc::unbounded_channel::<ParentNotice>();
    sinks.insert(task_id.to_string(), tx.clone());
    let weak = Arc::downgrade(inner);
    let id = task_id.to_string();
    tokio::spawn(async move {
        while let Some(notice) = rx.recv().await {
            let Some(inner) = weak.upgrade() else { return };
            let taken = super::reopen::steer_or_reopen(&inner, &id, notice.text(), true).await;
            if taken.is_err() && !inner.is_closed() && notice.kind == NoticeKind::Completion {
                pass_up(&inner, &id, notice);
            }
        }
    });
    tx
}

/// Hand a completion that ended task `via` could not take to `via`'s own parent: the root's
/// notice channel, or its parent task's sink (which steers, reopens or passes it up again).
fn pass_up(inner: &Arc<Inner>, via: &str, notice: ParentNotice) {
    let parent = inner
        .handle(via)
        .map(|h| h.data().record.parent_task_id.clone())
        .or_else(|| {
            inner
                .store
                .load(&inner.root_session_id, via)
                .ok()
                .map(|r| r.parent_task_id)
        });
    let Some(parent) = parent else {
        // No record of `via` at all: nothing knows its parent; the root still hears of it.
        let _ = inner.root_notices.send(notice.passed_up(via));
        return;
    };
    let notice = notice.passed_up(via);
    let _ = match parent {
        Some(grandparent) => child_sink(inner, &grandparent).send(notice),
        None => inner.root_notices.send(notice),
    };
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_message_carries_the_role_prompt_then_the_task() {
        let role = RoleDef {
            prompt: "FORK RULES".into(),
            ..RoleDef::default()
        };
        let spec = TaskSpec {
            prompt: "do it".into(),
            expected_output: Some("- x".into()),
            ..TaskSpec::default()
        };
        let m = fork_message(&role, &spec);
        assert!(m.starts_with("FORK RULES\n\nYour task:\n\ndo it"));
        assert!(m.ends_with("- x"));
        let m = fork_message(&RoleDef::default(), &spec);
        assert!(m.starts_with("You are a fork"));
    }
}
