//! Project context files (`AGENTS.md` / `CLAUDE.md`) for the system prompt, found as Pi finds
//! them: the global one first, then one per directory from the filesystem root down to the cwd,
//! `AGENTS.md` winning over `CLAUDE.md` within a directory. The global one is CADRE_HOME's, or
//! Pi's (in its agent directory) when CADRE_HOME has none.
//!
//! A repository chooses what its context files are, so they are read as hostile input: only
//! regular files (a FIFO would block the run, a device or a `/proc` file be read without end),
//! at most [`MAX_CONTEXT_FILE_BYTES`] of each (read through a bounded reader; a longer file is
//! cut with a note), and a link is followed only to a file inside the project — inside the
//! directory that holds it, for directories above the project — so a committed
//! `AGENTS.md -> ~/.ssh/id_ed25519` or `-> /proc/self/pagemap` is not read. The global file is
//! the user's own and may link anywhere; it is bounded the same way.
//!
//! A process started with `--no-context-files` calls [`disable_context_files`] first: every
//! conversation it runs, the root's and its subagents', then goes without them, as in Pi.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use cadre_llm::registry::{ProcessEnv, pi_agent_dir};

/// File names looked for in each directory, in order of preference (Pi's list, upper-case
/// extensions included).
pub const CONTEXT_FILE_NAMES: [&str; 4] = ["AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"];

/// The most of one context file that is read; a longer file is cut here with a note.
pub const MAX_CONTEXT_FILE_BYTES: usize = 256 * 1024;

/// A context file and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub path: PathBuf,
    pub content: String,
}

/// The context files of a conversation, and what the person should be told about the ones
/// skipped or cut (`note: …` lines).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextFiles {
    pub files: Vec<ContextFile>,
    pub notes: Vec<String>,
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
pub fn collect_context_files(cwd: &Path, cadre_home: &Path) -> ContextFiles {
    if DISABLED.load(Ordering::Relaxed) {
        return ContextFiles::default();
    }
    collect_context_files_from(cwd, cadre_home, pi_agent_dir(&ProcessEnv).as_deref())
}

/// [`collect_context_files`] with Pi's agent directory given: its context file is the global
/// one when `cadre_home` has none.
pub fn collect_context_files_from(
    cwd: &Path,
    cadre_home: &Path,
    pi_agent_dir: Option<&Path>,
) -> ContextFiles {
    let mut found = ContextFiles::default();
    let global = context_file_in(cadre_home, None, &mut found.notes)
        .or_else(|| pi_agent_dir.and_then(|dir| context_file_in(dir, None, &mut found.notes)));
    found.files.extend(global);
    let project = real(&crate::config::project_root(cwd));
    let ancestors: Vec<&Path> = cwd.ancestors().collect();
    for dir in ancestors.into_iter().rev() {
        // Where a link in `dir` may lead: the project for the project's directories; for the
        // ones above it, the directory itself.
        let dir_real = real(dir);
        let bound = if dir_real.starts_with(&project) {
            project.clone()
        } else {
            dir_real
        };
        if let Some(file) = context_file_in(dir, Some(&bound), &mut found.notes)
            && !found.files.iter().any(|f| f.path == file.path)
        {
            found.files.push(file);
        }
    }
    let mut seen = std::collections::HashSet::new();
    found.notes.retain(|n| seen.insert(n.clone()));
    found
}

/// `path` with its links resolved, or as given when it cannot be.
fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The preferred context file of one directory, if any is readable. A link must lead inside
/// `bound` (when given) to be followed.
fn context_file_in(
    dir: &Path,
    bound: Option<&Path>,
    notes: &mut Vec<String>,
) -> Option<ContextFile> {
    CONTEXT_FILE_NAMES
        .iter()
        .find_map(|name| read_context_file(&dir.join(name), bound, notes))
}

/// One context file, or `None` (with a note when the person should know why) when it is
/// missing, not a regular file, a link out of `bound`, or not UTF-8 text.
fn read_context_file(
    path: &Path,
    bound: Option<&Path>,
    notes: &mut Vec<String>,
) -> Option<ContextFile> {
    let shown = path.display();
    let meta = std::fs::symlink_metadata(path).ok()?;
    let open_path = if meta.file_type().is_symlink() {
        // A dangling link is as good as no file.
        let target = std::fs::canonicalize(path).ok()?;
        if let Some(bound) = bound
            && !target.starts_with(bound)
        {
            notes.push(format!(
                "note: {shown} is a link that leads outside the project: not read"
            ));
            return None;
        }
        target
    } else {
        path.to_path_buf()
    };
    if meta.is_dir() {
        return None;
    }
    let file = open_no_wait(&open_path).ok()?;
    // The type of what was opened, not of what the path named a moment before.
    let kind = file.metadata().ok()?.file_type();
    if kind.is_dir() {
        return None;
    }
    if !kind.is_file() {
        notes.push(format!(
            "note: {shown} is not a regular file ({}): not read",
            kind_name(&kind)
        ));
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONTEXT_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    let cut = bytes.len() > MAX_CONTEXT_FILE_BYTES;
    bytes.truncate(MAX_CONTEXT_FILE_BYTES);
    let mut content = match String::from_utf8(bytes) {
        Ok(text) => text,
        // Cut inside a character: the whole characters before it.
        Err(e) if cut && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).ok()?
        }
        Err(_) => return None,
    };
    if cut {
        let kib = MAX_CONTEXT_FILE_BYTES / 1024;
        content.push_str(&format!(
            "\n\n[cadre: this file is longer than {kib} KiB; only its first {kib} KiB are included]"
        ));
        notes.push(format!(
            "note: {shown} is longer than {kib} KiB: only its first {kib} KiB are used"
        ));
    }
    Some(ContextFile {
        path: path.to_path_buf(),
        content,
    })
}

/// `path` opened for reading without waiting for a FIFO's writer, without taking a terminal,
/// and without following a link that took the place of the file meanwhile.
fn open_no_wait(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path)
}

fn kind_name(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
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

        let files = collect_context_files_from(&deeper, &home, None).files;
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
        let files = collect_context_files_from(&cwd, &home, None).files;
        assert_eq!(files.len(), 1);
        assert!(
            collect_context_files_from(&tmp.path().join("none"), &tmp.path().join("x"), None)
                .files
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

        let files = collect_context_files_from(&cwd, &home, Some(&pi)).files;
        let contents: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(contents, vec!["pi global", "project"]);
        assert_eq!(files[0].path, pi.join("CLAUDE.md"));

        // CADRE_HOME's own file wins; Pi's is not added to it.
        std::fs::write(home.join("CLAUDE.md"), "cadre global").unwrap();
        let files = collect_context_files_from(&cwd, &home, Some(&pi)).files;
        let contents: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(contents, vec!["cadre global", "project"]);
    }

    /// A project (a git root) inside a temporary directory, with a directory beside it.
    fn project() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let home = root.join("home");
        let project = root.join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(project.join("docs")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        (tmp, home, project, root.join("outside"))
    }

    fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success());
    }

    #[test]
    fn only_regular_files_are_read_and_a_fifo_or_device_is_skipped_with_a_note() {
        let (_tmp, home, project, _) = project();
        // A FIFO would block the open (and the run) for ever; CLAUDE.md is used instead.
        mkfifo(&project.join("AGENTS.md"));
        std::fs::write(project.join("CLAUDE.md"), "claude").unwrap();
        // The user's own global file may link anywhere, but a device is still no text.
        std::os::unix::fs::symlink("/dev/zero", home.join("AGENTS.md")).unwrap();
        let found = collect_context_files_from(&project, &home, None);
        let contents: Vec<&str> = found.files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(contents, ["claude"]);
        assert_eq!(found.notes.len(), 2, "{:?}", found.notes);
        assert!(
            found.notes[0].contains("(a device): not read"),
            "{:?}",
            found.notes
        );
        assert!(
            found.notes[1].contains("(a FIFO): not read"),
            "{:?}",
            found.notes
        );
    }

    #[test]
    fn a_link_is_followed_inside_the_project_only() {
        let (_tmp, home, project, outside) = project();
        std::fs::write(outside.join("secret.md"), "SECRET outside").unwrap();
        std::fs::write(project.join("docs/agents.md"), "inside").unwrap();
        let sub = project.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        // Inside the project, to a regular file inside it: followed.
        std::os::unix::fs::symlink("docs/agents.md", project.join("AGENTS.md")).unwrap();
        // Out of the project, to a file, a device or a /proc file: not followed.
        for (name, target) in [
            ("AGENTS.md", outside.join("secret.md")),
            ("AGENTS.MD", PathBuf::from("/dev/zero")),
            ("CLAUDE.md", PathBuf::from("/proc/self/pagemap")),
        ] {
            std::os::unix::fs::symlink(&target, sub.join(name)).unwrap();
        }
        std::fs::write(sub.join("CLAUDE.MD"), "sub's own").unwrap();
        let found = collect_context_files_from(&sub, &home, None);
        let contents: Vec<&str> = found.files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(contents, ["inside", "sub's own"]);
        assert_eq!(found.files[0].path, project.join("AGENTS.md"));
        assert_eq!(found.notes.len(), 3, "{:?}", found.notes);
        assert!(
            found
                .notes
                .iter()
                .all(|n| n.contains("leads outside the project: not read")),
            "{:?}",
            found.notes
        );
        assert!(!found.notes.iter().any(|n| n.contains("secret")));
    }

    #[test]
    fn a_long_file_is_cut_with_a_note() {
        let (_tmp, home, project, _) = project();
        // Multi-byte characters across the cut: it falls between whole characters.
        let line = "é".repeat(1000) + "\n";
        let long = line.repeat(MAX_CONTEXT_FILE_BYTES / line.len() * 4);
        std::fs::write(project.join("AGENTS.md"), &long).unwrap();
        let found = collect_context_files_from(&project, &home, None);
        let content = &found.files[0].content;
        let (kept, tail) = content.split_at(content.find("\n\n[cadre: ").unwrap());
        assert!(kept.len() <= MAX_CONTEXT_FILE_BYTES && kept.len() > MAX_CONTEXT_FILE_BYTES - 4);
        assert!(long.starts_with(kept));
        assert!(tail.contains("longer than 256 KiB"), "{tail}");
        assert_eq!(found.notes.len(), 1);
        assert!(found.notes[0].contains("only its first 256 KiB are used"));
        // A file of exactly the limit is whole.
        std::fs::write(
            project.join("AGENTS.md"),
            "a".repeat(MAX_CONTEXT_FILE_BYTES),
        )
        .unwrap();
        let found = collect_context_files_from(&project, &home, None);
        assert_eq!(found.files[0].content.len(), MAX_CONTEXT_FILE_BYTES);
        assert!(found.notes.is_empty());
    }
}
