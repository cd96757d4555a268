//! The root session's MCP servers (SPEC I7): which are configured (read with the rest of the
//! context, trust decides the project's files), started once per root session alongside the
//! servers a front end adds, and their tools for the root and, through the manager, for its
//! children.

use std::sync::Arc;
use std::time::Duration;

use cadre_core::config::{CadreHome, project_config_dir};
use cadre_mcp::{Configured, McpSet, McpTool, ServerLimits, ServerPlace, SourceFiles};
use cadre_tools::Tool;

use crate::context::HostContext;
use crate::options::HostOptions;

/// Overrides how long a server may take to start (milliseconds; default 30 s).
pub const MCP_TIMEOUT_VAR: &str = "CADRE_MCP_TIMEOUT_MS";
/// Overrides how long one MCP tool call may take (milliseconds; default 10 min).
pub const MCP_TOOL_TIMEOUT_VAR: &str = "CADRE_MCP_TOOL_TIMEOUT_MS";

/// The configured servers of `project_root`, for a trusted project or not.
pub fn configured(home: &CadreHome, project_root: &std::path::Path, trusted: bool) -> Configured {
    Configured::load(
        &SourceFiles {
            user_settings: home.settings_json(),
            project_mcp_json: project_root.join(".mcp.json"),
            project_settings: project_config_dir(project_root).join("settings.json"),
            trusted,
        },
        &env_lookup,
    )
}

/// A variable for `${VAR}`: from the environment, or one of the credentials cadre took out of
/// it at start-up. A credential a configuration names is the user's choice to give that
/// server; it becomes a secret of this process, redacted wherever it shows up.
pub fn env_lookup(name: &str) -> Option<String> {
    if let Ok(value) = std::env::var(name) {
        return Some(value);
    }
    let (_, value) = cadre_llm::registry::hidden_credentials()
        .iter()
        .find(|(n, _)| n == name)?;
    cadre_protocol::redact::set_secrets([value.clone()]);
    Some(value.clone())
}

/// Start-up and call timeouts, from the environment where it sets them.
pub fn limits() -> ServerLimits {
    let ms = |var: &str| {
        std::env::var(var)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
    };
    let defaults = ServerLimits::default();
    ServerLimits {
        startup_timeout: ms(MCP_TIMEOUT_VAR).unwrap_or(defaults.startup_timeout),
        call_timeout: ms(MCP_TOOL_TIMEOUT_VAR).unwrap_or(defaults.call_timeout),
    }
}

/// Where servers run and log.
pub fn place(ctx: &HostContext) -> ServerPlace {
    ServerPlace {
        cwd: ctx.cwd.clone(),
        log_dir: Some(ctx.home.root().join("logs").join("mcp")),
    }
}

/// Start the root session's servers: the configured ones and the front end's. The notes of
/// reading the configuration come first in the set's warnings.
pub async fn start(ctx: &HostContext, options: &HostOptions) -> McpSet {
    let mut configured = ctx.mcp.clone();
    configured.add(&options.mcp_servers);
    let mut set = McpSet::start(&configured.configs(), &place(ctx), &limits()).await;
    let mut warnings = configured.notes;
    warnings.append(&mut set.warnings);
    set.warnings = warnings;
    set
}

/// The MCP tools a root gets: all of them, or those `--tools` names (names no server
/// provides are a note: servers can fail to start, which is already a warning).
pub fn root_tools_of(
    tools: &[Arc<McpTool>],
    named: Option<&[String]>,
    warnings: &mut Vec<String>,
) -> Vec<Arc<dyn Tool>> {
    let Some(named) = named else {
        return tools.iter().map(|t| t.clone() as Arc<dyn Tool>).collect();
    };
    for name in named {
        if !tools.iter().any(|t| t.name() == name) {
            warnings.push(format!(
                "note: --tools names {name}, which no running MCP server provides"
            ));
        }
    }
    tools
        .iter()
        .filter(|t| named.iter().any(|n| n == t.name()))
        .map(|t| t.clone() as Arc<dyn Tool>)
        .collect()
}

/// Under `--plan`, a note for each MCP tool `--tools` names that plan mode keeps from the root
/// (it is not annotated read-only).
pub fn plan_notes(tools: &[Arc<McpTool>], named: Option<&[String]>) -> Vec<String> {
    tools
        .iter()
        .filter(|t| t.is_mutating())
        .filter(|t| named.is_some_and(|named| named.iter().any(|n| n == t.name())))
        .map(|t| {
            format!(
                "note: --plan leaves out {}: its server does not annotate it read-only",
                t.name()
            )
        })
        .collect()
}
