//! Replace a file so that readers see either the old or the new contents, never a torn mix, even
//! if the process or the machine dies halfway.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

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
    // Unique per process and call, so concurrent writers never share a temp file.
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let mut result = write_and_rename(&tmp, path, bytes);
    if matches!(&result, Err(e) if e.kind() == io::ErrorKind::NotFound) {
        // Only the first write into a new directory pays for creating it.
        fs::create_dir_all(dir)?;
        result = write_and_rename(&tmp, path, bytes);
    }
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
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
    fn rejects_paths_without_a_file_name() {
        assert!(atomic_write(Path::new("/"), b"x").is_err());
    }
}
