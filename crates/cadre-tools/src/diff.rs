//! A compact line diff for edit results, in Pi's display format: `-12 old`, `+12 new`,
//! ` 12 context`, and ` ... ` where unchanged lines are skipped.
//!
//! Edits are local, so the common prefix and suffix are stripped first and only the changed
//! middle goes through an LCS table. A middle too large for the table (a rewrite of a huge file)
//! is shown as all old lines removed, then all new lines added: still correct, just not minimal.
//!
//! The edit tool knows where its replacements are, so [`replacement_diff`] looks only at the
//! lines around them: the unchanged lines between are counted, never split into a table of
//! lines or copied, and the new file is never built. A one-line edit of a 100 MB file costs the
//! diff a few lines, and distant edits are diffed each on its own, not as one huge middle.

/// The largest LCS table (cells) computed before falling back to remove-all/add-all.
const MAX_TABLE_CELLS: usize = 4_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op<'a> {
    Same(&'a str),
    Removed(&'a str),
    Added(&'a str),
    /// This many unchanged lines, too far from any change to be shown.
    Skip(usize),
}

/// One replacement in the old text: bytes `start..end` become `new_text`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replacement<'a> {
    pub start: usize,
    pub end: usize,
    pub new_text: &'a str,
}

/// The rendered diff and the first changed line (1-based, in the new text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineDiff {
    pub diff: String,
    pub first_changed_line: Option<usize>,
    pub added: usize,
    pub removed: usize,
}

fn split(text: &str) -> Vec<&str> {
    crate::truncate::lines(text).collect()
}

fn operations<'a>(old: &[&'a str], new: &[&'a str]) -> Vec<Op<'a>> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let max_suffix = old.len().min(new.len()) - prefix;
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let a = &old[prefix..old.len() - suffix];
    let b = &new[prefix..new.len() - suffix];

    let mut ops: Vec<Op<'a>> = old[..prefix].iter().map(|l| Op::Same(l)).collect();
    if a.len().saturating_mul(b.len()) <= MAX_TABLE_CELLS {
        ops.extend(lcs_ops(a, b));
    } else {
        ops.extend(a.iter().map(|l| Op::Removed(l)));
        ops.extend(b.iter().map(|l| Op::Added(l)));
    }
    ops.extend(old[old.len() - suffix..].iter().map(|l| Op::Same(l)));
    ops
}

fn lcs_ops<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let (n, m) = (a.len(), b.len());
    let width = m + 1;
    // table[i * width + j] = LCS length of a[i..] and b[j..].
    let mut table = vec![0u32; (n + 1) * width];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[i * width + j] = if a[i] == b[j] {
                table[(i + 1) * width + j + 1] + 1
            } else {
                table[(i + 1) * width + j].max(table[i * width + j + 1])
            };
        }
    }
    let mut ops = Vec::with_capacity(n + m);
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if a[i] == b[j] {
            ops.push(Op::Same(a[i]));
            i += 1;
            j += 1;
        } else if table[(i + 1) * width + j] >= table[i * width + j + 1] {
            ops.push(Op::Removed(a[i]));
            i += 1;
        } else {
            ops.push(Op::Added(b[j]));
            j += 1;
        }
    }
    ops.extend(a[i..].iter().map(|l| Op::Removed(l)));
    ops.extend(b[j..].iter().map(|l| Op::Added(l)));
    ops
}

/// Diff `old` against `new`, showing `context` unchanged lines around each change.
pub fn line_diff(old: &str, new: &str, context: usize) -> LineDiff {
    let old_lines = split(old);
    let new_lines = split(new);
    render(&operations(&old_lines, &new_lines), context)
}

/// The diff of `old` against `old` with `replacements` applied (sorted by `start`, not
/// overlapping), showing `context` unchanged lines around each change — the same diff as
/// [`line_diff`] gives when the changes are close together.
pub fn replacement_diff(old: &str, replacements: &[Replacement<'_>], context: usize) -> LineDiff {
    let regions = regions(old, replacements, context);
    // The new text of each region, owned here so the operations can borrow its lines.
    let new_texts: Vec<String> = regions
        .iter()
        .map(|r| {
            let mut text = String::new();
            let mut cursor = r.start;
            for rep in &replacements[r.replacements.clone()] {
                text.push_str(&old[cursor..rep.start]);
                text.push_str(rep.new_text);
                cursor = rep.end;
            }
            text.push_str(&old[cursor..r.end]);
            text
        })
        .collect();
    let mut ops: Vec<Op<'_>> = Vec::new();
    let mut cursor = 0;
    for (region, new_text) in regions.iter().zip(&new_texts) {
        push_skip(&mut ops, newlines(&old[cursor..region.start]));
        let old_lines = split(&old[region.start..region.end]);
        let new_lines = split(new_text);
        ops.extend(operations(&old_lines, &new_lines));
        cursor = region.end;
    }
    push_skip(&mut ops, crate::truncate::count_lines(&old[cursor..]));
    render(&ops, context)
}

/// Whole lines of the old text around some of the replacements.
struct Region {
    start: usize,
    end: usize,
    replacements: std::ops::Range<usize>,
}

/// The regions to diff: each replacement's lines and `context` lines either side, merged where
/// they touch. Every region starts at a line start and ends after a line break (or at the end
/// of the text) in the old text and — since only whole lines of unchanged text surround the
/// replacements — in the new text too, so its lines are the file's lines.
fn regions(old: &str, replacements: &[Replacement<'_>], context: usize) -> Vec<Region> {
    let mut regions: Vec<Region> = Vec::new();
    for (index, rep) in replacements.iter().enumerate() {
        let mut start = line_start(old, rep.start);
        for _ in 0..context {
            if start == 0 {
                break;
            }
            start = line_start(old, start - 1);
        }
        // The line holding `end` is included even when `end` starts it: the text after a
        // replacement must reach a line break for the new lines to be whole.
        let mut end = after_line(old, rep.end);
        for _ in 0..context {
            end = after_line(old, end);
        }
        match regions.last_mut() {
            Some(last) if start <= last.end => {
                last.end = last.end.max(end);
                last.replacements.end = index + 1;
            }
            _ => regions.push(Region {
                start,
                end,
                replacements: index..index + 1,
            }),
        }
    }
    regions
}

/// The start of the line holding byte `at`.
fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// The position after the line break at or after `at`, or the end of the text.
fn after_line(text: &str, at: usize) -> usize {
    text[at..].find('\n').map_or(text.len(), |i| at + i + 1)
}

fn newlines(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count()
}

fn push_skip(ops: &mut Vec<Op<'_>>, lines: usize) {
    if lines > 0 {
        ops.push(Op::Skip(lines));
    }
}

fn lines_of(op: &Op<'_>) -> usize {
    match op {
        Op::Skip(n) => *n,
        _ => 1,
    }
}

/// Render operations in Pi's format.
fn render(ops: &[Op<'_>], context: usize) -> LineDiff {
    let (old_total, new_total) = ops.iter().fold((0, 0), |(o, n), op| match op {
        Op::Removed(_) => (o + 1, n),
        Op::Added(_) => (o, n + 1),
        _ => (o + lines_of(op), n + lines_of(op)),
    });
    let width = old_total.max(new_total).max(1).to_string().len();
    let blank = " ".repeat(width);

    let mut out: Vec<String> = Vec::new();
    let (mut old_no, mut new_no) = (1usize, 1usize);
    let mut first_changed_line = None;
    let (mut added, mut removed) = (0, 0);
    let mut i = 0;
    while i < ops.len() {
        match ops[i] {
            Op::Removed(line) => {
                first_changed_line.get_or_insert(new_no);
                out.push(format!("-{old_no:>width$} {line}"));
                old_no += 1;
                removed += 1;
                i += 1;
            }
            Op::Added(line) => {
                first_changed_line.get_or_insert(new_no);
                out.push(format!("+{new_no:>width$} {line}"));
                new_no += 1;
                added += 1;
                i += 1;
            }
            Op::Same(_) | Op::Skip(_) => {
                let run_end = ops[i..]
                    .iter()
                    .position(|op| !matches!(op, Op::Same(_) | Op::Skip(_)))
                    .map_or(ops.len(), |p| i + p);
                let run = &ops[i..run_end];
                let total: usize = run.iter().map(lines_of).sum();
                // Only lines held as text can be shown; a skip always lies more than `context`
                // lines from any change, so this limits nothing in practice.
                let is_text = |op: &&Op<'_>| matches!(op, Op::Same(_));
                let leading = run.iter().take_while(is_text).count();
                let trailing = run.iter().rev().take_while(is_text).count();
                let before_change = run_end < ops.len();
                let after_change = i > 0;
                // Which lines of the run to show: up to `context` after the previous change and
                // before the next one; the rest collapses into `...`.
                let head = if after_change {
                    context.min(leading)
                } else {
                    0
                };
                let tail = if before_change {
                    context.min(total - head).min(trailing)
                } else {
                    0
                };
                let skipped = total - head - tail;
                for op in &run[..head] {
                    if let Op::Same(line) = op {
                        out.push(format!(" {old_no:>width$} {line}"));
                    }
                    old_no += 1;
                    new_no += 1;
                }
                if skipped > 0 && (after_change || before_change) {
                    out.push(format!(" {blank} ..."));
                }
                old_no += skipped;
                new_no += skipped;
                for op in &run[run.len() - tail..] {
                    if let Op::Same(line) = op {
                        out.push(format!(" {old_no:>width$} {line}"));
                    }
                    old_no += 1;
                    new_no += 1;
                }
                i = run_end;
            }
        }
    }
    LineDiff {
        diff: out.join("\n"),
        first_changed_line,
        added,
        removed,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn single_change_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let new = "a\nb\nc\nd\ne\nF\ng\nh\ni\nj\n";
        let d = line_diff(old, new, 2);
        assert_eq!(
            d.diff,
            "    ...\n  4 d\n  5 e\n- 6 f\n+ 6 F\n  7 g\n  8 h\n    ..."
        );
        assert_eq!(d.first_changed_line, Some(6));
        assert_eq!((d.added, d.removed), (1, 1));
    }

    #[test]
    fn insertion_and_deletion() {
        let d = line_diff("a\nb\n", "a\nx\nb\n", 4);
        assert_eq!(d.diff, " 1 a\n+2 x\n 2 b");
        assert_eq!(d.first_changed_line, Some(2));
        let d = line_diff("a\nx\nb\n", "a\nb\n", 4);
        assert_eq!(d.diff, " 1 a\n-2 x\n 3 b");
        assert_eq!(d.removed, 1);
    }

    #[test]
    fn identical_and_empty() {
        let d = line_diff("a\nb", "a\nb", 3);
        assert_eq!(d.diff, "");
        assert_eq!(d.first_changed_line, None);
        let d = line_diff("", "new", 3);
        assert_eq!(d.diff, "+1 new");
        let d = line_diff("old", "", 3);
        assert_eq!(d.diff, "-1 old");
    }

    #[test]
    fn two_distant_changes_collapse_the_middle() {
        let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let new: String = (1..=20)
            .map(|i| match i {
                2 => "two\n".to_string(),
                19 => "nineteen\n".to_string(),
                _ => format!("{i}\n"),
            })
            .collect();
        let d = line_diff(&old, &new, 1);
        let lines: Vec<&str> = d.diff.lines().collect();
        assert!(lines.contains(&"- 2 2"), "{}", d.diff);
        assert!(lines.contains(&"+ 2 two"));
        assert!(lines.contains(&"-19 19"));
        assert!(lines.contains(&"+19 nineteen"));
        assert!(lines.contains(&"  3 3"));
        assert!(lines.iter().any(|l| l.trim() == "..."));
        assert!(!lines.contains(&" 10 10"));
    }

    #[test]
    fn huge_middle_falls_back_without_table() {
        let old: String = (0..3000).map(|i| format!("o{i}\n")).collect();
        let new: String = (0..3000).map(|i| format!("n{i}\n")).collect();
        let d = line_diff(&old, &new, 2);
        assert_eq!((d.added, d.removed), (3000, 3000));
    }

    /// A small deterministic generator for the property tests below.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n.max(1)
        }

        fn text(&mut self, max_len: usize) -> String {
            let len = self.below(max_len + 1);
            (0..len)
                .map(|_| ["a", "b", "\n", "\n", "é"][self.below(5)])
                .collect()
        }
    }

    /// Apply operations to the old text's lines: what they say the new lines are.
    fn replay(old: &str, ops: &[Op<'_>]) -> Vec<String> {
        let old_lines = split(old);
        let mut at = 0;
        let mut out = Vec::new();
        for op in ops {
            match op {
                Op::Same(l) => {
                    assert_eq!(old_lines[at], *l);
                    out.push(l.to_string());
                    at += 1;
                }
                Op::Skip(n) => {
                    out.extend(old_lines[at..at + n].iter().map(|l| l.to_string()));
                    at += n;
                }
                Op::Removed(l) => {
                    assert_eq!(old_lines[at], *l);
                    at += 1;
                }
                Op::Added(l) => out.push(l.to_string()),
            }
        }
        assert_eq!(at, old_lines.len(), "every old line accounted for");
        out
    }

    /// The operations `replacement_diff` renders, rebuilt the same way for inspection.
    fn replacement_ops<'a>(
        old: &'a str,
        reps: &[Replacement<'_>],
        context: usize,
        new_texts: &'a mut Vec<String>,
    ) -> Vec<Op<'a>> {
        let regions = regions(old, reps, context);
        for r in &regions {
            let mut text = String::new();
            let mut cursor = r.start;
            for rep in &reps[r.replacements.clone()] {
                text.push_str(&old[cursor..rep.start]);
                text.push_str(rep.new_text);
                cursor = rep.end;
            }
            text.push_str(&old[cursor..r.end]);
            new_texts.push(text);
        }
        let mut ops = Vec::new();
        let mut cursor = 0;
        for (r, text) in regions.iter().zip(new_texts.iter()) {
            push_skip(&mut ops, newlines(&old[cursor..r.start]));
            ops.extend(operations(&split(&old[r.start..r.end]), &split(text)));
            cursor = r.end;
        }
        push_skip(&mut ops, crate::truncate::count_lines(&old[cursor..]));
        ops
    }

    fn apply(old: &str, reps: &[Replacement<'_>]) -> String {
        let mut out = String::new();
        let mut cursor = 0;
        for r in reps {
            out.push_str(&old[cursor..r.start]);
            out.push_str(r.new_text);
            cursor = r.end;
        }
        out.push_str(&old[cursor..]);
        out
    }

    /// Random texts and replacements: the region operations always rebuild the new text, a
    /// single replacement costs as many lines as the whole-text diff, and with enough context
    /// to cover the text the two diffs are the same.
    #[test]
    fn replacement_diff_agrees_with_the_whole_text_diff() {
        let mut rng = Lcg(7);
        for _ in 0..4000 {
            let old = rng.text(24);
            let count = 1 + rng.below(3);
            let mut cuts: Vec<usize> = (0..count * 2)
                .map(|_| rng.below(old.len() + 1))
                .filter(|&c| old.is_char_boundary(c))
                .collect();
            cuts.sort();
            let new_texts: Vec<String> = (0..cuts.len() / 2).map(|_| rng.text(6)).collect();
            let reps: Vec<Replacement<'_>> = cuts
                .chunks_exact(2)
                .zip(&new_texts)
                .filter(|(c, _)| c[0] < c[1])
                .map(|(c, t)| Replacement {
                    start: c[0],
                    end: c[1],
                    new_text: t,
                })
                .collect();
            if reps.is_empty() {
                continue;
            }
            let new = apply(&old, &reps);
            for context in 0..4 {
                let mut texts = Vec::new();
                let ops = replacement_ops(&old, &reps, context, &mut texts);
                assert_eq!(
                    replay(&old, &ops),
                    split(&new),
                    "{old:?} {reps:?} {context}"
                );
                let local = replacement_diff(&old, &reps, context);
                let whole = line_diff(&old, &new, context);
                if reps.len() == 1 {
                    assert_eq!(
                        (local.added, local.removed),
                        (whole.added, whole.removed),
                        "{old:?} {reps:?} {context}"
                    );
                }
            }
            let wide = old.len() + 8;
            assert_eq!(
                replacement_diff(&old, &reps, wide),
                line_diff(&old, &new, wide),
                "{old:?} {reps:?}"
            );
        }
    }

    #[test]
    fn distant_replacements_in_a_large_text_are_diffed_locally() {
        let old: String = (1..=100_000).map(|i| format!("line {i}\n")).collect();
        let at = |line: usize| old.find(&format!("\nline {line}\n")).unwrap() + 1;
        let reps = [
            Replacement {
                start: at(10),
                end: at(10) + "line 10".len(),
                new_text: "ten",
            },
            Replacement {
                start: at(90_000),
                end: at(90_001),
                new_text: "",
            },
        ];
        let d = replacement_diff(&old, &reps, 2);
        let expected = [
            "        ...",
            "      8 line 8",
            "      9 line 9",
            "-    10 line 10",
            "+    10 ten",
            "     11 line 11",
            "     12 line 12",
            "        ...",
            "  89998 line 89998",
            "  89999 line 89999",
            "- 90000 line 90000",
            "  90001 line 90001",
            "  90002 line 90002",
            "        ...",
        ];
        assert_eq!(d.diff, expected.join("\n"));
        assert_eq!((d.added, d.removed), (1, 2));
        assert_eq!(d.first_changed_line, Some(10));
        // The whole-text diff has one middle from line 10 to line 90000, too large for the
        // table: it would show every line in between as removed and added again.
        let new = apply(&old, &reps);
        assert!(line_diff(&old, &new, 2).added > 89_000);
    }

    #[test]
    fn lcs_is_minimal_on_small_inputs() {
        let d = line_diff("a\nb\nc\nd\n", "b\nc\nd\ne\n", 0);
        assert_eq!((d.added, d.removed), (1, 1));
    }
}
