//! The terminal while the interactive mode runs: raw mode, the alternate screen and bracketed
//! paste on entry, all undone on exit — also when the mode fails or panics, so a person is
//! never left with a terminal that does not echo.
//!
//! Keys are read on a thread of their own (crossterm's reader blocks) and handed to the loop
//! over a channel; the thread blocks in the kernel between keys, so an idle session costs no
//! CPU.

use std::io::{Stdout, Write};

use anyhow::{Context, Result};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, DisableBracketedPaste, EnableBracketedPaste, Event};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use tokio::sync::mpsc;

pub type Screen = Terminal<CrosstermBackend<Stdout>>;

/// The terminal in the interactive mode's state; dropping it restores the terminal.
pub struct Session {
    pub screen: Screen,
}

impl Session {
    pub fn enter() -> Result<Session> {
        enable_raw_mode().context("cannot put the terminal in raw mode")?;
        let mut out = std::io::stdout();
        if let Err(e) = execute!(out, EnterAlternateScreen, EnableBracketedPaste) {
            restore();
            return Err(e).context("cannot switch to the alternate screen");
        }
        install_panic_restore();
        match Terminal::new(CrosstermBackend::new(std::io::stdout())) {
            Ok(screen) => Ok(Session { screen }),
            Err(e) => {
                restore();
                Err(e).context("cannot start drawing on the terminal")
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.screen.show_cursor();
        restore();
    }
}

/// Undo everything [`Session::enter`] did. Safe to call more than once.
pub fn restore() {
    let mut out = std::io::stdout();
    let _ = execute!(out, DisableBracketedPaste, LeaveAlternateScreen);
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// A panic (a bug) restores the terminal before its message is printed, so the message is
/// readable and the shell usable.
fn install_panic_restore() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}

/// Terminal events, read on their own thread. The channel closes when the terminal does.
pub fn spawn_reader() -> mpsc::UnboundedReceiver<Event> {
    let (tx, rx) = mpsc::unbounded_channel();
    let spawned = std::thread::Builder::new()
        .name("cadre-keys".into())
        .spawn(move || {
            loop {
                match event::read() {
                    Ok(ev) => {
                        if tx.send(ev).is_err() {
                            return;
                        }
                    }
                    // The terminal is gone (hung up): the loop sees the channel close.
                    Err(_) => return,
                }
            }
        });
    if spawned.is_err() {
        // No reader: the loop ends at once, as if the terminal had closed.
        return mpsc::unbounded_channel().1;
    }
    rx
}
