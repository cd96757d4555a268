//! Host configuration: where cadre keeps its files ([`paths`]), `settings.json` ([`settings`],
//! with Pi's as a fallback: [`pi_settings`]),
//! which projects are trusted ([`trust`]), and crash-safe file replacement ([`fsutil`]).

pub mod fsutil;
pub mod paths;
pub mod pi_settings;
pub mod settings;
pub mod trust;

use std::path::PathBuf;

pub use fsutil::{Durable, atomic_rewrite, atomic_write};
pub use paths::{CadreHome, project_config_dir, project_root};
pub use settings::{LoadedSettings, Settings, load_settings, load_settings_with};
pub use trust::TrustStore;

/// A configuration file that cannot be used. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: invalid JSON: {message}", .path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}: {message}", .path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("cannot find the home directory: set CADRE_HOME or HOME")]
    NoHome,
}

impl ConfigError {
    /// A `Parse` error from serde_json's, with the location kept apart from the message.
    pub(crate) fn parse(path: PathBuf, e: &serde_json::Error) -> ConfigError {
        let text = e.to_string();
        let message = match text.rfind(" at line ") {
            Some(i) => text[..i].to_string(),
            None => text,
        };
        ConfigError::Parse {
            path,
            line: e.line(),
            column: e.column(),
            message,
        }
    }
}

/// Read `path`, or `None` when it does not exist.
pub(crate) fn read_optional(path: &std::path::Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}
