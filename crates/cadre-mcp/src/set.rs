//! The MCP servers of one root session: started together, each within the start-up timeout,
//! and shared by the root and its children. A server that does not start is a warning; its
//! tools are absent. Dropping the set stops every server.

use std::sync::Arc;

use cadre_tools::Tool;
use futures_util::future::join_all;

use crate::config::McpServerConfig;
use crate::server::{Server, ServerLimits, ServerPlace};
use crate::shown::{message, server_text};
use crate::tool::{MAX_TOTAL_SPEC_BYTES, McpTool, tools_of};

/// How one server's start went.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// The number of tools, and how many of them are annotated read-only; or why it did not
    /// start.
    pub outcome: Result<(usize, usize), String>,
}

/// The running servers and their tools.
#[derive(Default)]
pub struct McpSet {
    servers: Vec<Arc<Server>>,
    tools: Vec<Arc<McpTool>>,
    /// One line per problem (`warning: …`) or note (`note: …`), fit for a terminal: one line,
    /// bounded, without registered secrets.
    pub warnings: Vec<String>,
    pub statuses: Vec<ServerStatus>,
}

impl McpSet {
    /// Start every server in `configs` concurrently.
    pub async fn start(
        configs: &[McpServerConfig],
        place: &ServerPlace,
        limits: &ServerLimits,
    ) -> McpSet {
        let started = join_all(
            configs
                .iter()
                .map(|config| Server::start(config, place, limits)),
        )
        .await;
        let mut set = McpSet::default();
        let mut bytes = 0;
        for (config, result) in configs.iter().zip(started) {
            let transport = config.transport.kind();
            match result {
                Ok(server) => {
                    let server = Arc::new(server);
                    let (tools, notes) = tools_of(&server);
                    set.warnings.extend(
                        server
                            .notes
                            .iter()
                            .map(|n| format!("note: MCP server `{}`: {n}", config.name)),
                    );
                    set.warnings
                        .extend(notes.into_iter().map(|n| format!("note: {n}")));
                    let mut kept = Vec::new();
                    let mut over = 0;
                    for tool in tools {
                        // Names are unique per server; across servers the rules on server
                        // names keep them apart, and should two still meet, neither replaces
                        // the other: the later is left out.
                        if set
                            .tools
                            .iter()
                            .chain(&kept)
                            .any(|t| t.name() == tool.name())
                        {
                            set.warnings.push(format!(
                                "warning: tool {} of MCP server `{}` is left out: server `{}` \
                                 has a tool of that name",
                                tool.name(),
                                config.name,
                                set.tools
                                    .iter()
                                    .find(|t| t.name() == tool.name())
                                    .map_or(config.name.as_str(), |t| t.server_name())
                            ));
                            continue;
                        }
                        if over > 0 || bytes + tool.spec_bytes() > MAX_TOTAL_SPEC_BYTES {
                            over += 1;
                            continue;
                        }
                        bytes += tool.spec_bytes();
                        kept.push(tool);
                    }
                    if over > 0 {
                        set.warnings.push(format!(
                            "warning: {over} tool(s) of MCP server `{}` are left out: the MCP \
                             servers' tools together pass {} KiB of descriptions and schemas, \
                             which every model request would carry",
                            config.name,
                            MAX_TOTAL_SPEC_BYTES / 1024
                        ));
                    }
                    let read_only = kept.iter().filter(|t| t.is_read_only()).count();
                    set.statuses.push(ServerStatus {
                        name: config.name.clone(),
                        transport,
                        outcome: Ok((kept.len(), read_only)),
                    });
                    set.tools.extend(kept);
                    set.servers.push(server);
                }
                Err(why) => {
                    let why = server_text(&why);
                    set.warnings.push(format!(
                        "warning: MCP server `{}` ({transport} {}) did not start: {why}; its \
                         tools are not available",
                        config.name,
                        config.transport.target()
                    ));
                    set.statuses.push(ServerStatus {
                        name: config.name.clone(),
                        transport,
                        outcome: Err(message(&why)),
                    });
                }
            }
        }
        set.warnings = set.warnings.iter().map(|w| message(w)).collect();
        set
    }

    /// Every tool of every server that started, server by server.
    pub fn tools(&self) -> &[Arc<McpTool>] {
        &self.tools
    }

    /// The process groups of its child servers that still run (a server that exited has
    /// none: its group was ended then).
    pub fn process_groups(&self) -> Vec<i32> {
        self.servers
            .iter()
            .filter_map(|s| s.pgid)
            .filter(|g| crate::server::is_live_group(*g))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}

// The root session's end stops its servers, even where a finished child's tools still hold
// them.
impl Drop for McpSet {
    fn drop(&mut self) {
        for server in &self.servers {
            server.stop();
        }
    }
}
