//! Integration tests of cadre-core, one binary: the agent loop and the session store, compaction,
//! the task manager end to end (launches, notices, continuations, reviews, worktrees, the store
//! under `kill -9`) and verified handoff, and snapshots of every text the orchestrator writes for
//! a model (`texts`, `texts_run`; the `.snap` files under `snapshots/`). The model is
//! `cadre_testkit::ScriptedProvider` in process, or the fake server behind the real HTTP clients
//! where the wire matters.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod agent_loop;
mod compaction;
mod handoff_e2e;
mod orchestrator_bash_allow;
mod orchestrator_budget;
mod orchestrator_budget_attack;
mod orchestrator_manager;
mod orchestrator_review;
mod orchestrator_store;
mod orchestrator_worktree;
mod session_store;
mod texts;
mod texts_run;
