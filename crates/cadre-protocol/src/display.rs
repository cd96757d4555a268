//! What of a string from a file, a model or a server may be shown as it is.

/// The bidirectional marks, embeddings, overrides and isolates (U+200E, U+200F, U+202A–U+202E,
/// U+2066–U+2069): invisible characters that make text read other than it is stored
/// (`txt.exe` shown as `exe.txt`), so nothing shown to a person carries them.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Control characters and bidirectional controls: what text from a file, a model or a server
/// could use to move a terminal's cursor or make a message read other than it is. Callers that
/// keep line breaks or tabs test for those first.
pub fn is_unshowable(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

#[cfg(test)]
mod tests {
    #[test]
    fn bidi_controls_and_nothing_else() {
        for c in [
            '\u{200e}', '\u{200f}', '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}',
        ] {
            assert!(super::is_bidi_control(c), "{c:?}");
        }
        for c in ['a', ' ', '\u{200d}', '\u{2028}', 'é'] {
            assert!(!super::is_bidi_control(c), "{c:?}");
        }
    }
}
