//! The client against a real MCP server written with the official Python SDK
//! (`crates/cadre-cli/tests/peers/mcp_server_tools.py`): tools and annotations, a call, a
//! cancelled call (the server sees `notifications/cancelled`), a call that times out, a server
//! that dies mid-call, one that never answers `initialize`, and stopping, which ends whatever
//! the server started.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use cadre_mcp::{McpServerConfig, McpSet, McpTransport, ServerLimits, ServerPlace};
use cadre_protocol::ContentBlock;
use cadre_tools::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Only a guard against a hung test; nothing asserts how fast anything is.
const GUARD: Duration = Duration::from_secs(60);

fn python() -> Option<PathBuf> {
    cadre_testkit::peers::python_with_mcp()
}

fn config(python: &Path, name: &str, args: &[&str], marker: &Path) -> McpServerConfig {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cadre-cli/tests/peers/mcp_server_tools.py")
        .to_string_lossy()
        .into_owned();
    McpServerConfig {
        name: name.into(),
        transport: McpTransport::Stdio {
            command: python.to_string_lossy().into_owned(),
            args: std::iter::once(script)
                .chain(args.iter().map(|a| a.to_string()))
                .collect(),
            env: [(
                "MCP_TEST_MARKER".to_string(),
                marker.to_string_lossy().into_owned(),
            )]
            .into(),
            cwd: None,
        },
    }
}

struct World {
    dir: tempfile::TempDir,
    python: PathBuf,
}

impl World {
    fn new() -> Option<World> {
        Some(World {
            dir: tempfile::tempdir().unwrap(),
            python: python()?,
        })
    }

    fn marker(&self) -> PathBuf {
        self.dir.path().join("marker")
    }

    async fn start(&self, servers: &[(&str, &[&str])], limits: ServerLimits) -> McpSet {
        let configs: Vec<McpServerConfig> = servers
            .iter()
            .map(|(name, args)| config(&self.python, name, args, &self.marker()))
            .collect();
        let place = ServerPlace {
            cwd: self.dir.path().to_path_buf(),
            log_dir: Some(self.dir.path().join("logs")),
        };
        tokio::time::timeout(GUARD, McpSet::start(&configs, &place, &limits))
            .await
            .expect("start hung")
    }

    fn ctx(&self, cancel: CancellationToken) -> ToolContext {
        ToolContext {
            cwd: self.dir.path().to_path_buf(),
            cancel,
            updates: None,
            artifacts_dir: self.dir.path().join("artifacts"),
        }
    }
}

fn tool<'a>(set: &'a McpSet, name: &str) -> &'a cadre_mcp::McpTool {
    set.tools()
        .iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

fn text(out: &ToolOutput) -> String {
    out.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

async fn call(w: &World, set: &McpSet, name: &str, args: Value) -> ToolOutput {
    let t = tool(set, name);
    tokio::time::timeout(GUARD, t.execute(args, w.ctx(CancellationToken::new())))
        .await
        .expect("call hung")
}

fn alive(pid: i32) -> bool {
    // Signal 0 checks for existence; a zombie (exited, not reaped) counts as gone.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty() && !stat.contains(") Z ")
}

#[tokio::test]
async fn tools_annotations_and_a_call() {
    let Some(w) = World::new() else { return };
    let set = w.start(&[("t", &[])], ServerLimits::default()).await;
    assert!(set.warnings.is_empty(), "{:?}", set.warnings);
    let names: Vec<&str> = set.tools().iter().map(|t| t.name()).collect();
    for want in [
        "mcp__t__lookup",
        "mcp__t__delete_everything",
        "mcp__t__slow",
    ] {
        assert!(names.contains(&want), "{names:?}");
    }
    assert!(tool(&set, "mcp__t__lookup").is_read_only());
    assert!(!tool(&set, "mcp__t__lookup").is_mutating());
    assert!(tool(&set, "mcp__t__delete_everything").is_mutating());
    assert!(tool(&set, "mcp__t__crash").is_mutating(), "unannotated");
    let status = &set.statuses[0];
    assert_eq!(status.outcome, Ok((names.len(), 3)));

    let out = call(&w, &set, "mcp__t__lookup", json!({"key": "a"})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(text(&out), "value of a");
    // Arguments the server's schema refuses are its error, as a tool error.
    let out = call(&w, &set, "mcp__t__lookup", json!({"nope": 1})).await;
    assert!(out.is_error, "{out:?}");
    let out = call(&w, &set, "mcp__t__lookup", json!([1])).await;
    assert!(
        out.is_error && text(&out).contains("must be a JSON object"),
        "{out:?}"
    );
}

#[tokio::test]
async fn a_cancelled_call_is_cancelled_at_the_server() {
    let Some(w) = World::new() else { return };
    let set = w.start(&[("t", &[])], ServerLimits::default()).await;
    let cancel = CancellationToken::new();
    let t = tool(&set, "mcp__t__slow");
    let slow = t.execute(json!({"seconds": 600}), w.ctx(cancel.clone()));
    let started = PathBuf::from(format!("{}.started", w.marker().display()));
    let canceller = async {
        // Cancel once the server runs the call.
        while !started.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cancel.cancel();
    };
    let (out, ()) = tokio::time::timeout(GUARD, async { tokio::join!(slow, canceller) })
        .await
        .expect("cancel hung");
    assert!(out.is_error);
    assert_eq!(text(&out), "Operation aborted");
    let marker = w.marker();
    tokio::time::timeout(GUARD, async {
        while !marker.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the server never saw the cancellation");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "cancelled\n");
    // The server still serves.
    let out = call(&w, &set, "mcp__t__lookup", json!({"key": "b"})).await;
    assert_eq!(text(&out), "value of b");
}

#[tokio::test]
async fn a_call_that_outlives_its_timeout_is_a_tool_error() {
    let Some(w) = World::new() else { return };
    let limits = ServerLimits {
        call_timeout: Duration::from_millis(500),
        ..ServerLimits::default()
    };
    let set = w.start(&[("t", &[])], limits).await;
    let out = call(&w, &set, "mcp__t__slow", json!({"seconds": 600})).await;
    assert!(out.is_error);
    assert!(
        text(&out).contains("did not answer the call of `slow` within 0.5s"),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn a_server_that_never_answers_does_not_start() {
    let Some(w) = World::new() else { return };
    let limits = ServerLimits {
        startup_timeout: Duration::from_secs(2),
        ..ServerLimits::default()
    };
    let set = w.start(&[("silent", &["--hang-start"])], limits).await;
    assert!(set.tools().is_empty());
    assert_eq!(set.warnings.len(), 1, "{:?}", set.warnings);
    assert!(
        set.warnings[0].starts_with("warning: MCP server `silent` (stdio ")
            && set.warnings[0].contains("did not start: it was not ready within 2s"),
        "{:?}",
        set.warnings
    );
    assert_eq!(
        set.statuses[0].outcome,
        Err("it was not ready within 2s".to_string())
    );
}

#[tokio::test]
async fn a_dead_server_fails_its_calls_at_once() {
    let Some(w) = World::new() else { return };
    let set = w.start(&[("t", &[])], ServerLimits::default()).await;
    let out = call(&w, &set, "mcp__t__crash", json!({})).await;
    assert!(out.is_error);
    assert!(
        text(&out).contains("MCP server `t` cannot run `crash`"),
        "{}",
        text(&out)
    );
    let out = call(&w, &set, "mcp__t__lookup", json!({"key": "c"})).await;
    assert!(out.is_error);
    assert!(text(&out).contains("cannot run `lookup`"), "{}", text(&out));
    // Once the server is gone its group is ended and forgotten: the id is never signalled
    // again (it could belong to another group by the time the session ends).
    tokio::time::timeout(GUARD, async {
        while !set.process_groups().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the exited server's group is still kept");
}

#[tokio::test]
async fn dropping_the_set_ends_what_the_server_started() {
    let Some(w) = World::new() else { return };
    let set = w.start(&[("t", &[])], ServerLimits::default()).await;
    let out = call(&w, &set, "mcp__t__spawn_sleeper", json!({})).await;
    let pid: i32 = text(&out).trim().parse().unwrap();
    assert!(alive(pid));
    drop(set);
    tokio::time::timeout(GUARD, async {
        while alive(pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the server's child outlived the set");
}

#[tokio::test]
async fn an_unreachable_http_server_is_a_warning_without_its_secrets() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = McpServerConfig {
        name: "web".into(),
        transport: McpTransport::Http {
            url: format!("http://user:pw-secret@127.0.0.1:{port}/mcp?token=q-secret"),
            headers: [("Authorization".to_string(), "Bearer h-secret".to_string())].into(),
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
    assert!(set.tools().is_empty());
    assert_eq!(set.warnings.len(), 1, "{:?}", set.warnings);
    let warning = &set.warnings[0];
    assert!(
        warning.starts_with(&format!(
            "warning: MCP server `web` (http http://127.0.0.1:{port}) did not start: \
             initialization failed: cannot connect to it (send initialize request)"
        )),
        "{warning}"
    );
    assert!(!warning.contains("secret"), "{warning}");
}

fn hostile(python: &Path, name: &str, args: &[&str]) -> McpServerConfig {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cadre-cli/tests/peers/mcp_server_hostile.py")
        .to_string_lossy()
        .into_owned();
    McpServerConfig {
        name: name.into(),
        transport: McpTransport::Stdio {
            command: python.to_string_lossy().into_owned(),
            args: std::iter::once(script)
                .chain(args.iter().map(|a| a.to_string()))
                .collect(),
            env: Default::default(),
            cwd: None,
        },
    }
}

async fn start_hostile(w: &World, configs: &[McpServerConfig], limits: ServerLimits) -> McpSet {
    let place = ServerPlace {
        cwd: w.dir.path().to_path_buf(),
        log_dir: Some(w.dir.path().join("logs")),
    };
    tokio::time::timeout(GUARD, McpSet::start(configs, &place, &limits))
        .await
        .expect("start hung")
}

#[tokio::test]
async fn a_server_that_pages_without_end_costs_a_bounded_start() {
    let Some(w) = World::new() else { return };
    let set = start_hostile(
        &w,
        &[hostile(&w.python, "p", &["pages"])],
        ServerLimits::default(),
    )
    .await;
    assert_eq!(
        set.statuses[0].outcome.as_ref().map(|o| o.0 <= 512),
        Ok(true)
    );
    assert!(!set.tools().is_empty());
    let all = set.warnings.join("\n");
    assert!(
        all.contains("MCP server `p`: it lists more than 512 tools"),
        "{all}"
    );
}

#[tokio::test]
async fn tool_specs_are_capped_per_server_and_in_total() {
    let Some(w) = World::new() else { return };
    let configs = [
        hostile(&w.python, "b1", &["bigschema"]),
        hostile(&w.python, "b2", &["bigschema"]),
        hostile(&w.python, "b3", &["bigschema"]),
    ];
    let set = start_hostile(&w, &configs, ServerLimits::default()).await;
    let total: usize = set
        .tools()
        .iter()
        .map(|t| {
            t.spec().parameters.to_string().len() + t.spec().description.len() + t.name().len()
        })
        .sum();
    assert!(total <= cadre_mcp::tool::MAX_TOTAL_SPEC_BYTES, "{total}");
    for s in ["b1", "b2"] {
        let bytes: usize = set
            .tools()
            .iter()
            .filter(|t| t.server_name() == s)
            .map(|t| t.spec_bytes())
            .sum();
        assert!(
            bytes <= cadre_mcp::tool::MAX_SERVER_SPEC_BYTES,
            "{s}: {bytes}"
        );
        assert!(bytes > 0, "{s}");
    }
    let all = set.warnings.join("\n");
    assert!(
        all.contains("tool(s) of MCP server `b1` are left out: its tools' descriptions"),
        "{all}"
    );
    assert!(
        all.contains("tool(s) of MCP server `b3` are left out: the MCP servers' tools together"),
        "{all}"
    );
}

#[tokio::test]
async fn an_oversized_answer_fails_the_call_at_once() {
    let Some(w) = World::new() else { return };
    // The call timeout is the default 10 minutes: only the oversized line can end the call
    // before the guard.
    let set = start_hostile(
        &w,
        &[hostile(&w.python, "h", &["huge"])],
        ServerLimits::default(),
    )
    .await;
    let out = call(&w, &set, "mcp__h__big", json!({})).await;
    assert!(out.is_error);
    assert!(
        text(&out).contains("it sent a message over 15 MiB"),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn server_error_text_reaches_the_terminal_neutralised() {
    let Some(w) = World::new() else { return };
    let set = start_hostile(
        &w,
        &[hostile(&w.python, "e", &["esc"])],
        ServerLimits::default(),
    )
    .await;
    assert!(set.tools().is_empty());
    assert_eq!(set.warnings.len(), 1, "{:?}", set.warnings);
    let warning = &set.warnings[0];
    assert!(!warning.chars().any(|c| c.is_control()), "{warning:?}");
    assert!(warning.contains("FAKE: all good second line"), "{warning}");
    assert!(warning.len() < 2000, "{}", warning.len());
    let why = set.statuses[0].outcome.as_ref().unwrap_err();
    assert!(!why.chars().any(|c| c.is_control()), "{why:?}");
}

#[tokio::test]
async fn tools_of_two_servers_never_replace_each_other() {
    let Some(w) = World::new() else { return };
    // Names a configuration can no longer give (`a_`), handed to the set directly: the set
    // itself still refuses to let one tool stand for another.
    let configs = [
        hostile(&w.python, "a", &["named", "_x"]),
        hostile(&w.python, "a_", &["named", "x"]),
    ];
    let set = start_hostile(&w, &configs, ServerLimits::default()).await;
    let names: Vec<(&str, &str)> = set
        .tools()
        .iter()
        .map(|t| (t.name(), t.server_name()))
        .collect();
    assert_eq!(names, [("mcp__a___x", "a")]);
    let all = set.warnings.join("\n");
    assert!(
        all.contains("tool mcp__a___x of MCP server `a_` is left out: server `a` has a tool"),
        "{all}"
    );
}

#[tokio::test]
async fn each_start_logs_to_its_own_file() {
    let Some(w) = World::new() else { return };
    let one = w.start(&[("t", &[])], ServerLimits::default()).await;
    let two = w.start(&[("t", &[])], ServerLimits::default()).await;
    let logs: Vec<_> = std::fs::read_dir(w.dir.path().join("logs"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    drop((one, two));
    assert_eq!(logs.len(), 2, "{logs:?}");
}
