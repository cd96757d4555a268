//! The newest tasks first, reading only as many records as a page shows (SPEC I2, P4).
//!
//! Task ids are UUID v7 ([`super::new_task_id`]), so their directory names sort in creation
//! order: listing the names (no record is opened) and reading records from the newest down until
//! a page is full costs a page's reads, however many tasks there are. A filter that most records
//! fail reads further, but stops as soon as the page is full.

use cadre_protocol::TaskRecord;

use super::{StoreError, StoreProblem, TaskStore};

/// A task by its directory: what the store knows of it without opening its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRef {
    pub root: String,
    pub id: String,
}

/// Every task directory, newest first, and the root directories that could not be listed.
#[derive(Debug, Default)]
pub struct TaskRefs {
    pub refs: Vec<TaskRef>,
    pub problems: Vec<StoreProblem>,
}

/// Records read newest first: those kept, the unreadable ones met on the way, and whether the
/// page filled up with older tasks left unread (which a filter may or may not keep: finding out
/// could mean reading every one).
#[derive(Debug, Default)]
pub struct Page {
    pub records: Vec<TaskRecord>,
    pub problems: Vec<StoreProblem>,
    pub more: bool,
}

impl TaskStore {
    /// Every task's root session and id, newest first: by id descending (creation order for
    /// UUID v7 ids), then by root. Read from the task index, with the roots it does not know
    /// listed by their directories ([`super::index`]); no record is opened.
    pub fn task_refs(&self) -> Result<TaskRefs, StoreError> {
        self.task_refs_with(false)
    }

    /// Read the records of `refs` in their order, keeping those `keep` accepts, until `limit` are
    /// kept (`None`: all).
    pub fn read_page(
        &self,
        refs: &[TaskRef],
        limit: Option<usize>,
        mut keep: impl FnMut(&TaskRecord) -> bool,
    ) -> Page {
        let mut page = Page::default();
        for (i, r) in refs.iter().enumerate() {
            if limit.is_some_and(|n| page.records.len() >= n) {
                page.more = i < refs.len();
                break;
            }
            let record = match self.load(&r.root, &r.id) {
                Ok(record) => record,
                // A task the index names whose directory is gone (removed, or its creation
                // failed): no task.
                Err(StoreError::NotFound { .. })
                    if !super::index::dir_exists(&self.dir.join(&r.root).join(&r.id)) =>
                {
                    continue;
                }
                Err(e) => {
                    let dir = self.dir.join(&r.root).join(&r.id);
                    page.problems.push(StoreProblem::from_error(dir, &e));
                    continue;
                }
            };
            if keep(&record) {
                page.records.push(record);
            }
        }
        page
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::orchestrator::store::test_support::{finished, store};
    use crate::orchestrator::store::{TASK_FILE, new_task_id};
    use cadre_protocol::TaskStatus;
    use std::fs;

    /// `n` finished tasks spread over three roots, made in order: the newest is last.
    fn made(s: &TaskStore, n: usize, cwd: impl Fn(usize) -> String) -> Vec<String> {
        let roots: Vec<String> = (0..3).map(|_| new_task_id()).collect();
        (0..n)
            .map(|i| {
                let mut r = finished(&new_task_id(), TaskStatus::Completed, None);
                r.root_session_id = roots[(i * 7) % 3].clone();
                r.cwd = cwd(i);
                s.create(&mut r).unwrap();
                r.id
            })
            .collect()
    }

    fn ids(records: &[TaskRecord]) -> Vec<&str> {
        records.iter().map(|r| r.id.as_str()).collect()
    }

    #[test]
    fn refs_are_every_task_directory_newest_first() {
        let (_tmp, s) = store();
        let mut made = made(&s, 20, |_| "/p".into());
        // Hidden and invalid names are no tasks.
        fs::create_dir_all(s.dir().join(".live")).unwrap();
        fs::write(s.dir().join("stray-file"), b"x").unwrap();
        made.reverse();
        let refs = s.task_refs().unwrap();
        let got: Vec<&str> = refs.refs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(got, made);
        assert!(refs.problems.is_empty());
        assert!(
            TaskStore::new("/nonexistent/cadre/tasks")
                .task_refs()
                .unwrap()
                .refs
                .is_empty()
        );
    }

    #[test]
    fn a_page_reads_no_record_past_the_one_that_tells_there_are_more() {
        let (_tmp, s) = store();
        // Older tasks, every record unparsable: reading one would be a problem.
        let old_root = new_task_id();
        for _ in 0..1000 {
            let dir = s.task_dir(&old_root, &new_task_id()).unwrap();
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join(TASK_FILE), b"{ not json").unwrap();
        }
        let mut made = made(&s, 6, |i| format!("/p{}", i % 2));
        made.reverse();
        let refs = s.task_refs().unwrap().refs;
        assert_eq!(refs.len(), 1006);

        let page = s.read_page(&refs, Some(3), |_| true);
        assert_eq!(ids(&page.records), made[..3]);
        assert!(page.more);
        assert_eq!(page.problems.len(), 0, "no unparsable record is read");
        // A filter reads on until the page is full: the newest of /p1 (made odd, so newest first
        // are made[0], made[2], made[4]).
        let page = s.read_page(&refs, Some(3), |r| r.cwd == "/p1");
        assert_eq!(ids(&page.records), [made[0].as_str(), &made[2], &made[4]]);
        assert!(page.more);
        assert_eq!(page.problems.len(), 0, "no unparsable record is read");
        // ... and when it cannot be filled, through to the oldest, reporting what it cannot read.
        let page = s.read_page(&refs, Some(4), |r| r.cwd == "/p1");
        assert_eq!(page.records.len(), 3);
        assert!(!page.more);
        assert_eq!(page.problems.len(), 1000);
        // No limit: every record; a page as large as all there is has no more.
        let page = s.read_page(&refs, None, |_| true);
        assert_eq!(ids(&page.records), made);
        assert!(!page.more);
        let (_tmp2, small) = store();
        let mut made = super::tests::made(&small, 2, |_| "/p".into());
        made.reverse();
        let refs = small.task_refs().unwrap().refs;
        let page = small.read_page(&refs, Some(2), |_| true);
        assert_eq!(ids(&page.records), made);
        assert!(!page.more);
    }
}
