//! A role's `Bash(…)` command patterns hold for the whole life of its task: at launch, in a
//! worktree, and after a continuation (SendMessage), from the task record.

use crate::common;

use std::time::Duration;

use cadre_core::agent::{Agent, AgentConfig};
use cadre_core::orchestrator::manager::ConversationMirror;
use cadre_core::orchestrator::manager::{
    LaunchError, LaunchSpec, RefusalCode, SendOutcome, TaskOutcome,
};
use cadre_core::orchestrator::tools::root_tools;
use cadre_core::roles::{ContextMode, RoleDef, ToolList, builtin_roles};
use cadre_llm::CompletionRequest;
use cadre_protocol::{TaskRecord, ThinkingLevel};
use common::{
    Models, ROOT_SESSION_ID, Reply, ScriptedProvider, all_text, call, git, last_text, model,
    single, spec, start_manager, text,
};
use serde_json::json;

const GUARD: Duration = Duration::from_secs(20);
const MODELS: Models = Models(&["scripted"]);

/// A writing role (it has `edit`) whose bash runs only `patterns`: without a write tool its bash
/// would run in the read-only sandbox, which these tests have no binary for (the binary's tests
/// cover that path).
fn allowed_role(name: &str, patterns: &[&str]) -> RoleDef {
    RoleDef {
        name: name.into(),
        description: format!("test role {name}"),
        tools: ToolList::Named(vec!["read".into(), "edit".into(), "bash".into()]),
        bash_allow: patterns.iter().map(|p| p.to_string()).collect(),
        prompt: format!("ROLE BODY OF {name}"),
        ..RoleDef::default()
    }
}

struct Harness {
    manager: cadre_core::orchestrator::manager::TaskManager,
    root: cadre_core::orchestrator::manager::ParentRef,
    provider: std::sync::Arc<ScriptedProvider>,
    dir: tempfile::TempDir,
}

fn harness(handler: impl Fn(&CompletionRequest) -> Reply + Send + Sync + 'static) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    let provider = ScriptedProvider::new(handler);
    let mut defs: Vec<RoleDef> = builtin_roles();
    defs.push(allowed_role(
        "status-only",
        &["git status:*", "echo allowed:*"],
    ));
    defs.push(allowed_role("bad-patterns", &["git diff && rm"]));
    defs.push(RoleDef {
        context: ContextMode::Fork,
        ..allowed_role("fork-status", &["echo allowed:*"])
    });
    let (manager, root, _rx) =
        start_manager(dir.path(), provider.clone(), MODELS, defs, &json!({}));
    Harness {
        manager,
        root,
        provider,
        dir,
    }
}

impl Harness {
    async fn launch(&self, s: LaunchSpec) -> Result<TaskOutcome, LaunchError> {
        tokio::time::timeout(GUARD, self.manager.launch(&self.root, s, None))
            .await
            .expect("hang guard")
            .map(single)
    }

    fn record(&self, id: &str) -> TaskRecord {
        self.manager.store().load(ROOT_SESSION_ID, id).unwrap()
    }

    /// The results of the child's tool calls, in order.
    fn tool_results(&self) -> Vec<String> {
        self.provider
            .requests()
            .iter()
            .filter(|r| {
                matches!(
                    r.messages.last(),
                    Some(cadre_protocol::Message::ToolResult(_))
                )
            })
            .map(last_text)
            .collect()
    }
}

/// Turn by turn: an allowed command, then `touch <file>`; after `MORE`, `touch <file>` again.
fn script(file: &'static str) -> impl Fn(&CompletionRequest) -> Reply + Send + Sync + 'static {
    move |r| {
        let last = last_text(r);
        if last == "MORE" {
            return call("bash", json!({ "command": format!("touch {file}-again") }));
        }
        if last.contains("allowed run") {
            return call("bash", json!({ "command": format!("touch {file}") }));
        }
        if last.starts_with("do ") || r.messages.len() <= 1 || last.contains("CHILD") {
            return call("bash", json!({ "command": "echo allowed run" }));
        }
        text(&format!("bash said: {last}"))
    }
}

#[tokio::test]
async fn the_patterns_hold_at_launch_and_after_a_continuation() {
    let h = harness(script("made.txt"));
    let work = h.dir.path().join("work");
    let o = h.launch(spec("status-only", "CHILD allow")).await.unwrap();
    let r = h.record(&o.task_id);
    assert_eq!(r.bash_allow, ["git status:*", "echo allowed:*"]);
    let results = h.tool_results();
    assert!(results[0].contains("allowed run"), "{results:?}");
    assert!(
        results[1].contains("the role's command allowlist refuses `touch made.txt`"),
        "{results:?}"
    );
    assert!(
        results[1].contains("`git status:*`, `echo allowed:*`"),
        "{results:?}"
    );
    assert!(!work.join("made.txt").exists());
    // Refused before it ran: blocked, not executed.
    assert_eq!(r.usage.tool_calls_blocked, 1, "{:?}", r.usage);
    assert!(
        o.receipt.contains("1 bash: not an allowed command"),
        "{}",
        o.receipt
    );

    // The bash tool told the model the patterns.
    let request = &h.provider.requests()[0];
    let bash = request.tools.iter().find(|t| t.name == "bash").unwrap();
    assert!(
        bash.description.contains("`git status:*`"),
        "{}",
        bash.description
    );

    let sent = tokio::time::timeout(GUARD, h.manager.send_message(&h.root, &o.task_id, "MORE"))
        .await
        .expect("hang guard")
        .unwrap();
    let SendOutcome::Continued(c) = sent else {
        panic!("{sent:?}")
    };
    assert!(
        c.result
            .contains("the role's command allowlist refuses `touch made.txt-again`"),
        "{}",
        c.result
    );
    assert!(!work.join("made.txt-again").exists());
    assert_eq!(
        h.record(&o.task_id).bash_allow,
        ["git status:*", "echo allowed:*"]
    );
}

#[tokio::test]
async fn a_record_whose_patterns_cannot_be_read_never_widens_on_continuation() {
    let h = harness(script("tampered.txt"));
    let work = h.dir.path().join("work");
    let o = h.launch(spec("status-only", "CHILD tamper")).await.unwrap();
    let mut r = h.record(&o.task_id);
    r.bash_allow = vec!["touch tampered.txt-again; rm -rf /".into()];
    h.manager.store().save(&mut r).unwrap();
    let sent = tokio::time::timeout(GUARD, h.manager.send_message(&h.root, &o.task_id, "MORE"))
        .await
        .expect("hang guard");
    let e = sent.err();
    assert_eq!(
        e.as_ref().map(LaunchError::code),
        Some(RefusalCode::RoleChanged)
    );
    let e = e.map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("command patterns"), "{e}");
    assert!(!work.join("tampered.txt-again").exists());
}

#[tokio::test]
async fn invalid_patterns_fail_the_launch() {
    let h = harness(script("never.txt"));
    let e = h.launch(spec("bad-patterns", "CHILD bad")).await;
    let message = match e {
        Err(e) => {
            assert_eq!(e.code(), RefusalCode::BashPatterns);
            e.to_string()
        }
        Ok(o) => o.error.unwrap_or_default(),
    };
    assert!(
        message.contains("Bash(git diff && rm) is invalid"),
        "{message}"
    );
}

#[tokio::test]
async fn a_worktree_child_runs_under_the_same_patterns() {
    let h = harness(script("wt.txt"));
    let work = h.dir.path().join("work");
    git(&work, &["init", "-q", "-b", "main"]);
    std::fs::write(work.join("a.txt"), "a\n").unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "initial"]);
    let mut s = spec("status-only", "CHILD worktree");
    s.task.isolation = Some("worktree".into());
    let o = h.launch(s).await.unwrap();
    let r = h.record(&o.task_id);
    assert!(r.worktree.is_some(), "{r:?}");
    assert_eq!(r.bash_allow, ["git status:*", "echo allowed:*"]);
    let results = h.tool_results();
    assert!(
        results[1].contains("the role's command allowlist refuses `touch wt.txt`"),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_fork_runs_under_its_roles_patterns() {
    let h = harness(|r| {
        let last = last_text(r);
        if all_text(r).contains("ROLE BODY OF fork-status") {
            if last.contains("allowed run") {
                return call("bash", json!({ "command": "touch forked.txt" }));
            }
            if last.contains("FORKTASK") {
                return call("bash", json!({ "command": "echo allowed run" }));
            }
            return text(&format!("fork said: {last}"));
        }
        if r.messages.len() == 1 {
            return call(
                "Agent",
                json!({"subagent_type": "fork-status", "description": "side task",
                       "prompt": "FORKTASK"}),
            );
        }
        text(&format!("root got: {last}"))
    });
    let mirror = ConversationMirror::new(Vec::new());
    let mut root = h.root.clone();
    root.conversation = Some(mirror.clone());
    let mut tools = cadre_tools::builtin_tools();
    for t in root_tools(&h.manager, &root) {
        tools.register(t);
    }
    let config = AgentConfig {
        provider: h.provider.clone(),
        model: model("scripted"),
        thinking: ThinkingLevel::Off,
        system_prompt: "ROOT SYSTEM".into(),
        tools,
        cwd: h.dir.path().join("work"),
        artifacts_dir: h.dir.path().join("artifacts"),
        events: Some(mirror.tap(None)),
        compaction: Default::default(),
    };
    let mut agent = Agent::new(config, Vec::new(), None);
    tokio::time::timeout(GUARD, agent.prompt("ROOT fork"))
        .await
        .expect("hang guard")
        .unwrap();
    let rec = h
        .manager
        .store()
        .list_root(ROOT_SESSION_ID)
        .unwrap()
        .records
        .pop()
        .unwrap();
    assert!(rec.forked);
    assert_eq!(rec.bash_allow, ["echo allowed:*"]);
    let results = h.tool_results();
    assert!(
        results
            .iter()
            .any(|t| t.contains("the role's command allowlist refuses `touch forked.txt`")),
        "{results:?}"
    );
    assert!(!h.dir.path().join("work/forked.txt").exists());
}

/// A gated role that may delegate: its child (a role with no patterns and no read-only flag)
/// runs under the gated task's patterns, read-only flag and shell policy, so delegation is no
/// way around them.
#[tokio::test]
async fn a_child_of_a_restricted_task_inherits_its_restrictions() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    let provider = ScriptedProvider::new(|r| {
        let sys = r.system_prompt.clone();
        let last = last_text(r);
        let all = format!("{:?}", r.messages);
        if all.contains("GRANDCHILD") && !sys.contains("ROLE BODY OF gated") {
            if r.messages.len() <= 1 {
                return call("bash", json!({"command": "touch escaped.txt"}));
            }
            return text(&format!("grandchild: {last}"));
        }
        if sys.contains("ROLE BODY OF gated") {
            if r.messages.len() <= 1 {
                return call("bash", json!({"command": "touch direct.txt"}));
            }
            if last.contains("allowlist refuses") && !last.contains("grandchild:") {
                return call(
                    "Agent",
                    json!({"description": "g", "prompt": "GRANDCHILD go",
                           "subagent_type": "general-purpose"}),
                );
            }
            return text(&format!("child: {last}"));
        }
        text("?")
    });
    let mut defs = builtin_roles();
    defs.push(RoleDef {
        name: "gated".into(),
        description: "d".into(),
        tools: ToolList::Named(vec!["Agent".into(), "bash".into()]),
        bash_allow: vec!["git status:*".into()],
        prompt: "ROLE BODY OF gated".into(),
        ..RoleDef::default()
    });
    let (manager, root, _rx) = start_manager(
        dir.path(),
        provider.clone(),
        Models(&["scripted"]),
        defs,
        &json!({}),
    );
    let o = tokio::time::timeout(
        Duration::from_secs(30),
        manager.launch(&root, spec("gated", "CHILD"), None),
    )
    .await
    .unwrap()
    .map(single)
    .unwrap();
    let work = dir.path().join("work");
    assert!(!work.join("direct.txt").exists(), "{}", o.result);
    assert!(
        !work.join("escaped.txt").exists(),
        "the grandchild ran a command the gated task may not: {}",
        o.result
    );
    assert!(o.result.contains("allowlist refuses"), "{o:#?}");
}
