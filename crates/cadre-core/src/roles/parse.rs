//! One role file → a validated [`RoleDef`] (SPEC T1, T2, T3, T9). Pure: no file system.
//!
//! A role file is Markdown with YAML frontmatter between two `---` lines; the body is the role
//! prompt. Parsing **fails closed**: a value of the wrong type or out of range, a name that
//! differs from the file stem, an unterminated frontmatter, invalid YAML (duplicate keys
//! included) or a limit exceeded makes the whole file malformed, and every such problem of the
//! file is reported at once, with its line. Nothing is ever taken from a malformed file, so a
//! misspelt restriction can never fall back to the wider inherited tool set. A key present with
//! no value (`tools:`) is malformed too, not "absent": for `tools` absent means "all tools".
//!
//! Three key sets ([`Dialect`]):
//!
//! - **cadre** (`.cadre/agents`, `CADRE_HOME/agents`): the T1 keys, strictly — an unknown key is
//!   malformed. `model: inherit` means no model.
//! - **Pi** (`.pi/agents`, `~/.pi/agent/agents`): the cadre keys plus the keys of the other Pi
//!   subagent packages cadre can honour (see [`super::keys::PI_PACKAGE_KEYS`]). As in those
//!   packages, `name` defaults to the file stem, and tool names may be capitalised. Unknown
//!   keys are read as in Claude Code files.
//! - **Claude Code** (`.claude/agents`): the keys Claude Code documents. The name need not equal
//!   the stem. Tool entries are mapped by `tool_entries.rs` (`Read`→`read`, `Glob`→`find`,
//!   `Bash(git diff:*)` → bash limited to that command pattern, …).
//!
//! In the Claude Code and Pi dialects an unknown key is a warning and is ignored — unless it looks
//! like a capability key (`allowed-tools`, `Tools`, `permission_mode`, `readOnly`, …: see
//! `keys.rs`), because ignoring a misspelt restriction would widen the role. There the
//! description and body are limited only by the file cap, as in Claude Code; a file without any
//! frontmatter, or one that says `disabled: true`, is not an agent file and is skipped with a
//! note. Decisions on Claude Code's capability keys:
//!   - `hooks` make the file malformed: a hook can refuse tool calls, so dropping it could widen
//!     the role, and cadre does not run hooks.
//!   - `memory` and `mcpServers` are ignored with a note: in Claude Code each *adds* tools
//!     (memory files, servers), so leaving them out only narrows. Servers configured for cadre
//!     reach the role through its `tools` as usual.
//!   - `permissionMode`: `default`, `acceptEdits`, `dontAsk` and `bypassPermissions` change
//!     nothing (cadre children never prompt; they act inside their enforced tool set, and a call
//!     outside it is refused — the boundaries are never switched off, so `bypassPermissions`
//!     gets a note saying so). `plan` makes the role read-only, which cadre enforces. Any other
//!     value is malformed.
//!   - `initialPrompt` applies only to an agent run as the main session; it is noted and unused.

use cadre_protocol::ThinkingLevel;
use serde_yaml_ng::Value;

use super::builtin::CAPITALISED_BUILTIN_NAMES;
use super::keys;
use super::tool_entries::{self, ListKind};

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
    Pi,
    ClaudeCode,
}

impl Dialect {
    /// The dialect's name in messages.
    pub fn display_name(self) -> &'static str {
        match self {
            Dialect::Cadre => "cadre",
            Dialect::Pi => "Pi",
            Dialect::ClaudeCode => "Claude Code",
        }
    }
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
#[derive(Debug, Clone, PartialEq, Default)]
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
    /// The role's cost cap in USD for a task and its subtree (`maxCostUsd`).
    pub max_cost_usd: Option<f64>,
    /// The role's token cap for a task and its subtree (`maxTokens`).
    pub max_tokens: Option<u64>,
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
    /// The file could not be read (I/O, not UTF-8, over the size limit).
    #[error("{0}")]
    Unreadable(String),
    #[error("no YAML frontmatter: the file must start with a `---` line")]
    MissingFrontmatter,
    #[error("the frontmatter has no closing `---` line")]
    UnterminatedFrontmatter,
    #[error("invalid YAML in the frontmatter: {0}")]
    Yaml(String),
    #[error("the frontmatter must be a mapping of keys to values")]
    NotAMapping,
    /// `hint`: empty, or text that goes right after the key (` (did you mean …)`).
    #[error("unknown key `{key}` in a {dialect} role file{hint}")]
    UnknownKey {
        key: String,
        dialect: &'static str,
        hint: String,
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

/// A note about a file that loaded (or that was skipped), with its line when one is at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub line: Option<usize>,
    pub message: String,
}

/// One reason a file is malformed, with its line when one is at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: Option<usize>,
    pub error: RoleError,
}

/// What one role file yields.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// A role; `notes` are also in `def.notes`, without their lines.
    Role {
        def: Box<RoleDef>,
        notes: Vec<Finding>,
    },
    /// Not an agent file (no frontmatter in a Claude Code or Pi directory, or switched off).
    Skipped { reason: String },
    /// Unusable: every problem found. `name` is the name the file answers to (what blocks).
    Malformed {
        name: String,
        problems: Vec<Problem>,
        notes: Vec<Finding>,
    },
}

/// Parse and validate one role file, reporting every problem. `stem` is the file name without
/// `.md`.
pub fn parse_role_file(text: &str, stem: &str, dialect: Dialect) -> Parsed {
    let malformed = |error: RoleError, line: Option<usize>| Parsed::Malformed {
        name: answers_to(text, stem, dialect),
        problems: vec![Problem { line, error }],
        notes: Vec::new(),
    };
    if text.len() > MAX_FILE_BYTES {
        return malformed(
            RoleError::TooLarge {
                what: "file",
                size: text.len(),
                limit: MAX_FILE_BYTES,
            },
            None,
        );
    }
    let (yaml, body) = match split_frontmatter(text) {
        Ok(parts) => parts,
        Err(RoleError::MissingFrontmatter) if dialect != Dialect::Cadre => {
            return Parsed::Skipped {
                reason: "no YAML frontmatter, so not an agent file; skipped".to_string(),
            };
        }
        Err(e) => return malformed(e, Some(1)),
    };
    let yaml_text = keys::quote_bare_stars(yaml);
    let map = match parse_mapping_located(&yaml_text) {
        Ok(map) => map,
        Err(first) => {
            // Claude Code retries a frontmatter YAML refuses with its plain values quoted
            // (`description: Use when: x`, `description: **Bold**`); portable files rely on it.
            let retried = (dialect != Dialect::Cadre)
                .then(|| keys::quote_plain_values(&yaml_text))
                .flatten()
                .and_then(|quoted| parse_mapping_located(&quoted).ok());
            match retried {
                Some(map) => map,
                // The parser counts from the frontmatter's first line, which is the file's second.
                None => return malformed(first.0, first.1.map(|l| l + 1)),
            }
        }
    };
    let mut reader = Reader::new(yaml, dialect);
    if reader.switched_off(&map) {
        return Parsed::Skipped {
            reason: "switched off in its frontmatter (`disabled: true`); skipped".to_string(),
        };
    }
    reader.def.prompt = body.trim().to_string();
    for (key, value) in &map {
        reader.key(key, value);
    }
    reader.finish(stem, text)
}

/// Parse and validate one role file; the first problem when it is malformed. A skipped file is
/// [`RoleError::MissingFrontmatter`].
pub fn parse_role(text: &str, stem: &str, dialect: Dialect) -> Result<RoleDef, RoleError> {
    match parse_role_file(text, stem, dialect) {
        Parsed::Role { def, .. } => Ok(*def),
        Parsed::Skipped { .. } => Err(RoleError::MissingFrontmatter),
        Parsed::Malformed { problems, .. } => Err(problems
            .into_iter()
            .next()
            .map_or(RoleError::MissingFrontmatter, |p| p.error)),
    }
}

/// The name a malformed file blocks: a Claude Code file's declared name (its stem need not be
/// its name), else the stem.
fn answers_to(text: &str, stem: &str, dialect: Dialect) -> String {
    match dialect {
        Dialect::ClaudeCode => peek_name(text).unwrap_or_else(|| stem.to_string()),
        Dialect::Cadre | Dialect::Pi => stem.to_string(),
    }
}

/// Reads the keys of one frontmatter, collecting problems instead of stopping at the first.
struct Reader {
    dialect: Dialect,
    lines: keys::KeyLines,
    def: RoleDef,
    name: Option<String>,
    description: Option<String>,
    thinking_key: Option<String>,
    problems: Vec<Problem>,
    notes: Vec<Finding>,
}

impl Reader {
    fn new(yaml: &str, dialect: Dialect) -> Reader {
        Reader {
            dialect,
            // The frontmatter starts on the file's second line.
            lines: keys::KeyLines::new(yaml, 2),
            def: RoleDef {
                dialect: Some(dialect),
                ..RoleDef::default()
            },
            name: None,
            description: None,
            thinking_key: None,
            problems: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// `disabled: true` (or a Pi package's `enabled: false`) in a portable file.
    fn switched_off(&self, map: &[(String, Value)]) -> bool {
        if self.dialect == Dialect::Cadre {
            return false;
        }
        map.iter().any(|(k, v)| match (k.as_str(), v) {
            ("disabled", Value::Bool(b)) => *b,
            ("enabled", Value::Bool(b)) => self.dialect == Dialect::Pi && !*b,
            _ => false,
        })
    }

    fn problem(&mut self, key: &str, error: RoleError) {
        let line = self.lines.of(key);
        self.problems.push(Problem { line, error });
    }

    fn note(&mut self, key: &str, message: String) {
        let line = self.lines.of(key);
        self.notes.push(Finding { line, message });
    }

    fn key(&mut self, key: &str, value: &Value) {
        if !keys::is_known_key(key, self.dialect) {
            self.unknown_key(key, value);
            return;
        }
        if value.is_null() {
            self.problem(key, bad(key, "the key is present but has no value"));
            return;
        }
        if let Err(e) = self.known_key(key, value) {
            self.problem(key, e);
        }
    }

    fn unknown_key(&mut self, key: &str, value: &Value) {
        let dialect_name = self.dialect.display_name();
        let near = keys::nearest_known(key, self.dialect);
        let hint = match near {
            Some(k) => format!(" (did you mean `{k}`?)"),
            None => String::new(),
        };
        if self.dialect == Dialect::Cadre {
            self.problem(
                key,
                RoleError::UnknownKey {
                    key: keys::shown_key(key),
                    dialect: dialect_name,
                    hint,
                },
            );
        } else if key == "<<" {
            self.problem(
                key,
                unsupported(
                    key,
                    "YAML merge keys are not applied in role files, so the keys they would add \
                     are unknown; write the keys out",
                ),
            );
        } else if keys::looks_like_capability(key)
            || near.is_some_and(is_capability_key)
            || hides_capability_key(value)
        {
            let hint = format!(
                "{hint}; it looks like a key that limits what the role may do, so the file is \
                 not loaded without it"
            );
            self.problem(
                key,
                RoleError::UnknownKey {
                    key: keys::shown_key(key),
                    dialect: dialect_name,
                    hint,
                },
            );
        } else {
            self.note(
                key,
                format!("unknown key `{}` ignored{hint}", keys::shown_key(key)),
            );
        }
    }

    /// The role may not launch children.
    fn deny_agent(&mut self) {
        let agent = "Agent".to_string();
        if !self.def.disallowed_tools.contains(&agent) {
            self.def.disallowed_tools.push(agent);
        }
    }

    fn tools(&mut self, key: &str, value: &Value, kind: ListKind) -> Result<ToolList, RoleError> {
        let mut notes = Vec::new();
        let parsed = tool_entries::tool_list(key, value, self.dialect, kind, &mut notes);
        for n in notes {
            self.note(key, n);
        }
        let parsed = parsed?;
        if kind == ListKind::Allow {
            self.def.bash_allow = parsed.bash_allow;
        }
        Ok(parsed.list)
    }

    fn known_key(&mut self, key: &str, value: &Value) -> Result<(), RoleError> {
        let def = &mut self.def;
        match key {
            "name" => self.name = Some(string(key, value)?),
            "description" => self.description = Some(string(key, value)?),
            "tools" => {
                let list = self.tools(key, value, ListKind::Allow)?;
                self.def.tools = list;
            }
            "disallowedTools" | "disallowed_tools" => {
                match self.tools(key, value, ListKind::Deny)? {
                    ToolList::All => {
                        return Err(bad(
                            key,
                            "`*` would disallow every tool; list the tools instead",
                        ));
                    }
                    ToolList::Named(names) => {
                        for name in names {
                            if !self.def.disallowed_tools.contains(&name) {
                                self.def.disallowed_tools.push(name);
                            }
                        }
                    }
                }
            }
            "model" => def.model = model(key, value)?,
            "fallbackModel" => def.fallback_model = model(key, value)?,
            "fallbackModels" => {
                let models = string_list(key, value)?;
                let mut models = models.into_iter();
                let first = models.next();
                if let Some(m) = &first {
                    def.fallback_model = model(key, &Value::String(m.clone()))?;
                }
                let rest: Vec<String> = models.collect();
                if !rest.is_empty() {
                    let message = format!(
                        "`fallbackModels`: cadre tries one fallback model; {} ignored",
                        rest.join(", ")
                    );
                    self.note(key, message);
                }
            }
            "thinking" | "reasoning_effort" | "effort" => {
                if let Some(first) = &self.thinking_key {
                    return Err(bad(
                        key,
                        &format!("`{first}` already sets the thinking level"),
                    ));
                }
                self.thinking_key = Some(key.to_string());
                self.def.thinking = Some(thinking(key, value)?);
            }
            "skills" => def.skills = skills(key, value)?,
            "readonly" => def.readonly = boolean(key, value)?,
            "shellPolicy" => {
                let s = string(key, value)?;
                def.shell_policy = s
                    .parse::<ShellPolicy>()
                    .map_err(|_| one_of(key, &s, "unrestricted, inspect, verify, none"))?;
            }
            "background" | "run_in_background" => def.background = Some(boolean(key, value)?),
            "context" | "defaultContext" => {
                let s = string(key, value)?;
                def.context = match s.as_str() {
                    "fresh" => ContextMode::Fresh,
                    "fork" => ContextMode::Fork,
                    _ => return Err(one_of(key, &s, "fresh, fork")),
                };
            }
            "isolation" => {
                let s = string(key, value)?;
                def.isolation = match (s.as_str(), self.dialect) {
                    ("worktree", _) => Isolation::Worktree,
                    ("none", Dialect::Cadre | Dialect::Pi) => Isolation::None,
                    (_, Dialect::Cadre | Dialect::Pi) => {
                        return Err(one_of(key, &s, "none, worktree"));
                    }
                    (_, Dialect::ClaudeCode) => return Err(one_of(key, &s, "worktree")),
                };
            }
            "warningTurns" => def.warning_turns = Some(count(key, value, 1)?),
            "warningIntervalTurns" => def.warning_interval_turns = Some(count(key, value, 1)?),
            "maxTurns" => def.max_turns = Some(count(key, value, 1)?),
            // tintinweb's package: 0 means no limit.
            "max_turns" => match count(key, value, 0)? {
                0 => {}
                n => def.max_turns = Some(n),
            },
            // Zero grace is meaningful: stop right at `maxTurns`.
            "graceTurns" => def.grace_turns = Some(count(key, value, 0)?),
            "maxToolCalls" => def.max_tool_calls = Some(count(key, value, 1)?),
            "softToolCalls" => def.soft_tool_calls = Some(count(key, value, 1)?),
            "toolBudgetBlock" => {
                let list = self.tools(key, value, ListKind::BudgetBlock)?;
                self.def.tool_budget_block = Some(list);
            }
            "timeoutMs" => def.timeout_ms = Some(positive_u64(key, value)?),
            "maxTokens" => def.max_tokens = Some(positive_u64(key, value)?),
            "maxCostUsd" => def.max_cost_usd = Some(positive_usd(key, value)?),
            "bashTimeoutMs" => def.bash_timeout_ms = Some(positive_u64(key, value)?),
            "oneShot" => def.one_shot = boolean(key, value)?,
            "allowPlanFiles" => def.allow_plan_files = boolean(key, value)?,
            // Cosmetic: a value cadre cannot show is no reason to refuse the file.
            "color" => {
                if !value.is_string() {
                    self.note(key, "`color` is not a string; ignored".to_string());
                }
            }
            // `switched_off` skipped the file when these switch it off.
            "disabled" | "enabled" => {
                boolean(key, value)?;
            }
            "permissionMode" => {
                let s = string(key, value)?;
                match s.as_str() {
                    "default" | "acceptEdits" | "dontAsk" => {}
                    "bypassPermissions" => self.note(
                        key,
                        "`permissionMode: bypassPermissions`: cadre children never prompt, and \
                         their tool boundary stays enforced"
                            .to_string(),
                    ),
                    "plan" => def.readonly = true,
                    _ => {
                        return Err(one_of(
                            key,
                            &s,
                            "default, acceptEdits, dontAsk, bypassPermissions, plan",
                        ));
                    }
                }
            }
            "memory" => self.note(
                key,
                "`memory`: cadre gives roles no persistent memory directory; the role runs \
                 without it"
                    .to_string(),
            ),
            "mcpServers" => self.note(
                key,
                "`mcpServers`: cadre does not start per-role MCP servers; servers configured \
                 in settings reach the role through its tools"
                    .to_string(),
            ),
            "initialPrompt" => self.note(
                key,
                "`initialPrompt` applies only to an agent run as the main session; unused for \
                 a child"
                    .to_string(),
            ),
            // Leaving the project's context files out only narrows what the child is told.
            "inheritProjectContext" | "inherit_context" => {
                def.skip_context_files = !boolean(key, value)?;
            }
            // Depth 0 / no subagents: the role may not delegate. A wider setting is not
            // honoured: delegation comes only from `Agent` in `tools`.
            "maxSubagentDepth" => {
                if count(key, value, 0)? == 0 {
                    self.deny_agent();
                }
            }
            "allowSubagents" => {
                if boolean(key, value)? {
                    self.note(
                        key,
                        "`allowSubagents: true`: list `Agent` in `tools` to let the role \
                         delegate; cadre adds no tool a file does not list"
                            .to_string(),
                    );
                } else {
                    self.deny_agent();
                }
            }
            "systemPromptMode" | "prompt_mode" => {
                let s = string(key, value)?;
                match s.as_str() {
                    "append" => {}
                    "replace" => self.note(
                        key,
                        "`systemPromptMode: replace`: cadre appends the role prompt to its child \
                         prompt, which carries the tool rules"
                            .to_string(),
                    ),
                    _ => return Err(one_of(key, &s, "append, replace")),
                }
            }
            "appendSystemPrompt" => {
                boolean(key, value)?;
            }
            "inheritSkills" | "output" | "defaultReads" | "defaultProgress" | "completionGuard"
            | "aliases" | "first-layer" | "last-layer" | "display_name" => {
                self.note(
                    key,
                    format!(
                        "`{key}` is a setting of another Pi subagent package; cadre ignores it"
                    ),
                );
            }
            "hooks" => {
                return Err(unsupported(
                    key,
                    "hooks run commands and can refuse tool calls; cadre does not run them, so \
                     the role would be wider than written",
                ));
            }
            // `known_keys` lists only keys with an arm above.
            _ => {
                return Err(RoleError::UnknownKey {
                    key: key.to_string(),
                    dialect: self.dialect.display_name(),
                    hint: String::new(),
                });
            }
        }
        Ok(())
    }

    fn finish(mut self, stem: &str, text: &str) -> Parsed {
        let name = match (self.name.take(), self.dialect) {
            (Some(name), _) => Some(name),
            // Pi subagent packages name a file without `name` after its stem.
            (None, Dialect::Pi) => Some(stem.to_string()),
            (None, _) => {
                self.problems.push(Problem {
                    line: None,
                    error: RoleError::MissingKey("name"),
                });
                None
            }
        };
        if let Some(name) = &name {
            if let Err(e) = check_name(name, self.dialect) {
                self.problem("name", e);
            } else if self.dialect != Dialect::ClaudeCode && !name_matches_stem(name, stem) {
                self.problem(
                    "name",
                    RoleError::NameMismatch {
                        name: name.clone(),
                        stem: stem.to_string(),
                    },
                );
            }
        }
        let description = self.description.take();
        match &description {
            None => self.problems.push(Problem {
                line: None,
                error: RoleError::MissingKey("description"),
            }),
            Some(d) if self.dialect == Dialect::Cadre => {
                let chars = d.chars().count();
                if chars > MAX_DESCRIPTION_CHARS {
                    self.problem(
                        "description",
                        bad(
                            "description",
                            &format!("{chars} characters; the limit is {MAX_DESCRIPTION_CHARS}"),
                        ),
                    );
                }
            }
            Some(_) => {}
        }
        if self.dialect == Dialect::Cadre && self.def.prompt.len() > MAX_BODY_BYTES {
            self.problems.push(Problem {
                line: None,
                error: RoleError::TooLarge {
                    what: "prompt body",
                    size: self.def.prompt.len(),
                    limit: MAX_BODY_BYTES,
                },
            });
        }
        if let (Some(soft), Some(max)) = (self.def.soft_tool_calls, self.def.max_tool_calls)
            && soft > max
        {
            self.problem(
                "softToolCalls",
                bad(
                    "softToolCalls",
                    &format!("{soft} is above maxToolCalls ({max})"),
                ),
            );
        }
        if !self.problems.is_empty() {
            self.problems.sort_by_key(|p| p.line.unwrap_or(usize::MAX));
            // A Claude Code file answers to the name it declares (its stem need not be it).
            let answers = match (self.dialect, &name) {
                (Dialect::ClaudeCode, Some(name)) => name.clone(),
                _ => answers_to(text, stem, self.dialect),
            };
            return Parsed::Malformed {
                name: answers,
                problems: self.problems,
                notes: self.notes,
            };
        }
        let mut def = self.def;
        def.name = name.unwrap_or_default();
        def.description = description.unwrap_or_default();
        def.notes = self.notes.iter().map(|n| n.message.clone()).collect();
        Parsed::Role {
            def: Box::new(def),
            notes: self.notes,
        }
    }
}

/// Whether a name may live in a file with this stem: equal, or a capitalised built-in name in
/// any case (`explore.md` may define `Explore`, as the Pi packages that define it do).
fn name_matches_stem(name: &str, stem: &str) -> bool {
    name == stem || (CAPITALISED_BUILTIN_NAMES.contains(&name) && name.eq_ignore_ascii_case(stem))
}

/// Whether an ignored value is a mapping that holds a capability key (`base: {disallowedTools:
/// Bash}` read through an anchor): ignoring it could drop a restriction.
fn hides_capability_key(value: &Value) -> bool {
    let Value::Mapping(map) = value else {
        return false;
    };
    map.keys().any(|k| {
        k.as_str()
            .is_some_and(|k| is_capability_key(k) || keys::looks_like_capability(k))
    })
}

/// Whether a known key decides what a role may do.
fn is_capability_key(key: &str) -> bool {
    matches!(
        key,
        "tools" | "disallowedTools" | "permissionMode" | "readonly" | "shellPolicy" | "isolation"
    )
}

/// The `name` a file declares, if its frontmatter can be read that far. Used to block the name a
/// malformed Claude Code file answers to (its stem need not be its name).
pub fn peek_name(text: &str) -> Option<String> {
    let (yaml, _) = split_frontmatter(text).ok()?;
    // Read the way `parse_role_file` reads a portable file, so a file that parses only after
    // Claude Code's quoting still blocks the name it declares.
    let yaml = keys::quote_bare_stars(yaml);
    let map = parse_mapping(&yaml).ok().or_else(|| {
        keys::quote_plain_values(&yaml).and_then(|quoted| parse_mapping(&quoted).ok())
    })?;
    map.into_iter()
        .find(|(k, _)| k == "name")
        .and_then(|(_, v)| v.as_str().map(|s| s.trim().to_string()))
        .filter(|s| !s.is_empty())
}

/// Split `---\n<yaml>\n---\n<body>`. A UTF-8 byte-order mark and CRLF line ends are accepted,
/// and, as in Claude Code, a closing line of more than three dashes (a ruler) closes too.
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
        let closing = line.trim_end();
        if closing.len() >= 3 && closing.bytes().all(|b| b == b'-') {
            return Ok((&text[start..offset], &text[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err(RoleError::UnterminatedFrontmatter)
}

/// The frontmatter as ordered `(key, value)` pairs. An empty frontmatter is an empty mapping.
pub(crate) fn parse_mapping(yaml: &str) -> Result<Vec<(String, Value)>, RoleError> {
    parse_mapping_located(yaml).map_err(|(e, _)| e)
}

/// A YAML problem and the 1-based line of the frontmatter it is on, when known.
type LocatedError = (RoleError, Option<usize>);

/// [`parse_mapping`], with the 1-based line of the frontmatter a YAML error is on.
fn parse_mapping_located(yaml: &str) -> Result<Vec<(String, Value)>, LocatedError> {
    let value: Value = serde_yaml_ng::from_str(yaml).map_err(|e| {
        (
            RoleError::Yaml(e.to_string()),
            e.location().map(|l| l.line()),
        )
    })?;
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Mapping(map) => map
            .into_iter()
            .map(|(k, v)| match k {
                Value::String(k) => Ok((k, v)),
                other => Err((
                    RoleError::BadValue {
                        key: format!("{other:?}"),
                        reason: "keys must be strings".to_string(),
                    },
                    None,
                )),
            })
            .collect(),
        _ => Err((RoleError::NotAMapping, Some(1))),
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

/// A name as Claude Code files write them: besides the cadre names, ASCII letters and digits
/// with spaces, `-`, `_`, `.`, `/` and `+` between them (`dotnet-framework-4.8-expert`,
/// `Python DevOps/CI-CD Expert`). Claude Code takes the name as written; cadre matches it in
/// any case. Names are never used as file names.
pub fn is_valid_portable_name(name: &str) -> bool {
    let allowed =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.' | '/' | '+');
    is_valid_name(name)
        || (name.chars().count() <= MAX_NAME_CHARS
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name.ends_with(|c: char| c.is_ascii_alphanumeric())
            && name.chars().all(allowed)
            && !name.contains("  "))
}

fn check_name(name: &str, dialect: Dialect) -> Result<(), RoleError> {
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(bad(
            "name",
            &format!("longer than {MAX_NAME_CHARS} characters"),
        ));
    }
    if dialect == Dialect::ClaudeCode {
        if !is_valid_portable_name(name) {
            return Err(bad(
                "name",
                &format!(
                    "`{}` may use only letters, digits, spaces and `-_./+`, starting and ending \
                     with a letter or digit",
                    keys::shown_key(name)
                ),
            ));
        }
        return Ok(());
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

pub(crate) fn bad(key: &str, reason: &str) -> RoleError {
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

pub(crate) fn type_name(value: &Value) -> &'static str {
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

pub(crate) fn wrong_type(key: &str, expected: &str, value: &Value) -> RoleError {
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

fn positive_usd(key: &str, value: &Value) -> Result<f64, RoleError> {
    let what = "a number of US dollars above 0";
    let Value::Number(n) = value else {
        return Err(wrong_type(key, what, value));
    };
    match n.as_f64() {
        Some(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(bad(key, &format!("{n} is not {what}"))),
    }
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
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(
            key,
            &format!(
                "`{}` contains whitespace or a control character",
                keys::shown_key(&s)
            ),
        ));
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
