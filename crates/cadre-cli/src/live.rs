//! The live task tree of print mode (SPEC I4): while a run's tasks run, a compact tree of them
//! on stderr, redrawn in place and cleared when the last one ends, so that the final answer and
//! the notes after it read as they do without it.
//!
//! Only for a person at a terminal: nothing is drawn when stderr is not one (pipes, CI), when
//! `TERM` is `dumb` or unset, or in JSON mode. Nothing is ever written to stdout. The tree is
//! built from the host's task events only, so a resumed session's earlier tasks are not shown.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use cadre_core::orchestrator::manager::TaskEvent;
use cadre_protocol::{TaskPhase, TaskStatus};

use crate::task_board::{Board, TaskRow, elapsed_text};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The least time between two frames: at most ~10 redraws a second, however many events come.
const MIN_FRAME_GAP: Duration = Duration::from_millis(100);
/// A frame is redrawn at least this often while tasks run, so elapsed times move.
const REFRESH: Duration = Duration::from_secs(1);
/// The width when the terminal's cannot be read.
const DEFAULT_WIDTH: usize = 80;
/// The most lines a frame takes, whatever the terminal's height: the tree is a glance, and a
/// fan-out of 50 must not push the whole screen up.
const MAX_LINES: usize = 20;

/// Whether the live tree is drawn for this process: stderr is a terminal that can move its
/// cursor. (Colours are never used, so `NO_COLOR` changes nothing.)
pub fn enabled() -> bool {
    let term = std::env::var("TERM").unwrap_or_default();
    std::io::stderr().is_terminal() && !term.is_empty() && term != "dumb"
}

/// The tasks of this run, in tree order (the shared model of the live views).
#[derive(Debug, Default)]
pub struct Tree {
    board: Board,
}

impl Tree {
    /// Take in one task event received at `now`.
    pub fn apply(&mut self, event: &TaskEvent, now: Instant) {
        self.board.apply(event, now);
    }

    /// Whether any task of the run is still running.
    pub fn any_running(&self) -> bool {
        self.board.running() > 0
    }

    /// The frame at `now`: one line per task in tree order (children under their parent,
    /// indented, each level in start order), each at most `width - 1` columns so that no line
    /// wraps (a wrapped line would break moving back up over the frame), at most `max_lines`.
    pub fn frame(&self, width: usize, max_lines: usize, now: Instant) -> Vec<String> {
        let total = self.board.len();
        let max_lines = max_lines.max(1);
        let hidden = total.saturating_sub(max_lines);
        let shown = if hidden > 0 { max_lines - 1 } else { max_lines };
        let cols = width.saturating_sub(1).max(10);
        let mut lines: Vec<String> = self
            .board
            .tree()
            .take(shown)
            .map(|(depth, t)| clip_columns(&line(t, depth, now), cols))
            .collect();
        if hidden > 0 {
            let more = total - shown;
            lines.push(clip_columns(&format!("  … {more} more tasks"), cols));
        }
        lines
    }
}

/// One task's line:
/// `  ▸ role "name"  description · status[ · phase] · turns, tool calls, tokens[ · budget] · elapsed`.
fn line(t: &TaskRow, depth: usize, now: Instant) -> String {
    let (mark, state) = match t.ended {
        None if t.usage.turns == 0 || t.phase == TaskPhase::Starting => {
            ("▸", "starting".to_string())
        }
        None => {
            let turn = format!("turn {}", t.usage.turns + 1);
            match phase_note(t.phase) {
                Some(note) => ("▸", format!("{turn} · {note}")),
                None => ("▸", turn),
            }
        }
        Some(_) => {
            let mut state = t.status.as_str().to_string();
            // Why a budget-stopped task ended: `partial (cost budget)`.
            if let Some(meter) = t.budget.and_then(|b| b.exhausted) {
                state.push_str(match meter {
                    cadre_protocol::Meter::Cost => " (cost budget)",
                    cadre_protocol::Meter::Tokens => " (token budget)",
                });
            }
            (status_mark(t.status), state)
        }
    };
    let name = match t.name.as_deref().map(printable) {
        Some(name) if !name.trim().is_empty() => format!(" \"{name}\""),
        _ => String::new(),
    };
    let bg = if t.background { " (bg)" } else { "" };
    let tokens = t.usage.tokens.input + t.usage.tokens.output;
    // Under a cap, what it spent of it: `· $0.41/$0.50`.
    let budget = t
        .budget
        .as_ref()
        .and_then(cadre_core::budget::text::compact)
        .map_or(String::new(), |b| format!(" · {b}"));
    format!(
        "{indent}{mark} {agent}{name}{bg}  {description} · {state} · {turns}t {tools}c {tokens}{budget} · {elapsed}",
        indent = "  ".repeat(depth),
        agent = printable(&t.agent),
        description = printable(&t.description),
        turns = t.usage.turns,
        tools = t.usage.tool_calls_requested,
        tokens = compact_count(tokens),
        elapsed = elapsed_text(t.elapsed(now)),
    )
}

/// What a running task's line says about its phase: nothing for the usual ones (`starting`
/// shows as the state, `working` is what running means, `terminal` comes with the status).
fn phase_note(phase: TaskPhase) -> Option<&'static str> {
    match phase {
        TaskPhase::FinalHandoff => Some("final handoff"),
        TaskPhase::Starting | TaskPhase::Working | TaskPhase::Terminal => None,
    }
}

fn status_mark(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Running => "▸",
        TaskStatus::Completed => "✓",
        TaskStatus::Partial => "◐",
        TaskStatus::Failed => "✗",
        TaskStatus::Stopped => "■",
    }
}

/// `950 tok`, `12.3k tok`, `4.1M tok`.
fn compact_count(n: u64) -> String {
    match n {
        0..1_000 => format!("{n} tok"),
        1_000..1_000_000 => format!("{:.1}k tok", n as f64 / 1e3),
        _ => format!("{:.1}M tok", n as f64 / 1e6),
    }
}

/// Text from a model or a role file, safe to put on a terminal: control characters (escape
/// sequences, carriage returns, backspaces) and bidirectional overrides are removed, line
/// breaks and tabs become spaces.
pub fn printable(s: &str) -> String {
    s.chars()
        .filter_map(|c| match c {
            '\n' | '\r' | '\t' => Some(' '),
            c if cadre_protocol::display::is_unshowable(c) => None,
            c => Some(c),
        })
        .collect()
}

/// The terminal columns `s` takes: the larger of its width with emoji sequences joined and
/// the sum of its characters' widths, since terminals differ in whether they join them (one
/// that does not draws a family emoji as three). Wide (CJK, emoji) characters count two.
fn columns(s: &str) -> usize {
    let chars: usize = s.chars().map(|c| c.width().unwrap_or(0)).sum();
    s.width().max(chars)
}

/// At most `cols` terminal columns, ending in `…` when cut (so a wide character never makes
/// the line wrap).
fn clip_columns(s: &str, cols: usize) -> String {
    if columns(s) <= cols {
        return s.to_string();
    }
    let room = cols.saturating_sub(1);
    let starts: Vec<usize> = s.char_indices().map(|(i, _)| i).collect();
    // The longest prefix that fits, by bisection over character boundaries: the empty prefix
    // fits, the whole string does not. A prefix's width hardly ever shrinks as it grows, and
    // the prefix chosen is checked to fit either way.
    let (mut fits, mut over) = (0, starts.len());
    while over - fits > 1 {
        let mid = fits + (over - fits) / 2;
        if columns(&s[..starts[mid]]) <= room {
            fits = mid;
        } else {
            over = mid;
        }
    }
    let end = starts.get(fits).copied().unwrap_or(s.len());
    let mut out = s[..end].to_string();
    out.push('…');
    out
}

/// The terminal's size on stderr as (columns, rows), when it can be read.
fn terminal_size() -> Option<(usize, usize)> {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ only writes a `winsize` into the pointer it is given, which points at
    // a live, writable one; on any error the call fails and the value is not used.
    #[allow(unsafe_code)]
    let read = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) };
    (read == 0 && size.ws_col > 0).then(|| (usize::from(size.ws_col), usize::from(size.ws_row)))
}

/// The tree on stderr: what was drawn last, and when.
pub struct LiveView {
    tree: Tree,
    /// Lines of the frame on screen now (0: nothing drawn).
    drawn: usize,
    last_draw: Option<Instant>,
    dirty: bool,
}

impl LiveView {
    pub fn new() -> LiveView {
        LiveView {
            tree: Tree::default(),
            drawn: 0,
            last_draw: None,
            dirty: false,
        }
    }

    /// Take in a task event; redraw now unless a frame was drawn a moment ago (the next tick
    /// draws it then).
    pub fn on_event(&mut self, event: &TaskEvent) {
        let now = Instant::now();
        self.tree.apply(event, now);
        self.dirty = true;
        self.tick(now);
    }

    /// Redraw when something changed and the last frame is [`MIN_FRAME_GAP`] old, or every
    /// [`REFRESH`] for the clock; clear the frame once nothing runs.
    pub fn tick(&mut self, now: Instant) {
        if !self.tree.any_running() {
            self.clear();
            return;
        }
        let since = self.last_draw.map(|at| now.saturating_duration_since(at));
        let due = match since {
            None => true,
            Some(gap) => (self.dirty && gap >= MIN_FRAME_GAP) || gap >= REFRESH,
        };
        if due {
            self.draw(now);
        }
    }

    /// Whether a frame is on screen: only then do ticks have anything to do (redraw the clock,
    /// clear it once nothing runs). The first task's start draws without waiting for one.
    pub fn is_drawn(&self) -> bool {
        self.drawn > 0
    }

    /// How long until the next tick may draw.
    pub fn tick_every() -> Duration {
        MIN_FRAME_GAP
    }

    fn draw(&mut self, now: Instant) {
        let (width, rows) = terminal_size().unwrap_or((DEFAULT_WIDTH, MAX_LINES + 2));
        let max_lines = rows.saturating_sub(2).clamp(1, MAX_LINES);
        let lines = self.tree.frame(width, max_lines, now);
        let mut out = String::new();
        out.push_str(&erase(self.drawn));
        for line in &lines {
            out.push_str(line);
            out.push('\n');
        }
        // A stderr that is gone is not worth failing the run for; the tree just stops.
        let mut stderr = std::io::stderr().lock();
        let _ = stderr
            .write_all(out.as_bytes())
            .and_then(|_| stderr.flush());
        // Under the lock: a second signal's message, written under it too, replaces the frame.
        cadre_host::note_live_frame(lines.len());
        drop(stderr);
        self.drawn = lines.len();
        self.last_draw = Some(now);
        self.dirty = false;
    }

    /// Remove the frame from the screen, leaving the cursor where it was before the first one.
    pub fn clear(&mut self) {
        if self.drawn == 0 {
            return;
        }
        let mut stderr = std::io::stderr().lock();
        let _ = stderr
            .write_all(erase(self.drawn).as_bytes())
            .and_then(|_| stderr.flush());
        cadre_host::note_live_frame(0);
        drop(stderr);
        self.drawn = 0;
        self.last_draw = None;
    }
}

/// The bytes that take the cursor back to the first of the `lines` lines drawn (it sits at the
/// start of the line below them) and clear from there to the end of the screen.
fn erase(lines: usize) -> String {
    if lines == 0 {
        return String::new();
    }
    format!("\r\x1b[{lines}A\x1b[J")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_protocol::TaskUsage;

    fn started(id: &str, parent: Option<&str>, agent: &str, description: &str) -> TaskEvent {
        TaskEvent::Started {
            task_id: id.into(),
            parent_task_id: parent.map(str::to_string),
            name: None,
            agent: agent.into(),
            description: description.into(),
            background: false,
            phase: cadre_protocol::TaskPhase::Starting,
        }
    }

    fn tree(events: &[TaskEvent], at: Instant) -> Tree {
        let mut tree = Tree::default();
        for e in events {
            tree.apply(e, at);
        }
        tree
    }

    #[test]
    fn children_follow_their_parent_indented_in_start_order() {
        let t0 = Instant::now();
        let tree = tree(
            &[
                started("a", None, "general-purpose", "first"),
                started("b", None, "Explore", "second"),
                started("a1", Some("a"), "Explore", "child of first"),
                started("a1x", Some("a1"), "Plan", "grandchild"),
                started("a2", Some("a"), "Explore", "second child of first"),
            ],
            t0,
        );
        let frame = tree.frame(200, 20, t0);
        let order: Vec<&str> = frame
            .iter()
            .map(|l| l.split(" · ").next().unwrap())
            .collect();
        assert_eq!(
            order,
            [
                "▸ general-purpose  first",
                "  ▸ Explore  child of first",
                "    ▸ Plan  grandchild",
                "  ▸ Explore  second child of first",
                "▸ Explore  second",
            ]
        );
    }

    #[test]
    fn a_line_shows_status_turns_tools_tokens_and_time() {
        let t0 = Instant::now();
        let mut usage = TaskUsage {
            turns: 2,
            tool_calls_requested: 3,
            ..TaskUsage::default()
        };
        usage.tokens.input = 1200;
        usage.tokens.output = 300;
        let mut tree = tree(&[started("a", None, "Explore", "look")], t0);
        tree.apply(
            &TaskEvent::Turn {
                budget: None,
                task_id: "a".into(),
                usage,
                preview: String::new(),
                phase: cadre_protocol::TaskPhase::Working,
            },
            t0,
        );
        let frame = tree.frame(200, 20, t0 + Duration::from_secs(65));
        assert_eq!(frame, ["▸ Explore  look · turn 3 · 2t 3c 1.5k tok · 1m05s"]);

        tree.apply(
            &TaskEvent::Ended {
                budget: None,
                task_id: "a".into(),
                status: TaskStatus::Failed,
                termination: None,
            },
            t0 + Duration::from_secs(7),
        );
        // An ended task's clock stops at its end.
        let frame = tree.frame(200, 20, t0 + Duration::from_secs(65));
        assert_eq!(frame, ["✗ Explore  look · failed · 2t 3c 1.5k tok · 7s"]);
        assert!(!tree.any_running());
    }

    #[test]
    fn a_task_under_a_cap_shows_what_it_spent_of_it() {
        let t0 = Instant::now();
        let mut budget = cadre_protocol::BudgetState {
            cap: cadre_protocol::Limits {
                max_cost_usd: Some(0.5),
                max_tokens: None,
            },
            spent: cadre_protocol::Spend {
                tokens: 1500,
                cost_usd: 0.41,
            },
            ..Default::default()
        };
        let mut usage = TaskUsage {
            turns: 2,
            tool_calls_requested: 3,
            ..TaskUsage::default()
        };
        usage.tokens.input = 1200;
        usage.tokens.output = 300;
        let mut tree = tree(&[started("a", None, "Explore", "look")], t0);
        tree.apply(
            &TaskEvent::Turn {
                budget: Some(budget),
                task_id: "a".into(),
                usage,
                preview: String::new(),
                phase: TaskPhase::Working,
            },
            t0,
        );
        let frame = tree.frame(200, 20, t0 + Duration::from_secs(5));
        assert_eq!(
            frame,
            ["▸ Explore  look · turn 3 · 2t 3c 1.5k tok · $0.41/$0.50 · 5s"]
        );
        budget.spent.cost_usd = 0.52;
        budget.exhausted = Some(cadre_protocol::Meter::Cost);
        tree.apply(
            &TaskEvent::Ended {
                budget: Some(budget),
                task_id: "a".into(),
                status: TaskStatus::Partial,
                termination: Some(cadre_protocol::TerminationKind::CostBudget),
            },
            t0 + Duration::from_secs(7),
        );
        let frame = tree.frame(200, 20, t0 + Duration::from_secs(9));
        assert_eq!(
            frame,
            ["◐ Explore  look · partial (cost budget) · 2t 3c 1.5k tok · $0.52/$0.50 · 7s"]
        );
    }

    #[test]
    fn lines_are_clipped_below_80_columns() {
        let t0 = Instant::now();
        let long = "word ".repeat(40);
        let tree = tree(
            &[
                started("a", None, "Explore", &long),
                started("b", Some("a"), "Explore", "é".repeat(100).as_str()),
            ],
            t0,
        );
        let frame = tree.frame(80, 20, t0);
        assert_eq!(frame.len(), 2);
        for line in &frame {
            assert_eq!(line.chars().count(), 79, "{line}");
            assert!(line.ends_with('…'), "{line}");
        }
        assert!(frame[0].starts_with("▸ Explore  word word"));
        assert!(frame[1].starts_with("  ▸ Explore  éé"));
    }

    /// `event` (a start) with `name` and, when given, `phase`.
    fn with(event: TaskEvent, name: Option<&str>, phase: Option<TaskPhase>) -> TaskEvent {
        let TaskEvent::Started {
            task_id,
            parent_task_id,
            agent,
            description,
            background,
            phase: was,
            ..
        } = event
        else {
            panic!("not a start: {event:?}");
        };
        TaskEvent::Started {
            task_id,
            parent_task_id,
            name: name.map(str::to_string),
            agent,
            description,
            background,
            phase: phase.unwrap_or(was),
        }
    }

    fn turn(id: &str, turns: u32, phase: TaskPhase) -> TaskEvent {
        TaskEvent::Turn {
            budget: None,
            task_id: id.into(),
            usage: TaskUsage {
                turns,
                ..TaskUsage::default()
            },
            preview: String::new(),
            phase,
        }
    }

    #[test]
    fn a_named_task_shows_its_name_after_the_role() {
        let t0 = Instant::now();
        let named = TaskEvent::Started {
            task_id: "a".into(),
            parent_task_id: None,
            name: Some("auth-scan".into()),
            agent: "Explore".into(),
            description: "find the login code".into(),
            background: true,
            phase: TaskPhase::Starting,
        };
        let blank = with(started("b", None, "Plan", "no name"), Some(" \x1b "), None);
        let frame = tree(&[named, blank], t0).frame(200, 20, t0);
        assert_eq!(
            frame[0],
            "▸ Explore \"auth-scan\" (bg)  find the login code · starting · 0t 0c 0 tok · 0s"
        );
        // A name of nothing printable is no name.
        assert!(frame[1].starts_with("▸ Plan  no name · "), "{:?}", frame[1]);
    }

    #[test]
    fn the_final_handoff_phase_is_shown_and_the_usual_phases_are_not() {
        let t0 = Instant::now();
        let mut tree = tree(&[started("a", None, "Explore", "look")], t0);
        let state = |tree: &Tree| {
            tree.frame(200, 20, t0)[0]
                .split(" · ")
                .nth(1)
                .unwrap()
                .to_string()
        };
        assert_eq!(state(&tree), "starting");
        tree.apply(&turn("a", 1, TaskPhase::Working), t0);
        assert_eq!(state(&tree), "turn 2");
        tree.apply(&turn("a", 2, TaskPhase::FinalHandoff), t0);
        let frame = tree.frame(200, 20, t0);
        assert!(
            frame[0].contains(" · turn 3 · final handoff · 2t "),
            "{frame:?}"
        );
        tree.apply(
            &TaskEvent::Ended {
                budget: None,
                task_id: "a".into(),
                status: TaskStatus::Partial,
                termination: None,
            },
            t0,
        );
        let frame = tree.frame(200, 20, t0);
        assert_eq!(frame, ["◐ Explore  look · partial · 2t 0c 0 tok · 0s"]);
    }

    #[test]
    fn a_reopened_task_takes_the_phase_it_restarts_in() {
        let t0 = Instant::now();
        let mut tree = tree(&[started("a", None, "Explore", "look")], t0);
        tree.apply(&turn("a", 3, TaskPhase::FinalHandoff), t0);
        tree.apply(
            &TaskEvent::Ended {
                budget: None,
                task_id: "a".into(),
                status: TaskStatus::Completed,
                termination: None,
            },
            t0,
        );
        tree.apply(
            &with(
                started("a", None, "Explore", "look"),
                None,
                Some(TaskPhase::Working),
            ),
            t0,
        );
        assert_eq!(
            tree.frame(200, 20, t0)[0],
            "▸ Explore  look · turn 4 · 3t 0c 0 tok · 0s"
        );
    }

    #[test]
    fn wide_characters_are_clipped_by_columns_and_never_wrap() {
        let t0 = Instant::now();
        let tree = tree(
            &[
                started("a", None, "Explore", &"認証コードを探す".repeat(10)),
                started("b", None, "Explore", &"🔍🚀".repeat(40)),
                started("c", None, "Explore", &"👨\u{200d}👩\u{200d}👧 ".repeat(20)),
                started("d", None, "探索", "短い"),
            ],
            t0,
        );
        let frame = tree.frame(80, 20, t0);
        assert_eq!(frame.len(), 4);
        for line in &frame[..3] {
            let cols = columns(line);
            // A wide character that would end on column 79 leaves that column empty.
            assert!((78..=79).contains(&cols), "{cols} columns: {line}");
            assert!(line.ends_with('…'), "{line}");
            assert!(line.chars().count() < 79, "clipped by characters: {line}");
        }
        assert!(!frame[3].ends_with('…'), "{}", frame[3]);
        assert!(frame[3].starts_with("▸ 探索  短い · "), "{}", frame[3]);
    }

    #[test]
    fn columns_count_wide_characters_twice_and_unjoined_sequences_in_full() {
        assert_eq!(columns("abc"), 3);
        assert_eq!(columns("認証"), 4);
        assert_eq!(columns("🔍"), 2);
        assert_eq!(columns("e\u{301}"), 1);
        // Joined, a family is 2 columns; a terminal that does not join draws 6.
        assert_eq!(columns("👨\u{200d}👩\u{200d}👧"), 6);
        assert_eq!(clip_columns("認証コード", 7), "認証コ…");
        assert_eq!(clip_columns("認証コード", 10), "認証コード");
        assert_eq!(clip_columns("ab", 1), "…");
    }

    #[test]
    fn control_characters_from_the_model_are_removed() {
        let t0 = Instant::now();
        let tree = tree(
            &[started(
                "a",
                None,
                "Ex\x1bplore",
                "evil\x1b[2J\x1b]0;title\x07 text\r\nnext\u{202e}line\x08",
            )],
            t0,
        );
        let frame = tree.frame(200, 20, t0);
        assert_eq!(frame.len(), 1);
        assert!(!frame[0].chars().any(|c| c.is_control()), "{:?}", frame[0]);
        assert!(!frame[0].contains('\u{202e}'));
        assert!(
            frame[0].starts_with("▸ Explore  evil[2J]0;title text  nextline · "),
            "{:?}",
            frame[0]
        );
    }

    #[test]
    fn a_long_tree_is_capped_with_a_count_of_the_rest() {
        let t0 = Instant::now();
        let events: Vec<TaskEvent> = (0..30)
            .map(|i| started(&format!("t{i}"), None, "Explore", &format!("task {i}")))
            .collect();
        let frame = tree(&events, t0).frame(80, 5, t0);
        assert_eq!(frame.len(), 5);
        assert!(frame[3].starts_with("▸ Explore  task 3 "), "{frame:?}");
        assert_eq!(frame[4], "  … 26 more tasks");
    }

    #[test]
    fn a_parent_cycle_does_not_loop_and_an_unknown_parent_is_a_top_level_task() {
        let t0 = Instant::now();
        let tree = tree(
            &[
                started("a", Some("b"), "Explore", "a"),
                started("b", Some("a"), "Explore", "b"),
                started("c", Some("gone"), "Explore", "c"),
            ],
            t0,
        );
        // a and b are each other's parent: neither is a top-level task, yet each gets a line.
        let frame = tree.frame(80, 20, t0);
        assert_eq!(frame.len(), 3, "{frame:?}");
        assert!(frame[0].starts_with("▸ Explore  c "), "{frame:?}");
        assert!(frame[1].starts_with("▸ Explore  a "), "{frame:?}");
        assert!(frame[2].starts_with("  ▸ Explore  b "), "{frame:?}");
    }

    #[test]
    fn erasing_moves_up_over_the_frame_and_clears_below() {
        assert_eq!(erase(0), "");
        assert_eq!(erase(3), "\r\x1b[3A\x1b[J");
    }
}
