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
use super::board::Board;
use super::commands::{self, Effect, Env, Reply};
use super::slash::Slash;
use super::terminal;
use super::theme::Theme;
use super::transcript::{NoteKind, Transcript};

/// The least time between two frames (about 60 a second at most).
pub const FRAME_GAP: Duration = Duration::from_millis(16);
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
}

/// The session a front end drives, and everything needed to start it again.
pub struct Live {
    pub host: Host,
    pub events: mpsc::UnboundedReceiver<HostEvent>,
    pub ctx: Arc<HostContext>,
    pub options: HostOptions,
}

impl Live {
    pub fn env(&self, cwd: &std::path::Path) -> Env {
        Env {
            cwd: cwd.to_path_buf(),
            session_dir: self.ctx.session_dir(self.options.session_dir.as_deref()),
            plan: self.options.plan,
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
        if let Some(file) = &file {
            options.session = SessionChoice::Named(file.to_string_lossy().into_owned());
        }
        let ctx = if plan.is_none() {
            let trust_flag = options.trust;
            match HostContext::load(cwd, trust_flag, None) {
                Ok(ctx) => Arc::new(ctx),
                Err(e) => return Err(format!("cannot reload the project's settings: {e:#}")),
            }
        } else {
            self.ctx.clone()
        };
        let _ = self.host.shutdown().await;
        let started = Host::start(ctx.clone(), options.clone())
            .await
            .map_err(|e| format!("cannot start the session again: {e:#}"))?;
        let mut notes: Vec<String> = ctx.notes.iter().map(|n| format!("note: {n}")).collect();
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
                .map(|_| state.session_id.chars().take(8).collect())
        })
        .unwrap_or_else(|| "not saved".into());
    Status {
        model: state.model.full_name(),
        thinking: state.thinking.as_str().to_string(),
        plan: live.options.plan,
        session,
        queued: (state.steering.len(), state.follow_up.len()),
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
    if let Ok(snapshot) = host.manager().snapshot(id) {
        board.fill(&snapshot);
    }
    if let (TaskEvent::Ended { status, .. }, Some(row)) = (event, board.get(id)) {
        let who = match &row.name {
            Some(name) => format!("{} {name}", row.agent),
            None => format!("{} ({})", row.agent, row.description),
        };
        transcript.note(
            NoteKind::Task,
            format!(
                "task {who} {} after {} · {} turns · {} tokens · {}",
                format!("{status:?}").to_lowercase(),
                super::panel::elapsed(row.elapsed(now)),
                row.usage.turns,
                crate::commands::format::tokens(row.usage.tokens.total_tokens),
                crate::commands::format::cost(row.usage.tokens.cost.total),
            ),
        );
    }
}

/// Run the full-screen mode until the person leaves. Returns the session file.
pub async fn run(started: StartedHost, setup: Setup) -> Result<Option<PathBuf>> {
    let Setup {
        ctx,
        options,
        cwd,
        notes,
        show_sessions,
        mut asks,
    } = setup;
    let mut waiting: std::collections::VecDeque<super::confirm::Ask> = Default::default();
    // A closed channel would be ready forever: it is no longer polled.
    let mut asks_open = true;
    let mut live = Live {
        host: started.host,
        events: started.events,
        ctx,
        options,
    };
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
    let mut ticker = tokio::time::interval(TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut drawn: Option<u64> = None;
    let mut last_draw = Instant::now() - FRAME_GAP;
    let mut ticked = false;
    loop {
        let now = Instant::now();
        let dirty = drawn != Some(app.version()) || ticked;
        if dirty && now.duration_since(last_draw) >= FRAME_GAP {
            session
                .screen
                .draw(|f| super::draw::draw(f, &app, theme, now))?;
            drawn = Some(app.version());
            last_draw = now;
            ticked = false;
        }
        let pending = drawn != Some(app.version()) || ticked;
        let next_frame = tokio::time::Instant::from_std(last_draw + FRAME_GAP);
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
                    waiting.push_back(ask);
                    app.asking = waiting.front().map(|a| a.summary.clone());
                    app.changed();
                }
            },
            _ = tokio::time::sleep_until(next_frame), if pending => {},
            _ = ticker.tick(), if running => ticked = true,
            _ = next_signal(&mut signals) => break,
        }
    }
    drop(session);
    live.host.interrupt();
    let closed = live.host.shutdown().await;
    Ok(closed.ok().flatten())
}

pub async fn next_signal(signals: &mut Option<cadre_host::Signals>) {
    match signals {
        Some(s) => {
            if s.next().await.is_none() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending::<()>().await,
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
        Action::Quit => return false,
        // The agent may have started on a task notice (or ended) since the key was read: a
        // prompt then steers, a steer then starts a run.
        Action::Send(text) => host
            .prompt(UserContent::Text(text.clone()), None)
            .or_else(|_| host.steer(UserContent::Text(text)))
            .map(|()| app.busy = true),
        Action::Steer(text) => host
            .steer(UserContent::Text(text.clone()))
            .or_else(|_| host.prompt(UserContent::Text(text), None)),
        Action::FollowUp(text) => host.follow_up(UserContent::Text(text)).map(|()| {
            app.transcript.note(
                NoteKind::Info,
                "queued: sent when the agent finishes this turn",
            );
        }),
        Action::Abort => {
            host.abort();
            app.transcript.note(
                NoteKind::Warning,
                "stopped (tasks keep running; /stop ID stops one)",
            );
            Ok(())
        }
        Action::Command(command) => {
            let host = host.clone();
            let env = live.env(cwd);
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

/// Show a command's reply and carry out its effect.
pub async fn take_reply(app: &mut App, live: &mut Live, cwd: &std::path::Path, reply: Reply) {
    for (kind, text) in &reply.notes {
        app.transcript.note(*kind, text.clone());
    }
    match reply.effect {
        Effect::None => {}
        Effect::Refresh => app.status = status_of(live),
        Effect::Reload => reload(app, live, &[]),
        Effect::Restart { plan } => match live.restart(cwd, plan).await {
            Ok(notes) => reload(app, live, &notes),
            Err(e) => app.transcript.note(NoteKind::Error, e),
        },
    }
    app.changed();
}

/// The live session is another one now: its conversation, no tasks, its status.
fn reload(app: &mut App, live: &Live, notes: &[String]) {
    let kept = std::mem::take(&mut app.transcript.entries);
    app.transcript = Transcript::from_messages(&live.host.messages());
    app.transcript.version = kept.len() as u64 + 1;
    // The command's own notes (the last entries) stay visible after the switch.
    for entry in kept.into_iter().rev().take(1) {
        app.transcript.entries.push(entry);
    }
    for note in notes {
        app.transcript.note(note_kind(note), note.clone());
    }
    app.board.clear();
    app.busy = live.host.is_streaming();
    app.status = status_of(live);
    app.scroll = 0;
}
