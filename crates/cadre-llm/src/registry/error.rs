//! Registry errors. None of them carries a credential.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: invalid models.json: {message}", .path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}: {message}", .path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("unknown model `{name}`; known models: {}", known_list(.known))]
    UnknownModel { name: String, known: Vec<String> },
    #[error("model name `{name}` is ambiguous; use one of: {}", .candidates.join(", "))]
    AmbiguousModel {
        name: String,
        candidates: Vec<String>,
    },
    #[error("model `{name}` cannot be used: {reason}")]
    Unsupported { name: String, reason: String },
    #[error("{}", missing_credentials(.provider, .env_var.as_deref()))]
    MissingCredentials {
        provider: String,
        /// The variable to set, when one is known.
        env_var: Option<String>,
    },
    #[error("cannot resolve {what} for provider `{provider}`: {message}")]
    CredentialCommand {
        provider: String,
        /// `apiKey` or `header <name>`.
        what: String,
        message: String,
    },
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "(none)".to_string()
    } else {
        known.join(", ")
    }
}

fn missing_credentials(provider: &str, env_var: Option<&str>) -> String {
    match env_var {
        Some(var) => {
            format!("no API key for provider `{provider}`: set the {var} environment variable")
        }
        None => format!("no API key for provider `{provider}`: set `apiKey` for it in models.json"),
    }
}

/// Build a `Parse` error from serde_json's, keeping its location apart from its message.
pub(crate) fn parse_error(path: PathBuf, e: &serde_json::Error) -> RegistryError {
    let text = e.to_string();
    // serde_json appends " at line L column C"; the location is reported separately.
    let message = match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    };
    RegistryError::Parse {
        path,
        line: e.line(),
        column: e.column(),
        message,
    }
}

/// serde would accept `[]` for the top-level struct (its one field has a default); Pi's file is an
/// object, so anything else is reported where it starts.
pub(crate) fn expect_object(path: &std::path::Path, text: &str) -> Result<(), RegistryError> {
    let Some(offset) = text.find(|c: char| !c.is_whitespace()) else {
        return Ok(()); // empty input: serde reports the EOF itself
    };
    if text[offset..].starts_with('{') {
        return Ok(());
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Err(RegistryError::Parse {
        path: path.to_path_buf(),
        line,
        column,
        message: "expected a JSON object at the top level".to_string(),
    })
}
