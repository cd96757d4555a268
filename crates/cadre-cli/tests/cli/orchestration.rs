//! Subagents through the binary: background completion in print and JSON modes (O6), a fan-out
//! of 8 with one failing child (O1, V6), and plan mode (S6).
//!
//! The parent and its children share one fake server; a child's conversation starts with a
//! marker, so routing never confuses the two. Parent replies are routed by content (did a
//! notification arrive?) rather than by turn count, so the scripts hold whatever order the
//! child's end and the parent's turns take.

use std::time::Duration;

use cadre_testkit::{Fault, Match, RecordedRequest, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, Wire, tool_result_text};
use crate::json_mode::parse_json_lines;

const CHILD: &str = "[child]";
const NOTIFICATION: &str = "<task-notification>";
/// Inside a notification only: the tool result of a background launch mentions the element's
/// name, so counting that would count the launch too.
const NOTIFIED_ID: &str = "<task-id>";
const FINAL: &str = "Final answer, written after the background report.";

fn parent() -> Match {
    !Match::first_user(CHILD)
}

fn child() -> Match {
    Match::first_user(CHILD)
}

fn is_child(r: &RecordedRequest) -> bool {
    r.first_user_text().is_some_and(|t| t.contains(CHILD))
}

/// How many task notifications a request's conversation holds (the system prompt and tool
/// descriptions are outside `messages`, so a mention there does not count).
fn notifications_in(r: &RecordedRequest) -> usize {
    r.body["messages"].to_string().matches(NOTIFIED_ID).count()
}

/// The parent launches one background Explore child and answers at once; a notification gets
/// the final answer. The child reads a file, slowly, so the parent's first answer is (almost
/// always) given before the child ends — the script holds either way.
fn script_background(f: &Fixture) {
    let s = &f.server;
    s.script(Rule::new(parent().and(Match::last_user(NOTIFICATION))).reply(Reply::text(FINAL)));
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_bg",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Read the notes",
                   "name": "notes-reader", "run_in_background": true,
                   "prompt": format!("{CHILD} Read notes.txt and report its first line.")}),
        )),
    );
    s.script(Rule::new(parent()).reply(Reply::text("Launched it; waiting for the report.")));
    s.script(
        Rule::new(child().and(Match::AssistantTurns(0))).reply(
            Reply::tool_call("call_read", "read", json!({"path": "notes.txt"}))
                .latency(Duration::from_millis(300)),
        ),
    );
    s.script(Rule::new(child()).reply(Reply::text("The first line is `alpha line`.")));
}

/// The one task record of this home: `(record, path)`.
fn only_task(f: &Fixture) -> Value {
    let records = task_records(f);
    assert_eq!(records.len(), 1, "{records:#?}");
    records.into_iter().next().unwrap()
}

/// Every `task.json` under CADRE_HOME/tasks, parsed.
pub fn task_records(f: &Fixture) -> Vec<Value> {
    let mut out = Vec::new();
    let Ok(roots) = std::fs::read_dir(f.home.join("tasks")) else {
        return out;
    };
    for root in roots.filter_map(Result::ok) {
        for task in std::fs::read_dir(root.path()).into_iter().flatten() {
            let path = task.unwrap().path().join("task.json");
            if path.exists() {
                let text = std::fs::read_to_string(&path).unwrap();
                let value: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
                out.push(value);
            }
        }
    }
    out
}

/// What every background run must show: the run waited for the child, the notification
/// reached the parent exactly once, and the parent's answer to it came last.
fn assert_background_settled(f: &Fixture) {
    let requests = f.server.requests();
    let parents: Vec<&RecordedRequest> = requests.iter().filter(|r| !is_child(r)).collect();
    let children = requests.iter().filter(|r| is_child(r)).count();
    assert_eq!(children, 2, "the child made its two turns");
    let last = parents.last().expect("parent requests");
    assert_eq!(
        notifications_in(last),
        1,
        "exactly one notification in the parent's final request: {}",
        last.body["messages"]
    );
    assert!(
        parents.iter().all(|r| notifications_in(r) <= 1),
        "no notification is delivered twice"
    );
    let text = last.body["messages"].to_string();
    assert!(text.contains("notes-reader"), "{text}");
    assert!(text.contains("alpha line"), "the result is in it: {text}");
    // Answered: the server gave the parent its final reply, and the record says completed.
    assert_eq!(
        f.server
            .check_tool_calls_answered()
            .map_err(|e| e.to_string()),
        Ok(())
    );
    let record = only_task(f);
    assert_eq!(record["status"], "completed", "{record:#}");
    assert_eq!(record["background"], true, "{record:#}");
}

#[test]
fn print_mode_waits_for_a_background_child_and_its_answered_notification() {
    let f = Fixture::new();
    script_background(&f);
    let out = f.run_print(Wire::Anthropic, &["Read the notes in the background."]);
    out.assert_success();
    assert_eq!(
        out.stdout.trim_end(),
        FINAL,
        "stdout is the answer after the notification: {out:#?}"
    );
    assert_background_settled(&f);
}

#[test]
fn json_mode_waits_for_a_background_child_and_its_answered_notification() {
    let f = Fixture::new();
    script_background(&f);
    let out = f.run_print(
        Wire::Anthropic,
        &["--mode", "json", "Read the notes in the background."],
    );
    out.assert_success();
    let events = parse_json_lines(&out.stdout);
    assert_background_settled(&f);
    // The notification is an event of the parent's conversation, before the final answer.
    let position = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred);
    let notice =
        position(&|e| e["type"] == "message_end" && e["message"].to_string().contains(NOTIFIED_ID))
            .unwrap_or_else(|| panic!("no notification message in {events:#?}"));
    let last_answer = events
        .iter()
        .rposition(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .expect("an assistant message");
    assert!(notice < last_answer, "notification before the final answer");
    assert!(
        events[last_answer]["message"].to_string().contains(FINAL),
        "{}",
        events[last_answer]
    );
    let notices = events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"].to_string().contains(NOTIFIED_ID))
        .count();
    assert_eq!(notices, 1, "one notification message");
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some(json!("agent_end"))
    );
}

#[test]
fn fan_out_of_eight_with_one_failing_child_marks_it_degraded_and_keeps_the_rest() {
    let f = Fixture::new();
    let s = &f.server;
    let tasks: Vec<Value> = (0..8)
        .map(|i| {
            json!({"subagent_type": "Explore", "description": format!("Probe part {i}"),
                   "prompt": format!("{CHILD} #{i}# Read notes.txt and report.")})
        })
        .collect();
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_fan",
            "Agent",
            json!({"tasks": tasks}),
        )),
    );
    s.script(Rule::new(parent()).reply(Reply::text("Seven reported, one failed.")));
    // Child #5's model request is refused outright (400 is not retried).
    s.script(
        Rule::new(Match::first_user(format!("{CHILD} #5#")))
            .reply(Reply::failing(Fault::status(400))),
    );
    s.script(
        Rule::new(child().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_read",
            "read",
            json!({"path": "notes.txt"}),
        )),
    );
    s.script(Rule::new(child()).reply(Reply::text("notes.txt starts with alpha.")));

    let out = f.run_print(Wire::Anthropic, &["Probe the project in eight parts."]);
    out.assert_success();
    assert_eq!(out.stdout.trim_end(), "Seven reported, one failed.");

    let last = f.last_request();
    assert!(!is_child(&last), "the parent answered last");
    let result = tool_result_text(&last);
    assert!(
        result.starts_with("8 tasks: 7 ok, 1 degraded."),
        "the Agent result: {result}"
    );
    assert_eq!(result.matches("[degraded]").count(), 1, "{result}");
    assert!(
        result.contains("Probe part 5"),
        "the failed task is named: {result}"
    );
    assert_eq!(
        result.matches("notes.txt starts with alpha.").count(),
        7,
        "every other child's result arrived: {result}"
    );
    let records = task_records(&f);
    assert_eq!(records.len(), 8);
    let failed: Vec<&Value> = records.iter().filter(|r| r["status"] == "failed").collect();
    assert_eq!(failed.len(), 1, "{records:#?}");
    assert!(
        failed[0]["prompt"].as_str().unwrap().contains("#5#"),
        "{:#}",
        failed[0]
    );
    assert_eq!(
        records
            .iter()
            .filter(|r| r["status"] == "completed")
            .count(),
        7
    );
}

#[test]
fn plan_mode_refuses_a_code_child_and_allows_explore() {
    let f = Fixture::new();
    let s = &f.server;
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_code",
            "Agent",
            json!({"subagent_type": "code", "description": "Change the code",
                   "prompt": format!("{CHILD} Rewrite src/lib.rs.")}),
        )),
    );
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(1))).reply(Reply::tool_call(
            "call_explore",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Look at the code",
                   "prompt": format!("{CHILD} Describe src/lib.rs.")}),
        )),
    );
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(2))).reply(Reply::tool_call(
            "call_worktree",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Look in a worktree",
                   "isolation": "worktree",
                   "prompt": format!("{CHILD} Describe src/lib.rs in a worktree.")}),
        )),
    );
    s.script(Rule::new(parent()).reply(Reply::text("Planned.")));
    s.script(Rule::new(child()).reply(Reply::text("to_eur converts cents.")));

    let out = f.run_print(Wire::Anthropic, &["--plan", "Plan a change."]);
    out.assert_success();
    assert_eq!(out.stdout.trim_end(), "Planned.");

    let requests = f.server.requests();
    let parents: Vec<&RecordedRequest> = requests.iter().filter(|r| !is_child(r)).collect();
    assert_eq!(parents.len(), 4);
    // The refusal is the code launch's tool result, and says why.
    let refused = tool_result_text(parents[1]);
    assert!(
        refused.contains("plan mode") && refused.contains("`code` may not launch"),
        "{refused}"
    );
    // Explore ran: exactly one child conversation, and its result reached the parent.
    let children: Vec<&RecordedRequest> = requests.iter().filter(|r| is_child(r)).collect();
    assert_eq!(children.len(), 1);
    assert!(
        children[0]
            .first_user_text()
            .is_some_and(|t| t.contains("Describe src/lib.rs")),
        "only the Explore child started"
    );
    assert!(
        tool_result_text(parents[2]).contains("to_eur converts cents."),
        "{}",
        tool_result_text(parents[2])
    );
    // Worktree isolation is refused, even for a planning role.
    let refused = tool_result_text(parents[3]);
    assert!(
        refused.contains("plan mode: worktree isolation is refused"),
        "{refused}"
    );
    // No tool that writes is offered to the root either.
    let tools = Wire::Anthropic.tool_names(parents[0]);
    assert!(tools.iter().any(|t| t == "Agent"), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t == "edit" || t == "write"),
        "{tools:?}"
    );
    assert_eq!(task_records(&f).len(), 1, "nothing was created for `code`");
    // Asking for a write tool under --plan is refused before any request.
    let before = f.server.requests().len();
    let out = f.run_print(
        Wire::Anthropic,
        &["--plan", "--tools", "read,write,Agent", "x"],
    );
    let line = out.assert_one_line_error();
    assert!(line.contains("--plan refuses write tools"), "{line}");
    assert_eq!(f.server.requests().len(), before);
}

/// A session continued in plan mode (`--plan --continue`) cannot have an earlier writing task
/// write by sending it a message: the continuation is refused as launching `code` is. The
/// control continues the same session without plan mode, and the same message makes it write.
#[test]
fn plan_mode_refuses_to_continue_a_writing_task() {
    const WRITER: &str = "[writer]";
    let f = Fixture::new();
    let s = &f.server;
    let writer = || Match::first_user(WRITER);
    let write = |file: &str| {
        Reply::tool_call(
            format!("call_write_{file}"),
            "write",
            json!({"path": file, "content": "written\n"}),
        )
    };
    s.script(
        Rule::new(
            writer()
                .and(Match::last_user("LEAK"))
                .and(!Match::last_tool_result("plan-leak.txt")),
        )
        .reply(write("plan-leak.txt")),
    );
    s.script(
        Rule::new(
            writer()
                .and(Match::last_user("CONTROL"))
                .and(!Match::last_tool_result("control.txt")),
        )
        .reply(write("control.txt")),
    );
    s.script(Rule::new(writer()).reply(Reply::text("done")));
    let root = || !Match::first_user(WRITER);
    s.script(
        Rule::new(root().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_code",
            "Agent",
            json!({"subagent_type": "code", "name": "writer", "description": "Get ready",
                   "prompt": format!("{WRITER} Get ready to change the code.")}),
        )),
    );
    for (turn, message) in [
        (2, "LEAK: write plan-leak.txt"),
        (4, "CONTROL: write control.txt"),
    ] {
        s.script(
            Rule::new(root().and(Match::AssistantTurns(turn))).reply(Reply::tool_call(
                format!("call_send_{turn}"),
                "SendMessage",
                json!({"to": "writer", "message": message}),
            )),
        );
    }
    s.script(Rule::new(root()).reply(Reply::text("Noted.")));

    f.run_print(Wire::Anthropic, &["Prepare a writer."])
        .assert_success();
    assert_eq!(only_task(&f)["status"], "completed");

    // Plan mode, the same session: the message is refused before the task runs again.
    f.run_print(Wire::Anthropic, &["--plan", "--continue", "Have it write."])
        .assert_success();
    // The SendMessage result: in the first root request after the call.
    let sent = f
        .server
        .requests()
        .into_iter()
        .find(|r| !is_child(r) && r.body["messages"].to_string().contains("call_send_2"))
        .map(|r| tool_result_text(&r))
        .unwrap_or_default();
    assert!(
        !f.project.join("plan-leak.txt").exists(),
        "a writing task wrote when continued in plan mode"
    );
    assert!(
        sent.contains("plan mode") && sent.contains("may not be continued"),
        "{sent}"
    );
    let record = only_task(&f);
    assert_eq!(record["usage"]["turns"], json!(1), "{record:#}");

    // Control: the same continuation outside plan mode writes.
    f.run_print(Wire::Anthropic, &["--continue", "Have it write now."])
        .assert_success();
    assert!(
        f.project.join("control.txt").exists(),
        "control: the continuation outside plan mode writes"
    );
}

#[test]
fn help_makes_subagents_discoverable() {
    let f = Fixture::new();
    let out = f.run(&["--help"]);
    out.assert_success();
    for needle in [
        "Subagents:",
        "Agent, SendMessage, TaskOutput and TaskStop",
        ".cadre/agents/*.md",
        "cadre agents",
        "cadre tasks",
        "cadre task show|output|stop|apply",
        "cadre trust",
        "cadre doctor",
        "--plan",
        "CADRE_IDLE_TIMEOUT_MS",
    ] {
        assert!(
            out.stdout.contains(needle),
            "--help lacks {needle}:\n{}",
            out.stdout
        );
    }
    // The management commands are listed as commands too.
    for command in ["agents", "doctor", "tasks", "task", "trust"] {
        assert!(
            out.stdout
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{command} "))),
            "--help lacks the `{command}` command:\n{}",
            out.stdout
        );
    }
}
