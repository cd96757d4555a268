//! `session/load`: the file of a session id, looked up by exact id in the session directory.
//!
//! Not `--session`'s rules: those take an id prefix, look through every project's sessions,
//! and take an argument that names a file in the working directory as that file (an empty
//! one is even made a new session there). An editor hands back ids cadre gave it, so a load
//! names the whole id, and only session files of the directory's own sessions are candidates:
//! a repository's files are never read or written as sessions.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Longest header line read; a real header is a few hundred bytes.
const HEADER_LIMIT: u64 = 64 * 1024;

/// The session file in `dir` whose header carries `id`, if there is one. Only regular files
/// ending in `.jsonl` are opened (no link, FIFO or device).
pub fn find(dir: &Path, id: &str) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut candidates: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        // `file_type` does not follow links.
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect();
    // cadre names files `<time>_<id>.jsonl`: those are read first.
    let suffix = format!("_{id}.jsonl");
    candidates.sort_by_key(|p| {
        !p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(&suffix))
    });
    candidates
        .into_iter()
        .find(|p| header_id(p).as_deref() == Some(id))
}

fn header_id(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    BufReader::new(file.take(HEADER_LIMIT))
        .read_until(b'\n', &mut line)
        .ok()?;
    let header: serde_json::Value = serde_json::from_slice(&line).ok()?;
    if header.get("type")?.as_str()? != "session" {
        return None;
    }
    Some(header.get("id")?.as_str()?.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn header(id: &str) -> String {
        format!("{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"cwd\":\"/p\"}}\n")
    }

    #[test]
    fn only_the_whole_id_of_a_regular_session_file_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("t_abc-123.jsonl"), header("abc-123")).unwrap();
        std::fs::write(d.join("other.jsonl"), header("zzz")).unwrap();
        std::fs::write(d.join("notes.jsonl"), "not a session\n").unwrap();
        assert_eq!(find(d, "abc-123"), Some(d.join("t_abc-123.jsonl")));
        assert_eq!(find(d, "zzz"), Some(d.join("other.jsonl")));
        assert_eq!(find(d, "abc"), None, "a prefix is not an id");
        assert_eq!(find(d, "notes"), None);
        std::os::unix::fs::symlink(d.join("t_abc-123.jsonl"), d.join("t_lnk.jsonl")).unwrap();
        std::fs::remove_file(d.join("t_abc-123.jsonl")).unwrap();
        std::fs::write(d.join("target.jsonl.txt"), header("lnk")).unwrap();
        std::os::unix::fs::symlink(d.join("target.jsonl.txt"), d.join("x_lnk.jsonl")).unwrap();
        assert_eq!(find(d, "lnk"), None, "links are not followed");
        assert_eq!(find(&d.join("missing"), "abc-123"), None);
    }
}
