//! The MCP client (SPEC I7): the tools of configured MCP servers, as cadre tools named
//! `mcp__<server>__<tool>`.
//!
//! `config` is the `mcpServers` format, `expand` its `${VAR}` expansion, `names` the name
//! rules, `sources` where configurations come from (and trust), `server` one running server,
//! `tool` its tools as cadre tools, `result` what a call's result becomes, `set` the
//! servers of one root session, and `shown` what of all that may reach the terminal.

pub mod cause;
pub mod config;
pub mod expand;
pub mod log;
pub mod names;
pub mod result;
pub mod server;
pub mod set;
pub mod shown;
pub mod sources;
pub mod tool;

pub use config::{McpServerConfig, McpTransport, parse_mcp_json, parse_servers};
pub use names::is_mcp_tool;
pub use server::{ServerLimits, ServerPlace, stop_all};
pub use set::{McpSet, ServerStatus};
pub use sources::{Configured, ConfiguredServer, SourceFiles};
pub use tool::McpTool;
