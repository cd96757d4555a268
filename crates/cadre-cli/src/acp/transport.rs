//! The ACP channel: JSON-RPC lines on stdin and stdout, framed as the RPC mode frames them
//! (LF-terminated, a size cap per line), with every outgoing line redacted.
//!
//! stdout is the protocol channel: only the [`Writer`] writes to it. Bash output, MCP
//! servers and child agents never inherit it as anything but a pipe of their own.
//!
//! Both ends run on plain threads, not on the async runtime: a read or a write that blocks
//! because the editor stopped reading or writing must not keep the process from exiting (the
//! runtime waits for its blocking tasks when it shuts down; a thread does not hold the exit).

use std::io::{self, Write as _};
use std::time::Duration;

use futures_util::{Sink, Stream};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::backlog::Backlog;
use crate::rpc::input::{self, Line};

/// How a `session/update` frame starts (the SDK writes `jsonrpc` and `method` first).
const UPDATE_FRAME: &str = "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\"";

/// Frames queued for the writer thread (the SDK's own queue holds the rest).
const QUEUED_FRAMES: usize = 64;

/// What a line over the size cap becomes: a frame the SDK answers with a JSON-RPC parse error
/// (it has no id, so the error's id is null), while the rest of the line is skipped.
const TOO_LONG_FRAME: &str = "{\"jsonrpc\":\"2.0\",\"error\":\"line over the size limit\"";

/// The lines of stdin, read on a thread of their own (see `rpc::input`). Ends at end of input;
/// `ended` is cancelled then (or when reading fails).
pub fn stdin_lines(
    ended: CancellationToken,
) -> impl Stream<Item = io::Result<String>> + Send + 'static {
    let rx = input::spawn_reader(std::io::stdin());
    futures_util::stream::unfold((rx, ended), |(mut rx, ended)| async move {
        let line = rx.recv().await;
        if matches!(line, None | Some(Line::End | Line::Failed(_))) {
            ended.cancel();
        }
        match line? {
            Line::Text(text) => Some((Ok(bounded_echo(text)), (rx, ended))),
            Line::TooLong(limit) => {
                errln!("cadre acp: a message longer than {limit} bytes was skipped");
                Some((Ok(TOO_LONG_FRAME.to_string()), (rx, ended)))
            }
            Line::End => None,
            Line::Failed(e) => Some((Err(e), (rx, ended))),
        }
    })
}

/// The SDK answers a line that is not JSON with a parse error that quotes the line; a long
/// one is replaced by a short frame first, so a garbage megabyte is not written back.
fn bounded_echo(text: String) -> String {
    const QUOTED: usize = 4096;
    if text.len() > QUOTED && serde_json::from_str::<serde::de::IgnoredAny>(&text).is_err() {
        return "{\"jsonrpc\":\"2.0\",\"error\":\"a long line that is not JSON\"".to_string();
    }
    text
}

enum Out {
    Line(String),
    /// Answered once every line queued before it has been written.
    Flush(oneshot::Sender<()>),
}

/// The thread that writes stdout, and a way to wait for what it was given to be written.
pub struct Writer {
    tx: mpsc::Sender<Out>,
}

impl Writer {
    /// Start the writer thread; the sink feeds it one frame per line.
    pub fn start(
        backlog: Backlog,
    ) -> (
        Writer,
        impl Sink<String, Error = io::Error> + Send + 'static,
    ) {
        let (tx, mut rx) = mpsc::channel::<Out>(QUEUED_FRAMES);
        std::thread::spawn(move || {
            while let Some(out) = rx.blocking_recv() {
                match out {
                    Out::Line(line) => {
                        if write_line(&line).is_err() {
                            // The editor closed stdout: the sink's next send fails, and
                            // with it the connection.
                            return;
                        }
                        if line.starts_with(UPDATE_FRAME) {
                            backlog.written();
                        }
                    }
                    Out::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        let sink = futures_util::sink::unfold(tx.clone(), |tx, line: String| async move {
            tx.send(Out::Line(line))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed"))?;
            Ok::<_, io::Error>(tx)
        });
        (Writer { tx }, sink)
    }

    /// Wait, at most `bound`, until every frame queued so far is written. An editor that stopped
    /// reading does not hold the exit: the frames it would not take are left unwritten.
    pub async fn flush(&self, bound: Duration) -> bool {
        let (done, written) = oneshot::channel();
        let queued_and_written =
            async { self.tx.send(Out::Flush(done)).await.is_ok() && written.await.is_ok() };
        tokio::time::timeout(bound, queued_and_written)
            .await
            .unwrap_or(false)
    }
}

/// One frame, redacted (streamed text has not passed the agent's redaction), flushed at once so
/// the editor sees updates as they happen.
fn write_line(line: &str) -> io::Result<()> {
    let line = bounded_error(line);
    let mut line = cadre_protocol::redact::redact_str(&line).into_owned();
    line.push('\n');
    let mut out = io::stdout().lock();
    out.write_all(line.as_bytes())?;
    out.flush()
}

/// The longest error answer written as it is.
const MAX_ERROR_FRAME: usize = 8 * 1024;
/// The longest string kept in a shortened error answer.
const MAX_ERROR_STRING: usize = 1024;

/// An error answer whose message or data quotes what the client sent (a line that is valid
/// JSON but too deep to read, a method or variant name, a path or session id of a megabyte)
/// with each of its strings cut to [`MAX_ERROR_STRING`] characters: the client learns what was
/// wrong without getting its megabyte back. Other frames are unchanged.
fn bounded_error(line: &str) -> std::borrow::Cow<'_, str> {
    // Updates and requests name their method first; only answers are looked into.
    if line.len() <= MAX_ERROR_FRAME || line.starts_with("{\"jsonrpc\":\"2.0\",\"method\"") {
        return line.into();
    }
    let Ok(mut frame) = serde_json::from_str::<serde_json::Value>(line) else {
        return line.into();
    };
    if frame.get("method").is_some() {
        return line.into();
    }
    let Some(error) = frame.get_mut("error") else {
        return line.into();
    };
    shorten(error);
    serde_json::to_string(&frame).map_or(line.into(), Into::into)
}

fn shorten(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(s) if s.chars().count() > MAX_ERROR_STRING => {
            let kept: String = s.chars().take(MAX_ERROR_STRING).collect();
            *s = format!("{kept}… ({} bytes in all)", s.len());
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(shorten),
        serde_json::Value::Object(fields) => fields.values_mut().for_each(shorten),
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn long_error_answers_are_cut_and_nothing_else_is() {
        let long = "m".repeat(100_000);
        let error = json!({"jsonrpc": "2.0", "id": 5,
                           "error": {"code": -32601, "message": "Method not found", "data": long}})
        .to_string();
        let cut: Value = serde_json::from_str(&bounded_error(&error)).unwrap();
        assert_eq!(cut["id"], 5);
        assert_eq!(cut["error"]["code"], -32601);
        let data = cut["error"]["data"].as_str().unwrap();
        assert!(
            data.len() < 2 * MAX_ERROR_STRING && data.contains("100000 bytes"),
            "{data}"
        );

        let update = json!({"jsonrpc": "2.0", "method": "session/update",
                            "params": {"update": {"text": long}}})
        .to_string();
        assert_eq!(bounded_error(&update), update);
        let result = json!({"jsonrpc": "2.0", "id": 6, "result": {"x": long}}).to_string();
        assert_eq!(bounded_error(&result), result);
    }
}
