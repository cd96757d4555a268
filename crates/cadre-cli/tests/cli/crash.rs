//! Kill -9 of a `cadre -p` run with live children (Z1, O13): the children's commands die with
//! it, on restart nothing is stuck `running`, every task record and session file reads back,
//! and a killed task can be continued with `SendMessage` from its session file.

use std::path::PathBuf;

use cadre_testkit::{Match, RecordedRequest, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{
    Fixture, HANG_GUARD, Running, Wire, assert_valid_session, text_of, wait_until,
};
use crate::orchestration::task_records;
use crate::supervise::{assert_all_end, live_processes_in};

const CHILD: &str = "[crash child]";
const CONTINUE: &str = "Continue the work the crash interrupted.";
const RESUME: &str = "[resume] Finish what you started.";
const RESUMED: &str = "Resumed from my session and finished.";

/// The three children: two in the background, one in the foreground (which blocks the parent).
const CHILDREN: [(&str, bool); 3] = [("bg-a", true), ("bg-b", true), ("fg-c", false)];

fn parent() -> Match {
    !Match::first_user(CHILD)
}

fn launch(name: &str, background: bool) -> Value {
    json!({"subagent_type": "general-purpose", "description": format!("Work item {name}"),
           "name": name, "run_in_background": background,
           "prompt": format!("{CHILD} #{name}# Mark that you started, then do the long part.")})
}

fn script(f: &Fixture) {
    let s = &f.server;
    // The continued child, reopened from its session file.
    s.script(
        Rule::new(Match::first_user(CHILD).and(Match::last_user(RESUME)))
            .reply(Reply::text(RESUMED)),
    );
    // The second run: continue a killed child, then answer once its result is in.
    s.script(Rule::new(parent().and(Match::any_text(RESUMED))).reply(Reply::text("Continued.")));
    s.script(
        Rule::new(parent().and(Match::last_user(CONTINUE))).reply(Reply::tool_call(
            "call_send",
            "SendMessage",
            json!({"to": "fg-c", "message": RESUME}),
        )),
    );
    // The first run: three launches in one turn.
    let mut first = Reply::new();
    for (i, (name, background)) in CHILDREN.iter().enumerate() {
        first = first.tool_call(
            format!("call_launch_{i}"),
            "Agent",
            launch(name, *background),
        );
    }
    s.script(Rule::new(parent().and(Match::AssistantTurns(0))).reply(first));
    s.script(Rule::new(parent()).reply(Reply::text("Waiting for the workers.")));
    // Each child marks that it runs, then sleeps far longer than the test lets it.
    for (name, _) in CHILDREN {
        s.script(
            Rule::new(Match::first_user(format!("#{name}#")).and(Match::AssistantTurns(0))).reply(
                Reply::tool_call(
                    format!("call_bash_{name}"),
                    "bash",
                    json!({"command": format!("touch started-{name} && sleep 30")}),
                ),
            ),
        );
    }
    s.script(Rule::new(Match::first_user(CHILD)).reply(Reply::text("Done.")));
}

#[test]
fn kill_9_with_live_children_leaves_nothing_running_and_a_killed_task_continues() {
    let f = Fixture::new();
    script(&f);
    let run = Running::spawn(
        f.command(&[
            "-p",
            "--model",
            Wire::Anthropic.model(),
            "Start three workers.",
        ]),
        None,
    );
    wait_until("every child to run its command", || {
        CHILDREN
            .iter()
            .all(|(name, _)| f.project.join(format!("started-{name}")).exists())
    });
    wait_until("every task record to say running", || {
        let records = task_records(&f);
        records.len() == 3 && records.iter().all(|r| r["status"] == "running")
    });
    wait_until("every child's sleep to run", || {
        live_processes_in(&f.project)
            .iter()
            .filter(|p| p.cmdline == "sleep 30")
            .count()
            == CHILDREN.len()
    });
    run.signal("KILL");
    let out = run.wait(HANG_GUARD);
    assert_eq!(out.code, None, "ended by the signal: {out:#?}");

    // Each child's command dies with the killed process: its supervisor kills the group.
    assert_all_end(&f.project, "sleep 30");

    // Z1: every record parses (atomic writes), still saying running: nobody has looked yet.
    let records = task_records(&f);
    assert_eq!(records.len(), 3);
    for r in &records {
        assert_eq!(r["status"], "running", "{r:#}");
    }
    // Every session file, the root's and each child's, loads.
    let mut sessions: Vec<PathBuf> = f.session_files();
    assert_eq!(sessions.len(), 1, "one root session: {sessions:?}");
    for r in &records {
        let path = r["sessionFile"].as_str().unwrap_or_else(|| panic!("{r:#}"));
        sessions.push(PathBuf::from(path));
    }
    for path in &sessions {
        assert_valid_session(path);
        let loaded = cadre_core::session::load_session(path)
            .unwrap_or_else(|e| panic!("{} does not load: {e}", path.display()));
        assert!(
            loaded.dropped_lines.is_empty(),
            "{:?}",
            loaded.dropped_lines
        );
    }

    // `cadre tasks` recovers first: nothing running, the killed three failed/orphaned.
    let out = f.run(&["tasks"]);
    out.assert_success();
    assert!(!out.stdout.contains("running"), "{}", out.stdout);
    assert_eq!(
        out.stdout.matches("failed/orphaned").count(),
        3,
        "{}",
        out.stdout
    );
    for r in task_records(&f) {
        assert_eq!(r["status"], "failed", "{r:#}");
        assert_eq!(r["error"], "orphaned", "{r:#}");
    }

    // Continue the killed foreground child: it is reopened from its session file.
    let before = f.server.requests().len();
    let out = f.run_print(Wire::Anthropic, &["--continue", CONTINUE]);
    out.assert_success();
    assert_eq!(out.stdout.trim_end(), "Continued.", "{out:#?}");
    let requests = f.server.requests();
    let resumed: Vec<&RecordedRequest> = requests[before..]
        .iter()
        .filter(|r| r.first_user_text().is_some_and(|t| t.contains(CHILD)))
        .collect();
    assert_eq!(resumed.len(), 1, "one new request of the continued child");
    let history = resumed[0].body["messages"].to_string();
    assert!(
        history.contains("#fg-c#") && history.contains("touch started-fg-c && sleep 30"),
        "its earlier conversation is in the request: {history}"
    );
    assert!(history.contains("[resume]"), "{history}");
    let records = task_records(&f);
    let fg = records
        .iter()
        .find(|r| r["name"] == "fg-c")
        .expect("the fg-c record");
    assert_eq!(fg["status"], "completed", "{fg:#}");
    for r in records.iter().filter(|r| r["name"] != "fg-c") {
        assert_eq!(r["status"], "failed", "{r:#}");
    }
    // The output has the continuation after its separator.
    let output = std::fs::read_to_string(fg["outputFile"].as_str().unwrap()).unwrap();
    assert!(output.contains(RESUMED), "{output}");
    // The killed run's session continued cleanly: every tool call in the final request has a
    // result, including the launches the crash cut off.
    let last = f.last_request();
    let text: Vec<String> = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(text_of)
        .collect();
    assert!(text.iter().any(|t| t.contains(CONTINUE)), "{text:?}");
    assert_eq!(f.server.check_tool_calls_answered(), Ok(()));
}
