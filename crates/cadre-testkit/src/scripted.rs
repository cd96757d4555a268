//! A scripted model in process: [`ScriptedProvider`] implements `cadre_llm::Provider` without
//! HTTP, for tests that drive the agent loop or the task manager and care about what the model
//! is asked and what it answers, not about a wire format (for those, see [`crate::FakeServer`]).
//!
//! A test gives a handler that computes the reply from each request (routing on conversation
//! content: the first user message, the number of turns, the latest result). The reply is either
//! a [`Reply`] — text and tool calls delivered as one finished message, or a failure, a hang, a
//! gate — or a list of [`Step`]s that stream events one by one. Every request is recorded, and
//! checked as a provider would check it: each tool call answered by the tool results that follow
//! its assistant message ([`ScriptedProvider::assert_valid`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cadre_llm::{
    Api, Compat, CompletionRequest, LlmError, Model, ModelCost, Provider, StreamEvent,
};
use cadre_protocol::{
    AssistantMessage, AssistantMessageEvent, ContentBlock, Message, StopReason, ToolCall, Usage,
};
use serde_json::Value;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// A model on the `fake` provider with id and name `id`: text and images in, a 100,000-token
/// window, no reasoning, no price.
pub fn model(id: &str) -> Model {
    Model {
        provider: "fake".into(),
        id: id.into(),
        name: id.into(),
        api: Api::AnthropicMessages,
        base_url: String::new(),
        api_key: None,
        headers: Default::default(),
        reasoning: false,
        thinking_level_map: Default::default(),
        input: vec!["text".into(), "image".into()],
        context_window: 100_000,
        max_tokens: 1000,
        cost: ModelCost::default(),
        compat: Compat::default(),
    }
}

/// One step of a streamed reply.
#[allow(clippy::large_enum_variant)]
pub enum Step {
    /// Send this event.
    Send(StreamEvent),
    /// Signal the test that the stream is under way.
    Notify(Arc<Notify>),
    /// Wait for this before going on; a request cancelled meanwhile ends the stream here, without
    /// a terminal event.
    Wait(Arc<Notify>),
    /// Never finish; ignore cancellation too (the loop must not depend on the provider).
    Hang,
    /// Close the stream without a terminal event.
    Close,
}

/// What the scripted model answers to one request, delivered as one finished message.
#[derive(Default, Clone)]
pub struct Reply {
    pub text: String,
    /// Tool calls (name, arguments); their ids are made unique within the process.
    pub calls: Vec<(String, Value)>,
    /// End the stream without a terminal event: a failed reply.
    pub fail: bool,
    /// Never answer (until the request is abandoned).
    pub hang: bool,
    /// Signalled when the request arrives.
    pub started: Option<Arc<Notify>>,
    /// Wait for this before answering.
    pub gate: Option<Arc<Notify>>,
}

/// A reply of `t` alone.
pub fn text(t: &str) -> Reply {
    Reply {
        text: t.into(),
        ..Reply::default()
    }
}

/// A reply of one tool call.
pub fn call(name: &str, args: Value) -> Reply {
    Reply {
        calls: vec![(name.into(), args)],
        ..Reply::default()
    }
}

/// A reply whose stream ends without its terminal event.
pub fn fail() -> Reply {
    Reply {
        fail: true,
        ..Reply::default()
    }
}

/// A reply that never comes; `started` is signalled when the request arrives.
pub fn hang(started: &Arc<Notify>) -> Reply {
    Reply {
        hang: true,
        started: Some(started.clone()),
        ..Reply::default()
    }
}

impl From<Reply> for Vec<Step> {
    fn from(reply: Reply) -> Self {
        let mut steps = Vec::new();
        if let Some(n) = reply.started {
            steps.push(Step::Notify(n));
        }
        if let Some(g) = reply.gate {
            steps.push(Step::Wait(g));
        }
        if reply.hang {
            // A stream kept open with nothing sent, until its receiver goes.
            return steps;
        }
        if reply.fail {
            steps.push(Step::Close);
            return steps;
        }
        let mut content = Vec::new();
        if !reply.text.is_empty() {
            content.push(ContentBlock::text(reply.text));
        }
        for (i, (name, args)) in reply.calls.iter().enumerate() {
            content.push(ContentBlock::ToolCall(ToolCall {
                id: format!("call-{}-{i}", next_id()),
                name: name.clone(),
                arguments: args.clone(),
            }));
        }
        let stop = if reply.calls.is_empty() {
            StopReason::Stop
        } else {
            StopReason::ToolUse
        };
        steps.push(Step::Send(StreamEvent::Done(assistant(content, stop))));
        steps
    }
}

/// Tool call ids unique across the whole process.
fn next_id() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}

type Handler = dyn Fn(&CompletionRequest) -> Vec<Step> + Send + Sync;

/// A provider whose replies are computed from the request; it records every request it was asked
/// and every way a request's history would be rejected by a real provider.
pub struct ScriptedProvider {
    handler: Box<Handler>,
    pub requests: Mutex<Vec<CompletionRequest>>,
    pub violations: Mutex<Vec<String>>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ScriptedProvider {
    /// A provider answering each request with what `handler` makes of it: a [`Reply`] or a list
    /// of [`Step`]s. The handler runs inside `Provider::stream`, so a handler that panics is a
    /// provider that panics.
    pub fn new<R: Into<Vec<Step>>>(
        handler: impl Fn(&CompletionRequest) -> R + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(ScriptedProvider {
            handler: Box::new(move |r| handler(r).into()),
            requests: Mutex::new(Vec::new()),
            violations: Mutex::new(Vec::new()),
        })
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<CompletionRequest> {
        locked(&self.requests).clone()
    }

    /// Requests whose first user message is `key`.
    pub fn requests_of(&self, key: &str) -> Vec<CompletionRequest> {
        self.requests()
            .into_iter()
            .filter(|r| first_user(r) == key)
            .collect()
    }

    /// Fails the test if any request had a tool call without its result or a result without its
    /// call.
    pub fn assert_valid(&self) {
        let v = locked(&self.violations);
        assert!(v.is_empty(), "invalid requests: {v:?}");
    }
}

impl Provider for ScriptedProvider {
    fn stream(
        &self,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> mpsc::Receiver<StreamEvent> {
        let problems = check_history(&request.messages);
        locked(&self.violations).extend(problems);
        let steps = (self.handler)(&request);
        locked(&self.requests).push(request);
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(async move {
            for step in steps {
                match step {
                    Step::Send(e) => {
                        if tx.send(e).await.is_err() {
                            return;
                        }
                    }
                    Step::Notify(n) => n.notify_one(),
                    Step::Wait(g) => {
                        tokio::select! {
                            _ = g.notified() => {}
                            _ = cancel.cancelled() => return,
                        }
                    }
                    Step::Hang => std::future::pending::<()>().await,
                    Step::Close => return,
                }
            }
            // Keep the sender alive until the receiver goes, as a real stream does not close
            // early.
            tx.closed().await;
        });
        rx
    }
}

/// Problems a provider would reject: unanswered or unknown tool results.
pub fn check_history(messages: &[Message]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        if let Message::Assistant(a) = &messages[i] {
            let mut ids: Vec<String> = a.tool_calls().map(|c| c.id.clone()).collect();
            let mut j = i + 1;
            while let Some(Message::ToolResult(r)) = messages.get(j) {
                match ids.iter().position(|id| *id == r.tool_call_id) {
                    Some(p) => {
                        ids.remove(p);
                    }
                    None => problems.push(format!("orphan result {}", r.tool_call_id)),
                }
                j += 1;
            }
            if !ids.is_empty() {
                problems.push(format!("unanswered calls {ids:?} at message {i}"));
            }
            i = j;
        } else {
            if let Message::ToolResult(r) = &messages[i] {
                problems.push(format!("stray result {}", r.tool_call_id));
            }
            i += 1;
        }
    }
    problems
}

/// A finished assistant message of `content` with 10 tokens in and 5 out.
pub fn assistant(content: Vec<ContentBlock>, stop: StopReason) -> AssistantMessage {
    let mut m = AssistantMessage::empty("anthropic-messages", "fake", "scripted");
    m.content = content;
    m.stop_reason = stop;
    m.usage = Usage {
        input: 10,
        output: 5,
        total_tokens: 15,
        ..Usage::default()
    };
    m
}

pub fn delta(e: AssistantMessageEvent) -> Step {
    Step::Send(StreamEvent::Delta(e))
}

/// Stream a text reply delta by delta, then `Done`.
pub fn text_reply(text: &str) -> Vec<Step> {
    let mut steps = text_deltas(text);
    steps.push(Step::Send(StreamEvent::Done(assistant(
        vec![ContentBlock::text(text)],
        StopReason::Stop,
    ))));
    steps
}

/// The deltas of a text reply in two pieces (no terminal event).
pub fn text_deltas(text: &str) -> Vec<Step> {
    use AssistantMessageEvent as E;
    let (a, b) = text.split_at(text.len() / 2);
    vec![
        delta(E::Start),
        delta(E::TextStart { content_index: 0 }),
        delta(E::TextDelta {
            content_index: 0,
            delta: a.into(),
        }),
        delta(E::TextDelta {
            content_index: 0,
            delta: b.into(),
        }),
        delta(E::TextEnd {
            content_index: 0,
            content: text.into(),
        }),
    ]
}

/// A tool call with a given id.
pub fn tool_call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

/// The deltas of tool calls (no terminal event).
pub fn tool_deltas(calls: &[ToolCall]) -> Vec<Step> {
    use AssistantMessageEvent as E;
    let mut steps = vec![delta(E::Start)];
    for (i, c) in calls.iter().enumerate() {
        steps.push(delta(E::ToolCallStart {
            content_index: i,
            id: c.id.clone(),
            name: c.name.clone(),
        }));
        steps.push(delta(E::ToolCallDelta {
            content_index: i,
            delta: c.arguments.to_string(),
        }));
        steps.push(delta(E::ToolCallEnd {
            content_index: i,
            tool_call: c.clone(),
        }));
    }
    steps
}

/// Stream tool calls, then `Done` with stop reason `toolUse`.
pub fn tool_reply(calls: &[ToolCall]) -> Vec<Step> {
    let mut steps = tool_deltas(calls);
    steps.push(Step::Send(StreamEvent::Done(assistant(
        calls.iter().cloned().map(ContentBlock::ToolCall).collect(),
        StopReason::ToolUse,
    ))));
    steps
}

/// A failed stream's terminal event.
pub fn failed(error: LlmError, partial: AssistantMessage) -> Step {
    Step::Send(StreamEvent::Failed { error, partial })
}

/// The text of a message as the model reads it.
pub fn message_text(m: &Message) -> String {
    match m {
        Message::User(u) => u.content.to_text(),
        Message::Custom(c) => c.content.to_text(),
        Message::Assistant(a) => a.text(),
        Message::ToolResult(r) => cadre_protocol::join_text(&r.content),
        Message::BashExecution(b) => b.to_text(),
    }
}

/// The first user message: who this conversation belongs to.
pub fn first_user(r: &CompletionRequest) -> String {
    r.messages
        .iter()
        .find(|m| matches!(m, Message::User(_)))
        .map(message_text)
        .unwrap_or_default()
}

/// Assistant messages so far: the index of the turn being asked for.
pub fn turn(r: &CompletionRequest) -> usize {
    r.messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant(_)))
        .count()
}

/// The text of the latest message (a tool result, or a user message).
pub fn last_text(r: &CompletionRequest) -> String {
    r.messages.last().map(message_text).unwrap_or_default()
}

/// Every message's text, one after the other.
pub fn all_text(r: &CompletionRequest) -> String {
    r.messages
        .iter()
        .map(message_text)
        .collect::<Vec<_>>()
        .join("\n")
}
