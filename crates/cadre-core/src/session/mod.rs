//! Session files in Pi's JSONL format v3.
//!
//! A session file is a header line followed by tree entries linked by `id`/`parentId`. The
//! [`SessionWriter`] appends to one file through a single writer task (callers never block on
//! disk); [`load_session`] reads a file back, dropping and reporting lines a crash cut off, and
//! rebuilds the conversation by walking from the leaf to the root.

mod error;
mod load;
mod paths;
mod resolve;
mod restore;
mod writer;

pub use error::SessionError;
pub use load::{ContextCompaction, LoadedSession, SessionContext, SkippedEntry, load_session};
pub use paths::{iso_timestamp, latest_session, session_dir_for_cwd, session_file_name};
pub use resolve::{
    SESSION_DIR_VAR, SessionArg, SessionArgError, SessionCandidate, SessionDirSources,
    find_session_by_id, recent_sessions, resolve_session_arg, session_dir,
};
pub use restore::RestoredSettings;
pub use writer::SessionWriter;
