//! Helpers shared by the tool tests: a context in a temp dir and a hang-guarded call.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use cadre_protocol::ContentBlock;
use cadre_tools::{ToolContext, ToolOutput, builtin_tools};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub struct Env {
    pub dir: tempfile::TempDir,
    pub artifacts: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Self {
        Env {
            dir: tempfile::tempdir().unwrap(),
            artifacts: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, content).unwrap();
        p
    }

    pub fn ctx(&self) -> ToolContext {
        ToolContext {
            cwd: self.dir.path().to_path_buf(),
            cancel: CancellationToken::new(),
            updates: None,
            artifacts_dir: self.artifacts.path().to_path_buf(),
        }
    }

    pub async fn call(&self, tool: &str, args: Value) -> ToolOutput {
        call_with(tool, args, self.ctx()).await
    }
}

/// Call a built-in tool with a hang guard.
pub async fn call_with(tool: &str, args: Value, ctx: ToolContext) -> ToolOutput {
    let registry = builtin_tools();
    let tool = registry.get(tool).expect("tool exists").clone();
    tokio::time::timeout(Duration::from_secs(20), tool.execute(args, ctx))
        .await
        .expect("tool call hung")
}

pub fn text(out: &ToolOutput) -> String {
    out.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn ok(out: &ToolOutput) -> String {
    assert!(!out.is_error, "unexpected error: {}", text(out));
    text(out)
}

pub fn err(out: &ToolOutput) -> String {
    assert!(out.is_error, "expected an error, got: {}", text(out));
    text(out)
}

pub fn exists(p: &Path) -> bool {
    p.exists()
}
