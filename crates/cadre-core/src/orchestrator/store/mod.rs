//! Task directories on disk (SPEC O12, O13, P4, Z1).
//!
//! Layout: `<tasks_dir>/<root-session-id>/<task-id>/task.json` (the authoritative record) and
//! `output.md` (the task's whole final text, written when there is one). Both are only ever
//! replaced atomically (temp file, rename; the record also fsynced), so after a crash at any point
//! every `task.json` parses and every output that was reported is on disk. Each keeps its previous
//! version as a hidden `.spare` file that the next rewrite reuses ([`atomic_rewrite`]), so a task
//! costs the same few inodes however often its record changes. A crash can leave a temp file
//! behind; [`TaskStore::recover_orphans`] sweeps those whose writer is gone.
//!
//! Nothing that runs at start-up or lists tasks reads every record, so neither grows with the
//! number of past tasks (P4):
//! - a marker in `<tasks_dir>/.live/` exists while a record may say `running`, and orphan recovery
//!   looks at those alone ([`live`]);
//! - retention runs at most once a day and skips, by their UUID v7 ids, roots and tasks too young
//!   to have expired ([`retention`]);
//! - listings can read just the newest records: task ids sort in creation order ([`page`]).
//!
//! The files are small and written rarely, so this is plain blocking `std::fs`; async callers that
//! care can wrap calls in `spawn_blocking`.

mod index;
mod live;
mod lock;
mod page;
mod process;
mod retention;
#[cfg(test)]
mod test_support;

pub use index::INDEX_FILE;
pub use live::LIVE_DIR;
pub use page::{Page, TaskRef, TaskRefs};
pub use process::{claim_ownership, pid_is_alive, process_start_time};

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use cadre_protocol::{TaskRecord, TaskStatus};

use crate::config::{Durable, atomic_rewrite};

/// The record file in a task directory.
pub const TASK_FILE: &str = "task.json";
/// The output file in a task directory.
pub const OUTPUT_FILE: &str = "output.md";
/// The directory of a root session where `cadre task stop` leaves requests for the process that
/// owns the tasks: one file per task, named by its id. One directory for all of a root's tasks
/// lets the owner look for requests with one lookup however many tasks run. Hidden, so it is
/// never taken for a task directory (task ids cannot start with a dot).
pub const STOP_REQUESTS_DIR: &str = ".stop-requests";
/// The error of a task whose owning process died while it ran (O13).
pub const ORPHANED: &str = "orphaned";
/// What separates a continuation's output from the earlier output in `output.md` (O2). Blank lines
/// around it keep Markdown from reading the `---` as a heading underline of the line above.
pub const CONTINUATION_SEPARATOR: &str = "\n\n---\n\n";

/// Outputs are flushed as far as the conversation that produced them: session files are
/// appended without fsync, so an output survives what the parent's copy of it survives (process
/// death: `kill -9`, a panic, OOM), and the record, flushed on every write (O12), stays the one
/// file that also survives a power loss. A flush per output cost a disk write per task.
const OUTPUT_DURABILITY: Durable = Durable::AgainstProcessDeath;

/// Room for a pretty-printed task record besides its prompt (a typical one is about 2 KiB).
const RECORD_CAPACITY: usize = 3 * 1024;

/// A new task id: a UUID v7, so ids sort in creation order.
pub fn new_task_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// An RFC 3339 UTC timestamp with milliseconds, the format of the record's timestamps (the same
/// as session entries').
pub fn timestamp(at: SystemTime) -> String {
    crate::session::iso_timestamp(at)
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "invalid {what} {value:?}: use letters, digits, '-', '_' or '.', not starting with '.'"
    )]
    InvalidId { what: &'static str, value: String },
    #[error("task {id} already exists under root session {root}")]
    AlreadyExists { root: String, id: String },
    #[error("no task {id} under root session {root}")]
    NotFound { root: String, id: String },
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: invalid task record: {message}", .path.display())]
    Parse { path: PathBuf, message: String },
    #[error(
        "root session id {root:?} and task id {id:?} are too long together: \
         at most {max} bytes in all",
        max = live::MAX_MARKER_NAME - 1
    )]
    IdsTooLong { root: String, id: String },
}

/// Something a bulk operation skipped instead of failing as a whole (an unreadable record, a
/// directory it could not remove).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreProblem {
    pub path: PathBuf,
    pub message: String,
}

impl std::fmt::Display for StoreProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl StoreProblem {
    fn from_error(path: PathBuf, err: &StoreError) -> StoreProblem {
        StoreProblem {
            path,
            message: err.to_string(),
        }
    }
}

/// The records that could be read, in (root session, task id) order, and what could not.
#[derive(Debug, Default)]
pub struct Listing {
    pub records: Vec<TaskRecord>,
    pub problems: Vec<StoreProblem>,
}

/// The result of [`TaskStore::recover_orphans`]: the records it marked failed.
#[derive(Debug, Default)]
pub struct Recovery {
    pub recovered: Vec<TaskRecord>,
    pub problems: Vec<StoreProblem>,
}

/// The result of [`TaskStore::cleanup`]: the task directories it removed.
#[derive(Debug, Default)]
pub struct Cleanup {
    /// Whether a pass ran ([`TaskStore::cleanup`] skips one within a day of the last).
    pub ran: bool,
    pub removed: Vec<PathBuf>,
    pub problems: Vec<StoreProblem>,
}

/// The task directories under `CADRE_HOME/tasks`.
#[derive(Debug, Clone)]
pub struct TaskStore {
    dir: PathBuf,
}

impl TaskStore {
    /// A store rooted at `tasks_dir` (normally [`crate::config::CadreHome::tasks_dir`]). Nothing is
    /// created until a task is.
    pub fn new(tasks_dir: impl Into<PathBuf>) -> TaskStore {
        TaskStore {
            dir: tasks_dir.into(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `<tasks_dir>/<root>/<id>`, after checking both ids cannot escape the store.
    pub fn task_dir(&self, root: &str, id: &str) -> Result<PathBuf, StoreError> {
        validate_id("root session id", root)?;
        validate_id("task id", id)?;
        Ok(self.dir.join(root).join(id))
    }

    pub fn record_path(&self, root: &str, id: &str) -> Result<PathBuf, StoreError> {
        Ok(self.task_dir(root, id)?.join(TASK_FILE))
    }

    pub fn output_path(&self, root: &str, id: &str) -> Result<PathBuf, StoreError> {
        Ok(self.task_dir(root, id)?.join(OUTPUT_FILE))
    }

    /// Where a stop request for a task of `root` is left (see [`STOP_REQUESTS_DIR`]).
    pub fn stop_request_path(&self, root: &str, id: &str) -> Result<PathBuf, StoreError> {
        Ok(self.stop_requests_dir(root)?.join(id))
    }

    /// The directory of `root`'s stop requests; missing until the first request.
    pub fn stop_requests_dir(&self, root: &str) -> Result<PathBuf, StoreError> {
        validate_id("root session id", root)?;
        Ok(self.dir.join(root).join(STOP_REQUESTS_DIR))
    }

    /// Create a new task directory with its record. Fills `created_at` (when empty), `updated_at`
    /// and `output_file` (when empty; the file itself appears with the first output, and reads as
    /// empty until then). Fails if the task exists.
    pub fn create(&self, record: &mut TaskRecord) -> Result<(), StoreError> {
        let dir = self.task_dir(&record.root_session_id, &record.id)?;
        // Refused before anything is made: the ids must also fit a marker's name.
        self.live_marker_path(&record.root_session_id, &record.id)?;
        // Creating the directory itself is the exclusive claim on the id. Only the first task of
        // a root session finds the root's directory missing and creates it.
        // The user's only (0700), as the files in it (0600): a task's prompt, output and
        // session hold what its agent read.
        let private = || {
            let mut builder = fs::DirBuilder::new();
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder
        };
        let mut made = private().create(&dir);
        let mut new_root = false;
        if matches!(&made, Err(e) if e.kind() == io::ErrorKind::NotFound) {
            let root_dir = self.dir.join(&record.root_session_id);
            private()
                .recursive(true)
                .create(&root_dir)
                .map_err(|source| StoreError::Write {
                    path: root_dir.clone(),
                    source,
                })?;
            made = private().create(&dir);
            new_root = true;
        }
        match made {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(StoreError::AlreadyExists {
                    root: record.root_session_id.clone(),
                    id: record.id.clone(),
                });
            }
            Err(source) => return Err(StoreError::Write { path: dir, source }),
        }
        // The task's line in the index, before its record: a crash leaves at worst a line whose
        // directory has no record, never a record the index does not name ([`index`]).
        let mut line = index::task_line(&record.root_session_id, &record.id);
        if new_root {
            line.push_str(&index::complete_line(&record.root_session_id));
        }
        let indexed = self
            .append_index(&line)
            .and_then(|file| file.sync_data())
            .map_err(|source| StoreError::Write {
                path: self.index_path(),
                source,
            });
        if let Err(e) = indexed {
            let _ = fs::remove_dir(&dir);
            return Err(e);
        }
        let now = timestamp(SystemTime::now());
        if record.created_at.is_empty() {
            record.created_at = now;
        }
        if record.output_file.is_empty() {
            record.output_file = dir.join(OUTPUT_FILE).to_string_lossy().into_owned();
        }
        let written = self.save(record);
        if written.is_err() {
            // Leave no directory without a record behind; the id stays free for a retry.
            let _ = fs::remove_dir_all(&dir);
            self.forget_live(&record.root_session_id, &record.id);
        }
        written
    }

    /// Replace the record atomically, setting `updated_at` to now. A `running` record gets its
    /// live marker first; any other loses it after the write ([`live`]).
    pub fn save(&self, record: &mut TaskRecord) -> Result<(), StoreError> {
        self.write_record(record, None)
    }

    /// [`TaskStore::save`], with the task already locked by the caller when `held`.
    fn write_record(
        &self,
        record: &mut TaskRecord,
        held: Option<lock::TaskLock>,
    ) -> Result<(), StoreError> {
        let dir = self.task_dir(&record.root_session_id, &record.id)?;
        let path = dir.join(TASK_FILE);
        let marker = self.live_marker_path(&record.root_session_id, &record.id)?;
        record.updated_at = timestamp(SystemTime::now());
        // Sized for a typical record up front: growing from serde_json's default capacity took
        // several reallocations of a buffer past glibc's small-chunk sizes, each a trip through
        // its slow path while a fan-out keeps the heap busy (SPEC P1).
        let mut json = Vec::with_capacity(RECORD_CAPACITY + record.prompt.len());
        serde_json::to_writer_pretty(&mut json, record).map_err(|e| StoreError::Parse {
            path: path.clone(),
            message: e.to_string(),
        })?;
        json.push(b'\n');
        // Held across marker and record, so recovery never judges the marker by a record that is
        // about to change (see `live`). A task without a directory yet has nothing to lock, and
        // recovery nothing to judge.
        let _lock = match held {
            Some(lock) => Some(lock),
            None => lock::TaskLock::acquire(&dir).map_err(|source| StoreError::Write {
                path: dir.clone(),
                source,
            })?,
        };
        let running = record.status == TaskStatus::Running;
        if running {
            live::add_marker(&marker).map_err(|source| StoreError::Write {
                path: marker.clone(),
                source,
            })?;
        }
        write_file(&path, &json, Durable::AgainstPowerLoss)?;
        if !running {
            // A marker left by a failed removal only costs recovery one record read.
            let _ = live::remove_marker(&marker);
        }
        Ok(())
    }

    /// Read one record. The record must name the directory it lives in.
    pub fn load(&self, root: &str, id: &str) -> Result<TaskRecord, StoreError> {
        let path = self.record_path(root, id)?;
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound {
                    root: root.to_string(),
                    id: id.to_string(),
                });
            }
            Err(source) => return Err(StoreError::Read { path, source }),
        };
        let record: TaskRecord = serde_json::from_slice(&bytes).map_err(|e| StoreError::Parse {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if record.id != id || record.root_session_id != root {
            return Err(StoreError::Parse {
                path,
                message: format!(
                    "the record names task {:?} under root session {:?}, not its directory",
                    record.id, record.root_session_id
                ),
            });
        }
        Ok(record)
    }

    /// Every readable record of one root session, oldest first. A missing root directory is an
    /// empty listing; unreadable records are reported in `problems`, never fatal.
    pub fn list_root(&self, root: &str) -> Result<Listing, StoreError> {
        validate_id("root session id", root)?;
        let mut listing = Listing::default();
        self.list_root_into(root, &mut listing)?;
        Ok(listing)
    }

    /// Every readable record of every root session, in (root, id) order.
    pub fn list_all(&self) -> Result<Listing, StoreError> {
        let mut listing = Listing::default();
        for root in subdirs(&self.dir)? {
            if validate_id("root session id", &root).is_err() {
                continue;
            }
            if let Err(e) = self.list_root_into(&root, &mut listing) {
                listing
                    .problems
                    .push(StoreProblem::from_error(self.dir.join(&root), &e));
            }
        }
        Ok(listing)
    }

    fn list_root_into(&self, root: &str, listing: &mut Listing) -> Result<(), StoreError> {
        for id in subdirs(&self.dir.join(root))? {
            if validate_id("task id", &id).is_err() {
                continue;
            }
            match self.load(root, &id) {
                Ok(record) => listing.records.push(record),
                Err(e) => listing
                    .problems
                    .push(StoreProblem::from_error(self.dir.join(root).join(&id), &e)),
            }
        }
        Ok(())
    }

    /// The task's output so far; empty when nothing was written yet.
    pub fn read_output(&self, root: &str, id: &str) -> Result<String, StoreError> {
        let path = self.output_path(root, id)?;
        match fs::read(&path) {
            Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(String::new()),
            Err(source) => Err(StoreError::Read { path, source }),
        }
    }

    /// Replace the task's output atomically.
    pub fn write_output(&self, root: &str, id: &str, text: &str) -> Result<(), StoreError> {
        let path = self.output_path(root, id)?;
        write_file(&path, text.as_bytes(), OUTPUT_DURABILITY)
    }

    /// Add a continuation's output after a `---` line (O2), by atomically replacing the file with
    /// old + separator + new, so a crash never leaves half an append. Appending to an empty output
    /// writes just `text`.
    pub fn append_output(&self, root: &str, id: &str, text: &str) -> Result<(), StoreError> {
        let path = self.output_path(root, id)?;
        let old = self.read_output(root, id)?;
        write_file(
            &path,
            join_continuation(&old, text).as_bytes(),
            OUTPUT_DURABILITY,
        )
    }
}

fn join_continuation(old: &str, text: &str) -> String {
    let old = old.trim_end_matches(['\n', '\r']);
    if old.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(old.len() + CONTINUATION_SEPARATOR.len() + text.len());
    out.push_str(old);
    out.push_str(CONTINUATION_SEPARATOR);
    out.push_str(text);
    out
}

fn validate_id(what: &'static str, value: &str) -> Result<(), StoreError> {
    let ok = !value.is_empty()
        && value.len() <= 128
        && !value.starts_with('.')
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(StoreError::InvalidId {
            what,
            value: value.to_string(),
        })
    }
}

fn write_file(path: &Path, bytes: &[u8], durable: Durable) -> Result<(), StoreError> {
    atomic_rewrite(path, bytes, durable).map_err(|source| StoreError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Names of the visible subdirectories of `dir`, sorted; a missing `dir` has none.
fn subdirs(dir: &Path) -> Result<Vec<String>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(StoreError::Read {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::test_support::{ROOT, record, store};
    use super::*;
    use cadre_protocol::TerminationKind;
    use std::time::Duration;

    #[test]
    fn task_ids_are_v7_and_sort_in_creation_order() {
        let ids: Vec<String> = (0..50).map(|_| new_task_id()).collect();
        for id in &ids {
            let u = uuid::Uuid::parse_str(id).unwrap();
            assert_eq!(u.get_version_num(), 7);
        }
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ids);
    }

    #[test]
    fn ids_that_could_escape_the_store_are_refused() {
        let (_tmp, s) = store();
        for bad in ["", ".", "..", "../x", "a/b", "a\\b", ".hidden", "a b", "é"] {
            assert!(
                matches!(s.task_dir(ROOT, bad), Err(StoreError::InvalidId { .. })),
                "{bad:?}"
            );
            assert!(
                matches!(s.task_dir(bad, "t"), Err(StoreError::InvalidId { .. })),
                "{bad:?}"
            );
        }
        assert!(s.task_dir(ROOT, &"x".repeat(129)).is_err());
        assert!(s.task_dir(ROOT, "a.b-c_D9").is_ok());
    }

    #[test]
    fn create_save_load_round_trip() {
        let (_tmp, s) = store();
        let id = new_task_id();
        let mut r = record(&id);
        s.create(&mut r).unwrap();
        assert!(!r.created_at.is_empty());
        assert!(!r.updated_at.is_empty());
        assert_eq!(
            PathBuf::from(&r.output_file),
            s.output_path(ROOT, &id).unwrap()
        );
        // No output yet: no file, and reading it gives the empty text.
        assert!(!Path::new(&r.output_file).exists());
        assert_eq!(s.read_output(ROOT, &id).unwrap(), "");
        assert_eq!(s.load(ROOT, &id).unwrap(), r);

        r.status = TaskStatus::Completed;
        r.termination = Some(TerminationKind::Normal);
        let before = r.updated_at.clone();
        std::thread::sleep(Duration::from_millis(2));
        s.save(&mut r).unwrap();
        assert_ne!(r.updated_at, before);
        assert_eq!(s.load(ROOT, &id).unwrap(), r);
        // The file on disk is whole JSON with a trailing newline; no temp files remain, only the
        // previous version kept for the next rewrite.
        let dir = s.task_dir(ROOT, &id).unwrap();
        let text = fs::read_to_string(dir.join(TASK_FILE)).unwrap();
        assert!(text.ends_with("}\n"));
        let mut names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, [".task.json.spare", "task.json"]);
    }

    #[test]
    fn rewriting_a_record_reuses_its_inodes() {
        use std::os::unix::fs::MetadataExt;
        let (_tmp, s) = store();
        let mut r = record("t1");
        s.create(&mut r).unwrap();
        s.save(&mut r).unwrap();
        let dir = s.task_dir(ROOT, "t1").unwrap();
        let inodes = |dir: &Path| {
            let mut v: Vec<u64> = fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().metadata().unwrap().ino())
                .collect();
            v.sort();
            v
        };
        let before = inodes(&dir);
        for i in 0..5 {
            r.description = format!("round {i}: {}", "x".repeat(i * 100));
            s.save(&mut r).unwrap();
            assert_eq!(s.load(ROOT, "t1").unwrap(), r);
            assert_eq!(inodes(&dir), before, "round {i}");
        }
        // A shorter text after a longer one keeps no stale tail.
        r.description = "short".into();
        s.save(&mut r).unwrap();
        assert_eq!(s.load(ROOT, "t1").unwrap().description, "short");
    }

    #[test]
    fn create_keeps_a_given_created_at_and_output_file() {
        let (_tmp, s) = store();
        let mut r = record("t1");
        r.created_at = "2026-01-01T00:00:00.000Z".into();
        r.output_file = "/elsewhere/output.md".into();
        s.create(&mut r).unwrap();
        let back = s.load(ROOT, "t1").unwrap();
        assert_eq!(back.created_at, "2026-01-01T00:00:00.000Z");
        assert_eq!(back.output_file, "/elsewhere/output.md");
    }

    #[test]
    fn create_refuses_an_existing_task() {
        let (_tmp, s) = store();
        s.create(&mut record("t1")).unwrap();
        assert!(matches!(
            s.create(&mut record("t1")),
            Err(StoreError::AlreadyExists { .. })
        ));
    }

    #[test]
    fn load_reports_missing_and_malformed_records() {
        let (_tmp, s) = store();
        assert!(matches!(
            s.load(ROOT, "nope"),
            Err(StoreError::NotFound { .. })
        ));
        let path = s.record_path(ROOT, "bad").unwrap();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, b"{\"id\": ").unwrap();
        let err = s.load(ROOT, "bad").unwrap_err();
        assert!(matches!(err, StoreError::Parse { .. }));
        assert!(err.to_string().contains("task.json"), "{err}");
        // A record copied into the wrong directory is not silently accepted.
        fs::write(&path, serde_json::to_vec(&record("other")).unwrap()).unwrap();
        assert!(matches!(s.load(ROOT, "bad"), Err(StoreError::Parse { .. })));
    }

    #[test]
    fn listings_skip_and_report_unparsable_records() {
        let (_tmp, s) = store();
        let other_root = "root-b";
        let ids: Vec<String> = (0..3).map(|_| new_task_id()).collect();
        for id in ids.iter().rev() {
            s.create(&mut record(id)).unwrap();
        }
        let mut b = record("b1");
        b.root_session_id = other_root.into();
        s.create(&mut b).unwrap();
        // A torn or hand-edited record, a directory without a record, and stray files.
        let broken = s.task_dir(ROOT, "broken").unwrap();
        fs::create_dir_all(&broken).unwrap();
        fs::write(broken.join(TASK_FILE), b"not json").unwrap();
        fs::create_dir_all(s.task_dir(ROOT, "empty").unwrap()).unwrap();
        fs::write(s.dir().join(ROOT).join("stray.txt"), b"x").unwrap();
        fs::create_dir_all(s.dir().join(".hidden")).unwrap();

        let listing = s.list_root(ROOT).unwrap();
        let got: Vec<_> = listing.records.iter().map(|r| r.id.clone()).collect();
        assert_eq!(got, ids);
        assert_eq!(listing.problems.len(), 2, "{:?}", listing.problems);

        let all = s.list_all().unwrap();
        assert_eq!(all.records.len(), 4);
        assert_eq!(all.problems.len(), 2);
        assert!(s.list_root("missing-root").unwrap().records.is_empty());
        assert!(
            TaskStore::new("/nonexistent/cadre/tasks")
                .list_all()
                .unwrap()
                .records
                .is_empty()
        );
    }

    #[test]
    fn output_is_written_and_continuations_are_appended() {
        let (_tmp, s) = store();
        s.create(&mut record("t1")).unwrap();
        assert_eq!(s.read_output(ROOT, "t1").unwrap(), "");
        s.append_output(ROOT, "t1", "first answer").unwrap();
        assert_eq!(s.read_output(ROOT, "t1").unwrap(), "first answer");
        s.append_output(ROOT, "t1", "second answer").unwrap();
        assert_eq!(
            s.read_output(ROOT, "t1").unwrap(),
            "first answer\n\n---\n\nsecond answer"
        );
        s.write_output(ROOT, "t1", "replaced\n").unwrap();
        s.append_output(ROOT, "t1", "more").unwrap();
        assert_eq!(
            s.read_output(ROOT, "t1").unwrap(),
            "replaced\n\n---\n\nmore"
        );
        // Output of a task whose directory does not exist yet is created on write.
        s.write_output(ROOT, "fresh", "x").unwrap();
        assert_eq!(s.read_output(ROOT, "fresh").unwrap(), "x");
        assert_eq!(s.read_output(ROOT, "never").unwrap(), "");
    }

    #[test]
    fn records_outputs_and_their_directories_are_the_users_only() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        let (_tmp, s) = store();
        let mut r = record("t1");
        s.create(&mut r).unwrap();
        s.save(&mut r).unwrap();
        s.write_output(ROOT, "t1", "the agent read .env: SECRET=1")
            .unwrap();
        s.append_output(ROOT, "t1", "more").unwrap();
        let dir = s.task_dir(ROOT, "t1").unwrap();
        for file in [
            TASK_FILE,
            ".task.json.spare",
            OUTPUT_FILE,
            ".output.md.spare",
        ] {
            assert_eq!(mode(&dir.join(file)), 0o600, "{file}");
        }
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&s.dir().join(ROOT)), 0o700);
        // An output written before its task's directory exists.
        s.write_output(ROOT, "fresh", "x").unwrap();
        let fresh = s.output_path(ROOT, "fresh").unwrap();
        assert_eq!(mode(&fresh), 0o600);
        assert_eq!(mode(fresh.parent().unwrap()), 0o700);
    }

    #[test]
    fn join_continuation_cases() {
        assert_eq!(join_continuation("", "b"), "b");
        assert_eq!(join_continuation("\n\n", "b"), "b");
        assert_eq!(join_continuation("a", ""), "a\n\n---\n\n");
        assert_eq!(join_continuation("a\r\n", "b"), "a\n\n---\n\nb");
    }
}
