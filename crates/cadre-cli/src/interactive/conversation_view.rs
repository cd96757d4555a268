//! The conversation, as screen rows: the newest at the bottom, built from the last entry back
//! only as far as the screen (and the scroll offset) reaches, so a long session costs a frame
//! no more than a short one.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::app::App;
use super::text::{screen_safe, width, wrap};
use super::theme::Theme;
use super::transcript::{Entry, NoteKind, ToolEntry};

/// Rows of a tool's output shown when collapsed / expanded.
const COLLAPSED_ROWS: usize = 1;
const EXPANDED_ROWS: usize = 400;
/// Rows of an edit's diff shown when collapsed.
const DIFF_ROWS: usize = 16;

/// The rows that fill `height` rows of `cols` columns, the newest `scroll` rows above the
/// bottom.
pub fn visible_rows(app: &App, theme: Theme, cols: usize, height: usize) -> Vec<Line<'static>> {
    let want = height.saturating_add(app.scroll);
    app.scroll_limit.set(None);
    let mut blocks: Vec<Vec<Line<'static>>> = Vec::new();
    let mut total = 0;
    let mut more_above = false;
    for (i, entry) in app.transcript.entries.iter().enumerate().rev() {
        if total >= want {
            more_above = true;
            break;
        }
        let mut rows = entry_rows(entry, app, theme, cols);
        // A blank row before each prompt separates the exchanges.
        if matches!(entry, Entry::User(_)) && i > 0 {
            rows.insert(0, Line::default());
        }
        total += rows.len();
        blocks.push(rows);
    }
    let mut rows: Vec<Line<'static>> = blocks.into_iter().rev().flatten().collect();
    // The whole conversation was laid out: scrolling further up than its top shows nothing
    // new, so the key that scrolls knows where to stop.
    if !more_above {
        app.scroll_limit
            .set(Some(rows.len().saturating_sub(height)));
    }
    // Drop what is scrolled below the screen, then what does not fit above it.
    let below = app
        .scroll
        .min(rows.len().saturating_sub(height.min(rows.len())));
    rows.truncate(rows.len() - below);
    if rows.len() > height {
        rows.drain(..rows.len() - height);
    }
    rows
}

fn entry_rows(entry: &Entry, app: &App, theme: Theme, cols: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    match entry {
        Entry::User(text) => prefixed(&mut out, "› ", theme.user(), text, theme.plain(), cols),
        Entry::Assistant {
            thinking,
            text,
            open,
        } => {
            if !thinking.is_empty() {
                if app.show_thinking {
                    prefixed(
                        &mut out,
                        "∴ ",
                        theme.thinking(),
                        thinking,
                        theme.thinking(),
                        cols,
                    );
                } else {
                    let n = thinking.lines().count();
                    let label = format!("∴ thinking · {n} line{} · Ctrl-T shows it", plural(n));
                    out.push(Line::styled(label, theme.thinking()));
                }
            }
            if !text.is_empty() {
                prefixed(&mut out, "  ", theme.plain(), text, theme.plain(), cols);
            } else if *open && thinking.is_empty() {
                out.push(Line::styled("  …", theme.dim()));
            }
        }
        Entry::Tool(tool) => tool_rows(&mut out, tool, app.expand_tools, theme, cols),
        Entry::Note { kind, text } => {
            let (mark, style) = match kind {
                NoteKind::Info => ("· ", theme.dim()),
                NoteKind::Task => ("⇐ ", theme.accent()),
                NoteKind::Warning => ("! ", theme.warn()),
                NoteKind::Error => ("✗ ", theme.error()),
            };
            prefixed(&mut out, mark, style, text, style, cols);
        }
    }
    out
}

fn tool_rows(
    out: &mut Vec<Line<'static>>,
    tool: &ToolEntry,
    expand: bool,
    theme: Theme,
    cols: usize,
) {
    let (mark, mark_style) = match (&tool.result, tool.is_error) {
        (None, _) => ("◌ ", theme.dim()),
        (Some(_), false) => ("● ", theme.ok()),
        (Some(_), true) => ("✗ ", theme.error()),
    };
    let head = format!("{} {}", tool.name, screen_safe(&tool.summary));
    let head = super::text::clip(&head, cols.saturating_sub(2).max(1));
    out.push(Line::from(vec![
        Span::styled(mark, mark_style),
        Span::styled(head, theme.accent()),
    ]));
    if let Some(diff) = &tool.diff {
        let limit = if expand { EXPANDED_ROWS } else { DIFF_ROWS };
        let lines: Vec<&str> = diff.lines().collect();
        for line in lines.iter().take(limit) {
            let style = if line.starts_with('+') {
                theme.added()
            } else if line.starts_with('-') {
                theme.removed()
            } else {
                theme.dim()
            };
            let row = super::text::clip(&format!("    {}", screen_safe(line)), cols);
            out.push(Line::styled(row, style));
        }
        if lines.len() > limit {
            more(out, lines.len() - limit, theme);
        }
        return;
    }
    let Some(result) = &tool.result else { return };
    let style = if tool.is_error {
        theme.error()
    } else {
        theme.dim()
    };
    let safe = screen_safe(result);
    let lines: Vec<&str> = safe.lines().collect();
    let limit = if expand || tool.is_error {
        EXPANDED_ROWS
    } else {
        COLLAPSED_ROWS
    };
    for (i, line) in lines.iter().take(limit).enumerate() {
        let lead = if i == 0 { "  ⎿ " } else { "    " };
        let row = super::text::clip(&format!("{lead}{line}"), cols);
        out.push(Line::styled(row, style));
    }
    if lines.len() > limit {
        more(out, lines.len() - limit, theme);
    }
}

fn more(out: &mut Vec<Line<'static>>, n: usize, theme: Theme) {
    out.push(Line::styled(
        format!("    … {n} more line{} · Ctrl-O expands", plural(n)),
        theme.dim(),
    ));
}

/// `text` wrapped to `cols`, its first row led by `mark`, the others indented to match.
fn prefixed(
    out: &mut Vec<Line<'static>>,
    mark: &str,
    mark_style: Style,
    text: &str,
    style: Style,
    cols: usize,
) {
    let indent = width(mark);
    let inner = cols.saturating_sub(indent).max(1);
    let safe = screen_safe(text);
    let mut first = true;
    for logical in safe.trim_end_matches('\n').split('\n') {
        for row in wrap(logical, inner) {
            let lead = if first {
                Span::styled(mark.to_string(), mark_style)
            } else {
                Span::raw(" ".repeat(indent))
            };
            first = false;
            out.push(Line::from(vec![lead, Span::styled(row, style)]));
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
