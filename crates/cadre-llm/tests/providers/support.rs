//! Running a request against the fake server and collecting what the provider streamed.

use std::collections::BTreeMap;
use std::time::Duration;

use cadre_llm::{
    Api, AssistantMessageEvent, Compat, CompletionRequest, HttpProvider, LlmError, Model,
    ModelCost, PartialMessage, Provider, RequestTimeouts, RetryPolicy, StreamEvent,
};
use cadre_protocol::{AssistantMessage, Message, ThinkingLevel, ToolSpec};
use cadre_testkit::FakeServer;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Hang guard for a whole request; generous, never a timing assertion.
pub const HANG_GUARD: Duration = Duration::from_secs(20);

pub const BOTH: [Api; 2] = [Api::OpenAiCompletions, Api::AnthropicMessages];

pub fn model(server: &FakeServer, api: Api) -> Model {
    let base_url = match api {
        Api::AnthropicMessages => server.anthropic_base_url(),
        _ => server.openai_base_url(),
    };
    Model {
        provider: "fake".into(),
        id: "fake-model".into(),
        name: "Fake".into(),
        api,
        base_url,
        api_key: Some("test-key-123".into()),
        headers: BTreeMap::new(),
        reasoning: false,
        thinking_level_map: BTreeMap::new(),
        input: vec!["text".into(), "image".into()],
        context_window: 200_000,
        max_tokens: 16_000,
        cost: ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        },
        compat: Compat::default(),
    }
}

pub fn request(model: Model, prompt: &str) -> CompletionRequest {
    CompletionRequest {
        model,
        system_prompt: "You are a test.".into(),
        messages: vec![Message::user(prompt)],
        tools: vec![ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }]
        .into(),
        thinking: ThinkingLevel::Off,
    }
}

/// Short delays so fault tests stay quick; the idle timeout is short for the silent-stream test,
/// the first-content one a little longer (it also covers connecting), and the whole-request
/// deadline well inside the hang guard.
pub fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
        max_deadline_retries: 1,
        timeouts: RequestTimeouts {
            first_content: Duration::from_secs(2),
            idle: Duration::from_millis(500),
            total: HANG_GUARD / 2,
        },
    }
}

/// Deadlines far beyond the hang guard: a request that must end for another reason.
pub fn no_deadlines() -> RequestTimeouts {
    RequestTimeouts {
        first_content: Duration::from_secs(60),
        idle: Duration::from_secs(60),
        total: Duration::from_secs(600),
    }
}

/// Everything one request streamed.
#[derive(Debug)]
pub struct Outcome {
    /// Deltas of the last attempt only (earlier attempts are discarded at each `Retry`).
    pub deltas: Vec<AssistantMessageEvent>,
    pub retries: Vec<(u32, u32, u64, LlmError)>,
    pub terminal: StreamEvent,
    /// Events received after the terminal one (must be none).
    pub after_terminal: usize,
}

impl Outcome {
    pub fn done(&self) -> &AssistantMessage {
        match &self.terminal {
            StreamEvent::Done(m) => m,
            other => panic!("expected Done, got {other:?}"),
        }
    }

    pub fn failed(&self) -> (&LlmError, &AssistantMessage) {
        match &self.terminal {
            StreamEvent::Failed { error, partial } => (error, partial),
            other => panic!("expected Failed, got {other:?}"),
        }
    }

    /// The message rebuilt from the last attempt's deltas alone.
    pub fn rebuilt(&self) -> AssistantMessage {
        let mut p = PartialMessage::new(AssistantMessage::empty("", "", ""));
        for d in &self.deltas {
            p.apply(d);
        }
        p.into_message()
    }
}

pub async fn collect(mut rx: tokio::sync::mpsc::Receiver<StreamEvent>) -> Outcome {
    let mut deltas = Vec::new();
    let mut retries = Vec::new();
    let mut terminal = None;
    let mut after_terminal = 0;
    while let Some(ev) = rx.recv().await {
        if terminal.is_some() {
            after_terminal += 1;
            continue;
        }
        match ev {
            StreamEvent::Delta(d) => deltas.push(d),
            StreamEvent::Retry {
                attempt,
                max_attempts,
                delay_ms,
                error,
            } => {
                deltas.clear();
                retries.push((attempt, max_attempts, delay_ms, error));
            }
            t @ (StreamEvent::Done(_) | StreamEvent::Failed { .. }) => terminal = Some(t),
        }
    }
    Outcome {
        deltas,
        retries,
        terminal: terminal.expect("stream closed without a terminal event"),
        after_terminal,
    }
}

pub async fn run_with(policy: RetryPolicy, req: CompletionRequest) -> Outcome {
    let provider = HttpProvider::new(policy);
    let rx = provider.stream(req, CancellationToken::new());
    tokio::time::timeout(HANG_GUARD, collect(rx))
        .await
        .expect("request hung")
}

pub async fn run(req: CompletionRequest) -> Outcome {
    run_with(fast_policy(), req).await
}
