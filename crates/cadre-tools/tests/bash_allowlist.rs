//! The bash tool's command allowlist (a role's `Bash(…)` patterns): checked before anything
//! runs, next to the shell policy, both of which must pass.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use cadre_tools::shell_policy::{CommandAllowlist, ShellPolicy};
use cadre_tools::{BashTool, Tool, ToolOutput};
use common::{Env, err, ok};
use serde_json::json;

async fn run(tool: &BashTool, env: &Env, command: &str) -> ToolOutput {
    tokio::time::timeout(
        Duration::from_secs(20),
        tool.execute(json!({ "command": command }), env.ctx()),
    )
    .await
    .expect("bash call hung")
}

fn allowlist(patterns: &[&str]) -> CommandAllowlist {
    let patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
    CommandAllowlist::parse(&patterns).unwrap()
}

fn blocked(out: &ToolOutput) -> String {
    out.details.as_ref().unwrap()["blocked"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn only_the_allowed_commands_run() {
    let env = Env::new();
    env.write("f", "original");
    let tool = BashTool::new().with_allowlist(allowlist(&["cat f", "wc:*"]));
    let out = run(&tool, &env, "cat f | wc -c").await;
    assert_eq!(ok(&out).trim(), "8");
    for command in [
        "touch x",
        "cat f; touch x",
        "cat f && touch x",
        "cat f > x",
        "cat g",
    ] {
        let out = run(&tool, &env, command).await;
        let message = err(&out);
        assert!(
            message.starts_with("Command not run: the role's command allowlist refuses"),
            "{command}: {message}"
        );
        assert!(message.contains("`cat f`, `wc:*`"), "{message}");
        assert_eq!(blocked(&out), "command-allowlist", "{command}");
    }
    assert!(!env.path("x").exists(), "a refused command ran");
}

#[tokio::test]
async fn the_policy_still_applies_under_the_allowlist() {
    let env = Env::new();
    env.write("f", "original");
    // The allowlist allows `sort -o`, the `inspect` policy does not.
    let tool = BashTool::new()
        .with_policy(ShellPolicy::Inspect)
        .with_allowlist(allowlist(&["sort:*"]));
    let out = run(&tool, &env, "sort -o f f").await;
    assert_eq!(blocked(&out), "shell-policy");
    let out = run(&tool, &env, "ls").await;
    assert_eq!(blocked(&out), "command-allowlist");
    let out = run(&tool, &env, "sort f").await;
    assert_eq!(ok(&out).trim(), "original");
}

#[test]
fn the_description_names_the_patterns_and_star_is_no_allowlist() {
    let tool = BashTool::new().with_allowlist(allowlist(&["git status:*", "npm test"]));
    let description = tool.spec().description;
    assert!(
        description.contains("`git status:*`, `npm test`"),
        "{description}"
    );
    let all = BashTool::new().with_allowlist(allowlist(&["*"]));
    assert!(all.allowlist().is_none());
    assert_eq!(all.spec().description, BashTool::new().spec().description);
}
