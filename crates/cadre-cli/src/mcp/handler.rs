//! The MCP server handler, written against rmcp's `ServerHandler` by hand: the tools are the
//! root session's own orchestration tools and their `ToolSpec`s, so the schemas a client sees
//! are the ones the built-in tools have.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, InitializeRequestParams, InitializeResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;
use tokio::sync::OnceCell;

use super::config::Setup;
use super::session::{Served, Sessions};

/// What a handler serves from: a root session, built when first needed.
#[derive(Clone)]
pub struct CadreMcp {
    /// The setup new sessions are built from (`None`: the session is given, stdio).
    setup: Option<Arc<Setup>>,
    /// This MCP session's own root session (a client that initialised).
    own: Arc<OnceCell<Served>>,
    /// The process's root session, for requests that belong to no MCP session (stateless
    /// HTTP requests of the 2026-07-28 protocol).
    process: Arc<OnceCell<Served>>,
    /// Whether this handler serves an initialised MCP session.
    session_mode: Arc<AtomicBool>,
    /// Where a session built here is listed, so the server can close it when it stops.
    sessions: Option<Sessions>,
}

impl CadreMcp {
    /// A handler whose connection is its one root session (stdio), built from `setup` when
    /// first needed or by [`CadreMcp::start_session`].
    pub fn single(setup: Arc<Setup>) -> CadreMcp {
        let cell = Arc::new(OnceCell::new());
        CadreMcp {
            setup: Some(setup),
            own: cell.clone(),
            process: cell,
            session_mode: Arc::new(AtomicBool::new(false)),
            sessions: None,
        }
    }

    /// Build the root session now (in the background of the handshake), unless it is.
    pub async fn start_session(&self) -> Result<(), McpError> {
        self.served().await.map(|_| ())
    }

    /// The root session, if it has been built.
    pub fn started_session(&self) -> Option<Served> {
        self.own.get().cloned()
    }

    /// A handler that builds its root session when first needed (an HTTP MCP session);
    /// `process` is shared by every handler of the server.
    pub fn lazy(setup: Arc<Setup>, process: Arc<OnceCell<Served>>, sessions: Sessions) -> CadreMcp {
        CadreMcp {
            setup: Some(setup),
            own: Arc::new(OnceCell::new()),
            process,
            session_mode: Arc::new(AtomicBool::new(false)),
            sessions: Some(sessions),
        }
    }

    /// The tools' specs: the session's own, or — while it is still being built (its MCP
    /// servers starting) or not built yet — the same specs made from the setup, so listing
    /// the tools never waits for the servers.
    async fn tool_specs(&self) -> Result<Vec<cadre_protocol::ToolSpec>, McpError> {
        let own = self.session_mode.load(Ordering::SeqCst);
        let cell = if own { &self.own } else { &self.process };
        if let Some(served) = cell.get() {
            return Ok(served
                .host()
                .orchestration_tools()
                .iter()
                .map(|t| t.spec())
                .collect());
        }
        let Some(setup) = &self.setup else {
            return Err(McpError::internal_error("the session has ended", None));
        };
        let ctx = &setup.ctx;
        cadre_host::root_tool_specs(
            &ctx.home,
            &ctx.cwd,
            ctx.trust.clone(),
            ctx.settings.subagents.as_ref(),
            setup.options.client_is_parent,
        )
        .map_err(|e| McpError::internal_error(format!("cannot list the tools: {e:#}"), None))
    }

    /// The root session this request is served by.
    async fn served(&self) -> Result<Served, McpError> {
        let own = self.session_mode.load(Ordering::SeqCst);
        let cell = if own { &self.own } else { &self.process };
        let setup = self.setup.clone();
        let sessions = self.sessions.clone();
        cell.get_or_try_init(|| async move {
            let Some(setup) = setup else {
                return Err(McpError::internal_error("the session has ended", None));
            };
            let served = Served::start(&setup).await.map_err(|e| {
                McpError::internal_error(format!("cannot start a cadre session: {e:#}"), None)
            })?;
            if let Some(sessions) = sessions.filter(|_| own) {
                let mut list = sessions
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                list.retain(|s| s.upgrade().is_some());
                list.push(served.downgrade());
            }
            Ok(served)
        })
        .await
        .cloned()
    }
}

impl ServerHandler for CadreMcp {
    fn get_info(&self) -> ServerConfig {
        // Tools and resources only. The tasks extension (SEP-2663) is not advertised: a
        // background `Agent` call and `TaskOutput` give the same thing to every client.
        let capabilities: ServerCapabilities =
            serde_json::from_value(json!({"tools": {}, "resources": {}})).unwrap_or_default();
        let mut info = InitializeResult::new(capabilities);
        info.server_info = rmcp::model::Implementation::new("cadre", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(INSTRUCTIONS.into());
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        // An initialised client has a session of its own (over HTTP, one per MCP session).
        self.session_mode.store(true, Ordering::SeqCst);
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools: Vec<serde_json::Value> = self
            .tool_specs()
            .await?
            .iter()
            .map(super::call::tool_json)
            .collect();
        serde_json::from_value(json!({ "resultType": "complete", "tools": tools }))
            .map_err(|e| McpError::internal_error(format!("tool list: {e}"), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let served = self.served().await?;
        let result = super::call::call(&served, request, context).await?;
        Ok(CallToolResponse::Complete(result))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let served = self.served().await?;
        super::resources::list(served.host())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        super::resources::templates()
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let served = self.served().await?;
        super::resources::read(served.host(), &request.uri).map(ReadResourceResponse::Complete)
    }
}

const INSTRUCTIONS: &str = "cadre runs supervised subagents. `Agent` launches one task (or \
`tasks` in parallel) with a role from the roster (resource cadre://roster) and returns its \
result with an execution receipt; with run_in_background it returns the task id at once, and \
TaskOutput with block=true waits for the result. SendMessage continues a task, TaskStop stops \
one. Each task's record, output and session are resources (cadre://tasks/<id>).";
