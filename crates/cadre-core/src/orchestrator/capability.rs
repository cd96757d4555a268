//! The child's tool set (SPEC S1, O8).
//!
//! A child's tools are the parent's active tools ∩ the role's `tools` (`*` = all) −
//! `disallowedTools` − the child denylist − `edit`/`write` and MCP tools not annotated
//! read-only (`mcp__…` without `readOnlyHint: true`) when read-only. Every step can only
//! remove tools, so an allowlist can never widen what the parent has. Tools a role or a denylist
//! names that do not exist at all are a configuration error: the launch fails before any model
//! call, because a typo in an allowlist silently yields a weaker child and a typo in a denylist
//! silently leaves the tool enabled.
//!
//! The same set is checked again at dispatch ([`check_dispatch`]): the model only sees the tools
//! in its set, but a call naming another tool is refused with a message and counted as blocked.

use std::collections::BTreeSet;
use std::fmt;

/// The tool that launches children (O1).
pub const AGENT_TOOL: &str = "Agent";

/// Tools that belong to the root: a child never gets them (O8).
pub const ROOT_ONLY_TOOLS: [&str; 3] = ["SendMessage", "TaskOutput", "TaskStop"];

/// Tools removed from read-only children. Bash stays: the sandbox makes it read-only (S2).
pub const WRITE_TOOLS: [&str; 2] = ["edit", "write"];

/// Whether a task's bash runs in the read-only kernel sandbox (S2): when the task is read-only,
/// and also when its tool set holds no write tool. A `Bash(…)` allowlist is no write boundary
/// (`git diff --output=FILE`, `sort -o FILE` write through commands it allows), so a role whose
/// author gave it no `edit` or `write` gets a shell that cannot write either, whatever its
/// patterns or shell policy. Roles that write (`code`, `general-purpose`, any role listing
/// `edit` or `write`) keep the writer's boundary.
pub fn bash_runs_read_only(readonly: bool, tools: &[String]) -> bool {
    readonly || !tools.iter().any(|t| WRITE_TOOLS.contains(&t.as_str()))
}

/// The prefix of MCP servers' tools (`mcp__<server>__<tool>`, SPEC I7).
pub const MCP_TOOL_PREFIX: &str = "mcp__";

/// In a role's `tools` or `disallowedTools`: every MCP tool. `mcp__<server>` and
/// `mcp__<server>__*` (Claude Code's forms) name every tool of one server.
pub const ALL_MCP_TOOLS: &str = "mcp__*";

/// What an `mcp__…` entry of a role's list names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum McpEntry<'a> {
    /// `mcp__*`.
    All,
    /// `mcp__<server>` or `mcp__<server>__*`.
    Server(&'a str),
    /// `mcp__<server>__<tool>`.
    Tool(&'a str),
}

/// How `entry` reads as an MCP entry: `None` when it is not one (no `mcp__` prefix),
/// `Some(Err(()))` when it is malformed. Server names hold letters, digits, `-` and `_`,
/// neither start nor end with `_` and hold no `__` (the MCP client refuses others), so the
/// server of `mcp__<rest>` is `rest` up to its first `__`.
fn mcp_entry(entry: &str) -> Option<Result<McpEntry<'_>, ()>> {
    let rest = entry.strip_prefix(MCP_TOOL_PREFIX)?;
    if rest == "*" {
        return Some(Ok(McpEntry::All));
    }
    let (server, tool) = match rest.find("__") {
        Some(i) => (&rest[..i], Some(&rest[i + 2..])),
        None => (rest, None),
    };
    let name_chars = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    if !name_chars(server) || server.starts_with('_') || server.ends_with('_') {
        return Some(Err(()));
    }
    Some(match tool {
        None | Some("*") => Ok(McpEntry::Server(server)),
        Some(tool) if name_chars(tool) => Ok(McpEntry::Tool(server)),
        Some(_) => Err(()),
    })
}

/// Whether `entry` starts with `mcp__` yet is none of the forms a role may write.
pub fn is_malformed_mcp_entry(entry: &str) -> bool {
    matches!(mcp_entry(entry), Some(Err(())))
}

/// The server of an MCP tool's name (`fs` of `mcp__fs__read`).
fn server_of(name: &str) -> Option<&str> {
    match mcp_entry(name) {
        Some(Ok(McpEntry::Tool(server))) => Some(server),
        _ => None,
    }
}

/// Whether `entry` of a role's list names tool `name`: itself, or an MCP pattern matching it.
pub fn names_tool(entry: &str, name: &str) -> bool {
    if entry == name {
        return true;
    }
    let Some(server) = server_of(name) else {
        return false;
    };
    match mcp_entry(entry) {
        Some(Ok(McpEntry::All)) => true,
        Some(Ok(McpEntry::Server(s))) => s == server,
        _ => false,
    }
}

/// Whether `entry` is an MCP pattern rather than a tool's name.
fn is_mcp_pattern(entry: &str) -> bool {
    matches!(
        mcp_entry(entry),
        Some(Ok(McpEntry::All | McpEntry::Server(_)))
    )
}

/// The wildcard that means "every tool the parent has".
pub const ALL_TOOLS: &str = "*";

/// What the capability resolution needs to know about one launch.
#[derive(Debug, Clone, Copy)]
pub struct CapabilityInput<'a> {
    /// The parent's active tool names, in the order the parent sees them.
    pub parent_active: &'a [String],
    /// The role's `tools`: `None` or a list containing `*` = every tool the parent has.
    pub role_tools: Option<&'a [String]>,
    /// The role's `disallowedTools` (`*` removes everything).
    pub disallowed: &'a [String],
    pub readonly: bool,
    /// The child's depth (children of the root are at depth 1).
    pub depth: u32,
    /// `maxAgentDepth`: the deepest a child may be.
    pub max_depth: u32,
    /// The role lists `Agent` (and nested agents are enabled): the child may launch children
    /// while it is shallower than `max_depth`.
    pub role_allows_agent: bool,
    /// The delegation packet's `tool_policy: "no tools"` (D1): the child gets no tools at all.
    pub tool_policy_no_tools: bool,
    /// Every tool that exists in this runtime, whether or not the parent has it.
    pub known_tools: &'a [String],
    /// The MCP tools their servers annotate `readOnlyHint: true`: the only MCP tools a
    /// read-only role gets.
    pub mcp_read_only: &'a [String],
}

/// Why a tool that was asked for (or inherited) is not in the child's set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The role lists it but the parent does not have it active.
    NotInParent,
    /// The role names a tool of an MCP server that gives the parent no tool at all: not
    /// configured, or it failed to start (role files from other hosts name servers freely).
    McpServerAbsent,
    /// The delegation packet asked for a child without tools.
    NoToolsPolicy,
    /// The role's `disallowedTools` names it.
    Disallowed,
    /// `SendMessage`, `TaskOutput`, `TaskStop` belong to the root.
    RootOnly,
    /// `Agent` without the role listing it (or with nested agents disabled).
    NestingNotAllowed,
    /// `Agent` for a child already at `maxAgentDepth`.
    DepthLimit { max_depth: u32 },
    /// `edit`/`write` for a read-only role.
    ReadOnly,
    /// An MCP tool not annotated read-only, for a read-only role.
    McpNotReadOnly,
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DropReason::NotInParent => f.write_str("the parent does not have this tool"),
            DropReason::McpServerAbsent => f.write_str(
                "no MCP server of that name runs in this session (configure it under mcpServers)",
            ),
            DropReason::NoToolsPolicy => {
                f.write_str("the delegation packet's tool_policy is \"no tools\"")
            }
            DropReason::Disallowed => f.write_str("the role's disallowedTools lists it"),
            DropReason::RootOnly => {
                f.write_str("it belongs to the root session and is never given to a subagent")
            }
            DropReason::NestingNotAllowed => {
                f.write_str("this role may not launch subagents (its tools do not list Agent)")
            }
            DropReason::DepthLimit { max_depth } => write!(
                f,
                "the maximum subagent nesting depth ({max_depth}) is reached"
            ),
            DropReason::ReadOnly => f.write_str("the role is read-only"),
            DropReason::McpNotReadOnly => {
                f.write_str("the role is read-only and the MCP tool is not annotated read-only")
            }
        }
    }
}

/// A tool left out of the child's set, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedTool {
    pub name: String,
    pub reason: DropReason,
}

/// The resolved tool set of one child.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CapabilitySet {
    /// The tools the child may call, in the parent's order.
    pub tools: Vec<String>,
    /// Tools asked for or inherited but removed, with the first reason that removed each.
    pub dropped: Vec<DroppedTool>,
}

impl CapabilitySet {
    pub fn contains(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t == tool)
    }

    fn dropped_reason(&self, tool: &str) -> Option<DropReason> {
        self.dropped
            .iter()
            .find(|d| d.name == tool)
            .map(|d| d.reason)
    }
}

/// A launch whose role names tools that do not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapabilityError {
    #[error("unknown tool(s) in the role's tools: {}", .0.join(", "))]
    UnknownTools(Vec<String>),
    #[error("unknown tool(s) in the role's disallowedTools: {}", .0.join(", "))]
    UnknownDisallowed(Vec<String>),
    /// `mcp__…` entries that are not `mcp__*`, `mcp__<server>`, `mcp__<server>__*` or
    /// `mcp__<server>__<tool>`, or (in disallowedTools) that name a running server in the
    /// wrong case: a denylist entry that matches nothing must not leave the tools enabled.
    #[error(
        "MCP entries that match no MCP server as written in the role's {list}: {} (write \
         mcp__*, mcp__<server>, mcp__<server>__* or mcp__<server>__<tool>; server names are \
         case-sensitive)",
        .entries.join(", ")
    )]
    BadMcpEntries {
        list: &'static str,
        entries: Vec<String>,
    },
}

/// Resolve a child's tool set (S1). Fails only for names that exist nowhere.
pub fn resolve_capabilities(input: CapabilityInput<'_>) -> Result<CapabilitySet, CapabilityError> {
    let known: BTreeSet<&str> = input.known_tools.iter().map(String::as_str).collect();
    // An MCP tool's existence depends on its server starting, so naming one that is absent is
    // not a typo to fail on: it is left out like any tool the parent lacks.
    let is_unknown = |name: &&String| {
        name.as_str() != ALL_TOOLS
            && !name.starts_with(MCP_TOOL_PREFIX)
            && !known.contains(name.as_str())
    };

    let explicit: Option<&[String]> = input
        .role_tools
        .filter(|tools| !tools.iter().any(|t| t == ALL_TOOLS));
    if let Some(tools) = explicit {
        let unknown = dedup(tools.iter().filter(is_unknown));
        if !unknown.is_empty() {
            return Err(CapabilityError::UnknownTools(unknown));
        }
    }
    let unknown = dedup(input.disallowed.iter().filter(is_unknown));
    if !unknown.is_empty() {
        return Err(CapabilityError::UnknownDisallowed(unknown));
    }
    check_mcp_entries(&input, explicit)?;

    let parent: BTreeSet<&str> = input.parent_active.iter().map(String::as_str).collect();
    let disallow_all = input.disallowed.iter().any(|t| t == ALL_TOOLS);

    // Candidates: the role's explicit list, or everything the parent has. Kept in the parent's
    // order so the child's tool list is stable whatever order the role file uses.
    let mut candidates: Vec<&str> = Vec::new();
    match explicit {
        Some(tools) => {
            candidates.extend(
                input
                    .parent_active
                    .iter()
                    .map(String::as_str)
                    .filter(|t| tools.iter().any(|entry| names_tool(entry, t))),
            );
            // Listed tools the parent lacks come last, in the role's order (a pattern that
            // matches nothing is no tool).
            for t in tools {
                if !parent.contains(t.as_str())
                    && !candidates.contains(&t.as_str())
                    && !is_mcp_pattern(t)
                {
                    candidates.push(t.as_str());
                }
            }
        }
        None => candidates.extend(input.parent_active.iter().map(String::as_str)),
    }

    let mut set = CapabilitySet::default();
    let mut seen = BTreeSet::new();
    for name in candidates {
        if !seen.insert(name) {
            continue;
        }
        match drop_reason(name, &input, &parent, disallow_all) {
            Some(reason) => set.dropped.push(DroppedTool {
                name: name.to_string(),
                reason,
            }),
            None => set.tools.push(name.to_string()),
        }
    }
    Ok(set)
}

/// Malformed `mcp__…` entries fail in both lists, and so does a disallowedTools entry whose
/// server differs only in case from one that provides tools: it would match nothing and leave
/// the tools it meant to deny enabled. An entry naming a server that is absent altogether is
/// no error (the server may have failed to start; its tools are absent anyway).
fn check_mcp_entries(
    input: &CapabilityInput<'_>,
    role_tools: Option<&[String]>,
) -> Result<(), CapabilityError> {
    let servers: BTreeSet<&str> = input
        .known_tools
        .iter()
        .chain(input.parent_active)
        .filter_map(|t| server_of(t))
        .collect();
    let miscased = |server: &str| {
        !servers.contains(server) && servers.iter().any(|s| s.eq_ignore_ascii_case(server))
    };
    let malformed = |entry: &&String| matches!(mcp_entry(entry), Some(Err(())));
    let bad = dedup(role_tools.unwrap_or_default().iter().filter(malformed));
    if !bad.is_empty() {
        return Err(CapabilityError::BadMcpEntries {
            list: "tools",
            entries: bad,
        });
    }
    let bad = dedup(
        input
            .disallowed
            .iter()
            .filter(|entry| match mcp_entry(entry) {
                Some(Err(())) => true,
                Some(Ok(McpEntry::Server(s) | McpEntry::Tool(s))) => miscased(s),
                _ => false,
            }),
    );
    if !bad.is_empty() {
        return Err(CapabilityError::BadMcpEntries {
            list: "disallowedTools",
            entries: bad,
        });
    }
    Ok(())
}

/// The first rule that removes `name`, in the order S1 lists them.
fn drop_reason(
    name: &str,
    input: &CapabilityInput<'_>,
    parent: &BTreeSet<&str>,
    disallow_all: bool,
) -> Option<DropReason> {
    if !parent.contains(name) {
        if let Some(server) = server_of(name)
            && !parent.iter().any(|t| server_of(t) == Some(server))
        {
            return Some(DropReason::McpServerAbsent);
        }
        return Some(DropReason::NotInParent);
    }
    if input.tool_policy_no_tools {
        return Some(DropReason::NoToolsPolicy);
    }
    if disallow_all || input.disallowed.iter().any(|entry| names_tool(entry, name)) {
        return Some(DropReason::Disallowed);
    }
    if ROOT_ONLY_TOOLS.contains(&name) {
        return Some(DropReason::RootOnly);
    }
    if name == AGENT_TOOL {
        if !input.role_allows_agent {
            return Some(DropReason::NestingNotAllowed);
        }
        // A child at depth d launches children at depth d + 1, which must not exceed the limit.
        if input.depth >= input.max_depth {
            return Some(DropReason::DepthLimit {
                max_depth: input.max_depth,
            });
        }
    }
    if input.readonly && WRITE_TOOLS.contains(&name) {
        return Some(DropReason::ReadOnly);
    }
    // `readOnlyHint` is the server's claim; without it an MCP tool may change anything.
    if input.readonly
        && name.starts_with(MCP_TOOL_PREFIX)
        && !input.mcp_read_only.iter().any(|t| t == name)
    {
        return Some(DropReason::McpNotReadOnly);
    }
    None
}

fn dedup<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

/// Check one tool call against the child's set at dispatch. The error is the tool result the
/// model gets; the caller counts the call as blocked.
pub fn check_dispatch(set: &CapabilitySet, tool: &str) -> Result<(), String> {
    if set.contains(tool) {
        return Ok(());
    }
    let available = if set.tools.is_empty() {
        "none".to_string()
    } else {
        set.tools.join(", ")
    };
    let why = match set.dropped_reason(tool) {
        Some(reason) => format!(" because {reason}"),
        None => String::new(),
    };
    Err(format!(
        "Tool `{tool}` is not available to this task{why}; the call was blocked. \
         Tools available: {available}."
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    const KNOWN: &[&str] = &[
        "read",
        "bash",
        "edit",
        "write",
        "grep",
        "find",
        "ls",
        "Agent",
        "SendMessage",
        "TaskOutput",
        "TaskStop",
        "workflow",
        "mcp__fs__read_file",
        "mcp__fs__write_file",
        "mcp__web__fetch",
    ];
    /// The MCP tools annotated read-only.
    const MCP_READ_ONLY: &[&str] = &["mcp__fs__read_file"];
    const MCP_PARENT: &[&str] = &[
        "read",
        "edit",
        "mcp__fs__read_file",
        "mcp__fs__write_file",
        "mcp__web__fetch",
    ];
    const ROOT_PARENT: &[&str] = &[
        "read",
        "bash",
        "edit",
        "write",
        "grep",
        "find",
        "ls",
        "Agent",
        "SendMessage",
        "TaskOutput",
        "TaskStop",
    ];

    struct Case {
        name: &'static str,
        parent: &'static [&'static str],
        role: Option<&'static [&'static str]>,
        disallowed: &'static [&'static str],
        readonly: bool,
        depth: u32,
        allows_agent: bool,
        no_tools: bool,
        tools: &'static [&'static str],
        dropped: &'static [(&'static str, DropReason)],
    }

    /// A child of the root inheriting every tool: cases override what they test.
    const BASE: Case = Case {
        name: "",
        parent: ROOT_PARENT,
        role: None,
        disallowed: &[],
        readonly: false,
        depth: 1,
        allows_agent: false,
        no_tools: false,
        tools: &[],
        dropped: &[],
    };

    fn run(c: &Case) -> Result<CapabilitySet, CapabilityError> {
        let parent = names(c.parent);
        let role = c.role.map(names);
        let disallowed = names(c.disallowed);
        let known = names(KNOWN);
        let mcp_read_only = names(MCP_READ_ONLY);
        resolve_capabilities(CapabilityInput {
            parent_active: &parent,
            role_tools: role.as_deref(),
            disallowed: &disallowed,
            readonly: c.readonly,
            depth: c.depth,
            max_depth: 5,
            role_allows_agent: c.allows_agent,
            tool_policy_no_tools: c.no_tools,
            known_tools: &known,
            mcp_read_only: &mcp_read_only,
        })
    }

    #[test]
    fn s1_tool_set_table() {
        use DropReason::*;
        let cases = [
            Case {
                name: "inherit all: denylist removes root tools and Agent",
                tools: &["read", "bash", "edit", "write", "grep", "find", "ls"],
                dropped: &[
                    ("Agent", NestingNotAllowed),
                    ("SendMessage", RootOnly),
                    ("TaskOutput", RootOnly),
                    ("TaskStop", RootOnly),
                ],
                ..BASE
            },
            Case {
                name: "star equals inherit",
                role: Some(&["*"]),
                allows_agent: true,
                tools: &[
                    "read", "bash", "edit", "write", "grep", "find", "ls", "Agent",
                ],
                dropped: &[
                    ("SendMessage", RootOnly),
                    ("TaskOutput", RootOnly),
                    ("TaskStop", RootOnly),
                ],
                ..BASE
            },
            Case {
                name: "star mixed with names still means all",
                role: Some(&["read", "*"]),
                parent: &["read", "bash"],
                tools: &["read", "bash"],
                ..BASE
            },
            Case {
                name: "explicit list narrows, in parent order",
                role: Some(&["ls", "read", "grep"]),
                tools: &["read", "grep", "ls"],
                ..BASE
            },
            Case {
                name: "explicit list cannot widen beyond the parent",
                parent: &["read", "grep"],
                role: Some(&["read", "bash", "edit"]),
                tools: &["read"],
                dropped: &[("bash", NotInParent), ("edit", NotInParent)],
                ..BASE
            },
            Case {
                name: "duplicates in the role list are harmless",
                parent: &["read", "grep"],
                role: Some(&["read", "read", "bash", "bash"]),
                tools: &["read"],
                dropped: &[("bash", NotInParent)],
                ..BASE
            },
            Case {
                name: "empty explicit list = no tools",
                role: Some(&[]),
                tools: &[],
                ..BASE
            },
            Case {
                name: "disallowed removes",
                disallowed: &["bash", "write"],
                parent: &["read", "bash", "write"],
                tools: &["read"],
                dropped: &[("bash", Disallowed), ("write", Disallowed)],
                ..BASE
            },
            Case {
                name: "disallowed star removes everything",
                disallowed: &["*"],
                parent: &["read", "bash"],
                tools: &[],
                dropped: &[("read", Disallowed), ("bash", Disallowed)],
                ..BASE
            },
            Case {
                name: "readonly removes edit and write, keeps bash",
                readonly: true,
                parent: &["read", "bash", "edit", "write"],
                tools: &["read", "bash"],
                dropped: &[("edit", ReadOnly), ("write", ReadOnly)],
                ..BASE
            },
            Case {
                name: "explicitly listed root tools are still removed",
                role: Some(&["read", "SendMessage", "TaskStop"]),
                tools: &["read"],
                dropped: &[("SendMessage", RootOnly), ("TaskStop", RootOnly)],
                ..BASE
            },
            Case {
                name: "Agent kept below the depth limit",
                role: Some(&["read", "Agent"]),
                allows_agent: true,
                depth: 4,
                tools: &["read", "Agent"],
                ..BASE
            },
            Case {
                name: "Agent removed at the depth limit",
                role: Some(&["read", "Agent"]),
                allows_agent: true,
                depth: 5,
                tools: &["read"],
                dropped: &[("Agent", DepthLimit { max_depth: 5 })],
                ..BASE
            },
            Case {
                name: "Agent removed past the depth limit",
                role: Some(&["Agent"]),
                allows_agent: true,
                depth: 9,
                tools: &[],
                dropped: &[("Agent", DepthLimit { max_depth: 5 })],
                ..BASE
            },
            Case {
                name: "Agent listed but nesting disallowed",
                role: Some(&["Agent"]),
                allows_agent: false,
                tools: &[],
                dropped: &[("Agent", NestingNotAllowed)],
                ..BASE
            },
            Case {
                name: "Agent allowed but parent lacks it",
                parent: &["read"],
                role: Some(&["read", "Agent"]),
                allows_agent: true,
                tools: &["read"],
                dropped: &[("Agent", NotInParent)],
                ..BASE
            },
            Case {
                name: "disallowed beats nesting",
                role: Some(&["Agent"]),
                disallowed: &["Agent"],
                allows_agent: true,
                tools: &[],
                dropped: &[("Agent", Disallowed)],
                ..BASE
            },
            Case {
                name: "no tools policy empties the set",
                parent: &["read", "bash"],
                no_tools: true,
                tools: &[],
                dropped: &[("read", NoToolsPolicy), ("bash", NoToolsPolicy)],
                ..BASE
            },
            Case {
                name: "grep find ls are not implied by read",
                role: Some(&["read"]),
                tools: &["read"],
                ..BASE
            },
            Case {
                name: "MCP tools are inherited like any other",
                parent: MCP_PARENT,
                tools: MCP_PARENT,
                ..BASE
            },
            Case {
                name: "an allowlist may name MCP tools",
                parent: MCP_PARENT,
                role: Some(&["read", "mcp__web__fetch"]),
                tools: &["read", "mcp__web__fetch"],
                ..BASE
            },
            Case {
                name: "read-only keeps only MCP tools annotated read-only",
                parent: MCP_PARENT,
                readonly: true,
                tools: &["read", "mcp__fs__read_file"],
                dropped: &[
                    ("edit", ReadOnly),
                    ("mcp__fs__write_file", McpNotReadOnly),
                    ("mcp__web__fetch", McpNotReadOnly),
                ],
                ..BASE
            },
            Case {
                name: "read-only drops a named MCP tool not annotated read-only",
                parent: MCP_PARENT,
                readonly: true,
                role: Some(&["mcp__fs__read_file", "mcp__fs__write_file"]),
                tools: &["mcp__fs__read_file"],
                dropped: &[("mcp__fs__write_file", McpNotReadOnly)],
                ..BASE
            },
            Case {
                name: "an MCP tool the parent lacks is not in the set",
                parent: &["read"],
                role: Some(&["read", "mcp__fs__read_file"]),
                readonly: true,
                tools: &["read"],
                dropped: &[("mcp__fs__read_file", McpServerAbsent)],
                ..BASE
            },
            Case {
                name: "mcp__* names every MCP tool, mcp__<server> one server's",
                parent: MCP_PARENT,
                role: Some(&["read", "mcp__web"]),
                tools: &["read", "mcp__web__fetch"],
                ..BASE
            },
            Case {
                name: "a read-only role with mcp__* gets the read-only MCP tools",
                parent: MCP_PARENT,
                role: Some(&["read", "mcp__*"]),
                readonly: true,
                tools: &["read", "mcp__fs__read_file"],
                dropped: &[
                    ("mcp__fs__write_file", McpNotReadOnly),
                    ("mcp__web__fetch", McpNotReadOnly),
                ],
                ..BASE
            },
            Case {
                name: "an MCP pattern that matches nothing adds nothing",
                parent: &["read"],
                role: Some(&["read", "mcp__*", "mcp__fs"]),
                tools: &["read"],
                ..BASE
            },
            Case {
                name: "disallowedTools may name a server",
                parent: MCP_PARENT,
                disallowed: &["mcp__fs"],
                tools: &["read", "edit", "mcp__web__fetch"],
                dropped: &[
                    ("mcp__fs__read_file", Disallowed),
                    ("mcp__fs__write_file", Disallowed),
                ],
                ..BASE
            },
            Case {
                name: "disallowedTools can remove an MCP tool",
                parent: MCP_PARENT,
                disallowed: &["mcp__web__fetch"],
                tools: &["read", "edit", "mcp__fs__read_file", "mcp__fs__write_file"],
                dropped: &[("mcp__web__fetch", Disallowed)],
                ..BASE
            },
            Case {
                name: "known tool absent from parent and not listed is silent",
                parent: &["read"],
                tools: &["read"],
                ..BASE
            },
        ];
        for c in &cases {
            let set = run(c).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            assert_eq!(set.tools, names(c.tools), "{}", c.name);
            let dropped: Vec<(String, DropReason)> = set
                .dropped
                .iter()
                .map(|d| (d.name.clone(), d.reason))
                .collect();
            let want: Vec<(String, DropReason)> =
                c.dropped.iter().map(|(n, r)| (n.to_string(), *r)).collect();
            assert_eq!(dropped, want, "{}", c.name);
        }
    }

    #[test]
    fn s1_unknown_explicit_tools_fail_the_launch() {
        let err = run(&Case {
            role: Some(&["read", "raed", "bsah", "raed"]),
            ..BASE
        })
        .unwrap_err();
        assert_eq!(err, CapabilityError::UnknownTools(names(&["raed", "bsah"])));
        assert!(err.to_string().contains("raed, bsah"));

        let err = run(&Case {
            disallowed: &["bahs"],
            ..BASE
        })
        .unwrap_err();
        assert_eq!(err, CapabilityError::UnknownDisallowed(names(&["bahs"])));

        // An MCP tool whose server is absent is left out, not an error.
        let set = run(&Case {
            role: Some(&["read", "mcp__gone__tool"]),
            disallowed: &["mcp__gone__other"],
            ..BASE
        })
        .unwrap();
        assert_eq!(set.tools, names(&["read"]));
        assert_eq!(set.dropped[0].reason, DropReason::McpServerAbsent);

        // Claude Code's `mcp__<server>__*` denies the whole server.
        let set = run(&Case {
            disallowed: &["mcp__fs__*"],
            parent: MCP_PARENT,
            ..BASE
        })
        .unwrap();
        assert!(
            !set.tools.iter().any(|t| t.starts_with("mcp__fs__")),
            "{set:?}"
        );
        assert!(set.contains("mcp__web__fetch"), "{set:?}");

        // A denylist entry naming a running server in the wrong case fails closed, and so do
        // malformed entries in either list.
        for disallowed in [&["mcp__FS"][..], &["mcp__Fs__read_file"], &["mcp__WEB__*"]] {
            let err = run(&Case { disallowed, ..BASE }).unwrap_err();
            assert!(
                matches!(&err, CapabilityError::BadMcpEntries { list: "disallowedTools", entries } if entries == &names(disallowed)),
                "{disallowed:?}: {err}"
            );
            assert!(err.to_string().contains("case-sensitive"), "{err}");
        }
        for bad in [
            "mcp__",
            "mcp__fs__",
            "mcp__fs__re*",
            "mcp___fs",
            "mcp__fs_",
            "mcp__f s",
        ] {
            let one: &'static [&str] = Box::leak(Box::new([bad]));
            let err = run(&Case {
                disallowed: one,
                ..BASE
            })
            .unwrap_err();
            assert!(
                matches!(err, CapabilityError::BadMcpEntries { .. }),
                "{bad}: {err}"
            );
            let role: &'static [&str] = Box::leak(Box::new(["read", bad]));
            let err = run(&Case {
                role: Some(role),
                ..BASE
            })
            .unwrap_err();
            assert!(
                matches!(err, CapabilityError::BadMcpEntries { list: "tools", .. }),
                "{bad}: {err}"
            );
        }
        // In the allowlist a server that is absent, or differs in case, only narrows.
        let set = run(&Case {
            role: Some(&["read", "mcp__FS", "mcp__gone__*"]),
            ..BASE
        })
        .unwrap();
        assert_eq!(set.tools, names(&["read"]));

        // Names are case-sensitive: `Read` is not `read`.
        let err = run(&Case {
            role: Some(&["Read"]),
            ..BASE
        })
        .unwrap_err();
        assert_eq!(err, CapabilityError::UnknownTools(names(&["Read"])));
    }

    #[test]
    fn s1_unknown_tools_fail_even_with_no_tools_policy() {
        let r = run(&Case {
            role: Some(&["nope"]),
            no_tools: true,
            ..BASE
        });
        assert!(matches!(r, Err(CapabilityError::UnknownTools(_))));
    }

    #[test]
    fn mcp_patterns() {
        for (entry, name, want) in [
            ("mcp__*", "mcp__fs__read", true),
            ("mcp__*", "read", false),
            ("mcp__fs", "mcp__fs__read", true),
            ("mcp__fs", "mcp__fsx__read", false),
            ("mcp__f", "mcp__fs__read", false),
            ("mcp__fs__read", "mcp__fs__read", true),
            ("mcp__fs__read", "mcp__fs__reader", false),
            ("mcp__", "mcp__fs__read", false),
            ("mcp__fs__*", "mcp__fs__read", true),
            ("mcp__fs__*", "mcp__fsx__read", false),
            ("mcp__fs__*", "read", false),
            ("mcp__FS", "mcp__fs__read", false),
            // A tool whose own name starts with `_` is still its server's.
            ("mcp__a", "mcp__a___x", true),
            ("read", "read", true),
        ] {
            assert_eq!(names_tool(entry, name), want, "{entry} names {name}");
        }
    }

    #[test]
    fn bash_is_read_only_without_a_write_tool() {
        // (readonly, tools, runs read-only)
        let cases: &[(bool, &[&str], bool)] = &[
            (false, &["read", "bash", "edit", "write"], false),
            (false, &["read", "bash", "edit"], false),
            (false, &["bash", "write"], false),
            (false, &["read", "bash"], true),
            (false, &["bash"], true),
            (
                false,
                &["read", "grep", "bash", "Agent", "mcp__gh__create_issue"],
                true,
            ),
            (false, &[], true),
            (true, &["read", "bash", "edit", "write"], true),
            (true, &["bash"], true),
        ];
        for (readonly, tools, want) in cases {
            assert_eq!(
                bash_runs_read_only(*readonly, &names(tools)),
                *want,
                "{readonly} {tools:?}"
            );
        }
    }

    #[test]
    fn s1_dispatch_check_refuses_outside_the_set() {
        let set = CapabilitySet {
            tools: names(&["read", "grep"]),
            dropped: vec![
                DroppedTool {
                    name: "Agent".into(),
                    reason: DropReason::DepthLimit { max_depth: 5 },
                },
                DroppedTool {
                    name: "edit".into(),
                    reason: DropReason::ReadOnly,
                },
            ],
        };
        assert_eq!(check_dispatch(&set, "read"), Ok(()));
        let agent = check_dispatch(&set, "Agent").unwrap_err();
        assert!(
            agent.contains("maximum subagent nesting depth (5)"),
            "{agent}"
        );
        assert!(agent.contains("blocked"));
        let edit = check_dispatch(&set, "edit").unwrap_err();
        assert!(edit.contains("read-only"), "{edit}");
        let other = check_dispatch(&set, "bash").unwrap_err();
        assert!(other.contains("Tools available: read, grep."), "{other}");
        let set = CapabilitySet {
            tools: names(&["read"]),
            dropped: vec![DroppedTool {
                name: "mcp__fs__write_file".into(),
                reason: DropReason::McpNotReadOnly,
            }],
        };
        let mcp = check_dispatch(&set, "mcp__fs__write_file").unwrap_err();
        assert!(
            mcp.contains("the role is read-only and the MCP tool is not annotated read-only"),
            "{mcp}"
        );
        let empty = check_dispatch(&CapabilitySet::default(), "read").unwrap_err();
        assert!(empty.contains("Tools available: none."), "{empty}");
    }
}
