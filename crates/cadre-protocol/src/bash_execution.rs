//! Pi's `bashExecution` message: a command the user ran themselves (`!cmd` in Pi's editor, the
//! RPC `bash` command) and what it printed. It is kept in the conversation and reaches the
//! model as a user message on the next prompt, in Pi's words ([`BashExecutionMessage::to_text`]);
//! one run with `!!cmd` is marked `excludeFromContext` and never does.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BashExecutionMessage {
    pub command: String,
    #[serde(default)]
    pub output: String,
    /// `None` when the command did not exit by itself (cancelled, or it could not start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub cancelled: bool,
    #[serde(default)]
    pub truncated: bool,
    /// Where the whole output was saved when `output` is truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    /// Pi's `!!cmd`: shown to the user, never sent to the model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exclude_from_context: bool,
    #[serde(default)]
    pub timestamp: u64,
}

impl BashExecutionMessage {
    /// The user text the model gets for this command, exactly as Pi's `bashExecutionToText`
    /// writes it.
    pub fn to_text(&self) -> String {
        let mut text = format!("Ran `{}`\n", self.command);
        if self.output.is_empty() {
            text.push_str("(no output)");
        } else {
            text.push_str(&format!("```\n{}\n```", self.output));
        }
        if self.cancelled {
            text.push_str("\n\n(command cancelled)");
        } else if let Some(code) = self.exit_code.filter(|c| *c != 0) {
            text.push_str(&format!("\n\nCommand exited with code {code}"));
        }
        if self.truncated
            && let Some(path) = &self.full_output_path
        {
            text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use serde_json::json;

    use super::*;
    use crate::Message;

    fn run(command: &str, output: &str) -> BashExecutionMessage {
        BashExecutionMessage {
            command: command.into(),
            output: output.into(),
            exit_code: Some(0),
            cancelled: false,
            truncated: false,
            full_output_path: None,
            exclude_from_context: false,
            timestamp: 1,
        }
    }

    #[test]
    fn reads_and_writes_pis_shape() {
        let pi = json!({"role": "bashExecution", "command": "ls -la", "output": "total 48",
            "exitCode": 0, "cancelled": false, "truncated": false, "fullOutputPath": null,
            "timestamp": 1733234567890u64});
        let m: Message = serde_json::from_value(pi).unwrap();
        let Message::BashExecution(b) = &m else {
            panic!("{m:?}")
        };
        assert_eq!(b.exit_code, Some(0));
        assert_eq!(b.full_output_path, None);
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v["role"], "bashExecution");
        assert_eq!(v["exitCode"], 0);
        assert!(v.get("excludeFromContext").is_none(), "{v}");
        // Pi leaves exitCode out when there is none, and marks `!!` commands.
        let m: Message = serde_json::from_value(json!({"role": "bashExecution",
            "command": "sleep 9", "output": "", "cancelled": true, "truncated": false,
            "excludeFromContext": true, "timestamp": 2}))
        .unwrap();
        let Message::BashExecution(b) = m else {
            panic!()
        };
        assert_eq!(b.exit_code, None);
        assert!(b.exclude_from_context && b.cancelled);
    }

    #[test]
    fn text_is_pis() {
        assert_eq!(
            run("ls -la", "total 48\ndrwxr-xr-x x").to_text(),
            "Ran `ls -la`\n```\ntotal 48\ndrwxr-xr-x x\n```"
        );
        assert_eq!(run("true", "").to_text(), "Ran `true`\n(no output)");
        let mut failed = run("false", "boom");
        failed.exit_code = Some(1);
        assert_eq!(
            failed.to_text(),
            "Ran `false`\n```\nboom\n```\n\nCommand exited with code 1"
        );
        let mut cancelled = run("sleep 9", "");
        cancelled.cancelled = true;
        cancelled.exit_code = Some(130);
        cancelled.truncated = true;
        cancelled.full_output_path = Some("/tmp/out.txt".into());
        assert_eq!(
            cancelled.to_text(),
            "Ran `sleep 9`\n(no output)\n\n(command cancelled)\n\n[Output truncated. Full output: /tmp/out.txt]"
        );
        // Truncated without a saved file: nothing to point to.
        let mut cut = run("yes", "y");
        cut.truncated = true;
        assert_eq!(cut.to_text(), "Ran `yes`\n```\ny\n```");
    }
}
