//! Reading one attempt's event stream: body bytes through the SSE parser into the wire format's
//! [`Decoder`], deltas forwarded to the consumer, and content progress reported to the
//! [`Watch`] so only content moves the idle deadline.
//!
//! The body is a [`Body`] rather than a `reqwest::Response` so the same loop runs in tests on
//! scripted bytes under tokio's paused clock, where a keep-alive every 5 s for an hour takes no
//! real time.

use std::future::Future;

use bytes::Bytes;
use cadre_protocol::AssistantMessage;
use tokio::sync::mpsc;

use crate::client::Decoder;
use crate::error::{LlmError, Received};
use crate::provider::StreamEvent;
use crate::sse::SseParser;
use crate::watch::{Guarded, Watch};

/// Where an attempt's body comes from.
pub(crate) trait Body: Send + Sized {
    /// The next piece of the body; `None` at its end.
    fn chunk(&mut self) -> impl Future<Output = Result<Option<Bytes>, LlmError>> + Send;

    /// The terminal event arrived: the rest of the body is not needed.
    fn done(self) {}
}

/// A failed attempt: the error and the reply as far as it had arrived.
pub(crate) struct Failure {
    pub error: LlmError,
    pub partial: AssistantMessage,
}

/// Stream a successful response's body into a message. Content is what makes the decoder emit
/// a delta (a block opening, growing or closing); comments, pings, events without content and
/// bytes that do not complete an event only feed the wording of a deadline error.
pub(crate) async fn read_stream<D: Decoder, B: Body>(
    provider: &str,
    tx: &mpsc::Sender<StreamEvent>,
    watch: &mut Watch<'_>,
    mut decoder: D,
    mut body: B,
) -> Result<AssistantMessage, Failure> {
    let fail = |error: LlmError, decoder: D| Failure {
        error,
        partial: decoder.into_partial(),
    };
    let mut out = Vec::new();
    decoder.begin(&mut out);
    if let Err(e) = watch.forward(tx, &mut out).await {
        return Err(fail(e, decoder));
    }
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    // What came since the last content (or since the headers, before the first).
    let mut received = Received::Headers;
    loop {
        let bytes = match watch.network(body.chunk()).await {
            Guarded::Cancelled => return Err(fail(LlmError::Aborted, decoder)),
            Guarded::Expired(deadline) => {
                // A trickle shows as an event still unfinished when the deadline passed.
                if parser.has_pending() {
                    received = Received::PartialEvent;
                }
                return Err(fail(watch.error(provider, deadline, received), decoder));
            }
            Guarded::Ready(Err(e)) => return Err(fail(e, decoder)),
            Guarded::Ready(Ok(None)) => break,
            Guarded::Ready(Ok(Some(b))) => b,
        };
        if let Err(e) = parser.push(&bytes, &mut events) {
            let error = LlmError::MalformedStream {
                provider: provider.to_string(),
                detail: e.to_string(),
            };
            return Err(fail(error, decoder));
        }
        if !bytes.is_empty() {
            received = Received::KeepAlives;
        }
        let mut terminal = false;
        for ev in &events {
            let handled = decoder.on_event(ev, &mut out);
            // Checked after every event, before its deltas go anywhere: past the limit the
            // message is incomplete, and the rest of the body is not read.
            if let Some(limit) = decoder.exceeded() {
                return Err(too_large(provider, limit, decoder));
            }
            match handled {
                Ok(false) => {}
                Ok(true) => {
                    terminal = true;
                    break;
                }
                Err(e) => return Err(fail(e, decoder)),
            }
        }
        // The next chunk's events are built in these events' buffers.
        parser.recycle(&mut events);
        let content = !out.is_empty();
        if let Err(e) = watch.forward(tx, &mut out).await {
            return Err(fail(e, decoder));
        }
        if terminal {
            body.done();
            break;
        }
        if content {
            // After the hand-over: the consumer's pace is not the provider's silence.
            watch.content();
            received = Received::Nothing;
        }
    }
    if let Err(e) = decoder.check_complete() {
        return Err(fail(e, decoder));
    }
    let message = decoder.finish(&mut out);
    match watch.forward(tx, &mut out).await {
        Ok(()) => Ok(message),
        Err(error) => Err(Failure {
            error,
            partial: message,
        }),
    }
}

/// A message that went past its size limit: the error, and what arrived without its content
/// (usage and ids kept). Content up to the limit is no answer either, and kept it would make a
/// session file and task record of that size.
fn too_large<D: Decoder>(provider: &str, limit: usize, decoder: D) -> Failure {
    let mut partial = decoder.into_partial();
    partial.content = Vec::new();
    Failure {
        error: LlmError::MessageTooLarge {
            provider: provider.to_string(),
            limit,
        },
        partial,
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
