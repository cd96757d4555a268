//! The log files of stdio servers' stderr: `<server>-<pid>-<n>.log` in the log directory, one
//! per server start, so that sessions running at once (and `cadre doctor`) never write over
//! each other's logs. Each is capped at [`MAX_LOG_BYTES`], and before a new one is made the
//! directory is pruned to [`MAX_LOG_FILES`] logs — those of processes that have exited go
//! first, oldest first — so the total on disk stays under 64 MiB.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The most bytes of a server's stderr kept in its log file.
pub const MAX_LOG_BYTES: u64 = 1024 * 1024;
/// The most log files kept in the log directory.
pub const MAX_LOG_FILES: usize = 64;

static STARTS: AtomicU64 = AtomicU64::new(1);

/// A new log path for `server` in `dir`, after pruning `dir`.
pub fn new_log_path(dir: &Path, server: &str) -> PathBuf {
    prune(dir, MAX_LOG_FILES - 1);
    let n = STARTS.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{server}-{}-{n}.log", std::process::id()))
}

/// The pid in a log file's name (`<server>-<pid>-<n>.log`).
fn pid_of(name: &str) -> Option<i32> {
    let stem = name.strip_suffix(".log")?;
    let mut parts = stem.rsplitn(3, '-');
    let _n = parts.next()?;
    parts.next()?.parse().ok()
}

#[allow(unsafe_code)]
fn is_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Remove log files until at most `keep` remain: those of exited processes first, oldest
/// first. Files that are not logs are left alone; failures are ignored (a log is a help).
pub fn prune(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut logs: Vec<(bool, std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if !name.ends_with(".log") {
                return None;
            }
            let alive = pid_of(&name).is_some_and(is_alive);
            let modified = e.metadata().and_then(|m| m.modified()).ok()?;
            Some((alive, modified, e.path()))
        })
        .collect();
    if logs.len() <= keep {
        return;
    }
    // Exited processes' logs (false) before live ones, each oldest first.
    logs.sort();
    let excess = logs.len() - keep;
    for (_, _, path) in logs.into_iter().take(excess) {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn logs_are_per_start_and_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let a = new_log_path(dir.path(), "s");
        let b = new_log_path(dir.path(), "s");
        assert_ne!(a, b, "two starts of one server share no log");
        let name = a.file_name().unwrap().to_str().unwrap();
        assert_eq!(pid_of(name), Some(std::process::id() as i32));
        assert!(name.starts_with("s-"), "{name}");
        // A dead process's logs go before a live one's.
        let live = dir.path().join(format!("x-{}-1.log", std::process::id()));
        std::fs::write(&live, "live").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        for i in 0..5 {
            std::fs::write(dir.path().join(format!("x-999999999-{i}.log")), "old").unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), "kept").unwrap();
        prune(dir.path(), 2);
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .collect();
        assert_eq!(left.len(), 3, "{left:?}");
        assert!(left.contains(&"notes.txt".to_string()), "{left:?}");
        assert!(live.exists(), "{left:?}");
    }
}
