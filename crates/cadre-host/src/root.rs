//! Building a root session: its tools, its subagents, its system prompt and its agent.

use std::path::Path;

use anyhow::{Result, bail};
use cadre_core::agent::{Agent, AgentConfig, EventDetail};
use cadre_llm::{Model, resolve_thinking};
use cadre_protocol::{AgentEvent, SessionEntryKind, ThinkingLevel};
use cadre_tools::ToolRegistry;
use tokio::sync::mpsc;

use crate::context::HostContext;
use crate::options::HostOptions;
use crate::orchestration::{ORCHESTRATION_TOOLS, Orchestration, Setup};
use crate::session_open::OpenedSession;

/// Tools that change files, which plan mode (S6) keeps from the root as it keeps them from
/// children.
const WRITE_TOOLS: &[&str] = &["edit", "write"];

/// One root session: the agent and its subagents.
pub struct Root {
    pub agent: Agent,
    pub orchestration: Orchestration,
    /// The root's built-in tools (after `--tools` and plan mode).
    builtin: ToolRegistry,
    /// The orchestration tools it has.
    orchestration_names: Vec<String>,
    /// Those tools as the agent has them (a front end whose client is the parent calls them
    /// directly).
    pub orchestration_tools: Vec<std::sync::Arc<dyn cadre_tools::Tool>>,
    /// Notes for the person running cadre (thinking clamped, role files broken…), each
    /// starting with its kind (`note: …`, `warning: …`).
    pub warnings: Vec<String>,
}

/// The tools a root session's options ask for: built-in and orchestration names, checked.
pub struct ToolChoice {
    builtin: Option<Vec<String>>,
    orchestration: Vec<String>,
    /// The MCP tools `--tools` names (`None`: all of them). Checked once the servers run.
    mcp: Option<Vec<String>>,
}

impl ToolChoice {
    /// Split `--tools` into built-in and orchestration tool names. Without `--tools`, every
    /// tool is active. Unknown names are an error listing what exists; so is a write tool
    /// asked for under `--plan`.
    pub fn from_options(options: &HostOptions) -> Result<ToolChoice> {
        let Some(names) = options.tools.as_deref() else {
            return Ok(ToolChoice {
                builtin: None,
                orchestration: ORCHESTRATION_TOOLS.iter().map(|s| s.to_string()).collect(),
                mcp: None,
            });
        };
        let mut builtin = Vec::new();
        let mut orchestration = Vec::new();
        let mut mcp = Vec::new();
        let mut unknown = Vec::new();
        for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
            if cadre_tools::BUILTIN_TOOL_NAMES.contains(&name) {
                builtin.push(name.to_string());
            } else if ORCHESTRATION_TOOLS.contains(&name) {
                orchestration.push(name.to_string());
            } else if cadre_mcp::is_mcp_tool(name) {
                mcp.push(name.to_string());
            } else {
                unknown.push(name.to_string());
            }
        }
        if !unknown.is_empty() {
            bail!(
                "unknown tool(s) {}; available: {}, {}",
                unknown.join(", "),
                cadre_tools::BUILTIN_TOOL_NAMES.join(", "),
                ORCHESTRATION_TOOLS.join(", ")
            );
        }
        if options.plan {
            refuse_write_tools(Some(&builtin))?;
        }
        Ok(ToolChoice {
            builtin: Some(builtin),
            orchestration,
            mcp: Some(mcp),
        })
    }
}

/// Under `--plan`, asking for a write tool explicitly is an error rather than silently ignored.
fn refuse_write_tools(builtin: Option<&[String]>) -> Result<()> {
    let asked: Vec<&str> = builtin
        .unwrap_or_default()
        .iter()
        .map(String::as_str)
        .filter(|n| WRITE_TOOLS.contains(n))
        .collect();
    if !asked.is_empty() {
        bail!(
            "--plan refuses write tools, but --tools asks for {}",
            asked.join(", ")
        );
    }
    Ok(())
}

/// `tools` without the write tools, and without the MCP tools not annotated read-only.
fn without_write_tools(mut tools: ToolRegistry) -> ToolRegistry {
    let keep: Vec<String> = tools
        .names()
        .into_iter()
        .filter(|n| !WRITE_TOOLS.contains(&n.as_str()))
        .filter(|n| !cadre_mcp::is_mcp_tool(n) || tools.get(n).is_some_and(|t| !t.is_mutating()))
        .collect();
    // Every name comes from the registry itself, so none is unknown.
    let _ = tools.retain_named(&keep);
    tools
}

/// Inputs of [`Root::build`].
pub struct RootInputs<'a> {
    pub ctx: &'a HostContext,
    pub options: &'a HostOptions,
    pub tools: &'a ToolChoice,
    /// The tools of the session's MCP servers (all of them; `tools` chooses).
    pub mcp: &'a [std::sync::Arc<cadre_mcp::McpTool>],
    pub session: OpenedSession,
    pub model: Model,
    pub thinking: ThinkingLevel,
    /// Where the agent's events go.
    pub events: mpsc::UnboundedSender<AgentEvent>,
}

impl Root {
    pub fn build(inputs: RootInputs<'_>) -> Result<Root> {
        let RootInputs {
            ctx,
            options,
            tools: choice,
            mcp,
            session,
            model,
            thinking: requested,
            events,
        } = inputs;
        let mut warnings = session.warnings.clone();
        let thinking = resolve_thinking(&model, requested);
        if let Some(reason) = &thinking.clamp_reason {
            warnings.push(format!(
                "note: thinking {} → {}: {reason}",
                thinking.requested, thinking.effective
            ));
        }
        // Pi's `compaction` settings, for the root and (through the manager) its children (R10).
        let compaction = ctx.settings.compaction().map_err(|e| anyhow::anyhow!(e))?;
        let mut tools = cadre_tools::builtin_tools();
        // The root's bash starts from this context's environment (its settings' allowlist, its
        // model's key removed), not from whichever session of the process came first.
        tools.replace(std::sync::Arc::new(
            cadre_tools::BashTool::new().with_shell_env(ctx.shell_env()),
        ));
        if let Some(names) = &choice.builtin {
            // ToolChoice checked every name, so this keeps exactly the ones asked for.
            let _ = tools.retain_named(names);
        }
        for tool in crate::mcp::root_tools_of(mcp, choice.mcp.as_deref(), &mut warnings) {
            tools.register(tool);
        }
        if options.plan {
            warnings.extend(crate::mcp::plan_notes(mcp, choice.mcp.as_deref()));
        }
        let artifacts_dir = ctx.home.root().join("artifacts");
        let root_session_id = session
            .writer
            .as_ref()
            .map(|s| s.session_id().to_string())
            .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
        let orchestration = Orchestration::new(Setup {
            home: &ctx.home,
            cwd: &ctx.cwd,
            trust: ctx.trust.clone(),
            settings: ctx.settings.subagents.as_ref(),
            provider: ctx.provider.clone(),
            registry: ctx.registry.clone(),
            tools: tools.clone(),
            root_session_id,
            root_session_file: session.writer.as_ref().map(|s| s.path().to_path_buf()),
            history: session.history.clone(),
            artifacts_dir: artifacts_dir.clone(),
            confirm: options.confirm.as_ref().map(|c| c.0.clone()),
            shell_env: ctx.shell_env(),
            all_settings: &ctx.settings,
            budget_flags: options.budget,
        })?;
        // Under a cost cap, a root model without a price is refused before any token is spent.
        crate::budget::check_priced(&orchestration.budget, &model)?;
        warnings.extend(orchestration.warnings.iter().cloned());
        // Plan mode (S6) is checked by the manager at every launch, before anything is
        // created. The manager keeps the full tool set so that a writing role is refused by
        // plan mode, with a message that says so, rather than by a missing tool; the root
        // itself loses the tools that write.
        orchestration.manager.set_plan_mode(options.plan);
        orchestration.manager.set_compaction(compaction);
        orchestration
            .manager
            .set_root_background_default(options.background_by_default);
        // A client that is the parent gets no task notices: it is told to poll TaskOutput.
        orchestration
            .manager
            .set_root_polls(options.client_is_parent);
        let builtin = if options.plan {
            without_write_tools(tools)
        } else {
            tools
        };
        let mut root = Root {
            agent: Agent::new(
                AgentConfig {
                    // The root's requests count against the session's budget, compaction
                    // summaries included.
                    provider: cadre_core::budget::MeteredProvider::wrap(
                        ctx.provider.clone(),
                        &orchestration.budget.node,
                    ),
                    model: model.clone(),
                    thinking: thinking.effective,
                    system_prompt: String::new(),
                    tools: ToolRegistry::new(),
                    cwd: ctx.cwd.clone(),
                    artifacts_dir,
                    // The host's forwarder keeps the conversation mirror (forks branch from it,
                    // get_messages reads it while a run holds the agent) as it passes events on.
                    events: Some(events),
                    compaction,
                },
                session.history,
                session.writer,
            ),
            orchestration,
            builtin,
            orchestration_names: choice.orchestration.clone(),
            orchestration_tools: Vec::new(),
            warnings,
        };
        if !options.stream_updates {
            // The mirror reads only message ends: no one reads `message_update`, and each
            // copies the reply so far (a reply that launches N tasks would cost N² copies).
            root.agent.set_event_detail(EventDetail::NoUpdates);
        }
        // What the person should know about the context files (skipped, cut), said once.
        let context_notes = root.equip(ctx, options, &model, thinking.effective);
        root.warnings.extend(context_notes);
        // A continued session records a model or level that differs from its last one, as a
        // new session records both (Agent::new).
        if let Some(writer) = root.agent.session_mut() {
            // As Pi: only what the branch itself recorded counts (a file with messages).
            let restored = &session.restored;
            let model_differs = restored
                .model
                .as_ref()
                .is_some_and(|(p, id)| *p != model.provider || *id != model.id);
            if model_differs {
                writer.append(SessionEntryKind::ModelChange {
                    provider: model.provider.clone(),
                    model_id: model.id.clone(),
                });
            }
            if restored.thinking.is_some_and(|t| t != thinking.effective) {
                writer.append(SessionEntryKind::ThinkingLevelChange {
                    thinking_level: thinking.effective.as_str().to_string(),
                });
            }
        }
        Ok(root)
    }

    /// Give the agent its tools and system prompt for `model`: the orchestration tools carry
    /// the parent's model and thinking (children inherit them) and the final prompt (forks
    /// reuse it), so they are rebuilt whenever either changes. Returns the notes on the
    /// context files read for the prompt (`note: …`).
    pub fn equip(
        &mut self,
        ctx: &HostContext,
        options: &HostOptions,
        model: &Model,
        thinking: ThinkingLevel,
    ) -> Vec<String> {
        let mut active: Vec<String> = self.builtin.names();
        active.extend(self.orchestration_names.iter().cloned());
        let mut with_orchestration = self.builtin.clone();
        for tool in self.orchestration.tools(
            model,
            thinking,
            "",
            active.clone(),
            &self.orchestration_names,
        ) {
            with_orchestration.register(tool);
        }
        let mut append = options.append_system_prompt.clone();
        if !self.orchestration_names.is_empty()
            && let Some(policy) = self.orchestration.policy_prompt()
        {
            append.insert(0, policy);
        }
        let (system_prompt, notes) = build_prompt(
            &ctx.cwd,
            ctx.home.root(),
            &with_orchestration,
            options,
            &append,
        );
        let mut all = self.builtin.clone();
        self.orchestration_tools = self.orchestration.tools(
            model,
            thinking,
            &system_prompt,
            active,
            &self.orchestration_names,
        );
        for tool in &self.orchestration_tools {
            all.register(tool.clone());
        }
        self.agent.set_tools(all);
        self.agent.set_system_prompt(system_prompt);
        notes
    }
}

fn build_prompt(
    cwd: &Path,
    home: &Path,
    tools: &ToolRegistry,
    options: &HostOptions,
    append: &[String],
) -> (String, Vec<String>) {
    let context = cadre_core::context::collect_context_files(cwd, home);
    let date = cadre_core::prompt::today(std::time::SystemTime::now());
    let specs = tools.specs();
    let prompt = cadre_core::prompt::build_system_prompt(&cadre_core::prompt::SystemPromptInput {
        cwd,
        date: &date,
        tools: &specs,
        context_files: &context.files,
        custom: options.system_prompt.as_deref(),
        append,
    });
    (prompt, context.notes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn plan_mode_takes_the_write_tools_away() {
        let root = without_write_tools(cadre_tools::builtin_tools()).names();
        assert!(root.iter().any(|n| n == "read"), "{root:?}");
        assert!(root.iter().any(|n| n == "bash"), "{root:?}");
        assert!(
            !root.iter().any(|n| n == "edit" || n == "write"),
            "{root:?}"
        );
        assert_eq!(root.len(), cadre_tools::BUILTIN_TOOL_NAMES.len() - 2);

        assert!(refuse_write_tools(None).is_ok());
        assert!(refuse_write_tools(Some(&["read".into(), "grep".into()])).is_ok());
        let err = refuse_write_tools(Some(&["read".into(), "write".into(), "edit".into()]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--plan refuses write tools"), "{err}");
        assert!(err.ends_with("write, edit"), "{err}");
    }

    #[test]
    fn unknown_tools_are_named_with_what_exists() {
        let options = HostOptions {
            tools: Some(vec!["read".into(), "frob".into()]),
            ..HostOptions::default()
        };
        let err = ToolChoice::from_options(&options)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("unknown tool(s) frob; available: read"),
            "{err}"
        );
    }
}
