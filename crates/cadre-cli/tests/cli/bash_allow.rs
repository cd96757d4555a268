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

/// A role whose tools hold no write tool gets a shell that cannot write, whatever its `Bash(…)`
/// patterns allow: `git diff --output=FILE` matches `git diff:*` and would write FILE. The
/// target lies outside the project, in a `writableRoots` directory a writing child may write;
/// the control is the same role with `write` added, whose `git diff` does write there.
#[test]
fn a_role_without_a_write_tool_cannot_write_through_its_allowed_commands() {
    if !cadre_tools::sandbox::landlock_status().is_enforced() {
        eprintln!(
            "SKIPPED: a role without a write tool: no usable Landlock here, so its bash is \
             refused before anything runs"
        );
        return;
    }
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
    // A change, so the diff has something to write.
    std::fs::write(f.project.join("notes.txt"), "changed\n").unwrap();
    let outside = f.project.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        f.home.join("settings.json"),
        json!({"subagents": {"writableRoots": [outside]}}).to_string(),
    )
    .unwrap();
    let agents = f.home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("differ.md"),
        "---\nname: differ\ndescription: Reads diffs.\ntools: read, Bash(git diff:*)\n---\n\
         Read the diff.\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("differ-writer.md"),
        "---\nname: differ-writer\ndescription: Reads diffs and writes.\n\
         tools: read, write, Bash(git diff:*)\n---\nRead the diff.\n",
    )
    .unwrap();

    const RO: &str = "[ro-differ]";
    const RW: &str = "[rw-differ]";
    let s = &f.server;
    let in_child = |marker: &'static str| Match::first_user(marker);
    let parent = || (!Match::first_user(RO)).and(!Match::first_user(RW));
    for (marker, file) in [(RO, "ro.diff"), (RW, "rw.diff")] {
        let target = outside.join(file).display().to_string();
        s.script(
            Rule::new(in_child(marker).and(Match::AssistantTurns(0))).reply(Reply::tool_call(
                "call_diff",
                "bash",
                json!({ "command": format!("git diff --output={target} HEAD") }),
            )),
        );
        s.script(Rule::new(in_child(marker)).reply(Reply::text("diffed")));
    }
    for (turn, role, marker) in [(0, "differ", RO), (1, "differ-writer", RW)] {
        s.script(
            Rule::new(parent().and(Match::AssistantTurns(turn))).reply(Reply::tool_call(
                format!("call_agent_{turn}"),
                "Agent",
                json!({"subagent_type": role, "description": "Diff",
                       "prompt": format!("{marker} Write the diff.")}),
            )),
        );
    }
    s.script(Rule::new(parent()).reply(Reply::text("Both diffed.")));
    f.run_print(Wire::Anthropic, &["Diff twice."])
        .assert_success();

    let result_of = |marker: &str| {
        f.server
            .requests()
            .into_iter()
            .filter(|r| r.first_user_text().is_some_and(|t| t.contains(marker)))
            .filter_map(|r| r.tool_results().pop().map(|(_, t)| t))
            .next()
            .unwrap_or_default()
    };
    // Both commands ran (the patterns allow them); only the writer's wrote.
    for marker in [RO, RW] {
        let result = result_of(marker);
        assert!(
            !result.is_empty() && !result.contains("allowlist refuses"),
            "{marker}: {result}"
        );
    }
    assert!(
        outside.join("rw.diff").exists(),
        "control: a role with a write tool writes through git diff --output: {}",
        result_of(RW)
    );
    assert!(
        !outside.join("ro.diff").exists(),
        "a role without a write tool wrote through git diff --output: {}",
        result_of(RO)
    );
    let records = task_records(&f);
    let differ = records
        .iter()
        .find(|r| r["agent"] == "differ")
        .expect("the differ's record");
    assert!(
        differ["diagnostics"]
            .to_string()
            .contains("read-only sandbox"),
        "{differ:#}"
    );
}
