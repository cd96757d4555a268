//! The interactive mode on a terminal that cannot move its cursor (`TERM=dumb` or unset, an
//! editor's shell buffer): a plain conversation, one line after another.
//!
//! A line is a prompt (while the agent works, it steers); `/queue TEXT` queues a follow-up and
//! `/abort` (or Ctrl-C, the terminal's SIGINT) stops the turn, handing back what was queued;
//! the slash commands work as in the full screen. Replies are printed as they stream, tool
//! calls and task starts and ends as one line each. Ctrl-C when no turn runs, or end of input
//! (Ctrl-D), leaves.

use std::io::{BufRead, Read, Write};
use std::time::{Duration, Instant};

use anyhow::Result;
use cadre_host::{HostEvent, StartedHost};
use cadre_protocol::redact::StreamRedactor;
use cadre_protocol::{AgentEvent, AssistantMessageEvent, UserContent};
use tokio::sync::mpsc;

use super::commands::{self, Effect};
use super::event_loop::{Closed, Live, Opened, Setup};
use super::slash::{self, Slash};
use super::text::screen_safe;
use super::transcript::{NoteKind, Transcript, summarize_args};
use crate::task_board::Board;

/// The longest input line taken at once (a longer one arrives as several).
const MAX_LINE: usize = 256 * 1024;

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
    for note in &notes {
        say(&format!("cadre: {note}"));
    }
    say("cadre — type a prompt and Enter; /help lists the commands; Ctrl-D leaves");
    if show_sessions {
        print_reply(&commands::run(live.host.clone(), live.env(&cwd), Slash::Resume(None)).await);
    }
    let mut lines = spawn_lines();
    let mut board = Board::default();
    let mut scratch = Transcript::default();
    let mut signals = cadre_host::Signals::new().ok();
    let mut signal = None;
    // While a reply streams: what of it may be printed yet (never a secret, whole or begun).
    let mut streaming_text: Option<StreamRedactor> = None;
    let (reply_tx, mut replies) = mpsc::unbounded_channel::<commands::Reply>();
    loop {
        tokio::select! {
            reply = replies.recv() => {
                let Some(reply) = reply else { continue };
                print_reply(&reply);
                if let Effect::Restart { plan } = reply.effect {
                    match live.restart(&cwd, plan).await {
                        Ok(notes) => notes.iter().for_each(|n| say(&format!("cadre: {n}"))),
                        Err(e) => say(&format!("error: {e}")),
                    }
                }
            }
            line = lines.recv() => {
                let Some(line) = line else { break };
                let line = line.trim_end().to_string();
                // Only a yes or a no answers a launch; any other line is input as usual (it
                // may have been typed before the question appeared) and the question waits.
                let word = line.trim().to_lowercase();
                let answer = match word.as_str() {
                    "y" | "yes" => Some(true),
                    "n" | "no" => Some(false),
                    _ => None,
                };
                if let Some(allow) = answer.filter(|_| !waiting.is_empty()) {
                    if let Some(ask) = waiting.pop_front() {
                        say(if allow { "allowed" } else { "declined" });
                        let _ = ask.answer.send(allow);
                    }
                    if let Some(next) = waiting.front() {
                        say(&format!("allow launching {}? (yes/no)", next.summary));
                    }
                    continue;
                }
                if let Some(ask) = waiting.front() {
                    say(&format!("(still waiting: allow launching {}? yes/no)", ask.summary));
                }
                if line.trim().is_empty() {
                    continue;
                }
                if !handle_line(&mut live, &cwd, &line, &reply_tx) {
                    break;
                }
            }
            event = live.events.recv() => {
                let Some(event) = event else { break };
                print_event(&event, &mut streaming_text, &mut board, &mut scratch, &live);
            }
            ask = asks.recv(), if asks_open => {
                asks_open = ask.is_some();
                if let Some(ask) = ask {
                    if waiting.is_empty() {
                        say(&format!("allow launching {}? (yes/no)", ask.summary));
                    }
                    waiting.push_back(ask);
                }
            }
            // Ctrl-C (the terminal's SIGINT here) stops a turn; when none runs, it leaves.
            got = super::event_loop::next_signal(&mut signals) => {
                if got == libc::SIGINT && live.host.is_streaming() {
                    live.host.abort();
                    for text in live.host.withdraw_queued() {
                        say(&format!("not sent: {text}"));
                    }
                    say("stopped (Ctrl-C again when idle leaves)");
                    continue;
                }
                signal = Some(got);
                break;
            }
        }
    }
    live.host.interrupt();
    let closed = tokio::time::timeout(Duration::from_secs(15), live.host.shutdown()).await;
    Ok(Closed {
        session: closed.ok().and_then(Result::ok).flatten(),
        signal,
    })
}

/// One typed line. Returns false to leave. A slash command runs on a task of its own and
/// answers through `replies`, so a command that waits (a compaction's model call) never keeps
/// Ctrl-C or a signal from being served.
fn handle_line(
    live: &mut Live,
    cwd: &std::path::Path,
    line: &str,
    replies: &mpsc::UnboundedSender<commands::Reply>,
) -> bool {
    let host = live.host.clone();
    let text = line.trim();
    if let Some(rest) = text.strip_prefix("/queue ") {
        report(host.follow_up(UserContent::Text(rest.to_string())));
        return true;
    }
    if text == "/abort" {
        host.abort();
        for text in host.withdraw_queued() {
            say(&format!("not sent: {text}"));
        }
        say("stopped");
        return true;
    }
    let text = match slash::read(text) {
        slash::Sent::Command(Ok(Slash::Quit)) => return false,
        slash::Sent::Command(Ok(command)) => {
            let env = live.env(cwd);
            let tx = replies.clone();
            tokio::spawn(async move {
                let _ = tx.send(commands::run(host, env, command).await);
            });
            return true;
        }
        slash::Sent::Command(Err(e)) => {
            say(&e);
            return true;
        }
        slash::Sent::Prompt(text) => text,
    };
    let content = UserContent::Text(text);
    if host.is_streaming() {
        report(host.steer(content));
    } else {
        report(
            host.prompt(content.clone(), None)
                .or_else(|_| host.steer(content)),
        );
    }
    true
}

fn report(result: Result<(), cadre_host::HostError>) {
    if let Err(e) = result {
        say(&format!("error: {e}"));
    }
}

fn print_reply(reply: &commands::Reply) {
    for (kind, text) in &reply.notes {
        let lead = match kind {
            NoteKind::Error => "error: ",
            NoteKind::Warning => "warning: ",
            _ => "",
        };
        say(&format!("{lead}{text}"));
    }
}

fn print_event(
    event: &HostEvent,
    streaming: &mut Option<StreamRedactor>,
    board: &mut Board,
    scratch: &mut Transcript,
    live: &Live,
) {
    match event {
        HostEvent::Agent(AgentEvent::MessageUpdate {
            assistant_message_event: AssistantMessageEvent::TextDelta { delta, .. },
            ..
        }) => {
            let shown = streaming
                .get_or_insert_with(StreamRedactor::default)
                .push(delta);
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{}", screen_safe(&shown));
            let _ = out.flush();
        }
        HostEvent::Agent(AgentEvent::MessageEnd { .. }) if streaming.is_some() => {
            let rest = streaming.take().map(|mut r| r.finish()).unwrap_or_default();
            say(&rest);
        }
        HostEvent::Agent(AgentEvent::ToolExecutionStart {
            tool_name, args, ..
        }) => say(&format!(
            "→ {tool_name} {}",
            summarize_args(tool_name, args)
        )),
        HostEvent::Agent(AgentEvent::ToolExecutionEnd { .. }) => {}
        HostEvent::Agent(AgentEvent::AgentEnd { .. }) => say("(done)"),
        HostEvent::Agent(other) => {
            // Notes the transcript makes of other events (retries, compaction, errors).
            let before = scratch.entries.len();
            scratch.apply(other);
            for entry in scratch.entries.drain(before.min(scratch.entries.len())..) {
                if let super::transcript::Entry::Note { text, .. } = entry {
                    say(&text);
                }
            }
            scratch.entries.clear();
        }
        HostEvent::Task(task) => {
            let now = Instant::now();
            let mut notes = Transcript::default();
            super::event_loop::apply_task_event(board, &mut notes, &live.host, task, now);
            if let cadre_core::orchestrator::manager::TaskEvent::Started {
                task_id,
                agent,
                description,
                ..
            } = task
            {
                let short: String = task_id.chars().take(8).collect();
                say(&format!(
                    "[task {short}] {agent} started: {}",
                    screen_safe(description)
                ));
            }
            for entry in notes.entries {
                if let super::transcript::Entry::Note { text, .. } = entry {
                    say(&format!("[{text}]"));
                }
            }
        }
    }
}

fn say(text: &str) {
    let text = cadre_protocol::redact::redact_str(text);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", screen_safe(&text));
    let _ = out.flush();
}

/// Lines of stdin, read on a thread; the channel closes at end of input.
fn spawn_lines() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    let _ = std::thread::Builder::new()
        .name("cadre-lines".into())
        .spawn(move || {
            let stdin = std::io::stdin();
            let mut reader = stdin.lock();
            loop {
                let mut buf = Vec::new();
                match (&mut reader)
                    .take(MAX_LINE as u64)
                    .read_until(b'\n', &mut buf)
                {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf).into_owned();
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
    rx
}
