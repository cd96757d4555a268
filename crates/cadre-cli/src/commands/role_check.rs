//! What a launch of each role from the root session would meet, for `cadre agents` and
//! `cadre doctor`: the model it runs on (aliases, Claude ids by family, the parent's model for a
//! role file's model that cannot be had — `roles::model_alias`, as a launch reads it), its tool
//! set against the root's tools (`resolve_capabilities`), skills, fork and worktree switches.
//!
//! The registry is only listed: no `!command` credential runs, so the check is fast and
//! side-effect free; a command that would fail at launch is not noticed here.

use cadre_core::config::load_settings;
use cadre_core::orchestrator::capability::{AGENT_TOOL, CapabilityInput, resolve_capabilities};
use cadre_core::orchestrator::settings::SubagentSettings;
use cadre_core::roles::{
    CatalogModel, ContextMode, ExpandContext, Isolation, ModelPlan, ProjectTrust, ResolveInputs,
    RoleDef, Settled, SkillSearch, SubagentModelConfig, ToolList, catalog_of, expanded_name,
    load_skills, resolve_model, settle,
};
use cadre_llm::ModelRegistry;
use cadre_llm::registry::{ProcessEnv, home_dir};
use cadre_protocol::ThinkingLevel;

use super::Place;

/// Everything the checks read once, for every role.
pub struct Checker {
    settings: SubagentSettings,
    model_config: SubagentModelConfig,
    /// Why every launch fails whatever the role (invalid `subagents` settings).
    settings_error: Option<String>,
    registry: Result<ModelRegistry, String>,
    catalog: Vec<CatalogModel>,
    /// The root's model as the settings name it (full name), when the registry knows it.
    root_model: Option<String>,
    root_provider: Option<String>,
    root_tools: Vec<String>,
    skills: SkillSearch,
}

/// The model part of a check, in the words of `cadre agents --json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelAnswer {
    /// As written in the file (`None`: none or `inherit`).
    pub requested: Option<String>,
    /// What the chosen source wrote (the file, an override, the settings default).
    pub written: Option<String>,
    /// `provider/id` it launches on; `None` = the parent's model.
    pub resolved: Option<String>,
    pub source: &'static str,
    pub falls_back_to_parent: bool,
    pub note: Option<String>,
}

/// One role's check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleCheck {
    pub model: ModelAnswer,
    /// Why a launch would fail; empty = launchable.
    pub problems: Vec<String>,
    /// Tools the role names that the child would not get, with why.
    pub dropped: Vec<String>,
    /// What does not stop a launch but may surprise (a fallback model that cannot be had).
    pub warnings: Vec<String>,
}

impl Checker {
    /// Read settings and the registry as a run from `place` would.
    pub fn load(place: &Place, trust: &ProjectTrust) -> Checker {
        let subagents = load_settings(&place.home, Some(&place.root), trust.is_trusted())
            .map_err(|e| e.to_string());
        let (settings, model_config, settings_error, default_model) = match &subagents {
            Ok(loaded) => {
                let value = loaded.settings.subagents.as_ref();
                let parsed = SubagentSettings::from_value(value).map_err(|e| e.to_string());
                let config = SubagentModelConfig::from_value(value).map_err(|e| e.to_string());
                match (parsed, config) {
                    (Ok(p), Ok(c)) => (p.settings, c, None, loaded.settings.default_model_name()),
                    (Err(e), _) | (_, Err(e)) => (
                        SubagentSettings::default(),
                        SubagentModelConfig::default(),
                        Some(e),
                        loaded.settings.default_model_name(),
                    ),
                }
            }
            Err(e) => (
                SubagentSettings::default(),
                SubagentModelConfig::default(),
                Some(e.clone()),
                None,
            ),
        };
        let registry =
            ModelRegistry::load(place.home.root(), &ProcessEnv).map_err(|e| e.to_string());
        let catalog = registry.as_ref().map(catalog_of).unwrap_or_default();
        let root = match (&registry, default_model) {
            (Ok(r), Some(name)) => r.info(&name).ok(),
            _ => None,
        };
        let home = home_dir(&ProcessEnv);
        Checker {
            root_model: root.as_ref().map(|m| m.full_name.clone()),
            root_provider: root.map(|m| m.provider),
            root_tools: root_tools(),
            skills: SkillSearch::new(&place.home, home.as_deref(), &place.cwd, trust.is_trusted()),
            settings,
            model_config,
            settings_error,
            registry,
            catalog,
        }
    }

    /// Why every launch fails whatever the role: invalid `subagents` settings (doctor reports
    /// them in its settings section; `cadre agents --json` adds them to each role's problems).
    pub fn settings_error(&self) -> Option<&str> {
        self.settings_error.as_deref()
    }

    /// Whether `name` would resolve, without running credential commands.
    fn usable(&self, name: &str) -> Result<String, String> {
        if self.root_model.as_deref() == Some(name) {
            return Ok(name.to_string());
        }
        let registry = self
            .registry
            .as_ref()
            .map_err(|e| format!("models.json cannot be read: {e}"))?;
        let info = registry.info(name).map_err(|e| match e {
            cadre_llm::registry::RegistryError::UnknownModel { .. } => "unknown model".to_string(),
            other => other.to_string(),
        })?;
        if let Some(why) = info.unsupported {
            return Err(format!("`{}` cannot be used: {why}", info.full_name));
        }
        if !info.has_credentials {
            return Err(format!("no credentials for provider `{}`", info.provider));
        }
        Ok(info.full_name)
    }

    /// What a launch of `def` from the root session would meet.
    pub fn check(&self, def: &RoleDef) -> RoleCheck {
        let mut problems = Vec::new();
        let parent_model = self.root_model.clone().unwrap_or_default();
        let resolved = resolve_model(&ResolveInputs {
            role: def,
            call_model: None,
            call_thinking: None,
            config: &self.model_config,
            parent_model: &parent_model,
            parent_thinking: ThinkingLevel::default(),
        });
        let cx = ExpandContext {
            readonly: def.readonly,
            parent_provider: self.root_provider.as_deref(),
            aliases: &self.model_config.model_aliases,
            catalog: &self.catalog,
        };
        let plan = ModelPlan::new(resolved.model_source, &resolved.model, &cx);
        let fallback = resolved
            .fallback
            .as_deref()
            .map(|f| expanded_name(f, &cx))
            .filter(|f| Some(f.as_str()) != plan.target());
        let mut notes: Vec<String> = plan.note().into_iter().collect();
        let mut warnings = Vec::new();
        if let Some(fb) = &fallback
            && let Err(e) = self.usable(fb)
        {
            warnings.push(format!("its fallbackModel `{fb}` cannot be used: {e}"));
        }
        let (resolved_name, falls_back) =
            match settle(&plan, fallback.as_deref(), |n| self.usable(n)) {
                Settled::Model {
                    model,
                    fallback_note,
                    ..
                } => {
                    notes.extend(fallback_note);
                    (Some(model), false)
                }
                Settled::Parent { note } => {
                    let falls_back = note.is_some();
                    notes.extend(note);
                    (None, falls_back)
                }
                Settled::Failed {
                    name,
                    error,
                    fallback,
                } => {
                    let mut p = format!("model `{name}` is not available: {error}");
                    if let Some((fb, e)) = fallback {
                        p.push_str(&format!(", nor its fallback `{fb}`: {e}"));
                    }
                    problems.push(p);
                    (None, false)
                }
            };
        let model = ModelAnswer {
            requested: def.model.clone(),
            written: plan.written.clone(),
            resolved: resolved_name,
            source: if falls_back {
                "parent"
            } else {
                plan.source_name()
            },
            falls_back_to_parent: falls_back,
            note: (!notes.is_empty()).then(|| notes.join("; ")),
        };

        let mut dropped = Vec::new();
        let role_tools = def.tools.as_named();
        let role_allows_agent = self.settings.enable_nested_agents
            && matches!(&def.tools, ToolList::Named(n) if n.iter().any(|t| t == AGENT_TOOL));
        match resolve_capabilities(CapabilityInput {
            parent_active: &self.root_tools,
            role_tools,
            disallowed: &def.disallowed_tools,
            readonly: def.readonly,
            depth: 1,
            max_depth: self.settings.max_agent_depth,
            role_allows_agent,
            tool_policy_no_tools: false,
            known_tools: &self.root_tools,
            mcp_read_only: &[],
        }) {
            Ok(set) => {
                // Only what the file names: a role with every tool always loses the root's own.
                if let Some(named) = role_tools {
                    for d in set.dropped.iter().filter(|d| named.contains(&d.name)) {
                        dropped.push(format!("{} ({})", d.name, d.reason));
                    }
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
        if !def.skills.is_empty()
            && let Err(e) = load_skills(&def.skills, &self.skills)
        {
            problems.push(e.to_string());
        }
        if def.context == ContextMode::Fork && !self.settings.enable_fork {
            problems.push("forks are disabled (subagents.enableFork is false)".into());
        }
        if def.isolation == Isolation::Worktree && !self.settings.enable_worktrees {
            problems
                .push("worktree isolation is disabled (subagents.enableWorktrees is false)".into());
        }
        RoleCheck {
            model,
            problems,
            dropped,
            warnings,
        }
    }
}

/// The root session's tools: the built-in ones and the orchestration tools (MCP tools exist only
/// while their servers run, so a role naming one is not judged by them).
fn root_tools() -> Vec<String> {
    cadre_tools::BUILTIN_TOOL_NAMES
        .iter()
        .chain(cadre_host::ORCHESTRATION_TOOLS)
        .map(|s| s.to_string())
        .collect()
}

impl ModelAnswer {
    /// The table cell: `opus → anthropic/claude-opus-4-5`, `parent (opus: no credentials)`.
    pub fn cell(&self) -> String {
        let written = self.written.as_deref();
        match (&self.resolved, written) {
            (_, None) => "-".to_string(),
            (Some(r), Some(w)) if r == w => r.clone(),
            (Some(r), Some(w)) => format!("{w} → {r}"),
            (None, Some(w)) if self.falls_back_to_parent => {
                format!("parent ({w}: {})", self.short_reason())
            }
            (None, Some(w)) => format!("{w} (unavailable)"),
        }
    }

    /// Whether the note says more than the table cell does.
    pub fn note_adds(&self) -> bool {
        self.falls_back_to_parent
            || self.source == "family"
            || self.note.as_deref().is_some_and(|n| n.contains(" ("))
    }

    fn short_reason(&self) -> &'static str {
        let note = self.note.as_deref().unwrap_or_default();
        if note.contains("credentials") {
            "no credentials"
        } else if note.contains("unknown model") {
            "unknown model"
        } else if note.contains("cannot be read") {
            "models.json unreadable"
        } else {
            "unavailable"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(
        written: Option<&str>,
        resolved: Option<&str>,
        falls_back: bool,
        note: Option<&str>,
    ) -> ModelAnswer {
        ModelAnswer {
            requested: written.map(str::to_string),
            written: written.map(str::to_string),
            resolved: resolved.map(str::to_string),
            source: if falls_back { "parent" } else { "alias" },
            falls_back_to_parent: falls_back,
            note: note.map(str::to_string),
        }
    }

    #[test]
    fn the_model_cell_says_what_a_launch_runs_on() {
        let cases = [
            (answer(None, None, false, None), "-"),
            (answer(Some("p/m"), Some("p/m"), false, None), "p/m"),
            (
                answer(Some("opus"), Some("anthropic/claude-opus-4-7"), false, None),
                "opus → anthropic/claude-opus-4-7",
            ),
            (
                answer(
                    Some("opus"),
                    None,
                    true,
                    Some("… (no provider with credentials serves a Claude opus model) …"),
                ),
                "parent (opus: no credentials)",
            ),
            (
                answer(Some("x/y"), None, true, Some("… (unknown model) …")),
                "parent (x/y: unknown model)",
            ),
            (answer(Some("x/y"), None, false, None), "x/y (unavailable)"),
        ];
        for (a, want) in cases {
            assert_eq!(a.cell(), want, "{a:?}");
        }
    }
}
