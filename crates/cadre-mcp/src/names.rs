//! Server and tool names. A tool of server `s` named `t` is `mcp__s__t` to the model, and every
//! provider limits tool names to `^[a-zA-Z0-9_-]{1,64}$` (OpenAI's function names, Anthropic's
//! tool names): server names that cannot be part of such a name are refused; tool names are
//! made to fit, deterministically.

/// The prefix of every MCP tool's name.
pub const PREFIX: &str = "mcp__";

/// The longest tool name a provider accepts.
pub const MAX_TOOL_NAME: usize = 64;

/// The longest server name: leaves room for a tool name of at least 16 characters.
pub const MAX_SERVER_NAME: usize = MAX_TOOL_NAME - PREFIX.len() - 2 - 16;

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Why `name` cannot be a server name, if it cannot. Claude Code allows letters, digits, `-`
/// and `_`; `__` is refused too, because it separates the server from the tool in a tool's
/// name (`a__b` + `c` and `a` + `b__c` would both be `mcp__a__b__c`), and so is a leading or
/// trailing `_`. With these rules the server of `mcp__<rest>` is always `rest` up to its first
/// `__` ([`server_of`]).
pub fn check_server_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a server name cannot be empty".into());
    }
    if !name.chars().all(is_name_char) {
        return Err("a server name may hold only letters, digits, `-` and `_`".into());
    }
    if name.contains("__") {
        return Err("a server name cannot contain `__` (it separates server and tool)".into());
    }
    // `a_` + tool `x` and `a` + tool `_x` would both be `mcp__a___x`, and a role's `mcp__a`
    // would grant server `a_`'s tools; a leading `_` blurs the prefix the same way.
    if name.starts_with('_') || name.ends_with('_') {
        return Err(
            "a server name cannot start or end with `_` (it would run into the `__` \
                    around it)"
                .into(),
        );
    }
    if name.len() > MAX_SERVER_NAME {
        return Err(format!(
            "a server name is at most {MAX_SERVER_NAME} characters"
        ));
    }
    Ok(())
}

/// The model-facing name of `server`'s tool `tool` (`server` already checked). Characters a
/// provider refuses become `_`; a name that had to change that way, or is too long, ends in
/// `_` and 8 hex digits of a hash of the original tool name, so that two tools of one server
/// never map to the same name by accident and the same tool always gets the same name.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| if is_name_char(c) { c } else { '_' })
        .collect();
    let head = format!("{PREFIX}{server}__");
    if clean == tool && !tool.is_empty() && head.len() + tool.len() <= MAX_TOOL_NAME {
        return format!("{head}{tool}");
    }
    let suffix = format!("_{:08x}", fnv1a(tool.as_bytes()));
    let room = MAX_TOOL_NAME - head.len() - suffix.len();
    // `clean` is ASCII, so any byte index is a character boundary.
    let kept = &clean[..clean.len().min(room)];
    format!("{head}{kept}{suffix}")
}

/// FNV-1a, 32 bits: stable across builds and platforms (a std hasher is not).
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// The server part of an MCP tool's name (`fs` of `mcp__fs__read`).
pub fn server_of(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(PREFIX)?;
    rest.find("__")
        .map(|i| &rest[..i])
        .filter(|s| !s.is_empty())
}

/// Whether `name` is an MCP tool's name.
pub fn is_mcp_tool(name: &str) -> bool {
    name.starts_with(PREFIX)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        !name.is_empty() && name.len() <= MAX_TOOL_NAME && name.chars().all(is_name_char)
    }

    #[test]
    fn server_names() {
        for ok in ["fs", "my-server", "a_b", "A1", &"x".repeat(MAX_SERVER_NAME)] {
            assert!(check_server_name(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("", "empty"),
            ("my server", "letters"),
            ("a.b", "letters"),
            ("ü", "letters"),
            ("a__b", "`__`"),
            ("__", "`__`"),
            ("a_", "start or end with `_`"),
            ("_a", "start or end with `_`"),
            ("_", "start or end with `_`"),
            (&"x".repeat(MAX_SERVER_NAME + 1), "at most"),
        ] {
            let err = check_server_name(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn plain_tool_names_are_kept() {
        assert_eq!(tool_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(tool_name("a-b", "get-x"), "mcp__a-b__get-x");
    }

    #[test]
    fn odd_and_long_tool_names_fit_deterministically() {
        let server = "x".repeat(MAX_SERVER_NAME);
        let cases = [
            ("fs", "read.file"),
            ("fs", "read file"),
            ("fs", "read_file_"),
            ("fs", "ファイル"),
            ("fs", ""),
            ("fs", &"t".repeat(200)),
            (server.as_str(), "some_tool_name_that_is_long"),
        ];
        let mut seen = Vec::new();
        for (server, tool) in cases {
            let name = tool_name(server, tool);
            assert!(valid(&name), "{name}");
            assert!(name.starts_with(&format!("mcp__{server}__")), "{name}");
            assert_eq!(name, tool_name(server, tool), "deterministic");
            assert!(!seen.contains(&name), "{name} twice");
            seen.push(name);
        }
        // `read.file` and `read file` clean to the same text, yet stay apart.
        assert_ne!(tool_name("fs", "read.file"), tool_name("fs", "read file"));
        assert!(tool_name("fs", "read.file").starts_with("mcp__fs__read_file_"));
        assert_eq!(tool_name("fs", &"t".repeat(200)).len(), MAX_TOOL_NAME);
        assert!(is_mcp_tool("mcp__fs__x") && !is_mcp_tool("read"));
        // A tool whose name starts with `_` still belongs to its server.
        assert_eq!(tool_name("a", "_x"), "mcp__a___x");
        assert_eq!(server_of("mcp__a___x"), Some("a"));
        assert_eq!(server_of("mcp__fs__read"), Some("fs"));
        assert_eq!(server_of("mcp__fs"), None);
    }
}
