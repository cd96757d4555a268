//! A scripted fake model server for tests, benchmarks and `cadre demo`.
//!
//! [`FakeServer`] listens on `127.0.0.1` and speaks three streaming wire formats on one port:
//! OpenAI Chat Completions (`POST {openai_base_url}/chat/completions`), OpenAI Responses
//! (`POST {openai_base_url}/responses`) and Anthropic Messages
//! (`POST {anthropic_base_url}/v1/messages`). Responses are SSE over chunked HTTP/1.1, framed
//! as the real services frame them, with text streamed in several deltas and tool-call
//! arguments in at least two pieces.
//!
//! # OpenAI Responses
//!
//! Every event is `event: <type>\ndata: <json>\n\n` with `type` and `sequence_number` first;
//! the stream runs `response.created`, `response.in_progress`, then per output item
//! `response.output_item.added` … `response.output_item.done`, and ends with
//! `response.completed` (or `response.incomplete` for a [`StopKind::Length`] or
//! [`StopKind::ContentFilter`] stop) carrying the response object and its usage; there is no
//! `[DONE]`. Thinking becomes a `reasoning` item whose text is one summary part; when the
//! request's `include` asks for `reasoning.encrypted_content`, the item carries an opaque
//! `encrypted_content` sealed by this server. Before a rule is picked the input is checked as
//! the service checks it, each failure an HTTP 400 in its error shape: a returned reasoning
//! item's encrypted content must be one this server issued for that item id, a reasoning item
//! without it is refused when `store` is false, every `function_call` needs its
//! `function_call_output` and the other way round, `previous_response_id` is never found
//! (nothing is stored), no two input items share an id, a reasoning item must be followed (after
//! any further reasoning items) by a function call or an assistant message, and a message or
//! function call sent back with the id of one this server produced after a reasoning item needs
//! that reasoning item before it in the same turn (no user, system or developer message between).
//! [`FakeServer::model_efforts`] makes a model refuse the reasoning efforts it does not take, as
//! the service does (off unless a test names the model).
//! [`RecordedRequest::reasoning_items`] shows which reasoning came back.
//!
//! # Scripting model
//!
//! A test adds [`Rule`]s. Each rule pairs a [`Match`] — a predicate over a normalised view of
//! the request that is the same for all three formats (system text, user-authored text,
//! assistant turns, tool calls and tool results; a Responses request's `instructions` and
//! system/developer items are system text, and the reasoning, message and function-call items
//! of one turn are one assistant turn) — with a sequence of [`Reply`]s. For every request the
//! rules are tried in insertion order and the first match answers with its next reply; once
//! its replies are used up, the last one repeats. A request no rule matches gets HTTP 400 in
//! the service's error shape, saying `cadre-testkit: no scripted reply matches` and
//! summarising the request, so a missing script shows up as an obvious failure.
//!
//! A reply is content (thinking, text, tool calls) plus delivery: usage and cache numbers,
//! stop reason, latency, delay between events, and an optional [`Fault`] (error status, cut
//! connection, silence, no response at all, malformed frame, missing terminal event, in-stream
//! error — for Responses an `error` event or `response.failed` —, keep-alives, pings or a
//! byte trickle for ever, and a flood of text that is made as it is sent). Every request is recorded ([`RecordedRequest`], with its raw body),
//! faulted, rejected and unmatched ones too, so tests can assert on what the client sent.
//!
//! # In process
//!
//! [`ScriptedProvider`] is the same idea without HTTP: a `cadre_llm::Provider` whose replies a
//! handler computes from each request, for tests of the agent loop and the task manager
//! ([`scripted`]).
//!
//! # Example
//!
//! ```no_run
//! use cadre_testkit::{Fault, FakeServer, Match, Reply, Rule};
//! use serde_json::json;
//!
//! # async fn demo() -> std::io::Result<()> {
//! let server = FakeServer::start().await?;
//! // First turn: call a tool. Second turn (one assistant message in the request): answer.
//! server.script(
//!     Rule::new(Match::first_user("read a").and(Match::assistant_turns(0)))
//!         .reply(Reply::new().thinking("I should read it").tool_call("call_1", "read", json!({"path": "a"}))),
//! );
//! server.script(
//!     Rule::new(Match::last_tool_result("contents of a"))
//!         .reply(Reply::text("a says hello").usage(120, 8).cache(100, 0)),
//! );
//! // Anything else: first a rate limit, then a normal answer forever after.
//! server.script(
//!     Rule::always()
//!         .reply(Reply::failing(Fault::rate_limited("1")))
//!         .reply(Reply::text("ok")),
//! );
//!
//! // ... point a client at server.openai_base_url() (Chat Completions or Responses)
//! // or server.anthropic_base_url() ...
//!
//! assert!(server.requests().iter().all(|r| r.header("authorization").is_some()));
//! server.check_tool_calls_answered().map_err(std::io::Error::other)?;
//! # Ok(())
//! # }
//! ```

mod anthropic;
mod efforts;
mod http;
mod matcher;
mod openai;
pub mod peers;
mod reasoning;
mod request;
mod responses;
mod responses_check;
mod script;
pub mod scripted;
mod server;
mod wire;

pub use matcher::Match;
pub use request::{ReasoningItem, RecordedRequest, WireApi};
pub use script::{FLOOD_PIECE, Fault, Reply, ReplySpec, Rule, StopKind};
pub use scripted::ScriptedProvider;
pub use server::FakeServer;

/// Everything a test needs in one import.
pub mod prelude {
    pub use crate::{
        FLOOD_PIECE, FakeServer, Fault, Match, ReasoningItem, RecordedRequest, Reply, Rule,
        StopKind, WireApi,
    };
}
