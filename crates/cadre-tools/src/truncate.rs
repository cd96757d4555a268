//! Output truncation shared by the built-in tools.
//!
//! Two independent limits apply to every result, whichever is hit first: a line limit and a byte
//! limit. Head truncation (read, grep, find, ls) keeps the beginning and never returns a partial
//! line; tail truncation (bash) keeps the end and only cuts a line when the last line alone is
//! larger than the byte limit. Every cut lands on a UTF-8 character boundary. The functions are
//! pure and report what they cut so callers can tell the model how to get the rest.

use std::borrow::Cow;

use serde::Serialize;

/// Pi's line limit per tool result.
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Pi's byte limit per tool result (50 KiB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Longest grep line shown, in characters.
pub const GREP_MAX_LINE_CHARS: usize = 500;

/// The two limits of one truncation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl Limits {
    /// Only the byte limit (for tools that already cap their entries, like grep and ls).
    pub fn bytes_only(max_bytes: usize) -> Self {
        Limits {
            max_lines: usize::MAX,
            max_bytes,
        }
    }
}

/// Which limit caused the cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TruncatedBy {
    Lines,
    Bytes,
}

/// The result of a truncation. Serialises (without the content) in Pi's `truncation` details
/// shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    #[serde(skip)]
    pub content: String,
    pub truncated: bool,
    pub truncated_by: Option<TruncatedBy>,
    pub total_lines: usize,
    pub total_bytes: usize,
    pub output_lines: usize,
    pub output_bytes: usize,
    /// Tail truncation only: the one line kept was itself cut (it exceeds the byte limit).
    pub last_line_partial: bool,
    /// Head truncation only: the first line alone exceeds the byte limit, nothing was kept.
    pub first_line_exceeds_limit: bool,
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Truncation {
    fn untouched(content: &str, total_lines: usize, limits: Limits) -> Self {
        Truncation {
            content: content.to_string(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes: content.len(),
            output_lines: total_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines: limits.max_lines,
            max_bytes: limits.max_bytes,
        }
    }
}

/// The lines of `content`: split on `\n`, where a final `\n` ends the last line rather than
/// starting an empty one, and empty content has no lines.
pub fn lines(content: &str) -> impl Iterator<Item = &str> {
    let body = content.strip_suffix('\n').unwrap_or(content);
    let empty = content.is_empty();
    body.split('\n').filter(move |_| !empty)
}

/// Number of lines by the same rule as [`lines`].
pub fn count_lines(content: &str) -> usize {
    if content.is_empty() {
        return 0;
    }
    let newlines = content.bytes().filter(|&b| b == b'\n').count();
    if content.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

/// Collects lines from the start until a limit would be exceeded. Used directly when lines are
/// streamed (read) and by [`truncate_head`].
#[derive(Debug)]
pub struct HeadCollector {
    limits: Limits,
    out: String,
    lines: usize,
    stopped: Option<TruncatedBy>,
    first_line_exceeds: bool,
}

impl HeadCollector {
    pub fn new(limits: Limits) -> Self {
        HeadCollector {
            limits,
            out: String::new(),
            lines: 0,
            stopped: None,
            first_line_exceeds: false,
        }
    }

    /// Offer the next line (without its terminator). Returns false, and keeps refusing, once a
    /// limit stops the collection; the refused line is not part of the output.
    pub fn push(&mut self, line: &str) -> bool {
        if self.stopped.is_some() {
            return false;
        }
        if self.lines >= self.limits.max_lines {
            self.stopped = Some(TruncatedBy::Lines);
            return false;
        }
        let separator = usize::from(self.lines > 0);
        if self.out.len() + separator + line.len() > self.limits.max_bytes {
            self.stopped = Some(TruncatedBy::Bytes);
            self.first_line_exceeds = self.lines == 0;
            return false;
        }
        if separator == 1 {
            self.out.push('\n');
        }
        self.out.push_str(line);
        self.lines += 1;
        true
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped.is_some()
    }

    /// Finish, given the totals of everything that was offered or would have been.
    pub fn finish(self, total_lines: usize, total_bytes: usize) -> Truncation {
        let output_bytes = self.out.len();
        Truncation {
            content: self.out,
            truncated: self.stopped.is_some(),
            truncated_by: self.stopped,
            total_lines,
            total_bytes,
            output_lines: self.lines,
            output_bytes,
            last_line_partial: false,
            first_line_exceeds_limit: self.first_line_exceeds,
            max_lines: self.limits.max_lines,
            max_bytes: self.limits.max_bytes,
        }
    }
}

/// Keep the first lines of `content` within the limits. Never returns a partial line: when the
/// first line alone exceeds the byte limit the content is empty and `first_line_exceeds_limit`
/// is set.
pub fn truncate_head(content: &str, limits: Limits) -> Truncation {
    let total_lines = count_lines(content);
    if total_lines <= limits.max_lines && content.len() <= limits.max_bytes {
        return Truncation::untouched(content, total_lines, limits);
    }
    let mut collector = HeadCollector::new(limits);
    for line in lines(content) {
        if !collector.push(line) {
            break;
        }
    }
    collector.finish(total_lines, content.len())
}

/// Keep the last lines of `content` within the limits. When the last line alone exceeds the
/// byte limit, its end is kept and `last_line_partial` is set.
pub fn truncate_tail(content: &str, limits: Limits) -> Truncation {
    let total_lines = count_lines(content);
    if total_lines <= limits.max_lines && content.len() <= limits.max_bytes {
        return Truncation::untouched(content, total_lines, limits);
    }
    let all: Vec<&str> = lines(content).collect();
    let mut kept = 0usize;
    let mut bytes = 0usize;
    let mut truncated_by = TruncatedBy::Lines;
    let mut partial: Option<&str> = None;
    for line in all.iter().rev() {
        if kept >= limits.max_lines {
            break;
        }
        let separator = usize::from(kept > 0);
        if bytes + separator + line.len() > limits.max_bytes {
            truncated_by = TruncatedBy::Bytes;
            if kept == 0 {
                partial = Some(tail_on_char_boundary(line, limits.max_bytes));
            }
            break;
        }
        bytes += separator + line.len();
        kept += 1;
    }
    let (content_out, output_lines, last_line_partial) = match partial {
        Some(piece) => (piece.to_string(), usize::from(!piece.is_empty()), true),
        None => (all[all.len() - kept..].join("\n"), kept, false),
    };
    Truncation {
        output_bytes: content_out.len(),
        content: content_out,
        truncated: true,
        truncated_by: Some(truncated_by),
        total_lines,
        total_bytes: content.len(),
        output_lines,
        last_line_partial,
        first_line_exceeds_limit: false,
        max_lines: limits.max_lines,
        max_bytes: limits.max_bytes,
    }
}

/// The longest suffix of `s` of at most `max_bytes` bytes that starts on a character boundary.
pub fn tail_on_char_boundary(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut start = s.len() - max_bytes;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// The longest prefix of `s` of at most `max_bytes` bytes that ends on a character boundary.
pub fn head_on_char_boundary(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut end = max_bytes;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Cut one line to `max_chars` characters, marking the cut like Pi (`... [truncated]`).
/// Returns the line and whether it was cut.
pub fn truncate_line(line: &str, max_chars: usize) -> (Cow<'_, str>, bool) {
    match line.char_indices().nth(max_chars) {
        None => (Cow::Borrowed(line), false),
        Some((cut, _)) => (Cow::Owned(format!("{}... [truncated]", &line[..cut])), true),
    }
}

/// Human-readable size as Pi prints it: `512B`, `1.5KB`, `2.0MB`.
pub fn format_size(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / KIB)
    } else {
        format!("{:.1}MB", bytes as f64 / (KIB * KIB))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn limits(max_lines: usize, max_bytes: usize) -> Limits {
        Limits {
            max_lines,
            max_bytes,
        }
    }

    #[test]
    fn line_splitting_rules() {
        assert_eq!(lines("").count(), 0);
        assert_eq!(lines("a").collect::<Vec<_>>(), ["a"]);
        assert_eq!(lines("a\n").collect::<Vec<_>>(), ["a"]);
        assert_eq!(lines("a\n\n").collect::<Vec<_>>(), ["a", ""]);
        assert_eq!(lines("\n").collect::<Vec<_>>(), [""]);
        assert_eq!(lines("a\nb").collect::<Vec<_>>(), ["a", "b"]);
        for s in ["", "a", "a\n", "a\n\n", "\n", "a\nb", "\n\n\n", "x\ny\nz\n"] {
            assert_eq!(count_lines(s), lines(s).count(), "{s:?}");
        }
    }

    #[test]
    fn head_within_limits_is_untouched() {
        let t = truncate_head("a\nb\n", limits(2, 100));
        assert!(!t.truncated);
        assert_eq!(t.content, "a\nb\n");
        assert_eq!(t.total_lines, 2);
        assert_eq!(t.output_lines, 2);
        assert_eq!(t.truncated_by, None);
        let t = truncate_head("", Limits::default());
        assert!(!t.truncated);
        assert_eq!(t.total_lines, 0);
    }

    #[test]
    fn head_cuts_by_lines() {
        let t = truncate_head("1\n2\n3\n4\n", limits(2, 100));
        assert!(t.truncated);
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!(t.content, "1\n2");
        assert_eq!(t.output_lines, 2);
        assert_eq!(t.total_lines, 4);
        assert_eq!(t.total_bytes, 8);
        assert_eq!(t.output_bytes, 3);
    }

    #[test]
    fn head_cuts_by_bytes_on_whole_lines() {
        // "aaa\nbbb" is 7 bytes; the limit of 8 cannot take "\nccc".
        let t = truncate_head("aaa\nbbb\nccc", limits(10, 8));
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
        assert_eq!(t.content, "aaa\nbbb");
        assert_eq!(t.output_lines, 2);
        // Exactly at the limit fits.
        let t = truncate_head("aaa\nbbb\nccc", limits(10, 7));
        assert_eq!(t.content, "aaa\nbbb");
        let t = truncate_head("aaa\nbbb\nccc", limits(10, 6));
        assert_eq!(t.content, "aaa");
    }

    #[test]
    fn head_first_line_too_long() {
        let t = truncate_head("abcdefgh\nb", limits(10, 4));
        assert!(t.truncated);
        assert!(t.first_line_exceeds_limit);
        assert_eq!(t.content, "");
        assert_eq!(t.output_lines, 0);
    }

    #[test]
    fn head_line_limit_wins_when_hit_first() {
        let t = truncate_head("a\nb\nc", limits(1, 2));
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!(t.content, "a");
    }

    #[test]
    fn head_collector_keeps_refusing() {
        let mut c = HeadCollector::new(limits(1, 100));
        assert!(c.push("a"));
        assert!(!c.push("b"));
        assert!(c.is_stopped());
        assert!(!c.push("c"));
        let t = c.finish(3, 5);
        assert_eq!(t.content, "a");
        assert_eq!(t.total_lines, 3);
    }

    #[test]
    fn head_multibyte_lines_are_never_split() {
        let t = truncate_head("ééé\nééé", limits(10, 8));
        assert_eq!(t.content, "ééé");
        assert!(std::str::from_utf8(t.content.as_bytes()).is_ok());
    }

    #[test]
    fn tail_within_limits_is_untouched() {
        let t = truncate_tail("x\ny", limits(5, 50));
        assert!(!t.truncated);
        assert_eq!(t.content, "x\ny");
    }

    #[test]
    fn tail_cuts_by_lines() {
        let t = truncate_tail("1\n2\n3\n4\n", limits(2, 100));
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!(t.content, "3\n4");
        assert_eq!(t.output_lines, 2);
        assert_eq!(t.total_lines, 4);
        assert!(!t.last_line_partial);
    }

    #[test]
    fn tail_cuts_by_bytes() {
        let t = truncate_tail("aaa\nbbb\nccc", limits(10, 8));
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
        assert_eq!(t.content, "bbb\nccc");
        assert_eq!(t.output_lines, 2);
    }

    #[test]
    fn tail_partial_last_line_on_char_boundary() {
        let t = truncate_tail("first\n€€€€", limits(10, 7));
        assert!(t.last_line_partial);
        // 7 bytes back from the end lands inside a 3-byte char: only two whole € fit.
        assert_eq!(t.content, "€€");
        assert_eq!(t.output_lines, 1);
        assert_eq!(t.output_bytes, 6);
    }

    #[test]
    fn tail_partial_with_tiny_limit_can_be_empty() {
        let t = truncate_tail("€", limits(10, 2));
        assert!(t.last_line_partial);
        assert_eq!(t.content, "");
        assert_eq!(t.output_lines, 0);
    }

    #[test]
    fn char_boundary_helpers() {
        assert_eq!(tail_on_char_boundary("héllo", 10), "héllo");
        assert_eq!(tail_on_char_boundary("héllo", 4), "llo");
        assert_eq!(tail_on_char_boundary("héllo", 5), "éllo");
        assert_eq!(head_on_char_boundary("héllo", 2), "h");
        assert_eq!(head_on_char_boundary("héllo", 3), "hé");
        assert_eq!(head_on_char_boundary("", 3), "");
        assert_eq!(tail_on_char_boundary("abc", 0), "");
    }

    #[test]
    fn line_truncation_counts_chars() {
        assert_eq!(truncate_line("abc", 3), (Cow::Borrowed("abc"), false));
        let (t, cut) = truncate_line("abcd", 3);
        assert!(cut);
        assert_eq!(t, "abc... [truncated]");
        let (t, cut) = truncate_line("ééééé", 2);
        assert!(cut);
        assert_eq!(t, "éé... [truncated]");
        assert_eq!(truncate_line("", 0), (Cow::Borrowed(""), false));
    }

    #[test]
    fn sizes_format_like_pi() {
        assert_eq!(format_size(0), "0B");
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(1024), "1.0KB");
        assert_eq!(format_size(50 * 1024), "50.0KB");
        assert_eq!(format_size(1536), "1.5KB");
        assert_eq!(format_size(3 * 1024 * 1024), "3.0MB");
    }

    #[test]
    fn serialises_like_pi_details() {
        let t = truncate_head("1\n2\n3", limits(1, 100));
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["truncatedBy"], "lines");
        assert_eq!(v["totalLines"], 3);
        assert_eq!(v["outputLines"], 1);
        assert!(v.get("content").is_none());
    }

    /// Every cut of every small input keeps the invariants: output within limits, whole lines
    /// (head) or a suffix (tail), valid UTF-8, and the counts add up.
    #[test]
    fn exhaustive_invariants() {
        let alphabet = ["a", "é", "\n", "€"];
        let mut inputs = vec![String::new()];
        for _ in 0..5 {
            let mut next = Vec::new();
            for s in &inputs {
                for c in alphabet {
                    next.push(format!("{s}{c}"));
                }
            }
            inputs.extend(next);
            inputs.sort();
            inputs.dedup();
        }
        for input in &inputs {
            for max_lines in 0..5 {
                for max_bytes in 0..12 {
                    let l = limits(max_lines, max_bytes);
                    let h = truncate_head(input, l);
                    assert_eq!(h.output_bytes, h.content.len());
                    assert_eq!(h.total_lines, count_lines(input));
                    if h.truncated {
                        assert!(h.content.len() <= max_bytes, "{input:?} {l:?}");
                        assert!(h.output_lines <= max_lines);
                        assert!(input.starts_with(&h.content));
                        if h.output_lines > 0 {
                            assert_eq!(h.content.split('\n').count(), h.output_lines);
                        } else {
                            assert!(h.content.is_empty());
                        }
                    } else {
                        // All lines fit once the final newline is dropped.
                        let body = input.strip_suffix('\n').unwrap_or(input);
                        assert!(h.content == *input || h.content == body, "{input:?} {l:?}");
                    }
                    let t = truncate_tail(input, l);
                    assert_eq!(t.output_bytes, t.content.len());
                    if t.truncated {
                        assert!(t.content.len() <= max_bytes, "{input:?} {l:?}");
                        assert!(t.output_lines <= max_lines.max(1));
                        let body = input.strip_suffix('\n').unwrap_or(input);
                        assert!(body.ends_with(&t.content), "{input:?} {l:?} {t:?}");
                    } else {
                        assert_eq!(&t.content, input);
                    }
                }
            }
        }
    }
}
