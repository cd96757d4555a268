//! What a front end sees of a session's tasks: their snapshots, records and events, the roles
//! they can be launched with, the session's budget, and the stop a person may ask for. Front ends
//! hold this view, never the core's task manager, so launching, continuing and the manager's
//! own state stay the host's and the model's business.

use std::path::PathBuf;

use cadre_core::orchestrator::manager::{TaskEvent, TaskManager, TaskSnapshot};
use cadre_core::roles::Roster;
use cadre_protocol::{BudgetState, TaskRecord};
use tokio::sync::broadcast;

use crate::HostError;

/// A session's tasks as front ends see them. Cheap to clone.
#[derive(Clone)]
pub struct SessionTasks {
    manager: TaskManager,
}

impl SessionTasks {
    pub(crate) fn new(manager: TaskManager) -> SessionTasks {
        SessionTasks { manager }
    }

    /// Every task of the session, this process's and those on disk, oldest first.
    pub fn list(&self) -> Vec<TaskSnapshot> {
        self.manager.tasks()
    }

    /// Whether a task still owes its parent a report (a notice not yet delivered).
    pub fn reports_owed(&self) -> bool {
        self.manager.has_pending()
    }

    /// The tasks running now, by id.
    pub fn live(&self) -> Vec<String> {
        self.manager.live_tasks()
    }

    /// The task `target` names (an id, a unique id prefix or a name, O5).
    pub fn snapshot(&self, target: &str) -> Result<TaskSnapshot, HostError> {
        let id = self.manager.resolve(target)?;
        Ok(self.manager.snapshot(&id)?)
    }

    /// The id `target` names.
    pub fn resolve(&self, target: &str) -> Result<String, HostError> {
        Ok(self.manager.resolve(target)?)
    }

    /// The record of the task `target` names and where its output is.
    pub fn record(&self, target: &str) -> Result<(TaskRecord, PathBuf), HostError> {
        let id = self.manager.resolve(target)?;
        let store = self.manager.store();
        let root = self.manager.root_session_id();
        let record = store
            .load(root, &id)
            .map_err(|e| HostError::Failed(format!("cannot read task {id}: {e}")))?;
        let output = store
            .output_path(root, &id)
            .unwrap_or_else(|_| PathBuf::from("output.md"));
        Ok((record, output))
    }

    /// Every record of the session on disk, oldest first (unreadable ones left out).
    pub fn records(&self) -> Vec<TaskRecord> {
        self.manager
            .store()
            .list_root(self.manager.root_session_id())
            .map(|listing| listing.records)
            .unwrap_or_default()
    }

    /// Where the task records are kept.
    pub fn store_dir(&self) -> PathBuf {
        self.manager.store().dir().to_path_buf()
    }

    /// Task events as they happen (a slow listener misses some rather than slowing tasks).
    pub fn events(&self) -> broadcast::Receiver<TaskEvent> {
        self.manager.subscribe()
    }

    /// Stop a live task; its snapshot once it has ended.
    pub async fn stop(&self, target: &str) -> Result<TaskSnapshot, HostError> {
        Ok(self.manager.stop(target).await?)
    }

    /// The roles tasks can be launched with, and those blocked.
    pub fn roster(&self) -> &Roster {
        self.manager.roster()
    }

    /// The session's token and cost budget (`None`: no cap).
    pub fn budget(&self) -> Option<BudgetState> {
        self.manager.budget()
    }

    /// Whether the root parent reads its tasks' results by polling (an MCP client).
    pub fn root_polls(&self) -> bool {
        self.manager.root_polls()
    }
}
