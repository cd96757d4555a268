//! The input line: a text buffer with a cursor, editing keys and a history of what was sent.

/// The most bytes the buffer takes (a paste of a whole log is cut, with a note from the caller).
pub const MAX_INPUT: usize = 256 * 1024;
/// The most entries of history kept.
const MAX_HISTORY: usize = 500;

#[derive(Debug, Default)]
pub struct Editor {
    text: String,
    /// A byte offset in `text`, always on a character boundary.
    cursor: usize,
    history: Vec<String>,
    /// While browsing history: the entry shown, and what was typed before browsing.
    browsing: Option<(usize, String)>,
}

impl Editor {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Insert `s` at the cursor. Returns false when it did not fit whole (the fitting part is
    /// inserted).
    pub fn insert(&mut self, s: &str) -> bool {
        let room = MAX_INPUT.saturating_sub(self.text.len());
        let mut take = s.len().min(room);
        while !s.is_char_boundary(take) {
            take -= 1;
        }
        // Pasted line ends become newlines; other controls have no place in a prompt.
        let part: String = s[..take]
            .replace("\r\n", "\n")
            .chars()
            .map(|c| if c == '\r' { '\n' } else { c })
            .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
            .collect();
        self.text.insert_str(self.cursor, &part);
        self.cursor += part.len();
        self.browsing = None;
        take == s.len()
    }

    pub fn backspace(&mut self) {
        if let Some(prev) = self.prev_boundary() {
            self.text.replace_range(prev..self.cursor, "");
            self.cursor = prev;
        }
    }

    pub fn delete(&mut self) {
        if let Some(next) = self.next_boundary() {
            self.text.replace_range(self.cursor..next, "");
        }
    }

    pub fn left(&mut self) {
        if let Some(prev) = self.prev_boundary() {
            self.cursor = prev;
        }
    }

    pub fn right(&mut self) {
        if let Some(next) = self.next_boundary() {
            self.cursor = next;
        }
    }

    pub fn home(&mut self) {
        self.cursor = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
    }

    pub fn end(&mut self) {
        self.cursor = self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i);
    }

    /// Ctrl-W: the word before the cursor.
    pub fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        let start = trimmed
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |i| i + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Ctrl-U: everything before the cursor on its line.
    pub fn delete_to_start(&mut self) {
        let start = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Take the text to send; it goes into the history.
    pub fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
            if self.history.len() > MAX_HISTORY {
                self.history.remove(0);
            }
        }
        text
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
    }

    /// Replace the text (a completion) and put the cursor at its end.
    pub fn set(&mut self, text: String) {
        self.cursor = text.len();
        self.text = text;
    }

    /// Up: the previous history entry.
    pub fn history_back(&mut self) {
        let at = match &self.browsing {
            Some((i, _)) => i.checked_sub(1),
            None => self.history.len().checked_sub(1),
        };
        let Some(at) = at else { return };
        let typed = match self.browsing.take() {
            Some((_, typed)) => typed,
            None => self.text.clone(),
        };
        self.text = self.history[at].clone();
        self.cursor = self.text.len();
        self.browsing = Some((at, typed));
    }

    /// Down: the next history entry, or what was typed before browsing.
    pub fn history_forward(&mut self) {
        let Some((at, typed)) = self.browsing.take() else {
            return;
        };
        if at + 1 < self.history.len() {
            self.text = self.history[at + 1].clone();
            self.browsing = Some((at + 1, typed));
        } else {
            self.text = typed;
        }
        self.cursor = self.text.len();
    }

    /// Whether Up/Down should move through history rather than lines: the cursor is on the
    /// first (Up) or last (Down) line of the text.
    pub fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    pub fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// The `@word` the cursor is at the end of, with its byte offset: what `@file` completion
    /// completes.
    pub fn at_word(&self) -> Option<(usize, &str)> {
        let before = &self.text[..self.cursor];
        let start = before
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |i| i + 1);
        let word = &before[start..];
        word.strip_prefix('@').map(|rest| (start, rest))
    }

    /// Replace the `@word` at the cursor with `@replacement`.
    pub fn replace_at_word(&mut self, replacement: &str) {
        let Some((start, _)) = self.at_word() else {
            return;
        };
        let new = format!("@{replacement}");
        self.text.replace_range(start..self.cursor, &new);
        self.cursor = start + new.len();
    }

    fn prev_boundary(&self) -> Option<usize> {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map(|(i, _)| i)
    }

    fn next_boundary(&self) -> Option<usize> {
        self.text[self.cursor..]
            .chars()
            .next()
            .map(|c| self.cursor + c.len_utf8())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn editing_keeps_the_cursor_on_character_boundaries() {
        let mut e = Editor::default();
        e.insert("héllo wörld");
        e.left();
        e.backspace();
        assert_eq!(e.text(), "héllo wörd");
        e.home();
        e.delete();
        assert_eq!(e.text(), "éllo wörd");
        e.end();
        e.delete_word();
        assert_eq!(e.text(), "éllo ");
    }

    #[test]
    fn history_browses_back_and_returns_to_what_was_typed() {
        let mut e = Editor::default();
        e.insert("one");
        e.take();
        e.insert("two");
        e.take();
        e.insert("draft");
        e.history_back();
        assert_eq!(e.text(), "two");
        e.history_back();
        assert_eq!(e.text(), "one");
        e.history_forward();
        e.history_forward();
        assert_eq!(e.text(), "draft");
    }

    #[test]
    fn pastes_are_cleaned_and_capped() {
        let mut e = Editor::default();
        e.insert("a\r\nb\x1b[31mc");
        assert_eq!(e.text(), "a\nb[31mc");
        let big = "x".repeat(MAX_INPUT + 10);
        assert!(!e.insert(&big));
        assert_eq!(e.text().len(), MAX_INPUT);
    }

    #[test]
    fn the_at_word_is_found_and_replaced() {
        let mut e = Editor::default();
        e.insert("look at @src/ma");
        assert_eq!(e.at_word(), Some((8, "src/ma")));
        e.replace_at_word("src/main.rs");
        assert_eq!(e.text(), "look at @src/main.rs");
        e.insert(" ok");
        assert_eq!(e.at_word(), None);
    }
}
