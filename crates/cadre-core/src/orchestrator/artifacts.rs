//! Retention of tool artifacts (O13): bash keeps the full output of a command whose result was
//! truncated in the artifacts directory (`bash-<uuid>.log`), and the result names that file. A
//! task's result outlives its task only as long as its record, so the files are removed after
//! the same retention period as task records.
//!
//! One age-based pass over one directory: a file's age is its modification time (when bash last
//! wrote to it), so nothing is opened or read and no task record is consulted. Only files named
//! as bash names them are touched, and only regular files: an artifacts directory may be shared
//! with, or configured as, a directory that holds other things.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::store::{Cleanup, StoreProblem};

/// Remove the artifacts in `dir` last written more than `period_days` before `now`. A missing
/// directory has nothing to remove.
pub fn sweep_artifacts(dir: &Path, period_days: u64, now: SystemTime) -> Cleanup {
    let mut cleanup = Cleanup::default();
    let period = Duration::from_secs(period_days.saturating_mul(86_400));
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return cleanup,
        Err(e) => {
            cleanup.problems.push(StoreProblem {
                path: dir.to_path_buf(),
                message: format!("cannot list: {e}"),
            });
            return cleanup;
        }
    };
    for entry in entries.filter_map(Result::ok) {
        if !entry.file_name().to_str().is_some_and(is_artifact_name) {
            continue;
        }
        // `DirEntry::metadata` does not follow links: a link is not an artifact.
        let Ok(meta) = entry.metadata() else { continue };
        let old = meta.is_file()
            && meta
                .modified()
                .is_ok_and(|at| now.duration_since(at).is_ok_and(|age| age > period));
        if !old {
            continue;
        }
        let path = entry.path();
        match fs::remove_file(&path) {
            Ok(()) => cleanup.removed.push(path),
            Err(e) => cleanup.problems.push(StoreProblem {
                path,
                message: format!("cannot remove: {e}"),
            }),
        }
    }
    cleanup
}

/// `bash-<32 hex digits>.log`, the name cadre's bash gives a full output (`bash.rs`,
/// `start_spill`).
fn is_artifact_name(name: &str) -> bool {
    name.strip_prefix("bash-")
        .and_then(|rest| rest.strip_suffix(".log"))
        .is_some_and(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    fn artifact(n: u32) -> String {
        format!("bash-{n:032x}.log")
    }

    /// A file last written `age` before `now`.
    fn file(dir: &Path, name: &str, now: SystemTime, age: Duration) {
        let path = dir.join(name);
        fs::write(&path, "output\n").unwrap();
        let f = fs::File::options().write(true).open(&path).unwrap();
        f.set_modified(now - age).unwrap();
    }

    #[test]
    fn only_old_bash_outputs_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let now = SystemTime::now();
        file(d, &artifact(1), now, 31 * DAY);
        file(d, &artifact(2), now, 29 * DAY);
        // Old, but not named as bash names its outputs: someone else's file.
        file(d, "notes.log", now, 90 * DAY);
        file(d, "bash-1234.log", now, 90 * DAY);
        // A link named like an artifact is not one; neither is a directory.
        std::os::unix::fs::symlink(d.join("notes.log"), d.join(artifact(3))).unwrap();
        fs::create_dir(d.join(artifact(4))).unwrap();

        let cleanup = sweep_artifacts(d, 30, now);
        assert_eq!(cleanup.removed, [d.join(artifact(1))]);
        assert!(cleanup.problems.is_empty(), "{:?}", cleanup.problems);
        for kept in [artifact(2), "notes.log".into(), "bash-1234.log".into()] {
            assert!(d.join(&kept).is_file(), "{kept}");
        }
        assert!(d.join(artifact(3)).is_symlink());
        assert!(d.join(artifact(4)).is_dir());
        // A file from the future (a clock that moved back) is not old.
        file(d, &artifact(5), now, Duration::ZERO);
        let cleanup = sweep_artifacts(d, 1, now - DAY);
        assert!(!cleanup.removed.contains(&d.join(artifact(5))));
        assert!(d.join(artifact(5)).is_file());
    }

    #[test]
    fn a_missing_directory_has_nothing_to_sweep() {
        let dir = tempfile::tempdir().unwrap();
        let cleanup = sweep_artifacts(&dir.path().join("none"), 1, SystemTime::now());
        assert!(cleanup.removed.is_empty() && cleanup.problems.is_empty());
    }

    #[test]
    fn artifact_names_are_matched_strictly() {
        assert!(is_artifact_name(&artifact(0xabc)));
        assert!(is_artifact_name(
            "bash-0123456789ABCDEFabcdef0123456789.log"
        ));
        for name in [
            "bash-.log",
            "bash-0123456789abcdef0123456789abcde.log",
            "bash-0123456789abcdef0123456789abcdefg.log",
            "bash-0123456789abcdef0123456789abcdeg.log",
            "bash-0123456789abcdef0123456789abcdef.txt",
            "xbash-0123456789abcdef0123456789abcdef.log",
        ] {
            assert!(!is_artifact_name(name), "{name}");
        }
    }
}
