//! The agent and its run loop.

mod compact;

use std::path::Path;
use std::sync::Arc;

use cadre_llm::{CompletionRequest, ErrorKind};
use cadre_protocol::{
    AgentEvent, AssistantMessage, Message, SessionEntryKind, StopReason, ThinkingLevel, ToolCall,
    ToolResultMessage, ToolSpec, Usage,
};
use tokio_util::sync::CancellationToken;

use super::controller::{AgentController, Shared};
use super::emit::{Emitter, EventDetail};
use super::repair::unexecuted_result;
use super::stream::stream_reply;
use super::tools::{OPERATION_ABORTED, ToolEnv, execute_tool_calls, refuse_all};
use super::{AgentConfig, AgentError, RunOutcome, ToolGate};
use crate::session::SessionWriter;

/// One conversation with a model and its tools.
pub struct Agent {
    config: AgentConfig,
    /// Built once; every request shares them.
    tool_specs: Arc<[ToolSpec]>,
    messages: Vec<Message>,
    /// The session entry id of each message (`None`: not in the session file), for
    /// compaction's `firstKeptEntryId`.
    entry_ids: Vec<Option<String>>,
    /// The `details` of the compaction the history starts from (file lists carried over).
    compaction_details: Option<serde_json::Value>,
    /// How many messages the history held right after its last compaction (or when it was
    /// loaded ending in one): compacting again with nothing added is refused.
    compacted_len: Option<usize>,
    session: Option<SessionWriter>,
    shared: Arc<Shared>,
    emitter: Emitter,
    usage: Usage,
    gate: Option<Arc<dyn ToolGate>>,
}

/// Resets the running flag and cancels the run's token when a run ends, also when the run's
/// future is dropped half-way (tools still running are then told to stop).
struct RunGuard<'a> {
    shared: &'a Shared,
    token: CancellationToken,
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        self.token.cancel();
        self.shared.end_run();
    }
}

impl Agent {
    /// An agent continuing `history` (empty for a new conversation), which is assumed to be in
    /// `session` already. Tool calls the history left unanswered (a crash, an abort) are
    /// answered with an error result first, so the next request is valid; results added at
    /// the end are also written to the session. A new session file gets the model and
    /// thinking level recorded, as Pi does, so a resume can restore them.
    pub fn new(
        config: AgentConfig,
        history: Vec<Message>,
        session: Option<SessionWriter>,
    ) -> Agent {
        let emitter = Emitter::new(config.events.clone());
        let mut session = session;
        if let Some(writer) = session.as_mut()
            && writer.leaf_id().is_none()
        {
            writer.append(model_change(&config.model));
            writer.append(thinking_change(config.thinking));
        }
        let compact::StartingHistory {
            messages,
            entry_ids,
            compaction_details,
        } = compact::starting_history(history, session.as_mut());
        let compacted_len =
            crate::compaction::plan::nothing_new_since_summary(&messages).then_some(messages.len());
        let mut usage = Usage::default();
        for m in &messages {
            if let Message::Assistant(a) = m {
                usage.add(&a.usage);
            }
        }
        Agent {
            tool_specs: config.tools.specs(),
            shared: Shared::new(emitter.clone()),
            config,
            messages,
            entry_ids,
            compaction_details,
            compacted_len,
            session,
            emitter,
            usage,
            gate: None,
        }
    }

    pub fn controller(&self) -> AgentController {
        AgentController {
            shared: self.shared.clone(),
        }
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Usage summed over every assistant message of the conversation (history included).
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The session file's header, when there is a session file.
    pub fn session_header(&self) -> Option<&cadre_protocol::SessionHeader> {
        self.session.as_ref().map(SessionWriter::header)
    }

    pub fn session_path(&self) -> Option<&Path> {
        self.session.as_ref().map(SessionWriter::path)
    }

    /// The session writer, e.g. to record a model change.
    pub fn session_mut(&mut self) -> Option<&mut SessionWriter> {
        self.session.as_mut()
    }

    /// Use another model from the next request on (recorded in the session when it changes).
    pub fn set_model(&mut self, model: cadre_llm::Model) {
        if (model.provider != self.config.model.provider || model.id != self.config.model.id)
            && let Some(writer) = self.session.as_mut()
        {
            writer.append(model_change(&model));
        }
        self.config.model = model;
    }

    /// Use another thinking level from the next request on (recorded when it changes).
    pub fn set_thinking(&mut self, level: ThinkingLevel) {
        if level != self.config.thinking
            && let Some(writer) = self.session.as_mut()
        {
            writer.append(thinking_change(level));
        }
        self.config.thinking = level;
    }

    /// Check every tool call at dispatch with `gate` (see [`ToolGate`]).
    pub fn set_tool_gate(&mut self, gate: Arc<dyn ToolGate>) {
        self.gate = Some(gate);
    }

    /// Which events this agent builds (see [`EventDetail`]); every event by default.
    pub fn set_event_detail(&mut self, detail: EventDetail) {
        self.emitter = self.emitter.clone().with_detail(detail);
    }

    /// Use another tool set from the next request on (e.g. orchestration tools rebuilt for a
    /// new model).
    pub fn set_tools(&mut self, tools: cadre_tools::ToolRegistry) {
        self.tool_specs = tools.specs();
        self.config.tools = tools;
    }

    /// Add a message to the conversation and the session without running the model and
    /// without events (Pi's `bashExecution` from the RPC `bash` command reaches the model
    /// with the next prompt).
    pub fn append_silently(&mut self, mut message: Message) {
        cadre_protocol::redact::redact_message(&mut message);
        self.record(message);
    }

    pub fn set_system_prompt(&mut self, system_prompt: String) {
        self.config.system_prompt = system_prompt;
    }

    /// Write out and sync the session file.
    pub async fn close(self) -> Result<(), AgentError> {
        match self.session {
            Some(writer) => Ok(writer.close().await?),
            None => Ok(()),
        }
    }

    /// Send a user prompt and run until the model stops.
    pub async fn prompt(&mut self, text: impl Into<String>) -> Result<RunOutcome, AgentError> {
        self.run(vec![Message::user(text)]).await
    }

    /// Send any messages (e.g. a custom notification) and run until the model stops.
    pub async fn prompt_messages(
        &mut self,
        messages: Vec<Message>,
    ) -> Result<RunOutcome, AgentError> {
        self.run(messages).await
    }

    /// Run on queued steering or follow-up messages without a new prompt.
    pub async fn run_queued(&mut self) -> Result<RunOutcome, AgentError> {
        if !self.shared.has_queued() {
            return Err(AgentError::NothingQueued);
        }
        self.run(Vec::new()).await
    }

    /// Emit start/end for a message that arrives whole, then record it.
    fn add(&mut self, mut message: Message) {
        cadre_protocol::redact::redact_message(&mut message);
        self.emitter.emit_with(|| AgentEvent::MessageStart {
            message: message.clone(),
        });
        self.emitter.emit_with(|| AgentEvent::MessageEnd {
            message: message.clone(),
        });
        self.record(message);
    }

    /// Append to the history and the session file. The message comes redacted (S5: `add`
    /// and the reply path redact before emitting); the session file also gets signed thinking
    /// redacted, which the history must send back unchanged.
    fn record(&mut self, message: Message) {
        let id = self.session.as_mut().map(|writer| {
            let stored = cadre_protocol::redact::redacted_for_storage(&message);
            writer.append_message(stored.as_ref().unwrap_or(&message))
        });
        self.messages.push(message);
        self.entry_ids.push(id);
    }

    async fn run(&mut self, prompts: Vec<Message>) -> Result<RunOutcome, AgentError> {
        let token = self.shared.begin_run();
        let shared = self.shared.clone();
        let _guard = RunGuard {
            shared: &shared,
            token: token.clone(),
        };
        let first_index = self.messages.len();
        self.emitter.agent_start(first_index);
        self.emitter.emit_boundary_with(|| AgentEvent::TurnStart);

        let had_prompt = !prompts.is_empty();
        for message in prompts {
            self.add(message);
        }
        let mut pending: Vec<Message> = steering_messages(&self.shared);
        if !had_prompt && pending.is_empty() {
            pending.extend(self.shared.take_follow_up().into_iter().map(Message::user));
        }

        // One compact-and-retry per context overflow, until a request succeeds (Pi's rule).
        let mut overflow_retried = false;
        let mut outcome = RunOutcome {
            final_message: None,
            stop_reason: StopReason::Stop,
            error: None,
            failure: None,
            turns: 0,
            usage: Usage::default(),
        };
        'run: loop {
            let mut more_tool_calls = true;
            while more_tool_calls || !pending.is_empty() {
                if outcome.turns > 0 {
                    self.emitter.emit_boundary_with(|| AgentEvent::TurnStart);
                }
                for message in pending.drain(..) {
                    self.add(message);
                }
                outcome.turns += 1;

                let mut retrying = false;
                let mut failure;
                let mut reply = loop {
                    // A retry after an overflow comes right after its own compaction.
                    if !retrying
                        && let Some(kept) = self
                            .compact_if_over_threshold(&token, &mut outcome.usage)
                            .await
                    {
                        self.emitter.compacted(kept);
                    }
                    let (reply, kind) = self.request_reply(&token).await;
                    failure = kind;
                    if kind != Some(ErrorKind::ContextOverflow) {
                        if kind.is_none() {
                            overflow_retried = false;
                        }
                        break reply;
                    }
                    match self
                        .recover_from_overflow(&token, &mut outcome.usage, &mut overflow_retried)
                        .await
                    {
                        Some(kept) => self.emitter.compacted(kept),
                        None => break reply,
                    }
                    retrying = true;
                };
                cadre_protocol::redact::redact_assistant(&mut reply);
                outcome.usage.add(&reply.usage);
                self.usage.add(&reply.usage);
                self.record(Message::Assistant(reply.clone()));
                outcome.stop_reason = reply.stop_reason;
                let calls: Vec<ToolCall> = reply.tool_calls().cloned().collect();

                if matches!(reply.stop_reason, StopReason::Error | StopReason::Aborted) {
                    // Calls of a failed or aborted reply never run, but each gets a result so
                    // the history stays valid for the next prompt.
                    let reason = match reply.stop_reason {
                        StopReason::Aborted => OPERATION_ABORTED,
                        _ => "Tool call was not executed: the model response failed.",
                    };
                    let results: Vec<ToolResultMessage> =
                        calls.iter().map(|c| unexecuted_result(c, reason)).collect();
                    self.finish_turn(&reply, results);
                    outcome.error = Some(
                        reply
                            .error_message
                            .clone()
                            .unwrap_or_else(|| "the model request failed".into()),
                    );
                    outcome.failure = Some(failure.unwrap_or(match reply.stop_reason {
                        StopReason::Aborted => ErrorKind::Aborted,
                        _ => ErrorKind::Fatal,
                    }));
                    outcome.final_message = Some(reply);
                    break 'run;
                }

                let results = if calls.is_empty() {
                    Vec::new()
                } else if reply.stop_reason == StopReason::Length {
                    refuse_all(&calls, &self.emitter, truncated_call_reason)
                } else {
                    let env = ToolEnv {
                        registry: &self.config.tools,
                        gate: self.gate.as_deref(),
                        cwd: &self.config.cwd,
                        artifacts_dir: &self.config.artifacts_dir,
                        emitter: &self.emitter,
                    };
                    execute_tool_calls(&calls, &env, &token).await
                };
                self.finish_turn(&reply, results);
                outcome.final_message = Some(reply);
                if token.is_cancelled() {
                    outcome.stop_reason = StopReason::Aborted;
                    outcome.error = Some(OPERATION_ABORTED.into());
                    outcome.failure = Some(ErrorKind::Aborted);
                    break 'run;
                }
                more_tool_calls = !calls.is_empty();
                pending = steering_messages(&self.shared);
            }
            let follow_up = self.shared.take_follow_up();
            if follow_up.is_empty() {
                break;
            }
            pending.extend(follow_up.into_iter().map(Message::user));
        }

        self.emitter.agent_end(&self.messages);
        if let Some(writer) = &self.session {
            writer.flush().await?;
        }
        Ok(outcome)
    }

    /// Record the tool results (with their message events) and emit `turn_end`.
    fn finish_turn(&mut self, reply: &AssistantMessage, results: Vec<ToolResultMessage>) {
        for result in &results {
            self.add(Message::ToolResult(result.clone()));
        }
        self.emitter.emit_boundary_with(|| AgentEvent::TurnEnd {
            message: Message::Assistant(reply.clone()),
            tool_results: results,
        });
    }

    async fn request_reply(
        &self,
        token: &CancellationToken,
    ) -> (AssistantMessage, Option<ErrorKind>) {
        let request = CompletionRequest {
            model: self.config.model.clone(),
            system_prompt: self.config.system_prompt.clone(),
            messages: self.messages.clone(),
            tools: Arc::clone(&self.tool_specs),
            thinking: self.config.thinking,
        };
        stream_reply(
            self.config.provider.as_ref(),
            &self.config.model,
            request,
            &self.messages,
            token,
            &self.emitter,
        )
        .await
    }
}

fn model_change(model: &cadre_llm::Model) -> SessionEntryKind {
    SessionEntryKind::ModelChange {
        provider: model.provider.clone(),
        model_id: model.id.clone(),
    }
}

fn thinking_change(level: ThinkingLevel) -> SessionEntryKind {
    SessionEntryKind::ThinkingLevelChange {
        thinking_level: level.as_str().to_string(),
    }
}

fn steering_messages(shared: &Shared) -> Vec<Message> {
    shared.take_steering()
}

/// Pi's answer to tool calls of a reply cut off by the output token limit.
fn truncated_call_reason(call: &ToolCall) -> String {
    format!(
        "Tool call \"{}\" was not executed: the response hit the output token limit, so its \
         arguments may be truncated. Re-issue the tool call with complete arguments.",
        call.name
    )
}
