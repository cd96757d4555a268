//! What becomes of the session file when the interactive mode ends: kept when anything was
//! said in it, removed when it holds nothing but its header and settings — as Pi writes a
//! session only once there is a conversation. Otherwise opening `cadre` and leaving at once
//! would make an empty session the newest, and `cadre -c` would continue it instead of the
//! last real conversation.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// A file larger than this surely holds a conversation; it is not read to decide.
const READ_LIMIT: u64 = 1024 * 1024;

/// Entry types that carry nothing of a conversation.
const SETTINGS_ONLY: &[&str] = &["session", "model_change", "thinking_level_change"];

/// `Some(path)` when the file is kept, `None` when it was removed for holding nothing.
pub fn kept(path: &Path) -> Result<Option<PathBuf>> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(None);
    };
    if !meta.is_file() || meta.len() > READ_LIMIT {
        return Ok(Some(path.to_path_buf()));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(READ_LIMIT).read_to_string(&mut text))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let settings_only = text.lines().filter(|l| !l.trim().is_empty()).all(|line| {
        serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v.get("type")?.as_str().map(str::to_string))
            .is_some_and(|t| SETTINGS_ONLY.contains(&t.as_str()))
    });
    if !settings_only {
        return Ok(Some(path.to_path_buf()));
    }
    std::fs::remove_file(path)
        .with_context(|| format!("cannot remove the empty session {}", path.display()))?;
    Ok(None)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn a_session_with_nothing_said_is_removed_and_any_other_kept() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.jsonl");
        std::fs::write(
            &empty,
            "{\"type\":\"session\",\"id\":\"a\"}\n{\"type\":\"model_change\",\"provider\":\"p\",\"modelId\":\"m\"}\n",
        )
        .unwrap();
        assert_eq!(kept(&empty).unwrap(), None);
        assert!(!empty.exists());

        let said = dir.path().join("said.jsonl");
        std::fs::write(
            &said,
            "{\"type\":\"session\",\"id\":\"b\"}\n{\"type\":\"message\",\"message\":{}}\n",
        )
        .unwrap();
        assert_eq!(kept(&said).unwrap(), Some(said.clone()));

        // What cannot be read as a known settings entry is kept, never guessed away.
        let odd = dir.path().join("odd.jsonl");
        std::fs::write(&odd, "{\"type\":\"session\"}\nnot json\n").unwrap();
        assert_eq!(kept(&odd).unwrap(), Some(odd.clone()));
    }
}
