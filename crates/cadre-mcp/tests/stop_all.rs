//! `stop_all`, what a process about to exit calls (a second signal, the end of `main`): it ends
//! every server's process group, so it runs in a test process of its own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use cadre_mcp::{McpServerConfig, McpSet, McpTransport, ServerLimits, ServerPlace};
use cadre_protocol::ContentBlock;
use cadre_tools::{Tool, ToolContext};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Only a guard against a hung test; nothing asserts how fast anything is.
const GUARD: Duration = Duration::from_secs(60);

fn python() -> Option<PathBuf> {
    cadre_testkit::peers::python_with_mcp()
}

fn alive(pid: i32) -> bool {
    // A zombie (exited, not reaped) counts as gone.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty() && !stat.contains(") Z ")
}

#[tokio::test]
async fn stop_all_ends_every_server_and_what_it_started() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cadre-cli/tests/peers/mcp_server_tools.py")
        .to_string_lossy()
        .into_owned();
    let config = McpServerConfig {
        name: "t".into(),
        transport: McpTransport::Stdio {
            command: python.to_string_lossy().into_owned(),
            args: vec![script],
            env: Default::default(),
            cwd: None,
        },
    };
    let place = ServerPlace {
        cwd: dir.path().to_path_buf(),
        log_dir: None,
    };
    let set = tokio::time::timeout(
        GUARD,
        McpSet::start(&[config], &place, &ServerLimits::default()),
    )
    .await
    .expect("start hung");
    let tool = set
        .tools()
        .iter()
        .find(|t| t.name() == "mcp__t__spawn_sleeper")
        .expect("spawn_sleeper");
    let ctx = ToolContext {
        cwd: dir.path().to_path_buf(),
        cancel: CancellationToken::new(),
        updates: None,
        artifacts_dir: dir.path().join("artifacts"),
    };
    let out = tokio::time::timeout(GUARD, tool.execute(json!({}), ctx))
        .await
        .expect("call hung");
    let text: String = out
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let pid: i32 = text.trim().parse().unwrap();
    assert!(alive(pid));
    assert_eq!(set.process_groups().len(), 1);
    cadre_mcp::stop_all();
    assert!(set.process_groups().is_empty());
    tokio::time::timeout(GUARD, async {
        while alive(pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the server's child outlived stop_all");
}
