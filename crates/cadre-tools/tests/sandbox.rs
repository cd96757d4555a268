//! The bash tool's shell policy (S3) and sandbox gate (S2) without the cadre binary: the policy
//! is checked before the sandbox is even considered, and a sandboxed tool never falls back to an
//! unsandboxed shell. The kernel sandbox itself is exercised end to end through the real cadre
//! binary in the CLI tests (`crates/cadre-cli/tests/cli/sandbox.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use cadre_tools::sandbox::{SandboxConfig, SandboxStatus, create_scratch_dir, landlock_status};
use cadre_tools::shell_policy::ShellPolicy;
use cadre_tools::{BashTool, Tool, ToolOutput};
use common::{Env, err, ok, text};
use serde_json::json;

async fn run(tool: &BashTool, env: &Env, command: &str) -> ToolOutput {
    tokio::time::timeout(
        Duration::from_secs(20),
        tool.execute(json!({ "command": command }), env.ctx()),
    )
    .await
    .expect("bash call hung")
}

/// A sandboxed tool whose re-exec target does not exist: if it ever started a process, the
/// result would be a start failure, and if it ever ran bash directly, the file would change.
fn unreachable_sandbox(env: &Env, policy: ShellPolicy) -> BashTool {
    BashTool::sandboxed(SandboxConfig {
        exe: PathBuf::from("/nonexistent/cadre"),
        scratch_dir: create_scratch_dir(&env.path(".scratch")).unwrap(),
        extra_writable: vec![],
        policy,
        network: false,
    })
}

fn blocked(out: &ToolOutput) -> String {
    out.details.as_ref().unwrap()["blocked"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn policy_is_checked_before_the_sandbox() {
    let env = Env::new();
    let file = env.write("f", "original");
    let tool = unreachable_sandbox(&env, ShellPolicy::Inspect);
    assert_eq!(tool.policy(), ShellPolicy::Inspect);
    for command in [
        "echo x > f",
        "rm f",
        "ls; rm -rf .",
        "find . -delete",
        "cat f | tee f",
    ] {
        let out = run(&tool, &env, command).await;
        let message = err(&out);
        assert!(
            message.starts_with("Command not run: the `inspect` shell policy refuses"),
            "{command}: {message}"
        );
        assert_eq!(blocked(&out), "shell-policy", "{command}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "original");
    }
}

#[tokio::test]
async fn policy_applies_without_a_sandbox_too() {
    let env = Env::new();
    env.write("f", "original");
    let tool = BashTool::new().with_policy(ShellPolicy::Verify);
    assert!(tool.sandbox().is_none());
    let out = run(&tool, &env, "cargo clippy --fix").await;
    assert!(err(&out).contains("`--fix` makes the check change files"));
    let out = run(&tool, &env, "echo x > f").await;
    assert_eq!(blocked(&out), "shell-policy");
    // Allowed commands run normally.
    let out = run(&tool, &env, "cat f | wc -c").await;
    assert_eq!(ok(&out).trim(), "8");

    let none = BashTool::new().with_policy(ShellPolicy::None);
    let out = run(&none, &env, "pwd").await;
    assert!(err(&out).contains("may not run shell commands"));
    assert_eq!(std::fs::read_to_string(env.path("f")).unwrap(), "original");
}

#[tokio::test]
async fn a_sandboxed_tool_never_runs_bash_directly() {
    let env = Env::new();
    let file = env.write("f", "original");
    let tool = unreachable_sandbox(&env, ShellPolicy::Unrestricted);
    let out = run(&tool, &env, "echo x > f").await;
    let message = err(&out);
    match landlock_status() {
        SandboxStatus::Enforced { abi } => {
            println!("sandbox path: Landlock ABI {abi}; the missing re-exec target fails to start");
            assert!(
                message.starts_with("Failed to start the shell"),
                "{message}"
            );
        }
        SandboxStatus::Unavailable { reason } => {
            println!("sandbox path: refusal (Landlock unavailable: {reason})");
            assert!(message.contains("kernel sandbox"), "{message}");
            assert!(message.contains(&reason), "{message}");
            assert_eq!(blocked(&out), "sandbox-unavailable");
        }
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "original");
}

#[tokio::test]
async fn a_scratch_dir_that_cannot_be_created_refuses_the_command() {
    let env = Env::new();
    let file = env.write("f", "original");
    let tool = BashTool::sandboxed(SandboxConfig {
        exe: PathBuf::from("/nonexistent/cadre"),
        scratch_dir: file.join("scratch-x"),
        extra_writable: vec![],
        policy: ShellPolicy::Unrestricted,
        network: false,
    });
    let out = run(&tool, &env, "echo x > f").await;
    let message = err(&out);
    assert_eq!(blocked(&out), "sandbox-unavailable", "{message}");
    if landlock_status().is_enforced() {
        assert!(message.contains("cannot be created"), "{message}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "original");
}

#[tokio::test]
async fn missing_writable_dirs_refuse_the_command() {
    let env = Env::new();
    let file = env.write("f", "original");
    let tool = BashTool::sandboxed(SandboxConfig {
        exe: PathBuf::from("/nonexistent/cadre"),
        scratch_dir: create_scratch_dir(&env.path(".scratch")).unwrap(),
        extra_writable: vec![env.path("no-such-plans")],
        policy: ShellPolicy::Unrestricted,
        network: false,
    });
    let out = run(&tool, &env, "echo x > f").await;
    let message = err(&out);
    assert_eq!(blocked(&out), "sandbox-unavailable", "{message}");
    if landlock_status().is_enforced() {
        assert!(message.contains("no-such-plans"), "{message}");
        assert!(message.contains("does not exist"), "{message}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "original");
    assert!(text(&out).starts_with("Command not run"));
}

#[test]
fn with_policy_keeps_sandbox_and_policy_in_step() {
    let env = Env::new();
    let tool = unreachable_sandbox(&env, ShellPolicy::Inspect).with_policy(ShellPolicy::Verify);
    assert_eq!(tool.policy(), ShellPolicy::Verify);
    assert_eq!(tool.sandbox().unwrap().policy, ShellPolicy::Verify);
    let timed = BashTool::with_default_timeout(Some(Duration::from_secs(5)))
        .with_sandbox(tool.sandbox().unwrap().clone());
    assert_eq!(timed.policy(), ShellPolicy::Verify);
}

#[test]
fn the_description_tells_the_model_about_sandbox_and_policy() {
    let env = Env::new();
    let plain = BashTool::new().spec().description;
    assert!(!plain.contains("sandbox"));
    let mut tool = unreachable_sandbox(&env, ShellPolicy::Inspect);
    let description = tool.spec().description;
    assert!(description.starts_with(&plain), "{description}");
    assert!(description.contains("read-only sandbox"), "{description}");
    assert!(
        description.contains("Only inspection commands run"),
        "{description}"
    );
    let mut config = tool.sandbox().unwrap().clone();
    config.extra_writable = vec![PathBuf::from("/p/.cadre/plans")];
    tool = BashTool::sandboxed(config).with_policy(ShellPolicy::Verify);
    let description = tool.spec().description;
    assert!(
        description.contains("and in /p/.cadre/plans."),
        "{description}"
    );
    assert!(description.contains("cargo test"), "{description}");
    let none = BashTool::new()
        .with_policy(ShellPolicy::None)
        .spec()
        .description;
    assert!(none.ends_with("Shell commands are not allowed for this role."));
}
