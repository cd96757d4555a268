//! Forgiving text matching for edit, as Pi does it: when an `oldText` is not found exactly, it
//! is looked up again with trailing whitespace stripped from every line and typographic quotes,
//! dashes and special spaces folded to ASCII — the usual ways a model's copy of a file drifts.
//!
//! Unlike Pi, which then rewrites the whole file in normalised form, a match in the normalised
//! text is mapped back to its range in the original, so only the matched region is replaced and
//! the rest of the file is left exactly as it was. The mapping is recomputed by scanning the
//! original again rather than stored per byte: a table of offsets would take eight bytes for
//! every byte of the file (800 MB for a 100 MB file).

fn fold(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// Normalise `text` (LF line endings expected): trailing whitespace stripped from every line,
/// typography folded to ASCII.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
        }
        out.extend(line.trim_end().chars().map(fold));
    }
    out
}

/// The original byte range of the range `start..end` of `normalize(original)` (both on char
/// boundaries). A range ending where stripped trailing whitespace used to be takes that
/// whitespace too.
pub fn original_range(original: &str, start: usize, end: usize) -> (usize, usize) {
    let targets = [start, end.max(start)];
    // Where each target maps; a target at the very end maps to the end of the original.
    let mut found = [original.len(); 2];
    let mut next = 0;
    let mut normalized_len = 0usize;
    let mut line_start = 0usize;
    let mut hit = |at_normalized: usize, at_original: usize, next: &mut usize| {
        while *next < 2 && targets[*next] == at_normalized {
            found[*next] = at_original;
            *next += 1;
        }
    };
    for (index, line) in original.split('\n').enumerate() {
        if index > 0 {
            // The line break in front of this line, at `line_start - 1` in the original.
            hit(normalized_len, line_start - 1, &mut next);
            normalized_len += 1;
        }
        for (offset, c) in line.trim_end().char_indices() {
            hit(normalized_len, line_start + offset, &mut next);
            normalized_len += fold(c).len_utf8();
        }
        if next == 2 {
            break;
        }
        line_start += line.len() + 1;
    }
    (found[0], found[1])
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn folds_and_strips() {
        let n = normalize("it\u{2019}s  \n\u{201C}a\u{201D} \u{2014} b\u{00A0}c\t\n");
        assert_eq!(n, "it's\n\"a\" - b c\n");
    }

    #[test]
    fn offsets_map_back() {
        let original = "x = \u{2018}q\u{2019};   \ny";
        let n = normalize(original);
        assert_eq!(n, "x = 'q';\ny");
        // "'q';" in normalised text.
        let start = n.find("'q'").unwrap();
        let (a, b) = original_range(original, start, start + 3);
        assert_eq!(&original[a..b], "\u{2018}q\u{2019}");
        // Through the end of the line: the stripped spaces go with the match.
        let (a, b) = original_range(original, start, start + 4);
        assert_eq!(&original[a..b], "\u{2018}q\u{2019};   ");
        let end_of_line = n.find('\n').unwrap();
        let (_, b) = original_range(original, end_of_line, end_of_line);
        assert_eq!(&original[b..], "\ny");
        let (a, b) = original_range(original, 0, n.len());
        assert_eq!(&original[a..b], original);
    }

    #[test]
    fn empty_and_blank() {
        assert_eq!(normalize(""), "");
        assert_eq!(original_range("", 0, 0), (0, 0));
        let original = "   \n  ";
        assert_eq!(normalize(original), "\n");
        assert_eq!(original_range(original, 0, 1), (3, 6));
    }

    /// The scan agrees with a table of every byte's origin, built the obvious way.
    #[test]
    fn scan_matches_a_full_origin_table() {
        let original = "a \u{201C}b\u{201D}\t\n\n  x\u{2014}y  \n\u{00A0}z\u{2019}\n  ";
        let mut origin = Vec::new();
        let mut line_start = 0;
        for (index, line) in original.split('\n').enumerate() {
            if index > 0 {
                origin.push(line_start - 1);
            }
            for (offset, c) in line.trim_end().char_indices() {
                origin.extend(std::iter::repeat_n(line_start + offset, fold(c).len_utf8()));
            }
            line_start += line.len() + 1;
        }
        origin.push(original.len());
        let n = normalize(original);
        assert_eq!(origin.len(), n.len() + 1);
        let bounds: Vec<usize> = (0..=n.len()).filter(|&i| n.is_char_boundary(i)).collect();
        for &start in &bounds {
            for &end in bounds.iter().filter(|&&e| e >= start) {
                assert_eq!(
                    original_range(original, start, end),
                    (origin[start], origin[end]),
                    "{start}..{end}"
                );
            }
        }
    }
}
