//! The cadre agent runtime: the agent loop, the session store and the host configuration.
//!
//! The core never prints: it emits [`cadre_protocol::AgentEvent`]s that front ends render.

pub mod agent;
pub mod budget;
pub mod compaction;
pub mod config;
pub mod context;
pub mod handoff;
pub mod input;
pub mod orchestrator;
pub mod prompt;
pub mod roles;
pub mod session;
