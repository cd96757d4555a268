//! Frontmatter keys: which keys each dialect knows, which unknown keys look like capability keys
//! (and so may not be ignored), and on which line each key sits. Pure text work, no YAML.

use super::parse::Dialect;

/// The T1 keys: cadre's own files (`.cadre/agents`, `CADRE_HOME/agents`).
pub(crate) const CADRE_KEYS: &[&str] = &[
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
    "maxCostUsd",
    "maxTokens",
    "bashTimeoutMs",
    "oneShot",
    "allowPlanFiles",
];

/// The keys Claude Code documents for subagent files (plus `disabled`, which some collections
/// use to switch a file off).
pub(crate) const CLAUDE_KEYS: &[&str] = &[
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
    "initialPrompt",
    "disabled",
];

/// Keys of the other Pi subagent packages (pi-subagents and its forks, pi-mono's example,
/// tintinweb's, goofansu's and gee666's) that cadre reads in `.pi` directories, besides
/// [`CADRE_KEYS`]. How each is honoured is decided in `parse.rs`.
pub(crate) const PI_PACKAGE_KEYS: &[&str] = &[
    "max_turns",
    "fallbackModels",
    "disallowed_tools",
    "run_in_background",
    "defaultContext",
    "inheritProjectContext",
    "inherit_context",
    "maxSubagentDepth",
    "allowSubagents",
    "systemPromptMode",
    "prompt_mode",
    "appendSystemPrompt",
    "inheritSkills",
    "output",
    "defaultReads",
    "defaultProgress",
    "completionGuard",
    "aliases",
    "first-layer",
    "last-layer",
    "display_name",
    "color",
    "disabled",
    "enabled",
];

/// Keys that decide what a role may do: a key that is not known but looks like one of these is
/// a misspelling that could widen the role if ignored, so it keeps the file malformed.
const CAPABILITY_KEYS: &[&str] = &[
    "tools",
    "disallowedTools",
    "allowedTools",
    "permissionMode",
    "permissions",
    "readonly",
    "shellPolicy",
    "isolation",
    "sandbox",
    "hooks",
    "mcpServers",
];

/// Fragments that mark a key as being about permissions whatever the rest says
/// (`allowed-tools`, `tool_permissions`, `read_only`, `denyCommands`).
const CAPABILITY_FRAGMENTS: &[&str] = &[
    "tool",
    "permission",
    "readonly",
    "allow",
    "deny",
    "sandbox",
    "shell",
    "isolat",
    "hook",
    "mcp",
];

/// The keys a dialect knows.
pub(crate) fn known_keys(dialect: Dialect) -> impl Iterator<Item = &'static str> {
    let (own, extra): (&[&str], &[&str]) = match dialect {
        Dialect::Cadre => (CADRE_KEYS, &[]),
        Dialect::ClaudeCode => (CLAUDE_KEYS, &[]),
        Dialect::Pi => (CADRE_KEYS, PI_PACKAGE_KEYS),
    };
    own.iter().chain(extra).copied()
}

/// Whether `key` is one of the dialect's keys (asked for every key of every file: no
/// allocation).
pub(crate) fn is_known_key(key: &str, dialect: Dialect) -> bool {
    known_keys(dialect).any(|k| k == key)
}

/// A key folded for comparison: lower case, without `_`, `-` and spaces.
fn fold(key: &str) -> String {
    key.chars()
        .filter(|c| !matches!(c, '_' | '-' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether an unknown `key` looks like a capability key: equal to one after folding case and
/// separators, a small edit away from one, or containing a permission word.
pub(crate) fn looks_like_capability(key: &str) -> bool {
    // A key with letters from other scripts can be a look-alike (`tооls` with Cyrillic o's)
    // that no edit distance over code points sees.
    if !key.is_ascii() {
        return true;
    }
    let folded = fold(key);
    if CAPABILITY_FRAGMENTS.iter().any(|f| folded.contains(f)) {
        return true;
    }
    CAPABILITY_KEYS.iter().any(|k| is_near(&folded, &fold(k)))
}

/// A key from a file, fit to quote in a one-line message.
pub(crate) fn shown_key(key: &str) -> String {
    key.chars()
        .filter(|c| !is_unshowable(*c))
        .take(80)
        .collect()
}

pub(crate) use cadre_protocol::display::is_unshowable;

/// A known key the unknown `key` is probably a misspelling of.
pub(crate) fn nearest_known(key: &str, dialect: Dialect) -> Option<&'static str> {
    let folded = fold(key);
    known_keys(dialect)
        .filter(|k| is_near(&folded, &fold(k)))
        .min_by_key(|k| edit_distance(&folded, &fold(k)))
}

/// Near: the same after folding, or within one edit for short words and two for longer ones.
pub(crate) fn is_near(a: &str, b: &str) -> bool {
    let limit = if a.chars().count().min(b.chars().count()) >= 6 {
        2
    } else {
        1
    };
    edit_distance(a, b) <= limit
}

/// Edit distance counting a swap of two neighbours as one edit (`Raed` is one edit from
/// `Read`), over characters; keys are short, so the quadratic table is cheap.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

/// The file line of each top-level key of a frontmatter, found by reading the text (the YAML
/// parser keeps no positions). `first_line` is the file line of the frontmatter's first line.
pub(crate) struct KeyLines {
    lines: Vec<(String, usize)>,
}

impl KeyLines {
    pub(crate) fn new(yaml: &str, first_line: usize) -> KeyLines {
        let mut lines = Vec::new();
        for (i, line) in yaml.lines().enumerate() {
            let Some(first) = line.chars().next() else {
                continue;
            };
            if first.is_whitespace() || matches!(first, '#' | '-' | '{' | '[') {
                continue;
            }
            if let Some((key, _)) = line.split_once(':') {
                let key = key.trim().trim_matches(|c| c == '"' || c == '\'');
                lines.push((key.to_string(), first_line + i));
            }
        }
        KeyLines { lines }
    }

    /// The line of `key`'s first occurrence.
    pub(crate) fn of(&self, key: &str) -> Option<usize> {
        self.lines.iter().find(|(k, _)| k == key).map(|(_, l)| *l)
    }
}

/// The frontmatter with every top-level `key: *` written as `key: "*"`. Claude Code files write
/// `tools: *` unquoted, which YAML reads as an alias with no name; nothing else is changed, so
/// real aliases (`*anchor`) keep their meaning.
pub(crate) fn quote_bare_stars(yaml: &str) -> std::borrow::Cow<'_, str> {
    let is_bare_star = |line: &str| {
        !line.starts_with(char::is_whitespace)
            && line
                .split_once(':')
                .is_some_and(|(key, value)| !key.trim().is_empty() && value.trim() == "*")
    };
    if !yaml.lines().any(is_bare_star) {
        return std::borrow::Cow::Borrowed(yaml);
    }
    let mut out = String::with_capacity(yaml.len() + 8);
    for line in yaml.split_inclusive('\n') {
        let body = line.trim_end_matches(['\r', '\n']);
        if is_bare_star(body)
            && let Some((key, _)) = body.split_once(':')
        {
            out.push_str(key);
            out.push_str(": \"*\"");
            out.push_str(&line[body.len()..]);
            continue;
        }
        out.push_str(line);
    }
    std::borrow::Cow::Owned(out)
}

/// The frontmatter with each top-level `key: value` line whose plain value YAML may misread
/// (it holds `: ` or ` #`, or starts with one of `*&!%@`` ` ``) written as a double-quoted string,
/// the way Claude Code retries a frontmatter that does not parse. `None` when no line changes.
/// Flow collections (`[a, b]`, `{a: 1}`), quoted values and block scalars (`|`, `>`) are left as
/// they are, so a tool list keeps its shape.
pub(crate) fn quote_plain_values(yaml: &str) -> Option<String> {
    let mut out = String::with_capacity(yaml.len() + 64);
    let mut changed = false;
    for line in yaml.split_inclusive('\n') {
        let body = line.trim_end_matches(['\r', '\n']);
        let requoted = (!body.starts_with(char::is_whitespace))
            .then(|| body.split_once(": "))
            .flatten()
            .filter(|(key, _)| !key.is_empty() && !key.contains(['#', '"', '\'', '[', '{']))
            .and_then(|(key, value)| {
                let value = value.trim();
                // An alias of an anchor the frontmatter defines, and an anchor an alias uses,
                // are real YAML, not text: quoting one would drop or break what it carries.
                let anchor_name = |rest: &str| -> String {
                    rest.chars()
                        .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ']' | '}'))
                        .collect()
                };
                let linked = |sigil: char, other: char| {
                    value.strip_prefix(sigil).is_some_and(|rest| {
                        let name = anchor_name(rest);
                        !name.is_empty() && yaml.contains(&format!("{other}{name}"))
                    })
                };
                let plain = !value.is_empty()
                    && !linked('*', '&')
                    && !linked('&', '*')
                    && !value.starts_with(['"', '\'', '[', '{', '|', '>'])
                    && (value.contains(": ")
                        || value.contains(" #")
                        || value.starts_with(['*', '&', '!', '%', '@', '`']));
                plain.then(|| {
                    let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
                    format!("{key}: \"{escaped}\"")
                })
            });
        match requoted {
            Some(text) => {
                changed = true;
                out.push_str(&text);
                out.push_str(&line[body.len()..]);
            }
            None => out.push_str(line),
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn capability_look_alikes() {
        for key in [
            "Tools",
            "tool",
            "tols",
            "allowed-tools",
            "allowed_tools",
            "disallowed_tools",
            "disallowedtools",
            "DisallowedTools",
            "permission_mode",
            "permissionmode",
            "permisionMode",
            "read_only",
            "readOnly",
            "shell_policy",
            "isolaton",
            "mcp_servers",
            "Hooks",
            "sandboxed",
        ] {
            assert!(looks_like_capability(key), "{key}");
        }
        for key in [
            "category",
            "version",
            "author",
            "tags",
            "title",
            "role",
            "expertise",
            "priority",
            "model_version",
            "examples",
            "emoji",
            "type",
            "thinking",
            "timeoutMs",
        ] {
            assert!(!looks_like_capability(key), "{key}");
        }
    }

    #[test]
    fn nearest_known_keys() {
        assert_eq!(
            nearest_known("descripton", Dialect::ClaudeCode),
            Some("description")
        );
        assert_eq!(
            nearest_known("max_turns", Dialect::ClaudeCode),
            Some("maxTurns")
        );
        assert_eq!(nearest_known("category", Dialect::ClaudeCode), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("raed", "read"), 1);
    }

    #[test]
    fn key_lines_follow_the_text() {
        let lines = KeyLines::new("name: a\n# c\ndescription: |\n  x: y\ntools: [a]\n", 2);
        assert_eq!(lines.of("name"), Some(2));
        assert_eq!(lines.of("description"), Some(4));
        assert_eq!(lines.of("tools"), Some(6));
        assert_eq!(lines.of("x"), None);
    }

    #[test]
    fn plain_values_are_quoted_for_the_retry() {
        let y = "name: a\ndescription: Use when: x \"q\" \\ y\ntools: [Read, Grep]\n";
        assert_eq!(
            quote_plain_values(y).unwrap(),
            "name: a\ndescription: \"Use when: x \\\"q\\\" \\\\ y\"\ntools: [Read, Grep]\n"
        );
        let y = "description: **TECHNICAL** work\n";
        assert_eq!(
            quote_plain_values(y).unwrap(),
            "description: \"**TECHNICAL** work\"\n"
        );
        assert_eq!(quote_plain_values("description: |\n  a: b\n"), None);
        assert_eq!(quote_plain_values("name: a\n"), None);
    }

    #[test]
    fn bare_stars_are_quoted_and_aliases_kept() {
        assert_eq!(
            quote_bare_stars("tools: *\nname: a"),
            "tools: \"*\"\nname: a"
        );
        assert_eq!(quote_bare_stars("tools:   *  \r\n"), "tools: \"*\"\r\n");
        let aliased = "a: &x 1\nb: *x\n";
        assert_eq!(quote_bare_stars(aliased), aliased);
        assert_eq!(quote_bare_stars("  tools: *"), "  tools: *");
    }
}
