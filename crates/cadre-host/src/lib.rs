//! The host layer: builds a root session from a front end's options and serves it.
//!
//! Every front end — print, JSON and RPC modes today; MCP, ACP and the interactive mode next —
//! is a thin adapter over a [`Host`]: it turns its input into host operations and host events
//! into its output. What a root session is made of (home, trust, settings, models, roles,
//! subagents, tools, system prompt, session file) and how it stays alive for its tasks'
//! notifications is decided here, once.

pub mod bash;
pub mod budget;
mod context;
mod error;
pub mod export;
pub mod mcp;
mod options;
mod orchestration;
mod root;
mod service;
mod session_open;
mod signals;
mod task_view;
mod tasks;
pub mod trace;
pub mod views;

pub use cadre_mcp::{McpServerConfig, McpTransport};
pub use context::{
    HostContext, IDLE_TIMEOUT_VAR, RETRY_BASE_VAR, RuntimeKey, hide_key_files, parse_thinking,
    pick_model,
};
pub use error::HostError;
pub use options::{Confirmer, HostOptions, SessionChoice};
pub use orchestration::{ORCHESTRATION_TOOLS, root_tool_specs};
pub use service::{Delivery, Host, HostEvent, HostState, InterruptHandle, StartedHost, Switched};
pub use session_open::ForkPoint;
pub use signals::{Signals, interrupt_on_signal, note_live_frame, on_signal, signal_name};
pub use task_view::SessionTasks;
pub use tasks::apply_task;
