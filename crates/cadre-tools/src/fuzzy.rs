//! Forgiving text matching for edit, as Pi does it: when an `oldText` is not found exactly, it
//! is looked up again with trailing whitespace stripped from every line and typographic quotes,
//! dashes and special spaces folded to ASCII — the usual ways a model's copy of a file drifts.
//!
//! Unlike Pi, which then rewrites the whole file in normalised form, every normalised byte keeps
//! its offset in the original, so only the matched region is replaced and the rest of the file is
//! left exactly as it was.

/// Text in normalised form, with the original byte offset of each normalised byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    pub text: String,
    /// `origin[i]` is where byte `i` of `text` came from; one extra entry maps the end.
    origin: Vec<usize>,
}

impl Normalized {
    /// The original byte range of the normalised range `start..end` (both on char boundaries).
    /// A range ending where stripped trailing whitespace used to be takes that whitespace too.
    pub fn original_range(&self, start: usize, end: usize) -> (usize, usize) {
        (self.origin[start], self.origin[end])
    }
}

fn fold(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// Normalise `text` (LF line endings expected).
pub fn normalize(text: &str) -> Normalized {
    let mut out = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len() + 1);
    let mut line_start = 0usize;
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
            origin.push(line_start - 1);
        }
        for (offset, c) in line.trim_end().char_indices() {
            let before = out.len();
            out.push(fold(c));
            origin.resize(origin.len() + (out.len() - before), line_start + offset);
        }
        line_start += line.len() + 1;
    }
    origin.push(text.len());
    Normalized { text: out, origin }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn folds_and_strips() {
        let n = normalize("it\u{2019}s  \n\u{201C}a\u{201D} \u{2014} b\u{00A0}c\t\n");
        assert_eq!(n.text, "it's\n\"a\" - b c\n");
    }

    #[test]
    fn offsets_map_back() {
        let original = "x = \u{2018}q\u{2019};   \ny";
        let n = normalize(original);
        assert_eq!(n.text, "x = 'q';\ny");
        // "'q';" in normalised text.
        let start = n.text.find("'q'").unwrap();
        let (a, b) = n.original_range(start, start + 3);
        assert_eq!(&original[a..b], "\u{2018}q\u{2019}");
        // Through the end of the line: the stripped spaces go with the match.
        let (a, b) = n.original_range(start, start + 4);
        assert_eq!(&original[a..b], "\u{2018}q\u{2019};   ");
        let end_of_line = n.text.find('\n').unwrap();
        let (_, b) = n.original_range(end_of_line, end_of_line);
        assert_eq!(&original[b..], "\ny");
        let (a, b) = n.original_range(0, n.text.len());
        assert_eq!(&original[a..b], original);
    }

    #[test]
    fn empty_and_blank() {
        let n = normalize("");
        assert_eq!(n.text, "");
        assert_eq!(n.original_range(0, 0), (0, 0));
        let n = normalize("   \n  ");
        assert_eq!(n.text, "\n");
        assert_eq!(n.original_range(0, 1), (3, 6));
    }
}
