//! A compact line diff for edit results, in Pi's display format: `-12 old`, `+12 new`,
//! ` 12 context`, and ` ... ` where unchanged lines are skipped.
//!
//! Edits are local, so the common prefix and suffix are stripped first and only the changed
//! middle goes through an LCS table. A middle too large for the table (a rewrite of a huge file)
//! is shown as all old lines removed, then all new lines added: still correct, just not minimal.

/// The largest LCS table (cells) computed before falling back to remove-all/add-all.
const MAX_TABLE_CELLS: usize = 4_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op<'a> {
    Same(&'a str),
    Removed(&'a str),
    Added(&'a str),
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
    let ops = operations(&old_lines, &new_lines);
    let width = old_lines
        .len()
        .max(new_lines.len())
        .max(1)
        .to_string()
        .len();
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
            Op::Same(_) => {
                let run_end = ops[i..]
                    .iter()
                    .position(|op| !matches!(op, Op::Same(_)))
                    .map_or(ops.len(), |p| i + p);
                let run: Vec<&str> = ops[i..run_end]
                    .iter()
                    .map(|op| match op {
                        Op::Same(l) | Op::Removed(l) | Op::Added(l) => *l,
                    })
                    .collect();
                let before_change = run_end < ops.len();
                let after_change = i > 0;
                // Which lines of the run to show: up to `context` after the previous change and
                // before the next one; the rest collapses into `...`.
                let head = if after_change {
                    context.min(run.len())
                } else {
                    0
                };
                let tail = if before_change {
                    context.min(run.len() - head)
                } else {
                    0
                };
                let skipped = run.len() - head - tail;
                for line in &run[..head] {
                    out.push(format!(" {old_no:>width$} {line}"));
                    old_no += 1;
                    new_no += 1;
                }
                if skipped > 0 && (after_change || before_change) {
                    out.push(format!(" {blank} ..."));
                }
                old_no += skipped;
                new_no += skipped;
                for line in &run[run.len() - tail..] {
                    out.push(format!(" {old_no:>width$} {line}"));
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

    #[test]
    fn lcs_is_minimal_on_small_inputs() {
        let d = line_diff("a\nb\nc\nd\n", "b\nc\nd\ne\n", 0);
        assert_eq!((d.added, d.removed), (1, 1));
    }
}
