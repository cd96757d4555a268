//! Task operations every front end offers: show, output, stop (their errors typed, a refusal
//! with its code) and applying a kept worktree's changes (O11).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use cadre_core::orchestrator::manager::TaskSnapshot;
use cadre_core::orchestrator::worktree::{self, Worktree};
use cadre_protocol::{TaskRecord, TaskStatus};

use crate::{Host, HostError};

impl Host {
    /// The task `target` names (an id, a unique id prefix or a name, O5).
    pub fn task(&self, target: &str) -> Result<TaskSnapshot, HostError> {
        let manager = self.manager();
        let id = manager.resolve(target)?;
        Ok(manager.snapshot(&id)?)
    }

    /// `TaskOutput`: the task's snapshot, once it has ended when `block` (waiting at most
    /// `wait`).
    pub fn task_output(
        &self,
        target: &str,
        block: bool,
        wait: std::time::Duration,
    ) -> impl Future<Output = Result<TaskSnapshot, HostError>> + Send + 'static + use<> {
        let manager = self.manager();
        let target = target.to_string();
        async move { Ok(manager.task_output(&target, block, wait).await?) }
    }

    /// `TaskStop`: stop a live task; its snapshot once it has ended.
    pub fn stop_task(
        &self,
        target: &str,
    ) -> impl Future<Output = Result<TaskSnapshot, HostError>> + Send + 'static + use<> {
        let manager = self.manager();
        let target = target.to_string();
        async move { Ok(manager.stop(&target).await?) }
    }

    /// Apply the kept worktree of task `target` (O11): its id and the report.
    pub fn apply_task(
        &self,
        target: &str,
    ) -> impl Future<Output = Result<(String, String), HostError>> + Send + 'static + use<> {
        let manager = self.manager();
        let target = target.to_string();
        async move {
            let id = manager.resolve(&target)?;
            let record = manager
                .store()
                .load(manager.root_session_id(), &id)
                .map_err(|e| HostError::Failed(e.to_string()))?;
            let report = apply_task(&record)
                .await
                .map_err(|e| HostError::Failed(format!("{e:#}")))?;
            Ok((id, report))
        }
    }
}

/// Apply a kept worktree's changes to the main working tree (O11).
pub async fn apply_task(r: &TaskRecord) -> Result<String> {
    let Some(info) = &r.worktree else {
        bail!(
            "task {} did not run in a worktree, so any changes it made are already in the working tree; only a task launched with `isolation: worktree` has changes to apply",
            r.id
        );
    };
    if r.status == TaskStatus::Running {
        bail!(
            "task {} is still running; apply its changes after it ends",
            r.id
        );
    }
    if !info.kept {
        bail!(
            "task {}'s worktree was not kept (it changed nothing); there is nothing to apply",
            r.id
        );
    }
    let wt = Worktree::open(info)
        .await
        .with_context(|| format!("cannot open the worktree of task {}", r.id))?;
    let repo = wt.repo_root().to_path_buf();
    let stat = worktree::apply(&repo, info)
        .await
        .with_context(|| format!("cannot apply the changes of task {}", r.id))?;
    let path = PathBuf::from(&info.path);
    if stat.trim().is_empty() {
        return Ok(format!(
            "task {}'s worktree has no changes; nothing was applied\n",
            r.id
        ));
    }
    let mut out = format!(
        "applied the changes of task {} (branch {}) to {}:\n",
        r.id,
        info.branch,
        repo.display()
    );
    for line in stat.lines() {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(
        out,
        "The worktree is kept at {} (branch {}); once you are done with it: git worktree remove --force {} && git branch -D {}",
        path.display(),
        info.branch,
        path.display(),
        info.branch
    );
    Ok(out)
}
