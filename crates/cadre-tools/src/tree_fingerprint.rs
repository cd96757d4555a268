//! What a command changed in a project, seen from outside the command: the tree's files before
//! and after, compared by identity and change time. A writing child's receipt lists every file
//! its calls changed — through `edit` and `write`, and through `bash` (`sed -i`, a generator, a
//! script) — and orders its checks against those changes, so a change made after the last
//! passing test is never certified.
//!
//! A file's stamp is its inode, size, modification time and status-change time. A command can
//! set a file's modification time back (`touch -r`), but not its status-change time, which the
//! kernel moves on every write, rename or metadata change: a rewrite that keeps the size and
//! the times is still seen. Files git ignores (build output such as `target/`, `node_modules/`)
//! and `.git` itself are left out: a test run that builds is not a change to the project.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Most entries fingerprinted; past it the rest of the tree is not compared (said in
/// [`Fingerprint::complete`]).
pub const MAX_ENTRIES: usize = 200_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
}

/// The stamps of a tree's files (regular files, links and directories' entries alike).
#[derive(Debug, Clone, Default)]
pub struct Fingerprint {
    entries: HashMap<PathBuf, Stamp>,
    /// Every entry was stamped (the tree had no more than [`MAX_ENTRIES`]).
    pub complete: bool,
}

impl Fingerprint {
    /// Stamp the files beneath `root` that git would not ignore, without following links.
    pub fn take(root: &Path) -> Fingerprint {
        let mut entries = HashMap::new();
        let walk = ignore::WalkBuilder::new(root)
            .hidden(false)
            .git_ignore(true)
            .git_exclude(true)
            .git_global(false)
            .parents(true)
            .require_git(false)
            .follow_links(false)
            .filter_entry(|e| e.file_name() != ".git")
            .build();
        let mut complete = true;
        for entry in walk.flatten() {
            if entry.depth() == 0 {
                continue;
            }
            if entries.len() >= MAX_ENTRIES {
                complete = false;
                break;
            }
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                continue;
            }
            let rel = entry
                .path()
                .strip_prefix(root)
                .unwrap_or(entry.path())
                .to_path_buf();
            entries.insert(
                rel,
                Stamp {
                    ino: meta.ino(),
                    size: meta.size(),
                    mtime: (meta.mtime(), meta.mtime_nsec()),
                    ctime: (meta.ctime(), meta.ctime_nsec()),
                    mode: meta.mode(),
                },
            );
        }
        Fingerprint { entries, complete }
    }

    /// The paths (relative to the root) created, changed or removed between `self` and
    /// `after`, sorted.
    pub fn changes(&self, after: &Fingerprint) -> Vec<PathBuf> {
        let mut changed: Vec<PathBuf> = after
            .entries
            .iter()
            .filter(|(path, stamp)| self.entries.get(*path) != Some(stamp))
            .map(|(path, _)| path.clone())
            .collect();
        changed.extend(
            self.entries
                .keys()
                .filter(|path| !after.entries.contains_key(*path))
                .cloned(),
        );
        changed.sort();
        changed
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn creations_rewrites_and_removals_are_changes_and_ignored_files_are_not() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join("src/a.rs"), "one").unwrap();
        std::fs::write(root.join("src/b.rs"), "two").unwrap();
        let before = Fingerprint::take(root);
        assert!(before.complete);
        assert_eq!(
            before.changes(&Fingerprint::take(root)),
            Vec::<PathBuf>::new()
        );
        // A rewrite of the same size whose modification time is set back is still seen.
        let old = std::fs::metadata(root.join("src/a.rs"))
            .unwrap()
            .modified()
            .unwrap();
        std::fs::write(root.join("src/a.rs"), "ONE").unwrap();
        std::fs::File::options()
            .write(true)
            .open(root.join("src/a.rs"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        std::fs::remove_file(root.join("src/b.rs")).unwrap();
        std::fs::write(root.join("new.txt"), "x").unwrap();
        std::fs::write(root.join("target/out.bin"), "x").unwrap();
        std::fs::write(root.join(".git/index"), "x").unwrap();
        let changes = before.changes(&Fingerprint::take(root));
        assert_eq!(
            changes,
            [
                PathBuf::from("new.txt"),
                PathBuf::from("src/a.rs"),
                PathBuf::from("src/b.rs")
            ]
        );
    }
}
