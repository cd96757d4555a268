//! Small text helpers shared by the management commands: aligned tables, ages, token and cost
//! figures, short ids and paths. All pure.

use std::path::Path;
use std::time::{Duration, SystemTime};

use cadre_core::budget::text::{short_tokens, usd};
use cadre_protocol::{BudgetState, TaskRecord, TaskStatus};

/// Columns aligned to their widest cell, two spaces apart; the last column is not padded so
/// lines carry no trailing spaces. Widths count characters, not bytes.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let columns = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(columns) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate().take(columns) {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            if i + 1 < columns {
                let pad = widths[i].saturating_sub(cell.chars().count());
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// "just now", "42s ago", "3m ago", "5h ago", "2d ago"; "?" for an unreadable timestamp.
pub fn age(timestamp: &str, now: SystemTime) -> String {
    let Ok(at) = humantime::parse_rfc3339_weak(timestamp) else {
        return "?".to_string();
    };
    match now.duration_since(at) {
        Ok(elapsed) => ago(elapsed),
        // A clock that went backwards, or a record from a machine ahead of this one.
        Err(_) => "just now".to_string(),
    }
}

fn ago(elapsed: Duration) -> String {
    let s = elapsed.as_secs();
    match s {
        0..=4 => "just now".to_string(),
        5..=59 => format!("{s}s ago"),
        60..=3_599 => format!("{}m ago", s / 60),
        3_600..=86_399 => format!("{}h ago", s / 3_600),
        _ => format!("{}d ago", s / 86_400),
    }
}

/// A token count for a narrow column: 950, 12.3k, 4.1M.
pub fn tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => short(n as f64 / 1_000.0, "k"),
        _ => short(n as f64 / 1_000_000.0, "M"),
    }
}

fn short(value: f64, unit: &str) -> String {
    if value < 100.0 {
        format!("{value:.1}{unit}")
    } else {
        format!("{value:.0}{unit}")
    }
}

/// A cost in dollars; "-" when nothing was charged (or the model has no price).
pub fn cost(dollars: f64) -> String {
    // NaN and negative amounts are as good as nothing.
    if dollars.is_nan() || dollars <= 0.0 {
        "-".to_string()
    } else if dollars < 0.01 {
        format!("${dollars:.4}")
    } else {
        format!("${dollars:.2}")
    }
}

/// A TOKENS cell: the tokens used, or under a token cap what the task (and its subtree) spent
/// of it: `41.2k/50k`.
pub fn tokens_cell(budget: Option<&BudgetState>, used: u64) -> String {
    match budget.and_then(|b| Some((b.spent.tokens, b.cap.max_tokens?))) {
        Some((spent, cap)) => format!("{}/{}", short_tokens(spent), short_tokens(cap)),
        None => tokens(used),
    }
}

/// A COST cell: the cost charged, or under a cost cap what the task (and its subtree) spent of
/// it: `$0.41/$0.50`.
pub fn cost_cell(budget: Option<&BudgetState>, dollars: f64) -> String {
    match budget.and_then(|b| Some((b.spent.cost_usd, b.cap.max_cost_usd?))) {
        Some((spent, cap)) => format!("{}/{}", usd(spent), usd(cap)),
        None => cost(dollars),
    }
}

/// The first line of `text`, whitespace collapsed, at most `max` characters (with "…" when cut).
/// Most subjects named in one grouped line; the rest are counted.
const MAX_GROUP_NAMES: usize = 8;

/// `(subject, message)` pairs with each message said once, in first-seen order: `subject:
/// message` when one subject has it, `message — N agent types: a, b, … and K more` when several
/// do. A collection of a hundred role files that all name `model: sonnet` gives one line, not a
/// hundred.
pub fn grouped(items: &[(String, String)]) -> Vec<String> {
    let items: Vec<(String, String, String)> = items
        .iter()
        .map(|(s, m)| (s.clone(), s.clone(), m.clone()))
        .collect();
    grouped_named(&items)
}

/// [`grouped`] over `(name, subject, message)`: a message of one role is led by its `subject`
/// (`agent type `x` (file)`), a shared one lists the roles' names.
pub fn grouped_named(items: &[(String, String, String)]) -> Vec<String> {
    // Indexed by message, and each group's names in a set, so a thousand roles sharing a note
    // cost a thousand lookups, not a million comparisons.
    let mut groups: Vec<(&str, Vec<(&str, &str)>)> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut seen: std::collections::HashSet<(&str, &str)> = std::collections::HashSet::new();
    for (name, subject, message) in items {
        if !seen.insert((message.as_str(), name.as_str())) {
            continue;
        }
        match index.get(message.as_str()) {
            Some(&i) => {
                if let Some((_, subjects)) = groups.get_mut(i) {
                    subjects.push((name, subject));
                }
            }
            None => {
                index.insert(message, groups.len());
                groups.push((message, vec![(name, subject)]));
            }
        }
    }
    groups
        .into_iter()
        .map(|(message, subjects)| match subjects.as_slice() {
            [(_, subject)] => format!("{subject}: {message}"),
            many => {
                let shown: Vec<&str> = many.iter().take(MAX_GROUP_NAMES).map(|(n, _)| *n).collect();
                let rest = many.len() - shown.len();
                let more = if rest > 0 {
                    format!(" and {rest} more")
                } else {
                    String::new()
                };
                format!(
                    "{message} — {} agent types: {}{more}",
                    many.len(),
                    shown.join(", ")
                )
            }
        })
        .collect()
}

pub fn clip(text: &str, max: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let collapsed: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max {
        return collapsed;
    }
    let mut out: String = collapsed.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `path` relative to the project root when inside it, `~/…` when inside the home directory,
/// else as it is.
pub fn show_path(path: &Path, root: &Path, home: Option<&Path>) -> String {
    if let Ok(rel) = path.strip_prefix(root)
        && !rel.as_os_str().is_empty()
    {
        return rel.display().to_string();
    }
    if let Some(home) = home
        && let Ok(rel) = path.strip_prefix(home)
        && !rel.as_os_str().is_empty()
    {
        return format!("~/{}", rel.display());
    }
    path.display().to_string()
}

/// A task's status with why it ended when that is not the ordinary end: `completed`,
/// `partial/turn_budget`, `failed/orphaned`, `stopped/manual_stop`.
pub fn status(record: &TaskRecord) -> String {
    let base = record.status.as_str();
    if record.status == TaskStatus::Running {
        return base.to_string();
    }
    match (record.termination, &record.error) {
        (Some(kind), _) if kind.status() != TaskStatus::Completed => {
            format!("{base}/{}", kind.as_str())
        }
        (None, Some(error)) if record.status == TaskStatus::Failed => {
            format!("{base}/{}", clip(error, 40))
        }
        _ => base.to_string(),
    }
}

/// For each id, its shortest prefix of at least `min` characters that no other id shares, so a
/// listed id can be typed back as a target. Task ids are UUID v7, whose leading digits are a
/// clock: ids made within a minute of each other share their first eight characters, so a fixed
/// eight would not do.
pub fn unique_prefixes(ids: &[&str], min: usize) -> Vec<String> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by(|&a, &b| ids[a].cmp(ids[b]));
    let mut lengths = vec![0usize; ids.len()];
    for (pos, &i) in order.iter().enumerate() {
        let mut shared = 0;
        if pos > 0 {
            shared = shared.max(common_prefix(ids[i], ids[order[pos - 1]]));
        }
        if pos + 1 < order.len() {
            shared = shared.max(common_prefix(ids[i], ids[order[pos + 1]]));
        }
        lengths[i] = (shared + 1).max(min);
    }
    ids.iter()
        .zip(lengths)
        .map(|(id, n)| id.chars().take(n).collect())
        .collect()
}

/// How many characters `a` and `b` share at their start.
pub fn common_prefix(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_protocol::TerminationKind;

    #[test]
    fn messages_shared_by_many_roles_are_said_once() {
        let items: Vec<(String, String)> = (0..11)
            .map(|i| (format!("r{i}"), "model `sonnet` unavailable".to_string()))
            .chain([("solo".to_string(), "dropped WebFetch".to_string())])
            .collect();
        let lines = grouped(&items);
        assert_eq!(
            lines,
            vec![
                "model `sonnet` unavailable — 11 agent types: r0, r1, r2, r3, r4, r5, r6, r7 and 3 more",
                "solo: dropped WebFetch",
            ]
        );
        assert!(grouped(&[]).is_empty());
    }

    #[test]
    fn table_aligns_columns_without_trailing_spaces() {
        let rows = vec![
            vec!["a".to_string(), "long cell".to_string(), "x".to_string()],
            vec!["bbbb".to_string(), "é".to_string(), String::new()],
        ];
        let out = table(&["H1", "H2", "H3"], &rows);
        assert_eq!(out, "H1    H2         H3\na     long cell  x\nbbbb  é\n");
        assert_eq!(table(&["ONLY"], &[]), "ONLY\n");
        // A short row leaves the missing cells out instead of panicking.
        assert_eq!(table(&["A", "B"], &[vec!["1".into()]]), "A  B\n1\n");
    }

    #[test]
    fn ages_read_like_a_person_would_say_them() {
        let now = humantime::parse_rfc3339("2026-11-30T12:00:00Z").unwrap();
        let cases = [
            ("2026-11-30T12:00:00.000Z", "just now"),
            ("2026-11-30T11:59:30Z", "30s ago"),
            ("2026-11-30T11:57:00Z", "3m ago"),
            ("2026-11-30T07:00:00Z", "5h ago"),
            ("2026-11-28T12:00:00Z", "2d ago"),
            ("2026-11-30T12:05:00Z", "just now"),
            ("not a time", "?"),
            ("", "?"),
        ];
        for (ts, want) in cases {
            assert_eq!(age(ts, now), want, "{ts}");
        }
    }

    #[test]
    fn numbers_fit_narrow_columns() {
        assert_eq!(tokens(0), "0");
        assert_eq!(tokens(999), "999");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(250_000), "250k");
        assert_eq!(tokens(4_100_000), "4.1M");
        assert_eq!(cost(0.0), "-");
        assert_eq!(cost(f64::NAN), "-");
        assert_eq!(cost(-1.0), "-");
        assert_eq!(cost(0.0042), "$0.0042");
        assert_eq!(cost(1.5), "$1.50");
    }

    #[test]
    fn clip_takes_the_first_line_and_marks_a_cut() {
        assert_eq!(clip("\n\n  hello   world \nnext", 50), "hello world");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("", 10), "");
        assert_eq!(clip("ééééé", 3), "éé…");
    }

    #[test]
    fn paths_are_shown_short() {
        let root = Path::new("/p/proj");
        let home = Path::new("/home/u");
        assert_eq!(
            show_path(Path::new("/p/proj/.cadre/agents/a.md"), root, Some(home)),
            ".cadre/agents/a.md"
        );
        assert_eq!(
            show_path(Path::new("/home/u/.cadre/agents/a.md"), root, Some(home)),
            "~/.cadre/agents/a.md"
        );
        assert_eq!(
            show_path(Path::new("/etc/x.md"), root, Some(home)),
            "/etc/x.md"
        );
        assert_eq!(show_path(root, root, None), "/p/proj");
    }

    #[test]
    fn status_names_unusual_endings() {
        let mut r = TaskRecord::default();
        assert_eq!(status(&r), "running");
        r.status = TaskStatus::Completed;
        r.termination = Some(TerminationKind::Normal);
        assert_eq!(status(&r), "completed");
        r.status = TaskStatus::Partial;
        r.termination = Some(TerminationKind::TurnBudget);
        assert_eq!(status(&r), "partial/turn_budget");
        r.status = TaskStatus::Failed;
        r.termination = None;
        r.error = Some("orphaned".into());
        assert_eq!(status(&r), "failed/orphaned");
        r.status = TaskStatus::Stopped;
        r.termination = Some(TerminationKind::ManualStop);
        assert_eq!(status(&r), "stopped/manual_stop");
        r.status = TaskStatus::Partial;
        r.termination = Some(TerminationKind::CostBudget);
        assert_eq!(status(&r), "partial/cost_budget");
        r.termination = Some(TerminationKind::TokenBudget);
        assert_eq!(status(&r), "partial/token_budget");
    }

    #[test]
    fn a_capped_tasks_cells_show_its_spend_against_its_cap() {
        let mut b = BudgetState {
            cap: cadre_protocol::Limits {
                max_cost_usd: Some(0.5),
                max_tokens: None,
            },
            spent: cadre_protocol::Spend {
                tokens: 41_230,
                cost_usd: 0.41,
            },
            ..BudgetState::default()
        };
        assert_eq!(cost_cell(Some(&b), 0.2), "$0.41/$0.50");
        // No token cap: the tokens cell is the usage as before.
        assert_eq!(tokens_cell(Some(&b), 12_345), "12.3k");
        b.cap.max_tokens = Some(50_000);
        assert_eq!(tokens_cell(Some(&b), 12_345), "41.2k/50k");
        assert_eq!(cost_cell(None, 0.2), "$0.20");
        assert_eq!(tokens_cell(None, 950), "950");
    }

    #[test]
    fn unique_prefixes_grow_past_a_shared_clock() {
        let ids = [
            "0192aaaa-bbbb-7000-8000-000000000001",
            "0192aaaa-bbbb-7000-8000-000000000002",
            "0193cccc-0000-7000-8000-000000000000",
            "ab",
        ];
        let got = unique_prefixes(&ids, 8);
        assert_eq!(got[0], "0192aaaa-bbbb-7000-8000-000000000001");
        assert_eq!(got[1], "0192aaaa-bbbb-7000-8000-000000000002");
        assert_eq!(got[2], "0193cccc");
        assert_eq!(got[3], "ab");
        let ids = ["0192aaaa-1", "0192aaaa-2", "0192aaab"];
        assert_eq!(
            unique_prefixes(&ids, 8),
            vec!["0192aaaa-1", "0192aaaa-2", "0192aaab"]
        );
        assert!(unique_prefixes(&[], 8).is_empty());
        assert_eq!(unique_prefixes(&["x"], 8), vec!["x"]);
    }
}
