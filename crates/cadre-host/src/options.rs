//! What a front end asks of the host: the options of a root session (the run flags).

use std::path::PathBuf;
use std::sync::Arc;

use cadre_core::orchestrator::manager::LaunchConfirmer;

/// Which session file a root session writes to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SessionChoice {
    /// A new session in the session directory of the working directory.
    #[default]
    New,
    /// The newest session of the working directory, or a new one when there is none (`-c`).
    Continue,
    /// This file: continued if it holds a session, created if it is missing or empty.
    Path(PathBuf),
    /// `--session ARG`: a path, or the start of a session id (Pi's rules: this project's
    /// sessions first, then every project's); an id that matches nothing is an error.
    Named(String),
    /// Nothing is written (`--no-session`).
    None,
}

/// The options of a root session.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// `provider/id` (`--model`); `None`: the continued session's model, else the default.
    pub model: Option<String>,
    /// `--thinking`; `None`: the continued session's level, else the settings' default.
    pub thinking: Option<String>,
    /// `--tools`: the active tools; `None` = all of them.
    pub tools: Option<Vec<String>>,
    /// `--system-prompt`: replaces the base system prompt.
    pub system_prompt: Option<String>,
    /// `--append-system-prompt`, in order.
    pub append_system_prompt: Vec<String>,
    pub session: SessionChoice,
    /// `--session-dir`: where sessions are stored and looked up instead of the default.
    pub session_dir: Option<PathBuf>,
    /// `--trust`: trust the project for this run.
    pub trust: bool,
    /// `--plan` (S6).
    pub plan: bool,
    /// The root's `Agent` calls run in the background unless they say otherwise (RPC and
    /// interactive front ends).
    pub background_by_default: bool,
    /// Whether `message_update` events (one per streamed delta) are built. Front ends that
    /// only show whole messages turn them off: each copies the reply so far.
    pub stream_updates: bool,
    /// The front end's client is the parent (`cadre mcp`): it calls the orchestration tools
    /// itself and reads its tasks' results, so a task notice is recorded in the session rather
    /// than answered by a run of the root model.
    pub client_is_parent: bool,
    /// MCP servers the front end adds (e.g. an ACP editor's), started with the configured
    /// ones; a name that is also configured replaces the configured server.
    pub mcp_servers: Vec<cadre_mcp::McpServerConfig>,
    /// Who confirms launches under `subagents.authorization: ask` (D3): a front end that can
    /// ask the person (an ACP editor). `None`: such launches are refused.
    pub confirm: Option<Confirmer>,
    /// A new session's file is written at its first message, not when the session opens (the
    /// interactive mode, as Pi: opening and leaving leaves no empty session for `--continue`
    /// to pick). A file named by `--session` is always created at once.
    pub session_file_when_used: bool,
    /// `--max-cost-usd` and `--max-tokens`: caps for the whole root session, its subagents
    /// included; each meter set here overrides the `budgets` settings.
    pub budget: cadre_core::budget::Limits,
}

/// A [`LaunchConfirmer`] in [`HostOptions`] (which are `Debug`).
#[derive(Clone)]
pub struct Confirmer(pub Arc<dyn LaunchConfirmer>);

impl std::fmt::Debug for Confirmer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Confirmer")
    }
}
