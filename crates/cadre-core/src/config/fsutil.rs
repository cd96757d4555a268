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

/// How far a rewrite must survive. Either way readers never see a torn file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durable {
    /// fdatasync before the rename: the new contents survive a power loss or kernel crash.
    AgainstPowerLoss,
    /// No flush: the new contents survive the death of the process (`kill -9`, a panic, OOM)
    /// through the page cache, like appended session lines; a power loss may bring back the
    /// previous version. A flush costs a disk write and, in a VM, an exit to the hypervisor.
    AgainstProcessDeath,
}

/// [`atomic_write`] for a file that is rewritten again and again (task records, task outputs),
/// created readable and writable by the user only (0600): the same guarantees (temp file, fsync as `durable` asks, rename), but the version it replaces is kept beside it as
/// `.<file>.spare` and becomes the temp file of the next rewrite. So after its first two writes a
/// file is rewritten without creating or freeing an inode. That matters beyond the saved syscalls:
/// on ext4 without a journal every new inode is searched for past the inodes freed in the last
/// few minutes, so a fan-out that freed two inodes per task made each later task slower
/// (SPEC P1). The swap is `renameat2(RENAME_EXCHANGE)`; where the file system lacks it, or the
/// file does not exist yet, this is a plain rename.
pub fn atomic_rewrite(path: &Path, bytes: &[u8], durable: Durable) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let spare = spare_path(dir, name);
    let tmp = temp_path(dir, name);
    // Claiming the spare by renaming it to our own temp name is atomic: two writers never share
    // it. Without one (first rewrite, or another writer holds it) a new temp file is created.
    let claimed = fs::rename(&spare, &tmp).is_ok();
    let mut result = fill(&tmp, bytes, claimed, durable);
    if !claimed && matches!(&result, Err(e) if e.kind() == io::ErrorKind::NotFound) {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        result = fill(&tmp, bytes, false, durable);
    }
    let result = result.and_then(|()| swap_in(&tmp, path, &spare));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// `.<file>.spare`: the previous version of a file written by [`atomic_rewrite`], kept for reuse.
pub fn spare_path(dir: &Path, name: &OsStr) -> PathBuf {
    dir.join(format!(".{}.spare", name.to_string_lossy()))
}

/// Write `bytes` to `tmp` (a claimed spare, overwritten in place, or a new file), flushed to the
/// disk when `durable` asks for it.
fn fill(tmp: &Path, bytes: &[u8], reuse: bool, durable: Durable) -> io::Result<()> {
    let mut f = if reuse {
        OpenOptions::new().write(true).open(tmp)?
    } else {
        // The user's only: task records and outputs hold prompts and what the agents read.
        // The spare of a file made so is made so too.
        use std::os::unix::fs::OpenOptionsExt;
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(tmp)?
    };
    f.write_all(bytes)?;
    // After the write, not before: a shorter text must not keep the old tail, and truncating
    // first would free and reallocate every block.
    if reuse {
        f.set_len(bytes.len() as u64)?;
    }
    match durable {
        // fdatasync: the contents and what reading them needs (size, block map) reach the
        // disk; timestamps may lag, which saves an inode write on a same-sized rewrite.
        Durable::AgainstPowerLoss => f.sync_data(),
        Durable::AgainstProcessDeath => Ok(()),
    }
}

/// Put the written `tmp` in place of `path`; the old version becomes the spare when none exists.
fn swap_in(tmp: &Path, path: &Path, spare: &Path) -> io::Result<()> {
    match exchange(tmp, path) {
        Ok(()) => {
            // `tmp` now holds the old version. Another writer may have left a spare meanwhile;
            // replacing theirs would free an inode all the same, so ours goes instead.
            if rename_noreplace(tmp, spare).is_err() {
                let _ = fs::remove_file(tmp);
            }
            Ok(())
        }
        // Nothing to exchange with yet, or no exchange on this file system.
        Err(e) if exchange_unavailable(&e) => fs::rename(tmp, path),
        Err(e) => Err(e),
    }
}

fn exchange_unavailable(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || matches!(
            e.raw_os_error(),
            Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
        )
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let from = std::ffi::CString::new(from.as_os_str().as_bytes())?;
    let to = std::ffi::CString::new(to.as_os_str().as_bytes())?;
    // SAFETY: both paths are valid NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            flags,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    renameat2(a, b, libc::RENAME_EXCHANGE)
}

#[cfg(target_os = "linux")]
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    renameat2(from, to, libc::RENAME_NOREPLACE)
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

#[cfg(not(target_os = "linux"))]
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    if fs::symlink_metadata(to).is_ok() {
        return Err(io::Error::from(io::ErrorKind::AlreadyExists));
    }
    fs::rename(from, to)
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
        assert!(atomic_rewrite(Path::new("/"), b"x", Durable::AgainstPowerLoss).is_err());
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn rewrite_creates_then_keeps_the_previous_version_as_the_spare() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a/b/task.json");
        atomic_rewrite(&path, b"one", Durable::AgainstPowerLoss).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"one");
        assert_eq!(names(path.parent().unwrap()), ["task.json"]);
        atomic_rewrite(&path, b"two, longer", Durable::AgainstPowerLoss).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two, longer");
        let spare = spare_path(path.parent().unwrap(), OsStr::new("task.json"));
        assert_eq!(fs::read(&spare).unwrap(), b"one");
        atomic_rewrite(&path, b"3", Durable::AgainstPowerLoss).unwrap();
        // The spare was overwritten in place: no stale tail of the longer text.
        assert_eq!(fs::read(&path).unwrap(), b"3");
        assert_eq!(fs::read(&spare).unwrap(), b"two, longer");
        assert_eq!(
            names(path.parent().unwrap()),
            [".task.json.spare", "task.json"]
        );
    }

    #[test]
    fn rewrite_reuses_the_same_two_inodes() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        atomic_rewrite(&path, b"a", Durable::AgainstPowerLoss).unwrap();
        atomic_rewrite(&path, b"b", Durable::AgainstPowerLoss).unwrap();
        let inodes = || {
            let mut v: Vec<u64> = fs::read_dir(tmp.path())
                .unwrap()
                .map(|e| e.unwrap().metadata().unwrap().ino())
                .collect();
            v.sort();
            v
        };
        let before = inodes();
        for i in 0..10 {
            // Either durability: the flush changes nothing about the files used.
            let durable = if i % 2 == 0 {
                Durable::AgainstPowerLoss
            } else {
                Durable::AgainstProcessDeath
            };
            atomic_rewrite(&path, format!("round {i}").as_bytes(), durable).unwrap();
            assert_eq!(inodes(), before);
        }
        assert_eq!(fs::read(&path).unwrap(), b"round 9");
    }

    #[test]
    fn concurrent_rewriters_each_leave_a_whole_file_and_no_temp_files() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        atomic_rewrite(&path, b"start", Durable::AgainstPowerLoss).unwrap();
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for round in 0..20 {
                        let body = vec![b'a' + i as u8; 1024 + 512 * (round % 3)];
                        atomic_rewrite(&path, &body, Durable::AgainstPowerLoss).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let got = fs::read(&path).unwrap();
        assert!(got.iter().all(|b| *b == got[0]), "a torn mix");
        assert!(leftovers(tmp.path()).is_empty());
        let spare = fs::read(spare_path(tmp.path(), OsStr::new("f"))).unwrap();
        assert!(spare.iter().all(|b| *b == spare[0]), "a torn spare");
    }

    #[test]
    fn rewrite_failure_is_an_error_and_leaves_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("plain");
        fs::write(&file, b"keep").unwrap();
        // The parent is a file: neither the temp file nor the parent can be created.
        let err =
            atomic_rewrite(&file.join("task.json"), b"x", Durable::AgainstPowerLoss).unwrap_err();
        assert!(
            err.raw_os_error() == Some(libc::ENOTDIR) || err.kind() == io::ErrorKind::NotADirectory
        );
        assert_eq!(fs::read(&file).unwrap(), b"keep");
        assert!(leftovers(tmp.path()).is_empty());
    }

    #[test]
    fn a_spare_claimed_by_a_dead_writer_is_replaced_by_a_new_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        atomic_rewrite(&path, b"one", Durable::AgainstPowerLoss).unwrap();
        atomic_rewrite(&path, b"two", Durable::AgainstPowerLoss).unwrap();
        // A writer that claimed the spare and died leaves only its temp file; the next rewrite
        // creates its own and leaves a spare again.
        let spare = spare_path(tmp.path(), OsStr::new("f"));
        fs::rename(&spare, tmp.path().join(".f.999999.dead.tmp")).unwrap();
        atomic_rewrite(&path, b"three", Durable::AgainstPowerLoss).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"three");
        assert_eq!(fs::read(&spare).unwrap(), b"two");
    }
}
