//! The live task panel: one row per task in tree order, with role, name, status, phase,
//! turns, tool calls, tokens, cost and elapsed time, in columns that fit the terminal's width.
//! A task under a token or cost cap shows what it spent of it in place of its tokens or cost.
//!
//! Narrow terminals (80 columns) get short status and phase words; wide ones add the task's
//! description. When the tasks outnumber the rows, running tasks are kept and the rest counted.

use std::time::Instant;

use ratatui::text::{Line, Span};

use super::text::{clip, fit, screen_safe};
use super::theme::Theme;
use crate::commands::format;
use crate::task_board::{Board, TaskRow};
use cadre_protocol::{TaskPhase, TaskStatus};

/// Rows the panel takes for `board` on a screen of `height` rows: a title and its tasks, at
/// most a third of the screen (never less than 3 rows when there are tasks), at most 4 when
/// none runs.
pub fn height(board: &Board, screen: u16) -> u16 {
    if board.is_empty() {
        return 0;
    }
    // With nothing running, the newest few ended tasks are enough; /tasks lists them all.
    let most = if board.running() == 0 {
        4
    } else {
        (screen / 3).max(3)
    };
    (board.len() as u16).saturating_add(1).min(most)
}

/// The panel's rows: `rows` rows of `cols` columns at `now`.
pub fn lines(
    board: &Board,
    theme: Theme,
    cols: usize,
    rows: usize,
    now: Instant,
) -> Vec<Line<'static>> {
    let running = board.running();
    let done = board.len() - running;
    let mut out = vec![Line::from(vec![
        Span::styled("Tasks", theme.accent()),
        Span::styled(
            format!(" · {running} running · {done} done · /tasks, /task NAME|ID"),
            theme.dim(),
        ),
    ])];
    let room = rows.saturating_sub(1);
    if room == 0 {
        return out;
    }
    let tree: Vec<(usize, &TaskRow)> = board.tree().collect();
    let shown: Vec<&(usize, &TaskRow)> = if tree.len() <= room {
        tree.iter().collect()
    } else {
        // Running tasks first claim the rows (in tree order), then the newest ended ones.
        let keep_room = room - 1;
        let mut keep = vec![false; tree.len()];
        let mut left = keep_room;
        for (i, (_, row)) in tree.iter().enumerate() {
            if left > 0 && row.ended.is_none() {
                keep[i] = true;
                left -= 1;
            }
        }
        let mut ended: Vec<usize> = (0..tree.len()).filter(|&i| !keep[i]).collect();
        ended.sort_by_key(|&i| std::cmp::Reverse(tree[i].1.ended));
        for i in ended.into_iter().take(left) {
            keep[i] = true;
        }
        tree.iter()
            .enumerate()
            .filter(|(i, _)| keep[*i])
            .map(|(_, t)| t)
            .collect()
    };
    let layout = Columns::for_width(cols);
    for (depth, row) in &shown {
        out.push(task_line(row, *depth, &layout, theme, cols, now));
    }
    if shown.len() < tree.len() {
        out.push(Line::styled(
            format!(
                "  … {} more (/tasks lists them all)",
                tree.len() - shown.len()
            ),
            theme.dim(),
        ));
    }
    out
}

/// Column widths for a terminal width.
struct Columns {
    role: usize,
    name: usize,
    status: usize,
    phase: usize,
    wide: bool,
}

impl Columns {
    fn for_width(cols: usize) -> Columns {
        if cols >= 140 {
            Columns {
                role: 22,
                name: 24,
                status: 9,
                phase: 13,
                wide: true,
            }
        } else if cols >= 100 {
            Columns {
                role: 16,
                name: 28,
                status: 9,
                phase: 8,
                wide: false,
            }
        } else {
            Columns {
                role: 15,
                name: 12,
                status: 7,
                phase: 8,
                wide: false,
            }
        }
    }
}

fn task_line(
    row: &TaskRow,
    depth: usize,
    c: &Columns,
    theme: Theme,
    cols: usize,
    now: Instant,
) -> Line<'static> {
    let (glyph, glyph_style) = match row.status {
        TaskStatus::Running => ("● ", theme.accent()),
        TaskStatus::Completed => ("✓ ", theme.ok()),
        TaskStatus::Partial => ("◐ ", theme.warn()),
        TaskStatus::Failed => ("✗ ", theme.error()),
        TaskStatus::Stopped => ("■ ", theme.warn()),
    };
    let tree = if depth == 0 {
        String::new()
    } else {
        format!("{}└ ", "  ".repeat(depth.saturating_sub(1).min(6)))
    };
    let role = fit(&format!("{tree}{}", screen_safe(&row.agent)), c.role);
    let name = row
        .name
        .as_deref()
        .map(|n| screen_safe(n).into_owned())
        .unwrap_or_else(|| screen_safe(&row.description).into_owned());
    let (tokens, cost) = spend_cells(row);
    // A spent-of-cap cell is wider than its column: the name gives up the difference, so the
    // row still ends with its elapsed time.
    let over =
        super::text::width(&tokens).saturating_sub(6) + super::text::width(&cost).saturating_sub(7);
    let name = fit(&name, c.name.saturating_sub(over).max(6));
    let status = fit(status_word(row.status, c.wide), c.status);
    let phase = fit(phase_word(row.phase, c.wide), c.phase);
    let u = &row.usage;
    let numbers = format!(
        "{:>3}t {:>3}⚒ {tokens:>6} {cost:>7} {:>6}",
        u.turns,
        u.tool_calls_executed,
        crate::task_board::elapsed_text(row.elapsed(now)),
    );
    let style = if row.ended.is_some() {
        theme.dim()
    } else {
        theme.plain()
    };
    let mut spans = vec![
        Span::styled(glyph, glyph_style),
        Span::styled(format!("{role} {name} {status} {phase} {numbers}"), style),
    ];
    if c.wide {
        let used = 2 + c.role + c.name + c.status + c.phase + 4 + super::text::width(&numbers);
        let room = cols.saturating_sub(used + 2);
        if room > 8 {
            let what = if row.preview.is_empty() {
                &row.description
            } else {
                &row.preview
            };
            spans.push(Span::styled(
                format!("  {}", clip(&screen_safe(what), room)),
                theme.dim(),
            ));
        }
    }
    let line = Line::from(spans);
    // Never wider than the terminal, whatever a column held.
    if line.width() > cols {
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        return Line::styled(clip(&text, cols), style);
    }
    line
}

/// The tokens and cost cells: what the task used, or under a cap what it spent of it
/// (`41.2k/50k`, `$0.41/$0.50`), so a row shows how close it is to being stopped.
fn spend_cells(row: &TaskRow) -> (String, String) {
    let budget = row.budget.as_ref();
    (
        format::tokens_cell(budget, row.usage.tokens.total_tokens),
        format::cost_cell(budget, row.usage.tokens.cost.total),
    )
}

fn status_word(status: TaskStatus, wide: bool) -> &'static str {
    match (status, wide) {
        (TaskStatus::Running, _) => "running",
        (TaskStatus::Completed, true) => "completed",
        (TaskStatus::Completed, false) => "done",
        (TaskStatus::Partial, _) => "partial",
        (TaskStatus::Failed, _) => "failed",
        (TaskStatus::Stopped, _) => "stopped",
    }
}

fn phase_word(phase: TaskPhase, wide: bool) -> &'static str {
    match (phase, wide) {
        (TaskPhase::Starting, _) => "starting",
        (TaskPhase::Working, _) => "working",
        (TaskPhase::FinalHandoff, true) => "final-handoff",
        (TaskPhase::FinalHandoff, false) => "handoff",
        (TaskPhase::Terminal, _) => "ended",
    }
}
