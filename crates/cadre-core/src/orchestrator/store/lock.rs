//! An exclusive lock on one task, held across a step that reads or writes its record together
//! with its live marker ([`super::live`]), so steps of different processes on the same task do
//! not interleave.
//!
//! The lock is an `flock` on the task directory itself: it exists for as long as the task does,
//! so taking the lock creates nothing (a new inode per task cost more than the rest of the step on
//! a busy ext4). A directory removed while a step waited for it is detected: the lock then
//! protects nothing and the step goes on without one, as with a directory that never existed.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long to wait for a task another process or thread holds: holders keep it for one record
/// write, so this is only reached when one is stopped.
const LOCK_WAIT: Duration = Duration::from_secs(5);
const LOCK_POLL: Duration = Duration::from_millis(1);
/// How often to start over when the directory was replaced while it was being locked.
const LOCK_ATTEMPTS: usize = 16;

/// The lock on a task directory; dropping it unlocks (the descriptor closes).
#[derive(Debug)]
pub(super) struct TaskLock {
    _dir: File,
}

impl TaskLock {
    /// Lock the task directory `dir`; `None` when there is none (never made, or removed).
    pub(super) fn acquire(dir: &Path) -> io::Result<Option<TaskLock>> {
        for _ in 0..LOCK_ATTEMPTS {
            let file = match open_dir(dir) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
            lock_exclusive(&file)?;
            match fs::symlink_metadata(dir) {
                Ok(named) if same_file(&named, &file.metadata()?) => {
                    return Ok(Some(TaskLock { _dir: file }));
                }
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other(
            "the task directory kept being replaced while it was being locked",
        ))
    }
}

fn open_dir(dir: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_DIRECTORY);
    }
    options.open(dir)
}

/// Take an exclusive lock on `file`, waiting at most [`LOCK_WAIT`].
fn lock_exclusive(file: &File) -> io::Result<()> {
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        if try_lock(file)? {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the task stayed locked by another process for {} s",
                    LOCK_WAIT.as_secs()
                ),
            ));
        }
        std::thread::sleep(LOCK_POLL);
    }
}

/// `flock(LOCK_EX | LOCK_NB)`: whether the lock was taken. (`File::try_lock` needs Rust 1.89.)
#[cfg(unix)]
#[allow(unsafe_code)]
fn try_lock(file: &File) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor belongs to `file`, which outlives the call.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) || e.kind() == io::ErrorKind::Interrupted {
        Ok(false)
    } else {
        Err(e)
    }
}

#[cfg(not(unix))]
fn try_lock(_file: &File) -> io::Result<bool> {
    Ok(true)
}

#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_a: &fs::Metadata, _b: &fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn a_locked_task_waits_for_its_holder_and_a_missing_one_has_no_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("task");
        assert!(TaskLock::acquire(&dir).unwrap().is_none());
        fs::create_dir(&dir).unwrap();
        let held = TaskLock::acquire(&dir).unwrap().unwrap();
        let other = open_dir(&dir).unwrap();
        assert!(!try_lock(&other).unwrap(), "held elsewhere");
        drop(held);
        assert!(try_lock(&other).unwrap());
        drop(other);
        // Removed while a step waited: no lock.
        let held = TaskLock::acquire(&dir).unwrap().unwrap();
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| TaskLock::acquire(&dir).unwrap().is_none());
            std::thread::sleep(Duration::from_millis(20));
            fs::remove_dir(&dir).unwrap();
            drop(held);
            assert!(waiter.join().unwrap());
        });
    }
}
