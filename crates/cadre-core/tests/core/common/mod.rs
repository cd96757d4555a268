//! Test support: the fixtures that wire `cadre_testkit::ScriptedProvider` into a real
//! `TaskManager` rooted in a temporary directory (here), and into a bare agent (`agent`). Each
//! test module keeps only its scenarios (and its own roles).
// Each test module uses a different subset of these helpers.
#![allow(dead_code)]

pub mod agent;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cadre_core::orchestrator::manager::{
    EntryOutcome, LaunchSpec, ManagerConfig, ManagerOptions, ModelResolver, ParentNotice,
    ParentRef, TaskManager, TaskOutcome, TaskSpec,
};
use cadre_core::orchestrator::settings::SubagentSettings;
use cadre_core::orchestrator::store::TaskStore;
use cadre_core::roles::{Layer, ResolvedRole, RoleDef, Roster};
use cadre_llm::Model;
use cadre_protocol::ThinkingLevel;
use serde_json::Value;
use tokio::sync::mpsc;

pub use cadre_testkit::ScriptedProvider;
pub use cadre_testkit::scripted::{
    Reply, all_text, call, fail, first_user, hang, last_text, message_text, model, text, turn,
};

/// The root session every harness launches from.
pub const ROOT_SESSION_ID: &str = "root-session";

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
    provider: Arc<ScriptedProvider>,
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
    provider: Arc<ScriptedProvider>,
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
