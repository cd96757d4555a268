//! Reading what a page shows without trusting its size: outputs are read up to a cap, and a
//! session file larger than [`SESSION_BYTES`] is not loaded at all.

use std::io::Read;
use std::path::Path;

use cadre_core::session::load_session;
use cadre_protocol::Message;

/// The largest session file loaded for a page; a larger one is named with its size.
pub const SESSION_BYTES: u64 = 32 * 1024 * 1024;

/// A session as the page sees it.
pub enum SessionText {
    Loaded { id: String, messages: Vec<Message> },
    TooLarge(u64),
    Unreadable(String),
}

/// The session at `path`: its id and conversation, or why it cannot be shown.
pub fn read_session(path: &Path) -> SessionText {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => return SessionText::Unreadable("not a regular file".into()),
        Ok(m) if m.len() > SESSION_BYTES => return SessionText::TooLarge(m.len()),
        Ok(_) => {}
        Err(e) => return SessionText::Unreadable(format!("{}: {e}", path.display())),
    }
    match load_session(path) {
        Ok(s) => SessionText::Loaded {
            id: s.session_id().to_string(),
            messages: s.messages(),
        },
        Err(e) => SessionText::Unreadable(e.to_string()),
    }
}

/// At most `max` bytes of the file at `path` as text (invalid UTF-8 replaced), with a note of
/// how much was left out.
pub fn read_capped(path: &Path, max: usize) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let mut bytes = Vec::with_capacity(max.min(len as usize));
    file.take(max as u64).read_to_end(&mut bytes)?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if len > max as u64 {
        text.push_str(&format!("\n… ({} more bytes)", len - max as u64));
    }
    Ok(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn an_output_is_read_up_to_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.md");
        std::fs::write(&path, "x".repeat(100)).unwrap();
        assert_eq!(
            read_capped(&path, 10).unwrap(),
            format!("{}\n… (90 more bytes)", "x".repeat(10))
        );
        assert_eq!(read_capped(&path, 100).unwrap(), "x".repeat(100));
    }

    #[test]
    fn a_missing_or_foreign_session_is_unreadable_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_session(&dir.path().join("none.jsonl")),
            SessionText::Unreadable(_)
        ));
        assert!(matches!(
            read_session(dir.path()),
            SessionText::Unreadable(_)
        ));
        let junk = dir.path().join("junk.jsonl");
        std::fs::write(&junk, "not json\n").unwrap();
        assert!(matches!(read_session(&junk), SessionText::Unreadable(_)));
    }
}
