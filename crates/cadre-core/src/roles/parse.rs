//! One role file → a validated [`RoleDef`] (SPEC T1, T2, T3). Pure: no file system.
//!
//! A role file is Markdown with YAML frontmatter between two `---` lines; the body is the role
//! prompt. Parsing **fails closed**: an unknown key, a value of the wrong type or out of range,
//! a name that differs from the file stem, a missing or unterminated frontmatter, invalid YAML
//! (duplicate keys included) or a limit exceeded makes the whole file malformed. Nothing is
//! ever taken from a malformed file, so a misspelt restriction can never fall back to the wider
//! inherited tool set. A key present with no value (`tools:`) is malformed too, not "absent":
//! for `tools` absent means "all tools".
//!
//! Two key sets ([`Dialect`]):
//!
//! - **cadre** (`.cadre/agents`, `.pi/agents`, `CADRE_HOME/agents`, `~/.pi/agent/agents`): the T1
//!   keys. `model: inherit` means no model.
//! - **Claude Code** (`.claude/agents`): `name, description, tools, disallowedTools, model,
//!   permissionMode, skills, maxTurns, background, isolation, effort, color, memory, hooks,
//!   mcpServers`. The name need not equal the stem. Claude Code tool names are mapped to cadre's
//!   (`Read`→`read`, `Glob`→`find`, `LS`→`ls`, `Task`→`Agent`, …); Claude-only tools cadre does
//!   not have (`WebSearch`, `TodoWrite`, …) are dropped from the lists with a note — dropping an
//!   allowlist entry only narrows. `effort` maps to the thinking level, `model: inherit` to no
//!   model, `color` is cosmetic and accepted. Decisions on the capability keys:
//!   - `hooks`, `mcpServers` and `memory` make the file malformed: each would run commands,
//!     start servers or read and write state outside the role's tools, and cadre honours none of
//!     them, so loading the file without them would silently change what the author asked for.
//!   - `permissionMode`: `default`, `acceptEdits` and `dontAsk` are accepted and change nothing
//!     (cadre children never prompt; they act inside their enforced tool set, and a call outside
//!     it is refused, which is what `dontAsk` asks). `plan` makes the role read-only, which cadre
//!     enforces. `bypassPermissions` makes the file malformed: it asks for the boundaries to be
//!     switched off, which cadre never does. Any other value is malformed.

use cadre_protocol::ThinkingLevel;
use serde_yaml_ng::Value;

use super::builtin::CAPITALISED_BUILTIN_NAMES;

/// Largest role file, in bytes.
pub const MAX_FILE_BYTES: usize = 64 * 1024;
/// Largest role prompt (the body after the frontmatter), in bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;
/// Longest role name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest tool name, in characters.
pub const MAX_TOOL_NAME_CHARS: usize = 128;
/// Most tools in one list.
pub const MAX_TOOLS: usize = 64;
/// Longest model reference, in characters.
pub const MAX_MODEL_CHARS: usize = 256;
/// Longest skill name, in characters; skill names become directory names.
pub const MAX_SKILL_NAME_CHARS: usize = 64;
/// Most skills one role may preload.
pub const MAX_SKILLS: usize = 32;

/// Which key set a file is read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Cadre,
    ClaudeCode,
}

/// How a child's bash commands are screened before the sandbox runs them (S3): the bash
/// tool's own policy type, so a role's choice reaches the tool unchanged.
pub use cadre_tools::shell_policy::ShellPolicy;

/// What the child starts from (T8, O9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ContextMode {
    /// Only the role prompt, the environment and the task.
    #[default]
    Fresh,
    /// A branch of the parent's own conversation.
    Fork,
}

/// Where the child works (O11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    #[default]
    None,
    Worktree,
}

/// A tool list: every tool (`*`, or `tools` left out) or the named ones.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolList {
    #[default]
    All,
    Named(Vec<String>),
}

impl ToolList {
    /// Whether `tool` is in the list.
    pub fn contains(&self, tool: &str) -> bool {
        match self {
            ToolList::All => true,
            ToolList::Named(names) => names.iter().any(|n| n == tool),
        }
    }

    /// The named tools, or `None` for every tool.
    pub fn as_named(&self) -> Option<&[String]> {
        match self {
            ToolList::All => None,
            ToolList::Named(names) => Some(names),
        }
    }

    /// `all`, or the names joined with `, ` (`none` for an empty list).
    pub fn display(&self) -> String {
        match self {
            ToolList::All => "all".to_string(),
            ToolList::Named(names) if names.is_empty() => "none".to_string(),
            ToolList::Named(names) => names.join(", "),
        }
    }
}

/// A validated role definition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoleDef {
    pub name: String,
    pub description: String,
    /// The allowlist; [`ToolList::All`] when the file leaves `tools` out.
    pub tools: ToolList,
    pub disallowed_tools: Vec<String>,
    /// `None` when absent or `inherit`.
    pub model: Option<String>,
    pub fallback_model: Option<String>,
    pub thinking: Option<ThinkingLevel>,
    pub skills: Vec<String>,
    pub readonly: bool,
    pub shell_policy: ShellPolicy,
    /// Command patterns from Claude Code `Bash(…)` tool entries (`git diff:*`, `npm test`):
    /// when non-empty, the role's bash runs only commands these patterns allow, on top of
    /// `shell_policy`. Empty: no allowlist.
    pub bash_allow: Vec<String>,
    /// `None`: the mode's default.
    pub background: Option<bool>,
    pub context: ContextMode,
    pub isolation: Isolation,
    pub warning_turns: Option<u32>,
    pub warning_interval_turns: Option<u32>,
    pub max_turns: Option<u32>,
    pub grace_turns: Option<u32>,
    pub max_tool_calls: Option<u32>,
    pub soft_tool_calls: Option<u32>,
    /// `None`: the settings default.
    pub tool_budget_block: Option<ToolList>,
    pub timeout_ms: Option<u64>,
    /// The timeout of this role's bash calls that give none; `None`: the
    /// `subagents.bashTimeoutMs` setting.
    pub bash_timeout_ms: Option<u64>,
    pub one_shot: bool,
    pub allow_plan_files: bool,
    /// Leave the project's context files (AGENTS.md, CLAUDE.md) out of the child's prompt (T8:
    /// Explore and Plan). Not a frontmatter key: built-ins set it, files cannot.
    pub skip_context_files: bool,
    /// A read-only role whose bash may use the network (the built-in `research`, which
    /// fetches documentation). Not a frontmatter key: built-ins set it, files cannot, so a
    /// repository's role file cannot give itself the network.
    pub network: bool,
    /// The body: appended to the child's system prompt.
    pub prompt: String,
    pub dialect: Option<Dialect>,
    /// Things worth reporting that did not make the file malformed (a dropped Claude-only tool).
    pub notes: Vec<String>,
}

impl RoleDef {
    /// Whether plan mode may launch this role (S6): it is read-only, works in place, starts
    /// fresh, and does not run the project's builds and tests (`shellPolicy: verify` executes
    /// project code, which is verification, not planning). Of the built-ins: Explore, Plan,
    /// research, review and advisor.
    pub fn plan_mode_compatible(&self) -> bool {
        self.readonly
            && self.isolation == Isolation::None
            && self.context == ContextMode::Fresh
            && self.shell_policy != ShellPolicy::Verify
    }
}

/// Why a role file is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoleError {
    #[error("the {what} is {size} bytes; the limit is {limit}")]
    TooLarge {
        what: &'static str,
        size: usize,
        limit: usize,
    },
    #[error("no YAML frontmatter: the file must start with a `---` line")]
    MissingFrontmatter,
    #[error("the frontmatter has no closing `---` line")]
    UnterminatedFrontmatter,
    #[error("invalid YAML in the frontmatter: {0}")]
    Yaml(String),
    #[error("the frontmatter must be a mapping of keys to values")]
    NotAMapping,
    #[error("unknown key `{key}` ({dialect} files accept: {accepted})")]
    UnknownKey {
        key: String,
        dialect: &'static str,
        accepted: String,
    },
    #[error("`{key}` is not supported: {reason}")]
    Unsupported { key: String, reason: String },
    #[error("missing required key `{0}`")]
    MissingKey(&'static str),
    #[error("bad `{key}`: {reason}")]
    BadValue { key: String, reason: String },
    #[error(
        "name `{name}` does not match the file name `{stem}.md` (rename the file to `{name}.md` or set `name: {stem}`)"
    )]
    NameMismatch { name: String, stem: String },
}

const CADRE_KEYS: &[&str] = &[
    "name",
    "description",
    "tools",
    "disallowedTools",
    "model",
    "fallbackModel",
    "thinking",
    "reasoning_effort",
    "skills",
    "readonly",
    "shellPolicy",
    "background",
    "context",
    "isolation",
    "warningTurns",
    "warningIntervalTurns",
    "maxTurns",
    "graceTurns",
    "maxToolCalls",
    "softToolCalls",
    "toolBudgetBlock",
    "timeoutMs",
    "bashTimeoutMs",
    "oneShot",
    "allowPlanFiles",
];

const CLAUDE_KEYS: &[&str] = &[
    "name",
    "description",
    "tools",
    "disallowedTools",
    "model",
    "permissionMode",
    "skills",
    "maxTurns",
    "background",
    "isolation",
    "effort",
    "color",
    "memory",
    "hooks",
    "mcpServers",
];

/// Claude Code tool names and the cadre tools they mean.
const CLAUDE_TOOL_MAP: &[(&str, &str)] = &[
    ("Read", "read"),
    ("Write", "write"),
    ("Edit", "edit"),
    ("MultiEdit", "edit"),
    ("Bash", "bash"),
    ("Grep", "grep"),
    ("Glob", "find"),
    ("LS", "ls"),
    ("Task", "Agent"),
];

/// Claude Code tools with no cadre counterpart: dropped from lists (which only narrows).
const CLAUDE_ONLY_TOOLS: &[&str] = &[
    "TodoWrite",
    "NotebookEdit",
    "NotebookRead",
    "WebFetch",
    "WebSearch",
    "BashOutput",
    "KillShell",
    "KillBash",
    "ExitPlanMode",
    "SlashCommand",
    "Skill",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
];

/// Parse and validate one role file. `stem` is the file name without `.md`.
pub fn parse_role(text: &str, stem: &str, dialect: Dialect) -> Result<RoleDef, RoleError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(RoleError::TooLarge {
            what: "file",
            size: text.len(),
            limit: MAX_FILE_BYTES,
        });
    }
    let (yaml, body) = split_frontmatter(text)?;
    let body = body.trim();
    if body.len() > MAX_BODY_BYTES {
        return Err(RoleError::TooLarge {
            what: "prompt body",
            size: body.len(),
            limit: MAX_BODY_BYTES,
        });
    }
    let map = parse_mapping(yaml)?;
    let mut def = RoleDef {
        prompt: body.to_string(),
        dialect: Some(dialect),
        ..RoleDef::default()
    };
    let mut name = None;
    let mut description = None;
    let mut thinking_key: Option<String> = None;
    for (key, value) in &map {
        let key = key.as_str();
        check_known(key, dialect)?;
        if value.is_null() {
            return Err(bad(key, "the key is present but has no value"));
        }
        match key {
            "name" => name = Some(string(key, value)?),
            "description" => description = Some(string(key, value)?),
            "tools" => def.tools = tool_list(key, value, dialect, &mut def.notes)?,
            "disallowedTools" => {
                def.disallowed_tools = match tool_list(key, value, dialect, &mut def.notes)? {
                    ToolList::All => {
                        return Err(bad(
                            key,
                            "`*` would disallow every tool; list the tools instead",
                        ));
                    }
                    ToolList::Named(names) => names,
                }
            }
            "model" => def.model = model(key, value)?,
            "fallbackModel" => def.fallback_model = model(key, value)?,
            "thinking" | "reasoning_effort" | "effort" => {
                if let Some(first) = &thinking_key {
                    return Err(bad(
                        key,
                        &format!("`{first}` already sets the thinking level"),
                    ));
                }
                thinking_key = Some(key.to_string());
                def.thinking = Some(thinking(key, value)?);
            }
            "skills" => def.skills = skills(key, value)?,
            "readonly" => def.readonly = boolean(key, value)?,
            "shellPolicy" => {
                let s = string(key, value)?;
                def.shell_policy = s
                    .parse::<ShellPolicy>()
                    .map_err(|_| one_of(key, &s, "unrestricted, inspect, verify, none"))?;
            }
            "background" => def.background = Some(boolean(key, value)?),
            "context" => {
                let s = string(key, value)?;
                def.context = match s.as_str() {
                    "fresh" => ContextMode::Fresh,
                    "fork" => ContextMode::Fork,
                    _ => return Err(one_of(key, &s, "fresh, fork")),
                };
            }
            "isolation" => {
                let s = string(key, value)?;
                def.isolation = match (s.as_str(), dialect) {
                    ("worktree", _) => Isolation::Worktree,
                    ("none", Dialect::Cadre) => Isolation::None,
                    (_, Dialect::Cadre) => return Err(one_of(key, &s, "none, worktree")),
                    (_, Dialect::ClaudeCode) => return Err(one_of(key, &s, "worktree")),
                };
            }
            "warningTurns" => def.warning_turns = Some(count(key, value, 1)?),
            "warningIntervalTurns" => def.warning_interval_turns = Some(count(key, value, 1)?),
            "maxTurns" => def.max_turns = Some(count(key, value, 1)?),
            // Zero grace is meaningful: stop right at `maxTurns`.
            "graceTurns" => def.grace_turns = Some(count(key, value, 0)?),
            "maxToolCalls" => def.max_tool_calls = Some(count(key, value, 1)?),
            "softToolCalls" => def.soft_tool_calls = Some(count(key, value, 1)?),
            "toolBudgetBlock" => {
                def.tool_budget_block = Some(tool_list(key, value, dialect, &mut def.notes)?)
            }
            "timeoutMs" => def.timeout_ms = Some(positive_u64(key, value)?),
            "bashTimeoutMs" => def.bash_timeout_ms = Some(positive_u64(key, value)?),
            "oneShot" => def.one_shot = boolean(key, value)?,
            "allowPlanFiles" => def.allow_plan_files = boolean(key, value)?,
            "color" => {
                string(key, value)?;
            }
            "permissionMode" => {
                let s = string(key, value)?;
                match s.as_str() {
                    "default" | "acceptEdits" | "dontAsk" => {}
                    "plan" => def.readonly = true,
                    "bypassPermissions" => {
                        return Err(unsupported(
                            key,
                            "bypassPermissions asks for the tool boundaries to be switched off; cadre always enforces them",
                        ));
                    }
                    _ => {
                        return Err(one_of(
                            key,
                            &s,
                            "default, acceptEdits, dontAsk, plan (bypassPermissions is refused)",
                        ));
                    }
                }
            }
            "memory" => {
                return Err(unsupported(
                    key,
                    "persistent agent memory reads and writes state outside the role's tools; cadre does not provide it",
                ));
            }
            "hooks" => {
                return Err(unsupported(
                    key,
                    "hooks run commands outside the role's tool boundary; cadre does not run them",
                ));
            }
            "mcpServers" => {
                return Err(unsupported(
                    key,
                    "per-role MCP servers would add tools cadre cannot bound; cadre does not start them",
                ));
            }
            // `check_known` accepted it, so every known key has an arm above.
            _ => return Err(unknown(key, dialect)),
        }
    }
    let name = name.ok_or(RoleError::MissingKey("name"))?;
    check_name(&name)?;
    if dialect == Dialect::Cadre && name != stem {
        return Err(RoleError::NameMismatch {
            name,
            stem: stem.to_string(),
        });
    }
    let description = description.ok_or(RoleError::MissingKey("description"))?;
    let desc_chars = description.chars().count();
    if desc_chars > MAX_DESCRIPTION_CHARS {
        return Err(bad(
            "description",
            &format!("{desc_chars} characters; the limit is {MAX_DESCRIPTION_CHARS}"),
        ));
    }
    if let (Some(soft), Some(max)) = (def.soft_tool_calls, def.max_tool_calls)
        && soft > max
    {
        return Err(bad(
            "softToolCalls",
            &format!("{soft} is above maxToolCalls ({max})"),
        ));
    }
    def.name = name;
    def.description = description;
    Ok(def)
}

/// The `name` a file declares, if its frontmatter can be read that far. Used to block the name a
/// malformed Claude Code file answers to (its stem need not be its name).
pub fn peek_name(text: &str) -> Option<String> {
    let (yaml, _) = split_frontmatter(text).ok()?;
    let map = parse_mapping(yaml).ok()?;
    map.into_iter()
        .find(|(k, _)| k == "name")
        .and_then(|(_, v)| v.as_str().map(|s| s.trim().to_string()))
        .filter(|s| !s.is_empty())
}

/// Split `---\n<yaml>\n---\n<body>`. A UTF-8 byte-order mark and CRLF line ends are accepted.
pub(crate) fn split_frontmatter(text: &str) -> Result<(&str, &str), RoleError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(RoleError::MissingFrontmatter)?;
    if first.trim_end() != "---" {
        return Err(RoleError::MissingFrontmatter);
    }
    let start = first.len();
    let mut offset = start;
    for line in lines {
        if line.trim_end() == "---" {
            return Ok((&text[start..offset], &text[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err(RoleError::UnterminatedFrontmatter)
}

/// The frontmatter as ordered `(key, value)` pairs. An empty frontmatter is an empty mapping.
pub(crate) fn parse_mapping(yaml: &str) -> Result<Vec<(String, Value)>, RoleError> {
    let value: Value = serde_yaml_ng::from_str(yaml).map_err(|e| RoleError::Yaml(e.to_string()))?;
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Mapping(map) => map
            .into_iter()
            .map(|(k, v)| match k {
                Value::String(k) => Ok((k, v)),
                other => Err(RoleError::BadValue {
                    key: format!("{other:?}"),
                    reason: "keys must be strings".to_string(),
                }),
            })
            .collect(),
        _ => Err(RoleError::NotAMapping),
    }
}

fn check_known(key: &str, dialect: Dialect) -> Result<(), RoleError> {
    let keys = match dialect {
        Dialect::Cadre => CADRE_KEYS,
        Dialect::ClaudeCode => CLAUDE_KEYS,
    };
    if keys.contains(&key) {
        Ok(())
    } else {
        Err(unknown(key, dialect))
    }
}

fn unknown(key: &str, dialect: Dialect) -> RoleError {
    let (name, keys) = match dialect {
        Dialect::Cadre => ("cadre", CADRE_KEYS),
        Dialect::ClaudeCode => ("Claude Code", CLAUDE_KEYS),
    };
    RoleError::UnknownKey {
        key: key.to_string(),
        dialect: name,
        accepted: keys.join(", "),
    }
}

/// A role name: `[a-z0-9-]+` or a capitalised built-in name, at most 64 characters.
pub fn is_valid_name(name: &str) -> bool {
    let lowercase = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    name.chars().count() <= MAX_NAME_CHARS
        && (lowercase || CAPITALISED_BUILTIN_NAMES.contains(&name))
}

fn check_name(name: &str) -> Result<(), RoleError> {
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(bad(
            "name",
            &format!("longer than {MAX_NAME_CHARS} characters"),
        ));
    }
    if !is_valid_name(name) {
        return Err(bad(
            "name",
            &format!(
                "`{name}` may use only a-z, 0-9 and `-` (or be one of {})",
                CAPITALISED_BUILTIN_NAMES.join(", ")
            ),
        ));
    }
    Ok(())
}

fn bad(key: &str, reason: &str) -> RoleError {
    RoleError::BadValue {
        key: key.to_string(),
        reason: reason.to_string(),
    }
}

fn unsupported(key: &str, reason: &str) -> RoleError {
    RoleError::Unsupported {
        key: key.to_string(),
        reason: reason.to_string(),
    }
}

fn one_of(key: &str, got: &str, expected: &str) -> RoleError {
    bad(key, &format!("`{got}` is not one of: {expected}"))
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

fn wrong_type(key: &str, expected: &str, value: &Value) -> RoleError {
    bad(
        key,
        &format!("expected {expected}, got {}", type_name(value)),
    )
}

/// A non-empty string, trimmed.
fn string(key: &str, value: &Value) -> Result<String, RoleError> {
    let s = value
        .as_str()
        .ok_or_else(|| wrong_type(key, "a string", value))?
        .trim();
    if s.is_empty() {
        return Err(bad(key, "empty string"));
    }
    Ok(s.to_string())
}

fn boolean(key: &str, value: &Value) -> Result<bool, RoleError> {
    value
        .as_bool()
        .ok_or_else(|| wrong_type(key, "true or false", value))
}

/// A whole number in `min..=u32::MAX`.
fn count(key: &str, value: &Value, min: u32) -> Result<u32, RoleError> {
    let what = if min == 0 {
        "a whole number ≥ 0"
    } else {
        "a positive whole number"
    };
    let Value::Number(n) = value else {
        return Err(wrong_type(key, what, value));
    };
    let Some(v) = n.as_u64() else {
        return Err(bad(key, &format!("{n} is not {what}")));
    };
    let v = u32::try_from(v).map_err(|_| bad(key, &format!("{v} is above {}", u32::MAX)))?;
    if v < min {
        return Err(bad(key, &format!("{v} is not {what}")));
    }
    Ok(v)
}

fn positive_u64(key: &str, value: &Value) -> Result<u64, RoleError> {
    let what = "a positive whole number";
    let Value::Number(n) = value else {
        return Err(wrong_type(key, what, value));
    };
    match n.as_u64() {
        Some(v) if v > 0 => Ok(v),
        _ => Err(bad(key, &format!("{n} is not {what}"))),
    }
}

/// A model reference; `inherit` means none.
fn model(key: &str, value: &Value) -> Result<Option<String>, RoleError> {
    let s = string(key, value)?;
    if s.chars().count() > MAX_MODEL_CHARS {
        return Err(bad(
            key,
            &format!("longer than {MAX_MODEL_CHARS} characters"),
        ));
    }
    if s.chars().any(char::is_whitespace) {
        return Err(bad(key, &format!("`{s}` contains whitespace")));
    }
    Ok((s != "inherit").then_some(s))
}

fn thinking(key: &str, value: &Value) -> Result<ThinkingLevel, RoleError> {
    let s = string(key, value)?;
    ThinkingLevel::parse(&s).ok_or_else(|| {
        let names: Vec<&str> = ThinkingLevel::ALL.iter().map(|l| l.as_str()).collect();
        one_of(key, &s, &names.join(", "))
    })
}

/// A YAML list of strings or one comma-separated string. Entries are trimmed; empty entries of a
/// comma string (`a,,b`, a trailing comma) are skipped, empty list items are not.
fn string_list(key: &str, value: &Value) -> Result<Vec<String>, RoleError> {
    match value {
        Value::String(s) => Ok(s
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()),
        Value::Sequence(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
                Value::String(_) => Err(bad(key, "empty entry in the list")),
                other => Err(bad(
                    key,
                    &format!("list entries must be strings, got {}", type_name(other)),
                )),
            })
            .collect(),
        other => Err(wrong_type(key, "a list or a comma-separated string", other)),
    }
}

fn tool_list(
    key: &str,
    value: &Value,
    dialect: Dialect,
    notes: &mut Vec<String>,
) -> Result<ToolList, RoleError> {
    let entries = string_list(key, value)?;
    if entries.iter().any(|e| e == "*") {
        if entries.len() > 1 {
            return Err(bad(key, "`*` must stand alone"));
        }
        return Ok(ToolList::All);
    }
    if entries.len() > MAX_TOOLS {
        return Err(bad(
            key,
            &format!("{} tools; the limit is {MAX_TOOLS}", entries.len()),
        ));
    }
    let mut names: Vec<String> = Vec::with_capacity(entries.len());
    for entry in entries {
        if entry.chars().count() > MAX_TOOL_NAME_CHARS {
            return Err(bad(
                key,
                &format!("a tool name is longer than {MAX_TOOL_NAME_CHARS} characters"),
            ));
        }
        if entry.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad(
                key,
                &format!("tool name `{entry}` contains whitespace"),
            ));
        }
        let name = match dialect {
            Dialect::Cadre => entry,
            Dialect::ClaudeCode => {
                if CLAUDE_ONLY_TOOLS.contains(&entry.as_str()) {
                    notes.push(format!(
                        "`{key}`: Claude Code tool `{entry}` has no cadre counterpart and was dropped"
                    ));
                    continue;
                }
                CLAUDE_TOOL_MAP
                    .iter()
                    .find(|(claude, _)| *claude == entry)
                    .map_or(entry, |(_, cadre)| (*cadre).to_string())
            }
        };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Ok(ToolList::Named(names))
}

/// Skill names become directory names, so they are held to a safe character set.
pub fn is_valid_skill_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name.chars().count() <= MAX_SKILL_NAME_CHARS
        && !name.contains("..")
}

fn skills(key: &str, value: &Value) -> Result<Vec<String>, RoleError> {
    let mut names = string_list(key, value)?;
    if names.len() > MAX_SKILLS {
        return Err(bad(
            key,
            &format!("{} skills; the limit is {MAX_SKILLS}", names.len()),
        ));
    }
    if let Some(badname) = names.iter().find(|n| !is_valid_skill_name(n)) {
        return Err(bad(
            key,
            &format!(
                "`{badname}` is not a skill name (letters, digits, `-`, `_`, `.`; at most {MAX_SKILL_NAME_CHARS})"
            ),
        ));
    }
    let mut seen = Vec::with_capacity(names.len());
    names.retain(|n| {
        let fresh = !seen.contains(n);
        if fresh {
            seen.push(n.clone());
        }
        fresh
    });
    Ok(names)
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
