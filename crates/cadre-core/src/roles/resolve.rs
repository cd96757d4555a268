//! Which model, thinking level and fallback model a child gets, and where each came from
//! (SPEC T6, T7). Pure: whether a model exists or has credentials is checked by the launcher.
//!
//! - model: call `model` → `subagents.agentOverrides.<name>.model` → frontmatter `model` →
//!   `subagents.defaultModel` → the parent's model;
//! - thinking: call → `agentOverrides.<name>.thinking` → frontmatter `thinking` → the parent's;
//! - fallback: `agentOverrides.<name>.fallbackModel` → frontmatter `fallbackModel` →
//!   `subagents.fallbackModel`; dropped when it equals the primary.
//!
//! A fork (`context: fork`) always runs on the parent's model and thinking (O9): it continues
//! the parent's own conversation, whose thinking blocks belong to that model.

use cadre_protocol::ThinkingLevel;
use serde_json::Value;

use super::builtin::canonical_key;
use super::parse::{ContextMode, RoleDef};

/// Where the model came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelSource {
    Call,
    AgentOverride,
    Frontmatter,
    SettingsDefault,
    Parent,
    /// A fork inherits the parent's model whatever else is set.
    Fork,
}

/// Where the thinking level came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkingSource {
    Call,
    AgentOverride,
    Frontmatter,
    Parent,
    Fork,
}

/// Where the fallback model came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackSource {
    AgentOverride,
    Frontmatter,
    Settings,
}

/// `subagents.agentOverrides.<name>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentOverride {
    pub model: Option<String>,
    pub fallback_model: Option<String>,
    pub thinking: Option<ThinkingLevel>,
}

/// The model-related part of the `subagents` settings object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubagentModelConfig {
    pub default_model: Option<String>,
    pub fallback_model: Option<String>,
    /// `(role name as written, override)`, in file order.
    pub agent_overrides: Vec<(String, AgentOverride)>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("settings `subagents.{key}`: {reason}")]
    BadSetting { key: String, reason: String },
}

fn bad(key: &str, reason: &str) -> ResolveError {
    ResolveError::BadSetting {
        key: key.to_string(),
        reason: reason.to_string(),
    }
}

/// A model name: a non-empty string, or absent/null.
fn opt_model(
    obj: &serde_json::Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<String>, ResolveError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_string())),
        Some(_) => Err(bad(path, "expected a non-empty model name or null")),
    }
}

impl SubagentModelConfig {
    /// Read the model keys of `settings.subagents` (other keys are the orchestrator's). A key of
    /// the wrong type is an error rather than ignored, so a typo cannot silently change models.
    pub fn from_value(subagents: Option<&Value>) -> Result<SubagentModelConfig, ResolveError> {
        let obj = match subagents {
            None | Some(Value::Null) => return Ok(SubagentModelConfig::default()),
            Some(Value::Object(obj)) => obj,
            Some(_) => return Err(bad("", "expected an object")),
        };
        let mut config = SubagentModelConfig {
            default_model: opt_model(obj, "defaultModel", "defaultModel")?,
            fallback_model: opt_model(obj, "fallbackModel", "fallbackModel")?,
            agent_overrides: Vec::new(),
        };
        match obj.get("agentOverrides") {
            None | Some(Value::Null) => {}
            Some(Value::Object(overrides)) => {
                for (name, value) in overrides {
                    let path = format!("agentOverrides.{name}");
                    let o = match value {
                        Value::Null => continue,
                        Value::Object(o) => o,
                        _ => return Err(bad(&path, "expected an object")),
                    };
                    let thinking = match o.get("thinking") {
                        None | Some(Value::Null) => None,
                        Some(Value::String(s)) => {
                            Some(ThinkingLevel::parse(s).ok_or_else(|| {
                                bad(
                                    &format!("{path}.thinking"),
                                    &format!("`{s}` is not a thinking level"),
                                )
                            })?)
                        }
                        Some(_) => {
                            return Err(bad(&format!("{path}.thinking"), "expected a string"));
                        }
                    };
                    config.agent_overrides.push((
                        name.clone(),
                        AgentOverride {
                            model: opt_model(o, "model", &format!("{path}.model"))?,
                            fallback_model: opt_model(
                                o,
                                "fallbackModel",
                                &format!("{path}.fallbackModel"),
                            )?,
                            thinking,
                        },
                    ));
                }
            }
            Some(_) => return Err(bad("agentOverrides", "expected an object")),
        }
        Ok(config)
    }

    /// The override for `role`: an exact key first, else one naming it in any case or by alias.
    pub fn override_for(&self, role: &str) -> Option<&AgentOverride> {
        if let Some((_, o)) = self.agent_overrides.iter().find(|(n, _)| n == role) {
            return Some(o);
        }
        let key = canonical_key(role);
        self.agent_overrides
            .iter()
            .find(|(n, _)| canonical_key(n) == key)
            .map(|(_, o)| o)
    }
}

/// Everything the choice depends on.
#[derive(Debug, Clone, Copy)]
pub struct ResolveInputs<'a> {
    pub role: &'a RoleDef,
    pub call_model: Option<&'a str>,
    pub call_thinking: Option<ThinkingLevel>,
    pub config: &'a SubagentModelConfig,
    pub parent_model: &'a str,
    pub parent_thinking: ThinkingLevel,
}

/// The choice and its reasons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedModel {
    pub model: String,
    pub model_source: ModelSource,
    pub thinking: ThinkingLevel,
    pub thinking_source: ThinkingSource,
    /// `None` when none is configured or it equals `model`.
    pub fallback: Option<String>,
    pub fallback_source: Option<FallbackSource>,
    /// What was set but not used, for the task's diagnostics.
    pub notes: Vec<String>,
}

/// Apply the precedence rules.
pub fn resolve_model(inputs: &ResolveInputs<'_>) -> ResolvedModel {
    let role = inputs.role;
    let over = inputs.config.override_for(&role.name);
    let mut notes = Vec::new();

    if role.context == ContextMode::Fork {
        if let Some(m) = inputs.call_model.filter(|m| *m != inputs.parent_model) {
            notes.push(format!(
                "a fork runs on the parent's model; the requested model `{m}` was not used"
            ));
        }
        if let Some(t) = inputs
            .call_thinking
            .filter(|t| *t != inputs.parent_thinking)
        {
            notes.push(format!(
                "a fork keeps the parent's thinking level; the requested `{t}` was not used"
            ));
        }
        return ResolvedModel {
            model: inputs.parent_model.to_string(),
            model_source: ModelSource::Fork,
            thinking: inputs.parent_thinking,
            thinking_source: ThinkingSource::Fork,
            fallback: None,
            fallback_source: None,
            notes,
        };
    }

    let (model, model_source) = if let Some(m) = inputs.call_model {
        (m.to_string(), ModelSource::Call)
    } else if let Some(m) = over.and_then(|o| o.model.as_deref()) {
        (m.to_string(), ModelSource::AgentOverride)
    } else if let Some(m) = role.model.as_deref() {
        (m.to_string(), ModelSource::Frontmatter)
    } else if let Some(m) = inputs.config.default_model.as_deref() {
        (m.to_string(), ModelSource::SettingsDefault)
    } else {
        (inputs.parent_model.to_string(), ModelSource::Parent)
    };

    let (thinking, thinking_source) = if let Some(t) = inputs.call_thinking {
        (t, ThinkingSource::Call)
    } else if let Some(t) = over.and_then(|o| o.thinking) {
        (t, ThinkingSource::AgentOverride)
    } else if let Some(t) = role.thinking {
        (t, ThinkingSource::Frontmatter)
    } else {
        (inputs.parent_thinking, ThinkingSource::Parent)
    };

    let candidate = if let Some(f) = over.and_then(|o| o.fallback_model.as_deref()) {
        Some((f, FallbackSource::AgentOverride))
    } else if let Some(f) = role.fallback_model.as_deref() {
        Some((f, FallbackSource::Frontmatter))
    } else {
        inputs
            .config
            .fallback_model
            .as_deref()
            .map(|f| (f, FallbackSource::Settings))
    };
    let (fallback, fallback_source) = match candidate {
        Some((f, _)) if f == model => {
            notes.push(format!(
                "fallback model `{f}` is the primary model and was ignored"
            ));
            (None, None)
        }
        Some((f, source)) => (Some(f.to_string()), Some(source)),
        None => (None, None),
    };

    ResolvedModel {
        model,
        model_source,
        thinking,
        thinking_source,
        fallback,
        fallback_source,
        notes,
    }
}
