//! The task index (SPEC P4): which tasks exist, so `cadre tasks` lists them without opening every
//! root session's directory.
//!
//! `<tasks_dir>/.index-v1` is a text file of lines, appended to and never edited in place:
//!
//! - `<root> <id>`: task `id` of root session `root` exists (or did: its directory may have been
//!   removed since, and readers skip it then);
//! - `+<root>`: every task of `root` that existed when the line was written has a line of its own
//!   before it, and every later task of this version appends its own line. A root is *complete*
//!   once this line exists.
//!
//! The index names tasks and nothing else: a task's status, and whether it is still there, are
//! read from its `task.json` alone, so an index that lags behind never shows a stale status.
//!
//! Listing ([`TaskStore::task_refs`]) reads the index and the names in the tasks directory (one
//! directory, however many tasks); a root directory that is not complete in the index — written
//! by an older version, or by this one before the index existed — is listed by its directory and
//! then repaired: its tasks and its `+<root>` line are appended. So tasks written by any version
//! are listed, and each root is scanned at most once. What the index cannot tell: an older version
//! that adds tasks to a root already complete here (a downgrade, then an upgrade) leaves tasks the
//! index does not name; `cadre tasks --rescan` scans every directory again.
//!
//! Invariant, at every step: a task directory of a complete root has its line. [`TaskStore::create`]
//! appends a task's line right after the directory claims its id and before its record is
//! written, and the line is flushed with the record (see [`super::commit`]), so a crash leaves at
//! worst a line for a directory without a record (or none at all), which readers skip. The first
//! task of a new root appends `+<root>` with its own line: the root was created with the index.
//!
//! Appends are single `write`s on an `O_APPEND` descriptor under a shared `flock`; retention
//! rewrites the file without the tasks it removed under an exclusive one, and an appender that
//! finds the file replaced while it waited appends to the new one.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::{StoreError, StoreProblem, TaskRef, TaskRefs, TaskStore, subdirs, validate_id};
use crate::config::{Durable, atomic_rewrite};

/// The index file in the tasks directory. A new format names a new file; the old one is then
/// ignored (its roots are scanned once, as an older version's).
pub const INDEX_FILE: &str = ".index-v1";
/// How often an appender starts over when the file was replaced while it waited for the lock.
const APPEND_ATTEMPTS: usize = 16;

/// What the index says: its tasks (root, id) and complete roots, borrowed from its text.
#[derive(Debug, Default)]
pub(super) struct Index<'a> {
    pub tasks: Vec<(&'a str, &'a str)>,
    pub complete: HashSet<&'a str>,
}

impl<'a> Index<'a> {
    /// Parse the index text; lines that are not an entry (a torn tail) are skipped.
    pub(super) fn parse(text: &'a str) -> Index<'a> {
        let mut index = Index {
            // A line is about 75 bytes.
            tasks: Vec::with_capacity(text.len() / 64),
            complete: HashSet::new(),
        };
        for line in text.lines() {
            if let Some(root) = line.strip_prefix('+') {
                if validate_id("root session id", root).is_ok() {
                    index.complete.insert(root);
                }
                continue;
            }
            let Some((root, id)) = line.split_once(' ') else {
                continue;
            };
            if validate_id("root session id", root).is_ok() && validate_id("task id", id).is_ok() {
                index.tasks.push((root, id));
            }
        }
        index
    }
}

/// The line of one task.
pub(super) fn task_line(root: &str, id: &str) -> String {
    format!("{root} {id}\n")
}

/// The line that says `root` is complete.
pub(super) fn complete_line(root: &str) -> String {
    format!("+{root}\n")
}

impl TaskStore {
    pub fn index_path(&self) -> PathBuf {
        self.dir.join(INDEX_FILE)
    }

    /// Append `text` (whole lines) to the index with one `write`, returning the descriptor so the
    /// caller can flush it. Creates the index when missing.
    pub(super) fn append_index(&self, text: &str) -> io::Result<File> {
        let path = self.index_path();
        for _ in 0..APPEND_ATTEMPTS {
            let mut file = OpenOptions::new()
                .append(true)
                .create(true)
                .mode(0o600)
                .open(&path)?;
            flock(&file, libc::LOCK_SH)?;
            // Retention may have replaced the file while we waited: append to the one named now.
            match fs::metadata(&path) {
                Ok(named) if same_inode(&named, &file.metadata()?) => {}
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            }
            file.write_all(text.as_bytes())?;
            return Ok(file);
        }
        Err(io::Error::other(
            "the task index kept being replaced while it was being appended to",
        ))
    }

    /// The index's text; a missing index is empty. Bytes that are not UTF-8 (a torn tail after
    /// a power loss) spoil only their line.
    pub(super) fn read_index_text(&self) -> io::Result<String> {
        match fs::read(self.index_path()) {
            Ok(bytes) => Ok(match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(String::new()),
            Err(e) => Err(e),
        }
    }

    /// Every task directory's root session and id, newest first: by id descending (creation
    /// order for UUID v7 ids), then by root. Reads the index and the tasks directory's names;
    /// only roots the index does not know complete are listed by their directories, and then
    /// added to the index. With `rescan`, every root is listed by its directory (and what the
    /// index lacked is added).
    pub fn task_refs_with(&self, rescan: bool) -> Result<TaskRefs, StoreError> {
        let mut out = TaskRefs::default();
        let text = match self.read_index_text() {
            Ok(text) => text,
            Err(source) => {
                let path = self.index_path();
                out.problems.push(StoreProblem::from_error(
                    path.clone(),
                    &StoreError::Read { path, source },
                ));
                String::new()
            }
        };
        let index = Index::parse(&text);
        out.refs.reserve(index.tasks.len());
        let roots: Vec<String> = subdirs(&self.dir)?
            .into_iter()
            .filter(|root| validate_id("root session id", root).is_ok())
            .collect();
        let mut by_root: HashMap<&str, Vec<&str>> = HashMap::new();
        for &(root, id) in &index.tasks {
            by_root.entry(root).or_default().push(id);
        }
        let mut repair = String::new();
        for root in &roots {
            let known = by_root.remove(root.as_str()).unwrap_or_default();
            if !rescan && index.complete.contains(root.as_str()) {
                out.refs.extend(known.into_iter().map(|id| TaskRef {
                    root: root.clone(),
                    id: id.to_string(),
                }));
                continue;
            }
            let known: HashSet<&str> = known.into_iter().collect();
            match subdirs(&self.dir.join(root)) {
                Ok(ids) => {
                    let ids: Vec<String> = ids
                        .into_iter()
                        .filter(|id| validate_id("task id", id).is_ok())
                        .collect();
                    for id in &ids {
                        if !known.contains(id.as_str()) {
                            repair.push_str(&task_line(root, id));
                        }
                    }
                    if !index.complete.contains(root.as_str()) {
                        repair.push_str(&complete_line(root));
                    }
                    // Lines of tasks whose directories are gone are no tasks.
                    out.refs.extend(ids.into_iter().map(|id| TaskRef {
                        root: root.clone(),
                        id,
                    }));
                }
                Err(e) => out
                    .problems
                    .push(StoreProblem::from_error(self.dir.join(root), &e)),
            }
        }
        // What is left in `by_root` are lines of roots whose directories are gone: no tasks.
        if !repair.is_empty() {
            // Not flushed: a repair lost to a power loss is made again by the next listing.
            // A failure leaves the roots to be scanned again next time, which is only slower.
            let _ = self.append_index(&repair);
        }
        out.refs
            .sort_unstable_by(|a, b| b.id.cmp(&a.id).then_with(|| b.root.cmp(&a.root)));
        out.refs.dedup();
        Ok(out)
    }

    /// Rewrite the index without the tasks in `removed`, without the roots whose directories are
    /// gone and without duplicate lines, under the exclusive lock so no append is lost. Retention
    /// calls this after removing directories.
    pub(super) fn compact_index(&self, removed: &HashSet<(String, String)>) -> io::Result<()> {
        let path = self.index_path();
        let file = match OpenOptions::new().read(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        flock(&file, libc::LOCK_EX)?;
        let mut bytes = Vec::new();
        (&file).read_to_end(&mut bytes)?;
        let lossy = String::from_utf8_lossy(&bytes);
        let index = Index::parse(&lossy);
        let mut present: HashMap<String, bool> = HashMap::new();
        let mut exists = |root: &str| -> bool {
            if let Some(known) = present.get(root) {
                return *known;
            }
            let there = dir_exists(&self.dir.join(root));
            present.insert(root.to_string(), there);
            there
        };
        let mut seen: HashSet<(&str, &str)> = HashSet::new();
        let mut text = String::with_capacity(bytes.len());
        for &(root, id) in &index.tasks {
            if removed.contains(&(root.to_string(), id.to_string()))
                || !seen.insert((root, id))
                || !exists(root)
            {
                continue;
            }
            text.push_str(&task_line(root, id));
        }
        let mut complete: Vec<&str> = index
            .complete
            .iter()
            .copied()
            .filter(|root| exists(root))
            .collect();
        complete.sort();
        for root in complete {
            text.push_str(&complete_line(root));
        }
        // Not flushed: what a power loss takes back is the longer file from before.
        let result = atomic_rewrite(&path, text.as_bytes(), Durable::AgainstProcessDeath);
        drop(file);
        result
    }
}

fn same_inode(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[allow(unsafe_code)]
fn flock(file: &File, op: libc::c_int) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: the descriptor is open for the duration of the call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), op) };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Whether `path` is a directory.
pub(super) fn dir_exists(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::orchestrator::store::test_support::{ROOT, finished, store};
    use crate::orchestrator::store::{TASK_FILE, new_task_id};
    use cadre_protocol::TaskStatus;
    use std::time::{Duration, SystemTime};

    /// A finished task written as a version without the index wrote it: directory and record.
    fn old_version_task(s: &TaskStore, root: &str) -> String {
        let id = new_task_id();
        let mut r = finished(&id, TaskStatus::Completed, None);
        r.root_session_id = root.to_string();
        let dir = s.task_dir(root, &id).unwrap();
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(TASK_FILE), serde_json::to_vec(&r).unwrap()).unwrap();
        id
    }

    fn created(s: &TaskStore, root: &str) -> String {
        let mut r = finished(&new_task_id(), TaskStatus::Completed, None);
        r.root_session_id = root.to_string();
        s.create(&mut r).unwrap();
        r.id
    }

    fn listed(s: &TaskStore, rescan: bool) -> Vec<String> {
        let refs = s.task_refs_with(rescan).unwrap();
        assert!(refs.problems.is_empty(), "{:?}", refs.problems);
        refs.refs.into_iter().map(|r| r.id).collect()
    }

    fn newest_first(mut ids: Vec<String>) -> Vec<String> {
        ids.sort();
        ids.reverse();
        ids
    }

    #[test]
    fn created_tasks_are_indexed_and_a_new_root_is_complete() {
        let (_tmp, s) = store();
        let a = created(&s, ROOT);
        let b = created(&s, ROOT);
        let text = fs::read_to_string(s.index_path()).unwrap();
        assert_eq!(
            text,
            format!("{ROOT} {a}\n+{ROOT}\n{ROOT} {b}\n"),
            "the first task of a root says the root is complete"
        );
        assert_eq!(listed(&s, false), [b.clone(), a.clone()]);
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(s.index_path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn tasks_of_older_versions_are_listed_and_their_roots_indexed_once() {
        let (_tmp, s) = store();
        let old_root = new_task_id();
        let mut old: Vec<String> = (0..3).map(|_| old_version_task(&s, &old_root)).collect();
        // This version continues the old root session before anything was listed: its line does
        // not make the root complete, so the older tasks are still found.
        let new_in_old = created(&s, &old_root);
        let new_root = new_task_id();
        let fresh = created(&s, &new_root);
        old.extend([new_in_old.clone(), fresh.clone()]);
        let all = newest_first(old);
        assert_eq!(listed(&s, false), all);
        // The listing repaired the index: the old root is complete now, each task named once.
        let text = s.read_index_text().unwrap();
        let index = Index::parse(&text);
        assert!(index.complete.contains(old_root.as_str()));
        assert!(index.complete.contains(new_root.as_str()));
        let mut named: Vec<String> = index.tasks.iter().map(|t| t.1.to_string()).collect();
        named.sort();
        named.reverse();
        assert_eq!(named, all);
        assert_eq!(listed(&s, false), all);

        // From now on the index is what is read: a task an older version adds to a complete
        // root is found by a rescan (which indexes it), not by a plain listing.
        let late = old_version_task(&s, &old_root);
        assert_eq!(listed(&s, false), all);
        let mut with_late = all.clone();
        with_late.push(late);
        let with_late = newest_first(with_late);
        assert_eq!(listed(&s, true), with_late);
        assert_eq!(listed(&s, false), with_late);
    }

    #[test]
    fn a_task_whose_directory_is_gone_is_no_task_and_no_problem() {
        let (_tmp, s) = store();
        let a = created(&s, ROOT);
        let b = created(&s, ROOT);
        fs::remove_dir_all(s.task_dir(ROOT, &a).unwrap()).unwrap();
        let refs = s.task_refs().unwrap().refs;
        let page = s.read_page(&refs, None, |_| true);
        assert_eq!(
            page.records
                .iter()
                .map(|r| r.id.as_str())
                .collect::<Vec<_>>(),
            [b.as_str()]
        );
        assert!(page.problems.is_empty(), "{:?}", page.problems);
        // A directory without a record is still reported, as before the index.
        fs::remove_file(s.record_path(ROOT, &b).unwrap()).unwrap();
        let page = s.read_page(&refs, None, |_| true);
        assert_eq!(page.problems.len(), 1, "{:?}", page.problems);
        // A root whose directory is gone lists nothing.
        fs::remove_dir_all(s.dir().join(ROOT)).unwrap();
        assert!(listed(&s, false).is_empty());
    }

    #[test]
    fn a_torn_or_foreign_line_is_skipped() {
        let (_tmp, s) = store();
        let a = created(&s, ROOT);
        let mut f = OpenOptions::new()
            .append(true)
            .open(s.index_path())
            .unwrap();
        f.write_all(b"../escape x\n\xff\xfe garbage\nno-space-here\n+..\n0190a000-0000-7000-80")
            .unwrap();
        let text = s.read_index_text().unwrap();
        let index = Index::parse(&text);
        assert_eq!(index.tasks.len(), 1);
        assert_eq!(index.complete.len(), 1);
        assert_eq!(listed(&s, false), [a]);
    }

    #[test]
    fn retention_drops_the_removed_tasks_from_the_index() {
        let (_tmp, s) = store();
        let now = SystemTime::now();
        let ended = now - Duration::from_secs(40 * 86_400);
        // Old tasks need old ids for retention to look at them: made by hand, then indexed.
        let old_root = "root-old";
        let mut gone = Vec::new();
        for i in 0..2 {
            let mut r = finished(&format!("old-{i}"), TaskStatus::Completed, Some(ended));
            r.root_session_id = old_root.into();
            s.create(&mut r).unwrap();
            gone.push(r.id);
        }
        let kept = created(&s, ROOT);
        // A duplicate line, as a listing racing a creation leaves.
        s.append_index(&task_line(ROOT, &kept)).unwrap();
        let cleanup = s.cleanup_now(30, now);
        assert_eq!(cleanup.removed.len(), 2, "{:?}", cleanup.problems);
        let text = fs::read_to_string(s.index_path()).unwrap();
        assert_eq!(text, format!("{ROOT} {kept}\n+{ROOT}\n"));
        assert_eq!(listed(&s, false), [kept]);
    }

    #[test]
    fn an_append_waiting_on_a_rewrite_lands_in_the_new_file() {
        let (_tmp, s) = store();
        let a = created(&s, ROOT);
        // Hold the old file's lock as a rewrite does, replace the file, then let go.
        let old = OpenOptions::new().read(true).open(s.index_path()).unwrap();
        flock(&old, libc::LOCK_EX).unwrap();
        let appender = {
            let s = s.clone();
            std::thread::spawn(move || {
                s.append_index(&task_line(ROOT, "late")).unwrap();
            })
        };
        atomic_rewrite(
            &s.index_path(),
            task_line(ROOT, &a).as_bytes(),
            Durable::AgainstProcessDeath,
        )
        .unwrap();
        drop(old);
        appender.join().unwrap();
        let text = fs::read_to_string(s.index_path()).unwrap();
        assert_eq!(text, format!("{ROOT} {a}\n{ROOT} late\n"));
    }
}
