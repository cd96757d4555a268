//! Text that reaches the terminal (warnings, `cadre doctor`) from an MCP server or from a
//! configuration with expanded variables: a server's error message can hold escape sequences
//! that rewrite the screen, fake lines, or megabytes; an expanded `${VAR}` can hold a token.

use cadre_protocol::display::is_unshowable;
use cadre_protocol::redact::redact_str;

/// The most characters kept of one server-provided string in a message.
pub const MAX_SERVER_TEXT: usize = 300;
/// The most characters of one whole message line.
pub const MAX_LINE: usize = 2000;

/// `text` on one line: control characters (ESC, BEL, CR, LF, C1, …) and bidirectional
/// overrides become `�` (whitespace ones a space), cut to `max` characters with `…`.
pub fn one_line(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max * 4));
    for (n, c) in text.chars().enumerate() {
        if n >= max {
            out.push('…');
            break;
        }
        out.push(match c {
            '\n' | '\r' | '\t' => ' ',
            c if is_unshowable(c) => '\u{fffd}',
            c => c,
        });
    }
    out
}

/// A server-provided string inside a message: one line, at most [`MAX_SERVER_TEXT`].
pub fn server_text(text: &str) -> String {
    one_line(text, MAX_SERVER_TEXT)
}

/// A whole message line for the terminal: without registered secrets, one line, bounded.
pub fn message(text: &str) -> String {
    one_line(&redact_str(text), MAX_LINE)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn escapes_newlines_and_length_are_neutralised() {
        let hostile = "\u{1b}[2J\u{1b}]0;owned\u{7}\u{1b}[31mFAKE: all good\nsecond line\u{202e}x";
        let shown = server_text(hostile);
        assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
        assert!(!shown.contains('\u{202e}'));
        assert!(shown.contains("FAKE: all good second line"), "{shown}");
        let long = server_text(&"e".repeat(10_000));
        assert_eq!(long.chars().count(), MAX_SERVER_TEXT + 1);
        assert!(long.ends_with('…'));
        assert_eq!(server_text("plain ü"), "plain ü");
    }

    #[test]
    fn messages_are_redacted() {
        cadre_protocol::redact::set_secrets(["sk-shown-test-secret-123".to_string()]);
        let line = message("warning: https://h/?k=sk-shown-test-secret-123\nmore");
        assert!(!line.contains("sk-shown"), "{line}");
        assert!(
            line.contains("[redacted]") && !line.contains('\n'),
            "{line}"
        );
    }
}
