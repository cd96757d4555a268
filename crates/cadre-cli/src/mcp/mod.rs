//! `cadre mcp`: cadre's subagents served to an MCP client (SPEC I3).

use std::process::ExitCode;

use crate::args::McpArgs;

pub async fn run(_args: McpArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("cadre mcp is not built yet")
}
