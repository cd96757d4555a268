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
//!
//! Which files are ignored is decided once, by the `.gitignore` files (and the repository's
//! `info/exclude`) in force when a task's first call began ([`IgnoreRules::freeze`]), and every
//! later fingerprint of the task uses those rules alone. Were the rules read afresh on every
//! walk, a command could write `*` into a `.gitignore` (or an `.ignore`, which the walker
//! honoured too) and every later change would vanish from the receipt: edit after the test,
//! receipt still passing. With frozen rules a new or edited ignore file is an ordinary change
//! that hides nothing. `.ignore` files and git's global excludes are not honoured at all.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

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
    /// Stamp the files beneath `root` that `rules` do not ignore, without following links.
    /// Only `rules` decide: no ignore file in the tree as it is now is read.
    pub fn take(root: &Path, rules: &IgnoreRules) -> Fingerprint {
        let mut entries = HashMap::new();
        let matcher = rules.clone();
        let walk = ignore::WalkBuilder::new(root)
            .standard_filters(false)
            .follow_links(false)
            .filter_entry(move |e| {
                e.file_name() != ".git"
                    && (e.depth() == 0
                        || !matcher.ignores(e.path(), e.file_type().is_some_and(|t| t.is_dir())))
            })
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

/// The ignore rules of a tree, frozen: one matcher per directory that had a `.gitignore`
/// (in the tree and in its parents up to the repository's top), and the repository's
/// `info/exclude`. Cheap to clone.
#[derive(Debug, Clone)]
pub struct IgnoreRules {
    root: PathBuf,
    /// The `.gitignore` of each directory, keyed by the directory's path.
    by_dir: std::sync::Arc<HashMap<PathBuf, Gitignore>>,
    /// The repository's `info/exclude`, below every `.gitignore` in precedence, as in git.
    exclude: Option<std::sync::Arc<Gitignore>>,
}

impl IgnoreRules {
    /// The rules in force beneath `root` now: the `.gitignore` files git would read (those of
    /// the directories it does not ignore, and of `root`'s parents up to the repository's
    /// top) and the repository's `info/exclude`. No `.ignore` file, no global excludes.
    /// Reads at most [`MAX_ENTRIES`] entries.
    pub fn freeze(root: &Path) -> IgnoreRules {
        let mut by_dir = HashMap::new();
        let mut top = None;
        for dir in root.ancestors() {
            if dir != root {
                add_gitignore(&mut by_dir, dir);
            }
            if dir.join(".git").exists() {
                top = Some(dir.to_path_buf());
                break;
            }
        }
        if top.is_none() {
            // No repository: only the tree's own files, as the parents belong to nothing.
            by_dir.clear();
        }
        let walk = ignore::WalkBuilder::new(root)
            .standard_filters(false)
            .hidden(false)
            .git_ignore(true)
            .git_exclude(true)
            .git_global(false)
            .ignore(false)
            .parents(top.is_some())
            .require_git(false)
            .follow_links(false)
            .filter_entry(|e| e.file_name() != ".git")
            .build();
        for entry in walk.flatten().take(MAX_ENTRIES) {
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                add_gitignore(&mut by_dir, entry.path());
            }
        }
        let exclude = top
            .as_deref()
            .and_then(git_common_dir)
            .map(|common| common.join("info").join("exclude"))
            .filter(|file| file.is_file())
            .and_then(|file| {
                let mut builder = GitignoreBuilder::new(top.as_deref()?);
                let _ = builder.add(&file);
                builder.build().ok()
            })
            .map(std::sync::Arc::new);
        IgnoreRules {
            root: root.to_path_buf(),
            by_dir: std::sync::Arc::new(by_dir),
            exclude,
        }
    }

    /// No rule at all: nothing beneath `root` but `.git` is ignored.
    pub fn none(root: &Path) -> IgnoreRules {
        IgnoreRules {
            root: root.to_path_buf(),
            by_dir: std::sync::Arc::new(HashMap::new()),
            exclude: None,
        }
    }

    /// The tree the rules were frozen for.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether `path` is ignored: the `.gitignore` of its deepest directory that says anything
    /// about it decides (a `!pattern` keeps it), then `info/exclude`. A directory that is
    /// ignored is not walked, so nothing beneath it is seen, as in git.
    fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        for dir in path.ancestors().skip(1) {
            if let Some(matcher) = self.by_dir.get(dir) {
                let matched = matcher.matched(path, is_dir);
                if matched.is_ignore() {
                    return true;
                }
                if matched.is_whitelist() {
                    return false;
                }
            }
        }
        self.exclude
            .as_ref()
            .is_some_and(|m| m.matched(path, is_dir).is_ignore())
    }
}

/// Add the `.gitignore` of `dir`, if it has one, to `by_dir`.
fn add_gitignore(by_dir: &mut HashMap<PathBuf, Gitignore>, dir: &Path) {
    let file = dir.join(".gitignore");
    if file.is_file() {
        let mut builder = GitignoreBuilder::new(dir);
        // A line git cannot read is skipped by git too; the rest still counts.
        let _ = builder.add(&file);
        if let Ok(matcher) = builder.build() {
            by_dir.insert(dir.to_path_buf(), matcher);
        }
    }
}

/// The common git directory of the working tree at `top`: its `.git` directory, or for a
/// linked worktree (`.git` a file naming its git directory) that directory's `commondir`.
fn git_common_dir(top: &Path) -> Option<PathBuf> {
    let dot_git = top.join(".git");
    if dot_git.is_dir() {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let git_dir = top.join(text.trim().strip_prefix("gitdir:")?.trim());
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(common) => Some(git_dir.join(common.trim())),
        Err(_) => Some(git_dir),
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
        let rules = IgnoreRules::freeze(root);
        let before = Fingerprint::take(root, &rules);
        assert!(before.complete);
        assert_eq!(
            before.changes(&Fingerprint::take(root, &rules)),
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
        let changes = before.changes(&Fingerprint::take(root, &rules));
        assert_eq!(
            changes,
            [
                PathBuf::from("new.txt"),
                PathBuf::from("src/a.rs"),
                PathBuf::from("src/b.rs")
            ]
        );
    }

    /// A project as a writer finds it: a source file, build output git ignores, a `.git`.
    fn project() -> (tempfile::TempDir, IgnoreRules, Fingerprint) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::create_dir_all(root.join("sub/gen")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(root.join("sub/.gitignore"), "gen/\n!keep.log\n").unwrap();
        std::fs::write(root.join(".git/info/exclude"), "*.log\n").unwrap();
        std::fs::write(root.join("src.c"), "int main;\n").unwrap();
        std::fs::write(root.join("sub/keep.log"), "k").unwrap();
        let rules = IgnoreRules::freeze(root);
        let before = Fingerprint::take(root, &rules);
        (tmp, rules, before)
    }

    #[test]
    fn the_rules_frozen_at_the_start_decide_what_is_ignored() {
        let (tmp, rules, before) = project();
        let root = tmp.path();
        assert!(before.entries.contains_key(Path::new("sub/keep.log")));
        std::fs::write(root.join("target/x"), "built").unwrap();
        std::fs::write(root.join("sub/gen/y"), "built").unwrap();
        std::fs::write(root.join("a.log"), "log").unwrap();
        assert_eq!(
            before.changes(&Fingerprint::take(root, &rules)),
            Vec::<PathBuf>::new()
        );
    }

    #[test]
    fn an_ignore_file_written_later_hides_no_change() {
        for (file, at_root) in [
            (".ignore", true),
            (".gitignore", true),
            (".ignore", false),
            (".gitignore", false),
        ] {
            let (tmp, rules, before) = project();
            let root = tmp.path();
            let place = if at_root {
                root.join(file)
            } else {
                root.join("sub").join(file)
            };
            std::fs::write(&place, "*\n").unwrap();
            let after_ignore = Fingerprint::take(root, &rules);
            let mut seen = before.changes(&after_ignore);
            assert_eq!(
                seen,
                [place.strip_prefix(root).unwrap().to_path_buf()],
                "{file}"
            );
            std::fs::write(root.join("src.c"), "broken\n").unwrap();
            std::fs::write(root.join("sub/keep.log"), "changed").unwrap();
            std::fs::write(root.join("target/x"), "built").unwrap();
            seen = after_ignore.changes(&Fingerprint::take(root, &rules));
            assert_eq!(
                seen,
                [PathBuf::from("src.c"), PathBuf::from("sub/keep.log")],
                "{file} at root: {at_root}"
            );
        }
    }
}
