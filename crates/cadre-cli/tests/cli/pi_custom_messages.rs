//! Runtime messages (Pi's `custom` role) against Pi 0.73.1's: cadre's task notification and a
//! custom message a Pi extension steers in while Pi runs, compared by shape in the events
//! (`message_start`/`message_end`, `agent_end.messages`) and in the session file (Pi's
//! `custom_message` entry).
//!
//! The conversations differ (cadre's notice comes from a background task, Pi's from the
//! extension), so only the custom messages are compared, not the whole streams.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cadre_testkit::{Match, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, Wire};
use crate::pi_conformance::{ALLOW, run_pi};
use crate::pi_shapes::{assert_same_shape, json_lines, pi_binary};

/// Steers one custom message in, shaped as cadre's task notification, once the first tool
/// call has ended.
const EXTENSION: &str = r#"export default function (pi) {
  let sent = false;
  pi.on("tool_execution_end", async () => {
    if (sent) return;
    sent = true;
    pi.sendMessage(
      { customType: "task-notification", content: "Task t1 finished.", display: true,
        details: { taskId: "t1" } },
      { deliverAs: "steer" },
    );
  });
}
"#;

const CHILD: &str = "[child]";

/// The custom messages of a run: their events, the ones in `agent_end`, and the session's
/// `custom_message` entries, as lines to compare.
fn custom_lines(stdout: &str, session: &[Value]) -> Vec<Value> {
    let events = json_lines(stdout);
    let mut out: Vec<Value> = events
        .iter()
        .filter(|e| e["message"]["role"] == "custom")
        .cloned()
        .collect();
    for end in events.iter().filter(|e| e["type"] == "agent_end") {
        for m in end["messages"].as_array().into_iter().flatten() {
            if m["role"] == "custom" {
                out.push(json!({"type": "agent_end.message", "message": m}));
            }
        }
    }
    out.extend(
        session
            .iter()
            .filter(|e| e["type"] == "custom_message")
            .cloned(),
    );
    out
}

/// The one session file in `dir`.
fn only_file_path(dir: &Path) -> PathBuf {
    // Children's sessions are in a directory of their own there.
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "one session file in {dir:?}: {files:?}");
    files.into_iter().next().unwrap_or_default()
}

fn only_file(dir: &Path) -> Vec<Value> {
    json_lines(&std::fs::read_to_string(only_file_path(dir)).expect("read the session file"))
}

/// Pi: a read, the extension's message steered in after it, then the answer.
fn pi_custom(pi: &Path, wire: Wire) -> Vec<Value> {
    let fixture = Fixture::new();
    let s = &fixture.server;
    s.script(Rule::new(Match::AssistantTurns(0)).reply(Reply::tool_call(
        "call_read",
        "read",
        json!({"path": "notes.txt"}),
    )));
    s.script(Rule::always().reply(Reply::text("Noted.")));
    let extension = fixture.user_home.join("notify.js");
    std::fs::write(&extension, EXTENSION).expect("write the extension");
    let dir = fixture.user_home.join("pi-sessions");
    let (extension, dir_arg) = (extension.to_string_lossy(), dir.to_string_lossy());
    let out = run_pi(
        pi,
        &fixture,
        &[
            "--mode",
            "json",
            "-e",
            &extension,
            "--session-dir",
            &dir_arg,
            "--model",
            wire.model(),
            "Read notes.txt.",
        ],
    );
    custom_lines(&out.stdout, &only_file(&dir))
}

/// The parent launches a background child that reads a file; its notice gets an answer.
fn script_background(fixture: &Fixture) {
    let s = &fixture.server;
    let parent = || !Match::first_user(CHILD);
    let child = || Match::first_user(CHILD);
    s.script(
        Rule::new(parent().and(Match::last_user("<task-notification>")))
            .reply(Reply::text("Noted.")),
    );
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_bg",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Read the notes",
                   "name": "notes-reader", "run_in_background": true,
                   "prompt": format!("{CHILD} Read notes.txt.")}),
        )),
    );
    s.script(
        Rule::new(parent().and(!Match::last_user("Anything else?")))
            .reply(Reply::text("Launched; waiting.")),
    );
    s.script(
        Rule::new(child().and(Match::AssistantTurns(0))).reply(
            Reply::tool_call("call_read", "read", json!({"path": "notes.txt"}))
                .latency(Duration::from_millis(100)),
        ),
    );
    s.script(Rule::new(child()).reply(Reply::text("alpha line")));
}

/// cadre: a background task whose notification reaches the parent (while it runs or after).
fn cadre_custom(wire: Wire) -> Vec<Value> {
    let fixture = Fixture::new();
    script_background(&fixture);
    let out = fixture.run(&[
        "--mode",
        "json",
        "--model",
        wire.model(),
        "Read notes.txt in the background.",
    ]);
    out.assert_success();
    custom_lines(&out.stdout, &only_file(&fixture.session_dir()))
}

/// Pi continues a session cadre wrote with a tool call, its result and a task notification:
/// the conversation it sends has them all, the notification as user text as Pi sends custom
/// messages.
#[test]
fn pi_continues_a_cadre_session_with_a_notification() {
    let Some(pi) = pi_binary() else {
        return;
    };
    let fixture = Fixture::new();
    script_background(&fixture);
    let out = fixture.run(&[
        "--mode",
        "json",
        "--model",
        Wire::Anthropic.model(),
        "Read notes.txt in the background.",
    ]);
    out.assert_success();
    let session = only_file_path(&fixture.session_dir());
    let text = std::fs::read_to_string(&session).expect("read the session");
    assert!(text.contains("\"type\":\"custom_message\""), "{text}");

    fixture
        .server
        .script(Rule::new(Match::last_user("Anything else?")).reply(Reply::text("No.")));
    let session_arg = session.to_string_lossy();
    let out = run_pi(
        &pi,
        &fixture,
        &[
            "--mode",
            "json",
            "--session",
            &session_arg,
            "--model",
            Wire::Anthropic.model(),
            "Anything else?",
        ],
    );
    assert!(out.success(), "{out:#?}");
    let request = fixture.last_request();
    assert_eq!(request.last_user_text().as_deref(), Some("Anything else?"));
    let sent = request.body["messages"].to_string();
    for part in [
        "Read notes.txt in the background.",
        "call_bg",
        "<task-notification>",
    ] {
        assert!(sent.contains(part), "Pi's request lacks {part:?}: {sent}");
    }
    let events = json_lines(&out.stdout);
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "message_end" && e["message"]["content"][0]["text"] == "No."),
        "{events:#?}"
    );
}

#[test]
fn a_task_notification_has_the_shape_of_pis_custom_messages() {
    let Some(pi) = pi_binary() else {
        return;
    };
    let wire = Wire::Anthropic;
    let pi_lines = pi_custom(&pi, wire);
    let cadre_lines = cadre_custom(wire);
    let kinds = |lines: &[Value]| -> Vec<String> {
        lines
            .iter()
            .map(|l| l["type"].as_str().unwrap_or("?").to_string())
            .collect()
    };
    assert_eq!(
        kinds(&pi_lines),
        [
            "message_start",
            "message_end",
            "agent_end.message",
            "custom_message"
        ],
        "{pi_lines:#?}"
    );
    assert_same_shape(&pi_lines, &cadre_lines, ALLOW);
}
