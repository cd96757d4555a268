//! A role file's `Bash(…)` tool entries through the whole binary: a child of a role with
//! `tools: read, Bash(git status:*)` runs `git status`, is refused `touch x` before it runs, and
//! is still refused after `SendMessage` continues it; `cadre task` shows the patterns.

use cadre_testkit::{Match, RecordedRequest, Reply, Rule};
use serde_json::json;

use crate::harness::{Fixture, Wire, git};
use crate::orchestration::task_records;

const CHILD: &str = "[status-checker]";

const ROLE: &str = "---\nname: status-checker\ndescription: Looks at the git status only.\n\
tools: read, Bash(git status:*)\n---\nLook at the status.\n";

fn is_child(r: &RecordedRequest) -> bool {
    r.first_user_text().is_some_and(|t| t.contains(CHILD))
}

#[test]
fn a_role_with_bash_patterns_runs_only_those_commands_also_after_a_continuation() {
    let f = Fixture::new();
    git(&f.project, &["init", "-q"]);
    git(&f.project, &["add", "."]);
    git(
        &f.project,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "init",
        ],
    );
    let dir = f.home.join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("status-checker.md"), ROLE).unwrap();

    let s = &f.server;
    let child = || Match::first_user(CHILD);
    let parent = || !Match::first_user(CHILD);
    let bash = |i: usize, cmd: &str| {
        Reply::tool_call(format!("call_bash_{i}"), "bash", json!({ "command": cmd }))
    };
    s.script(Rule::new(child().and(Match::AssistantTurns(0))).reply(bash(0, "git status")));
    s.script(Rule::new(child().and(Match::AssistantTurns(1))).reply(bash(1, "touch x")));
    s.script(Rule::new(child().and(Match::AssistantTurns(2))).reply(Reply::text("checked")));
    // Continued by SendMessage: three turns so far.
    s.script(Rule::new(child().and(Match::AssistantTurns(3))).reply(bash(3, "touch y")));
    s.script(Rule::new(child()).reply(Reply::text("refused again")));
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_agent",
            "Agent",
            json!({"subagent_type": "status-checker", "name": "checker",
                   "description": "Check the status",
                   "prompt": format!("{CHILD} Check the status.")}),
        )),
    );
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(1))).reply(Reply::tool_call(
            "call_send",
            "SendMessage",
            json!({"to": "checker", "message": "Now touch y."}),
        )),
    );
    s.script(Rule::new(parent()).reply(Reply::text("The checker reported.")));
    f.run_print(Wire::Anthropic, &["Check the status."])
        .assert_success();

    let children: Vec<RecordedRequest> = f.server.requests().into_iter().filter(is_child).collect();
    assert_eq!(children.len(), 5, "{}", children.len());
    // The model was told the patterns.
    let tools = children[0].body["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let bash_tool = tools
        .iter()
        .find(|t| t["name"] == "bash")
        .expect("bash tool");
    let description = bash_tool["description"].as_str().unwrap_or_default();
    assert!(description.contains("`git status:*`"), "{description}");
    let results: Vec<String> = children
        .iter()
        .map(|r| r.tool_results().pop().map(|(_, t)| t).unwrap_or_default())
        .collect();
    assert!(
        results[1].contains("On branch"),
        "git status ran: {results:?}"
    );
    assert!(
        results[2].contains("the role's command allowlist refuses `touch x`")
            && results[2].contains("`git status:*`"),
        "{results:?}"
    );
    assert!(
        results[4].contains("the role's command allowlist refuses `touch y`"),
        "after the continuation: {results:?}"
    );
    assert!(!f.project.join("x").exists() && !f.project.join("y").exists());

    let records = task_records(&f);
    assert_eq!(records.len(), 1, "{records:#?}");
    let record = &records[0];
    assert_eq!(record["bashAllow"], json!(["git status:*"]), "{record:#}");
    assert_eq!(record["usage"]["toolCallsBlocked"], json!(2), "{record:#}");

    let out = f.run(&["task", "show", "checker"]);
    out.assert_success();
    assert!(
        out.stdout.contains("bash only git status:*"),
        "{}",
        out.stdout
    );
}
