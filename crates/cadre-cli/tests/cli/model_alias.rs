//! Role files that name a model family (Claude Code's `model: opus`) launch: on the alias's
//! target when `subagents.modelAliases` names one the registry has, else on the parent's model
//! with a diagnostic in the task record — never a failed launch. `cadre agents --json` says the
//! same, in the documented shape, and `cadre doctor` exits 1 on a malformed role file.

use cadre_testkit::{Match, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, Wire};
use crate::orchestration::task_records;

const CHILD: &str = "[planner child]";

/// A trusted project with a Claude Code role `planner` that asks for `model: opus`.
fn fixture_with_planner() -> Fixture {
    let f = Fixture::new();
    let dir = f.project.join(".claude/agents/team");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("planner.md"),
        "---\nname: planner\ndescription: Plans the work\ntools: Read, Grep\nmodel: opus\n---\nYou plan.\n",
    )
    .unwrap();
    f.run(&["trust"]).assert_success();
    f
}

/// The parent launches `planner`; the child answers; the parent ends.
fn launch_planner(f: &Fixture) -> Value {
    let s = &f.server;
    let child = || Match::first_user(CHILD);
    let parent = || !Match::first_user(CHILD);
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_agent",
            "Agent",
            json!({"subagent_type": "planner", "description": "Plan it",
                   "prompt": format!("{CHILD} Make a plan.")}),
        )),
    );
    s.script(Rule::new(child()).reply(Reply::text("PLAN READY")));
    s.script(Rule::new(parent()).reply(Reply::text("The planner answered.")));
    f.run_print(Wire::Anthropic, &["Plan with the planner."])
        .assert_success();
    let records = task_records(f);
    assert_eq!(records.len(), 1, "{records:#?}");
    let record = records.into_iter().next().unwrap();
    assert_eq!(record["status"], "completed", "{record:#}");
    record
}

fn child_models(f: &Fixture) -> Vec<String> {
    f.server
        .requests()
        .into_iter()
        .filter(|r| r.first_user_text().is_some_and(|t| t.contains(CHILD)))
        .map(|r| r.model().to_string())
        .collect()
}

fn diagnostics(record: &Value) -> Vec<String> {
    record["diagnostics"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .filter_map(|d| d.as_str().map(str::to_string))
        .collect()
}

#[test]
fn model_opus_without_anthropic_credentials_runs_on_the_parents_model_with_a_diagnostic() {
    let f = fixture_with_planner();
    let record = launch_planner(&f);
    assert_eq!(record["model"], "fake/m1", "{record:#}");
    assert_eq!(child_models(&f), ["m1"]);
    let diags = diagnostics(&record);
    assert!(
        diags.iter().any(|d| d.contains("`opus`")
            && d.contains("no provider with credentials")
            && d.contains("parent's model")),
        "{diags:#?}"
    );
}

#[test]
fn model_aliases_send_opus_to_the_model_they_name() {
    let f = fixture_with_planner();
    let mut models = f.models_json();
    models["providers"]["fake"]["models"] = json!([{"id": "m1"}, {"id": "big"}]);
    f.write_models(&models);
    std::fs::write(
        f.home.join("settings.json"),
        json!({"subagents": {"modelAliases": {"opus": "fake/big"}}}).to_string(),
    )
    .unwrap();
    let record = launch_planner(&f);
    assert_eq!(record["model"], "fake/big", "{record:#}");
    assert_eq!(child_models(&f), ["big"]);
    let diags = diagnostics(&record);
    assert!(
        diags.iter().any(|d| d == "model `opus` is `fake/big`"),
        "{diags:#?}"
    );

    // `cadre agents` shows the same answer.
    let out = f.run(&["agents"]);
    out.assert_success();
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("planner "))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(line.contains("opus → fake/big"), "{line}");
}

#[test]
fn a_malformed_model_aliases_setting_fails_the_launch_with_its_key() {
    let f = fixture_with_planner();
    std::fs::write(
        f.home.join("settings.json"),
        json!({"subagents": {"modelAliases": {"opus": 3}}}).to_string(),
    )
    .unwrap();
    let out = f.run_print(Wire::Anthropic, &["hello"]);
    assert_ne!(out.code, Some(0), "{out:#?}");
    assert!(out.stderr.contains("modelAliases.opus"), "{out:#?}");
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect();
    k.sort_unstable();
    k
}

#[test]
fn agents_json_has_the_documented_shape() {
    let f = fixture_with_planner();
    let dir = f.project.join(".claude/agents");
    std::fs::write(
        dir.join("broken.md"),
        "---\nname: broken\ndescription: x\npermissionMod: plan\n---\nx\n",
    )
    .unwrap();
    let out = f.run(&["agents", "--json"]);
    out.assert_success();
    let v: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", out.stdout));
    assert_eq!(keys(&v), ["blocked", "diagnostics", "roles", "trusted"]);
    assert_eq!(v["trusted"], true);
    let roles = v["roles"].as_array().unwrap();
    for role in roles {
        assert_eq!(
            keys(role),
            [
                "aliases",
                "bashAllow",
                "description",
                "disallowedTools",
                "file",
                "launchable",
                "layer",
                "model",
                "name",
                "notes",
                "overrides",
                "problems",
                "readonly",
                "shellPolicy",
                "tools",
            ],
            "{role:#}"
        );
        assert_eq!(
            keys(&role["model"]),
            [
                "fallsBackToParent",
                "note",
                "requested",
                "resolved",
                "source"
            ]
        );
    }
    let explore = roles.iter().find(|r| r["name"] == "Explore").unwrap();
    assert_eq!(explore["layer"], "built-in");
    assert_eq!(explore["file"], Value::Null);
    assert_eq!(explore["aliases"], json!(["explore", "explorer"]));
    assert_eq!(explore["readonly"], true);
    assert_eq!(explore["launchable"], true);
    assert_eq!(explore["model"]["source"], "parent");

    let planner = roles.iter().find(|r| r["name"] == "planner").unwrap();
    let file = planner["file"].as_str().unwrap();
    assert!(file.starts_with('/'), "absolute: {file}");
    assert!(file.ends_with(".claude/agents/team/planner.md"), "{file}");
    assert_eq!(planner["layer"], "project");
    assert!(planner["tools"].is_array(), "{planner:#}");
    assert_eq!(planner["launchable"], true, "{planner:#}");
    assert_eq!(planner["problems"], json!([]));
    let model = &planner["model"];
    assert_eq!(model["requested"], "opus");
    assert_eq!(model["resolved"], Value::Null);
    assert_eq!(model["source"], "parent");
    assert_eq!(model["fallsBackToParent"], true);
    assert!(
        model["note"]
            .as_str()
            .is_some_and(|n| n.contains("no provider with credentials")),
        "{model:#}"
    );

    let blocked = v["blocked"].as_array().unwrap();
    assert_eq!(blocked.len(), 1, "{blocked:#?}");
    assert_eq!(keys(&blocked[0]), ["file", "layer", "name", "reason"]);
    assert_eq!(blocked[0]["name"], "broken");
    let diags = v["diagnostics"].as_array().unwrap();
    let malformed = diags
        .iter()
        .find(|d| d["kind"] == "malformed")
        .unwrap_or_else(|| panic!("{diags:#?}"));
    assert_eq!(
        keys(malformed),
        ["file", "kind", "line", "message", "severity"]
    );
    assert_eq!(malformed["severity"], "error");
    assert!(
        malformed["file"]
            .as_str()
            .is_some_and(|p| p.starts_with('/') && p.ends_with("broken.md")),
        "{malformed:#}"
    );
}

#[test]
fn doctor_exits_1_on_a_malformed_role_file_and_names_it() {
    let f = fixture_with_planner();
    let out = f.run(&["doctor"]);
    // Falling back to the parent's model is a warning, not an error.
    out.assert_success();
    assert!(
        out.stdout
            .lines()
            .any(|l| l.contains("warning: agent type `planner`")
                && l.contains(".claude/agents/team/planner.md")
                && l.contains("parent's model")),
        "{}",
        out.stdout
    );
    std::fs::write(
        f.project.join(".claude/agents/broken.md"),
        "---\nname: broken\ndescription: x\npermissionMod: plan\n---\nx\n",
    )
    .unwrap();
    let out = f.run(&["doctor"]);
    assert_eq!(out.code, Some(1), "{out:#?}");
    assert!(
        out.stdout
            .lines()
            .any(|l| l.contains("error:") && l.contains(".claude/agents/broken.md")),
        "{}",
        out.stdout
    );
}

#[test]
fn what_a_portable_role_file_does_not_get_is_said_in_the_task_record() {
    let f = Fixture::new();
    let dir = f.project.join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("planner.md"),
        "---\nname: planner\ndescription: Plans the work\ncategory: planning\n\
         tools: Read, Grep, WebSearch, mcp__context7__get-library-docs\n---\nYou plan.\n",
    )
    .unwrap();
    f.run(&["trust"]).assert_success();
    let record = launch_planner(&f);
    let tools: Vec<&str> = record["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.contains(&"read") && tools.contains(&"grep"),
        "{tools:?}"
    );
    assert!(!tools.iter().any(|t| t.starts_with("mcp__")), "{tools:?}");
    let diags = diagnostics(&record);
    for needle in [
        "role file: `tools`: Claude Code tools with no cadre counterpart were dropped: WebSearch",
        "role file: unknown key `category` ignored",
        "`mcp__context7__get-library-docs` is left out: no MCP server of that name runs",
    ] {
        assert!(
            diags.iter().any(|d| d.contains(needle)),
            "{needle}: {diags:#?}"
        );
    }
}
