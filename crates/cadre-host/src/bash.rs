//! Pi's RPC `bash`: a command the person runs themselves in the session's directory. Its output
//! is kept as a `bashExecution` message that reaches the model with the next prompt.

use std::path::Path;

use cadre_protocol::BashExecutionMessage;
use cadre_tools::{BashTool, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Run `command` with the root's own bash tool (its output caps, its full-output file, the
/// session's scrubbed environment) until it ends or `cancel` fires.
pub async fn run_bash(
    command: &str,
    cwd: &Path,
    artifacts_dir: &Path,
    shell_env: std::sync::Arc<cadre_tools::shell_env::ShellEnv>,
    cancel: CancellationToken,
) -> BashExecutionMessage {
    let output = BashTool::new()
        .with_shell_env(shell_env)
        .execute(
            json!({"command": command}),
            ToolContext {
                cwd: cwd.to_path_buf(),
                cancel: cancel.clone(),
                updates: None,
                artifacts_dir: artifacts_dir.to_path_buf(),
            },
        )
        .await;
    message_of(command, &output, cancel.is_cancelled())
}

fn message_of(command: &str, output: &ToolOutput, cancelled: bool) -> BashExecutionMessage {
    let details = output.details.clone().unwrap_or(Value::Null);
    let text = printed(&cadre_protocol::join_text(&output.content));
    BashExecutionMessage {
        command: command.to_string(),
        output: cadre_protocol::redact::redact_str(&text).into_owned(),
        exit_code: details["exitCode"].as_i64(),
        cancelled,
        truncated: details["truncation"].is_object(),
        full_output_path: details["fullOutputPath"].as_str().map(str::to_string),
        exclude_from_context: false,
        timestamp: cadre_protocol::now_millis(),
    }
}

/// What the command printed: the tool's text without its own closing status line ("Command
/// exited with code 2", "Command aborted", …) or its "(no output)" placeholder, which Pi's
/// output does not have (its exit code and `cancelled` say the same).
fn printed(text: &str) -> String {
    const STATUS: [&str; 5] = [
        "Command exited with code ",
        "Command was killed by signal ",
        "Command timed out after ",
        "Command aborted",
        "Command ended without an exit code",
    ];
    let is_status = |line: &str| STATUS.iter().any(|s| line.starts_with(s));
    if text == "(no output)" || is_status(text) {
        return String::new();
    }
    match text.rsplit_once("\n\n") {
        Some((body, last)) if is_status(last) => body.to_string(),
        _ => text.to_string(),
    }
}

/// The RPC `bash` response data (Pi's `BashResult`).
pub fn bash_result_json(m: &BashExecutionMessage) -> Value {
    let mut data = json!({
        "output": m.output,
        "exitCode": m.exit_code,
        "cancelled": m.cancelled,
        "truncated": m.truncated,
    });
    if let Some(path) = &m.full_output_path {
        data["fullOutputPath"] = json!(path);
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_status_lines_are_not_output() {
        assert_eq!(printed("a\nb\n\nCommand exited with code 2"), "a\nb");
        assert_eq!(printed("Command aborted"), "");
        assert_eq!(printed("(no output)"), "");
        assert_eq!(printed("x\n\ny"), "x\n\ny");
    }
}
