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
    /// `subagents.modelAliases` (see `model_alias`).
    pub model_aliases: super::model_alias::ModelAliases,
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
            model_aliases: super::model_alias::parse_model_aliases(obj.get("modelAliases"))
                .map_err(|(key, reason)| bad(&key, &reason))?,
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use serde_json::json;

    use super::*;

    fn role(
        model: Option<&str>,
        thinking: Option<ThinkingLevel>,
        fallback: Option<&str>,
    ) -> RoleDef {
        RoleDef {
            name: "code".into(),
            description: "d".into(),
            model: model.map(str::to_string),
            thinking,
            fallback_model: fallback.map(str::to_string),
            ..RoleDef::default()
        }
    }

    fn config(v: serde_json::Value) -> SubagentModelConfig {
        SubagentModelConfig::from_value(Some(&v)).unwrap()
    }

    fn run(
        role: &RoleDef,
        call_model: Option<&str>,
        call_thinking: Option<ThinkingLevel>,
        config: &SubagentModelConfig,
    ) -> ResolvedModel {
        resolve_model(&ResolveInputs {
            role,
            call_model,
            call_thinking,
            config,
            parent_model: "p/parent",
            parent_thinking: ThinkingLevel::Low,
        })
    }

    #[test]
    fn model_precedence_table() {
        let full = config(json!({
            "defaultModel": "s/default",
            "agentOverrides": { "code": { "model": "o/override" } }
        }));
        let no_override = config(json!({ "defaultModel": "s/default" }));
        let empty = SubagentModelConfig::default();
        let fm = role(Some("f/front"), None, None);
        let bare = role(None, None, None);
        let cases: [(
            &RoleDef,
            Option<&str>,
            &SubagentModelConfig,
            &str,
            ModelSource,
        ); 5] = [
            (&fm, Some("c/call"), &full, "c/call", ModelSource::Call),
            (&fm, None, &full, "o/override", ModelSource::AgentOverride),
            (&fm, None, &no_override, "f/front", ModelSource::Frontmatter),
            (
                &bare,
                None,
                &no_override,
                "s/default",
                ModelSource::SettingsDefault,
            ),
            (&bare, None, &empty, "p/parent", ModelSource::Parent),
        ];
        for (role, call, config, model, source) in cases {
            let r = run(role, call, None, config);
            assert_eq!((r.model.as_str(), r.model_source), (model, source));
        }
    }

    #[test]
    fn thinking_precedence_table() {
        let over = config(json!({ "agentOverrides": { "code": { "thinking": "high" } } }));
        let empty = SubagentModelConfig::default();
        let fm = role(None, Some(ThinkingLevel::Medium), None);
        let bare = role(None, None, None);
        let cases = [
            (
                &fm,
                Some(ThinkingLevel::Max),
                &over,
                ThinkingLevel::Max,
                ThinkingSource::Call,
            ),
            (
                &fm,
                None,
                &over,
                ThinkingLevel::High,
                ThinkingSource::AgentOverride,
            ),
            (
                &fm,
                None,
                &empty,
                ThinkingLevel::Medium,
                ThinkingSource::Frontmatter,
            ),
            (
                &bare,
                None,
                &empty,
                ThinkingLevel::Low,
                ThinkingSource::Parent,
            ),
        ];
        for (role, call, config, level, source) in cases {
            let r = run(role, None, call, config);
            assert_eq!((r.thinking, r.thinking_source), (level, source));
        }
        // settings.defaultModel does not touch thinking.
        let r = run(&bare, None, None, &config(json!({ "defaultModel": "x/y" })));
        assert_eq!(r.thinking_source, ThinkingSource::Parent);
    }

    #[test]
    fn fallback_precedence_table() {
        let all = config(json!({
            "fallbackModel": "s/fb",
            "agentOverrides": { "code": { "fallbackModel": "o/fb" } }
        }));
        let settings_only = config(json!({ "fallbackModel": "s/fb" }));
        let empty = SubagentModelConfig::default();
        let fm = role(None, None, Some("f/fb"));
        let bare = role(None, None, None);
        let cases = [
            (&fm, &all, Some("o/fb"), Some(FallbackSource::AgentOverride)),
            (
                &fm,
                &settings_only,
                Some("f/fb"),
                Some(FallbackSource::Frontmatter),
            ),
            (
                &bare,
                &settings_only,
                Some("s/fb"),
                Some(FallbackSource::Settings),
            ),
            (&bare, &empty, None, None),
        ];
        for (role, config, fb, source) in cases {
            let r = run(role, None, None, config);
            assert_eq!((r.fallback.as_deref(), r.fallback_source), (fb, source));
        }
    }

    #[test]
    fn a_fallback_equal_to_the_primary_is_ignored() {
        let c = config(json!({ "fallbackModel": "p/parent" }));
        let r = run(&role(None, None, None), None, None, &c);
        assert_eq!(r.model, "p/parent");
        assert_eq!(r.fallback, None);
        assert_eq!(r.fallback_source, None);
        assert!(r.notes[0].contains("ignored"));
        // Not ignored when the call picks another primary.
        let r = run(&role(None, None, None), Some("c/call"), None, &c);
        assert_eq!(r.fallback.as_deref(), Some("p/parent"));
    }

    #[test]
    fn overrides_match_by_exact_name_then_case_and_alias() {
        let c = config(json!({ "agentOverrides": {
            "implementer": { "model": "alias/m" },
            "Explore": { "model": "exact/m" },
            "explore": { "model": "lower/m" }
        }}));
        assert_eq!(
            c.override_for("code").unwrap().model.as_deref(),
            Some("alias/m")
        );
        assert_eq!(
            c.override_for("Explore").unwrap().model.as_deref(),
            Some("exact/m")
        );
        assert_eq!(
            c.override_for("explore").unwrap().model.as_deref(),
            Some("lower/m")
        );
        assert_eq!(
            c.override_for("EXPLORER").unwrap().model.as_deref(),
            Some("exact/m")
        );
        assert!(c.override_for("review").is_none());
    }

    #[test]
    fn a_fork_runs_on_the_parent_model_and_thinking() {
        let fork = RoleDef {
            name: "fork".into(),
            context: ContextMode::Fork,
            ..role(Some("f/m"), Some(ThinkingLevel::High), Some("f/fb"))
        };
        let c = config(json!({ "defaultModel": "s/d", "fallbackModel": "s/fb",
            "agentOverrides": { "fork": { "model": "o/m" } } }));
        let r = run(&fork, Some("c/m"), Some(ThinkingLevel::Max), &c);
        assert_eq!(
            (r.model.as_str(), r.model_source),
            ("p/parent", ModelSource::Fork)
        );
        assert_eq!(
            (r.thinking, r.thinking_source),
            (ThinkingLevel::Low, ThinkingSource::Fork)
        );
        assert_eq!(r.fallback, None);
        assert_eq!(r.notes.len(), 2);
    }

    #[test]
    fn settings_are_read_strictly() {
        assert_eq!(
            SubagentModelConfig::from_value(None).unwrap(),
            SubagentModelConfig::default()
        );
        assert_eq!(
            SubagentModelConfig::from_value(Some(&json!(null))).unwrap(),
            SubagentModelConfig::default()
        );
        // Keys the orchestrator owns are left alone; nulls mean unset.
        let c = config(json!({ "maxConcurrentTasks": 3, "defaultModel": null,
            "agentOverrides": { "code": null, "review": { "model": null, "other": 1 } } }));
        assert_eq!(c.default_model, None);
        assert_eq!(c.agent_overrides.len(), 1);
        for (bad, key) in [
            (json!("x"), ""),
            (json!({ "defaultModel": 3 }), "defaultModel"),
            (json!({ "defaultModel": "" }), "defaultModel"),
            (json!({ "fallbackModel": ["a"] }), "fallbackModel"),
            (json!({ "agentOverrides": [] }), "agentOverrides"),
            (
                json!({ "agentOverrides": { "code": "m" } }),
                "agentOverrides.code",
            ),
            (
                json!({ "agentOverrides": { "code": { "model": 1 } } }),
                "agentOverrides.code.model",
            ),
            (
                json!({ "agentOverrides": { "code": { "thinking": "lots" } } }),
                "agentOverrides.code.thinking",
            ),
            (
                json!({ "agentOverrides": { "code": { "thinking": 2 } } }),
                "agentOverrides.code.thinking",
            ),
            (
                json!({ "agentOverrides": { "code": { "fallbackModel": true } } }),
                "agentOverrides.code.fallbackModel",
            ),
        ] {
            match SubagentModelConfig::from_value(Some(&bad)) {
                Err(ResolveError::BadSetting { key: k, .. }) => assert_eq!(k, key, "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }
}
