//! Session store errors.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot read session file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a session file: {reason}")]
    NotASession { path: PathBuf, reason: String },
    #[error("cannot create session file {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write session file {path}: {message}")]
    Write { path: PathBuf, message: String },
    #[error("session file {path} cannot be continued: {reason}")]
    Unsupported { path: PathBuf, reason: String },
}
