//! Where session files live and how they are named (Pi's layout).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// `CADRE_HOME/sessions/--<cwd>--/`, with the cwd encoded as Pi does: the leading separator
/// dropped, then every `/`, `\` and `:` replaced by `-`.
pub fn session_dir_for_cwd(cadre_home: &Path, cwd: &Path) -> PathBuf {
    let cwd = cwd.to_string_lossy();
    let trimmed = cwd
        .strip_prefix('/')
        .or_else(|| cwd.strip_prefix('\\'))
        .unwrap_or(&cwd);
    let encoded: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    cadre_home.join("sessions").join(format!("--{encoded}--"))
}

/// An ISO 8601 UTC timestamp with milliseconds, as JavaScript's `Date.toISOString()` prints it.
pub fn iso_timestamp(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

/// `<timestamp with : and . replaced by ->_<session id>.jsonl`, Pi's file name.
pub fn session_file_name(timestamp: &str, session_id: &str) -> String {
    let stamp: String = timestamp
        .chars()
        .map(|c| if matches!(c, ':' | '.') { '-' } else { c })
        .collect();
    format!("{stamp}_{session_id}.jsonl")
}

/// The most recently modified `.jsonl` file of a session directory (for `--continue`). Ties on
/// modification time go to the later file name, whose timestamp prefix sorts chronologically.
pub fn latest_session(dir: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| {
            let modified = e
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            (modified, e.file_name(), e.path())
        })
        .max_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)))
        .map(|(_, _, path)| path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn session_dir_encodes_cwd_like_pi() {
        let home = Path::new("/home/u/.cadre");
        assert_eq!(
            session_dir_for_cwd(home, Path::new("/Users/alice/myproject")),
            PathBuf::from("/home/u/.cadre/sessions/--Users-alice-myproject--")
        );
        assert_eq!(
            session_dir_for_cwd(home, Path::new("/")),
            PathBuf::from("/home/u/.cadre/sessions/----")
        );
        assert_eq!(
            session_dir_for_cwd(home, Path::new("C:\\work\\x")),
            PathBuf::from("/home/u/.cadre/sessions/--C--work-x--")
        );
        assert_eq!(
            session_dir_for_cwd(home, Path::new("/a/b.c d/")),
            PathBuf::from("/home/u/.cadre/sessions/--a-b.c d---")
        );
    }

    #[test]
    fn timestamp_and_file_name_follow_pi() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_733_234_400_123);
        let ts = iso_timestamp(at);
        assert_eq!(ts, "2024-12-03T14:00:00.123Z");
        assert_eq!(
            session_file_name(&ts, "abc"),
            "2024-12-03T14-00-00-123Z_abc.jsonl"
        );
    }

    #[test]
    fn latest_session_picks_newest_jsonl() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(latest_session(dir.path()), None);
        assert_eq!(latest_session(&dir.path().join("missing")), None);
        let old = dir.path().join("2024-01-01T00-00-00-000Z_a.jsonl");
        let new = dir.path().join("2024-01-02T00-00-00-000Z_b.jsonl");
        std::fs::write(&old, "x").unwrap();
        std::fs::write(&new, "x").unwrap();
        std::fs::write(dir.path().join("zzz.txt"), "x").unwrap();
        std::fs::create_dir(dir.path().join("zzz.jsonl")).unwrap();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(t0)
            .unwrap();
        std::fs::File::options()
            .write(true)
            .open(&new)
            .unwrap()
            .set_modified(t0 + Duration::from_secs(5))
            .unwrap();
        assert_eq!(latest_session(dir.path()), Some(new.clone()));
        // A later modification of the older file makes it the one to continue.
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(t0 + Duration::from_secs(10))
            .unwrap();
        assert_eq!(latest_session(dir.path()), Some(old));
    }
}
