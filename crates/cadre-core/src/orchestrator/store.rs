//! Task directories on disk (SPEC O12, O13, Z1).
//!
//! Layout: `<tasks_dir>/<root-session-id>/<task-id>/task.json` (the authoritative record) and
//! `output.md` (the task's whole final text, written when there is one). Both are only ever
//! replaced atomically (temp file, rename; the record also fsynced), so after a crash at any point
//! every `task.json` parses and every output that was reported is on disk. Each keeps its previous version as a
//! hidden `.spare` file that the next rewrite reuses ([`atomic_rewrite`]), so a task costs the
//! same few inodes however often its record changes. A crash can leave a temp file behind;
//! [`TaskStore::recover_orphans`] sweeps those whose writer is gone.
//!
//! The files are small and written rarely, so this is plain blocking `std::fs`; async callers that
//! care can wrap calls in `spawn_blocking`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use cadre_protocol::{TaskPhase, TaskRecord, TaskStatus};

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
        // Creating the directory itself is the exclusive claim on the id. Only the first task of
        // a root session finds the root's directory missing and creates it.
        let mut made = fs::create_dir(&dir);
        if matches!(&made, Err(e) if e.kind() == io::ErrorKind::NotFound) {
            let root_dir = self.dir.join(&record.root_session_id);
            fs::create_dir_all(&root_dir).map_err(|source| StoreError::Write {
                path: root_dir.clone(),
                source,
            })?;
            made = fs::create_dir(&dir);
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
        }
        written
    }

    /// Replace the record atomically, setting `updated_at` to now.
    pub fn save(&self, record: &mut TaskRecord) -> Result<(), StoreError> {
        let path = self.record_path(&record.root_session_id, &record.id)?;
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
        write_file(&path, &json, Durable::AgainstPowerLoss)
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

    /// Start-up recovery (O13): every record still `running` whose owner process is missing or
    /// gone becomes `failed` with error [`ORPHANED`], phase terminal, `ended_at` now. Its
    /// termination stays unset (no termination rule fired; the process vanished) and its session
    /// file is left alone, so `SendMessage` can resume it. `is_alive(pid, start_time)` decides
    /// whether an owner lives ([`pid_is_alive`] in production). Temp files left by a writer that
    /// died mid-write are removed on the way.
    pub fn recover_orphans(&self, is_alive: impl Fn(u32, Option<u64>) -> bool) -> Recovery {
        let mut recovery = Recovery::default();
        let listing = match self.list_all() {
            Ok(l) => l,
            Err(e) => {
                recovery
                    .problems
                    .push(StoreProblem::from_error(self.dir.clone(), &e));
                return recovery;
            }
        };
        recovery.problems.extend(listing.problems);
        for mut record in listing.records {
            if let Ok(dir) = self.task_dir(&record.root_session_id, &record.id) {
                sweep_temp_files(&dir, &is_alive);
            }
            if record.status != TaskStatus::Running {
                continue;
            }
            let owner_alive = record
                .owner_pid
                .is_some_and(|pid| is_alive(pid, record.owner_start_time));
            if owner_alive {
                continue;
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
            match self.save(&mut record) {
                Ok(()) => recovery.recovered.push(record),
                Err(e) => recovery.problems.push(StoreProblem::from_error(
                    self.dir.join(&record.root_session_id).join(&record.id),
                    &e,
                )),
            }
        }
        recovery
    }

    /// Retention (O13): remove the directories of finished tasks that ended more than
    /// `period_days` before `now`. Running tasks, records that cannot be read and records without a
    /// readable `ended_at` are kept. A session file is never removed, even if it lives inside a task
    /// directory. Root directories left empty are removed too.
    pub fn cleanup(&self, period_days: u64, now: SystemTime) -> Cleanup {
        let mut cleanup = Cleanup::default();
        let period = Duration::from_secs(period_days.saturating_mul(86_400));
        let listing = match self.list_all() {
            Ok(l) => l,
            Err(e) => {
                cleanup
                    .problems
                    .push(StoreProblem::from_error(self.dir.clone(), &e));
                return cleanup;
            }
        };
        cleanup.problems.extend(listing.problems);
        let mut roots = Vec::new();
        for record in listing.records {
            if !is_expired(&record, period, now) {
                continue;
            }
            let Ok(dir) = self.task_dir(&record.root_session_id, &record.id) else {
                continue;
            };
            match remove_task_dir(&dir, record.session_file.as_deref()) {
                Ok(()) => cleanup.removed.push(dir),
                Err(source) => cleanup.problems.push(StoreProblem {
                    path: dir,
                    message: format!("cannot remove: {source}"),
                }),
            }
            if !roots.contains(&record.root_session_id) {
                roots.push(record.root_session_id);
            }
        }
        for root in roots {
            // Both fail (and are meant to) while a stop request is pending or the root still
            // holds other tasks.
            let _ = fs::remove_dir(self.dir.join(&root).join(STOP_REQUESTS_DIR));
            let _ = fs::remove_dir(self.dir.join(root));
        }
        cleanup
    }
}

/// Mark `record` as owned by the current process (pid and, where known, its start time).
pub fn claim_ownership(record: &mut TaskRecord) {
    // Read once per process: every task records the same owner, and reading `/proc` per task
    // costs an open, a read and a parse.
    static OWNER: std::sync::OnceLock<(u32, Option<u64>)> = std::sync::OnceLock::new();
    let (pid, start_time) = *OWNER.get_or_init(|| {
        let pid = std::process::id();
        (pid, process_start_time(pid))
    });
    record.owner_pid = Some(pid);
    record.owner_start_time = start_time;
}

/// Whether process `pid` is alive and, when `start_time` is given, is the same process that was
/// recorded (a pid reused by a later process has a different start time). Zombies count as dead.
#[cfg(target_os = "linux")]
pub fn pid_is_alive(pid: u32, start_time: Option<u64>) -> bool {
    if pid == 0 {
        return false;
    }
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some(fields) = parse_stat(&stat) else {
        // The process exists but its stat is unreadable as expected: assume it lives rather than
        // fail a task that may still be running.
        return true;
    };
    if matches!(fields.state, 'Z' | 'X' | 'x') {
        return false;
    }
    match start_time {
        Some(expected) => fields.start_time == expected,
        None => true,
    }
}

/// Whether process `pid` is alive (`kill -0`); start times are not available here.
#[cfg(not(target_os = "linux"))]
pub fn pid_is_alive(pid: u32, _start_time: Option<u64>) -> bool {
    if pid == 0 {
        return false;
    }
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A process's start time in clock ticks since boot (`/proc/<pid>/stat` field 22).
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat).map(|f| f.start_time)
}

struct StatFields {
    state: char,
    start_time: u64,
}

/// Parse the state (field 3) and start time (field 22) of a `/proc/<pid>/stat` line. The command
/// name (field 2) is in parentheses and may itself contain spaces and parentheses, so fields are
/// counted from the last `)`.
fn parse_stat(stat: &str) -> Option<StatFields> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 3 was consumed; field 22 is 18 further on.
    let start_time = fields.nth(18)?.parse().ok()?;
    Some(StatFields { state, start_time })
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

fn is_expired(record: &TaskRecord, period: Duration, now: SystemTime) -> bool {
    if record.status == TaskStatus::Running {
        return false;
    }
    let Some(ended) = record
        .ended_at
        .as_deref()
        .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
    else {
        return false;
    };
    now.duration_since(ended).is_ok_and(|age| age > period)
}

/// Remove a task directory's contents and then the directory, sparing `session_file` if it lives
/// there (the directory then stays).
fn remove_task_dir(dir: &Path, session_file: Option<&str>) -> io::Result<()> {
    let keep = session_file.map(|s| fs::canonicalize(s).unwrap_or_else(|_| PathBuf::from(s)));
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if let Some(keep) = &keep {
            let this = fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if &this == keep || keep.starts_with(&this) {
                continue;
            }
        }
        if entry.file_type()?.is_dir() {
            fs::remove_dir_all(&path)?;
        } else {
            fs::remove_file(&path)?;
        }
    }
    match fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        // Only a spared session file keeps it non-empty.
        Err(_) if keep.is_some() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Remove `.<file>.<pid>.<unique>.tmp` files (left by [`atomic_rewrite`] when its process died) whose
/// writer is no longer alive.
fn sweep_temp_files(dir: &Path, is_alive: &impl Fn(u32, Option<u64>) -> bool) {
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

/// The writer pid of an [`atomic_rewrite`] temp file name for one of the store's files.
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
    use cadre_protocol::TerminationKind;

    const ROOT: &str = "0190a000-0000-7000-8000-000000000001";

    fn record(id: &str) -> TaskRecord {
        TaskRecord {
            id: id.to_string(),
            root_session_id: ROOT.to_string(),
            agent: "Explore".into(),
            description: "look around".into(),
            ..TaskRecord::default()
        }
    }

    fn store() -> (tempfile::TempDir, TaskStore) {
        let tmp = tempfile::tempdir().unwrap();
        let store = TaskStore::new(tmp.path().join("tasks"));
        (tmp, store)
    }

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
    fn join_continuation_cases() {
        assert_eq!(join_continuation("", "b"), "b");
        assert_eq!(join_continuation("\n\n", "b"), "b");
        assert_eq!(join_continuation("a", ""), "a\n\n---\n\n");
        assert_eq!(join_continuation("a\r\n", "b"), "a\n\n---\n\nb");
    }

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

    #[test]
    fn stat_lines_are_parsed_past_tricky_command_names() {
        let tail = "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 20 21";
        let line = format!("42 (we ird) (name)) {tail}");
        let f = parse_stat(&line).unwrap();
        assert_eq!(f.state, 'S');
        assert_eq!(f.start_time, 987654);
        assert!(parse_stat("42 no parens").is_none());
        assert!(parse_stat("42 (x) S 1 2").is_none());
        assert!(parse_stat("42 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 nan").is_none());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_current_process_is_alive_and_a_reaped_child_is_not() {
        let me = std::process::id();
        let start = process_start_time(me);
        assert!(start.is_some());
        assert!(pid_is_alive(me, None));
        assert!(pid_is_alive(me, start));
        assert!(!pid_is_alive(me, start.map(|t| t + 1)));
        assert!(!pid_is_alive(0, None));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        // Reaped; the pid is free (reuse within this test is vanishingly unlikely and would need
        // the same start time to count).
        assert!(!pid_is_alive(pid, None) || process_start_time(pid) != start);

        let mut r = record("mine");
        claim_ownership(&mut r);
        assert_eq!(r.owner_pid, Some(me));
        assert_eq!(r.owner_start_time, start);
    }

    fn finished(id: &str, status: TaskStatus, ended: Option<SystemTime>) -> TaskRecord {
        let mut r = record(id);
        r.status = status;
        r.phase = TaskPhase::Terminal;
        r.ended_at = ended.map(timestamp);
        r
    }

    #[test]
    fn cleanup_removes_an_emptied_root_with_its_stop_request_directory() {
        let (_tmp, s) = store();
        let now = SystemTime::now();
        let old = now - Duration::from_secs(86_400 * 10);
        s.create(&mut finished("old", TaskStatus::Completed, Some(old)))
            .unwrap();
        let requests = s.stop_requests_dir(ROOT).unwrap();
        fs::create_dir_all(&requests).unwrap();
        // A pending request keeps the root.
        fs::write(requests.join("other"), b"{}").unwrap();
        assert_eq!(s.cleanup(7, now).removed.len(), 1);
        assert!(requests.join("other").exists());
        // Without one, the emptied root goes with its request directory.
        fs::remove_file(requests.join("other")).unwrap();
        s.create(&mut finished("old2", TaskStatus::Completed, Some(old)))
            .unwrap();
        assert_eq!(s.cleanup(7, now).removed.len(), 1);
        assert!(!s.dir().join(ROOT).exists());
    }

    #[test]
    fn cleanup_removes_only_old_finished_tasks() {
        let (tmp, s) = store();
        let now = SystemTime::now();
        let day = Duration::from_secs(86_400);
        let old = now - day * 10;
        s.create(&mut finished("old", TaskStatus::Completed, Some(old)))
            .unwrap();
        s.create(&mut finished("old-failed", TaskStatus::Failed, Some(old)))
            .unwrap();
        s.create(&mut finished(
            "recent",
            TaskStatus::Completed,
            Some(now - day),
        ))
        .unwrap();
        s.create(&mut finished("no-end", TaskStatus::Completed, None))
            .unwrap();
        let mut running = finished("running", TaskStatus::Running, Some(old));
        s.create(&mut running).unwrap();
        // A session file inside an old task directory survives; one outside is untouched.
        let sessions = tmp.path().join("sessions");
        fs::create_dir_all(&sessions).unwrap();
        let outside = sessions.join("a.jsonl");
        fs::write(&outside, b"{}\n").unwrap();
        let mut with_outside = finished("with-outside", TaskStatus::Stopped, Some(old));
        with_outside.session_file = Some(outside.to_string_lossy().into_owned());
        s.create(&mut with_outside).unwrap();
        let mut with_inside = finished("with-inside", TaskStatus::Completed, Some(old));
        s.create(&mut with_inside).unwrap();
        let inside = s
            .task_dir(ROOT, "with-inside")
            .unwrap()
            .join("session.jsonl");
        fs::write(&inside, b"{}\n").unwrap();
        with_inside.session_file = Some(inside.to_string_lossy().into_owned());
        s.save(&mut with_inside).unwrap();
        // An unparsable old record is kept.
        let broken = s.task_dir(ROOT, "broken").unwrap();
        fs::create_dir_all(&broken).unwrap();
        fs::write(broken.join(TASK_FILE), b"{").unwrap();

        let c = s.cleanup(7, now);
        let mut removed: Vec<_> = c
            .removed
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        removed.sort();
        assert_eq!(
            removed,
            ["old", "old-failed", "with-inside", "with-outside"]
        );
        assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
        for gone in ["old", "old-failed", "with-outside"] {
            assert!(!s.task_dir(ROOT, gone).unwrap().exists(), "{gone}");
        }
        for kept in ["recent", "no-end", "running"] {
            assert!(s.load(ROOT, kept).is_ok(), "{kept}");
        }
        assert!(outside.exists());
        assert!(inside.exists());
        assert!(
            !s.task_dir(ROOT, "with-inside")
                .unwrap()
                .join(TASK_FILE)
                .exists()
        );
        assert!(broken.join(TASK_FILE).exists());
    }

    #[test]
    fn cleanup_removes_emptied_root_directories() {
        let (_tmp, s) = store();
        let old = SystemTime::now() - Duration::from_secs(86_400 * 3);
        s.create(&mut finished("t1", TaskStatus::Completed, Some(old)))
            .unwrap();
        let c = s.cleanup(1, SystemTime::now());
        assert_eq!(c.removed.len(), 1);
        assert!(!s.dir().join(ROOT).exists());
        assert!(s.dir().exists());
        // A zero period removes every finished task; nothing is left to remove twice.
        assert!(s.cleanup(0, SystemTime::now()).removed.is_empty());
    }
}
