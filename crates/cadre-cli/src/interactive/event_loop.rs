//! The interactive loop: terminal events, host events and command replies in; frames out.
//!
//! Frames are drawn only when something changed, at most one per [`FRAME_GAP`], and the
//! clock ticks only while a turn or a task runs (elapsed times move once a second): an idle
//! session sleeps in the kernel.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use cadre_core::orchestrator::manager::TaskEvent;
use cadre_host::{Host, HostContext, HostEvent, HostOptions, SessionChoice, StartedHost};
use cadre_protocol::{AgentEvent, UserContent};
use ratatui::crossterm::event::Event;
use tokio::sync::mpsc;

use super::app::{Action, App, Status};
use super::commands::{self, Effect, Env, Reply};
use super::slash::Slash;
use super::terminal;
use super::theme::Theme;
use super::transcript::{NoteKind, Transcript};
use crate::task_board::Board;

/// The least time between two frames (about 60 a second at most).
pub const FRAME_GAP: Duration = Duration::from_millis(16);
/// The least time between two frames that change only the task panel: a fan-out's turns need
/// not be shown at 60 frames a second.
pub const PANEL_GAP: Duration = Duration::from_millis(100);

/// The gap before the next frame: short when what the person reads or types changed (or
/// nothing was drawn yet), longer when only the panel did.
pub fn frame_gap(drawn: Option<(u64, u64)>, showing: (u64, u64)) -> Duration {
    match drawn {
        Some((foreground, _)) if foreground == showing.0 => PANEL_GAP,
        _ => FRAME_GAP,
    }
}

/// How often the screen is redrawn while something runs, for elapsed times.
const TICK: Duration = Duration::from_secs(1);

/// What the mode starts with besides the host.
pub struct Setup {
    pub ctx: Arc<HostContext>,
    pub options: HostOptions,
    pub cwd: PathBuf,
    /// Notes from loading the context and starting the session.
    pub notes: Vec<String>,
    /// `-r`: open with the list of sessions to resume.
    pub show_sessions: bool,
    /// Launches waiting for the person's answer (D3 `ask`).
    pub asks: mpsc::UnboundedReceiver<super::confirm::Ask>,
    /// `--api-key`, for loading the context again (`/trust`).
    pub runtime_key: Option<cadre_host::RuntimeKey>,
}

impl Setup {
    /// The live session this setup and `started` make, and what is left of the setup.
    pub fn open(self, started: StartedHost) -> (Live, Opened) {
        let live = Live {
            host: started.host,
            events: started.events,
            ctx: self.ctx,
            options: self.options,
            runtime_key: self.runtime_key,
        };
        let opened = Opened {
            cwd: self.cwd,
            notes: self.notes,
            show_sessions: self.show_sessions,
            asks: self.asks,
        };
        (live, opened)
    }
}

/// [`Setup`] once its session is live.
pub struct Opened {
    pub cwd: PathBuf,
    pub notes: Vec<String>,
    pub show_sessions: bool,
    pub asks: mpsc::UnboundedReceiver<super::confirm::Ask>,
}

/// The session a front end drives, and everything needed to start it again.
pub struct Live {
    pub host: Host,
    pub events: mpsc::UnboundedReceiver<HostEvent>,
    pub ctx: Arc<HostContext>,
    pub options: HostOptions,
    runtime_key: Option<cadre_host::RuntimeKey>,
}

impl Live {
    pub fn env(&self, cwd: &std::path::Path) -> Env {
        Env {
            cwd: cwd.to_path_buf(),
            session_dir: self.ctx.session_dir(self.options.session_dir.as_deref()),
            plan: self.options.plan,
            live_usage: Default::default(),
        }
    }

    /// Start the session again on its own file: plan mode changed (`plan`) or the project's
    /// trust did (the context is loaded again). Returns the notes of starting it.
    pub async fn restart(
        &mut self,
        cwd: &std::path::Path,
        plan: Option<bool>,
    ) -> Result<Vec<String>, String> {
        let file = self.host.state().session_file;
        let mut options = self.options.clone();
        if let Some(plan) = plan {
            options.plan = plan;
        }
        // Only a file that exists is continued: a session nothing was said in has none yet,
        // and naming its path would create it.
        if let Some(file) = file.as_ref().filter(|f| f.exists()) {
            options.session = SessionChoice::Named(file.to_string_lossy().into_owned());
        }
        let ctx = if plan.is_none() {
            let trust_flag = options.trust;
            match HostContext::load(cwd, trust_flag, self.runtime_key.clone()) {
                Ok(ctx) => Arc::new(ctx),
                Err(e) => return Err(format!("cannot reload the project's settings: {e:#}")),
            }
        } else {
            self.ctx.clone()
        };
        // Checked again now: a prompt may have started since the command was typed, and a
        // restart must not cut a turn or stop tasks.
        if self.host.is_streaming() || !self.host.tasks().live().is_empty() {
            return Err("not restarted: the agent or a task started working meanwhile; try again when they are done".into());
        }
        self.host.interrupt();
        let _ = tokio::time::timeout(SHUTDOWN_WAIT, self.host.shutdown()).await;
        let started = Host::start(ctx.clone(), options.clone())
            .await
            .map_err(|e| format!("cannot start the session again: {e:#}"))?;
        let mut notes: Vec<String> = ctx.notes.clone();
        notes.extend(started.warnings);
        self.host = started.host;
        self.events = started.events;
        self.ctx = ctx;
        self.options = options;
        Ok(notes)
    }
}

/// The status line's facts, from the host.
pub fn status_of(live: &Live) -> Status {
    let state = live.host.state();
    let session = state
        .session_name
        .clone()
        .or_else(|| {
            state
                .session_file
                .as_ref()
                // UUIDv7 starts with the time: 13 characters reach past the millisecond.
                .map(|_| state.session_id.chars().take(13).collect())
        })
        .unwrap_or_else(|| "not saved".into());
    Status {
        model: state.model.full_name(),
        thinking: state.thinking.as_str().to_string(),
        plan: live.options.plan,
        session,
        queued: (state.steering.len(), state.follow_up.len()),
        budget: state.budget,
    }
}

/// A fresh screen model for the live session: its conversation so far and its notes.
pub fn app_for(live: &Live, cwd: &std::path::Path, notes: &[String]) -> App {
    let mut app = App::new(cwd.to_path_buf(), status_of(live));
    app.transcript = Transcript::from_messages(&live.host.messages());
    for note in notes {
        app.transcript.note(note_kind(note), note.clone());
    }
    app
}

pub fn note_kind(note: &str) -> NoteKind {
    if note.starts_with("warning") {
        NoteKind::Warning
    } else if note.starts_with("error") {
        NoteKind::Error
    } else {
        NoteKind::Info
    }
}

/// Take in one host event.
pub fn apply_event(app: &mut App, host: &Host, event: HostEvent, now: Instant) {
    // Spend changes when a response ends, the root's or a task's.
    let spent = matches!(
        &event,
        HostEvent::Agent(AgentEvent::MessageEnd { .. } | AgentEvent::AgentEnd { .. })
            | HostEvent::Task(TaskEvent::Turn { .. } | TaskEvent::Ended { .. })
    );
    if spent {
        refresh_budget(app, host);
    }
    match event {
        HostEvent::Agent(event) => {
            match &event {
                AgentEvent::AgentStart => app.busy = true,
                AgentEvent::AgentEnd { .. } => {
                    app.busy = false;
                    app.status.queued = (0, 0);
                }
                AgentEvent::QueueUpdate {
                    steering,
                    follow_up,
                } => app.status.queued = (steering.len(), follow_up.len()),
                _ => {}
            }
            app.transcript.apply(&event);
            app.changed();
        }
        HostEvent::Task(event) => {
            apply_task_event(&mut app.board, &mut app.transcript, host, &event, now)
        }
    }
}

/// The status line's budget as the session's ledger has it now.
fn refresh_budget(app: &mut App, host: &Host) {
    let budget = host.tasks().budget();
    if app.status.budget != budget {
        app.status.budget = budget;
        app.changed();
    }
}

pub fn apply_task_event(
    board: &mut Board,
    transcript: &mut Transcript,
    host: &Host,
    event: &TaskEvent,
    now: Instant,
) {
    board.apply(event, now);
    let TaskEvent::Ended { task_id: id, .. } = event else {
        return;
    };
    if let Ok(snapshot) = host.tasks().snapshot(id) {
        board.fill(&snapshot);
    }
    if let (TaskEvent::Ended { status, .. }, Some(row)) = (event, board.get(id)) {
        let who = match &row.name {
            Some(name) => format!("{} {name}", row.agent),
            None => format!("{} ({})", row.agent, row.description),
        };
        // Under a cap, what it spent of it and whether the cap stopped it.
        let budget = row.budget.as_ref().and_then(|b| {
            let mut text = format!(" · budget {}", cadre_core::budget::text::compact(b)?);
            if let Some(meter) = b.exhausted {
                text.push_str(match meter {
                    cadre_protocol::Meter::Cost => ", stopped by its cost budget",
                    cadre_protocol::Meter::Tokens => ", stopped by its token budget",
                });
            }
            Some(text)
        });
        transcript.note(
            NoteKind::Task,
            format!(
                "task {who} {} after {} · {} turn{} · {} tokens · {}{}",
                format!("{status:?}").to_lowercase(),
                crate::task_board::elapsed_text(row.elapsed(now)),
                row.usage.turns,
                if row.usage.turns == 1 { "" } else { "s" },
                crate::commands::format::tokens(row.usage.tokens.total_tokens),
                crate::commands::format::cost(row.usage.tokens.cost.total),
                budget.unwrap_or_default(),
            ),
        );
    }
}

/// How the mode ended: the session file, and the signal that ended it (if one did).
pub struct Closed {
    pub session: Option<PathBuf>,
    pub signal: Option<i32>,
}

/// Run the full-screen mode until the person leaves.
pub async fn run(started: StartedHost, setup: Setup) -> Result<Closed> {
    let (mut live, opened) = setup.open(started);
    let Opened {
        cwd,
        notes,
        show_sessions,
        mut asks,
    } = opened;
    let mut waiting: std::collections::VecDeque<super::confirm::Ask> = Default::default();
    // A closed channel would be ready forever: it is no longer polled.
    let mut asks_open = true;
    let theme = Theme::from_env();
    let mut app = app_for(&live, &cwd, &notes);
    let (reply_tx, mut replies) = mpsc::unbounded_channel::<Reply>();
    if show_sessions {
        let _ = reply_tx
            .send(commands::run(live.host.clone(), live.env(&cwd), Slash::Resume(None)).await);
    } else if app.transcript.entries.is_empty() {
        app.transcript.note(
            NoteKind::Info,
            "cadre — type a prompt and Enter; /help lists commands and keys",
        );
    }
    let mut session = terminal::Session::enter()?;
    let mut keys = terminal::spawn_reader();
    let mut signals = cadre_host::Signals::new().ok();
    let mut hangup = hangup_signal();
    let mut signal = None;
    let mut ticker = tokio::time::interval(TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // What the last frame showed: the conversation and input's version, the panel's.
    let mut drawn: Option<(u64, u64)> = None;
    let mut last_draw = Instant::now() - FRAME_GAP;
    let mut ticked = false;
    loop {
        let now = Instant::now();
        let showing = (app.foreground_version(), app.board.version);
        let gap = frame_gap(drawn, showing);
        let dirty = drawn != Some(showing) || ticked;
        if dirty && now.duration_since(last_draw) >= gap {
            session
                .screen
                .draw(|f| super::draw::draw(f, &app, theme, now))?;
            drawn = Some(showing);
            last_draw = now;
            ticked = false;
        }
        let showing = (app.foreground_version(), app.board.version);
        let pending = drawn != Some(showing) || ticked;
        let next_frame = tokio::time::Instant::from_std(last_draw + frame_gap(drawn, showing));
        let running = app.busy || app.board.running() > 0;
        tokio::select! {
            key = keys.recv() => match key {
                Some(Event::Key(key)) => {
                    let action = app.on_key(key);
                    if action == Action::Redraw {
                        let _ = session.screen.clear();
                        drawn = None;
                        continue;
                    }
                    if let Action::Answer(allow) = action {
                        if let Some(ask) = waiting.pop_front() {
                            let word = if allow { "allowed" } else { "declined" };
                            app.transcript.note(NoteKind::Info, format!("{word}: {}", ask.summary));
                            let _ = ask.answer.send(allow);
                        }
                        app.asking = waiting.front().map(|a| a.summary.clone());
                        app.answer.clear();
                        continue;
                    }
                    if !act(&mut app, &mut live, &cwd, action, &reply_tx) {
                        break;
                    }
                }
                Some(Event::Paste(text)) => app.on_paste(&text),
                Some(Event::Resize(..)) => {
                    app.changed();
                    let _ = session.screen.autoresize();
                }
                Some(_) => {}
                // The terminal is gone.
                None => break,
            },
            event = live.events.recv() => match event {
                Some(event) => {
                    apply_event(&mut app, &live.host, event, Instant::now());
                    // Coalesce a burst of events into one frame.
                    for _ in 0..256 {
                        match live.events.try_recv() {
                            Ok(event) => apply_event(&mut app, &live.host, event, Instant::now()),
                            Err(_) => break,
                        }
                    }
                }
                None => {
                    app.transcript.note(NoteKind::Error, "the session ended");
                    break;
                }
            },
            reply = replies.recv() => {
                if let Some(reply) = reply {
                    take_reply(&mut app, &mut live, &cwd, reply).await;
                }
            },
            ask = asks.recv(), if asks_open => {
                asks_open = ask.is_some();
                if let Some(ask) = ask {
                    // In full, whatever its length: the line above the input is clipped, and
                    // what a launch would do must be readable before it is allowed.
                    app.transcript.note(
                        NoteKind::Warning,
                        format!("the agent asks to launch {}", ask.summary),
                    );
                    waiting.push_back(ask);
                    app.asking = waiting.front().map(|a| a.summary.clone());
                    app.changed();
                }
            },
            _ = tokio::time::sleep_until(next_frame), if pending => {},
            _ = ticker.tick(), if running => ticked = true,
            got = next_signal(&mut signals) => {
                signal = Some(got);
                break;
            }
            // The terminal closed: end as for SIGTERM (tasks stopped and recorded, L6).
            () = next_hangup(&mut hangup) => {
                signal = Some(libc::SIGHUP);
                break;
            }
        }
    }
    drop(session);
    live.host.interrupt();
    let closed = tokio::time::timeout(SHUTDOWN_WAIT, live.host.shutdown()).await;
    Ok(Closed {
        session: closed.ok().and_then(Result::ok).flatten(),
        signal,
    })
}

/// How long leaving (or restarting) waits for the session to close: the run is interrupted
/// first, so this is only reached by a tool that does not end.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(15);

fn hangup_signal() -> Option<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok()
}

async fn next_hangup(hangup: &mut Option<tokio::signal::unix::Signal>) {
    match hangup {
        Some(s) => {
            if s.recv().await.is_none() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending::<()>().await,
    }
}

/// The next SIGINT or SIGTERM (never, when they cannot be watched).
pub async fn next_signal(signals: &mut Option<cadre_host::Signals>) -> i32 {
    match signals {
        Some(s) => match s.next().await {
            Some(n) => n,
            None => std::future::pending::<i32>().await,
        },
        None => std::future::pending::<i32>().await,
    }
}

/// Carry out a key's action. Returns false to leave.
pub fn act(
    app: &mut App,
    live: &mut Live,
    cwd: &std::path::Path,
    action: Action,
    replies: &mpsc::UnboundedSender<Reply>,
) -> bool {
    let host = &live.host;
    let result = match action {
        Action::None | Action::Redraw | Action::Answer(_) => Ok(()),
        Action::Quit => {
            let running = app.board.running();
            if running == 0 || app.leave_warned {
                return false;
            }
            // Leaving stops the tasks (L6): said once, then the same key leaves.
            app.leave_warned = true;
            app.flash = Some(format!(
                "{running} task{} still running{} stopped if you leave; press again to leave",
                if running == 1 { " is" } else { "s are" },
                if running == 1 { " and is" } else { " and are" },
            ));
            Ok(())
        }
        // The agent may have started on a task notice (or ended) since the key was read: a
        // prompt then steers, a steer then starts a run.
        Action::Send(text) => host
            .prompt(UserContent::Text(text.clone()), None)
            .or_else(|_| host.steer(UserContent::Text(text)))
            .map(|()| app.busy = true),
        Action::Steer(text) => host
            .steer(UserContent::Text(text.clone()))
            .or_else(|_| host.prompt(UserContent::Text(text), None)),
        Action::FollowUp(text) => host.follow_up(UserContent::Text(text.clone())).map(|()| {
            app.transcript.note(
                NoteKind::Info,
                format!("queued for when the agent finishes: {}", first_line(&text)),
            );
        }),
        Action::Abort => {
            host.abort();
            // What was queued for this turn is not sent to a later one: it goes back into
            // the input, as Pi does, to send again or drop.
            let withdrawn = host.withdraw_queued();
            for text in &withdrawn {
                app.transcript.withdraw(text);
            }
            let mut note = String::from("stopped (tasks keep running; /stop ID stops one)");
            if !withdrawn.is_empty() {
                let mut text = withdrawn.join("\n");
                if !app.editor.is_empty() {
                    text.push('\n');
                    text.push_str(app.editor.text());
                }
                app.editor.set(text);
                note.push_str(&format!(
                    "; {} queued message{} put back in the input",
                    withdrawn.len(),
                    if withdrawn.len() == 1 { "" } else { "s" }
                ));
            }
            app.transcript.note(NoteKind::Warning, note);
            Ok(())
        }
        Action::Command(command) => {
            let host = host.clone();
            let mut env = live.env(cwd);
            env.live_usage = app
                .board
                .tree()
                .filter(|(_, r)| r.ended.is_none())
                .map(|(_, r)| (r.id.clone(), r.usage))
                .collect();
            let tx = replies.clone();
            tokio::spawn(async move {
                let _ = tx.send(commands::run(host, env, command).await);
            });
            Ok(())
        }
    };
    if let Err(e) = result {
        app.transcript.note(NoteKind::Error, e.to_string());
    }
    true
}

/// The first line of `text`, cut to 80 columns.
fn first_line(text: &str) -> String {
    super::text::clip(text.lines().next().unwrap_or_default(), 80)
}

/// Show a command's reply and carry out its effect: the effect first (a switched session
/// replaces the conversation), then the reply's notes under it.
pub async fn take_reply(app: &mut App, live: &mut Live, cwd: &std::path::Path, reply: Reply) {
    let mut notes = reply.notes;
    match reply.effect {
        Effect::None => {}
        Effect::Refresh => app.status = status_of(live),
        Effect::Reload => reload(app, live),
        Effect::Restart { plan } => match live.restart(cwd, plan).await {
            Ok(started) => {
                reload(app, live);
                notes.extend(started.iter().map(|n| (note_kind(n), n.clone())));
            }
            Err(e) => notes = vec![(NoteKind::Error, e)],
        },
    }
    for (kind, text) in notes {
        app.transcript.note(kind, text);
    }
    app.changed();
}

/// The live session is another one now: its conversation, no tasks, its status.
fn reload(app: &mut App, live: &Live) {
    let version = app.transcript.version;
    app.transcript = Transcript::from_messages(&live.host.messages());
    app.transcript.version = app.transcript.version.wrapping_add(version).wrapping_add(1);
    app.board.clear();
    app.busy = live.host.is_streaming();
    app.status = status_of(live);
    app.scroll = 0;
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn frames_that_change_only_the_panel_come_less_often() {
        assert_eq!(frame_gap(None, (1, 1)), FRAME_GAP);
        assert_eq!(frame_gap(Some((1, 1)), (2, 1)), FRAME_GAP);
        assert_eq!(frame_gap(Some((1, 1)), (1, 2)), PANEL_GAP);
        assert_eq!(frame_gap(Some((1, 1)), (2, 2)), FRAME_GAP);
    }
}
