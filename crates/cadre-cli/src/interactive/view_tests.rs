//! The main screens, rendered on ratatui's test backend and compared with the snapshot files in
//! `snapshots/` (review a change with `cargo insta review`, or `INSTA_UPDATE=always`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use cadre_core::orchestrator::manager::TaskEvent;
use cadre_protocol::{AgentEvent, TaskPhase, TaskStatus, TaskUsage};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use super::app::{App, Status};
use super::theme::Theme;
use super::transcript::NoteKind;
use crate::task_board::tests::started;

fn status() -> Status {
    Status {
        model: "anthropic/claude-sonnet-4-6".into(),
        thinking: "medium".into(),
        plan: false,
        session: "0198a1b2".into(),
        queued: (0, 0),
        budget: None,
    }
}

fn render(app: &App, cols: u16, rows: u16, now: Instant) -> String {
    let mut terminal = Terminal::new(TestBackend::new(cols, rows)).unwrap();
    terminal
        .draw(|f| super::draw::draw(f, app, Theme { color: false }, now))
        .unwrap();
    let buffer = terminal.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        let mut line = String::new();
        let mut skip = 0;
        for x in 0..buffer.area.width {
            // A wide character's second cell holds a placeholder, not a column of its own.
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let symbol = buffer[(x, y)].symbol();
            skip = super::text::width(symbol).saturating_sub(1);
            line.push_str(symbol);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn usage(turns: u32, tools: u32, tokens: u64, cost: f64) -> TaskUsage {
    let mut u = TaskUsage {
        turns,
        tool_calls_executed: tools,
        ..TaskUsage::default()
    };
    u.tokens.total_tokens = tokens;
    u.tokens.cost.total = cost;
    u
}

/// A conversation with a fan-out: two tasks in the background, one with a nested child, one
/// failed, one done.
fn busy_app(t0: Instant) -> App {
    let mut app = App::new(std::env::temp_dir(), status());
    app.transcript
        .user("Find where the session file is written and check it is atomic");
    app.transcript.apply(&AgentEvent::ToolExecutionStart {
        tool_call_id: "c1".into(),
        tool_name: "Agent".into(),
        args: json!({"subagent_type": "Explore", "description": "find the writer"}),
    });
    app.transcript.apply(&AgentEvent::ToolExecutionEnd {
        tool_call_id: "c1".into(),
        tool_name: "Agent".into(),
        result: json!({"content": [{"type": "text", "text": "Launched task 0198 in the background.\nIts result arrives as a notification."}]}),
        is_error: false,
    });
    app.transcript.apply(&AgentEvent::ToolExecutionStart {
        tool_call_id: "c2".into(),
        tool_name: "edit".into(),
        args: json!({"path": "src/session/writer.rs"}),
    });
    app.transcript.apply(&AgentEvent::ToolExecutionEnd {
        tool_call_id: "c2".into(),
        tool_name: "edit".into(),
        result: json!({"content": [{"type": "text", "text": "edited"}],
            "details": {"diff": "@@ -10,2 +10,2 @@\n-    file.write_all(line)?;\n+    file.write_all(line.as_bytes())?;\n     Ok(())"}}),
        is_error: false,
    });
    app.transcript.note(
        NoteKind::Task,
        "task Explore writer-scan completed after 12s · 3 turns · 4.1k tokens · $0.01",
    );
    app.busy = true;
    let b = &mut app.board;
    b.apply(
        &started("t1", None, "Explore", "find the session writer"),
        t0,
    );
    b.apply(
        &started("t2", None, "general-purpose", "make the writes atomic"),
        t0,
    );
    b.apply(
        &started("t2a", Some("t2"), "reviewer", "review the change"),
        t0 + Duration::from_secs(20),
    );
    b.apply(
        &started(
            "t3",
            None,
            "Plan",
            "plan the migration of old session files",
        ),
        t0,
    );
    b.apply(&started("t4", None, "Explore", "count callers"), t0);
    for (id, u) in [
        ("t1", usage(3, 7, 4_100, 0.012)),
        ("t2", usage(12, 31, 88_000, 0.41)),
        ("t2a", usage(1, 2, 2_300, 0.004)),
        ("t3", usage(2, 1, 9_900, 0.03)),
        ("t4", usage(1, 0, 800, 0.001)),
    ] {
        b.apply(
            &TaskEvent::Turn {
                budget: None,
                task_id: id.into(),
                usage: u,
                preview: format!("working on {id}"),
                phase: TaskPhase::Working,
            },
            t0,
        );
    }
    b.apply(
        &TaskEvent::Ended {
            budget: None,
            task_id: "t1".into(),
            status: TaskStatus::Completed,
            termination: None,
        },
        t0 + Duration::from_secs(12),
    );
    b.apply(
        &TaskEvent::Ended {
            budget: None,
            task_id: "t4".into(),
            status: TaskStatus::Failed,
            termination: None,
        },
        t0 + Duration::from_secs(3),
    );
    app
}

fn named(app: &mut App) {
    // Names and phases come from the task records (the loop fills them from snapshots).
    for (id, name, phase) in [
        ("t1", "writer-scan", TaskPhase::Terminal),
        ("t2", "atomic-writes", TaskPhase::Working),
        ("t2a", "review", TaskPhase::FinalHandoff),
        ("t3", "", TaskPhase::Starting),
        ("t4", "callers", TaskPhase::Terminal),
    ] {
        let mut snapshot = fake_snapshot(id);
        snapshot.name = (!name.is_empty()).then(|| name.to_string());
        snapshot.phase = phase;
        app.board.fill(&snapshot);
        let _ = snapshot;
    }
}

fn fake_snapshot(id: &str) -> cadre_core::orchestrator::manager::TaskSnapshot {
    cadre_core::orchestrator::manager::TaskSnapshot {
        task_id: id.into(),
        name: None,
        agent: String::new(),
        description: String::new(),
        status: TaskStatus::Running,
        phase: TaskPhase::Working,
        termination: None,
        usage: TaskUsage::default(),
        preview: String::new(),
        output: String::new(),
        output_file: String::new(),
        error: None,
        worktree: None,
    }
}

#[test]
fn the_task_panel_at_80_columns() {
    let t0 = Instant::now();
    let mut app = busy_app(t0);
    named(&mut app);
    insta::assert_snapshot!(render(&app, 80, 24, t0 + Duration::from_secs(65)));
}

#[test]
fn the_task_panel_at_200_columns() {
    let t0 = Instant::now();
    let mut app = busy_app(t0);
    named(&mut app);
    insta::assert_snapshot!(render(&app, 200, 24, t0 + Duration::from_secs(65)));
}

#[test]
fn a_streaming_reply_with_thinking_collapsed_and_expanded() {
    let mut app = App::new(std::env::temp_dir(), status());
    app.transcript.user("why is the test flaky?");
    app.transcript.apply(&AgentEvent::MessageEnd {
        message: {
            let mut m = cadre_protocol::AssistantMessage::empty("t", "t", "t");
            m.content = vec![
                cadre_protocol::ContentBlock::Thinking {
                    thinking: "The test waits on a timer.\nIt races the child's exit.".into(),
                    signature: None,
                    redacted: false,
                },
                cadre_protocol::ContentBlock::text("It races the child's exit: the assertion runs before the supervisor reaps it. Waiting on the exit status instead fixes it."),
            ];
            cadre_protocol::Message::Assistant(m)
        },
    });
    app.editor.insert("and the other one?");
    let now = Instant::now();
    let collapsed = render(&app, 80, 12, now);
    app.show_thinking = true;
    let expanded = render(&app, 80, 12, now);
    insta::assert_snapshot!("thinking_collapsed", collapsed);
    insta::assert_snapshot!("thinking_expanded", expanded);
}

#[test]
fn tool_output_collapsed_and_expanded() {
    let mut app = App::new(std::env::temp_dir(), status());
    app.transcript.apply(&AgentEvent::ToolExecutionStart {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        args: json!({"command": "cargo test -p store"}),
    });
    app.transcript.apply(&AgentEvent::ToolExecutionEnd {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        result: json!({"content": [{"type": "text", "text": "running 3 tests\ntest a ... ok\ntest b ... ok\ntest c ... ok\n\ntest result: ok. 3 passed"}]}),
        is_error: false,
    });
    let now = Instant::now();
    let collapsed = render(&app, 80, 10, now);
    app.expand_tools = true;
    let expanded = render(&app, 80, 10, now);
    assert!(!collapsed.contains("test b ... ok"), "{collapsed}");
    assert!(expanded.contains("test b ... ok"), "{expanded}");
    insta::assert_snapshot!("tool_collapsed", collapsed);
    insta::assert_snapshot!("tool_expanded", expanded);
}

#[test]
fn hostile_text_cannot_draw_outside_its_cell() {
    let mut app = App::new(std::env::temp_dir(), status());
    app.transcript
        .note(NoteKind::Info, "\x1b[2J\x1b]0;owned\x07 \u{202e}gnp.exe");
    let t0 = Instant::now();
    app.board.apply(
        &started(
            "x",
            None,
            "evil\x1b[31m",
            "日本語の説明がとても長いタスクです日本語の説明がとても長いタスクです",
        ),
        t0,
    );
    let screen = render(&app, 80, 10, t0);
    assert!(
        !screen.contains('\x1b') && !screen.contains('\u{202e}'),
        "{screen}"
    );
    for line in screen.lines() {
        assert!(super::text::width(line) <= 80, "{line}");
    }
}

#[test]
fn many_tasks_keep_the_running_ones_in_view() {
    let t0 = Instant::now();
    let mut app = App::new(std::env::temp_dir(), status());
    for i in 0..30 {
        app.board.apply(
            &started(&format!("t{i:02}"), None, "Explore", &format!("job {i}")),
            t0,
        );
    }
    for i in 0..25 {
        app.board.apply(
            &TaskEvent::Ended {
                budget: None,
                task_id: format!("t{i:02}"),
                status: TaskStatus::Completed,
                termination: None,
            },
            t0,
        );
    }
    let screen = render(&app, 80, 24, t0);
    for i in 25..30 {
        assert!(
            screen.contains(&format!("job {i}")),
            "job {i} missing:\n{screen}"
        );
    }
    assert!(screen.contains("more (/tasks lists them all)"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn a_tiny_terminal_does_not_break() {
    let app = busy_app(Instant::now());
    for (cols, rows) in [(1, 1), (9, 3), (20, 5), (80, 4)] {
        let _ = render(&app, cols, rows, Instant::now());
    }
}

/// Under a cap, the status line shows the session's spend and each capped task's row what it
/// spent of its own cap; uncapped rows keep their tokens and cost.
#[test]
fn a_session_and_tasks_under_a_budget() {
    let t0 = Instant::now();
    let mut app = busy_app(t0);
    named(&mut app);
    let capped = |spent: f64, cap: f64, exhausted: bool| cadre_protocol::BudgetState {
        cap: cadre_protocol::Limits {
            max_cost_usd: Some(cap),
            max_tokens: None,
        },
        spent: cadre_protocol::Spend {
            tokens: 0,
            cost_usd: spent,
        },
        exhausted: exhausted.then_some(cadre_protocol::Meter::Cost),
        ..Default::default()
    };
    app.board.apply(
        &TaskEvent::Turn {
            budget: Some(capped(0.19, 0.25, false)),
            task_id: "t3".into(),
            usage: usage(3, 1, 12_000, 0.19),
            preview: "working on t3".into(),
            phase: TaskPhase::Working,
        },
        t0,
    );
    app.status.budget = Some(cadre_protocol::BudgetState {
        cap: cadre_protocol::Limits {
            max_cost_usd: Some(2.0),
            max_tokens: Some(500_000),
        },
        spent: cadre_protocol::Spend {
            tokens: 104_200,
            cost_usd: 0.62,
        },
        ..Default::default()
    });
    let screen = render(&app, 100, 24, t0 + Duration::from_secs(65));
    assert!(screen.contains("$0.19/$0.25"), "{screen}");
    assert!(
        screen.contains("budget $0.62/$2.00 · 104.2k/500k tok · /help"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}
