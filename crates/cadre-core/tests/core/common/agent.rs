//! Driving a bare agent loop without HTTP: `ScriptedProvider` streaming step by step, small tools
//! defined by closures, and a harness that prompts an agent and collects its events.

use std::sync::Arc;
use std::time::Duration;

use cadre_core::agent::{Agent, AgentConfig, RunOutcome};
use cadre_core::session::SessionWriter;
use cadre_llm::{CompletionRequest, Model};
use cadre_protocol::{AgentEvent, Message, ThinkingLevel, ToolSpec};
use cadre_tools::{Tool, ToolContext, ToolOutput, ToolRegistry};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::mpsc;

pub use cadre_testkit::ScriptedProvider;
pub use cadre_testkit::scripted::{
    self, Step, assistant, delta, failed, text_deltas, text_reply, tool_call as call, tool_deltas,
    tool_reply,
};

/// Generous bound so a broken loop fails the test instead of hanging it.
pub const HANG_GUARD: Duration = Duration::from_secs(10);

/// The scripted model of these tests: `fake/scripted`, named `Scripted`.
pub fn model() -> Model {
    Model {
        name: "Scripted".into(),
        ..scripted::model("scripted")
    }
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
    pub provider: Arc<ScriptedProvider>,
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
    provider: Arc<ScriptedProvider>,
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

pub fn simple(provider: Arc<ScriptedProvider>, tools: Vec<Arc<dyn Tool>>) -> Harness {
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
