//! A scripted provider and small tools for driving the agent loop without HTTP.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cadre_core::agent::{Agent, AgentConfig, RunOutcome};
use cadre_core::session::SessionWriter;
use cadre_llm::{
    Api, Compat, CompletionRequest, LlmError, Model, ModelCost, Provider, StreamEvent,
};
use cadre_protocol::{
    AgentEvent, AssistantMessage, AssistantMessageEvent, ContentBlock, Message, StopReason,
    ThinkingLevel, ToolCall, ToolSpec, Usage,
};
use cadre_tools::{Tool, ToolContext, ToolOutput, ToolRegistry};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// Generous bound so a broken loop fails the test instead of hanging it.
pub const HANG_GUARD: Duration = Duration::from_secs(10);

pub fn model() -> Model {
    Model {
        provider: "fake".into(),
        id: "scripted".into(),
        name: "Scripted".into(),
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

/// One step of a scripted reply.
#[allow(clippy::large_enum_variant)]
pub enum Step {
    Send(StreamEvent),
    /// Signal the test that the stream is under way.
    Notify(Arc<Notify>),
    /// Never finish; ignore cancellation too (the loop must not depend on the provider).
    Hang,
    /// Close the stream without a terminal event.
    Close,
}

type Handler = dyn Fn(&CompletionRequest) -> Vec<Step> + Send + Sync;

/// A provider whose replies are computed from the request (routing on conversation content).
/// Every request is checked: each tool call must be answered by the tool results that follow
/// its assistant message before anything else.
pub struct Scripted {
    handler: Box<Handler>,
    pub requests: Mutex<Vec<CompletionRequest>>,
    pub violations: Mutex<Vec<String>>,
}

impl Scripted {
    pub fn new(
        handler: impl Fn(&CompletionRequest) -> Vec<Step> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Scripted {
            handler: Box::new(handler),
            requests: Mutex::new(Vec::new()),
            violations: Mutex::new(Vec::new()),
        })
    }

    pub fn requests(&self) -> Vec<CompletionRequest> {
        self.requests.lock().unwrap().clone()
    }

    pub fn assert_valid(&self) {
        let v = self.violations.lock().unwrap();
        assert!(v.is_empty(), "invalid requests: {v:?}");
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

impl Provider for Scripted {
    fn stream(
        &self,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> mpsc::Receiver<StreamEvent> {
        let problems = check_history(&request.messages);
        self.violations.lock().unwrap().extend(problems);
        let steps = (self.handler)(&request);
        self.requests.lock().unwrap().push(request);
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(async move {
            let _cancel = cancel;
            for step in steps {
                match step {
                    Step::Send(e) => {
                        if tx.send(e).await.is_err() {
                            return;
                        }
                    }
                    Step::Notify(n) => n.notify_one(),
                    Step::Hang => {
                        std::future::pending::<()>().await;
                    }
                    Step::Close => return,
                }
            }
            // Keep the sender alive until the receiver goes, like a real stream would not
            // close early.
            tx.closed().await;
        });
        rx
    }
}

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

pub fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
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

pub fn failed(error: LlmError, partial: AssistantMessage) -> Step {
    Step::Send(StreamEvent::Failed { error, partial })
}

/// Text of the last message of a request (routing key).
pub fn last_text(request: &CompletionRequest) -> String {
    match request.messages.last() {
        Some(Message::User(u)) => u.content.to_text(),
        Some(Message::ToolResult(r)) => format!("result:{}", r.tool_call_id),
        Some(Message::Assistant(a)) => a.text(),
        Some(Message::Custom(c)) => c.content.to_text(),
        Some(Message::BashExecution(b)) => b.to_text(),
        None => String::new(),
    }
}

/// A small tool defined by a closure.
pub struct FnTool {
    pub name: String,
    pub mutating: bool,
    pub run: Box<dyn Fn(Value, ToolContext) -> BoxFuture<'static, ToolOutput> + Send + Sync>,
}

impl FnTool {
    pub fn new(
        name: &str,
        run: impl Fn(Value, ToolContext) -> BoxFuture<'static, ToolOutput> + Send + Sync + 'static,
    ) -> Arc<FnTool> {
        Arc::new(FnTool {
            name: name.into(),
            mutating: false,
            run: Box::new(run),
        })
    }

    pub fn mutating(
        name: &str,
        run: impl Fn(Value, ToolContext) -> BoxFuture<'static, ToolOutput> + Send + Sync + 'static,
    ) -> Arc<FnTool> {
        Arc::new(FnTool {
            name: name.into(),
            mutating: true,
            run: Box::new(run),
        })
    }
}

impl Tool for FnTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: format!("{} tool", self.name),
            parameters: json!({"type": "object"}),
        }
    }

    fn is_mutating(&self) -> bool {
        self.mutating
    }

    fn mutation_target(&self, args: &Value, cwd: &std::path::Path) -> Option<std::path::PathBuf> {
        args.get("path")
            .and_then(Value::as_str)
            .map(|p| cwd.join(p))
    }

    fn execute<'a>(&'a self, args: Value, ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        (self.run)(args, ctx)
    }
}

/// `echo`: returns its arguments (a string argument as is).
pub fn echo_tool() -> Arc<FnTool> {
    FnTool::new("echo", |args, _| {
        Box::pin(async move {
            match args {
                Value::String(s) => ToolOutput::ok(format!("raw:{s}")),
                other => ToolOutput::ok(other.to_string()),
            }
        })
    })
}

#[allow(dead_code)]
pub struct Harness {
    pub agent: Agent,
    pub provider: Arc<Scripted>,
    pub events: mpsc::UnboundedReceiver<AgentEvent>,
    pub dir: tempfile::TempDir,
}

impl Harness {
    /// Prompts the agent to the end of its run; a hang fails the test instead of hanging it.
    pub async fn prompt(&mut self, text: &str) -> RunOutcome {
        tokio::time::timeout(HANG_GUARD, self.agent.prompt(text))
            .await
            .expect("hang guard")
            .unwrap()
    }
}

pub fn harness(
    provider: Arc<Scripted>,
    tools: Vec<Arc<dyn Tool>>,
    session: Option<SessionWriter>,
    history: Vec<Message>,
    dir: tempfile::TempDir,
) -> Harness {
    let mut registry = ToolRegistry::new();
    for t in tools {
        registry.register(t);
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let config = AgentConfig {
        provider: provider.clone(),
        model: model(),
        thinking: ThinkingLevel::Off,
        system_prompt: "system".into(),
        tools: registry,
        cwd: dir.path().to_path_buf(),
        artifacts_dir: dir.path().join("artifacts"),
        events: Some(tx),
        compaction: Default::default(),
    };
    Harness {
        agent: Agent::new(config, history, session),
        provider,
        events: rx,
        dir,
    }
}

pub fn simple(provider: Arc<Scripted>, tools: Vec<Arc<dyn Tool>>) -> Harness {
    harness(
        provider,
        tools,
        None,
        Vec::new(),
        tempfile::tempdir().unwrap(),
    )
}

pub fn drain(rx: &mut mpsc::UnboundedReceiver<AgentEvent>) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

/// Event type names, with the role for message events (`message_start:user`).
pub fn names(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let v = serde_json::to_value(e).unwrap();
            let t = v["type"].as_str().unwrap().to_string();
            match v["message"]["role"].as_str() {
                Some(role) if t.starts_with("message_") => format!("{t}:{role}"),
                _ => t,
            }
        })
        .collect()
}

pub fn result_texts(messages: &[Message]) -> Vec<(String, String, bool)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((
                r.tool_call_id.clone(),
                cadre_protocol::join_text(&r.content),
                r.is_error,
            )),
            _ => None,
        })
        .collect()
}
