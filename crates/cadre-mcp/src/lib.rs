//! The MCP client (SPEC I7): the tools of configured MCP servers, as cadre tools named
//! `mcp__<server>__<tool>`.

pub mod config;

pub use config::{McpServerConfig, McpTransport, parse_mcp_json, parse_servers};
