//! Text measured in terminal columns: wrapping, clipping and making model or file text safe to
//! put on a screen.
//!
//! Everything the screen shows may come from a model, a tool or a file a repository wrote, so
//! it passes [`screen_safe`] first: a control character or an escape sequence drawn as-is
//! would move the cursor or rewrite the terminal's title, and a bidirectional override would
//! make a line read as something it is not.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The columns `text` takes.
pub fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// `text` with tabs as four spaces and every other control character, escape sequence
/// introducer and bidirectional control replaced by `�` (newlines are kept: callers split on
/// them). Characters whose drawn width terminals disagree on are made plain: a zero-width
/// joiner, emoji presentation selectors, skin-tone modifiers and tag characters are dropped
/// (a joined family is drawn as its members, each two columns everywhere) and regional
/// indicators become their letters (a flag
/// is drawn one or two columns wide depending on the terminal), so the width counted here is
/// the width drawn and no glyph spills into the next cell.
pub fn screen_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n')
            || cadre_protocol::display::is_bidi_control(c)
            || ambiguous_width(c)
    };
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str("    "),
            '\r' | '\u{200d}' | '\u{fe0e}' | '\u{fe0f}' => {}
            '\u{1f3fb}'..='\u{1f3ff}' | '\u{e0020}'..='\u{e007f}' => {}
            '\u{1f1e6}'..='\u{1f1ff}' => {
                out.push(char::from(b'A' + (u32::from(c) - 0x1f1e6) as u8));
            }
            c if unsafe_char(c) => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Characters whose width terminals draw differently from one another.
fn ambiguous_width(c: char) -> bool {
    matches!(
        c,
        '\u{200d}'
            | '\u{fe0e}'
            | '\u{fe0f}'
            | '\u{1f1e6}'..='\u{1f1ff}'
            // Skin-tone modifiers and tag characters (subdivision flags): drawn joined to the
            // emoji before them by some terminals, counted as columns of their own by others.
            | '\u{1f3fb}'..='\u{1f3ff}'
            | '\u{e0020}'..='\u{e007f}'
    )
}

/// `text` cut to at most `max` columns, ending in `…` when cut.
pub fn clip(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > max - 1 {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// `text` padded with spaces (or clipped) to exactly `cols` columns.
pub fn fit(text: &str, cols: usize) -> String {
    let mut out = clip(text, cols);
    let w = width(&out);
    out.extend(std::iter::repeat_n(' ', cols.saturating_sub(w)));
    out
}

/// One logical line wrapped to `cols` columns: at spaces where it can, inside a word longer
/// than a line where it must. An empty line stays one empty row.
pub fn wrap(line: &str, cols: usize) -> Vec<String> {
    let cols = cols.max(1);
    if width(line) <= cols {
        return vec![line.to_string()];
    }
    let mut rows = Vec::new();
    let mut row = String::new();
    let mut row_width = 0;
    for word in line.split_inclusive(' ') {
        let w = width(word);
        let trimmed = width(word.trim_end_matches(' '));
        if row_width + trimmed <= cols {
            row.push_str(word);
            row_width += w;
            continue;
        }
        if !row.is_empty() {
            rows.push(row.trim_end_matches(' ').to_string());
            row = String::new();
            row_width = 0;
        }
        if trimmed <= cols {
            row.push_str(word);
            row_width = w;
            continue;
        }
        // A word wider than a row: cut it by columns.
        for c in word.chars() {
            let cw = c.width().unwrap_or(0);
            if row_width + cw > cols {
                rows.push(std::mem::take(&mut row));
                row_width = 0;
            }
            row.push(c);
            row_width += cw;
        }
    }
    if !row.trim_end_matches(' ').is_empty() || rows.is_empty() {
        rows.push(row.trim_end_matches(' ').to_string());
    }
    rows
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_counts_columns_and_breaks_at_spaces() {
        assert_eq!(wrap("hello world again", 11), ["hello world", "again"]);
        assert_eq!(wrap("", 10), [""]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        // Wide characters take two columns each: never more than the row holds.
        let rows = wrap("日本語のテキストです", 6);
        assert!(rows.iter().all(|r| width(r) <= 6), "{rows:?}");
        assert_eq!(rows.concat(), "日本語のテキストです");
    }

    #[test]
    fn clipping_and_fitting_count_columns() {
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
        assert_eq!(width(&clip("日本語日本語", 5)), 5);
        assert_eq!(fit("ab", 4), "ab  ");
        assert_eq!(width(&fit("日本語日本語", 7)), 7);
    }

    #[test]
    fn escapes_and_overrides_never_reach_the_screen() {
        let hostile = "ok\x1b]0;pwned\x07 \u{202e}txt.exe\r\nnext\tcol";
        let safe = screen_safe(hostile);
        assert!(!safe.contains('\x1b') && !safe.contains('\x07') && !safe.contains('\u{202e}'));
        assert!(!safe.contains('\r'));
        assert!(safe.contains("\nnext    col"), "{safe}");
        assert!(matches!(
            screen_safe("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
        // A joined family becomes its members, a flag its letters, a presentation selector
        // nothing.
        assert_eq!(screen_safe("👨\u{200d}👩"), "👨👩");
        assert_eq!(screen_safe("\u{1f1ef}\u{1f1f5}"), "JP");
        assert_eq!(screen_safe("❤\u{fe0f}"), "❤");
        assert_eq!(screen_safe("👍\u{1f3fd} x"), "👍 x");
    }
}
