//! Finding the real peers the interface tests drive: a Python with the official MCP SDK and the
//! ACP SDK (`.ci/run` makes the venv and exports `CADRE_TEST_PYTHON`).

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Where `.ci/run` puts the venv when `CADRE_TEST_PYTHON` is not set.
pub const VENV_PYTHON: &str = "/tmp/cadre-py-mcp2.3.0-acp0.12.1/bin/python";

/// The interpreter that can `import <module>` (e.g. `mcp.server.mcpserver`, `acp`):
/// `CADRE_TEST_PYTHON`, else [`VENV_PYTHON`]. Missing under CI (`CI` set) fails the calling
/// test, since a peer that silently went away would let the suite pass without testing the
/// interface; elsewhere it returns `None` with a note, and the test skips.
pub fn python_with(module: &str, sdk: &str) -> Option<PathBuf> {
    let path = std::env::var_os("CADRE_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(VENV_PYTHON));
    let works = Command::new(&path)
        .args(["-c", &format!("import {module}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if works {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI: no Python with the {sdk} at {} (set CADRE_TEST_PYTHON)",
        path.display()
    );
    eprintln!(
        "note: skipped: no Python with the {sdk} at {} (set CADRE_TEST_PYTHON)",
        path.display()
    );
    None
}

/// A Python with the official MCP SDK.
pub fn python_with_mcp() -> Option<PathBuf> {
    python_with("mcp.server.mcpserver", "MCP SDK")
}

/// A Python with the ACP SDK.
pub fn python_with_acp() -> Option<PathBuf> {
    python_with("acp", "ACP SDK")
}
