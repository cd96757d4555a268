//! V5 through the whole runtime: `cadre -p` launches a `code` child with `review: true` in a
//! real git project whose `make test` is the check. The implementer edits and runs the check;
//! a fresh read-only `review` task (its bash in the kernel sandbox under the inspect policy)
//! looks at `git diff` and answers. NEEDS_FIX then PASS completes the task after one fix round
//! in the implementer's own session; NEEDS_FIX twice fails it with the findings and the
//! implementer's task id, which the parent sees in its tool result.

use cadre_testkit::{Match, RecordedRequest, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, Wire, git, tool_result_text};
use crate::orchestration::task_records;

const IMPL: &str = "[implementer]";
const PACKET: &str = "Review packet: ";
const FIX: &str = "An independent review";
const NEEDS_FIX: &str = "VERDICT: NEEDS_FIX\nFINDINGS:\n- src/lib.rs:2 rounds the wrong way";
const PASS: &str = "VERDICT: PASS\nFINDINGS:\n- NONE";

fn implementer() -> Match {
    Match::first_user(IMPL)
}

fn reviewer() -> Match {
    Match::first_user(PACKET)
}

fn parent() -> Match {
    (!Match::first_user(IMPL)).and(!Match::first_user(PACKET))
}

/// A git project whose `make test` passes, and the script of a parent, an implementer (with
/// its fix round) and reviewers whose second answer is `second`.
fn script(second: &str) -> Fixture {
    let f = Fixture::new();
    std::fs::write(f.project.join("Makefile"), "test:\n\ttrue\n").unwrap();
    git(&f.project, &["init", "-q"]);
    git(&f.project, &["add", "."]);
    git(&f.project, &["commit", "-qm", "init"]);
    let s = &f.server;
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_agent",
            "Agent",
            json!({"subagent_type": "code", "description": "Fix rounding", "review": true,
                   "prompt": format!("{IMPL} Make to_eur round to the nearest cent.")}),
        )),
    );
    s.script(Rule::new(parent()).reply(Reply::text("Parent done.")));
    let edit = |n: usize, text: &str| {
        Rule::new(implementer().and(Match::AssistantTurns(n))).reply(Reply::tool_call(
            format!("call_write_{n}"),
            "write",
            json!({"path": "src/lib.rs", "content": text}),
        ))
    };
    let check = |n: usize| {
        Rule::new(implementer().and(Match::AssistantTurns(n))).reply(Reply::tool_call(
            format!("call_check_{n}"),
            "bash",
            json!({"command": "make test"}),
        ))
    };
    s.script(edit(
        0,
        "pub fn to_eur(cents: i64) -> i64 {\n    (cents * 92 + 50) / 100\n}\n",
    ));
    s.script(check(1));
    s.script(Rule::new(implementer().and(Match::AssistantTurns(2))).reply(Reply::text("Done.")));
    s.script(edit(
        3,
        "pub fn to_eur(cents: i64) -> i64 {\n    (cents * 92 + 49) / 100\n}\n",
    ));
    s.script(check(4));
    s.script(Rule::new(implementer()).reply(Reply::text("Fixed and re-checked.")));
    s.script(
        Rule::new(reviewer().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_diff",
            "bash",
            json!({"command": "git diff --stat"}),
        )),
    );
    s.script(Rule::new(reviewer().and(Match::first_user("-2.md"))).reply(Reply::text(second)));
    s.script(Rule::new(reviewer()).reply(Reply::text(NEEDS_FIX)));
    f
}

fn requests(f: &Fixture, m: impl Fn(&RecordedRequest) -> bool) -> Vec<RecordedRequest> {
    f.server.requests().into_iter().filter(|r| m(r)).collect()
}

fn first_user_has(r: &RecordedRequest, s: &str) -> bool {
    r.first_user_text().is_some_and(|t| t.contains(s))
}

fn by_agent(records: &[Value], agent: &str) -> Vec<Value> {
    records
        .iter()
        .filter(|r| r["agent"] == agent)
        .cloned()
        .collect()
}

#[test]
fn needs_fix_then_pass_completes_after_one_fix_round() {
    let f = script(PASS);
    f.run_print(Wire::Anthropic, &["Fix the rounding, reviewed."])
        .assert_success();
    let records = task_records(&f);
    let implementer = &by_agent(&records, "code")[0];
    assert_eq!(implementer["status"], "completed", "{implementer:#}");
    let reviewers = by_agent(&records, "review");
    assert_eq!(reviewers.len(), 2, "{records:#?}");
    for r in &reviewers {
        assert_eq!(r["readonly"], json!(true));
        assert_eq!(r["status"], "completed", "{r:#}");
    }
    assert!(
        std::fs::read_to_string(f.project.join("src/lib.rs"))
            .unwrap()
            .contains("+ 49")
    );
    // The reviewer's sandboxed, policy-checked bash ran `git diff --stat` and saw the change.
    let reviews = requests(&f, |r| {
        first_user_has(r, PACKET) && r.assistant_turns() == 1
    });
    assert_eq!(reviews.len(), 2);
    for r in &reviews {
        let out = tool_result_text(r);
        assert!(out.contains("src/lib.rs"), "{out}");
    }
    // The fix prompt reached the implementer's own conversation.
    let fixes = requests(&f, |r| {
        first_user_has(r, IMPL) && r.last_user_text().is_some_and(|t| t.contains(FIX))
    });
    assert!(!fixes.is_empty());
    let last_parent = requests(&f, |r| {
        !first_user_has(r, IMPL) && !first_user_has(r, PACKET)
    })
    .pop()
    .unwrap();
    let result = tool_result_text(&last_parent);
    assert!(result.contains("Verification: PASS"), "{result}");
    assert!(result.contains("Fixed and re-checked."), "{result}");
}

#[test]
fn needs_fix_twice_fails_the_task_with_findings_the_parent_sees() {
    let f = script(NEEDS_FIX);
    f.run_print(Wire::Anthropic, &["Fix the rounding, reviewed."])
        .assert_success();
    let records = task_records(&f);
    let implementer = &by_agent(&records, "code")[0];
    assert_eq!(implementer["status"], "failed", "{implementer:#}");
    assert_eq!(implementer["termination"], "review_failed");
    let id = implementer["id"].as_str().unwrap();
    let last_parent = requests(&f, |r| {
        !first_user_has(r, IMPL) && !first_user_has(r, PACKET)
    })
    .pop()
    .unwrap();
    let result = tool_result_text(&last_parent);
    assert!(result.contains("review_failed"), "{result}");
    assert!(
        result.contains("Review gate failed after review 2 of 2"),
        "{result}"
    );
    assert!(
        result.contains("src/lib.rs:2 rounds the wrong way"),
        "{result}"
    );
    assert!(result.contains(id), "{result}");
}
