//! The append-only writer of one session file.
//!
//! One tokio task owns the file. Callers hand it entries over an unbounded channel and never
//! wait for the disk; the handle assigns entry ids and keeps the `parentId` chain itself, so
//! appending returns the new id at once. The task writes whatever has queued up in one go
//! (a burst of tool results becomes one write), which keeps a session cheap even with many
//! concurrent agents.
//!
//! Appends go straight to the file with `std::fs` from the writer task: a small write into the
//! page cache takes microseconds, far less than handing it to tokio's blocking pool (two thread
//! wake-ups per write).
//!
//! Closing does not fsync. A session file is an append-only log and every entry is in the page
//! cache once written, so a crash or `kill -9` of cadre loses nothing (Z1 is about process
//! death); only a power loss or kernel crash can drop the unsynced tail (the loader skips a torn
//! last line). An fsync per session cost a disk flush and two blocking-pool hops for every
//! child of a fan-out (SPEC P1). Task records and outputs, which are rewritten, keep
//! temp+fsync+rename (O12).

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cadre_protocol::{Message, SESSION_VERSION, SessionEntry, SessionEntryKind, SessionHeader};
use tokio::sync::{mpsc, oneshot};

use super::error::SessionError;
use super::load::LoadedSession;
use super::paths::{iso_timestamp, session_file_name};

enum Command {
    Entry(Box<SessionEntry>),
    /// Reply once everything sent before has reached the file.
    Flush(oneshot::Sender<Result<(), String>>),
    /// Like `Flush`, then stop.
    Close(oneshot::Sender<Result<(), String>>),
}

/// Handle to a session file being appended to. Dropping it lets the writer task finish the
/// queued entries and stop; [`SessionWriter::close`] also waits for that.
#[derive(Debug)]
pub struct SessionWriter {
    path: PathBuf,
    header: SessionHeader,
    tx: mpsc::UnboundedSender<Command>,
    leaf: Option<String>,
    ids: HashSet<String>,
    /// The context of a resumed file, for the agent that continues it (see
    /// [`SessionWriter::take_resumed`]).
    resumed: Option<ResumedContext>,
}

/// What an agent continuing a file needs to know of the context it was loaded with: which
/// entry each message came from (a compaction cuts at an entry) and the compaction it starts
/// from (whose file lists the next one carries on).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ResumedContext {
    pub entry_ids: Vec<String>,
    pub compaction_details: Option<serde_json::Value>,
}

impl SessionWriter {
    /// Start a new session file in `dir` (created if missing) for a conversation in `cwd`.
    /// `parent_session` is recorded in the header for child and forked sessions.
    pub async fn create(
        dir: &Path,
        cwd: &Path,
        parent_session: Option<&Path>,
    ) -> Result<SessionWriter, SessionError> {
        let (session_id, timestamp, path) = fresh_session(dir);
        Self::create_file(path, session_id, timestamp, cwd, parent_session).await
    }

    /// Start a new session in the file `path` (which must not exist yet), e.g. `--session FILE`.
    pub async fn create_at(
        path: &Path,
        cwd: &Path,
        parent_session: Option<&Path>,
    ) -> Result<SessionWriter, SessionError> {
        let session_id = uuid::Uuid::now_v7().to_string();
        let timestamp = iso_timestamp(SystemTime::now());
        Self::create_file(
            path.to_path_buf(),
            session_id,
            timestamp,
            cwd,
            parent_session,
        )
        .await
    }

    /// A new session in `dir` whose file is written only once something is said in it (its
    /// first message, custom message or compaction): until then the header and settings
    /// entries wait in memory, and closing the writer leaves no file — as Pi writes no file
    /// for a session nothing happened in, so opening and leaving never makes an empty session
    /// the newest one. A file that cannot be created then fails at the next `flush`.
    pub fn create_when_used(
        dir: &Path,
        cwd: &Path,
        parent_session: Option<&Path>,
    ) -> Result<SessionWriter, SessionError> {
        let (session_id, timestamp, path) = fresh_session(dir);
        let header = new_header(session_id, timestamp, cwd, parent_session);
        let first = header_line(&path, &header)?;
        Ok(Self::start(
            path.clone(),
            header,
            Target::WhenUsed(path),
            first,
            None,
            HashSet::new(),
        ))
    }

    async fn create_file(
        path: PathBuf,
        session_id: String,
        timestamp: String,
        cwd: &Path,
        parent_session: Option<&Path>,
    ) -> Result<SessionWriter, SessionError> {
        let header = new_header(session_id, timestamp, cwd, parent_session);
        let file = create_new_file(&path).map_err(|source| SessionError::Create {
            path: path.clone(),
            source,
        })?;
        let first = header_line(&path, &header)?;
        Ok(Self::start(
            path,
            header,
            Target::Open(file),
            first,
            None,
            HashSet::new(),
        ))
    }

    /// Continue appending to an existing file, chaining new entries to its leaf. A file that
    /// ends in a torn line gets a newline first so the next entry starts on its own line.
    pub async fn resume(
        path: &Path,
        loaded: &LoadedSession,
    ) -> Result<SessionWriter, SessionError> {
        if loaded.header.version < 2 {
            return Err(SessionError::Unsupported {
                path: path.to_path_buf(),
                reason: format!(
                    "version {} files have no entry ids; open it with Pi once to migrate it",
                    loaded.header.version
                ),
            });
        }
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|source| SessionError::Create {
                path: path.to_path_buf(),
                source,
            })?;
        let first = if loaded.ends_with_newline {
            Vec::new()
        } else {
            vec![b'\n']
        };
        let ids = loaded.entry_ids().map(str::to_string).collect();
        let mut writer = Self::start(
            path.to_path_buf(),
            loaded.header.clone(),
            Target::Open(file),
            first,
            loaded.leaf_id().map(str::to_string),
            ids,
        );
        let context = loaded.context();
        writer.resumed = Some(ResumedContext {
            entry_ids: context.entry_ids,
            compaction_details: context.compaction.and_then(|c| c.details),
        });
        Ok(writer)
    }

    /// The context this file was resumed with (once; `None` for a new file).
    pub(crate) fn take_resumed(&mut self) -> Option<ResumedContext> {
        self.resumed.take()
    }

    /// Whether an entry with this id is in the file (loaded or appended).
    pub fn has_entry(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    fn start(
        path: PathBuf,
        header: SessionHeader,
        target: Target,
        first: Vec<u8>,
        leaf: Option<String>,
        ids: HashSet<String>,
    ) -> SessionWriter {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(target, first, rx));
        SessionWriter {
            path,
            header,
            tx,
            leaf,
            ids,
            resumed: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn session_id(&self) -> &str {
        &self.header.id
    }

    /// The header line of the file (Pi prints it first in `--mode json`).
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// Id of the last entry appended (or loaded), the parent of the next one.
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// Append a message entry; returns its id. A runtime message (role `custom`) is a
    /// `custom_message` entry dated by the message, as Pi stores it (loading gives back the
    /// same message).
    pub fn append_message(&mut self, message: &Message) -> String {
        match message {
            Message::Custom(c) => self.append_at(
                SessionEntryKind::CustomMessage {
                    custom_type: c.custom_type.clone(),
                    content: c.content.clone(),
                    display: c.display,
                    details: c.details.clone(),
                },
                UNIX_EPOCH + Duration::from_millis(c.timestamp),
            ),
            _ => self.append(SessionEntryKind::Message {
                message: message.clone(),
            }),
        }
    }

    /// Append any entry; returns its id. Never blocks; write failures surface at `flush`.
    pub fn append(&mut self, kind: SessionEntryKind) -> String {
        self.append_at(kind, SystemTime::now())
    }

    /// [`SessionWriter::append`] dated `at` (e.g. a compaction, whose summary message in memory
    /// carries the same time as the entry it is rebuilt from on load).
    pub fn append_at(&mut self, kind: SessionEntryKind, at: SystemTime) -> String {
        let id = self.fresh_id();
        let entry = SessionEntry {
            id: id.clone(),
            parent_id: self.leaf.replace(id.clone()),
            timestamp: iso_timestamp(at),
            kind,
        };
        // A closed channel means the writer task stopped on an error; `flush` reports it.
        let _ = self.tx.send(Command::Entry(Box::new(entry)));
        id
    }

    /// Append a copy of `entry` from another session with its id and time (a fork or clone
    /// keeps the ids, so references between entries — a compaction's `firstKeptEntryId` —
    /// stay valid, as Pi's copies do), chained to the current leaf. Returns its id.
    pub fn copy_entry(&mut self, entry: &SessionEntry) -> String {
        let id = if self.ids.insert(entry.id.clone()) {
            entry.id.clone()
        } else {
            self.fresh_id()
        };
        let copy = SessionEntry {
            id: id.clone(),
            parent_id: self.leaf.replace(id.clone()),
            timestamp: entry.timestamp.clone(),
            kind: entry.kind.clone(),
        };
        let _ = self.tx.send(Command::Entry(Box::new(copy)));
        id
    }

    /// Pi's ids: 8 hex characters, unique within the file. They only need to be unique within
    /// the file (checked here), not unguessable, so a user-space generator does instead of a
    /// `getrandom` call per entry.
    fn fresh_id(&mut self) -> String {
        loop {
            let id = format!("{:08x}", fastrand::u32(..));
            if self.ids.insert(id.clone()) {
                return id;
            }
        }
    }

    /// Wait until every entry appended so far has been written to the file.
    pub async fn flush(&self) -> Result<(), SessionError> {
        let (reply, wait) = oneshot::channel();
        self.request(Command::Flush(reply), wait).await
    }

    /// Write everything to the file and stop the writer task (no fsync: see the module docs).
    pub async fn close(self) -> Result<(), SessionError> {
        let (reply, wait) = oneshot::channel();
        self.request(Command::Close(reply), wait).await
    }

    async fn request(
        &self,
        command: Command,
        wait: oneshot::Receiver<Result<(), String>>,
    ) -> Result<(), SessionError> {
        let stopped = || SessionError::Write {
            path: self.path.clone(),
            message: "the session writer stopped".into(),
        };
        self.tx.send(command).map_err(|_| stopped())?;
        match wait.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(message)) => Err(SessionError::Write {
                path: self.path.clone(),
                message,
            }),
            Err(_) => Err(stopped()),
        }
    }
}

/// A new session's id, its creation time and its file in `dir`, named as Pi names them.
fn fresh_session(dir: &Path) -> (String, String, PathBuf) {
    let session_id = uuid::Uuid::now_v7().to_string();
    let timestamp = iso_timestamp(SystemTime::now());
    let path = dir.join(session_file_name(&timestamp, &session_id));
    (session_id, timestamp, path)
}

fn new_header(
    session_id: String,
    timestamp: String,
    cwd: &Path,
    parent_session: Option<&Path>,
) -> SessionHeader {
    SessionHeader {
        kind: "session".into(),
        version: SESSION_VERSION,
        id: session_id,
        timestamp,
        cwd: cwd.to_string_lossy().into_owned(),
        parent_session: parent_session.map(|p| p.to_string_lossy().into_owned()),
    }
}

fn header_line(path: &Path, header: &SessionHeader) -> Result<Vec<u8>, SessionError> {
    let mut first = serde_json::to_vec(header).map_err(|e| SessionError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    first.push(b'\n');
    Ok(first)
}

/// A new file at `path` (never an existing one), its directory created when missing. Both are
/// the user's only (0600, 0700): a session holds whatever the agent read, a `.env` included.
fn create_new_file(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let open = || {
        OpenOptions::new()
            .create_new(true)
            .append(true)
            .mode(0o600)
            .open(path)
    };
    match open() {
        // Only the first session in a new directory pays for creating it.
        Err(e) if e.kind() == io::ErrorKind::NotFound && !dir.as_os_str().is_empty() => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)?;
            open()
        }
        opened => opened,
    }
}

/// Where the writer task writes.
enum Target {
    Open(File),
    /// Not created yet: it will be at this path when the first entry of a conversation comes.
    WhenUsed(PathBuf),
}

/// Whether an entry makes a session worth a file (rather than only recording its settings).
fn is_conversation(kind: &SessionEntryKind) -> bool {
    !matches!(
        kind,
        SessionEntryKind::ModelChange { .. }
            | SessionEntryKind::ThinkingLevelChange { .. }
            | SessionEntryKind::SessionInfo { .. }
    )
}

/// The writer task: batch whatever is queued, write it, answer flushes. After the first write
/// error nothing more is written (the file would get a hole) and every flush reports it. A
/// file created when used holds back what is queued until a conversation entry arrives.
async fn write_loop(target: Target, first: Vec<u8>, mut rx: mpsc::UnboundedReceiver<Command>) {
    let mut target = target;
    let mut buf = first;
    let mut used = false;
    let mut failed: Option<String> = None;
    let mut waiters: Vec<oneshot::Sender<Result<(), String>>> = Vec::new();
    let mut closing = None;
    loop {
        let holding = matches!(target, Target::WhenUsed(_)) && !used;
        if (buf.is_empty() || holding) && waiters.is_empty() {
            match rx.recv().await {
                Some(cmd) => take(
                    cmd,
                    &mut buf,
                    &mut waiters,
                    &mut closing,
                    &mut failed,
                    &mut used,
                ),
                None => break,
            }
        }
        while closing.is_none() {
            match rx.try_recv() {
                Ok(cmd) => take(
                    cmd,
                    &mut buf,
                    &mut waiters,
                    &mut closing,
                    &mut failed,
                    &mut used,
                ),
                Err(_) => break,
            }
        }
        if let Target::WhenUsed(path) = &target
            && used
            && failed.is_none()
        {
            match create_new_file(path) {
                Ok(file) => target = Target::Open(file),
                Err(e) => failed = Some(format!("cannot create {}: {e}", path.display())),
            }
        }
        if let Target::Open(file) = &target {
            if !buf.is_empty()
                && failed.is_none()
                && let Err(e) = (&*file).write_all(&buf)
            {
                failed = Some(e.to_string());
            }
            buf.clear();
        }
        // After a failure nothing is written: what is queued is dropped, so a file that could
        // not be created neither grows memory nor keeps this loop from waiting.
        if failed.is_some() {
            buf.clear();
        }
        if let Some(reply) = closing.take() {
            for w in waiters.drain(..) {
                let _ = w.send(status(&failed));
            }
            let _ = reply.send(status(&failed));
            return;
        }
        for w in waiters.drain(..) {
            let _ = w.send(status(&failed));
        }
    }
}

fn status(failed: &Option<String>) -> Result<(), String> {
    match failed {
        Some(e) => Err(e.clone()),
        None => Ok(()),
    }
}

fn take(
    cmd: Command,
    buf: &mut Vec<u8>,
    waiters: &mut Vec<oneshot::Sender<Result<(), String>>>,
    closing: &mut Option<oneshot::Sender<Result<(), String>>>,
    failed: &mut Option<String>,
    used: &mut bool,
) {
    match cmd {
        Command::Entry(entry) => {
            *used |= is_conversation(&entry.kind);
            let start = buf.len();
            if let Err(e) = serde_json::to_writer(&mut *buf, &entry) {
                buf.truncate(start);
                failed.get_or_insert_with(|| format!("cannot encode entry {}: {e}", entry.id));
                return;
            }
            buf.push(b'\n');
        }
        Command::Flush(reply) => waiters.push(reply),
        Command::Close(reply) => *closing = Some(reply),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_file_created_when_used_appears_with_the_first_message_only() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        // Settings alone leave no file, also after a flush.
        let mut w = SessionWriter::create_when_used(&sessions, dir.path(), None).unwrap();
        w.append(SessionEntryKind::ModelChange {
            provider: "p".into(),
            model_id: "m".into(),
        });
        w.flush().await.unwrap();
        let path = w.path().to_path_buf();
        assert!(!path.exists());
        w.close().await.unwrap();
        assert!(!path.exists() && !sessions.exists());

        // The first message writes the header, the held settings and itself, in order.
        let mut w = SessionWriter::create_when_used(&sessions, dir.path(), None).unwrap();
        w.append(SessionEntryKind::ThinkingLevelChange {
            thinking_level: "high".into(),
        });
        w.append_message(&Message::user("hello"));
        w.flush().await.unwrap();
        let text = std::fs::read_to_string(w.path()).unwrap();
        let kinds: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].to_string())
            .collect();
        assert_eq!(
            kinds,
            ["\"session\"", "\"thinking_level_change\"", "\"message\""]
        );
        w.append_message(&Message::user("again"));
        w.close().await.unwrap();
        let loaded = super::super::load_session(&path_of(&sessions)).unwrap();
        assert_eq!(loaded.messages().len(), 2);
    }

    #[tokio::test]
    async fn session_files_and_their_new_directories_are_the_users_only() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions/--project--");
        let mut w = SessionWriter::create(&sessions, dir.path(), None)
            .await
            .unwrap();
        w.append_message(&Message::user("the agent read .env: SECRET=1"));
        w.close().await.unwrap();
        assert_eq!(mode(&path_of(&sessions)), 0o600);
        assert_eq!(mode(&sessions), 0o700);
        assert_eq!(mode(&dir.path().join("sessions")), 0o700);
        // Created when used: the same.
        let later = dir.path().join("later");
        let mut w = SessionWriter::create_when_used(&later, dir.path(), None).unwrap();
        w.append_message(&Message::user("hello"));
        w.close().await.unwrap();
        assert_eq!(mode(&path_of(&later)), 0o600);
    }

    fn path_of(dir: &Path) -> PathBuf {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files.pop().unwrap()
    }

    #[tokio::test]
    async fn create_and_resume_report_unusable_paths() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-dir");
        std::fs::write(&file, "x").unwrap();
        let err = SessionWriter::create(&file, dir.path(), None)
            .await
            .unwrap_err();
        assert!(matches!(err, SessionError::Create { .. }), "{err}");

        let mut w = SessionWriter::create(dir.path(), dir.path(), None)
            .await
            .unwrap();
        w.append_message(&Message::user("x"));
        let path = w.path().to_path_buf();
        w.close().await.unwrap();
        let loaded = crate::session::load_session(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let err = SessionWriter::resume(&path, &loaded).await.unwrap_err();
        assert!(matches!(err, SessionError::Create { .. }), "{err}");
    }

    #[tokio::test]
    async fn many_appends_keep_order_and_chain() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SessionWriter::create(dir.path(), dir.path(), None)
            .await
            .unwrap();
        let ids: Vec<String> = (0..500)
            .map(|i| w.append_message(&Message::user(format!("m{i}"))))
            .collect();
        w.flush().await.unwrap();
        let loaded = crate::session::load_session(w.path()).unwrap();
        assert_eq!(loaded.entries.len(), 500);
        for (i, e) in loaded.entries.iter().enumerate() {
            assert_eq!(e.id, ids[i]);
            assert_eq!(e.parent_id.as_ref(), i.checked_sub(1).map(|p| &ids[p]));
        }
        assert_eq!(loaded.messages().len(), 500);
        // Dropping the handle lets the task finish on its own.
        drop(w);
    }
}
