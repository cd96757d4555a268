//! The scripting vocabulary: rules pair a [`Match`] with the [`Reply`]s to give, in order.

use std::time::Duration;

use serde_json::Value;

use crate::matcher::Match;

/// Why the scripted turn ended; rendered as each service's stop reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopKind {
    /// OpenAI `stop`, Anthropic `end_turn`, Responses `response.completed`.
    Stop,
    /// OpenAI `tool_calls`, Anthropic `tool_use`, Responses `response.completed`.
    ToolUse,
    /// OpenAI `length`, Anthropic `max_tokens`, Responses `response.incomplete` with reason
    /// `max_output_tokens`.
    Length,
    /// OpenAI `content_filter`, Anthropic `refusal`, Responses `response.incomplete` with
    /// reason `content_filter`.
    ContentFilter,
}

/// Something that goes wrong instead of (or in the middle of) a normal reply.
///
/// "Events" are SSE frames as written on the wire, counted from the first frame of the body
/// (an Anthropic `ping` counts, so does the OpenAI role chunk).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this HTTP status instead of a stream. `body: None` renders the service's own
    /// error JSON for that status (e.g. 429 `rate_limit_error`, 529 `overloaded_error`).
    Status {
        status: u16,
        retry_after: Option<String>,
        body: Option<String>,
    },
    /// Drop the TCP connection mid-stream after N events, without ending the chunked body.
    CutAfter { events: usize },
    /// Stop sending after N events but keep the connection open until the client leaves.
    /// `events: 0` is "headers, then silence".
    SilentAfter { events: usize },
    /// Read the request and never answer, not even with a status line, until the client leaves.
    NoResponse,
    /// After N events, an SSE comment (`: ping`) every `every`, for ever: a connection kept
    /// alive by a server that never answers.
    KeepAlivesAfter { events: usize, every: Duration },
    /// After N events, an event without content every `every`, for ever: Anthropic's
    /// `event: ping`, for OpenAI a chunk whose delta is empty, for Responses
    /// `response.in_progress` again.
    PingsAfter { events: usize, every: Duration },
    /// After N events, one byte every `every` of an event that never completes, for ever.
    TrickleAfter { events: usize, every: Duration },
    /// After N events send one frame whose data is not valid JSON, then end the body.
    MalformedAfter { events: usize },
    /// Send all content but omit the terminal frame (`[DONE]` / `message_stop` /
    /// `response.completed`), then end the body.
    NoTerminal,
    /// HTTP 400 with the service's own "context window exceeded" error body.
    ContextOverflow,
    /// After N events send the service's in-stream error (Anthropic `event: error` with
    /// `overloaded_error`, OpenAI `data: {"error":..}`, Responses `event: error`), then end the
    /// body.
    ErrorEvent { events: usize },
    /// After N events, `bytes` of text in deltas of [`FLOOD_PIECE`] bytes each, made while
    /// they are sent (never held whole), then the rest of the reply: a model that does not stop
    /// talking. The deltas go to the reply's first block (Anthropic block 0, Responses output
    /// 0, OpenAI's one text stream), which should be text; put `events` after that block opens
    /// for a faithful stream (Anthropic after 3 events: `message_start`, `content_block_start`,
    /// `ping`; Responses after 4; Chat Completions after 1).
    TextFloodAfter { events: usize, bytes: usize },
    /// After N events send Responses' `response.failed` (the response object with status
    /// `failed` and a `server_error`), then end the body. The other formats have no such event
    /// and send their in-stream error, as for [`Fault::ErrorEvent`].
    ResponseFailed { events: usize },
}

/// The size of one delta of [`Fault::TextFloodAfter`].
pub const FLOOD_PIECE: usize = 64 * 1024;

impl Fault {
    /// A bare status with the service's default error body.
    pub fn status(status: u16) -> Fault {
        Fault::Status {
            status,
            retry_after: None,
            body: None,
        }
    }

    /// HTTP 429 with a `retry-after` header (seconds or an HTTP date, passed through verbatim).
    pub fn rate_limited(retry_after: impl Into<String>) -> Fault {
        Fault::Status {
            status: 429,
            retry_after: Some(retry_after.into()),
            body: None,
        }
    }
}

/// One piece of assistant output, in the order it is streamed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Part {
    Thinking {
        text: String,
        signature: String,
    },
    Text(String),
    /// `arguments` is the raw JSON text streamed to the client (may be deliberately invalid).
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
}

/// A scripted assistant turn: content parts plus how it is delivered.
///
/// `text`, `thinking` and `tool_call` work both as constructors and chained:
/// `Reply::text("hi")`, `Reply::new().thinking("hmm").text("hi").tool_call(..)`. The other
/// builder methods (`usage`, `cache`, `stop`, `fault`, `latency`, `chunk_delay`, …) chain.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    spec: ReplySpec,
}

/// The contents of a [`Reply`].
///
/// A separate type only because Rust cannot have `Reply::text("..")` (a constructor) and
/// `reply.text("..")` (a chained call) on one type: the chained forms live here and are
/// reached through `Deref`. Each returns a new `Reply` with the part appended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplySpec {
    pub(crate) parts: Vec<Part>,
    pub(crate) usage: Option<(u64, u64)>,
    pub(crate) cache: (u64, u64),
    pub(crate) stop: Option<StopKind>,
    pub(crate) fault: Option<Fault>,
    pub(crate) latency: Duration,
    pub(crate) chunk_delay: Duration,
}

impl std::ops::Deref for Reply {
    type Target = ReplySpec;
    fn deref(&self) -> &ReplySpec {
        &self.spec
    }
}

impl ReplySpec {
    /// Appends visible text.
    pub fn text(&self, text: impl Into<String>) -> Reply {
        self.with(Part::Text(text.into()))
    }

    /// Appends a thinking block with a deterministic signature derived from its text.
    pub fn thinking(&self, text: impl Into<String>) -> Reply {
        let text = text.into();
        let signature = default_signature(&text);
        self.with(Part::Thinking { text, signature })
    }

    /// Appends a tool call whose arguments are `arguments` serialised as compact JSON.
    pub fn tool_call(
        &self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Reply {
        self.with(Part::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.to_string(),
        })
    }

    fn with(&self, part: Part) -> Reply {
        let mut spec = self.clone();
        spec.parts.push(part);
        Reply { spec }
    }
}

impl Reply {
    /// An empty reply (no content, `Stop`).
    pub fn new() -> Reply {
        Reply::default()
    }

    /// A reply consisting of one text part.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::new().spec.text(text)
    }

    /// A reply consisting of one thinking part.
    pub fn thinking(text: impl Into<String>) -> Reply {
        Reply::new().spec.thinking(text)
    }

    /// A reply consisting of one tool call.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Reply {
        Reply::new().spec.tool_call(id, name, arguments)
    }

    /// Appends a thinking block with an explicit signature (Anthropic `signature_delta`).
    /// Responses has no signature: its reasoning item's `encrypted_content` is sealed from the
    /// item id and the text, so that it can be verified when it comes back.
    pub fn thinking_signed(
        mut self,
        text: impl Into<String>,
        signature: impl Into<String>,
    ) -> Reply {
        self.spec.parts.push(Part::Thinking {
            text: text.into(),
            signature: signature.into(),
        });
        self
    }

    /// Appends a tool call with raw argument text, e.g. to test invalid JSON handling.
    pub fn tool_call_raw(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Reply {
        self.spec.parts.push(Part::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        });
        self
    }

    /// A reply that fails with `fault` (shorthand for `Reply::new().fault(fault)`).
    pub fn failing(fault: Fault) -> Reply {
        Reply::new().fault(fault)
    }

    /// Reported token usage. `input` is uncached input (Anthropic `input_tokens`); OpenAI's
    /// `prompt_tokens` is rendered as `input + cache_read + cache_write`. Defaults are derived
    /// from the request and reply sizes.
    pub fn usage(mut self, input: u64, output: u64) -> Reply {
        self.spec.usage = Some((input, output));
        self
    }

    /// Reported cache tokens: `read` is Anthropic `cache_read_input_tokens` / OpenAI
    /// `cached_tokens`; `write` is Anthropic `cache_creation_input_tokens`.
    pub fn cache(mut self, read: u64, write: u64) -> Reply {
        self.spec.cache = (read, write);
        self
    }

    /// Overrides the stop reason (default: `ToolUse` if there is a tool call, else `Stop`).
    pub fn stop(mut self, stop: StopKind) -> Reply {
        self.spec.stop = Some(stop);
        self
    }

    /// Makes the response fail in the given way.
    pub fn fault(mut self, fault: Fault) -> Reply {
        self.spec.fault = Some(fault);
        self
    }

    /// Waits this long before sending the response head.
    pub fn latency(mut self, latency: Duration) -> Reply {
        self.spec.latency = latency;
        self
    }

    /// Waits this long between SSE events.
    pub fn chunk_delay(mut self, delay: Duration) -> Reply {
        self.spec.chunk_delay = delay;
        self
    }

    /// The stop reason this reply reports.
    pub(crate) fn stop_kind(&self) -> StopKind {
        self.stop.unwrap_or_else(|| {
            if self.has_tool_calls() {
                StopKind::ToolUse
            } else {
                StopKind::Stop
            }
        })
    }

    fn has_tool_calls(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::ToolCall { .. }))
    }

    /// Characters of generated output, the basis of the default output token count.
    pub(crate) fn output_chars(&self) -> usize {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Thinking { text, .. } | Part::Text(text) => text.chars().count(),
                Part::ToolCall {
                    name, arguments, ..
                } => name.chars().count() + arguments.chars().count(),
            })
            .sum()
    }
}

/// A deterministic, base64-looking signature so replays are stable across runs.
fn default_signature(text: &str) -> String {
    // FNV-1a: tiny, stable, and good enough to make different thoughts sign differently.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("EqQBCgIYAhIM{hash:016x}")
}

/// A match paired with the replies to give; the first matching rule answers.
///
/// Replies are used in order; once exhausted, the last one repeats. A rule without replies
/// answers with an empty reply.
#[derive(Clone, Debug)]
pub struct Rule {
    pub(crate) matcher: Match,
    pub(crate) replies: Vec<Reply>,
}

impl Rule {
    pub fn new(matcher: Match) -> Rule {
        Rule {
            matcher,
            replies: Vec::new(),
        }
    }

    /// A rule that matches every request.
    pub fn always() -> Rule {
        Rule::new(Match::Always)
    }

    /// Appends the next reply in the sequence.
    pub fn reply(mut self, reply: Reply) -> Rule {
        self.replies.push(reply);
        self
    }

    /// The reply for the `nth` (0-based) use of this rule.
    pub(crate) fn reply_for(&self, nth: usize) -> Reply {
        match self.replies.get(nth).or_else(|| self.replies.last()) {
            Some(reply) => reply.clone(),
            None => Reply::new(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn constructors_and_chaining_share_names() {
        let a = Reply::text("hi");
        assert_eq!(a.parts, vec![Part::Text("hi".into())]);
        let b =
            Reply::new()
                .thinking("hmm")
                .text("ok")
                .tool_call("c1", "read", json!({"path": "a"}));
        assert_eq!(b.parts.len(), 3);
        assert!(
            matches!(&b.parts[0], Part::Thinking { text, signature } if text == "hmm" && signature.starts_with("EqQB"))
        );
        assert_eq!(
            b.parts[2],
            Part::ToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: r#"{"path":"a"}"#.into()
            }
        );
    }

    #[test]
    fn chained_parts_keep_earlier_settings() {
        let r = Reply::new()
            .usage(1, 2)
            .cache(3, 4)
            .stop(StopKind::Length)
            .fault(Fault::NoTerminal)
            .latency(Duration::from_millis(1))
            .chunk_delay(Duration::from_millis(2))
            .text("a")
            .thinking("b")
            .tool_call("c", "d", json!(1));
        assert_eq!(r.usage, Some((1, 2)));
        assert_eq!(r.cache, (3, 4));
        assert_eq!(r.stop_kind(), StopKind::Length);
        assert_eq!(r.fault, Some(Fault::NoTerminal));
        assert_eq!(r.latency, Duration::from_millis(1));
        assert_eq!(r.chunk_delay, Duration::from_millis(2));
        assert_eq!(r.parts.len(), 3);
        assert_eq!(Reply::text("x").text("y").parts.len(), 2);
        assert_eq!(Reply::thinking("t").parts.len(), 1);
    }

    #[test]
    fn signatures_are_deterministic_and_distinct() {
        assert_eq!(default_signature("a"), default_signature("a"));
        assert_ne!(default_signature("a"), default_signature("b"));
    }

    #[test]
    fn stop_kind_defaults_follow_content() {
        assert_eq!(Reply::text("x").stop_kind(), StopKind::Stop);
        assert_eq!(
            Reply::tool_call("c", "n", json!({})).stop_kind(),
            StopKind::ToolUse
        );
        assert_eq!(
            Reply::text("x").stop(StopKind::Length).stop_kind(),
            StopKind::Length
        );
    }

    #[test]
    fn output_chars_counts_all_parts() {
        let r = Reply::new()
            .thinking("ab")
            .text("cde")
            .tool_call_raw("id", "fn", "{}");
        assert_eq!(r.output_chars(), 2 + 3 + 2 + 2);
    }

    #[test]
    fn rule_replies_in_order_then_last_repeats() {
        let rule = Rule::always()
            .reply(Reply::text("one"))
            .reply(Reply::text("two"));
        assert_eq!(rule.reply_for(0), Reply::text("one"));
        assert_eq!(rule.reply_for(1), Reply::text("two"));
        assert_eq!(rule.reply_for(7), Reply::text("two"));
        assert_eq!(Rule::always().reply_for(0), Reply::new());
    }

    #[test]
    fn fault_helpers() {
        assert_eq!(
            Fault::rate_limited("3"),
            Fault::Status {
                status: 429,
                retry_after: Some("3".into()),
                body: None
            }
        );
        assert_eq!(
            Fault::status(500),
            Fault::Status {
                status: 500,
                retry_after: None,
                body: None
            }
        );
        assert_eq!(
            Reply::failing(Fault::NoTerminal).fault,
            Some(Fault::NoTerminal)
        );
    }
}
