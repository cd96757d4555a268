//! The interactive mode's state and what each key does to it. No I/O: a key turns into an
//! [`Action`] the loop carries out against the host, so every key path is testable without a
//! terminal or a model.

use std::path::PathBuf;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::editor::Editor;
use super::slash::{self, Slash};
use super::transcript::{NoteKind, Transcript};
use crate::task_board::Board;

/// What the loop does after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    None,
    /// Start a run on this prompt (the agent is idle).
    Send(String),
    /// Deliver this to the running agent after its current tool calls.
    Steer(String),
    /// Deliver this when the running agent would stop.
    FollowUp(String),
    Abort,
    Command(Slash),
    /// The answer to the launch question shown (`y` allows).
    Answer(bool),
    /// Ctrl-L: draw the whole screen again (after something else wrote to the terminal).
    Redraw,
    Quit,
}

/// What the status line shows about the session.
#[derive(Debug, Clone, Default)]
pub struct Status {
    pub model: String,
    pub thinking: String,
    pub plan: bool,
    pub session: String,
    /// Messages waiting for the running agent (steers, follow-ups).
    pub queued: (usize, usize),
    /// The session's token and cost budget, subagents included (`None`: no cap).
    pub budget: Option<cadre_protocol::BudgetState>,
}

/// An open `@file` (or `/command`) completion: the candidates and the one shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub candidates: Vec<String>,
    pub selected: usize,
    /// Completing a slash command rather than a file.
    pub command: bool,
}

/// Entries at most in one completion list.
const COMPLETIONS_SHOWN: usize = 50;

pub struct App {
    pub transcript: Transcript,
    pub board: Board,
    pub editor: Editor,
    pub status: Status,
    /// The agent is running a turn.
    pub busy: bool,
    pub show_thinking: bool,
    pub expand_tools: bool,
    /// Rows scrolled up from the bottom of the conversation.
    pub scroll: usize,
    /// The most rows there are to scroll up, when the last frame laid out the whole
    /// conversation (so PgUp stops at its top).
    pub scroll_limit: std::cell::Cell<Option<usize>>,
    /// Ctrl-C was pressed once on an empty line: the next one quits.
    pub quit_armed: bool,
    pub completion: Option<Completion>,
    /// A one-line hint above the input (cleared by the next key).
    pub flash: Option<String>,
    /// A launch waiting for the person's yes or no (D3 `ask`), and the answer typed so far.
    pub asking: Option<String>,
    pub answer: String,
    /// Leaving was refused once because tasks run (they stop on leaving); the next quit key
    /// leaves.
    pub leave_warned: bool,
    /// The project directory (for `@file` completion).
    pub cwd: PathBuf,
    /// Bumped on changes that are not the transcript's or the board's.
    pub version: u64,
}

impl App {
    pub fn new(cwd: PathBuf, status: Status) -> App {
        App {
            transcript: Transcript::default(),
            board: Board::default(),
            editor: Editor::default(),
            status,
            busy: false,
            show_thinking: false,
            expand_tools: false,
            scroll: 0,
            scroll_limit: std::cell::Cell::new(None),
            quit_armed: false,
            completion: None,
            flash: None,
            asking: None,
            answer: String::new(),
            leave_warned: false,
            cwd,
            version: 0,
        }
    }

    /// What changes the conversation, the input or the lines around it — not the panel.
    pub fn foreground_version(&self) -> u64 {
        self.version.wrapping_add(self.transcript.version)
    }

    pub fn changed(&mut self) {
        self.version += 1;
    }

    /// A paste (bracketed): inserted as typed, newlines and all.
    pub fn on_paste(&mut self, text: &str) {
        self.changed();
        self.completion = None;
        if !self.editor.insert(text) {
            self.flash = Some(format!(
                "the paste was cut at {} KiB",
                super::editor::MAX_INPUT / 1024
            ));
        }
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::None;
        }
        self.changed();
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if !(ctrl && key.code == KeyCode::Char('c')) {
            self.quit_armed = false;
        }
        if !(ctrl && matches!(key.code, KeyCode::Char('c' | 'd'))) {
            self.leave_warned = false;
        }
        self.flash = None;
        if self.asking.is_some() {
            return self.answer_key(key, ctrl);
        }
        if key.code != KeyCode::Tab && key.code != KeyCode::BackTab {
            // A completion stays open only while Tab moves through it; Enter takes it.
            if let Some(c) = self.completion.take()
                && key.code == KeyCode::Enter
                && !alt
            {
                self.accept(&c);
                return Action::None;
            }
        }
        if self.edit(key.code, ctrl) {
            return Action::None;
        }
        match key.code {
            KeyCode::Char('c') if ctrl => self.ctrl_c(),
            KeyCode::Char('d') if ctrl && self.editor.is_empty() => Action::Quit,
            KeyCode::Char('t') if ctrl => {
                self.show_thinking = !self.show_thinking;
                Action::None
            }
            KeyCode::Char('o') if ctrl => {
                self.expand_tools = !self.expand_tools;
                Action::None
            }
            KeyCode::Char('l') if ctrl => Action::Redraw,
            KeyCode::Char(c) if !ctrl => {
                let mut buf = [0u8; 4];
                self.editor.insert(c.encode_utf8(&mut buf));
                Action::None
            }
            KeyCode::Enter if alt => self.submit(true),
            KeyCode::Enter => self.submit(false),
            KeyCode::Esc if self.busy => Action::Abort,
            KeyCode::Esc => Action::None,
            KeyCode::Up if self.editor.on_first_line() => {
                self.editor.history_back();
                Action::None
            }
            KeyCode::Down if self.editor.on_last_line() => {
                self.editor.history_forward();
                Action::None
            }
            KeyCode::PageUp => {
                self.scroll_by(10);
                Action::None
            }
            KeyCode::PageDown => {
                self.scroll_by(-10);
                Action::None
            }
            KeyCode::Tab => {
                self.complete(1);
                Action::None
            }
            KeyCode::BackTab => {
                self.complete(-1);
                Action::None
            }
            _ => Action::None,
        }
    }

    /// The keys that only edit the input line (false for any other key).
    fn edit(&mut self, code: KeyCode, ctrl: bool) -> bool {
        let e = &mut self.editor;
        match (code, ctrl) {
            (KeyCode::Backspace, _) => e.backspace(),
            (KeyCode::Delete, _) => e.delete(),
            (KeyCode::Left, _) => e.left(),
            (KeyCode::Right, _) => e.right(),
            (KeyCode::Home, _) | (KeyCode::Char('a'), true) => e.home(),
            (KeyCode::End, _) | (KeyCode::Char('e'), true) => e.end(),
            (KeyCode::Char('w'), true) => e.delete_word(),
            (KeyCode::Char('u'), true) => e.delete_to_start(),
            (KeyCode::Char('j'), true) => {
                e.insert("\n");
            }
            _ => return false,
        }
        true
    }

    /// A key while a launch waits for the person: the answer is a word and Enter, so keys
    /// typed ahead for the input (a sentence with a `y` in it) never allow a launch. Scrolling
    /// works, to read the launch written out above.
    fn answer_key(&mut self, key: KeyEvent, ctrl: bool) -> Action {
        match key.code {
            KeyCode::Esc => Action::Answer(false),
            KeyCode::Char('c') if ctrl => Action::Answer(false),
            KeyCode::Char(c) if !ctrl && self.answer.chars().count() < 8 => {
                self.answer.push(c);
                Action::None
            }
            KeyCode::Backspace => {
                self.answer.pop();
                Action::None
            }
            KeyCode::PageUp => {
                self.scroll_by(10);
                Action::None
            }
            KeyCode::PageDown => {
                self.scroll_by(-10);
                Action::None
            }
            KeyCode::Enter => {
                let word = std::mem::take(&mut self.answer).trim().to_lowercase();
                match word.as_str() {
                    "y" | "yes" => Action::Answer(true),
                    "n" | "no" => Action::Answer(false),
                    _ => {
                        self.flash = Some("type yes or no, then Enter (Esc declines)".into());
                        Action::None
                    }
                }
            }
            _ => Action::None,
        }
    }

    /// PgUp (`rows` > 0) and PgDn: up no further than the conversation's top.
    fn scroll_by(&mut self, rows: isize) {
        if rows < 0 {
            self.scroll = self.scroll.saturating_sub(rows.unsigned_abs());
        } else {
            let limit = self.scroll_limit.get().unwrap_or(usize::MAX);
            self.scroll = self.scroll.saturating_add(rows.unsigned_abs()).min(limit);
        }
    }

    /// Ctrl-C: clears a typed line; on an empty line, arms quitting; armed, quits.
    fn ctrl_c(&mut self) -> Action {
        if !self.editor.is_empty() {
            self.editor.clear();
            return Action::None;
        }
        if self.quit_armed {
            return Action::Quit;
        }
        self.quit_armed = true;
        self.flash = Some(if self.busy {
            "press Ctrl-C again to quit (Esc stops the turn)".into()
        } else {
            "press Ctrl-C again to quit".into()
        });
        Action::None
    }

    /// Enter (`queue` for Alt-Enter): a command runs; text is sent, steered or queued.
    fn submit(&mut self, queue: bool) -> Action {
        if self.editor.text().trim().is_empty() {
            self.editor.clear();
            return Action::None;
        }
        let sent = slash::read(&self.editor.take());
        self.scroll = 0;
        let text = match sent {
            slash::Sent::Command(Ok(Slash::Quit)) => return Action::Quit,
            slash::Sent::Command(Ok(command)) => return Action::Command(command),
            slash::Sent::Command(Err(message)) => {
                self.transcript.note(NoteKind::Warning, message);
                return Action::None;
            }
            slash::Sent::Prompt(text) => text,
        };
        match (self.busy, queue) {
            (false, _) => {
                self.transcript.typed(&text);
                Action::Send(text)
            }
            (true, false) => {
                self.transcript.typed(&text);
                Action::Steer(text)
            }
            // Shown when it is delivered, after the answer it waits for.
            (true, true) => Action::FollowUp(text),
        }
    }

    /// Tab: start a completion for the word at the cursor, or move through the open one.
    fn complete(&mut self, step: isize) {
        if let Some(c) = &mut self.completion {
            let n = c.candidates.len() as isize;
            c.selected = ((c.selected as isize + step).rem_euclid(n.max(1))) as usize;
            return;
        }
        let text = self.editor.text();
        let (candidates, command) = if let Some((_, partial)) = self.editor.at_word() {
            (
                super::complete::candidates(&self.cwd, partial, COMPLETIONS_SHOWN),
                false,
            )
        } else if text.starts_with('/') && !text.contains(char::is_whitespace) {
            (
                slash::completions(text)
                    .into_iter()
                    .map(str::to_string)
                    .collect(),
                true,
            )
        } else {
            return;
        };
        match candidates.len() {
            0 => self.flash = Some("nothing matches".into()),
            1 => {
                let c = Completion {
                    candidates,
                    selected: 0,
                    command,
                };
                self.accept(&c);
            }
            _ => {
                self.completion = Some(Completion {
                    candidates,
                    selected: 0,
                    command,
                })
            }
        }
    }

    fn accept(&mut self, c: &Completion) {
        let Some(choice) = c.candidates.get(c.selected) else {
            return;
        };
        if c.command {
            self.editor.set(format!("{choice} "));
        } else {
            self.editor.replace_at_word(choice);
            if !choice.ends_with('/') {
                self.editor.insert(" ");
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    fn typed(app: &mut App, text: &str) {
        for c in text.chars() {
            app.on_key(key(KeyCode::Char(c)));
        }
    }

    fn app() -> App {
        App::new(std::env::temp_dir(), Status::default())
    }

    #[test]
    fn enter_sends_when_idle_and_steers_while_busy_alt_enter_queues() {
        let mut a = app();
        typed(&mut a, "hello");
        assert_eq!(a.on_key(key(KeyCode::Enter)), Action::Send("hello".into()));
        a.busy = true;
        typed(&mut a, "faster");
        assert_eq!(
            a.on_key(key(KeyCode::Enter)),
            Action::Steer("faster".into())
        );
        typed(&mut a, "then this");
        let alt_enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT);
        assert_eq!(a.on_key(alt_enter), Action::FollowUp("then this".into()));
        assert_eq!(a.on_key(key(KeyCode::Esc)), Action::Abort);
        assert_eq!(a.on_key(key(KeyCode::Enter)), Action::None);
    }

    #[test]
    fn a_launch_question_takes_a_word_and_enter_never_a_typed_ahead_y() {
        let mut a = app();
        a.asking = Some("Explore: scan".into());
        // Typed ahead for the input: a `y` inside a sentence allows nothing.
        typed(&mut a, "y not stop");
        assert_eq!(a.on_key(key(KeyCode::Enter)), Action::None);
        assert!(a.flash.as_deref().unwrap().contains("yes or no"));
        assert!(a.editor.is_empty());
        typed(&mut a, "y");
        assert_eq!(a.on_key(key(KeyCode::Enter)), Action::Answer(true));
        typed(&mut a, "No");
        assert_eq!(a.on_key(key(KeyCode::Enter)), Action::Answer(false));
        assert_eq!(a.on_key(key(KeyCode::Esc)), Action::Answer(false));
    }

    #[test]
    fn ctrl_c_clears_then_needs_a_second_press_to_quit() {
        let mut a = app();
        typed(&mut a, "draft");
        assert_eq!(a.on_key(ctrl('c')), Action::None);
        assert!(a.editor.is_empty());
        assert_eq!(a.on_key(ctrl('c')), Action::None);
        assert!(a.flash.as_deref().unwrap().contains("again"));
        // Any other key disarms it.
        a.on_key(key(KeyCode::Left));
        assert_eq!(a.on_key(ctrl('c')), Action::None);
        assert_eq!(a.on_key(ctrl('c')), Action::Quit);
    }

    #[test]
    fn slash_lines_are_commands_and_mistakes_are_notes() {
        let mut a = app();
        typed(&mut a, "/stop abc");
        assert_eq!(
            a.on_key(key(KeyCode::Enter)),
            Action::Command(Slash::Stop("abc".into()))
        );
        typed(&mut a, "/nope");
        assert_eq!(a.on_key(key(KeyCode::Enter)), Action::None);
        assert!(matches!(
            a.transcript.entries.last(),
            Some(super::super::transcript::Entry::Note { .. })
        ));
        typed(&mut a, "//etc is a path");
        assert_eq!(
            a.on_key(key(KeyCode::Enter)),
            Action::Send("/etc is a path".into())
        );
    }

    #[test]
    fn tab_completes_files_and_commands() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("alpha.rs"), "").unwrap();
        std::fs::write(dir.path().join("alps.md"), "").unwrap();
        let mut a = App::new(dir.path().to_path_buf(), Status::default());
        typed(&mut a, "read @alph");
        a.on_key(key(KeyCode::Tab));
        assert_eq!(a.editor.text(), "read @alpha.rs ");
        a.editor.clear();
        typed(&mut a, "@al");
        a.on_key(key(KeyCode::Tab));
        let open = a.completion.clone().unwrap();
        assert_eq!(open.candidates.len(), 2);
        a.on_key(key(KeyCode::Tab));
        a.on_key(key(KeyCode::Enter));
        assert_eq!(a.editor.text(), format!("@{} ", open.candidates[1]));
        a.editor.clear();
        typed(&mut a, "/ag");
        a.on_key(key(KeyCode::Tab));
        assert_eq!(a.editor.text(), "/agents ");
    }
}
