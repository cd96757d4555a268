//! The shape of a timeline: tasks in tree order (children under their parent task) and each
//! task's bar on a shared time axis. Pure: the records come in, rows come out.

use std::collections::{HashMap, HashSet};

use cadre_protocol::TaskRecord;

/// One task in tree order: its record's index, how deep it sits and its bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub index: usize,
    pub level: usize,
    /// Where the bar starts and how long it is, in percent of the axis.
    pub left: f64,
    pub width: f64,
}

/// The axis: the first start and the last end of any task, in milliseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Axis {
    pub start_ms: i64,
    pub end_ms: i64,
}

impl Axis {
    pub fn span_ms(self) -> i64 {
        self.end_ms.saturating_sub(self.start_ms)
    }
}

/// When a task started (its `startedAt`, else `createdAt`) and ended (`endedAt`, else its last
/// update), when the record's timestamps can be read.
pub fn interval(r: &TaskRecord) -> Option<(i64, i64)> {
    let start = r
        .started_at
        .as_deref()
        .and_then(parse_ms)
        .or_else(|| parse_ms(&r.created_at))?;
    let end = r
        .ended_at
        .as_deref()
        .and_then(parse_ms)
        .or_else(|| parse_ms(&r.updated_at))
        .unwrap_or(start);
    Some((start, end.max(start)))
}

/// The rows of `records` in tree order: each task after its parent, siblings by start time.
/// A task whose parent is not among the records (or a cycle a hand-edited record made) is
/// placed at the top level, so every record is shown exactly once.
pub fn rows(records: &[TaskRecord]) -> (Vec<Row>, Option<Axis>) {
    let intervals: Vec<Option<(i64, i64)>> = records.iter().map(interval).collect();
    let axis = intervals
        .iter()
        .flatten()
        .fold(None, |acc: Option<Axis>, &(s, e)| {
            Some(match acc {
                None => Axis {
                    start_ms: s,
                    end_ms: e,
                },
                Some(a) => Axis {
                    start_ms: a.start_ms.min(s),
                    end_ms: a.end_ms.max(e),
                },
            })
        });
    let ids: HashMap<&str, usize> = records
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect();
    let mut children: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        let parent = r
            .parent_task_id
            .as_deref()
            .and_then(|p| ids.get(p).copied())
            .filter(|&p| p != i);
        children.entry(parent).or_default().push(i);
    }
    let start_of = |i: usize| intervals[i].map_or(i64::MAX, |(s, _)| s);
    for list in children.values_mut() {
        list.sort_by(|&a, &b| {
            start_of(a)
                .cmp(&start_of(b))
                .then_with(|| records[a].id.cmp(&records[b].id))
        });
    }
    let mut out = Vec::with_capacity(records.len());
    let mut seen = HashSet::new();
    let mut stack: Vec<(usize, usize)> = children
        .get(&None)
        .map(|l| l.iter().rev().map(|&i| (i, 0)).collect())
        .unwrap_or_default();
    let bar = |i: usize| match (axis, intervals[i]) {
        (Some(a), Some((s, e))) if a.span_ms() > 0 => {
            let span = a.span_ms() as f64;
            let left = (s - a.start_ms) as f64 / span * 100.0;
            let width = ((e - s) as f64 / span * 100.0).max(0.5);
            (left, width.min(100.0 - left).max(0.5))
        }
        _ => (0.0, 100.0),
    };
    let visit = |stack: &mut Vec<(usize, usize)>, out: &mut Vec<Row>, seen: &mut HashSet<usize>| {
        while let Some((i, level)) = stack.pop() {
            if !seen.insert(i) {
                continue;
            }
            let (left, width) = bar(i);
            out.push(Row {
                index: i,
                level,
                left,
                width,
            });
            if let Some(kids) = children.get(&Some(i)) {
                stack.extend(kids.iter().rev().map(|&k| (k, level + 1)));
            }
        }
    };
    visit(&mut stack, &mut out, &mut seen);
    // Records only reachable through a cycle: shown at the top level.
    for i in 0..records.len() {
        if !seen.contains(&i) {
            stack.push((i, 0));
            visit(&mut stack, &mut out, &mut seen);
        }
    }
    (out, axis)
}

/// Milliseconds since the epoch of an RFC 3339 UTC timestamp (`2026-12-01T20:57:24.123Z`, the
/// form records are written in; an offset other than `Z` is refused).
pub fn parse_ms(text: &str) -> Option<i64> {
    let t = text.trim();
    let (date, time) = t.split_once(['T', 't', ' '])?;
    let time = time.strip_suffix(['Z', 'z'])?;
    let mut d = date.splitn(3, '-');
    let year: i64 = d.next()?.parse().ok()?;
    let month: i64 = d.next()?.parse().ok()?;
    let day: i64 = d.next()?.parse().ok()?;
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut h = hms.splitn(3, ':');
    let hour: i64 = h.next()?.parse().ok()?;
    let minute: i64 = h.next()?.parse().ok()?;
    let second: i64 = h.next()?.parse().ok()?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let millis: i64 = format!("{frac:0<3}").get(..3)?.parse().ok()?;
    let days = days_from_civil(year, month, day);
    Some((((days * 24 + hour) * 60 + minute) * 60 + second) * 1000 + millis)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn task(id: &str, parent: Option<&str>, start: &str, end: &str) -> TaskRecord {
        TaskRecord {
            id: id.into(),
            parent_task_id: parent.map(str::to_string),
            created_at: start.into(),
            started_at: Some(start.into()),
            ended_at: Some(end.into()),
            ..TaskRecord::default()
        }
    }

    #[test]
    fn timestamps_parse_as_records_write_them() {
        assert_eq!(parse_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_ms("1970-01-02T00:00:01.5Z"), Some(86_401_500));
        assert_eq!(
            parse_ms("2026-12-01T20:57:24.123Z"),
            Some(1_796_158_644_123)
        );
        assert_eq!(parse_ms("2026-12-01T20:57:24+01:00"), None);
        assert_eq!(parse_ms("yesterday"), None);
        assert_eq!(parse_ms("2026-13-01T00:00:00Z"), None);
    }

    #[test]
    fn children_follow_their_parent_and_bars_share_one_axis() {
        let records = vec![
            task(
                "c",
                Some("a"),
                "2026-01-01T00:00:05Z",
                "2026-01-01T00:00:10Z",
            ),
            task("a", None, "2026-01-01T00:00:00Z", "2026-01-01T00:00:10Z"),
            task("b", None, "2026-01-01T00:00:02Z", "2026-01-01T00:00:04Z"),
        ];
        let (rows, axis) = rows(&records);
        let order: Vec<(&str, usize)> = rows
            .iter()
            .map(|r| (records[r.index].id.as_str(), r.level))
            .collect();
        assert_eq!(order, [("a", 0), ("c", 1), ("b", 0)]);
        assert_eq!(axis.unwrap().span_ms(), 10_000);
        let c = &rows[1];
        assert!(
            (c.left - 50.0).abs() < 1e-9 && (c.width - 50.0).abs() < 1e-9,
            "{c:?}"
        );
    }

    #[test]
    fn a_cycle_or_an_unreadable_time_still_shows_every_task_once() {
        let mut records = vec![
            task("a", Some("b"), "x", "y"),
            task(
                "b",
                Some("a"),
                "2026-01-01T00:00:00Z",
                "2026-01-01T00:00:01Z",
            ),
        ];
        records.push(task("self", Some("self"), "bad", "bad"));
        records[0].created_at = "bad".into();
        let (rows, _) = rows(&records);
        let mut shown: Vec<usize> = rows.iter().map(|r| r.index).collect();
        shown.sort_unstable();
        assert_eq!(shown, [0, 1, 2]);
    }
}
