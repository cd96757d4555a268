//! End-to-end tests of the `cadre` binary against the scripted fake model server.
//!
//! One test binary (modules under `tests/cli/`) keeps link time down. Every test runs the real
//! binary in a temporary project with its own CADRE_HOME and HOME, so nothing on the machine
//! leaks in, and with a hang guard so a stuck run fails instead of blocking the suite.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "cli/harness.rs"]
mod harness;

#[path = "cli/abort.rs"]
mod abort;
#[path = "cli/acp.rs"]
mod acp;
#[path = "cli/acp_hostile.rs"]
mod acp_hostile;
#[path = "cli/agent_corpus.rs"]
mod agent_corpus;
#[path = "cli/bash_allow.rs"]
mod bash_allow;
#[path = "cli/budgets.rs"]
mod budgets;
#[path = "cli/budgets_attack.rs"]
mod budgets_attack;
#[path = "cli/compaction_pi.rs"]
mod compaction_pi;
#[path = "cli/config.rs"]
mod config;
#[path = "cli/conversation.rs"]
mod conversation;
#[path = "cli/crash.rs"]
mod crash;
#[path = "cli/errors.rs"]
mod errors;
#[path = "cli/faults.rs"]
mod faults;
#[path = "cli/hostile_repo.rs"]
mod hostile_repo;
#[path = "cli/interactive.rs"]
mod interactive;
#[path = "cli/json_mode.rs"]
mod json_mode;
#[path = "cli/live_view.rs"]
mod live_view;
#[path = "cli/manage.rs"]
mod manage;
#[path = "cli/mcp_client.rs"]
mod mcp_client;
#[path = "cli/mcp_server.rs"]
mod mcp_server;
#[path = "cli/misc.rs"]
mod misc;
#[path = "cli/model_alias.rs"]
mod model_alias;
#[path = "cli/model_catalog.rs"]
mod model_catalog;
#[path = "cli/model_input.rs"]
mod model_input;
#[path = "cli/openai_responses.rs"]
mod openai_responses;
#[path = "cli/orchestration.rs"]
mod orchestration;
#[path = "cli/pi_args.rs"]
mod pi_args;
#[path = "cli/pi_conformance.rs"]
mod pi_conformance;
#[path = "cli/pi_custom_messages.rs"]
mod pi_custom_messages;
#[path = "cli/pi_shapes.rs"]
mod pi_shapes;
#[path = "cli/prompt.rs"]
mod prompt;
#[path = "cli/readonly_child.rs"]
mod readonly_child;
#[path = "cli/review_gate.rs"]
mod review_gate;
#[path = "cli/rpc.rs"]
mod rpc;
#[path = "cli/rpc_pi_conformance.rs"]
mod rpc_pi_conformance;
#[path = "cli/sandbox.rs"]
mod sandbox;
#[path = "cli/sandbox_layers.rs"]
mod sandbox_layers;
#[path = "cli/secrets.rs"]
mod secrets;
#[path = "cli/sessions.rs"]
mod sessions;
#[path = "cli/supervise.rs"]
mod supervise;
#[path = "cli/trace.rs"]
mod trace;
#[path = "cli/ux.rs"]
mod ux;
