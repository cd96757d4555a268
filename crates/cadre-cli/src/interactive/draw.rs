//! One frame: the conversation on top, the task panel under it, the completion list, the
//! input and the status line at the bottom.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::app::App;
use super::text::{clip, screen_safe, width};
use super::theme::Theme;
use super::{conversation_view, panel};

/// The most rows the input takes; a longer text scrolls inside them.
const INPUT_ROWS: usize = 8;
/// The most completion candidates shown at once.
const COMPLETION_ROWS: usize = 6;

pub fn draw(frame: &mut Frame<'_>, app: &App, theme: Theme, now: Instant) {
    let area = frame.area();
    let cols = area.width as usize;
    if area.width < 10 || area.height < 4 {
        // Too small for anything but a word.
        frame.render_widget(Paragraph::new("cadre"), area);
        return;
    }
    let (input_rows, cursor) = input_rows(app, theme, cols);
    let input_height = input_rows.len() as u16;
    let completion = completion_rows(app, theme, cols);
    let hint = match (&app.asking, &app.flash) {
        (Some(summary), _) => Some(Line::styled(
            clip(
                &format!(
                    "allow the launch above? yes/no + Enter: {}▏ · {}",
                    screen_safe(&app.answer),
                    screen_safe(summary)
                ),
                cols,
            ),
            theme.selected(),
        )),
        (None, Some(f)) => Some(Line::styled(clip(f, cols), theme.warn())),
        (None, None) => None,
    };
    let fixed = input_height + 2 + completion.len() as u16 + u16::from(hint.is_some());
    let panel_height =
        panel::height(&app.board, area.height).min(area.height.saturating_sub(fixed + 1));
    let [conv, tasks, comp, flash, rule, input, status] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(panel_height),
        Constraint::Length(completion.len() as u16),
        Constraint::Length(u16::from(hint.is_some())),
        Constraint::Length(1),
        Constraint::Length(input_height),
        Constraint::Length(1),
    ])
    .areas(area);

    let rows = conversation_view::visible_rows(app, theme, cols, conv.height as usize);
    let mut rows = rows;
    if app.scroll > 0 && !rows.is_empty() {
        rows[0] = Line::styled(
            format!("  ↑ scrolled {} rows · PgDn to return", app.scroll),
            theme.dim(),
        );
    }
    // Bottom-aligned: a short conversation sits just above the panel.
    let pad = (conv.height as usize).saturating_sub(rows.len());
    let conv_area = Rect {
        y: conv.y + pad as u16,
        height: conv.height - pad as u16,
        ..conv
    };
    frame.render_widget(Paragraph::new(rows), conv_area);
    if panel_height > 0 {
        let lines = panel::lines(&app.board, theme, cols, panel_height as usize, now);
        frame.render_widget(Paragraph::new(lines), tasks);
    }
    if !completion.is_empty() {
        frame.render_widget(Paragraph::new(completion), comp);
    }
    if let Some(hint) = hint {
        frame.render_widget(Paragraph::new(hint), flash);
    }
    frame.render_widget(Paragraph::new(rule_line(app, theme, cols)), rule);
    frame.render_widget(Paragraph::new(input_rows), input);
    frame.render_widget(Paragraph::new(status_line(app, theme, cols)), status);
    if let Some((x, y)) = cursor {
        frame.set_cursor_position(Position {
            x: input.x + x,
            y: input.y + y,
        });
    }
}

/// The line above the input: what Enter does now.
fn rule_line(app: &App, theme: Theme, cols: usize) -> Line<'static> {
    let label = if app.busy {
        let (steer, follow) = app.status.queued;
        let queued = if steer + follow > 0 {
            format!(" · {steer} steering, {follow} queued")
        } else {
            String::new()
        };
        format!("── working · Enter steers · Alt-Enter queues · Esc stops{queued} ")
    } else {
        String::new()
    };
    let label = clip(&label, cols);
    let rest = cols.saturating_sub(width(&label));
    Line::styled(format!("{label}{}", "─".repeat(rest)), theme.bar())
}

/// The input's rows (wrapped, at most [`INPUT_ROWS`], scrolled to the cursor) and the cursor's
/// place in them.
fn input_rows(app: &App, theme: Theme, cols: usize) -> (Vec<Line<'static>>, Option<(u16, u16)>) {
    let prompt = "› ";
    let inner = cols.saturating_sub(2).max(1);
    let text = app.editor.text();
    let cursor = app.editor.cursor();
    let mut rows: Vec<String> = Vec::new();
    let mut at: Option<(usize, usize)> = None;
    let mut offset = 0;
    for logical in text.split('\n') {
        let end = offset + logical.len();
        // Hard-wrapped by columns so the cursor can be placed exactly.
        let mut row = String::new();
        let mut row_cols = 0;
        let mut byte = offset;
        for c in logical.chars() {
            let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if row_cols + cw > inner {
                rows.push(std::mem::take(&mut row));
                row_cols = 0;
            }
            if byte == cursor && at.is_none() {
                at = Some((rows.len(), row_cols));
            }
            row.push(c);
            row_cols += cw;
            byte += c.len_utf8();
        }
        if cursor == end && at.is_none() {
            if row_cols >= inner {
                rows.push(std::mem::take(&mut row));
                row_cols = 0;
            }
            at = Some((rows.len(), row_cols));
        }
        rows.push(row);
        offset = end + 1;
    }
    let (crow, ccol) = at.unwrap_or((rows.len().saturating_sub(1), 0));
    let first = (crow + 1).saturating_sub(INPUT_ROWS);
    let shown: Vec<Line<'static>> = rows
        .iter()
        .enumerate()
        .skip(first)
        .take(INPUT_ROWS)
        .map(|(i, r)| {
            let lead = if i == 0 { prompt } else { "  " };
            Line::from(vec![
                Span::styled(lead, theme.user()),
                Span::raw(screen_safe(r).into_owned()),
            ])
        })
        .collect();
    let cursor = Some(((ccol + 2) as u16, (crow - first) as u16));
    (shown, cursor)
}

fn completion_rows(app: &App, theme: Theme, cols: usize) -> Vec<Line<'static>> {
    let Some(c) = &app.completion else {
        return Vec::new();
    };
    let start = c.selected.saturating_sub(COMPLETION_ROWS - 1);
    let mut out: Vec<Line<'static>> = c
        .candidates
        .iter()
        .enumerate()
        .skip(start)
        .take(COMPLETION_ROWS)
        .map(|(i, cand)| {
            let text = clip(&format!("  {}", screen_safe(cand)), cols);
            if i == c.selected {
                Line::styled(text, theme.selected())
            } else {
                Line::styled(text, theme.dim())
            }
        })
        .collect();
    if c.candidates.len() > COMPLETION_ROWS {
        out.push(Line::styled(
            clip(
                &format!(
                    "  {}/{} · Tab next · Enter takes it",
                    c.selected + 1,
                    c.candidates.len()
                ),
                cols,
            ),
            theme.dim(),
        ));
    }
    out
}

/// The bottom line: model, thinking, plan mode, session, the session's budget under a cap,
/// and the hint for help.
fn status_line(app: &App, theme: Theme, cols: usize) -> Line<'static> {
    let s = &app.status;
    let mut left = format!("{} · thinking {}", s.model, s.thinking);
    if s.plan {
        left.push_str(" · PLAN");
    }
    if !s.session.is_empty() {
        left.push_str(&format!(" · {}", s.session));
    }
    let running = app.board.running();
    if running > 0 {
        left.push_str(&format!(
            " · {running} task{} running",
            if running == 1 { "" } else { "s" }
        ));
    }
    // The budget sits on the right with the help hint, so a long left side never clips it.
    let right = match s
        .budget
        .as_ref()
        .and_then(cadre_core::budget::text::compact)
    {
        Some(budget) => format!(" budget {} · /help ", screen_safe(&budget)),
        None => " /help ".to_string(),
    };
    let right = right.as_str();
    let room = cols.saturating_sub(width(right));
    let left = clip(&format!(" {}", screen_safe(&left)), room);
    let pad = cols.saturating_sub(width(&left) + width(right));
    Line::styled(format!("{left}{}{right}", " ".repeat(pad)), theme.bar())
}
