//! Test support shared by the task-manager integration tests: a scripted provider whose replies
//! are computed from each request, and the fixtures that wire it into a real `TaskManager`
//! rooted in a temporary directory. Each test file keeps only its scenarios (and its own roles).
// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cadre_core::orchestrator::manager::{
    EntryOutcome, LaunchSpec, ManagerConfig, ManagerOptions, ModelResolver, ParentNotice,
    ParentRef, TaskManager, TaskOutcome, TaskSpec,
};
use cadre_core::orchestrator::settings::SubagentSettings;
use cadre_core::orchestrator::store::TaskStore;
use cadre_core::roles::{Layer, ResolvedRole, RoleDef, Roster};
use cadre_llm::{Api, Compat, CompletionRequest, Model, ModelCost, Provider, StreamEvent};
use cadre_protocol::{
    AssistantMessage, ContentBlock, Message, StopReason, ThinkingLevel, ToolCall, Usage,
};
use serde_json::Value;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// The root session every harness launches from.
pub const ROOT_SESSION_ID: &str = "root-session";

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

/// Resolves `fake/<id>` for the listed ids only, so unknown names fail like real ones.
pub struct Models(pub &'static [&'static str]);

impl ModelResolver for Models {
    fn resolve(&self, name: &str) -> Result<Model, String> {
        name.strip_prefix("fake/")
            .filter(|id| self.0.contains(id))
            .map(model)
            .ok_or_else(|| format!("unknown model {name}"))
    }
    fn known(&self) -> Vec<String> {
        self.0.iter().map(|id| format!("fake/{id}")).collect()
    }
}

/// What the scripted model does for one request.
#[derive(Default, Clone)]
pub struct Reply {
    pub text: String,
    pub calls: Vec<(String, Value)>,
    /// End the stream without a terminal event: a failed reply.
    pub fail: bool,
    /// Never answer (until the request is cancelled).
    pub hang: bool,
    /// Signalled when the request arrives.
    pub started: Option<Arc<Notify>>,
    /// Wait for this before answering.
    pub gate: Option<Arc<Notify>>,
}

pub fn text(t: &str) -> Reply {
    Reply {
        text: t.into(),
        ..Reply::default()
    }
}

pub fn call(name: &str, args: Value) -> Reply {
    Reply {
        calls: vec![(name.into(), args)],
        ..Reply::default()
    }
}

pub fn fail() -> Reply {
    Reply {
        fail: true,
        ..Reply::default()
    }
}

pub fn hang(started: &Arc<Notify>) -> Reply {
    Reply {
        hang: true,
        started: Some(started.clone()),
        ..Reply::default()
    }
}

type Handler = dyn Fn(&CompletionRequest) -> Reply + Send + Sync;

/// A provider whose replies are computed from the request (routing on conversation content);
/// it records every request it was asked.
pub struct Scripted {
    handler: Box<Handler>,
    pub requests: Mutex<Vec<CompletionRequest>>,
}

impl Scripted {
    pub fn new(handler: impl Fn(&CompletionRequest) -> Reply + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Scripted {
            handler: Box::new(handler),
            requests: Mutex::new(Vec::new()),
        })
    }

    pub fn requests(&self) -> Vec<CompletionRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// Requests whose first user message is `key`.
    pub fn requests_of(&self, key: &str) -> Vec<CompletionRequest> {
        self.requests()
            .into_iter()
            .filter(|r| first_user(r) == key)
            .collect()
    }
}

impl Provider for Scripted {
    fn stream(
        &self,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> mpsc::Receiver<StreamEvent> {
        let reply = (self.handler)(&request);
        self.requests.lock().unwrap().push(request);
        let (tx, rx) = mpsc::channel(8);
        tokio::spawn(async move {
            if let Some(n) = &reply.started {
                n.notify_one();
            }
            if let Some(g) = &reply.gate {
                tokio::select! {
                    _ = g.notified() => {}
                    _ = cancel.cancelled() => return,
                }
            }
            if reply.hang {
                tx.closed().await;
                return;
            }
            if reply.fail {
                return;
            }
            let mut m = AssistantMessage::empty("anthropic-messages", "fake", "scripted");
            if !reply.text.is_empty() {
                m.content.push(ContentBlock::text(reply.text.clone()));
            }
            for (i, (name, args)) in reply.calls.iter().enumerate() {
                m.content.push(ContentBlock::ToolCall(ToolCall {
                    id: format!("call-{}-{i}", next_id()),
                    name: name.clone(),
                    arguments: args.clone(),
                }));
            }
            m.stop_reason = if reply.calls.is_empty() {
                StopReason::Stop
            } else {
                StopReason::ToolUse
            };
            m.usage = Usage {
                input: 10,
                output: 5,
                total_tokens: 15,
                ..Usage::default()
            };
            let _ = tx.send(StreamEvent::Done(m)).await;
            tx.closed().await;
        });
        rx
    }
}

/// Tool call ids unique across the whole test binary.
fn next_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}

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

pub fn all_text(r: &CompletionRequest) -> String {
    r.messages
        .iter()
        .map(message_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A trusted roster of `defs`, all as built-in roles.
pub fn roster(defs: Vec<RoleDef>) -> Roster {
    Roster {
        roles: defs
            .into_iter()
            .map(|def| ResolvedRole {
                def,
                layer: Layer::Builtin,
                file: None,
                overrides: Vec::new(),
            })
            .collect(),
        blocked: Vec::new(),
        diagnostics: Vec::new(),
        trusted: true,
        untrusted_reason: None,
    }
}

pub fn settings(value: &Value) -> SubagentSettings {
    SubagentSettings::from_value(Some(value)).unwrap().settings
}

/// The root session file of a harness rooted in `dir`.
pub fn root_session_file(dir: &Path) -> PathBuf {
    dir.join("sessions").join("root.jsonl")
}

/// A trusted manager rooted in `dir`: tasks, sessions, home and artifacts each in their own
/// subdirectory, the project in `dir/work`. Tests override single fields with `..`.
pub fn manager_config(
    dir: &Path,
    provider: Arc<Scripted>,
    models: Models,
    roster: Roster,
    settings: SubagentSettings,
    root_notices: mpsc::UnboundedSender<ParentNotice>,
) -> ManagerConfig {
    ManagerConfig {
        provider,
        models: Arc::new(models),
        tools: cadre_tools::builtin_tools(),
        roster: Arc::new(roster),
        settings,
        store: TaskStore::new(dir.join("tasks")),
        root_session_id: ROOT_SESSION_ID.into(),
        root_session_file: Some(root_session_file(dir)),
        sessions_dir: dir.join("sessions"),
        cadre_home: dir.join("home"),
        cwd: dir.join("work"),
        trusted: true,
        artifacts_dir: dir.join("artifacts"),
        root_notices,
    }
}

pub fn manager_options() -> ManagerOptions {
    ManagerOptions {
        // No cadre binary here: a read-only child's bash cannot run.
        sandbox_exe: Some(PathBuf::from("/bin/false")),
        ..ManagerOptions::default()
    }
}

/// A manager over `manager_config(dir, …)` with `defs` as its roster and the default options,
/// with its root parent and the channel of the root's notices.
pub fn start_manager(
    dir: &Path,
    provider: Arc<Scripted>,
    models: Models,
    defs: Vec<RoleDef>,
    settings_value: &Value,
) -> (
    TaskManager,
    ParentRef,
    mpsc::UnboundedReceiver<ParentNotice>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let manager = TaskManager::with_options(
        manager_config(
            dir,
            provider,
            models,
            roster(defs),
            settings(settings_value),
            tx,
        ),
        manager_options(),
    );
    let root = root_parent(&manager);
    (manager, root, rx)
}

/// The root agent as a parent: every built-in tool plus the orchestration tools.
pub fn root_parent(manager: &TaskManager) -> ParentRef {
    let mut active: Vec<String> = cadre_tools::BUILTIN_TOOL_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect();
    active.extend(["Agent", "SendMessage", "TaskOutput", "TaskStop"].map(String::from));
    manager.root_parent(
        model("scripted"),
        ThinkingLevel::Off,
        "ROOT SYSTEM".into(),
        active,
        None,
    )
}

/// Runs git in `dir` with a fixed identity; a failure fails the test with git's stderr.
pub fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A single-task launch of `role` with `prompt` (described as "do <prompt>").
pub fn spec(role: &str, prompt: &str) -> LaunchSpec {
    LaunchSpec {
        task: TaskSpec {
            description: format!("do {prompt}"),
            prompt: prompt.into(),
            subagent_type: Some(role.into()),
            ..TaskSpec::default()
        },
        ..LaunchSpec::default()
    }
}

/// The one outcome of a single-task launch; a refusal fails the test.
pub fn single(entries: Vec<EntryOutcome>) -> TaskOutcome {
    match entries.into_iter().next() {
        Some(EntryOutcome::Started(o)) => *o,
        Some(EntryOutcome::Refused { error, .. }) => panic!("refused: {error}"),
        None => panic!("no entry"),
    }
}
