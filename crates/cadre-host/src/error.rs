//! What a refused or failed host operation tells a front end: its kind, to map to the front
//! end's wire once (an RPC error's `code`, a JSON-RPC error code), and its words for the person
//! or client that asked.

use cadre_core::orchestrator::manager::{LaunchError, RefusalCode};

/// A refused or failed operation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HostError {
    /// Something already running excludes it now (a run without a queueing choice, a second
    /// bash command).
    #[error("{0}")]
    Busy(String),
    /// The session has ended or is ending.
    #[error("{0}")]
    Ended(String),
    /// What was asked cannot be served as asked: an unknown model, images where they cannot be
    /// queued, an operation an unsaved session has nothing for.
    #[error("{0}")]
    InvalidInput(String),
    /// A task operation the orchestrator refused, with the refusal's stable code (an unknown
    /// task, one that is not running, plan mode, …).
    #[error("{message}")]
    Refused { code: RefusalCode, message: String },
    /// The operation was tried and failed: a file that cannot be read or written, a compaction
    /// whose model request failed.
    #[error("{0}")]
    Failed(String),
}

impl HostError {
    /// An anyhow error as one line of its causes, each said once.
    pub(crate) fn from_any(e: anyhow::Error) -> HostError {
        let mut parts: Vec<String> = Vec::new();
        for cause in e.chain() {
            let s = cause.to_string();
            if !parts.iter().any(|p| p.contains(&s)) {
                parts.push(s);
            }
        }
        HostError::Failed(parts.join(": "))
    }

    /// The error's stable code on every wire: a refusal's own code (`unknown_task`,
    /// `not_running`, …), else `busy`, `ended`, `invalid_input` or `failed`.
    pub fn code(&self) -> &'static str {
        match self {
            HostError::Busy(_) => "busy",
            HostError::Ended(_) => "ended",
            HostError::InvalidInput(_) => "invalid_input",
            HostError::Refused { code, .. } => code.as_str(),
            HostError::Failed(_) => "failed",
        }
    }

    /// What the operation named does not exist (an unknown task).
    pub fn is_not_found(&self) -> bool {
        matches!(self, HostError::Refused { code, .. } if code.is_not_found())
    }

    /// The words for the person or client.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

impl From<LaunchError> for HostError {
    /// A task operation's error: a refusal keeps its code; a task record or session that
    /// cannot be read or written is a failure.
    fn from(e: LaunchError) -> HostError {
        let code = e.code();
        if code.is_internal() {
            HostError::Failed(e.to_string())
        } else {
            HostError::Refused {
                code,
                message: e.to_string(),
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_core::orchestrator::manager::RefusalCode;

    #[test]
    fn a_refusal_keeps_its_code_and_words_and_a_broken_record_is_a_failure() {
        let e = HostError::from(LaunchError::refused(
            RefusalCode::NotRunning,
            "task t is not running",
        ));
        assert_eq!(e.code(), "not_running");
        assert_eq!(e.to_string(), "task t is not running");
        assert!(!e.is_not_found());
        let e = HostError::from(LaunchError::refused(
            RefusalCode::UnknownTask,
            "no task matches `x`.",
        ));
        assert!(e.is_not_found());
        let e = HostError::from(LaunchError::refused(
            RefusalCode::TaskRecord,
            "task record: disk",
        ));
        assert_eq!(e, HostError::Failed("task record: disk".into()));
        assert_eq!(e.code(), "failed");
        assert_eq!(HostError::Busy("b".into()).code(), "busy");
        assert_eq!(HostError::Ended("e".into()).code(), "ended");
        assert_eq!(HostError::InvalidInput("i".into()).code(), "invalid_input");
    }

    #[test]
    fn an_anyhow_chain_is_one_line_of_distinct_causes() {
        let e = anyhow::anyhow!("disk full")
            .context("cannot write x")
            .context("cannot write x");
        assert_eq!(
            HostError::from_any(e).to_string(),
            "cannot write x: disk full"
        );
    }
}
