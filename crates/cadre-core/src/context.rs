//! Project context files (`AGENTS.md` / `CLAUDE.md`) for the system prompt, found as Pi finds
//! them: the one in CADRE_HOME first, then one per directory from the filesystem root down to
//! the cwd, `AGENTS.md` winning over `CLAUDE.md` within a directory.

use std::path::{Path, PathBuf};

/// File names looked for in each directory, in order of preference.
pub const CONTEXT_FILE_NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// A context file and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub path: PathBuf,
    pub content: String,
}

/// The context files for a conversation in `cwd`, global one first, then root to cwd. Files
/// that cannot be read as UTF-8 text are skipped; a file reached twice (CADRE_HOME inside the
/// cwd's ancestry) is included once.
pub fn collect_context_files(cwd: &Path, cadre_home: &Path) -> Vec<ContextFile> {
    let mut files: Vec<ContextFile> = Vec::new();
    if let Some(global) = context_file_in(cadre_home) {
        files.push(global);
    }
    let ancestors: Vec<&Path> = cwd.ancestors().collect();
    for dir in ancestors.into_iter().rev() {
        if let Some(file) = context_file_in(dir)
            && !files.iter().any(|f| f.path == file.path)
        {
            files.push(file);
        }
    }
    files
}

/// The preferred context file of one directory, if any is readable.
fn context_file_in(dir: &Path) -> Option<ContextFile> {
    CONTEXT_FILE_NAMES.iter().find_map(|name| {
        let path = dir.join(name);
        if !path.is_file() {
            return None;
        }
        let content = std::fs::read_to_string(&path).ok()?;
        Some(ContextFile { path, content })
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn collects_home_then_root_to_cwd_preferring_agents_md() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let home = root.join("home");
        let project = root.join("project");
        let sub = project.join("sub");
        let deeper = sub.join("deeper");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&deeper).unwrap();
        std::fs::write(home.join("AGENTS.md"), "global").unwrap();
        std::fs::write(project.join("CLAUDE.md"), "project claude").unwrap();
        std::fs::write(sub.join("AGENTS.md"), "sub agents").unwrap();
        std::fs::write(sub.join("CLAUDE.md"), "sub claude").unwrap();
        // A directory named like a context file is not a file.
        std::fs::create_dir_all(deeper.join("AGENTS.md")).unwrap();
        std::fs::write(deeper.join("CLAUDE.md"), [0xff, 0xfe]).unwrap();

        let files = collect_context_files(&deeper, &home);
        let contents: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(contents, vec!["global", "project claude", "sub agents"]);
        assert_eq!(files[2].path, sub.join("AGENTS.md"));
    }

    #[test]
    fn home_inside_the_cwd_ancestry_is_not_repeated() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("h");
        let cwd = home.join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::write(home.join("AGENTS.md"), "g").unwrap();
        let files = collect_context_files(&cwd, &home);
        assert_eq!(files.len(), 1);
        assert!(collect_context_files(&tmp.path().join("none"), &tmp.path().join("x")).is_empty());
    }
}
