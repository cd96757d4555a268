//! The session service against the scripted model server: the idle parent's wake-up (O6),
//! settling, and operations while a run holds the agent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use cadre_core::config::CadreHome;
use cadre_host::{Host, HostContext, HostEvent, HostOptions, SessionChoice};
use cadre_protocol::{Message, UserContent};
use cadre_testkit::{FakeServer, Match, Reply, Rule};
use serde_json::json;

/// Every wait of these tests is bounded: a hang fails the test instead of blocking the suite.
const GUARD: Duration = Duration::from_secs(30);

struct World {
    server: FakeServer,
    _tmp: tempfile::TempDir,
    home: CadreHome,
    project: std::path::PathBuf,
}

async fn world() -> World {
    let server = FakeServer::start().await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let home = CadreHome::new(root.join("home"));
    let project = root.join("project");
    std::fs::create_dir_all(home.root()).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("notes.txt"), "alpha\n").unwrap();
    let models = json!({"providers": {"fake": {
        "baseUrl": server.anthropic_base_url(), "api": "anthropic-messages",
        "apiKey": "test-key", "models": [{"id": "m1"}]}}});
    std::fs::write(home.models_json(), models.to_string()).unwrap();
    World {
        server,
        _tmp: tmp,
        home,
        project,
    }
}

async fn start(w: &World, options: HostOptions) -> cadre_host::StartedHost {
    let ctx = Arc::new(HostContext::load_in(w.home.clone(), &w.project, true, None).unwrap());
    Host::start(
        ctx,
        HostOptions {
            model: Some("fake/m1".into()),
            ..options
        },
    )
    .await
    .unwrap()
}

async fn guarded<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, f).await.expect("hung")
}

fn text(m: &Message) -> String {
    match m {
        Message::User(u) => u.content.to_text(),
        Message::Assistant(a) => a.text(),
        Message::ToolResult(r) => cadre_protocol::join_text(&r.content),
        // Task notices arrive as custom messages.
        other => serde_json::to_string(other).unwrap(),
    }
}

/// Two background children end at different times; `settle` returns once both results were
/// delivered to the parent exactly once and the parent answered the last one.
#[tokio::test(flavor = "current_thread")]
async fn settle_waits_for_every_background_result_exactly_once() {
    let w = world().await;
    let s = &w.server;
    s.script(Rule::new(Match::first_user("CHILD fast")).reply(Reply::text("fast result")));
    s.script(
        Rule::new(Match::first_user("CHILD slow"))
            .reply(Reply::text("slow result").latency(Duration::from_millis(400))),
    );
    s.script(
        Rule::new(Match::first_user("ROOT").and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_a",
            "Agent",
            json!({"run_in_background": true, "tasks": [
                {"description": "fast", "prompt": "CHILD fast", "subagent_type": "Explore"},
                {"description": "slow", "prompt": "CHILD slow", "subagent_type": "Explore"}
            ]}),
        )),
    );
    s.script(Rule::new(Match::first_user("ROOT")).reply(Reply::text("root answered")));
    let started = start(&w, HostOptions::default()).await;
    let host = started.host;
    host.prompt(UserContent::Text("ROOT go".into()), None)
        .unwrap();
    let outcome = guarded(host.settle()).await.unwrap().expect("a run");
    assert!(outcome.error.is_none(), "{outcome:?}");
    assert!(!host.tasks().reports_owed());
    let conversation: Vec<String> = host.messages().iter().map(text).collect();
    for result in ["fast result", "slow result"] {
        let seen = conversation
            .iter()
            .filter(|m| m.contains("<task-notification>") && m.contains(result))
            .count();
        assert_eq!(seen, 1, "{result}: {conversation:#?}");
    }
    assert!(matches!(
        host.messages().last(),
        Some(Message::Assistant(_))
    ));
    guarded(host.shutdown()).await.unwrap();
}

/// A notice that arrives while the parent is idle starts a run on its own, without any
/// front-end call; while a run holds the agent, state and messages still answer.
#[tokio::test(flavor = "current_thread")]
async fn an_idle_parent_is_woken_by_a_notice() {
    let w = world().await;
    let s = &w.server;
    s.script(
        Rule::new(Match::first_user("CHILD"))
            .reply(Reply::text("child done").latency(Duration::from_millis(300))),
    );
    s.script(
        Rule::new(Match::last_user("<task-notification")).reply(Reply::text("woken and answered")),
    );
    s.script(
        Rule::new(Match::first_user("ROOT").and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_a",
            "Agent",
            json!({"description": "bg", "prompt": "CHILD x", "subagent_type": "Explore"}),
        )),
    );
    s.script(Rule::new(Match::first_user("ROOT")).reply(Reply::text("launched")));
    let started = start(
        &w,
        HostOptions {
            background_by_default: true,
            session: SessionChoice::None,
            ..HostOptions::default()
        },
    )
    .await;
    let host = started.host;
    let mut events = started.events;
    host.prompt(UserContent::Text("ROOT go".into()), None)
        .unwrap();
    // Watch the events: the first run ends, then the woken run answers the notice.
    let mut ends = 0;
    let mut task_ended = false;
    while ends < 2 {
        match guarded(events.recv()).await.expect("events") {
            HostEvent::Agent(cadre_protocol::AgentEvent::AgentEnd { .. }) => ends += 1,
            HostEvent::Task(cadre_core::orchestrator::manager::TaskEvent::Ended { .. }) => {
                task_ended = true;
            }
            HostEvent::Agent(_) | HostEvent::Task(_) => {
                // Shared handles answer at any time.
                let _ = host.state();
            }
        }
    }
    assert!(task_ended);
    let last = host.messages().last().map(text).unwrap_or_default();
    assert_eq!(last, "woken and answered");
    guarded(host.shutdown()).await.unwrap();
}
