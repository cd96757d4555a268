//! The orchestrator: subagent tasks (SPEC O, L, S1). Decisions live in pure modules; effects
//! (files, git, child agents) sit at the edges. See `docs/orchestration.md`.

pub mod artifacts;
pub mod capability;
pub mod lifecycle;
pub mod manager;
pub mod output;
pub mod policy;
pub mod quota;
pub mod settings;
pub mod store;
pub mod target;
pub mod tools;
pub mod worktree;
