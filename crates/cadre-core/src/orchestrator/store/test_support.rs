//! Records and stores the store's unit tests share.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::SystemTime;

use cadre_protocol::{TaskPhase, TaskRecord, TaskStatus};

use super::{TaskStore, timestamp};

pub const ROOT: &str = "0190a000-0000-7000-8000-000000000001";

/// A running record of `ROOT` (a default record's status).
pub fn record(id: &str) -> TaskRecord {
    TaskRecord {
        id: id.to_string(),
        root_session_id: ROOT.to_string(),
        agent: "Explore".into(),
        description: "look around".into(),
        ..TaskRecord::default()
    }
}

/// A record that reached `status`, ended at `ended` when given.
pub fn finished(id: &str, status: TaskStatus, ended: Option<SystemTime>) -> TaskRecord {
    let mut r = record(id);
    r.status = status;
    r.phase = TaskPhase::Terminal;
    r.ended_at = ended.map(timestamp);
    r
}

/// A store in a fresh temporary directory (its tasks directory not created yet).
pub fn store() -> (tempfile::TempDir, TaskStore) {
    let tmp = tempfile::tempdir().unwrap();
    let store = TaskStore::new(tmp.path().join("tasks"));
    (tmp, store)
}
