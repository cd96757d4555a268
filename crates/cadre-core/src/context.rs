//! Project context files (`AGENTS.md` / `CLAUDE.md`) for the system prompt, found as Pi finds
//! them: the global one first, then one per directory from the filesystem root down to the cwd,
//! `AGENTS.md` winning over `CLAUDE.md` within a directory. The global one is CADRE_HOME's, or
//! Pi's (in its agent directory) when CADRE_HOME has none.
//!
//! A process started with `--no-context-files` calls [`disable_context_files`] first: every
//! conversation it runs, the root's and its subagents', then goes without them, as in Pi.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use cadre_llm::registry::{ProcessEnv, pi_agent_dir};

/// File names looked for in each directory, in order of preference (Pi's list, upper-case
/// extensions included).
pub const CONTEXT_FILE_NAMES: [&str; 4] = ["AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"];

/// A context file and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub path: PathBuf,
    pub content: String,
}

static DISABLED: AtomicBool = AtomicBool::new(false);

/// No conversation of this process gets context files from now on (`--no-context-files`).
pub fn disable_context_files() {
    DISABLED.store(true, Ordering::Relaxed);
}

/// The context files for a conversation in `cwd`, global one first, then root to cwd; none
/// after [`disable_context_files`]. Files that cannot be read as UTF-8 text are skipped; a file
/// reached twice (CADRE_HOME inside the cwd's ancestry) is included once. Pi's agent directory
/// comes from the process environment (`PI_CODING_AGENT_DIR`, else `~/.pi/agent`).
pub fn collect_context_files(cwd: &Path, cadre_home: &Path) -> Vec<ContextFile> {
    if DISABLED.load(Ordering::Relaxed) {
        return Vec::new();
    }
    collect_context_files_from(cwd, cadre_home, pi_agent_dir(&ProcessEnv).as_deref())
}

/// [`collect_context_files`] with Pi's agent directory given: its context file is the global
/// one when `cadre_home` has none.
pub fn collect_context_files_from(
    cwd: &Path,
    cadre_home: &Path,
    pi_agent_dir: Option<&Path>,
) -> Vec<ContextFile> {
    let mut files: Vec<ContextFile> = Vec::new();
    if let Some(global) =
        context_file_in(cadre_home).or_else(|| pi_agent_dir.and_then(context_file_in))
    {
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

        let files = collect_context_files_from(&deeper, &home, None);
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
        let files = collect_context_files_from(&cwd, &home, None);
        assert_eq!(files.len(), 1);
        assert!(
            collect_context_files_from(&tmp.path().join("none"), &tmp.path().join("x"), None)
                .is_empty()
        );
    }

    #[test]
    fn pis_global_file_is_used_when_cadre_home_has_none() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("cadre");
        let pi = tmp.path().join("pi");
        let cwd = tmp.path().join("work");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&pi).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::write(pi.join("CLAUDE.md"), "pi global").unwrap();
        std::fs::write(cwd.join("AGENTS.md"), "project").unwrap();

        let files = collect_context_files_from(&cwd, &home, Some(&pi));
        let contents: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(contents, vec!["pi global", "project"]);
        assert_eq!(files[0].path, pi.join("CLAUDE.md"));

        // CADRE_HOME's own file wins; Pi's is not added to it.
        std::fs::write(home.join("CLAUDE.md"), "cadre global").unwrap();
        let files = collect_context_files_from(&cwd, &home, Some(&pi));
        let contents: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(contents, vec!["cadre global", "project"]);
    }
}
