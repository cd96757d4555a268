//! Live-task markers and orphan recovery (SPEC O13, P4, Z1).
//!
//! `<tasks_dir>/.live/<root>+<id>` exists whenever the record of task `id` of root session `root`
//! may say `running`, so start-up recovery opens the records of marked tasks alone, not every
//! record ever written. (`+` cannot occur in an id, so the name splits back unambiguously.) A
//! marker is a hard link to `.live/.anchor`: a name without an inode of its own, since allocating
//! an inode per task cost more than the rest of a record write on a busy ext4 (where hard links
//! are refused, a marker is an empty file). The invariant, kept across a `kill -9` at any point:
//!
//! - a record is written `running` only after its marker exists (adding the marker is the first
//!   step of such a write), and a marker is removed only after its record says something else;
//! - so a crash can leave a marker too many (its record already terminal, or never written), never
//!   one too few. Recovery removes those stale markers.
//!
//! Writers and recovery can run in different processes at once: a `running` write could land just
//! after recovery read the record as terminal and just before it removed the marker. Each step
//! (a write: marker, then record; recovery: read the record, then maybe remove the marker) holds
//! the task's lock ([`super::lock`]), so recovery judges a marker only by a record no one is
//! rewriting.
//!
//! Records written before markers existed have none. The first recovery in a tasks directory
//! without the [`SCANNED_STAMP`] reads every record once, gives each `running` one its marker,
//! sweeps stale temp files, and then writes the stamp; a crash before that just means the scan
//! runs again. A version of cadre without markers still writing into the same directory afterwards
//! would leave its running tasks unmarked: `cadre doctor` reads every record and reports those.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use cadre_protocol::{TaskPhase, TaskStatus};

use super::lock::TaskLock;
use super::{ORPHANED, OUTPUT_FILE, Recovery, StoreError, StoreProblem, TASK_FILE, TaskStore};
use super::{timestamp, validate_id, write_file};
use crate::config::Durable;

/// The directory of live-task markers, inside the tasks directory. Hidden, so it is never taken
/// for a root session's directory.
pub const LIVE_DIR: &str = ".live";
/// Written in [`LIVE_DIR`] once every record that older versions wrote (without markers) was
/// scanned. A new format that needs another scan names a new stamp.
pub(super) const SCANNED_STAMP: &str = ".scanned-v1";
/// Between the root session id and the task id in a marker's name.
const SEPARATOR: char = '+';
/// The longest file name most file systems take (`NAME_MAX`).
pub(super) const MAX_MARKER_NAME: usize = 255;
/// The file every marker is a hard link to.
const ANCHOR: &str = ".anchor";

impl TaskStore {
    pub(super) fn live_dir(&self) -> PathBuf {
        self.dir.join(LIVE_DIR)
    }

    /// `<tasks_dir>/.live/<root>+<id>`, after checking both ids and the length of the name.
    pub fn live_marker_path(&self, root: &str, id: &str) -> Result<PathBuf, StoreError> {
        validate_id("root session id", root)?;
        validate_id("task id", id)?;
        if root.len() + 1 + id.len() > MAX_MARKER_NAME {
            return Err(StoreError::IdsTooLong {
                root: root.to_string(),
                id: id.to_string(),
            });
        }
        Ok(self.live_dir().join(format!("{root}{SEPARATOR}{id}")))
    }

    /// Whether task `id` of `root` has a live marker.
    pub fn is_marked_live(&self, root: &str, id: &str) -> bool {
        self.live_marker_path(root, id)
            .is_ok_and(|p| fs::symlink_metadata(p).is_ok())
    }

    /// The stamp of the one-time scan ([`SCANNED_STAMP`]): removing it makes the next recovery
    /// read every record again.
    pub fn scan_stamp(&self) -> PathBuf {
        self.live_dir().join(SCANNED_STAMP)
    }

    /// Whether every record older versions wrote has been given its marker ([`SCANNED_STAMP`]).
    pub fn markers_complete(&self) -> bool {
        fs::symlink_metadata(self.scan_stamp()).is_ok()
    }

    /// Drop the marker of a task whose directory is being removed.
    pub(super) fn forget_live(&self, root: &str, id: &str) {
        if let Ok(path) = self.live_marker_path(root, id) {
            let _ = fs::remove_file(path);
        }
    }

    /// Start-up recovery (O13): every record still `running` whose owner process is missing or
    /// gone becomes `failed` with error [`ORPHANED`], phase terminal, `ended_at` now. Its
    /// termination stays unset (no termination rule fired; the process vanished) and its session
    /// file is left alone, so `SendMessage` can resume it. `is_alive(pid, start_time)` decides
    /// whether an owner lives ([`super::pid_is_alive`] in production). Temp files left by a writer
    /// that died mid-write are removed on the way.
    ///
    /// Only marked records are read (after a one-time scan of records older versions left), and
    /// stale markers are removed.
    pub fn recover_orphans(&self, is_alive: impl Fn(u32, Option<u64>) -> bool) -> Recovery {
        let mut recovery = Recovery::default();
        self.mark_unmarked_records(&is_alive, &mut recovery);
        let scanned = recovery.problems.len();
        for (root, id) in self.live_markers(&mut recovery) {
            self.recover_marked(&root, &id, &is_alive, &mut recovery);
        }
        // A marked record that cannot be read was met by the scan too; name it once.
        let (first, rest) = recovery.problems.split_at(scanned);
        let rest: Vec<StoreProblem> = rest
            .iter()
            .filter(|p| !first.contains(p))
            .cloned()
            .collect();
        recovery.problems.truncate(scanned);
        recovery.problems.extend(rest);
        recovery
    }

    /// The one-time scan: give every `running` record without a marker one, then write the stamp.
    fn mark_unmarked_records(
        &self,
        is_alive: &impl Fn(u32, Option<u64>) -> bool,
        recovery: &mut Recovery,
    ) {
        if self.markers_complete() {
            return;
        }
        // No tasks directory: nothing was ever stored, and the first task will have its marker.
        if matches!(fs::symlink_metadata(&self.dir), Err(e) if e.kind() == io::ErrorKind::NotFound)
        {
            return;
        }
        let listing = match self.list_all() {
            Ok(l) => l,
            Err(e) => {
                recovery
                    .problems
                    .push(StoreProblem::from_error(self.dir.clone(), &e));
                return;
            }
        };
        // Unreadable records stay reported by every listing; they cannot be recovered either way,
        // so they do not keep the scan from completing.
        recovery.problems.extend(listing.problems);
        let mut complete = true;
        for record in &listing.records {
            let (root, id) = (&record.root_session_id, &record.id);
            if let Ok(dir) = self.task_dir(root, id) {
                sweep_temp_files(&dir, is_alive);
            }
            if record.status != TaskStatus::Running {
                continue;
            }
            // No lock needed: a marker is only added here, and a marker too many is safe.
            let marked = self.live_marker_path(root, id).and_then(|path| {
                add_marker(&path).map_err(|source| StoreError::Write { path, source })
            });
            if let Err(e) = marked {
                complete = false;
                recovery
                    .problems
                    .push(StoreProblem::from_error(self.dir.join(root).join(id), &e));
            }
        }
        if complete {
            let stamp = self.scan_stamp();
            let text = b"Every task record written before live markers existed was scanned once; \
                         the running ones were given a marker.\n";
            if let Err(e) = write_file(&stamp, text, Durable::AgainstPowerLoss) {
                recovery
                    .problems
                    .push(StoreProblem::from_error(stamp.clone(), &e));
            }
        }
    }

    /// Every marker's (root, id), sorted. Files whose names are not a marker's are left alone.
    fn live_markers(&self, recovery: &mut Recovery) -> Vec<(String, String)> {
        let dir = self.live_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
            Err(source) => {
                let e = StoreError::Read {
                    path: dir.clone(),
                    source,
                };
                recovery.problems.push(StoreProblem::from_error(dir, &e));
                return Vec::new();
            }
        };
        let mut markers: Vec<(String, String)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str().and_then(parse_marker_name))
            .collect();
        markers.sort();
        markers
    }

    /// Recover the task of one marker, or remove the marker if its record no longer says running.
    fn recover_marked(
        &self,
        root: &str,
        id: &str,
        is_alive: &impl Fn(u32, Option<u64>) -> bool,
        recovery: &mut Recovery,
    ) {
        let task_dir = self.dir.join(root).join(id);
        let Ok(path) = self.live_marker_path(root, id) else {
            return;
        };
        let lock = match TaskLock::acquire(&task_dir) {
            Ok(Some(lock)) => lock,
            // No task directory: the task was removed, or its creation failed.
            Ok(None) => {
                let _ = remove_marker(&path);
                // A creation of the same id may have made the directory meanwhile; its marker
                // then stays (its own link may have come before this removal).
                if task_dir.exists() {
                    let _ = add_marker(&path);
                }
                return;
            }
            Err(source) => {
                let e = StoreError::Read {
                    path: task_dir.clone(),
                    source,
                };
                recovery
                    .problems
                    .push(StoreProblem::from_error(task_dir, &e));
                return;
            }
        };
        let mut record = match self.load(root, id) {
            Ok(r) => r,
            // A crash between the marker and the record's first write.
            Err(StoreError::NotFound { .. }) => {
                let _ = remove_marker(&path);
                return;
            }
            // Kept: an unreadable record may still say running. Reported each time.
            Err(e) => {
                recovery
                    .problems
                    .push(StoreProblem::from_error(task_dir, &e));
                return;
            }
        };
        sweep_temp_files(&task_dir, is_alive);
        if record.status != TaskStatus::Running {
            // A crash between the record's last write and the marker's removal.
            let _ = remove_marker(&path);
            return;
        }
        if record
            .owner_pid
            .is_some_and(|pid| is_alive(pid, record.owner_start_time))
        {
            return;
        }
        let why = match record.owner_pid {
            Some(pid) => format!("owner process {pid} is gone"),
            None => "no owner process was recorded".to_string(),
        };
        record.status = TaskStatus::Failed;
        record.phase = TaskPhase::Terminal;
        record.termination = None;
        record.error = Some(ORPHANED.to_string());
        record.diagnostics.push(why);
        record.ended_at = Some(timestamp(SystemTime::now()));
        record.owner_pid = None;
        record.owner_start_time = None;
        match self.write_record(&mut record, Some(lock)) {
            Ok(()) => recovery.recovered.push(record),
            Err(e) => recovery
                .problems
                .push(StoreProblem::from_error(task_dir, &e)),
        }
    }
}

/// The (root, id) a marker's file name stands for; `None` for any other name.
fn parse_marker_name(name: &str) -> Option<(String, String)> {
    let (root, id) = name.split_once(SEPARATOR)?;
    (validate_id("root session id", root).is_ok() && validate_id("task id", id).is_ok())
        .then(|| (root.to_string(), id.to_string()))
}

/// Add the marker at `path`: a hard link to the anchor (made, with the directory, when missing),
/// or an empty file where hard links are refused. An existing marker is left as it is.
pub(super) fn add_marker(path: &Path) -> io::Result<()> {
    let Some(dir) = path.parent() else {
        return Err(io::Error::other("a marker path has a directory"));
    };
    let anchor = dir.join(ANCHOR);
    for _ in 0..2 {
        match fs::hard_link(&anchor, path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(()),
            // No anchor (or no directory) yet: make them and link again.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir_all(dir)?;
                OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&anchor)?;
            }
            // No hard links here, or the anchor has as many as it can take.
            Err(_) => break,
        }
    }
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map(drop)
}

/// Remove the marker at `path`; one already gone is fine.
pub(super) fn remove_marker(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Remove `.<file>.<pid>.<unique>.tmp` files (left by [`crate::config::atomic_rewrite`] when its
/// process died) whose writer is no longer alive.
pub(super) fn sweep_temp_files(dir: &Path, is_alive: &impl Fn(u32, Option<u64>) -> bool) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(pid) = temp_file_writer(name)
            && !is_alive(pid, None)
        {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The writer pid of an [`crate::config::atomic_rewrite`] temp file name for one of the store's
/// files.
fn temp_file_writer(name: &str) -> Option<u32> {
    let inner = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let mut parts = inner.rsplitn(3, '.');
    let _unique = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    let file = parts.next()?;
    (file == TASK_FILE || file == OUTPUT_FILE).then_some(pid)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::orchestrator::store::test_support::{ROOT, finished, record, store};
    use cadre_protocol::TaskRecord;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn orphans_are_marked_failed_and_live_tasks_kept() {
        let (_tmp, s) = store();
        let mut dead = record("dead");
        dead.owner_pid = Some(111);
        dead.phase = TaskPhase::Working;
        dead.session_file = Some("/sessions/x.jsonl".into());
        s.create(&mut dead).unwrap();
        let mut ownerless = record("ownerless");
        s.create(&mut ownerless).unwrap();
        let mut live = record("live");
        live.owner_pid = Some(222);
        live.owner_start_time = Some(5);
        s.create(&mut live).unwrap();
        let mut reused = record("reused");
        reused.owner_pid = Some(222);
        reused.owner_start_time = Some(4);
        s.create(&mut reused).unwrap();
        let mut done = record("done");
        done.status = TaskStatus::Completed;
        done.owner_pid = Some(111);
        s.create(&mut done).unwrap();

        let alive = |pid: u32, start: Option<u64>| pid == 222 && start.is_none_or(|t| t == 5);
        let recovery = s.recover_orphans(alive);
        let mut ids: Vec<_> = recovery.recovered.iter().map(|r| r.id.as_str()).collect();
        ids.sort();
        assert_eq!(ids, ["dead", "ownerless", "reused"]);
        assert!(recovery.problems.is_empty());

        let d = s.load(ROOT, "dead").unwrap();
        assert_eq!(d.status, TaskStatus::Failed);
        assert_eq!(d.phase, TaskPhase::Terminal);
        assert_eq!(d.termination, None);
        assert_eq!(d.error.as_deref(), Some(ORPHANED));
        assert!(d.ended_at.is_some());
        assert_eq!(d.owner_pid, None);
        assert_eq!(d.session_file.as_deref(), Some("/sessions/x.jsonl"));
        assert_eq!(s.load(ROOT, "live").unwrap().status, TaskStatus::Running);
        assert_eq!(s.load(ROOT, "done").unwrap().error, None);
        // The recovered lost their markers; the live one keeps its own.
        for gone in ["dead", "ownerless", "reused", "done"] {
            assert!(!s.is_marked_live(ROOT, gone), "{gone}");
        }
        assert!(s.is_marked_live(ROOT, "live"));
        // Idempotent: nothing is left running without an owner.
        assert!(s.recover_orphans(alive).recovered.is_empty());
    }

    #[test]
    fn recovery_sweeps_temp_files_of_dead_writers_only() {
        let (_tmp, s) = store();
        s.create(&mut record("t1")).unwrap();
        let dir = s.task_dir(ROOT, "t1").unwrap();
        let dead_tmp = dir.join(".task.json.111.abc.tmp");
        let live_tmp = dir.join(".output.md.222.def.tmp");
        let foreign = dir.join(".notes.111.x.tmp");
        for p in [&dead_tmp, &live_tmp, &foreign] {
            fs::write(p, b"partial").unwrap();
        }
        s.recover_orphans(|pid, _| pid == 222);
        assert!(!dead_tmp.exists());
        assert!(live_tmp.exists());
        assert!(foreign.exists());
        assert_eq!(s.load(ROOT, "t1").unwrap().error.as_deref(), Some(ORPHANED));
    }

    #[test]
    fn temp_file_names_are_parsed_strictly() {
        assert_eq!(temp_file_writer(".task.json.42.0123abcd.tmp"), Some(42));
        assert_eq!(temp_file_writer(".output.md.7.x.tmp"), Some(7));
        assert_eq!(temp_file_writer("task.json"), None);
        assert_eq!(temp_file_writer(".task.json.notapid.x.tmp"), None);
        assert_eq!(temp_file_writer(".other.1.x.tmp"), None);
        assert_eq!(temp_file_writer(".tmp"), None);
    }

    /// A task directory holding `text` as its record, written the way an older version (or a
    /// hand edit) would: no marker.
    fn write_unmarked(s: &TaskStore, root: &str, id: &str, text: &[u8]) {
        let dir = s.task_dir(root, id).unwrap();
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(TASK_FILE), text).unwrap();
    }

    fn dead_record(id: &str) -> TaskRecord {
        let mut r = record(id);
        r.owner_pid = Some(111);
        r
    }

    const DEAD: fn(u32, Option<u64>) -> bool = |_, _| false;

    #[test]
    fn a_record_is_marked_while_it_says_running() {
        let (_tmp, s) = store();
        let mut r = record("t1");
        s.create(&mut r).unwrap();
        assert!(s.is_marked_live(ROOT, "t1"));
        r.status = TaskStatus::Completed;
        s.save(&mut r).unwrap();
        assert!(!s.is_marked_live(ROOT, "t1"));
        // Saving a finished record again needs no marker to remove.
        s.save(&mut r).unwrap();
        // Reopened (a continuation): marked again.
        r.status = TaskStatus::Running;
        s.save(&mut r).unwrap();
        assert!(s.is_marked_live(ROOT, "t1"));
        // Created finished: never marked.
        s.create(&mut finished("t2", TaskStatus::Failed, None))
            .unwrap();
        assert!(!s.is_marked_live(ROOT, "t2"));
        let marker = s.live_marker_path(ROOT, "t1").unwrap();
        assert_eq!(marker, s.dir().join(LIVE_DIR).join(format!("{ROOT}+t1")));
        // A name for the shared anchor, not an inode of its own.
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let anchor = fs::metadata(s.dir().join(LIVE_DIR).join(ANCHOR)).unwrap();
            assert_eq!(fs::metadata(&marker).unwrap().ino(), anchor.ino());
        }
    }

    #[test]
    fn recovery_opens_only_marked_records() {
        let (_tmp, s) = store();
        s.create(&mut dead_record("dead")).unwrap();
        // The first recovery in this directory scans it once and stamps it.
        assert_eq!(s.recover_orphans(DEAD).recovered.len(), 1);
        assert!(s.markers_complete());
        // A thousand past tasks without markers, every record unparsable: any read would be
        // reported as a problem.
        for i in 0..1000 {
            let root = format!("root-{}", i % 10);
            write_unmarked(&s, &root, &format!("past-{i}"), b"{ not json");
        }
        s.create(&mut dead_record("dead2")).unwrap();
        let recovery = s.recover_orphans(DEAD);
        let ids: Vec<&str> = recovery.recovered.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["dead2"]);
        assert!(recovery.problems.is_empty(), "{:?}", recovery.problems);
        // The same directory without the stamp is scanned again, and then every record is read.
        fs::remove_file(s.dir().join(LIVE_DIR).join(SCANNED_STAMP)).unwrap();
        assert_eq!(s.recover_orphans(DEAD).problems.len(), 1000);
        assert!(s.markers_complete());
    }

    #[test]
    fn the_first_recovery_marks_the_running_records_older_versions_left() {
        let (_tmp, s) = store();
        let mut old = dead_record("old-running");
        old.created_at = "2026-01-01T00:00:00.000Z".into();
        write_unmarked(&s, ROOT, "old-running", &serde_json::to_vec(&old).unwrap());
        let done = finished("old-done", TaskStatus::Completed, None);
        write_unmarked(&s, ROOT, "old-done", &serde_json::to_vec(&done).unwrap());
        let mut alive = record("old-alive");
        alive.owner_pid = Some(222);
        write_unmarked(&s, ROOT, "old-alive", &serde_json::to_vec(&alive).unwrap());
        assert!(!s.markers_complete());

        let recovery = s.recover_orphans(|pid, _| pid == 222);
        let ids: Vec<&str> = recovery.recovered.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["old-running"]);
        assert!(recovery.problems.is_empty(), "{:?}", recovery.problems);
        assert_eq!(
            s.load(ROOT, "old-running").unwrap().error.as_deref(),
            Some(ORPHANED)
        );
        // The live one got a marker, so later recoveries find it without scanning.
        assert!(s.is_marked_live(ROOT, "old-alive"));
        assert!(!s.is_marked_live(ROOT, "old-done"));
        assert!(s.markers_complete());
        let recovery = s.recover_orphans(DEAD);
        let ids: Vec<&str> = recovery.recovered.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["old-alive"]);
    }

    #[test]
    fn a_missing_tasks_directory_is_neither_scanned_nor_stamped() {
        let (_tmp, s) = store();
        let recovery = s.recover_orphans(DEAD);
        assert!(recovery.recovered.is_empty() && recovery.problems.is_empty());
        assert!(!s.dir().exists());
    }

    #[test]
    fn stale_markers_left_by_a_crash_are_removed() {
        let (_tmp, s) = store();
        s.recover_orphans(DEAD);
        fs::create_dir_all(s.dir()).unwrap();
        s.recover_orphans(DEAD);
        assert!(s.markers_complete());
        let mark = |id: &str| {
            let path = s.live_marker_path(ROOT, id).unwrap();
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, b"").unwrap();
        };
        // Killed after the marker, before the task directory.
        mark("no-dir");
        // Killed after the marker and the directory, before the record's first write.
        fs::create_dir_all(s.task_dir(ROOT, "no-record").unwrap()).unwrap();
        mark("no-record");
        // Killed after the record's last write, before the marker's removal.
        s.create(&mut finished("ended", TaskStatus::Completed, None))
            .unwrap();
        mark("ended");
        // Removed by hand with its record.
        let mut gone = record("gone");
        s.create(&mut gone).unwrap();
        fs::remove_dir_all(s.task_dir(ROOT, "gone").unwrap()).unwrap();
        // Files that are not markers are left alone.
        let live = s.dir().join(LIVE_DIR);
        fs::write(live.join("notes.txt"), b"x").unwrap();
        fs::write(live.join("a+.b"), b"x").unwrap();

        let recovery = s.recover_orphans(DEAD);
        assert!(recovery.recovered.is_empty(), "{:?}", recovery.recovered);
        assert!(recovery.problems.is_empty(), "{:?}", recovery.problems);
        for id in ["no-dir", "no-record", "ended", "gone"] {
            assert!(!s.is_marked_live(ROOT, id), "{id}");
        }
        assert!(s.task_dir(ROOT, "no-record").unwrap().is_dir());
        assert!(live.join("notes.txt").exists() && live.join("a+.b").exists());
        assert_eq!(s.load(ROOT, "ended").unwrap().error, None);
    }

    #[test]
    fn a_marked_record_that_cannot_be_read_is_reported_and_kept() {
        let (_tmp, s) = store();
        s.create(&mut record("torn")).unwrap();
        fs::write(s.record_path(ROOT, "torn").unwrap(), b"{").unwrap();
        for _ in 0..2 {
            let recovery = s.recover_orphans(DEAD);
            assert_eq!(recovery.problems.len(), 1, "{:?}", recovery.problems);
            assert!(s.is_marked_live(ROOT, "torn"));
        }
    }

    #[test]
    fn ids_too_long_for_a_marker_name_are_refused_before_anything_is_made() {
        let (_tmp, s) = store();
        let mut r = record(&"i".repeat(128));
        r.root_session_id = "r".repeat(127);
        assert!(matches!(
            s.create(&mut r),
            Err(StoreError::IdsTooLong { .. })
        ));
        assert!(!s.dir().exists());
        r.root_session_id = "r".repeat(126);
        s.create(&mut r).unwrap();
        assert!(s.is_marked_live(&r.root_session_id, &r.id));
    }

    /// A writer that ends and reopens a task over and over, while recovery runs in another
    /// thread: each time a `running` write returns, the marker exists. Without the lock, recovery
    /// could read the record as finished just before the write and remove the marker just after.
    #[test]
    fn recovery_racing_a_reopening_writer_never_unmarks_a_running_record() {
        let (_tmp, s) = store();
        let mut r = record("busy");
        r.owner_pid = Some(std::process::id());
        s.create(&mut r).unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let recoverer = scope.spawn(|| {
                let mut rounds = 0;
                while !stop.load(Ordering::Relaxed) {
                    let recovery = s.recover_orphans(|_, _| true);
                    assert_eq!(recovery.problems, []);
                    rounds += 1;
                }
                rounds
            });
            {
                // Stops the recoverer even when an assertion below fails, so the test ends.
                let _stop = StopOnDrop(&stop);
                for round in 0..300 {
                    r.status = TaskStatus::Completed;
                    s.save(&mut r).unwrap();
                    r.status = TaskStatus::Running;
                    s.save(&mut r).unwrap();
                    assert!(s.is_marked_live(ROOT, "busy"), "round {round}");
                }
            }
            assert!(recoverer.join().unwrap() > 0);
        });
    }

    struct StopOnDrop<'a>(&'a AtomicBool);

    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}
