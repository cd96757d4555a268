//! The ACP channel: JSON-RPC lines on stdin and stdout, framed as the RPC mode frames them
//! (LF-terminated, a size cap per line), with every outgoing line redacted.
//!
//! stdout is the protocol channel: only [`stdout_sink`] writes to it. Bash output, MCP
//! servers and child agents never inherit it as anything but a pipe of their own.

use std::io;

use futures_util::{Sink, Stream};
use tokio::io::AsyncWriteExt;

use crate::rpc::input::{self, Line};

/// What a line over the size cap becomes: a frame the SDK answers with a JSON-RPC parse error
/// (it has no id, so the error's id is null), while the rest of the line is skipped.
const TOO_LONG_FRAME: &str = "{\"jsonrpc\":\"2.0\",\"error\":\"line over the size limit\"";

/// The lines of stdin, read on a thread of their own (see `rpc::input`). Ends at end of input.
pub fn stdin_lines() -> impl Stream<Item = io::Result<String>> + Send + 'static {
    let rx = input::spawn_reader(std::io::stdin());
    futures_util::stream::unfold(rx, |mut rx| async move {
        match rx.recv().await? {
            Line::Text(text) => Some((Ok(bounded_echo(text)), rx)),
            Line::TooLong(limit) => {
                errln!("cadre acp: a message longer than {limit} bytes was skipped");
                Some((Ok(TOO_LONG_FRAME.to_string()), rx))
            }
            Line::End => None,
            Line::Failed(e) => Some((Err(e), rx)),
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

/// The writer of stdout: one line per frame, redacted (streamed text has not passed the
/// agent's redaction), flushed at once so the editor sees updates as they happen.
pub fn stdout_sink() -> impl Sink<String, Error = io::Error> + Send + 'static {
    futures_util::sink::unfold(tokio::io::stdout(), |mut out, line: String| async move {
        let mut line = cadre_protocol::redact::redact_str(&line).into_owned();
        line.push('\n');
        out.write_all(line.as_bytes()).await?;
        out.flush().await?;
        Ok::<_, io::Error>(out)
    })
}
