//! The MCP servers of one root session: started together, each within the start-up timeout,
//! and shared by the root and its children. A server that does not start is a warning; its
//! tools are absent. Dropping the set stops every server.

use std::sync::Arc;

use futures_util::future::join_all;

use crate::config::McpServerConfig;
use crate::server::{Server, ServerLimits, ServerPlace};
use crate::tool::{McpTool, tools_of};

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
    /// One line per problem (`warning: …`) or note (`note: …`).
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
        for (config, result) in configs.iter().zip(started) {
            let transport = config.transport.kind();
            match result {
                Ok(server) => {
                    let server = Arc::new(server);
                    let (tools, notes) = tools_of(&server);
                    let read_only = tools.iter().filter(|t| t.is_read_only()).count();
                    set.warnings.extend(
                        server
                            .notes
                            .iter()
                            .map(|n| format!("note: MCP server `{}`: {n}", config.name)),
                    );
                    set.warnings
                        .extend(notes.into_iter().map(|n| format!("note: {n}")));
                    set.statuses.push(ServerStatus {
                        name: config.name.clone(),
                        transport,
                        outcome: Ok((tools.len(), read_only)),
                    });
                    set.tools.extend(tools);
                    set.servers.push(server);
                }
                Err(why) => {
                    set.warnings.push(format!(
                        "warning: MCP server `{}` ({transport} {}) did not start: {why}; its \
                         tools are not available",
                        config.name,
                        config.transport.target()
                    ));
                    set.statuses.push(ServerStatus {
                        name: config.name.clone(),
                        transport,
                        outcome: Err(why),
                    });
                }
            }
        }
        set
    }

    /// Every tool of every server that started, server by server.
    pub fn tools(&self) -> &[Arc<McpTool>] {
        &self.tools
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
