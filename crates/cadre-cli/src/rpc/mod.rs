//! `--mode rpc`: Pi's RPC protocol over stdin/stdout (see `docs/rpc.md`).
//!
//! Commands arrive as JSON lines on stdin; responses (`type: "response"`) and events go out as
//! JSON lines on stdout through one writer, so lines never interleave. Every command is queued
//! with the host in the order it was read, and answered when the host answers it: a command
//! that waits for the agent (a model change during a run) never holds up the next line, so an
//! `abort` sent meanwhile is read and served at once.

mod commands;
pub(crate) mod input;

use std::process::ExitCode;

use anyhow::{Context, Result};
use cadre_host::{Host, HostError, HostEvent};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::args::RunArgs;
use input::Line;

/// Where every output line goes.
#[derive(Clone)]
pub struct Out {
    tx: mpsc::UnboundedSender<String>,
    /// Responses that must follow the events already sent (see [`forward_events`]).
    after_events: mpsc::UnboundedSender<Value>,
}

impl Out {
    /// Queue a line behind every host event received so far: the answer to an operation the
    /// host completed comes after that operation's events.
    pub fn line_after_events(&self, value: Value) {
        let _ = self.after_events.send(value);
    }

    /// Queue one JSON line (redacted: streamed text has not passed the agent's redaction).
    pub fn line(&self, value: &Value) {
        if let Ok(line) = serde_json::to_string(value) {
            let _ = self
                .tx
                .send(cadre_protocol::redact::redact_str(&line).into_owned());
        }
    }

    pub fn success(&self, id: Option<&Value>, command: &str, data: Option<Value>) {
        self.line(&success(id, command, data));
    }

    pub fn error(&self, id: Option<&Value>, command: &str, e: &HostError) {
        self.line(&error(id, command, e));
    }
}

pub fn success(id: Option<&Value>, command: &str, data: Option<Value>) -> Value {
    let mut response = json!({"type": "response", "command": command, "success": true});
    if let Some(data) = data {
        response["data"] = data;
    }
    with_id(response, id)
}

/// The one place an error becomes an RPC response: Pi's `error` with the message, and cadre's
/// `code`, stable for clients to branch on (a refusal's code such as `not_running` or
/// `unknown_task`, else `busy`, `ended`, `invalid_input`, `failed`).
pub fn error(id: Option<&Value>, command: &str, e: &HostError) -> Value {
    let response = json!({
        "type": "response", "command": command, "success": false, "error": e.message(),
        "code": e.code(),
    });
    with_id(response, id)
}

/// The request's `id`, echoed in its response.
fn with_id(response: Value, id: Option<&Value>) -> Value {
    match (id, response) {
        (Some(id), Value::Object(fields)) => {
            let mut out = serde_json::Map::new();
            out.insert("id".into(), id.clone());
            out.extend(fields);
            Value::Object(out)
        }
        (_, response) => response,
    }
}

pub async fn run(args: RunArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let ctx = crate::run::load_context(&args, &cwd)?;
    let mut options = crate::run::host_options(&args);
    // As the Pi subagent packages do in their interactive modes: the client keeps working
    // while tasks run, and their results arrive as notifications.
    options.background_by_default = true;
    options.stream_updates = true;
    let started = Host::start(ctx, options).await?;
    for warning in &started.warnings {
        errln!("cadre: {warning}");
    }
    let host = started.host;
    let (tx, rx) = mpsc::unbounded_channel();
    let (after_tx, after_rx) = mpsc::unbounded_channel();
    let out = Out {
        tx,
        after_events: after_tx,
    };
    let writer = tokio::spawn(write_lines(rx));
    let events = tokio::spawn(forward_events(started.events, after_rx, out.clone()));
    let (interrupted, signals) = cadre_host::interrupt_on_signal(host.interrupt_handle());

    let mut lines = input::spawn_reader(std::io::stdin());
    let mut commands = commands::Commands::new(host.clone(), out.clone());
    loop {
        tokio::select! {
            line = lines.recv() => match line.unwrap_or(Line::End) {
                Line::Text(text) => commands.handle_line(&text),
                Line::TooLong(limit) => out.error(
                    None,
                    "parse",
                    &HostError::InvalidInput(format!(
                        "Failed to parse command: the line is longer than {limit} bytes"
                    )),
                ),
                Line::End => break,
                Line::Failed(e) => {
                    errln!("cadre: error: cannot read stdin: {e}");
                    break;
                }
            },
            () = wait_signal(&interrupted) => break,
        }
    }
    // Input closed (or a signal): as Pi, the session ends — the run and a running bash command
    // are aborted, queued prompts dropped, the tasks stopped (L6) and the session file written
    // out. A second signal still exits at once.
    host.interrupt();
    let closed = host.shutdown().await;
    drop(commands);
    drop(host);
    let _ = events.await;
    drop(out);
    // Answers still waiting (a blocking task_output) hold the writer open; what is written by
    // now is what the client gets.
    let _ = tokio::time::timeout(WRITER_DRAIN, writer).await;
    signals.abort();
    if let Err(e) = closed {
        errln!("cadre: error: {e}");
        return Ok(ExitCode::FAILURE);
    }
    match interrupted.load(std::sync::atomic::Ordering::SeqCst) {
        0 => Ok(ExitCode::SUCCESS),
        n => Ok(ExitCode::from(u8::try_from(128 + n).unwrap_or(1))),
    }
}

/// How long the output is drained at exit.
const WRITER_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Completes once a signal has been received.
async fn wait_signal(cell: &std::sync::atomic::AtomicI32) {
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
    loop {
        tick.tick().await;
        if cell.load(std::sync::atomic::Ordering::SeqCst) != 0 {
            return;
        }
    }
}

/// Host events as output lines, and the responses that must follow them: before such a
/// response, every event already received is written.
async fn forward_events(
    mut events: mpsc::UnboundedReceiver<HostEvent>,
    mut after_events: mpsc::UnboundedReceiver<Value>,
    out: Out,
) {
    let event_line = |event: &HostEvent| match event {
        HostEvent::Agent(event) => serde_json::to_value(event).unwrap_or(Value::Null),
        HostEvent::Task(event) => cadre_host::views::task_event_json(event),
    };
    let mut responses_open = true;
    loop {
        tokio::select! {
            biased;
            event = events.recv() => match event {
                Some(event) => {
                    let value = event_line(&event);
                    if !value.is_null() {
                        out.line(&value);
                    }
                }
                None => break,
            },
            response = after_events.recv(), if responses_open => match response {
                Some(response) => {
                    while let Ok(event) = events.try_recv() {
                        let value = event_line(&event);
                        if !value.is_null() {
                            out.line(&value);
                        }
                    }
                    out.line(&response);
                }
                None => responses_open = false,
            },
        }
    }
    // The host is gone: answers still queued go out last.
    while let Ok(response) = after_events.try_recv() {
        out.line(&response);
    }
}

/// The one writer of stdout. A closed stdout ends the output, not the session: the lines are
/// drained so nothing waits on them.
async fn write_lines(mut rx: mpsc::UnboundedReceiver<String>) {
    use tokio::io::AsyncWriteExt;
    let mut stdout = tokio::io::stdout();
    let mut open = true;
    while let Some(mut line) = rx.recv().await {
        if !open {
            continue;
        }
        line.push('\n');
        // Lines already queued go out in one write.
        while let Ok(more) = rx.try_recv() {
            line.push_str(&more);
            line.push('\n');
        }
        if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
            open = false;
        }
    }
}
