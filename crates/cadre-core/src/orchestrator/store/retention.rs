//! Retention (SPEC O13, P4): `cleanupPeriodDays` removes finished task directories older than the
//! period, without reading every record at each start.
//!
//! - A pass runs at most once a day: `<tasks_dir>/.retention` records the period of the last pass,
//!   and its modification time when it ran. A different period runs a pass at once.
//! - A pass reads only records that can have expired. Task and root session ids are UUID v7, which
//!   carry their creation time, and a task ends after it was created (and after its root session
//!   was), so a root or task whose id is younger than the cutoff is skipped by its name alone.
//!   Ids without a time (not v7) are read.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use cadre_protocol::{TaskRecord, TaskStatus};

use super::lock::TaskLock;
use super::{
    Cleanup, STOP_REQUESTS_DIR, StoreProblem, TaskStore, subdirs, validate_id, write_file,
};
use crate::config::Durable;

/// The stamp of the last pass, in the tasks directory.
pub(super) const RETENTION_STAMP: &str = ".retention";
/// The least time between two passes.
const PASS_INTERVAL: Duration = Duration::from_secs(86_400);

impl TaskStore {
    /// Retention (O13), at most once a day ([`TaskStore::cleanup_now`] when a pass is due): a
    /// pass with the same period less than a day ago (or, with a clock set back, less than a day
    /// ahead) makes this a no-op with `ran` false.
    pub fn cleanup(&self, period_days: u64, now: SystemTime) -> Cleanup {
        let stamp = self.dir.join(RETENTION_STAMP);
        if pass_is_recent(&stamp, period_days, now) {
            return Cleanup::default();
        }
        let cleanup = self.cleanup_now(period_days, now);
        // Nothing to stamp in a tasks directory that does not exist.
        if self.dir.is_dir() {
            let text = format!("{period_days}\n");
            let _ = write_file(&stamp, text.as_bytes(), Durable::AgainstProcessDeath);
        }
        cleanup
    }

    /// One retention pass: remove the directories of finished tasks that ended more than
    /// `period_days` before `now`. Running tasks, records that cannot be read and records without
    /// a readable `ended_at` are kept. A session file is never removed, even if it lives inside a
    /// task directory. Root directories left empty are removed too.
    pub fn cleanup_now(&self, period_days: u64, now: SystemTime) -> Cleanup {
        let mut cleanup = Cleanup {
            ran: true,
            ..Cleanup::default()
        };
        let period = Duration::from_secs(period_days.saturating_mul(86_400));
        // Before the epoch: nothing can have ended that long ago.
        let Some(cutoff) = now.checked_sub(period) else {
            return cleanup;
        };
        let roots = match subdirs(&self.dir) {
            Ok(r) => r,
            Err(e) => {
                cleanup
                    .problems
                    .push(StoreProblem::from_error(self.dir.clone(), &e));
                return cleanup;
            }
        };
        for root in roots {
            if validate_id("root session id", &root).is_err() || made_after(&root, cutoff) {
                continue;
            }
            self.clean_root(&root, period, now, cutoff, &mut cleanup);
        }
        if !cleanup.removed.is_empty() {
            // The index forgets the removed tasks (and roots), so it does not grow for ever.
            let removed: HashSet<(String, String)> = cleanup
                .removed
                .iter()
                .filter_map(|dir| {
                    let id = dir.file_name()?.to_str()?;
                    let root = dir.parent()?.file_name()?.to_str()?;
                    Some((root.to_string(), id.to_string()))
                })
                .collect();
            if let Err(e) = self.compact_index(&removed) {
                cleanup.problems.push(StoreProblem {
                    path: self.index_path(),
                    message: format!("cannot rewrite: {e}"),
                });
            }
        }
        cleanup
    }

    fn clean_root(
        &self,
        root: &str,
        period: Duration,
        now: SystemTime,
        cutoff: SystemTime,
        cleanup: &mut Cleanup,
    ) {
        let root_dir = self.dir.join(root);
        let ids = match subdirs(&root_dir) {
            Ok(ids) => ids,
            Err(e) => {
                cleanup
                    .problems
                    .push(StoreProblem::from_error(root_dir, &e));
                return;
            }
        };
        let mut removed_any = false;
        for id in ids {
            if validate_id("task id", &id).is_err() || made_after(&id, cutoff) {
                continue;
            }
            let dir = root_dir.join(&id);
            // Locked, so a continuation reopening the task cannot slip in between the check and
            // the removal (see `lock`).
            let _lock = match TaskLock::acquire(&dir) {
                Ok(Some(lock)) => lock,
                Ok(None) => continue,
                Err(source) => {
                    cleanup.problems.push(StoreProblem {
                        path: dir,
                        message: format!("cannot lock: {source}"),
                    });
                    continue;
                }
            };
            let record = match self.load(root, &id) {
                Ok(r) => r,
                Err(e) => {
                    cleanup.problems.push(StoreProblem::from_error(dir, &e));
                    continue;
                }
            };
            if !is_expired(&record, period, now) {
                continue;
            }
            match remove_task_dir(&dir, record.session_file.as_deref()) {
                Ok(()) => cleanup.removed.push(dir),
                Err(source) => cleanup.problems.push(StoreProblem {
                    path: dir,
                    message: format!("cannot remove: {source}"),
                }),
            }
            self.forget_live(root, &id);
            removed_any = true;
        }
        if removed_any {
            // Both fail (and are meant to) while a stop request is pending or the root still
            // holds other tasks.
            let _ = fs::remove_dir(root_dir.join(STOP_REQUESTS_DIR));
            let _ = fs::remove_dir(&root_dir);
        }
    }
}

/// Whether the stamp says a pass with `period_days` ran within a day of `now`.
fn pass_is_recent(stamp: &Path, period_days: u64, now: SystemTime) -> bool {
    let Ok(modified) = fs::metadata(stamp).and_then(|m| m.modified()) else {
        return false;
    };
    let apart = now
        .duration_since(modified)
        .or_else(|_| modified.duration_since(now))
        .unwrap_or(Duration::MAX);
    if apart >= PASS_INTERVAL {
        return false;
    }
    fs::read_to_string(stamp).is_ok_and(|text| text.trim() == period_days.to_string())
}

/// Whether `id` is a UUID v7 made at or after `cutoff`: then nothing under it ended before.
fn made_after(id: &str, cutoff: SystemTime) -> bool {
    id_time(id).is_some_and(|made| made >= cutoff)
}

/// The creation time a UUID v7 id carries.
pub(super) fn id_time(id: &str) -> Option<SystemTime> {
    let uuid = uuid::Uuid::try_parse(id).ok()?;
    if uuid.get_version_num() != 7 {
        return None;
    }
    let (secs, nanos) = uuid.get_timestamp()?.to_unix();
    SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
}

fn is_expired(record: &TaskRecord, period: Duration, now: SystemTime) -> bool {
    if record.status == TaskStatus::Running {
        return false;
    }
    let Some(ended) = record
        .ended_at
        .as_deref()
        .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
    else {
        return false;
    };
    now.duration_since(ended).is_ok_and(|age| age > period)
}

/// Remove a task directory's contents and then the directory, sparing `session_file` if it lives
/// there (the directory then stays).
fn remove_task_dir(dir: &Path, session_file: Option<&str>) -> io::Result<()> {
    let keep = session_file.map(|s| fs::canonicalize(s).unwrap_or_else(|_| PathBuf::from(s)));
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if let Some(keep) = &keep {
            let this = fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if &this == keep || keep.starts_with(&this) {
                continue;
            }
        }
        if entry.file_type()?.is_dir() {
            fs::remove_dir_all(&path)?;
        } else {
            fs::remove_file(&path)?;
        }
    }
    match fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        // Only a spared session file keeps it non-empty.
        Err(_) if keep.is_some() => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::orchestrator::store::test_support::{ROOT, finished, store};
    use crate::orchestrator::store::{TASK_FILE, new_task_id};

    #[test]
    fn cleanup_removes_an_emptied_root_with_its_stop_request_directory() {
        let (_tmp, s) = store();
        let now = SystemTime::now();
        let old = now - Duration::from_secs(86_400 * 10);
        s.create(&mut finished("old", TaskStatus::Completed, Some(old)))
            .unwrap();
        let requests = s.stop_requests_dir(ROOT).unwrap();
        fs::create_dir_all(&requests).unwrap();
        // A pending request keeps the root.
        fs::write(requests.join("other"), b"{}").unwrap();
        assert_eq!(s.cleanup_now(7, now).removed.len(), 1);
        assert!(requests.join("other").exists());
        // Without one, the emptied root goes with its request directory.
        fs::remove_file(requests.join("other")).unwrap();
        s.create(&mut finished("old2", TaskStatus::Completed, Some(old)))
            .unwrap();
        assert_eq!(s.cleanup_now(7, now).removed.len(), 1);
        assert!(!s.dir().join(ROOT).exists());
    }

    #[test]
    fn cleanup_removes_only_old_finished_tasks() {
        let (tmp, s) = store();
        let now = SystemTime::now();
        let day = Duration::from_secs(86_400);
        let old = now - day * 10;
        s.create(&mut finished("old", TaskStatus::Completed, Some(old)))
            .unwrap();
        s.create(&mut finished("old-failed", TaskStatus::Failed, Some(old)))
            .unwrap();
        s.create(&mut finished(
            "recent",
            TaskStatus::Completed,
            Some(now - day),
        ))
        .unwrap();
        s.create(&mut finished("no-end", TaskStatus::Completed, None))
            .unwrap();
        let mut running = finished("running", TaskStatus::Running, Some(old));
        s.create(&mut running).unwrap();
        // A session file inside an old task directory survives; one outside is untouched.
        let sessions = tmp.path().join("sessions");
        fs::create_dir_all(&sessions).unwrap();
        let outside = sessions.join("a.jsonl");
        fs::write(&outside, b"{}\n").unwrap();
        let mut with_outside = finished("with-outside", TaskStatus::Stopped, Some(old));
        with_outside.session_file = Some(outside.to_string_lossy().into_owned());
        s.create(&mut with_outside).unwrap();
        let mut with_inside = finished("with-inside", TaskStatus::Completed, Some(old));
        s.create(&mut with_inside).unwrap();
        let inside = s
            .task_dir(ROOT, "with-inside")
            .unwrap()
            .join("session.jsonl");
        fs::write(&inside, b"{}\n").unwrap();
        with_inside.session_file = Some(inside.to_string_lossy().into_owned());
        s.save(&mut with_inside).unwrap();
        // An unparsable old record is kept.
        let broken = s.task_dir(ROOT, "broken").unwrap();
        fs::create_dir_all(&broken).unwrap();
        fs::write(broken.join(TASK_FILE), b"{").unwrap();

        let c = s.cleanup_now(7, now);
        let mut removed: Vec<_> = c
            .removed
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        removed.sort();
        assert_eq!(
            removed,
            ["old", "old-failed", "with-inside", "with-outside"]
        );
        assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
        for gone in ["old", "old-failed", "with-outside"] {
            assert!(!s.task_dir(ROOT, gone).unwrap().exists(), "{gone}");
        }
        for kept in ["recent", "no-end", "running"] {
            assert!(s.load(ROOT, kept).is_ok(), "{kept}");
        }
        assert!(outside.exists());
        assert!(inside.exists());
        assert!(
            !s.task_dir(ROOT, "with-inside")
                .unwrap()
                .join(TASK_FILE)
                .exists()
        );
        assert!(broken.join(TASK_FILE).exists());
    }

    #[test]
    fn cleanup_removes_emptied_root_directories() {
        let (_tmp, s) = store();
        let old = SystemTime::now() - Duration::from_secs(86_400 * 3);
        s.create(&mut finished("t1", TaskStatus::Completed, Some(old)))
            .unwrap();
        let c = s.cleanup_now(1, SystemTime::now());
        assert_eq!(c.removed.len(), 1);
        assert!(!s.dir().join(ROOT).exists());
        assert!(s.dir().exists());
        // A zero period removes every finished task; nothing is left to remove twice.
        assert!(s.cleanup_now(0, SystemTime::now()).removed.is_empty());
    }

    /// A UUID v7 made `ago` before now, as ids made then are.
    fn id_made(ago: Duration) -> String {
        let at = SystemTime::now() - ago;
        let since = at.duration_since(SystemTime::UNIX_EPOCH).unwrap();
        let ts = uuid::Timestamp::from_unix(uuid::NoContext, since.as_secs(), since.subsec_nanos());
        uuid::Uuid::new_v7(ts).to_string()
    }

    const DAY: Duration = Duration::from_secs(86_400);

    #[test]
    fn ids_carry_their_creation_time_when_v7() {
        let made = id_time(&new_task_id()).unwrap();
        let age = SystemTime::now().duration_since(made).unwrap();
        assert!(age < Duration::from_secs(60), "{age:?}");
        let old = id_time(&id_made(DAY * 10)).unwrap();
        let age = SystemTime::now().duration_since(old).unwrap();
        assert!(age > DAY * 9 && age < DAY * 11, "{age:?}");
        assert_eq!(id_time("t1"), None);
        assert_eq!(id_time("0190a000-0000-4000-8000-000000000001"), None, "v4");
    }

    #[test]
    fn a_pass_opens_no_record_too_young_to_have_expired() {
        let (_tmp, s) = store();
        let now = SystemTime::now();
        let garbage = |root: &str, id: &str| {
            let dir = s.task_dir(root, id).unwrap();
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join(TASK_FILE), b"{ not json").unwrap();
        };
        // A thousand unparsable records made in the last week: reading any would be a problem.
        let young_root = id_made(DAY * 6);
        for _ in 0..1000 {
            garbage(&young_root, &new_task_id());
        }
        // A root from before the cutoff, continued lately: its young tasks are skipped too.
        let old_root = id_made(DAY * 30);
        for _ in 0..10 {
            garbage(&old_root, &new_task_id());
        }
        let c = s.cleanup_now(7, now);
        assert!(c.ran && c.removed.is_empty());
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        // An old one is read (and reported), an old finished one removed.
        garbage(&old_root, &id_made(DAY * 20));
        let expired = id_made(DAY * 20);
        let mut r = finished(&expired, TaskStatus::Completed, Some(now - DAY * 19));
        r.root_session_id = old_root.clone();
        s.create(&mut r).unwrap();
        let c = s.cleanup_now(7, now);
        assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
        assert_eq!(c.removed, [s.task_dir(&old_root, &expired).unwrap()]);
        assert!(
            s.dir().join(&old_root).is_dir(),
            "the root keeps its other tasks"
        );
    }

    #[test]
    fn a_pass_runs_at_most_once_a_day_for_the_same_period() {
        let (_tmp, s) = store();
        let now = SystemTime::now();
        let old = now - DAY * 10;
        s.create(&mut finished("a", TaskStatus::Completed, Some(old)))
            .unwrap();
        let c = s.cleanup(7, now);
        assert!(c.ran);
        assert_eq!(c.removed.len(), 1);
        // Within the day: skipped, even with something to remove.
        s.create(&mut finished("b", TaskStatus::Completed, Some(old)))
            .unwrap();
        let c = s.cleanup(7, now);
        assert!(!c.ran && c.removed.is_empty());
        assert!(s.load(ROOT, "b").is_ok());
        // A different period runs at once.
        let c = s.cleanup(5, now);
        assert!(c.ran);
        assert_eq!(c.removed.len(), 1);
        // A day on, a pass is due again; so it is with a clock set back by more than a day.
        s.create(&mut finished("c", TaskStatus::Completed, Some(old)))
            .unwrap();
        assert!(!s.cleanup(5, now + DAY / 2).ran);
        assert!(s.cleanup(5, now + DAY * 2).ran);
        assert!(!s.dir().join(ROOT).join("c").exists());
        assert!(s.cleanup(5, now - DAY * 2).ran);
        // No tasks directory: a pass finds nothing and leaves no stamp.
        let (_tmp2, empty) = store();
        assert!(empty.cleanup(5, now).ran);
        assert!(!empty.dir().exists());
    }
}
