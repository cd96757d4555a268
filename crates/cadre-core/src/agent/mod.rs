//! The agent loop: request → stream → run tool calls → feed results, until the model stops.
//!
//! An [`Agent`] owns one conversation (and optionally its session file). `prompt` runs turns
//! until the model answers without tool calls and no follow-up is queued, emitting Pi's
//! [`AgentEvent`]s on the configured channel. An [`AgentController`] steers, queues follow-ups
//! and aborts from other tasks while a run is in progress.
//!
//! Invariants the loop keeps, whatever happens (provider failure, abort, unknown tools):
//! every assistant message is recorded (a failed or aborted one with its stop reason and
//! error), and every tool call in it gets exactly one tool result, in call order, before the
//! next model request. Provider failures are outcomes ([`RunOutcome::error`]), not `Err`.
//!
//! Tool calls of one turn run as separate tokio tasks. Read-only tools run concurrently with
//! everything. A mutating call with a `mutation_target` waits for earlier mutating calls on the
//! same target and for earlier untargeted mutating calls; a mutating call without a target
//! (bash) waits for every earlier mutating call and every later mutating call waits for it.
//! Reads are not ordered against writes: calls issued in one turn are independent by contract.

mod controller;
mod emit;
mod partial;
mod repair;
mod run;
mod stream;
mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use cadre_llm::{Model, Provider};
use cadre_protocol::{AgentEvent, AssistantMessage, StopReason, ThinkingLevel, Usage};
use cadre_tools::ToolRegistry;
use tokio::sync::mpsc;

pub use controller::{AgentController, QueueMode};
pub use emit::EventDetail;
pub use repair::repair_history;
pub use run::Agent;

use crate::session::SessionError;

/// A check applied to every tool call at dispatch, before the tool is looked up: allowlists,
/// read-only enforcement, tool budgets. It sees every call in call order (so it can count
/// them) and refuses one by returning the message the model gets as the call's error result.
///
/// A call's arguments are normalised before the gate sees them (`Args::normalize`: a
/// JSON-encoded object becomes the object), and the tool runs with exactly the arguments the
/// gate checked. A call whose arguments cannot be read at all is refused before any check and
/// reported with [`ToolGate::on_unreadable`] instead.
pub trait ToolGate: Send + Sync {
    fn check(&self, call: &cadre_protocol::ToolCall) -> Option<String>;

    /// A call refused without a check because its arguments are not one readable JSON object;
    /// it never runs. A gate that counts calls counts it here.
    fn on_unreadable(&self, _call: &cadre_protocol::ToolCall) {}
}

/// Everything an agent needs to run.
#[derive(Clone)]
pub struct AgentConfig {
    pub provider: Arc<dyn Provider>,
    pub model: Model,
    pub thinking: ThinkingLevel,
    pub system_prompt: String,
    pub tools: ToolRegistry,
    pub cwd: PathBuf,
    pub artifacts_dir: PathBuf,
    /// Where events go; `None` skips building them (no per-delta copies of the message).
    pub events: Option<mpsc::UnboundedSender<AgentEvent>>,
    /// When and how the conversation is compacted (Pi's `compaction` settings; the default is
    /// Pi's).
    pub compaction: crate::compaction::CompactionSettings,
}

/// How one run (a prompt and everything it led to) ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// The last assistant message of the run, whatever its stop reason.
    pub final_message: Option<AssistantMessage>,
    /// `aborted` when the run was aborted (even if the abort hit a tool batch), otherwise the
    /// final message's stop reason.
    pub stop_reason: StopReason,
    /// Set when the run ended on a provider failure or an abort.
    pub error: Option<String>,
    /// What kind of failure ended the run (with `error`): lets a supervisor tell a budget's
    /// refusal or an abort from a provider failure without reading the text.
    pub failure: Option<cadre_llm::ErrorKind>,
    /// Model requests made in this run.
    pub turns: u32,
    /// Usage summed over this run's assistant messages.
    pub usage: Usage,
}

/// A broken runtime (not a provider failure, which is a [`RunOutcome`]).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("nothing is queued to run")]
    NothingQueued,
    #[error(transparent)]
    Session(#[from] SessionError),
}
