//! The entries of a role's `tools`, `disallowedTools` and `toolBudgetBlock` lists, in the
//! spellings portable files use: Claude Code names (`Read`, `Glob`), scoped entries
//! (`Bash(git diff:*)`, `Read(./src/**)`, `Agent(worker)`), MCP names and tools cadre lacks.
//!
//! The rule that keeps this safe: a dropped **allowlist** entry only narrows the role, so what
//! cadre cannot honour is dropped with a note; a **denylist** entry is never dropped in a way
//! that widens — a scoped deny cadre cannot express denies the whole tool. A name that is a
//! near-miss of a real tool (`Raed`, `Gerp`) is a typo, and a typo fails closed.

use cadre_tools::shell_policy::{CommandAllowlist, MAX_PATTERN_CHARS};
use serde_yaml_ng::Value;

use super::keys::{edit_distance, is_near};
use super::parse::{
    Dialect, MAX_TOOL_NAME_CHARS, MAX_TOOLS, RoleError, ToolList, bad, type_name, wrong_type,
};

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
    ("Agent", "Agent"),
    ("SendMessage", "SendMessage"),
    ("TaskOutput", "TaskOutput"),
    ("TaskStop", "TaskStop"),
];

/// cadre's own tool names, the targets a typo is measured against.
const CADRE_TOOLS: &[&str] = &[
    "read",
    "write",
    "edit",
    "bash",
    "grep",
    "find",
    "ls",
    "Agent",
    "SendMessage",
    "TaskOutput",
    "TaskStop",
];

/// Claude Code tools with no cadre counterpart (current and retired names): dropped from lists.
const CLAUDE_ONLY_TOOLS: &[&str] = &[
    "TodoWrite",
    "TodoRead",
    "NotebookEdit",
    "NotebookRead",
    "WebFetch",
    "WebSearch",
    "BashOutput",
    "KillShell",
    "KillBash",
    "ExitPlanMode",
    "EnterPlanMode",
    "SlashCommand",
    "Skill",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
    "AskUserQuestion",
    "LSP",
    "ToolSearch",
    "EnterWorktree",
    "ExitWorktree",
    "TeamCreate",
    "TeamDelete",
    "TaskCreate",
    "TaskGet",
    "TaskUpdate",
    "TaskList",
    "CronCreate",
    "CronDelete",
    "CronList",
    "Monitor",
    "PowerShell",
    "Artifact",
    "RemoteTrigger",
    "Computer",
];

/// Which list an entry is in; the safe way to drop differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind {
    Allow,
    Deny,
    BudgetBlock,
}

/// A parsed tool list, with the command patterns of its `Bash(…)` entries.
pub(crate) struct ParsedTools {
    pub list: ToolList,
    pub bash_allow: Vec<String>,
}

/// What one entry means once read.
enum Entry {
    /// A cadre tool, with a note when the entry meant less than the whole tool.
    Tool(String, Option<String>),
    /// `Bash(<pattern>)` in an allowlist.
    BashPattern(String),
    Drop(String),
    /// A Claude Code tool cadre does not have, as written: dropped, noted with the others.
    HostOnly(String),
}

/// Read one tool list. Notes go to `notes`; a problem is an error.
pub(crate) fn tool_list(
    key: &str,
    value: &Value,
    dialect: Dialect,
    kind: ListKind,
    notes: &mut Vec<String>,
) -> Result<ParsedTools, RoleError> {
    let entries = entries(key, value)?;
    if entries.iter().any(|e| e == "*") {
        if entries.len() > 1 {
            return Err(bad(key, "`*` must stand alone"));
        }
        return Ok(ParsedTools {
            list: ToolList::All,
            bash_allow: Vec::new(),
        });
    }
    if entries.len() > MAX_TOOLS {
        return Err(bad(
            key,
            &format!("{} tools; the limit is {MAX_TOOLS}", entries.len()),
        ));
    }
    let mut names: Vec<String> = Vec::with_capacity(entries.len());
    let mut patterns: Vec<String> = Vec::new();
    let mut plain_bash = false;
    let mut problems = Vec::new();
    let mut host_only: Vec<String> = Vec::new();
    for entry in &entries {
        if entry.chars().count() > MAX_TOOL_NAME_CHARS + 2 + MAX_PATTERN_CHARS {
            problems.push(format!(
                "the entry `{}…` is too long",
                shown(&entry.chars().take(40).collect::<String>())
            ));
            continue;
        }
        match read_entry(key, entry, dialect, kind) {
            Ok(Entry::Tool(name, note)) => {
                notes.extend(note);
                if name == "bash" {
                    plain_bash = true;
                }
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            Ok(Entry::BashPattern(p)) => {
                if !patterns.contains(&p) {
                    patterns.push(p);
                }
                if !names.iter().any(|n| n == "bash") {
                    names.push("bash".to_string());
                }
            }
            Ok(Entry::Drop(note)) => notes.push(note),
            Ok(Entry::HostOnly(name)) => host_only.push(name),
            Err(problem) => problems.push(problem),
        }
    }
    if !problems.is_empty() {
        return Err(bad(key, &problems.join("; ")));
    }
    if !host_only.is_empty() {
        notes.push(format!(
            "`{key}`: Claude Code tools with no cadre counterpart were dropped: {}",
            host_only.join(", ")
        ));
    }
    // A plain `Bash` allows every command, so its patterns restrict nothing.
    if plain_bash {
        patterns.clear();
    }
    // A pattern the bash tool could not enforce makes the file malformed now, not the launch.
    if !patterns.is_empty() {
        CommandAllowlist::parse(&patterns).map_err(|why| bad(key, &why))?;
    }
    Ok(ParsedTools {
        list: ToolList::Named(names),
        bash_allow: patterns,
    })
}

/// Text of a file, fit to quote in a one-line message.
fn shown(s: &str) -> String {
    s.chars()
        .filter(|c| !super::keys::is_unshowable(*c))
        .take(200)
        .collect()
}

/// A YAML list of strings or one comma-separated string. In a comma string, commas inside
/// parentheses belong to the entry (`Bash(npm run a, b)` is one entry). Entries are trimmed;
/// empty entries of a comma string are skipped, empty list items are not.
fn entries(key: &str, value: &Value) -> Result<Vec<String>, RoleError> {
    match value {
        Value::String(s) => Ok(split_outside_parens(s)
            .into_iter()
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

fn split_outside_parens(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// The cadre tool a plain name means in `dialect`, if it means one.
fn cadre_name(name: &str, dialect: Dialect) -> Option<String> {
    if let Some((_, cadre)) = CLAUDE_TOOL_MAP.iter().find(|(c, _)| *c == name) {
        return Some((*cadre).to_string());
    }
    if CADRE_TOOLS.contains(&name) {
        return Some(name.to_string());
    }
    // Pi files write cadre's names capitalised (`Read`, `Bash`) as often as not.
    if dialect == Dialect::Pi {
        return CADRE_TOOLS
            .iter()
            .find(|t| t.eq_ignore_ascii_case(name))
            .map(|t| (*t).to_string());
    }
    None
}

/// A tool name folded for comparison: lower case, without `_` and `-`.
fn fold(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The real tool a misspelt `name` is probably meant to be, spelt as the dialect spells it.
fn typo_of(name: &str, dialect: Dialect) -> Option<&'static str> {
    let folded = fold(name);
    let claude = CLAUDE_TOOL_MAP.iter().map(|(c, _)| *c);
    let candidates: Vec<&'static str> = match dialect {
        Dialect::ClaudeCode => claude.chain(CADRE_TOOLS.iter().copied()).collect(),
        Dialect::Cadre | Dialect::Pi => CADRE_TOOLS.iter().copied().chain(claude).collect(),
    };
    candidates
        .into_iter()
        .chain(CLAUDE_ONLY_TOOLS.iter().copied())
        .filter(|t| is_near(&folded, &fold(t)))
        .min_by_key(|t| edit_distance(&folded, &fold(t)))
}

fn read_entry(key: &str, entry: &str, dialect: Dialect, kind: ListKind) -> Result<Entry, String> {
    if let Some((tool, scope)) = scoped(entry) {
        return read_scoped(key, entry, tool, scope, dialect, kind);
    }
    if entry.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("tool name `{}` contains whitespace", shown(entry)));
    }
    if entry.chars().count() > MAX_TOOL_NAME_CHARS {
        return Err(format!(
            "a tool name is longer than {MAX_TOOL_NAME_CHARS} characters"
        ));
    }
    if dialect == Dialect::Cadre {
        return Ok(Entry::Tool(entry.to_string(), None));
    }
    if let Some(name) = cadre_name(entry, dialect) {
        return Ok(Entry::Tool(name, None));
    }
    if entry.starts_with("mcp__") {
        return Ok(Entry::Tool(entry.to_string(), None));
    }
    // `web_search`, `webfetch`: a host-only tool in another spelling, not a typo.
    if let Some(host_only) = CLAUDE_ONLY_TOOLS.iter().find(|t| fold(t) == fold(entry)) {
        return Ok(Entry::HostOnly(if *host_only == entry {
            entry.to_string()
        } else {
            format!("{} (`{host_only}`)", shown(entry))
        }));
    }
    if let Some(real) = typo_of(entry, dialect) {
        return Err(format!(
            "unknown tool `{}` (did you mean `{real}`?)",
            shown(entry)
        ));
    }
    match kind {
        ListKind::Allow => Ok(Entry::Drop(format!(
            "`{key}`: unknown tool `{}` was dropped (cadre has no such tool)",
            shown(entry)
        ))),
        // Ignoring a deny entry cadre cannot read (`Write;Edit`, `run_command`) could leave the
        // tool it meant allowed.
        ListKind::Deny | ListKind::BudgetBlock => Err(format!(
            "unknown tool `{}`: cadre cannot tell what it would deny",
            shown(entry)
        )),
    }
}

/// `Tool(scope)` → (`Tool`, `scope`).
fn scoped(entry: &str) -> Option<(&str, &str)> {
    let open = entry.find('(')?;
    let inner = entry[open + 1..].strip_suffix(')')?;
    let tool = entry[..open].trim();
    (!tool.is_empty() && tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some((tool, inner.trim()))
}

fn read_scoped(
    key: &str,
    entry: &str,
    tool: &str,
    scope: &str,
    dialect: Dialect,
    kind: ListKind,
) -> Result<Entry, String> {
    let cadre = cadre_name(tool, dialect).or_else(|| {
        // cadre's own files may write `bash(git diff:*)`.
        (tool.eq_ignore_ascii_case("bash")).then(|| "bash".to_string())
    });
    let Some(cadre) = cadre else {
        if CLAUDE_ONLY_TOOLS.contains(&tool) {
            return Ok(Entry::HostOnly(shown(entry)));
        }
        return Err(format!(
            "unknown tool `{}` in `{}`",
            shown(tool),
            shown(entry)
        ));
    };
    if cadre == "bash" && matches!(scope, "" | "*" | ":*") {
        return Ok(Entry::Tool(cadre, None));
    }
    match (kind, cadre.as_str()) {
        (ListKind::Allow, "bash") => {
            if scope.chars().count() > MAX_PATTERN_CHARS {
                return Err(format!(
                    "the command pattern in `{}…` is longer than {MAX_PATTERN_CHARS} characters",
                    shown(&entry.chars().take(40).collect::<String>())
                ));
            }
            if scope.chars().any(char::is_control) {
                return Err("a command pattern contains a control character".to_string());
            }
            Ok(Entry::BashPattern(scope.to_string()))
        }
        (ListKind::Allow, _) => Ok(Entry::Drop(format!(
            "`{key}`: cadre cannot limit `{cadre}` to `{}`, so `{}` was dropped (list `{tool}` \
             to allow the whole tool)",
            shown(scope),
            shown(entry)
        ))),
        // Denying part of a tool cadre cannot express: deny all of it, which is narrower.
        (ListKind::Deny, _) => {
            let note = format!(
                "`{key}`: cadre cannot deny only `{}` of `{cadre}`, so all of `{cadre}` is denied",
                shown(scope)
            );
            Ok(Entry::Tool(cadre, Some(note)))
        }
        (ListKind::BudgetBlock, _) => Ok(Entry::Tool(cadre, None)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn allow(dialect: Dialect, text: &str) -> Result<(ToolList, Vec<String>, Vec<String>), String> {
        let mut notes = Vec::new();
        tool_list(
            "tools",
            &Value::String(text.to_string()),
            dialect,
            ListKind::Allow,
            &mut notes,
        )
        .map(|p| (p.list, p.bash_allow, notes))
        .map_err(|e| e.to_string())
    }

    fn named(names: &[&str]) -> ToolList {
        ToolList::Named(names.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn claude_entries_table() {
        use Dialect::ClaudeCode as C;
        let cases: &[(&str, ToolList, &[&str], usize)] = &[
            ("Read, Grep, Glob", named(&["read", "grep", "find"]), &[], 0),
            (
                "Read, Bash(git diff:*), Bash(git log:*)",
                named(&["read", "bash"]),
                &["git diff:*", "git log:*"],
                0,
            ),
            ("Bash(git diff:*), Bash", named(&["bash"]), &[], 0),
            ("Bash(*)", named(&["bash"]), &[], 0),
            ("Bash(npm run a, b)", named(&["bash"]), &["npm run a, b"], 0),
            ("Read(./src/**), Grep", named(&["grep"]), &[], 1),
            ("Agent(worker), Read", named(&["read"]), &[], 1),
            ("WebFetch, TodoWrite, Read", named(&["read"]), &[], 1),
            (
                "web_search, fetch_content, contact_supervisor",
                named(&[]),
                &[],
                3,
            ),
            ("mcp:github/create_issue, WriteFile", named(&[]), &[], 2),
            ("WebFetch(domain:x.com)", named(&[]), &[], 1),
            (
                "mcp__github__create_issue",
                named(&["mcp__github__create_issue"]),
                &[],
                0,
            ),
            ("FancyNewTool", named(&[]), &[], 1),
            (
                "Task, SendMessage",
                named(&["Agent", "SendMessage"]),
                &[],
                0,
            ),
        ];
        for (text, list, patterns, notes) in cases {
            let (l, p, n) = allow(C, text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(&l, list, "{text}");
            assert_eq!(p, *patterns, "{text}");
            assert_eq!(n.len(), *notes, "{text}: {n:?}");
        }
    }

    #[test]
    fn typos_of_real_tools_fail_closed() {
        for text in ["Raed", "Gerp", "Read, Wirte", "Bassh", "webfech", "Glop"] {
            let e = allow(Dialect::ClaudeCode, text).unwrap_err();
            assert!(e.contains("did you mean"), "{text}: {e}");
        }
        assert!(
            allow(Dialect::ClaudeCode, "Nope(x)")
                .unwrap_err()
                .contains("unknown tool")
        );
        assert!(
            allow(Dialect::ClaudeCode, "Read Grep")
                .unwrap_err()
                .contains("whitespace")
        );
    }

    #[test]
    fn pi_files_may_capitalise_cadre_names() {
        let (l, _, _) = allow(Dialect::Pi, "Read, bash, Find, LS").unwrap();
        assert_eq!(l, named(&["read", "bash", "find", "ls"]));
        // cadre's own files stay exact.
        let (l, _, _) = allow(Dialect::Cadre, "read, bash(git status:*)").unwrap();
        assert_eq!(l, named(&["read", "bash"]));
    }

    #[test]
    fn a_scoped_deny_denies_the_whole_tool() {
        let mut notes = Vec::new();
        let p = tool_list(
            "disallowedTools",
            &Value::String("Bash(rm:*), Write, Edit(./x), WebFetch".into()),
            Dialect::ClaudeCode,
            ListKind::Deny,
            &mut notes,
        )
        .unwrap();
        assert_eq!(p.list, named(&["bash", "write", "edit"]));
        assert!(p.bash_allow.is_empty());
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].contains("all of `bash` is denied"), "{notes:?}");
    }

    #[test]
    fn patterns_the_shell_checker_cannot_enforce_fail_closed() {
        for text in [
            "Bash(* --version)",
            "Bash(git diff; rm:*)",
            "Bash(echo $HOME)",
        ] {
            assert!(allow(Dialect::ClaudeCode, text).is_err(), "{text}");
        }
    }

    #[test]
    fn patterns_are_bounded() {
        let long = format!("Bash({})", "a".repeat(MAX_PATTERN_CHARS + 1));
        assert!(
            allow(Dialect::ClaudeCode, &long)
                .unwrap_err()
                .contains("longer")
        );
    }
}
