//! `cadre` at a terminal: the interactive mode (see `docs/interactive.md`).
//!
//! A front end over the host like the others: the session service owns the root agent, its
//! tasks and the session file; this mode turns keys into host operations and host events into
//! a screen. The session file is the state — a crash or `kill -9` loses nothing that was said,
//! and `cadre -c` (or `/resume`) brings the conversation back.
//!
//! Modules: `app` (state and keys, no I/O), `transcript` and `board` (the conversation and the
//! task panel, from events), `editor` and `complete` (the input line, `@file`), `slash` and
//! `commands` (slash commands), `draw`, `conversation_view`, `panel`, `theme`, `text` (the
//! screen), `terminal` (raw mode and keys), `event_loop` (the loop), `line_mode` (a dumb
//! terminal).

mod app;
mod commands;
mod complete;
mod confirm;
mod conversation_view;
mod draw;
mod editor;
mod event_loop;
mod line_mode;
mod panel;
mod slash;
mod terminal;
mod text;
mod theme;
mod transcript;

#[cfg(test)]
mod view_tests;

pub mod bench;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use cadre_host::{Host, HostContext, HostOptions};

use crate::args::RunArgs;

/// Whether this terminal can take the full-screen mode: `TERM` set and not `dumb`.
fn full_screen_terminal() -> bool {
    let term = std::env::var("TERM").unwrap_or_default();
    !term.is_empty() && term != "dumb"
}

pub async fn run(args: RunArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let ctx = Arc::new(HostContext::load(
        &cwd,
        args.trust,
        crate::run::runtime_key(&args),
    )?);
    let mut options = crate::run::host_options(&args);
    interactive_options(&mut options);
    // Launches under `subagents.authorization: ask` are put to the person (D3).
    let (confirmer, asks) = confirm::channel();
    options.confirm = Some(confirmer);
    // Started before the screen is taken, so a session that cannot start says why plainly.
    let started = Host::start(ctx.clone(), options.clone()).await?;
    let mut notes: Vec<String> = ctx.notes.clone();
    notes.extend(started.warnings.iter().cloned());
    let setup = event_loop::Setup {
        ctx,
        options,
        cwd,
        notes,
        show_sessions: args.resume,
        asks,
        runtime_key: crate::run::runtime_key(&args),
    };
    let closed = if full_screen_terminal() {
        event_loop::run(started, setup).await?
    } else {
        line_mode::run(started, setup).await?
    };
    // A session nothing was said in has no file (it is written at its first message).
    if let Some(path) = closed.session.filter(|p| p.exists()) {
        errln!(
            "cadre: session saved in {} (`cadre -c` continues it)",
            path.display()
        );
    }
    // A signal ends the mode as it ends print mode: 128 + its number.
    Ok(match closed.signal {
        Some(n) => ExitCode::from(u8::try_from(128 + n).unwrap_or(1)),
        None => ExitCode::SUCCESS,
    })
}

/// What the interactive mode asks of the host, as the Pi subagent packages do in theirs: the
/// person keeps talking while tasks run, so `Agent` defaults to the background and results
/// arrive as notifications; replies stream token by token; a new session's file appears with
/// its first message.
pub fn interactive_options(options: &mut HostOptions) {
    options.background_by_default = true;
    options.stream_updates = true;
    // As Pi: opening and leaving leaves no empty session for `cadre -c` to pick.
    options.session_file_when_used = true;
}
