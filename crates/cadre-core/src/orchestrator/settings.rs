//! The `subagents` settings object (SPEC O, L, D3, D4) with its defaults.
//!
//! Read from the merged `settings.json` value. A value of the wrong type or out of range is an
//! error naming the key (`subagents.maxTurns: …`), so a typo'd limit never silently becomes
//! "unlimited". Keys cadre does not know are not errors — settings files are shared with newer
//! and older versions — but they are returned as warnings for `cadre doctor`. `null` means "use
//! the default" for every key.

use std::collections::BTreeMap;

use cadre_protocol::{TaskBudgets, ThinkingLevel, WarningSchedule};
use serde_json::{Map, Value};

use super::lifecycle::DEFAULT_TOOL_BUDGET_BLOCK;
use super::output::{DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_OUTPUT_LINES};

/// Who authorises a launch (D3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Authorization {
    /// `Agent` refuses with `host_authorization_required`.
    Solo,
    /// Interactive confirmation; refused where nobody can answer.
    Ask,
    /// Allowed.
    #[default]
    Standing,
}

/// How children are dispatched (D4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DispatchMode {
    #[default]
    Parallel,
    /// At most one foreground child at a time per parent; background launches are refused.
    Sequential,
}

/// `agentOverrides.<role name>`: per-role model choices (role names match exactly).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentOverride {
    pub model: Option<String>,
    pub thinking: Option<ThinkingLevel>,
    pub fallback_model: Option<String>,
}

/// The interpreted `subagents` object.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentSettings {
    pub max_concurrent_tasks: usize,
    pub max_tasks_per_launch: usize,
    pub max_agent_depth: u32,
    pub max_output_bytes: usize,
    pub max_output_lines: usize,
    pub warning_turns: u32,
    pub warning_interval_turns: u32,
    pub default_grace_turns: u32,
    pub default_tool_budget_block: Vec<String>,
    pub default_max_turns: Option<u32>,
    pub default_max_tool_calls: Option<u32>,
    pub default_soft_tool_calls: Option<u32>,
    pub default_timeout_ms: Option<u64>,
    /// The timeout of a child's bash call that gives none (`bashTimeoutMs`; `0` = none): a
    /// `tail -f` must not hold a child, and with it its parent, forever.
    pub bash_timeout_ms: Option<u64>,
    /// Keep a read-only task's scratch directory after it ends (`keepScratch`, for debugging).
    pub keep_scratch: bool,
    /// Directories a writing child's commands may write besides its project and the temporary
    /// directory (`writableRoots`, absolute; e.g. a build cache such as `~/.cargo`).
    pub writable_roots: Vec<std::path::PathBuf>,
    pub enable_background: bool,
    pub enable_fork: bool,
    pub enable_worktrees: bool,
    pub enable_nested_agents: bool,
    pub proactive_prompt: bool,
    pub verification_prompt: bool,
    pub verification_file_threshold: u32,
    /// Days after which finished task directories are removed; `None` keeps them.
    pub cleanup_period_days: Option<u32>,
    pub default_model: Option<String>,
    pub fallback_model: Option<String>,
    pub agent_overrides: BTreeMap<String, AgentOverride>,
    /// `modelAliases`: alias → model, in file order (see `roles::model_alias`).
    pub model_aliases: Vec<(String, String)>,
    pub authorization: Authorization,
    pub dispatch: DispatchMode,
}

/// Ten minutes: a full build and test run of a large project fits; a command that waits
/// forever does not hold its task past it.
pub const DEFAULT_BASH_TIMEOUT_MS: u64 = 10 * 60 * 1000;

impl Default for SubagentSettings {
    fn default() -> Self {
        SubagentSettings {
            max_concurrent_tasks: 20,
            max_tasks_per_launch: 8,
            max_agent_depth: 5,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_output_lines: DEFAULT_MAX_OUTPUT_LINES,
            warning_turns: WarningSchedule::default().warning_turns,
            warning_interval_turns: WarningSchedule::default().warning_interval_turns,
            default_grace_turns: 1,
            default_tool_budget_block: DEFAULT_TOOL_BUDGET_BLOCK
                .iter()
                .map(|s| s.to_string())
                .collect(),
            default_max_turns: None,
            default_max_tool_calls: None,
            default_soft_tool_calls: None,
            default_timeout_ms: None,
            bash_timeout_ms: Some(DEFAULT_BASH_TIMEOUT_MS),
            keep_scratch: false,
            writable_roots: Vec::new(),
            enable_background: true,
            enable_fork: true,
            enable_worktrees: true,
            enable_nested_agents: true,
            proactive_prompt: true,
            verification_prompt: true,
            verification_file_threshold: 3,
            cleanup_period_days: None,
            default_model: None,
            fallback_model: None,
            agent_overrides: BTreeMap::new(),
            model_aliases: Vec::new(),
            authorization: Authorization::Standing,
            dispatch: DispatchMode::Parallel,
        }
    }
}

/// A `subagents` value cadre cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("settings: subagents.{key}: {message}")]
pub struct SubagentSettingsError {
    /// The key path below `subagents` (e.g. `agentOverrides.Explore.thinking`).
    pub key: String,
    pub message: String,
}

/// Settings plus what was ignored.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedSubagentSettings {
    pub settings: SubagentSettings,
    /// Unknown or deprecated keys, one line each.
    pub warnings: Vec<String>,
}

const KNOWN_KEYS: &[&str] = &[
    "writableRoots",
    "maxConcurrentTasks",
    "maxTasksPerLaunch",
    "maxAgentDepth",
    "maxOutputBytes",
    "maxOutputChars",
    "maxOutputLines",
    "warningTurns",
    "warningIntervalTurns",
    "defaultGraceTurns",
    "defaultToolBudgetBlock",
    "defaultMaxTurns",
    "defaultMaxToolCalls",
    "defaultSoftToolCalls",
    "defaultTimeoutMs",
    "bashTimeoutMs",
    "keepScratch",
    "enableBackground",
    "enableFork",
    "enableWorktrees",
    "enableNestedAgents",
    "proactivePrompt",
    "verificationPrompt",
    "verificationFileThreshold",
    "cleanupPeriodDays",
    "defaultModel",
    "fallbackModel",
    "agentOverrides",
    "modelAliases",
    "authorization",
    "dispatch",
];

const OVERRIDE_KEYS: &[&str] = &["model", "thinking", "fallbackModel"];

impl SubagentSettings {
    /// Interpret the `subagents` value (`None` or `null` = all defaults).
    pub fn from_value(
        value: Option<&Value>,
    ) -> Result<ParsedSubagentSettings, SubagentSettingsError> {
        let mut parsed = ParsedSubagentSettings::default();
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return Ok(parsed);
        };
        let Value::Object(map) = value else {
            return Err(SubagentSettingsError {
                key: String::new(),
                message: format!("expected an object, found {}", kind(value)),
            });
        };
        let r = Reader { map };
        let s = &mut parsed.settings;
        let d = SubagentSettings::default();

        s.max_concurrent_tasks = r
            .count("maxConcurrentTasks", 1)?
            .unwrap_or(d.max_concurrent_tasks);
        s.max_tasks_per_launch = r
            .count("maxTasksPerLaunch", 1)?
            .unwrap_or(d.max_tasks_per_launch);
        s.max_agent_depth = r.u32("maxAgentDepth", 1)?.unwrap_or(d.max_agent_depth);
        s.max_output_bytes = match r.count("maxOutputBytes", 1)? {
            Some(n) => n,
            None => match r.count("maxOutputChars", 1)? {
                Some(n) => {
                    parsed
                        .warnings
                        .push("subagents.maxOutputChars is deprecated; use maxOutputBytes".into());
                    n
                }
                None => d.max_output_bytes,
            },
        };
        s.max_output_lines = r.count("maxOutputLines", 1)?.unwrap_or(d.max_output_lines);
        s.warning_turns = r.u32("warningTurns", 1)?.unwrap_or(d.warning_turns);
        s.warning_interval_turns = r
            .u32("warningIntervalTurns", 1)?
            .unwrap_or(d.warning_interval_turns);
        s.default_grace_turns = r
            .u32("defaultGraceTurns", 0)?
            .unwrap_or(d.default_grace_turns);
        s.default_tool_budget_block = r
            .tool_list("defaultToolBudgetBlock")?
            .unwrap_or(d.default_tool_budget_block);
        s.default_max_turns = r.u32("defaultMaxTurns", 1)?;
        s.default_max_tool_calls = r.u32("defaultMaxToolCalls", 1)?;
        s.default_soft_tool_calls = r.u32("defaultSoftToolCalls", 1)?;
        s.default_timeout_ms = r.u64("defaultTimeoutMs", 1)?;
        s.bash_timeout_ms = match r.u64("bashTimeoutMs", 0)? {
            Some(0) => None,
            Some(ms) => Some(ms),
            None => d.bash_timeout_ms,
        };
        s.keep_scratch = r.bool("keepScratch")?.unwrap_or(d.keep_scratch);
        s.writable_roots = r.absolute_paths("writableRoots")?;
        if let (Some(soft), Some(max)) = (s.default_soft_tool_calls, s.default_max_tool_calls)
            && soft > max
        {
            return Err(SubagentSettingsError {
                key: "defaultSoftToolCalls".into(),
                message: format!("{soft} exceeds defaultMaxToolCalls ({max})"),
            });
        }
        s.enable_background = r.bool("enableBackground")?.unwrap_or(d.enable_background);
        s.enable_fork = r.bool("enableFork")?.unwrap_or(d.enable_fork);
        s.enable_worktrees = r.bool("enableWorktrees")?.unwrap_or(d.enable_worktrees);
        s.enable_nested_agents = r
            .bool("enableNestedAgents")?
            .unwrap_or(d.enable_nested_agents);
        s.proactive_prompt = r.bool("proactivePrompt")?.unwrap_or(d.proactive_prompt);
        s.verification_prompt = r
            .bool("verificationPrompt")?
            .unwrap_or(d.verification_prompt);
        s.verification_file_threshold = r
            .u32("verificationFileThreshold", 1)?
            .unwrap_or(d.verification_file_threshold);
        s.cleanup_period_days = r.u32("cleanupPeriodDays", 1)?;
        s.default_model = r.name("defaultModel")?;
        s.fallback_model = r.name("fallbackModel")?;
        s.authorization = match r.choice("authorization", &["solo", "ask", "standing"])? {
            Some("solo") => Authorization::Solo,
            Some("ask") => Authorization::Ask,
            _ => Authorization::Standing,
        };
        s.dispatch = match r.choice("dispatch", &["parallel", "sequential"])? {
            Some("sequential") => DispatchMode::Sequential,
            _ => DispatchMode::Parallel,
        };
        s.agent_overrides = r.overrides(&mut parsed.warnings)?;
        s.model_aliases = crate::roles::model_alias::parse_model_aliases(r.get("modelAliases"))
            .map_err(|(key, message)| SubagentSettingsError { key, message })?;

        for key in map.keys() {
            if !KNOWN_KEYS.contains(&key.as_str()) {
                parsed.warnings.push(format!(
                    "subagents.{key} is not a known setting and is ignored"
                ));
            }
        }
        Ok(parsed)
    }

    /// The supervision checkpoints a launch uses when it names none (L5).
    pub fn warning_schedule(&self) -> WarningSchedule {
        WarningSchedule {
            warning_turns: self.warning_turns,
            warning_interval_turns: self.warning_interval_turns,
        }
    }

    /// The budgets a task gets when its role sets none.
    pub fn default_budgets(&self) -> TaskBudgets {
        TaskBudgets {
            max_turns: self.default_max_turns,
            grace_turns: self.default_grace_turns,
            max_tool_calls: self.default_max_tool_calls,
            soft_tool_calls: self.default_soft_tool_calls,
            tool_budget_block: self.default_tool_budget_block.clone(),
            timeout_ms: self.default_timeout_ms,
            max_cost_usd: None,
            max_tokens: None,
        }
    }

    /// The override for a role, matched by its exact runtime name.
    pub fn agent_override(&self, role: &str) -> Option<&AgentOverride> {
        self.agent_overrides.get(role)
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Typed access to the keys of one object, with errors naming the key path.
struct Reader<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Reader<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn err<T>(key: &str, message: impl Into<String>) -> Result<T, SubagentSettingsError> {
        Err(SubagentSettingsError {
            key: key.to_string(),
            message: message.into(),
        })
    }

    fn u64(&self, key: &str, min: u64) -> Result<Option<u64>, SubagentSettingsError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.as_u64() {
            Some(n) if n >= min => Ok(Some(n)),
            Some(n) => Self::err(key, format!("{n} is too small (minimum {min})")),
            None => Self::err(
                key,
                format!("expected a whole number ≥ {min}, found {}", show(v)),
            ),
        }
    }

    fn u32(&self, key: &str, min: u32) -> Result<Option<u32>, SubagentSettingsError> {
        match self.u64(key, u64::from(min))? {
            None => Ok(None),
            Some(n) => match u32::try_from(n) {
                Ok(n) => Ok(Some(n)),
                Err(_) => Self::err(key, format!("{n} is too large")),
            },
        }
    }

    fn count(&self, key: &str, min: u32) -> Result<Option<usize>, SubagentSettingsError> {
        match self.u64(key, u64::from(min))? {
            None => Ok(None),
            Some(n) => match usize::try_from(n) {
                Ok(n) => Ok(Some(n)),
                Err(_) => Self::err(key, format!("{n} is too large")),
            },
        }
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, SubagentSettingsError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.as_bool() {
            Some(b) => Ok(Some(b)),
            None => Self::err(key, format!("expected true or false, found {}", show(v))),
        }
    }

    /// A non-empty string such as a model name.
    fn name(&self, key: &str) -> Result<Option<String>, SubagentSettingsError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.as_str().map(str::trim) {
            Some(s) if !s.is_empty() => Ok(Some(s.to_string())),
            Some(_) => Self::err(key, "must not be empty (omit it or use null for none)"),
            None => Self::err(key, format!("expected a string, found {}", show(v))),
        }
    }

    fn choice(
        &self,
        key: &str,
        allowed: &[&'static str],
    ) -> Result<Option<&'static str>, SubagentSettingsError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let found = v
            .as_str()
            .and_then(|s| allowed.iter().find(|a| **a == s.trim()).copied());
        match found {
            Some(a) => Ok(Some(a)),
            None => Self::err(
                key,
                format!("expected one of {}, found {}", allowed.join(", "), show(v)),
            ),
        }
    }

    /// A tool list: an array of names or one comma-separated string, as in role files.
    /// A list of absolute paths (`~/` is the home directory).
    fn absolute_paths(&self, key: &str) -> Result<Vec<std::path::PathBuf>, SubagentSettingsError> {
        let Some(v) = self.get(key) else {
            return Ok(Vec::new());
        };
        let Value::Array(items) = v else {
            return Self::err(key, format!("expected a list of paths, found {}", kind(v)));
        };
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let Some(text) = item.as_str() else {
                return Self::err(key, format!("expected a path, found {}", kind(item)));
            };
            let path = match (text.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => std::path::PathBuf::from(text),
            };
            if !path.is_absolute() {
                return Self::err(key, format!("`{text}` is not an absolute path"));
            }
            out.push(path);
        }
        Ok(out)
    }

    fn tool_list(&self, key: &str) -> Result<Option<Vec<String>>, SubagentSettingsError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let items: Vec<String> = match v {
            Value::String(s) => s.split(',').map(|t| t.trim().to_string()).collect(),
            Value::Array(a) => {
                let mut out = Vec::with_capacity(a.len());
                for item in a {
                    match item.as_str() {
                        Some(s) => out.push(s.trim().to_string()),
                        None => {
                            return Self::err(
                                key,
                                format!("expected tool names, found {}", show(item)),
                            );
                        }
                    }
                }
                out
            }
            other => {
                return Self::err(
                    key,
                    format!("expected an array of tool names, found {}", show(other)),
                );
            }
        };
        if items.iter().any(String::is_empty) {
            return Self::err(key, "contains an empty tool name");
        }
        if items.is_empty() {
            return Self::err(key, "must name at least one tool (or \"*\" for all)");
        }
        let mut dedup: Vec<String> = Vec::with_capacity(items.len());
        for t in items {
            if !dedup.contains(&t) {
                dedup.push(t);
            }
        }
        Ok(Some(dedup))
    }

    fn overrides(
        &self,
        warnings: &mut Vec<String>,
    ) -> Result<BTreeMap<String, AgentOverride>, SubagentSettingsError> {
        let mut out = BTreeMap::new();
        let Some(v) = self.get("agentOverrides") else {
            return Ok(out);
        };
        let Value::Object(roles) = v else {
            return Self::err(
                "agentOverrides",
                format!("expected an object keyed by agent name, found {}", show(v)),
            );
        };
        for (role, entry) in roles {
            let path = format!("agentOverrides.{role}");
            if entry.is_null() {
                continue;
            }
            let Value::Object(fields) = entry else {
                return Self::err(&path, format!("expected an object, found {}", show(entry)));
            };
            let r = Reader { map: fields };
            let prefix = |e: SubagentSettingsError| SubagentSettingsError {
                key: format!("{path}.{}", e.key),
                message: e.message,
            };
            let thinking = match r.get("thinking") {
                None => None,
                Some(t) => match t.as_str().and_then(ThinkingLevel::parse) {
                    Some(level) => Some(level),
                    None => {
                        let levels: Vec<&str> =
                            ThinkingLevel::ALL.iter().map(|l| l.as_str()).collect();
                        return Self::err(
                            &format!("{path}.thinking"),
                            format!("expected one of {}, found {}", levels.join(", "), show(t)),
                        );
                    }
                },
            };
            let ov = AgentOverride {
                model: r.name("model").map_err(prefix)?,
                thinking,
                fallback_model: r.name("fallbackModel").map_err(prefix)?,
            };
            for key in fields.keys() {
                if !OVERRIDE_KEYS.contains(&key.as_str()) {
                    warnings.push(format!(
                        "subagents.{path}.{key} is not a known setting and is ignored"
                    ));
                }
            }
            out.insert(role.clone(), ov);
        }
        Ok(out)
    }
}

/// A short rendering of a bad value for an error message.
fn show(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 40 {
        let cut: String = text.chars().take(37).collect();
        format!("{cut}...")
    } else {
        text
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<ParsedSubagentSettings, SubagentSettingsError> {
        SubagentSettings::from_value(Some(&v))
    }

    #[test]
    fn absent_null_and_empty_give_the_defaults() {
        let d = SubagentSettings::default();
        assert_eq!(SubagentSettings::from_value(None).unwrap().settings, d);
        assert_eq!(parse(Value::Null).unwrap().settings, d);
        let p = parse(json!({})).unwrap();
        assert_eq!(p.settings, d);
        assert!(p.warnings.is_empty());
        assert_eq!(d.max_concurrent_tasks, 20);
        assert_eq!(d.max_tasks_per_launch, 8);
        assert_eq!(d.max_agent_depth, 5);
        assert_eq!(d.max_output_bytes, 204_800);
        assert_eq!(d.max_output_lines, 5000);
        assert_eq!((d.warning_turns, d.warning_interval_turns), (40, 25));
        assert_eq!(d.default_grace_turns, 1);
        assert_eq!(d.default_tool_budget_block, ["read", "grep", "find", "ls"]);
        assert_eq!(d.verification_file_threshold, 3);
        assert_eq!(d.authorization, Authorization::Standing);
        assert_eq!(d.dispatch, DispatchMode::Parallel);
        assert!(d.enable_background && d.enable_fork && d.enable_worktrees);
        assert!(d.enable_nested_agents && d.proactive_prompt && d.verification_prompt);
        // Every key null = defaults too.
        let nulls: Map<String, Value> = KNOWN_KEYS
            .iter()
            .map(|k| (k.to_string(), Value::Null))
            .collect();
        let p = parse(Value::Object(nulls)).unwrap();
        assert_eq!(p.settings, d);
        assert!(p.warnings.is_empty());
    }

    #[test]
    fn every_key_is_read() {
        let p = parse(json!({
            "maxConcurrentTasks": 4,
            "maxTasksPerLaunch": 2,
            "maxAgentDepth": 2,
            "maxOutputBytes": 1000,
            "maxOutputLines": 50,
            "warningTurns": 15,
            "warningIntervalTurns": 10,
            "defaultGraceTurns": 0,
            "defaultToolBudgetBlock": "read, bash , read",
            "defaultMaxTurns": 60,
            "defaultMaxToolCalls": 100,
            "defaultSoftToolCalls": 80,
            "defaultTimeoutMs": 900000,
            "enableBackground": false,
            "enableFork": false,
            "enableWorktrees": false,
            "enableNestedAgents": false,
            "proactivePrompt": false,
            "verificationPrompt": false,
            "verificationFileThreshold": 5,
            "cleanupPeriodDays": 30,
            "defaultModel": " anthropic/claude ",
            "fallbackModel": "openai/gpt",
            "agentOverrides": {
                "Explore": {"model": "a/fast", "thinking": "LOW"},
                "verification": {"fallbackModel": "b/backup"},
                "Plan": null
            },
            "authorization": "ask",
            "dispatch": "sequential"
        }))
        .unwrap();
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        let s = p.settings;
        assert_eq!(s.max_concurrent_tasks, 4);
        assert_eq!(s.max_tasks_per_launch, 2);
        assert_eq!(s.max_agent_depth, 2);
        assert_eq!(s.max_output_bytes, 1000);
        assert_eq!(s.max_output_lines, 50);
        assert_eq!(
            s.warning_schedule(),
            WarningSchedule {
                warning_turns: 15,
                warning_interval_turns: 10
            }
        );
        assert_eq!(s.default_tool_budget_block, ["read", "bash"]);
        assert_eq!(
            s.default_budgets(),
            TaskBudgets {
                max_turns: Some(60),
                grace_turns: 0,
                max_tool_calls: Some(100),
                soft_tool_calls: Some(80),
                tool_budget_block: vec!["read".into(), "bash".into()],
                timeout_ms: Some(900_000),
                ..TaskBudgets::default()
            }
        );
        assert!(!s.enable_background && !s.enable_fork && !s.enable_worktrees);
        assert!(!s.enable_nested_agents && !s.proactive_prompt && !s.verification_prompt);
        assert_eq!(s.verification_file_threshold, 5);
        assert_eq!(s.cleanup_period_days, Some(30));
        assert_eq!(s.default_model.as_deref(), Some("anthropic/claude"));
        assert_eq!(s.fallback_model.as_deref(), Some("openai/gpt"));
        assert_eq!(
            s.agent_override("Explore"),
            Some(&AgentOverride {
                model: Some("a/fast".into()),
                thinking: Some(ThinkingLevel::Low),
                fallback_model: None,
            })
        );
        assert_eq!(
            s.agent_override("verification")
                .unwrap()
                .fallback_model
                .as_deref(),
            Some("b/backup")
        );
        assert_eq!(s.agent_override("explore"), None, "names match exactly");
        assert_eq!(s.agent_override("Plan"), None);
        assert_eq!(s.authorization, Authorization::Ask);
        assert_eq!(s.dispatch, DispatchMode::Sequential);
    }

    #[test]
    fn bad_values_name_their_key() {
        let cases = [
            (
                json!({"maxConcurrentTasks": 0}),
                "maxConcurrentTasks",
                "too small",
            ),
            (
                json!({"maxConcurrentTasks": -1}),
                "maxConcurrentTasks",
                "whole number",
            ),
            (
                json!({"maxConcurrentTasks": 2.5}),
                "maxConcurrentTasks",
                "whole number",
            ),
            (
                json!({"maxTasksPerLaunch": "8"}),
                "maxTasksPerLaunch",
                "whole number",
            ),
            (json!({"maxAgentDepth": 0}), "maxAgentDepth", "too small"),
            (
                json!({"maxAgentDepth": 5_000_000_000u64}),
                "maxAgentDepth",
                "too large",
            ),
            (json!({"maxOutputBytes": 0}), "maxOutputBytes", "too small"),
            (
                json!({"maxOutputLines": true}),
                "maxOutputLines",
                "whole number",
            ),
            (json!({"warningTurns": 0}), "warningTurns", "too small"),
            (
                json!({"warningIntervalTurns": 0}),
                "warningIntervalTurns",
                "too small",
            ),
            (
                json!({"defaultGraceTurns": -2}),
                "defaultGraceTurns",
                "whole number",
            ),
            (
                json!({"defaultToolBudgetBlock": []}),
                "defaultToolBudgetBlock",
                "at least one",
            ),
            (
                json!({"defaultToolBudgetBlock": ""}),
                "defaultToolBudgetBlock",
                "empty tool",
            ),
            (
                json!({"defaultToolBudgetBlock": "read,,ls"}),
                "defaultToolBudgetBlock",
                "empty tool",
            ),
            (
                json!({"defaultToolBudgetBlock": [1]}),
                "defaultToolBudgetBlock",
                "tool names",
            ),
            (
                json!({"defaultToolBudgetBlock": 3}),
                "defaultToolBudgetBlock",
                "array",
            ),
            (
                json!({"defaultMaxTurns": 0}),
                "defaultMaxTurns",
                "too small",
            ),
            (
                json!({"defaultMaxToolCalls": 0}),
                "defaultMaxToolCalls",
                "too small",
            ),
            (
                json!({"defaultSoftToolCalls": 0}),
                "defaultSoftToolCalls",
                "too small",
            ),
            (
                json!({"defaultSoftToolCalls": 9, "defaultMaxToolCalls": 5}),
                "defaultSoftToolCalls",
                "exceeds defaultMaxToolCalls (5)",
            ),
            (
                json!({"defaultTimeoutMs": 0}),
                "defaultTimeoutMs",
                "too small",
            ),
            (json!({"enableFork": "yes"}), "enableFork", "true or false"),
            (
                json!({"proactivePrompt": 1}),
                "proactivePrompt",
                "true or false",
            ),
            (
                json!({"verificationFileThreshold": 0}),
                "verificationFileThreshold",
                "too small",
            ),
            (
                json!({"cleanupPeriodDays": 0}),
                "cleanupPeriodDays",
                "too small",
            ),
            (
                json!({"defaultModel": ""}),
                "defaultModel",
                "must not be empty",
            ),
            (
                json!({"fallbackModel": 7}),
                "fallbackModel",
                "expected a string",
            ),
            (
                json!({"authorization": "always"}),
                "authorization",
                "solo, ask, standing",
            ),
            (
                json!({"authorization": "Solo"}),
                "authorization",
                "found \"Solo\"",
            ),
            (json!({"dispatch": 1}), "dispatch", "parallel, sequential"),
            (
                json!({"agentOverrides": []}),
                "agentOverrides",
                "object keyed by agent name",
            ),
            (
                json!({"agentOverrides": {"Explore": "a/b"}}),
                "agentOverrides.Explore",
                "object",
            ),
            (
                json!({"agentOverrides": {"Explore": {"thinking": "huge"}}}),
                "agentOverrides.Explore.thinking",
                "off, minimal, low, medium, high, xhigh, max",
            ),
            (
                json!({"agentOverrides": {"Plan": {"model": ""}}}),
                "agentOverrides.Plan.model",
                "must not be empty",
            ),
            (
                json!({"agentOverrides": {"Plan": {"fallbackModel": false}}}),
                "agentOverrides.Plan.fallbackModel",
                "expected a string",
            ),
        ];
        for (value, key, fragment) in cases {
            let e = parse(value.clone()).unwrap_err();
            assert_eq!(e.key, key, "{value}");
            assert!(e.message.contains(fragment), "{value}: {}", e.message);
            assert!(
                e.to_string()
                    .starts_with(&format!("settings: subagents.{key}: "))
            );
        }
        let e = parse(json!([1, 2])).unwrap_err();
        assert!(e.message.contains("expected an object, found an array"));
    }

    #[test]
    fn unknown_and_legacy_keys_are_warnings() {
        let p = parse(json!({
            "maxOutputChars": 1234,
            "futureKnob": 1,
            "agentOverrides": {"Explore": {"model": "a/b", "temperature": 0.2}}
        }))
        .unwrap();
        assert_eq!(p.settings.max_output_bytes, 1234);
        let mut warnings = p.warnings.clone();
        warnings.sort();
        assert_eq!(
            warnings,
            [
                "subagents.agentOverrides.Explore.temperature is not a known setting and is ignored",
                "subagents.futureKnob is not a known setting and is ignored",
                "subagents.maxOutputChars is deprecated; use maxOutputBytes",
            ]
        );
        // maxOutputBytes wins over the legacy key, which is then not read at all.
        let p = parse(json!({"maxOutputBytes": 10, "maxOutputChars": 99})).unwrap();
        assert_eq!(p.settings.max_output_bytes, 10);
    }

    #[test]
    fn a_long_bad_value_is_shortened_in_the_message() {
        let long = "x".repeat(200);
        let e = parse(json!({ "dispatch": long })).unwrap_err();
        assert!(e.message.len() < 120, "{}", e.message);
        assert!(e.message.ends_with("..."));
    }
}
