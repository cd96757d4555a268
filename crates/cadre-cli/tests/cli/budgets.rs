//! Token and cost budgets through the binary, against the fake server reporting real usage:
//! a fan-out of 8 children that would each overspend, a model without a price, `kill -9`
//! mid-run and a continued session that counts what it spent before, and RPC's `get_state`.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use cadre_testkit::{Match, RecordedRequest, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, Running, wait_until};
use crate::orchestration::task_records;

const CHILD: &str = "[child]";
/// Each child reply: 1,000 fresh input tokens and 200 output tokens.
const INPUT: u64 = 1000;
const OUTPUT: u64 = 200;
/// At $3 / $15 per million tokens.
const PER_REQUEST_USD: f64 = (INPUT as f64 * 3.0 + OUTPUT as f64 * 15.0) / 1_000_000.0;

fn child() -> Match {
    Match::first_user(CHILD)
}

fn is_child(r: &RecordedRequest) -> bool {
    r.first_user_text().is_some_and(|t| t.contains(CHILD))
}

/// The fixture's models with list prices (the fake provider's `m1`), or without any.
fn write_models(f: &Fixture, priced: bool) {
    let mut models = f.models_json();
    if priced {
        models["providers"]["fake"]["models"][0]["cost"] =
            json!({"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75});
    }
    f.write_models(&models);
}

/// The parent launches 8 Explore children in one call, then answers; `obey` children stop
/// with an answer once told of their budget, the others read for ever.
fn script_fan_out(f: &Fixture, obey: bool) {
    let s = &f.server;
    let tasks: Vec<Value> = (0..8)
        .map(|i| {
            json!({"subagent_type": "Explore", "description": format!("Part {i}"),
                   "prompt": format!("{CHILD} #{i}# Read notes.txt again and again.")})
        })
        .collect();
    if obey {
        s.script(
            Rule::new(child().and(Match::any_text("<budget-warning>"))).reply(
                Reply::text("Handing over: notes.txt starts with alpha.").usage(INPUT, OUTPUT),
            ),
        );
    }
    s.script(Rule::new(child()).reply(
        Reply::tool_call("call_read", "read", json!({"path": "notes.txt"})).usage(INPUT, OUTPUT),
    ));
    s.script(
        Rule::new((!child()).and(Match::AssistantTurns(0)))
            .reply(Reply::tool_call("call_fan", "Agent", json!({"tasks": tasks})).usage(10, 10)),
    );
    s.script(Rule::new(!child()).reply(Reply::text("Summarised the parts.").usage(10, 10)));
}

fn cost_of(records: &[Value]) -> f64 {
    records
        .iter()
        .map(|r| r["budget"]["spent"]["costUsd"].as_f64().unwrap_or(0.0))
        .sum()
}

#[test]
fn a_fan_out_of_eight_overspenders_is_stopped_at_the_sessions_cost_cap() {
    let f = Fixture::new();
    write_models(&f, true);
    script_fan_out(&f, false);
    let cap = 30.0 * PER_REQUEST_USD;
    let out = f.run(&[
        "-p",
        "--model",
        "fake/m1",
        "--max-cost-usd",
        &cap.to_string(),
        "Probe the project in eight parts.",
    ]);
    // The tasks of one call share half of what is left, so each child is stopped at its slice
    // and the parent still has room to answer.
    out.assert_success();
    assert_eq!(out.stdout.trim_end(), "Summarised the parts.");
    assert!(
        out.stderr.contains("cadre: budget: spent $"),
        "the closing line: {}",
        out.stderr
    );
    let records = task_records(&f);
    assert_eq!(records.len(), 8);
    for r in &records {
        assert_eq!(r["status"], "partial", "{r:#}");
        assert_eq!(r["termination"], "cost_budget", "{r:#}");
        let spent = r["budget"]["spent"]["costUsd"].as_f64().unwrap();
        let own_cap = r["budget"]["maxCostUsd"].as_f64().unwrap();
        assert!(spent <= own_cap + PER_REQUEST_USD + 1e-9, "{r:#}");
    }
    // The whole session stays inside its cap plus one in-flight request per task.
    let child_requests = f.server.requests().iter().filter(|r| is_child(r)).count() as f64;
    assert!(
        child_requests * PER_REQUEST_USD <= cap + 8.0 * PER_REQUEST_USD + 1e-9,
        "{child_requests} requests against a cap of {cap}"
    );
    assert!(cost_of(&records) <= cap + 8.0 * PER_REQUEST_USD + 1e-9);
    // The parent read why each task stopped, in the Agent result.
    let last = f.last_request();
    assert!(!is_child(&last));
    let result = crate::harness::tool_result_text(&last);
    assert!(result.contains("8 tasks: 0 ok, 8 degraded"), "{result}");
    assert_eq!(
        result.matches("partial (cost_budget)").count(),
        8,
        "{result}"
    );
    assert_eq!(result.matches("Budget: $").count(), 8, "{result}");
}

#[test]
fn children_told_of_their_budget_hand_over_and_the_parent_answers_inside_the_token_cap() {
    let f = Fixture::new();
    write_models(&f, true);
    script_fan_out(&f, true);
    std::fs::write(
        f.home.join("settings.json"),
        json!({"budgets": {"maxTokens": 200_000}}).to_string(),
    )
    .unwrap();
    let out = f.run(&[
        "-p",
        "--model",
        "fake/m1",
        "Probe the project in eight parts.",
    ]);
    out.assert_success();
    assert_eq!(out.stdout.trim_end(), "Summarised the parts.");
    assert!(
        out.stderr.contains("cadre: budget: spent ") && out.stderr.contains("of 200,000 tokens"),
        "{}",
        out.stderr
    );
    let records = task_records(&f);
    assert_eq!(records.len(), 8);
    assert!(
        records.iter().all(|r| r["status"] == "completed"),
        "{records:#?}"
    );
    let spent: u64 = records
        .iter()
        .map(|r| r["budget"]["spent"]["tokens"].as_u64().unwrap())
        .sum();
    assert!(spent <= 200_000, "{spent}");
}

#[test]
fn a_model_without_a_price_is_refused_under_a_cost_cap_before_any_request() {
    let f = Fixture::new();
    write_models(&f, false);
    f.server
        .script(Rule::new(Match::any_text("")).reply(Reply::text("should not run")));
    let out = f.run(&["-p", "--model", "fake/m1", "--max-cost-usd", "1", "hello"]);
    let line = out.assert_one_line_error();
    assert!(line.contains("no price in the model table"), "{line}");
    assert!(line.contains("budgets.unknownPrice"), "{line}");
    assert!(f.server.requests().is_empty());

    // With `tokens_only`, only tokens are counted, and the run goes ahead.
    std::fs::write(
        f.home.join("settings.json"),
        json!({"budgets": {"unknownPrice": "tokens_only"}}).to_string(),
    )
    .unwrap();
    let out = f.run(&["-p", "--model", "fake/m1", "--max-cost-usd", "1", "hello"]);
    out.assert_success();
}

#[test]
fn a_bad_budget_flag_or_setting_is_a_clear_error() {
    let f = Fixture::new();
    let out = f.run(&["-p", "--model", "fake/m1", "--max-cost-usd=-3", "hello"]);
    assert!(!out.success());
    assert!(
        out.stderr.contains("not a number of US dollars above 0"),
        "{}",
        out.stderr
    );
    std::fs::write(
        f.home.join("settings.json"),
        json!({"budgets": {"maxCostUSD": 2}}).to_string(),
    )
    .unwrap();
    let out = f.run(&["-p", "--model", "fake/m1", "hello"]);
    let line = out.assert_one_line_error();
    assert!(line.contains("budgets.maxCostUSD"), "{line}");
    assert!(f.server.requests().is_empty());
}

#[test]
fn spend_survives_kill_9_and_a_continued_session_counts_it() {
    let f = Fixture::new();
    write_models(&f, true);
    // One background child reading slowly for ever; the parent waits for it.
    f.server.script(
        Rule::new(child()).reply(
            Reply::tool_call("call_read", "read", json!({"path": "notes.txt"}))
                .usage(INPUT, OUTPUT)
                .latency(Duration::from_millis(50)),
        ),
    );
    f.server.script(
        Rule::new((!child()).and(Match::AssistantTurns(0))).reply(
            Reply::tool_call(
                "call_bg",
                "Agent",
                json!({"subagent_type": "Explore", "description": "Read on",
                       "prompt": format!("{CHILD} Read notes.txt again and again.")}),
            )
            .usage(10, 10),
        ),
    );
    f.server
        .script(Rule::new(!child()).reply(Reply::text("All done.").usage(10, 10)));
    let cap = 1000.0 * PER_REQUEST_USD;
    let cap_arg = cap.to_string();
    let run = Running::spawn(
        f.command(&[
            "-p",
            "--model",
            "fake/m1",
            "--max-cost-usd",
            &cap_arg,
            "Read on.",
        ]),
        None,
    );
    wait_until("the child made 6 requests", || {
        f.server.requests().iter().filter(|r| is_child(r)).count() >= 6
    });
    run.signal("KILL");
    let _ = run.wait(Duration::from_secs(10));
    let before = f.server.requests().iter().filter(|r| is_child(r)).count() as f64;

    // The next run continues the session: what was spent before counts.
    f.server.clear_requests();
    f.server.script(
        Rule::new(Match::last_user("Anything left?")).reply(Reply::text("No.").usage(10, 10)),
    );
    let out = f.run(&[
        "-p",
        "-c",
        "--model",
        "fake/m1",
        "--max-cost-usd",
        &cap_arg,
        "Anything left?",
    ]);
    out.assert_success();
    let line = out
        .stderr
        .lines()
        .find(|l| l.starts_with("cadre: budget: spent $"))
        .unwrap_or_else(|| panic!("no closing line: {}", out.stderr));
    let spent: f64 = line
        .trim_start_matches("cadre: budget: spent $")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // Every child reply the server sent before the kill may not have been recorded (the last
    // one can be cut off with the process), but all but one were.
    assert!(
        spent + 1e-9 >= (before - 1.0) * PER_REQUEST_USD,
        "spent {spent} after {before} child requests: {line}"
    );
}

#[test]
fn rpc_get_state_shows_the_sessions_budget() {
    let f = Fixture::new();
    write_models(&f, true);
    let mut child = f
        .command(&[
            "--mode",
            "rpc",
            "--model",
            "fake/m1",
            "--max-tokens",
            "5000",
            "--max-cost-usd",
            "0.25",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, r#"{{"id":"s1","type":"get_state"}}"#).unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let response: Value = loop {
        let line = lines.next().expect("a response").unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == "s1" {
            break v;
        }
    };
    drop(stdin);
    let _ = child.wait();
    let budget = &response["data"]["budget"];
    assert_eq!(budget["maxTokens"], 5000, "{response:#}");
    assert_eq!(budget["maxCostUsd"], 0.25, "{response:#}");
    assert_eq!(budget["spent"]["tokens"], 0, "{response:#}");
}
