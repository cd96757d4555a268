//! Pi-compatible `settings.json`: the global `$CADRE_HOME/settings.json`, overlaid by the
//! project's `.cadre/settings.json` only when the project is trusted (T4). Nested objects merge
//! key by key, as in Pi; keys cadre does not use are kept in [`Settings::raw`] and otherwise
//! ignored.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cadre_llm::RequestTimeouts;
use cadre_llm::registry::{Env, ProcessEnv};
use cadre_protocol::ThinkingLevel;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::paths::{CadreHome, project_config_dir};
use super::pi_settings::read_pi_settings;
use super::{ConfigError, read_optional};
use crate::compaction::CompactionSettings;

/// The settings cadre reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub default_provider: Option<String>,
    pub default_model: Option<String>,
    pub default_thinking_level: Option<ThinkingLevel>,
    /// The `subagents` object, interpreted by the orchestrator.
    pub subagents: Option<Value>,
    /// The whole merged document.
    pub raw: Map<String, Value>,
}

impl Settings {
    /// `shellEnv.allow`: names of credential-looking variables that bash commands may still
    /// see (every other `*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*` … is removed, S8).
    pub fn shell_env_allow(&self) -> Result<Vec<String>, String> {
        let Some(value) = self.raw.get("shellEnv") else {
            return Ok(Vec::new());
        };
        let allow = match value {
            Value::Object(map) => map.get("allow"),
            _ => {
                return Err(
                    "settings: shellEnv must be an object like {\"allow\": [\"NAME\"]}".into(),
                );
            }
        };
        match allow {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str().map(str::to_string).ok_or_else(|| {
                        format!("settings: shellEnv.allow must list variable names, found {item}")
                    })
                })
                .collect(),
            Some(other) => Err(format!(
                "settings: shellEnv.allow must be a list of variable names, found {other}"
            )),
        }
    }

    /// `requestTimeouts` (`firstContentMs`, `idleMs`, `totalMs`, in milliseconds) laid over
    /// `defaults`; a key that is absent or `null` keeps its default. Anything other than a whole
    /// number above 0 is an error: a zero or negative deadline would fail every request, and a
    /// misspelt key would silently keep a deadline the user meant to change.
    pub fn request_timeouts(&self, defaults: RequestTimeouts) -> Result<RequestTimeouts, String> {
        const KEYS: &str = "firstContentMs, idleMs or totalMs";
        let map = match self.raw.get("requestTimeouts") {
            None | Some(Value::Null) => return Ok(defaults),
            Some(Value::Object(map)) => map,
            Some(_) => {
                return Err(
                    "settings: requestTimeouts must be an object like {\"idleMs\": 120000}".into(),
                );
            }
        };
        let mut timeouts = defaults;
        for (key, value) in map {
            let slot = match key.as_str() {
                "firstContentMs" => &mut timeouts.first_content,
                "idleMs" => &mut timeouts.idle,
                "totalMs" => &mut timeouts.total,
                _ => {
                    return Err(format!(
                        "settings: requestTimeouts.{key} is unknown (expected {KEYS})"
                    ));
                }
            };
            if value.is_null() {
                continue;
            }
            match value.as_u64().filter(|ms| *ms > 0) {
                Some(ms) => *slot = Duration::from_millis(ms),
                None => {
                    return Err(format!(
                        "settings: requestTimeouts.{key} must be a whole number of milliseconds \
                         above 0, found {value}"
                    ));
                }
            }
        }
        Ok(timeouts)
    }

    /// `compaction` (`enabled`, `reserveTokens`, `keepRecentTokens`) laid over Pi's defaults; a
    /// key that is absent or `null` keeps its default. Keys Pi may add later are ignored (the
    /// file is shared with Pi); a value of the wrong type is an error naming the key.
    pub fn compaction(&self) -> Result<CompactionSettings, String> {
        let mut settings = CompactionSettings::default();
        let map = match self.raw.get("compaction") {
            None | Some(Value::Null) => return Ok(settings),
            Some(Value::Object(map)) => map,
            Some(_) => {
                return Err(
                    "settings: compaction must be an object like {\"enabled\": true}".into(),
                );
            }
        };
        match map.get("enabled") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => settings.enabled = *b,
            Some(other) => {
                return Err(format!(
                    "settings: compaction.enabled must be true or false, found {other}"
                ));
            }
        }
        for (key, slot) in [
            ("reserveTokens", &mut settings.reserve_tokens),
            ("keepRecentTokens", &mut settings.keep_recent_tokens),
        ] {
            match map.get(key) {
                None | Some(Value::Null) => {}
                Some(value) => match value.as_u64() {
                    Some(n) => *slot = n,
                    None => {
                        return Err(format!(
                            "settings: compaction.{key} must be a whole number of tokens, \
                             found {value}"
                        ));
                    }
                },
            }
        }
        Ok(settings)
    }

    /// `sessionDir`: where sessions are stored (see `session::session_dir`, which expands `~`
    /// and resolves a relative directory from the working directory).
    pub fn session_dir(&self) -> Option<&str> {
        self.raw.get("sessionDir").and_then(Value::as_str)
    }

    /// The default model as a registry name: `defaultProvider/defaultModel`, or `defaultModel`
    /// alone when no provider is set or the model already carries it.
    pub fn default_model_name(&self) -> Option<String> {
        let model = self.default_model.as_deref()?;
        match self.default_provider.as_deref() {
            Some(p) if !model.starts_with(&format!("{p}/")) => Some(format!("{p}/{model}")),
            _ => Some(model.to_string()),
        }
    }

    /// Build from one merged document (already validated per file).
    fn from_merged(raw: Map<String, Value>) -> Settings {
        let string = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_string);
        Settings {
            default_provider: string("defaultProvider"),
            default_model: string("defaultModel"),
            default_thinking_level: raw
                .get("defaultThinkingLevel")
                .and_then(Value::as_str)
                .and_then(ThinkingLevel::parse),
            subagents: raw.get("subagents").filter(|v| !v.is_null()).cloned(),
            raw,
        }
    }
}

/// Settings plus where they came from, for `cadre doctor`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadedSettings {
    pub settings: Settings,
    /// Files read, lowest precedence first.
    pub files: Vec<PathBuf>,
    /// The project settings file that exists but was not read because the project is untrusted.
    pub skipped_untrusted: Option<PathBuf>,
    /// Pi's settings file, when it stood in for a missing CADRE_HOME one (only its
    /// [`super::pi_settings::SHARED_KEYS`] were read); it is in `files` too.
    pub pi_file: Option<PathBuf>,
    /// What was left out of Pi's file, one sentence each.
    pub notes: Vec<String>,
}

/// Load the global settings (CADRE_HOME's, else the shared keys of Pi's) and, for a trusted
/// project, the project's on top. Pi's agent directory comes from the process environment.
pub fn load_settings(
    home: &CadreHome,
    project_root: Option<&Path>,
    trusted: bool,
) -> Result<LoadedSettings, ConfigError> {
    load_settings_with(home, project_root, trusted, &ProcessEnv)
}

/// [`load_settings`], finding Pi's settings file through `env`.
pub fn load_settings_with(
    home: &CadreHome,
    project_root: Option<&Path>,
    trusted: bool,
    env: &dyn Env,
) -> Result<LoadedSettings, ConfigError> {
    let mut merged = Map::new();
    let mut out = LoadedSettings::default();
    let global = home.settings_json();
    if let Some(doc) = read_file(&global)? {
        deep_merge(&mut merged, doc);
        out.files.push(global);
    } else {
        let pi = read_pi_settings(env);
        out.notes = pi.notes;
        if let Some(path) = pi.path {
            deep_merge(&mut merged, pi.doc);
            out.files.push(path.clone());
            out.pi_file = Some(path);
        }
    }
    if let Some(root) = project_root {
        let project = project_config_dir(root).join("settings.json");
        if !trusted {
            // An untrusted project contributes nothing; its file is not even parsed.
            if project.exists() {
                out.skipped_untrusted = Some(project);
            }
        } else if let Some(doc) = read_file(&project)? {
            deep_merge(&mut merged, doc);
            out.files.push(project);
        }
    }
    out.settings = Settings::from_merged(merged);
    Ok(out)
}

/// The keys cadre interprets, with their types; used to validate each file where it is.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // deserialized only to type-check these keys where they are written
struct Typed {
    default_provider: Option<String>,
    default_model: Option<String>,
    default_thinking_level: Option<String>,
    session_dir: Option<String>,
    subagents: Option<Map<String, Value>>,
}

/// Read and validate one settings file; `None` when it does not exist.
fn read_file(path: &Path) -> Result<Option<Map<String, Value>>, ConfigError> {
    let Some(text) = read_optional(path)? else {
        return Ok(None);
    };
    parse(path, &text).map(Some)
}

fn parse(path: &Path, text: &str) -> Result<Map<String, Value>, ConfigError> {
    let doc: Value =
        serde_json::from_str(text).map_err(|e| ConfigError::parse(path.to_path_buf(), &e))?;
    let Value::Object(map) = doc else {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            message: "expected a JSON object".to_string(),
        });
    };
    // Parsing the text again (not the value) keeps line and column in type errors.
    let typed: Typed =
        serde_json::from_str(text).map_err(|e| ConfigError::parse(path.to_path_buf(), &e))?;
    if let Some(level) = typed.default_thinking_level
        && ThinkingLevel::parse(&level).is_none()
    {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            message: format!(
                "defaultThinkingLevel: unknown level `{level}` (expected off, minimal, low, \
                 medium, high, xhigh or max)"
            ),
        });
    }
    Ok(map)
}

/// Overlay `over` onto `base`: objects merge recursively, anything else replaces.
fn deep_merge(base: &mut Map<String, Value>, over: Map<String, Value>) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(Value::Object(b)), Value::Object(o)) => deep_merge(b, o),
            (_, v) => {
                base.insert(key, v);
            }
        }
    }
}

// Tests cover T4: project settings load only when trusted.
#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use serde_json::json;

    use super::*;

    /// The loader with an empty environment: no test reads a real Pi settings file.
    fn load_settings(
        home: &CadreHome,
        project_root: Option<&Path>,
        trusted: bool,
    ) -> Result<LoadedSettings, ConfigError> {
        load_settings_with(
            home,
            project_root,
            trusted,
            &cadre_llm::registry::MapEnv::new(),
        )
    }

    #[test]
    fn pis_settings_stand_in_for_a_missing_global_file() {
        let tmp = tempfile::tempdir().unwrap();
        let pi = tmp.path().join("pi");
        std::fs::create_dir_all(&pi).unwrap();
        std::fs::write(
            pi.join("settings.json"),
            r#"{"defaultProvider":"openai","defaultModel":"gpt-5","defaultThinkingLevel":"low",
                "subagents":{"maxConcurrent":1},"theme":"dark"}"#,
        )
        .unwrap();
        let env =
            cadre_llm::registry::MapEnv::new().with("PI_CODING_AGENT_DIR", pi.to_str().unwrap());
        let home = CadreHome::new(tmp.path().join("home"));
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(root.join(".cadre")).unwrap();
        std::fs::write(
            root.join(".cadre/settings.json"),
            r#"{"defaultThinkingLevel":"high"}"#,
        )
        .unwrap();

        let loaded = load_settings_with(&home, Some(&root), true, &env).unwrap();
        assert_eq!(loaded.pi_file, Some(pi.join("settings.json")));
        assert_eq!(loaded.files[0], pi.join("settings.json"));
        let s = &loaded.settings;
        assert_eq!(s.default_model_name().as_deref(), Some("openai/gpt-5"));
        // The project still wins; Pi's keys cadre does not share are not read.
        assert_eq!(s.default_thinking_level, Some(ThinkingLevel::High));
        assert_eq!(s.subagents, None);
        assert!(!s.raw.contains_key("theme"));

        // CADRE_HOME's own file replaces Pi's entirely.
        std::fs::create_dir_all(home.root()).unwrap();
        std::fs::write(home.settings_json(), r#"{"sessionDir":"~/s"}"#).unwrap();
        let loaded = load_settings_with(&home, None, false, &env).unwrap();
        assert_eq!(loaded.pi_file, None);
        assert_eq!(loaded.settings.default_model, None);
        assert_eq!(loaded.settings.session_dir(), Some("~/s"));

        // A sessionDir that is not a string is an error in cadre's own file.
        std::fs::write(home.settings_json(), r#"{"sessionDir":1}"#).unwrap();
        assert!(load_settings_with(&home, None, false, &env).is_err());
    }

    #[test]
    fn a_broken_pi_file_is_a_note() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("settings.json"), "{ nope").unwrap();
        let env = cadre_llm::registry::MapEnv::new()
            .with("PI_CODING_AGENT_DIR", tmp.path().to_str().unwrap());
        let home = CadreHome::new(tmp.path().join("home"));
        let loaded = load_settings_with(&home, None, false, &env).unwrap();
        assert_eq!(loaded.settings, Settings::default());
        assert!(
            loaded.notes[0].contains("invalid JSON"),
            "{:?}",
            loaded.notes
        );
    }

    struct Fixture {
        _tmp: tempfile::TempDir,
        home: CadreHome,
        project: PathBuf,
    }

    fn fixture(global: Option<&str>, project: Option<&str>) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let home = CadreHome::new(tmp.path().join("home"));
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(root.join(".cadre")).unwrap();
        std::fs::create_dir_all(home.root()).unwrap();
        if let Some(g) = global {
            std::fs::write(home.settings_json(), g).unwrap();
        }
        if let Some(p) = project {
            std::fs::write(root.join(".cadre/settings.json"), p).unwrap();
        }
        Fixture {
            _tmp: tmp,
            home,
            project: root,
        }
    }

    const GLOBAL: &str = r#"{
      "defaultProvider": "anthropic",
      "defaultModel": "claude-sonnet-4-5",
      "defaultThinkingLevel": "medium",
      "theme": "dark",
      "compaction": { "enabled": true, "reserveTokens": 16384 },
      "subagents": { "authorization": "standing", "agentOverrides": { "code": { "model": "a/b" } } }
    }"#;

    const PROJECT: &str = r#"{
      "defaultModel": "gpt-5",
      "defaultProvider": "openai",
      "compaction": { "reserveTokens": 8192 },
      "subagents": { "dispatch": "sequential" }
    }"#;

    #[test]
    fn global_only() {
        let f = fixture(Some(GLOBAL), None);
        let loaded = load_settings(&f.home, Some(&f.project), true).unwrap();
        let s = &loaded.settings;
        assert_eq!(s.default_provider.as_deref(), Some("anthropic"));
        assert_eq!(s.default_model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(s.default_thinking_level, Some(ThinkingLevel::Medium));
        assert_eq!(
            s.default_model_name().as_deref(),
            Some("anthropic/claude-sonnet-4-5")
        );
        assert_eq!(s.raw.get("theme"), Some(&json!("dark")));
        assert_eq!(loaded.files, vec![f.home.settings_json()]);
        assert_eq!(loaded.skipped_untrusted, None);
    }

    #[test]
    fn trusted_project_overrides_and_merges_nested_objects() {
        let f = fixture(Some(GLOBAL), Some(PROJECT));
        let loaded = load_settings(&f.home, Some(&f.project), true).unwrap();
        let s = &loaded.settings;
        assert_eq!(s.default_model_name().as_deref(), Some("openai/gpt-5"));
        assert_eq!(s.default_thinking_level, Some(ThinkingLevel::Medium));
        assert_eq!(
            s.raw.get("compaction"),
            Some(&json!({"enabled": true, "reserveTokens": 8192}))
        );
        assert_eq!(
            s.subagents,
            Some(json!({
                "authorization": "standing",
                "dispatch": "sequential",
                "agentOverrides": {"code": {"model": "a/b"}}
            }))
        );
        assert_eq!(loaded.files.len(), 2);
    }

    #[test]
    fn untrusted_project_contributes_nothing_even_if_malformed() {
        let f = fixture(Some(GLOBAL), Some(PROJECT));
        let loaded = load_settings(&f.home, Some(&f.project), false).unwrap();
        assert_eq!(
            loaded.settings.default_provider.as_deref(),
            Some("anthropic")
        );
        assert_eq!(loaded.files, vec![f.home.settings_json()]);
        assert_eq!(
            loaded.skipped_untrusted,
            Some(f.project.join(".cadre/settings.json"))
        );

        let f = fixture(None, Some("{ not json"));
        let loaded = load_settings(&f.home, Some(&f.project), false).unwrap();
        assert_eq!(loaded.settings, Settings::default());
        assert!(loaded.skipped_untrusted.is_some());
    }

    #[test]
    fn compaction_settings_lay_over_pis_defaults() {
        let with = |v: Value| {
            Settings::from_merged(json!({ "compaction": v }).as_object().unwrap().clone())
        };
        assert_eq!(
            Settings::default().compaction(),
            Ok(CompactionSettings::default())
        );
        assert_eq!(
            with(json!({"reserveTokens": 8192, "future": 1})).compaction(),
            Ok(CompactionSettings {
                reserve_tokens: 8192,
                ..CompactionSettings::default()
            })
        );
        assert_eq!(
            with(json!({"enabled": false, "keepRecentTokens": 500, "reserveTokens": null}))
                .compaction(),
            Ok(CompactionSettings {
                enabled: false,
                keep_recent_tokens: 500,
                ..CompactionSettings::default()
            })
        );
        for (bad, key) in [
            (json!({"enabled": "yes"}), "compaction.enabled"),
            (json!({"reserveTokens": -1}), "compaction.reserveTokens"),
            (
                json!({"keepRecentTokens": "20k"}),
                "compaction.keepRecentTokens",
            ),
            (json!(true), "compaction must be an object"),
        ] {
            let err = with(bad).compaction().unwrap_err();
            assert!(err.contains(key), "{err}");
        }
    }

    #[test]
    fn no_files_gives_defaults() {
        let f = fixture(None, None);
        let loaded = load_settings(&f.home, Some(&f.project), true).unwrap();
        assert_eq!(loaded, LoadedSettings::default());
        let loaded = load_settings(&f.home, None, false).unwrap();
        assert_eq!(loaded, LoadedSettings::default());
    }

    #[test]
    fn malformed_files_name_the_path() {
        let f = fixture(Some("{\n  \"defaultModel\": \n}"), None);
        let err = load_settings(&f.home, None, true).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(&f.home.settings_json().display().to_string()),
            "{text}"
        );
        assert!(matches!(err, ConfigError::Parse { line: 3, .. }), "{err:?}");

        let f = fixture(None, Some("{\"defaultModel\": 5}"));
        let err = load_settings(&f.home, Some(&f.project), true).unwrap_err();
        assert!(matches!(err, ConfigError::Parse { line: 1, .. }), "{err:?}");
        assert!(err.to_string().contains(".cadre/settings.json"));

        let f = fixture(Some("[1]"), None);
        let err = load_settings(&f.home, None, true).unwrap_err();
        assert!(err.to_string().contains("expected a JSON object"), "{err}");

        let f = fixture(Some(r#"{"defaultThinkingLevel": "ultra"}"#), None);
        let err = load_settings(&f.home, None, true).unwrap_err();
        assert!(err.to_string().contains("ultra"), "{err}");

        let f = fixture(Some(r#"{"subagents": "yes"}"#), None);
        assert!(load_settings(&f.home, None, true).is_err());
    }

    #[test]
    fn unknown_keys_and_nulls_are_accepted() {
        let f = fixture(
            Some(
                r#"{"packages": ["pi-skills"], "retry": {"enabled": true}, "defaultModel": null, "subagents": null}"#,
            ),
            None,
        );
        let s = load_settings(&f.home, None, true).unwrap().settings;
        assert_eq!(s.default_model, None);
        assert_eq!(s.subagents, None);
        assert_eq!(s.raw.get("packages"), Some(&json!(["pi-skills"])));
    }

    fn with_timeouts(value: Value) -> Settings {
        let mut s = Settings::default();
        s.raw.insert("requestTimeouts".into(), value);
        s
    }

    #[test]
    fn request_timeouts_override_the_defaults_key_by_key() {
        let defaults = RequestTimeouts::default();
        assert_eq!(Settings::default().request_timeouts(defaults), Ok(defaults));
        assert_eq!(
            with_timeouts(Value::Null).request_timeouts(defaults),
            Ok(defaults)
        );
        let s = with_timeouts(json!({"firstContentMs": 300000, "idleMs": null, "totalMs": 60000}));
        let t = s.request_timeouts(defaults).unwrap();
        assert_eq!(t.first_content, Duration::from_secs(300));
        assert_eq!(t.idle, defaults.idle);
        assert_eq!(t.total, Duration::from_secs(60));
        let t = with_timeouts(json!({"idleMs": 1}))
            .request_timeouts(defaults)
            .unwrap();
        assert_eq!(t.idle, Duration::from_millis(1));
    }

    #[test]
    fn invalid_request_timeouts_are_clear_errors() {
        let defaults = RequestTimeouts::default();
        for (value, needle) in [
            (json!(120000), "must be an object"),
            (
                json!({"idleMs": 0}),
                "requestTimeouts.idleMs must be a whole number",
            ),
            (json!({"idleMs": -5}), "found -5"),
            (json!({"totalMs": 1.5}), "requestTimeouts.totalMs"),
            (json!({"totalMs": "30m"}), "found \"30m\""),
            (
                json!({"firstContentMs": 1e300}),
                "requestTimeouts.firstContentMs",
            ),
            (
                json!({"firstByteMs": 1000}),
                "firstByteMs is unknown (expected firstContentMs",
            ),
        ] {
            let err = with_timeouts(value.clone())
                .request_timeouts(defaults)
                .unwrap_err();
            assert!(err.contains(needle), "{value}: {err}");
        }
    }

    #[test]
    fn default_model_name_rules() {
        let mut s = Settings::default();
        assert_eq!(s.default_model_name(), None);
        s.default_provider = Some("openrouter".into());
        assert_eq!(s.default_model_name(), None);
        s.default_model = Some("openai/gpt-5".into());
        assert_eq!(
            s.default_model_name().as_deref(),
            Some("openrouter/openai/gpt-5")
        );
        s.default_model = Some("openrouter/openai/gpt-5".into());
        assert_eq!(
            s.default_model_name().as_deref(),
            Some("openrouter/openai/gpt-5")
        );
        s.default_provider = None;
        s.default_model = Some("gpt-5".into());
        assert_eq!(s.default_model_name().as_deref(), Some("gpt-5"));
    }

    #[test]
    fn deep_merge_replaces_non_objects() {
        let mut base = json!({"a": {"b": 1, "c": [1]}, "d": 1})
            .as_object()
            .unwrap()
            .clone();
        let over = json!({"a": {"c": [2], "e": null}, "d": {"x": 1}})
            .as_object()
            .unwrap()
            .clone();
        deep_merge(&mut base, over);
        assert_eq!(
            Value::Object(base),
            json!({"a": {"b": 1, "c": [2], "e": null}, "d": {"x": 1}})
        );
    }
}
