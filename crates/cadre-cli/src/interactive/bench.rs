//! `cadre __bench-tui`: frame times of the interactive screen with many live tasks, for
//! `scripts/bench` (section 10). The real drawing code renders into a real crossterm backend
//! whose bytes go nowhere, while task events arrive as a fan-out produces them; it prints the
//! frame time distribution and the CPU the whole pipeline took.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::Result;
use cadre_core::orchestrator::manager::TaskEvent;
use cadre_protocol::{TaskStatus, TaskUsage};
use ratatui::backend::CrosstermBackend;
use ratatui::{Terminal, TerminalOptions, Viewport};

use super::app::{App, Status};
use super::event_loop::{FRAME_GAP, frame_gap};
use super::theme::Theme;
use super::transcript::NoteKind;

/// What to measure.
pub struct BenchArgs {
    pub tasks: usize,
    pub cols: u16,
    pub rows: u16,
    pub seconds: f64,
    /// Turn events per task per second.
    pub rate: f64,
}

pub fn run(args: &BenchArgs) -> Result<()> {
    let now = Instant::now();
    let mut app = App::new(
        std::env::temp_dir(),
        Status {
            model: "anthropic/claude-sonnet-4-6".into(),
            thinking: "medium".into(),
            session: "0198a1b2".into(),
            ..Status::default()
        },
    );
    for i in 0..40 {
        app.transcript
            .user(&format!("prompt {i}: look at the code and report"));
        app.transcript
            .note(NoteKind::Task, format!("task explore scan-{i} completed"));
    }
    app.busy = true;
    // Ten parents with nine children each, and so on: a nested fan-out.
    let ids: Vec<String> = (0..args.tasks).map(|i| format!("task-{i:04}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let parent = (i % 10 != 0).then(|| ids[i - i % 10].clone());
        app.board.apply(
            &TaskEvent::Started {
                task_id: id.clone(),
                parent_task_id: parent,
                name: Some(format!("job-{i}")),
                agent: if i % 10 == 0 {
                    "general-purpose"
                } else {
                    "Explore"
                }
                .into(),
                description: format!("Investigate module {i} and report what calls it"),
                background: true,
                phase: cadre_protocol::TaskPhase::Starting,
            },
            now,
        );
    }
    // A fixed viewport: a full-screen one asks the backend for the terminal's size on every
    // frame, and with no terminal behind the sink crossterm answers by running `tput cols` and
    // `tput lines` — two processes a frame that the real screen never starts.
    let mut terminal = Terminal::with_options(
        CrosstermBackend::new(std::io::sink()),
        TerminalOptions {
            viewport: Viewport::Fixed(ratatui::layout::Rect::new(0, 0, args.cols, args.rows)),
        },
    )?;
    let theme = Theme { color: true };
    let cpu_start = cpu_time();
    let wall_start = Instant::now();
    let total = Duration::from_secs_f64(args.seconds.max(0.1));
    // Events are spread evenly: one every `event_every`.
    let per_second = (args.tasks as f64 * args.rate).max(1.0);
    let event_every = Duration::from_secs_f64(1.0 / per_second);
    let mut next_event = wall_start;
    let mut frames: Vec<Duration> = Vec::new();
    let mut last_frame = wall_start - FRAME_GAP;
    let mut drawn = None;
    let mut k: u64 = 0;
    while wall_start.elapsed() < total {
        let now = Instant::now();
        while next_event <= now {
            let i = (k as usize) % ids.len().max(1);
            let mut usage = TaskUsage::default();
            usage.turns = (k / ids.len().max(1) as u64) as u32 + 1;
            usage.tool_calls_executed = usage.turns * 2;
            usage.tokens.total_tokens = 1_500 * u64::from(usage.turns);
            usage.tokens.cost.total = 0.003 * f64::from(usage.turns);
            app.board.apply(
                &TaskEvent::Turn {
                    budget: None,
                    task_id: ids[i].clone(),
                    usage,
                    preview: format!("turn {} of task {i}", usage.turns),
                    phase: cadre_protocol::TaskPhase::Working,
                },
                now,
            );
            k += 1;
            next_event += event_every;
        }
        // Paced as the interactive loop paces its frames (panel-only changes at most every
        // 100 ms), so the CPU figure is the mode's.
        let showing = (app.foreground_version(), app.board.version);
        let frame_every = frame_gap(drawn, showing);
        if drawn != Some(showing) && now.duration_since(last_frame) >= frame_every {
            let t = Instant::now();
            terminal.draw(|f| super::draw::draw(f, &app, theme, now))?;
            frames.push(t.elapsed());
            drawn = Some(showing);
            last_frame = now;
        }
        let wake = next_event.min(last_frame + frame_gap(drawn, showing));
        if let Some(wait) = wake.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let wall = wall_start.elapsed();
    let cpu = cpu_time().saturating_sub(cpu_start);
    // The tasks end: what an idle screen costs is nothing but the next key.
    for id in &ids {
        app.board.apply(
            &TaskEvent::Ended {
                budget: None,
                task_id: id.clone(),
                status: TaskStatus::Completed,
                termination: None,
            },
            Instant::now(),
        );
    }
    frames.sort();
    let pick = |q: f64| {
        frames
            .get(((frames.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} tasks, {}x{}, {:.0} events/s for {:.1} s: {} frames ({:.0}/s); frame ms p50 {:.2} p99 {:.2} max {:.2}; CPU {:.1}% of one core",
        args.tasks,
        args.cols,
        args.rows,
        per_second,
        wall.as_secs_f64(),
        frames.len(),
        frames.len() as f64 / wall.as_secs_f64(),
        ms(pick(0.5)),
        ms(pick(0.99)),
        ms(frames.last().copied().unwrap_or_default()),
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
    )?;
    Ok(())
}

/// CPU time of this (single-threaded) benchmark, from the scheduler's own count in
/// nanoseconds (`/proc/self/schedstat`); zero where it cannot be read.
fn cpu_time() -> Duration {
    std::fs::read_to_string("/proc/self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}
