//! The reviewer's `sha256` tool (SPEC V5 step 2): the digest of one file, so a read-only
//! reviewer whose shell policy does not run `sha256sum` can still check its review packet
//! before it reads it. Read-only; given only to review-gate reviewers.

use cadre_protocol::ToolSpec;
use cadre_tools::{Tool, ToolContext, ToolOutput};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use crate::handoff::packet::{SHA256_TOOL, sha256_hex};

pub(crate) struct Sha256Tool;

impl Tool for Sha256Tool {
    fn name(&self) -> &str {
        SHA256_TOOL
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SHA256_TOOL.into(),
            description: "The sha256 digest (lowercase hex) of one file.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "The file"}},
                "required": ["path"]
            }),
        }
    }

    fn execute<'a>(&'a self, args: Value, ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let Some(raw) = args.get("path").and_then(Value::as_str) else {
                return ToolOutput::error("`path` is required");
            };
            let path = cadre_tools::paths::resolve(raw, &ctx.cwd);
            match tokio::fs::read(&path).await {
                Ok(bytes) => ToolOutput::ok(format!("{}  {raw}", sha256_hex(&bytes))),
                Err(e) => ToolOutput::error(format!("cannot read {raw}: {e}")),
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_protocol::join_text;
    use tokio_util::sync::CancellationToken;

    fn ctx(cwd: &std::path::Path) -> ToolContext {
        ToolContext {
            cwd: cwd.to_path_buf(),
            cancel: CancellationToken::new(),
            updates: None,
            artifacts_dir: cwd.to_path_buf(),
        }
    }

    #[tokio::test]
    async fn digests_a_file_and_reports_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.md"), "abc").unwrap();
        let out = Sha256Tool
            .execute(json!({"path": "p.md"}), ctx(dir.path()))
            .await;
        assert!(!out.is_error);
        assert_eq!(
            join_text(&out.content),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  p.md"
        );
        let out = Sha256Tool
            .execute(json!({"path": "missing"}), ctx(dir.path()))
            .await;
        assert!(out.is_error);
        assert!(
            Sha256Tool
                .execute(json!({}), ctx(dir.path()))
                .await
                .is_error
        );
    }
}
