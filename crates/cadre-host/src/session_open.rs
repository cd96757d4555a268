//! Opening the session file a root session writes to: new, continued, forked or cloned.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use cadre_core::session::{
    LoadedSession, RestoredSettings, SessionWriter, latest_session, load_session,
};
use cadre_protocol::{Message, SessionEntryKind};

use crate::options::SessionChoice;

/// A session opened for writing, with what it already holds.
pub struct OpenedSession {
    pub writer: Option<SessionWriter>,
    /// The conversation to continue from.
    pub history: Vec<Message>,
    /// The model and thinking level the file last recorded.
    pub restored: RestoredSettings,
    /// The name its last `session_info` entry gave it.
    pub name: Option<String>,
    /// What the person should be told (unreadable lines skipped).
    pub warnings: Vec<String>,
}

impl OpenedSession {
    fn fresh(writer: Option<SessionWriter>) -> OpenedSession {
        OpenedSession {
            writer,
            history: Vec::new(),
            restored: RestoredSettings::default(),
            name: None,
            warnings: Vec::new(),
        }
    }
}

/// Open the session `choice` names for a conversation in `cwd`.
pub async fn open_session(
    choice: &SessionChoice,
    dir: &Path,
    cwd: &Path,
    when_used: bool,
) -> Result<OpenedSession> {
    let existing: Option<PathBuf> = match choice {
        SessionChoice::None => return Ok(OpenedSession::fresh(None)),
        SessionChoice::New => None,
        SessionChoice::Continue => latest_session(dir),
        // `HostContext::resolve_session` turns these into paths first.
        SessionChoice::Named(arg) => bail!("the session {arg:?} was not resolved to a file"),
        SessionChoice::Path(path) => {
            // An empty file (e.g. made with mktemp by whoever runs us) starts a new session
            // there, as in Pi; a file with content that is not a session is refused below.
            let empty = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0);
            if path.exists() && !empty {
                Some(path.clone())
            } else {
                if empty {
                    std::fs::remove_file(path).with_context(|| {
                        format!("cannot replace the empty session file {}", path.display())
                    })?;
                }
                let writer = SessionWriter::create_at(path, cwd, None).await?;
                return Ok(OpenedSession::fresh(Some(writer)));
            }
        }
    };
    match existing {
        Some(path) => continue_session(&path).await,
        None => new_session(dir, cwd, None, when_used).await,
    }
}

/// A new session in `dir`, naming `parent` as its parent session when given; with
/// `when_used`, its file is written at its first message
/// ([`SessionWriter::create_when_used`]).
pub async fn new_session(
    dir: &Path,
    cwd: &Path,
    parent: Option<&Path>,
    when_used: bool,
) -> Result<OpenedSession> {
    let writer = if when_used {
        SessionWriter::create_when_used(dir, cwd, parent)?
    } else {
        SessionWriter::create(dir, cwd, parent).await?
    };
    Ok(OpenedSession::fresh(Some(writer)))
}

/// The model and thinking level last selected in the session `choice` would continue, if it
/// continues one: read before anything is created, so a run that cannot start (no model)
/// leaves no new session file behind.
pub fn peek_selection(choice: &SessionChoice, dir: &Path) -> RestoredSettings {
    let path = match choice {
        SessionChoice::Continue => latest_session(dir),
        SessionChoice::Path(path) if std::fs::metadata(path).is_ok_and(|m| m.len() > 0) => {
            Some(path.clone())
        }
        _ => None,
    };
    match path
        .filter(|p| check_session_file(p).is_ok())
        .map(|p| load_session(&p))
    {
        Some(Ok(loaded)) => loaded.restored_settings(),
        _ => RestoredSettings::default(),
    }
}

/// The largest session file opened: a session is read whole into memory.
pub const MAX_SESSION_BYTES: u64 = 256 * 1024 * 1024;

/// A session file must be a regular file of sane size: a FIFO would block the session, a
/// device (`/dev/zero`) would be read without end.
pub fn check_session_file(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path)
        .with_context(|| format!("cannot open the session file {}", path.display()))?;
    if !meta.is_file() {
        bail!(
            "{} is not a regular file, so it is not a session file",
            path.display()
        );
    }
    if meta.len() > MAX_SESSION_BYTES {
        bail!(
            "{} is {} MiB, more than the {} MiB a session file may have",
            path.display(),
            meta.len() / (1024 * 1024),
            MAX_SESSION_BYTES / (1024 * 1024)
        );
    }
    Ok(())
}

/// Continue the session in `path`.
pub async fn continue_session(path: &Path) -> Result<OpenedSession> {
    check_session_file(path)?;
    let loaded = load_session(path)?;
    let warnings = loaded
        .dropped_lines
        .iter()
        .map(|(line, reason)| {
            format!(
                "warning: {}:{line}: skipped an unreadable line ({reason})",
                path.display()
            )
        })
        .collect();
    let writer = SessionWriter::resume(path, &loaded).await?;
    Ok(OpenedSession {
        writer: Some(writer),
        history: loaded.messages(),
        restored: loaded.restored_settings(),
        name: session_name(&loaded),
        warnings,
    })
}

/// A user message of the active branch that a fork can start from (Pi's `get_fork_messages`).
#[derive(Debug, Clone, PartialEq)]
pub struct ForkPoint {
    pub entry_id: String,
    pub text: String,
}

/// The user messages of the session in `path`, oldest first.
pub fn fork_points(path: &Path) -> Result<Vec<ForkPoint>> {
    check_session_file(path)?;
    let loaded = load_session(path)?;
    Ok(loaded
        .branch()
        .iter()
        .filter_map(|e| match &e.kind {
            SessionEntryKind::Message {
                message: Message::User(u),
            } => Some(ForkPoint {
                entry_id: e.id.clone(),
                text: u.content.to_text(),
            }),
            _ => None,
        })
        .collect())
}

/// A new session in the directory of `from` that copies the active branch of `from`, up to
/// (not including) the entry `before` when given (a fork), whole otherwise (a clone). The new
/// file names `from` as its parent session. Returns the session opened for writing and, for
/// a fork, the text of the user message it was forked before.
pub async fn branch_session(
    from: &Path,
    before: Option<&str>,
    cwd: &Path,
) -> Result<(OpenedSession, Option<String>)> {
    check_session_file(from)?;
    let loaded = load_session(from)?;
    let branch = loaded.branch();
    let (kept, forked_text) = match before {
        None => (branch.as_slice(), None),
        Some(id) => {
            let Some(at) = branch.iter().position(|e| e.id == id) else {
                bail!("no entry {id} on the active branch of {}", from.display());
            };
            let SessionEntryKind::Message {
                message: Message::User(u),
            } = &branch[at].kind
            else {
                bail!("entry {id} is not a user message; a fork starts from a user message");
            };
            (&branch[..at], Some(u.content.to_text()))
        }
    };
    let dir = from.parent().unwrap_or(Path::new("."));
    let mut writer = SessionWriter::create(dir, cwd, Some(from)).await?;
    for entry in kept {
        writer.copy_entry(entry);
    }
    writer.flush().await?;
    let copied = copied_session(writer.path(), &loaded)?;
    Ok((
        OpenedSession {
            history: copied.messages(),
            restored: copied.restored_settings(),
            name: session_name(&copied),
            writer: Some(writer),
            warnings: Vec::new(),
        },
        forked_text,
    ))
}

/// The copy just written, read back: its messages are rebuilt exactly as a later load would.
fn copied_session(path: &Path, original: &LoadedSession) -> Result<LoadedSession> {
    load_session(path).with_context(|| {
        format!(
            "cannot read back the copy of {} at {}",
            original.path.display(),
            path.display()
        )
    })
}

/// The name the last `session_info` entry of the active branch gave the session.
fn session_name(loaded: &LoadedSession) -> Option<String> {
    loaded.branch().iter().rev().find_map(|e| match &e.kind {
        SessionEntryKind::SessionInfo { name } => Some(name.clone()),
        _ => None,
    })?
}
