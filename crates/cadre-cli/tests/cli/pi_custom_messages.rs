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

fn only_file(dir: &Path) -> Vec<Value> {
    // Children's sessions are in a directory of their own there.
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "one session file in {dir:?}: {files:?}");
    json_lines(&std::fs::read_to_string(&files[0]).expect("read the session file"))
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

/// cadre: a background task whose notification reaches the parent (while it runs or after).
fn cadre_custom(wire: Wire) -> Vec<Value> {
    let fixture = Fixture::new();
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
    s.script(Rule::new(parent()).reply(Reply::text("Launched; waiting.")));
    s.script(
        Rule::new(child().and(Match::AssistantTurns(0))).reply(
            Reply::tool_call("call_read", "read", json!({"path": "notes.txt"}))
                .latency(Duration::from_millis(100)),
        ),
    );
    s.script(Rule::new(child()).reply(Reply::text("alpha line")));
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
