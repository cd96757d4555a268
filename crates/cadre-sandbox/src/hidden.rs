//! Files that hold credentials cadre uses — `auth.json` and `models.json` (cadre's and Pi's),
//! the MCP HTTP server's bearer tokens, the MCP servers' logs — and that no subagent, no tool
//! and no sandboxed command may read: a read-only `research` child that read the MCP token
//! could open its own session on loopback and launch a writer; one that read a key file could
//! send it away.
//!
//! The host registers them once it knows its home ([`hide`]); from then on:
//! - `read` refuses them and `grep`/`find` walk past them (in cadre's own process);
//! - every sandboxed command — read-only or writer — gets them as `--hide` options, and its
//!   Landlock rules grant reading everywhere but beneath them (`sandbox::landlock`).
//!
//! Paths are kept canonical (their parent resolved; the file itself need not exist yet, so a
//! key file written later is covered too).

use std::path::{Path, PathBuf};
use std::sync::RwLock;

static HIDDEN: RwLock<Vec<PathBuf>> = RwLock::new(Vec::new());

/// Canonical form of `path`: its parent resolved (links followed), its own name kept.
fn canonical(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .map(|p| p.join(name))
            .unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

/// Hide `paths` from every tool and sandboxed command of this process (added to those already
/// hidden; a process with several homes, as tests have, hides all of them).
pub fn hide(paths: impl IntoIterator<Item = PathBuf>) {
    let mut hidden = match HIDDEN.write() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    for path in paths {
        let path = canonical(&path);
        if !hidden.contains(&path) {
            hidden.push(path);
        }
    }
}

/// The hidden paths, canonical.
pub fn hidden() -> Vec<PathBuf> {
    match HIDDEN.read() {
        Ok(guard) => guard.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

/// Whether `path` (resolved as far as it exists) is a hidden path or lies beneath one.
pub fn is_hidden(path: &Path) -> bool {
    let hidden = hidden();
    if hidden.is_empty() {
        return false;
    }
    let real = canonical(path);
    hidden
        .iter()
        .any(|h| real.starts_with(h) || path.starts_with(h))
}

/// Whether a walk that starts at `root` would pass through a hidden path: the walk then has
/// to test its entries ([`is_hidden`]).
pub fn walk_meets_hidden(root: &Path) -> bool {
    let hidden = hidden();
    if hidden.is_empty() {
        return false;
    }
    let real = canonical(root);
    hidden
        .iter()
        .any(|h| h.starts_with(&real) || real.starts_with(h))
}

/// The message of a tool that refused a hidden path.
pub fn refusal(raw: &str) -> String {
    format!(
        "Cannot read {raw}: it holds credentials cadre uses (a key file, an MCP token or log), \
         which no tool reads"
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn hidden_files_and_what_lies_beneath_them_are_hidden_through_links() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join("mcp-http")).unwrap();
        hide([home.join("auth.json"), home.join("mcp-http")]);
        assert!(is_hidden(&home.join("auth.json")), "before it exists");
        std::fs::write(home.join("auth.json"), "{}").unwrap();
        assert!(is_hidden(&home.join("mcp-http/4000.token")));
        assert!(!is_hidden(&home.join("settings.json")));
        std::os::unix::fs::symlink(home.join("auth.json"), tmp.path().join("link")).unwrap();
        assert!(is_hidden(&tmp.path().join("link")));
        assert!(walk_meets_hidden(tmp.path()));
        assert!(!walk_meets_hidden(&home.join("sessions")));
    }
}
