//! Replace a file so that readers see either the old or the new contents, never a torn mix, even
//! if the process or the machine dies halfway.

use std::ffi::OsStr;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Write `bytes` to `path` atomically: a temp file in the same directory, written and fsynced,
/// then renamed over `path`. Readers see the old or the new contents, never a torn mix, whether
/// the process is killed or the machine loses power; the data is on disk before the rename.
/// The directory is not fsynced: after a power loss the rename itself may be lost and the
/// previous version read instead, which every caller tolerates (records are rewritten as they
/// change) and which saves a second disk flush per write on the hot path of every task.
/// Missing parent directories are created.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let mut tmp = temp_path(dir, name);
    let mut result = write_and_rename(&tmp, path, bytes);
    if matches!(&result, Err(e) if e.kind() == io::ErrorKind::NotFound) {
        // Only the first write into a new directory pays for creating it.
        fs::create_dir_all(dir)?;
        result = write_and_rename(&tmp, path, bytes);
    }
    if matches!(&result, Err(e) if e.kind() == io::ErrorKind::AlreadyExists) {
        // A leftover of an earlier process that had our pid: leave it to the sweep, pick another.
        tmp = temp_path(dir, name);
        result = write_and_rename(&tmp, path, bytes);
    }
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// `.<file>.<pid>.<unique>.tmp`, unique per process and call so concurrent writers never share a
/// temp file. The pid (read once) lets a later sweep tell a dead writer's leftovers; the unique
/// part is a per-process random prefix and a counter, so naming a temp file costs no syscall.
fn temp_path(dir: &Path, name: &OsStr) -> PathBuf {
    static PID: OnceLock<(u32, u32)> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (pid, salt) = *PID.get_or_init(|| (std::process::id(), fastrand::u32(..)));
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(
        ".{}.{pid}.{salt:08x}{n:x}.tmp",
        name.to_string_lossy()
    ))
}

fn write_and_rename(tmp: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).create_new(true).open(tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    fs::rename(tmp, path)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn creates_and_replaces_without_leaving_temp_files() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a/b/file.json");
        atomic_write(&path, b"one").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"one");
        atomic_write(&path, b"two, longer").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two, longer");
        assert!(leftovers(path.parent().unwrap()).is_empty());
    }

    #[test]
    fn failure_leaves_old_contents_and_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        // Renaming a file over a non-empty directory fails: the target must stay as it was.
        let target = tmp.path().join("dir");
        fs::create_dir_all(target.join("inner")).unwrap();
        assert!(atomic_write(&target, b"x").is_err());
        assert!(target.join("inner").is_dir());
        assert!(leftovers(tmp.path()).is_empty());
    }

    #[test]
    fn concurrent_writers_each_leave_a_whole_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let body = vec![b'a' + i as u8; 4096];
                    atomic_write(&path, &body).unwrap();
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let got = fs::read(&path).unwrap();
        assert_eq!(got.len(), 4096);
        assert!(got.iter().all(|b| *b == got[0]));
        assert!(leftovers(tmp.path()).is_empty());
    }

    #[test]
    fn temp_names_are_unique_and_carry_the_pid() {
        let dir = Path::new("/x");
        let a = temp_path(dir, OsStr::new("task.json"));
        let b = temp_path(dir, OsStr::new("task.json"));
        assert_ne!(a, b);
        let name = a.file_name().unwrap().to_str().unwrap();
        let inner = name
            .strip_prefix('.')
            .unwrap()
            .strip_suffix(".tmp")
            .unwrap();
        let parts: Vec<&str> = inner.rsplitn(3, '.').collect();
        assert_eq!(parts[1], std::process::id().to_string());
        assert_eq!(parts[2], "task.json");
    }

    #[test]
    fn rejects_paths_without_a_file_name() {
        assert!(atomic_write(Path::new("/"), b"x").is_err());
    }
}
