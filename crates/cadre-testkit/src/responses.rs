//! OpenAI Responses rendering (`POST …/responses`): named SSE events carrying `type` and
//! `sequence_number`, the whole response object for non-streamed requests, and the in-stream
//! failures (`error`, `response.failed`). Error bodies share Chat Completions' shape.
//!
//! A reply's parts become output items in order: thinking a `reasoning` item (its text as one
//! summary part), text a `message` item, a tool call a `function_call` item. The reasoning
//! item's `encrypted_content` ([`crate::reasoning`]) is sent only when the request's `include`
//! asks for `reasoning.encrypted_content`, as the service does.

use serde_json::{Value, json};

use crate::reasoning;
use crate::script::{Part, Reply, StopKind};
use crate::wire::{Frame, RenderCtx, Usage, argument_pieces, text_pieces};

/// A fixed `created_at` keeps output byte-for-byte reproducible.
const CREATED: u64 = 1_767_225_600;

/// The text the service uses for a failure on its side.
const SERVER_ERROR: &str =
    "The server had an error while processing your request. Sorry about that!";

pub(crate) fn response_id(ctx: &RenderCtx) -> String {
    format!("resp_fake{:06}", ctx.seq)
}

/// An output item's id: the service's prefix, the request and the item's position.
fn item_id(prefix: &str, ctx: &RenderCtx, output_index: usize) -> String {
    item_id_of(prefix, ctx.seq, output_index)
}

/// The id prefix of the output item a reply part becomes (as OpenAI's: `rs_`, `msg_`, `fc_`).
fn item_prefix(part: &Part) -> &'static str {
    match part {
        Part::Thinking { .. } => "rs",
        Part::Text(_) => "msg",
        Part::ToolCall { .. } => "fc",
    }
}

fn item_id_of(prefix: &str, seq: u64, output_index: usize) -> String {
    format!("{prefix}_fake{seq:06}_{output_index:02}")
}

/// `(item id, reasoning item id)` for every output item of the `seq`-th response that comes
/// after a reasoning item: the service refuses such an item sent back without the reasoning
/// item it was produced with (the nearest one before it in the output).
pub(crate) fn reasoning_links(reply: &Reply, seq: u64) -> Vec<(String, String)> {
    let mut reasoning: Option<String> = None;
    let mut links = Vec::new();
    for (index, part) in reply.parts.iter().enumerate() {
        let id = item_id_of(item_prefix(part), seq, index);
        if matches!(part, Part::Thinking { .. }) {
            reasoning = Some(id);
        } else if let Some(rs) = &reasoning {
            links.push((id, rs.clone()));
        }
    }
    links
}

/// What the request said about itself that the response object echoes.
struct Echo<'a> {
    body: &'a Value,
}

impl Echo<'_> {
    fn field(&self, key: &str, default: Value) -> Value {
        match self.body.get(key) {
            Some(v) if !v.is_null() => v.clone(),
            _ => default,
        }
    }

    /// Whether the client asked for reasoning items' encrypted content.
    fn wants_encrypted_reasoning(&self) -> bool {
        self.body
            .get("include")
            .and_then(Value::as_array)
            .is_some_and(|items| {
                items
                    .iter()
                    .any(|i| i.as_str() == Some("reasoning.encrypted_content"))
            })
    }

    /// Delta events carry `obfuscation` padding unless the client turned it off.
    fn obfuscation(&self) -> bool {
        self.body["stream_options"]["include_obfuscation"].as_bool() != Some(false)
    }
}

/// The response object at a point of its life (`in_progress`, `completed`, `incomplete`,
/// `failed`), keys in the service's order.
fn response_object(
    ctx: &RenderCtx,
    echo: &Echo<'_>,
    status: &str,
    output: Vec<Value>,
    details: (Value, Value),
    usage: Value,
) -> Value {
    let (error, incomplete_details) = details;
    let reasoning = echo.body.get("reasoning");
    json!({
        "id": response_id(ctx),
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "background": false,
        "error": error,
        "incomplete_details": incomplete_details,
        "instructions": echo.field("instructions", Value::Null),
        "max_output_tokens": echo.field("max_output_tokens", Value::Null),
        "max_tool_calls": echo.field("max_tool_calls", Value::Null),
        "model": ctx.model,
        "output": output,
        "parallel_tool_calls": echo.field("parallel_tool_calls", json!(true)),
        "previous_response_id": Value::Null,
        "prompt_cache_key": echo.field("prompt_cache_key", Value::Null),
        "reasoning": {
            "effort": reasoning.and_then(|r| r.get("effort")).cloned().unwrap_or(Value::Null),
            "summary": reasoning.and_then(|r| r.get("summary")).cloned().unwrap_or(Value::Null),
        },
        "safety_identifier": echo.field("safety_identifier", Value::Null),
        "service_tier": "default",
        "store": echo.field("store", json!(true)),
        "temperature": echo.field("temperature", json!(1.0)),
        "text": echo.field("text", json!({"format": {"type": "text"}, "verbosity": "medium"})),
        "tool_choice": echo.field("tool_choice", json!("auto")),
        "tools": echo.field("tools", json!([])),
        "top_logprobs": 0,
        "top_p": echo.field("top_p", json!(1.0)),
        "truncation": echo.field("truncation", json!("disabled")),
        "usage": usage,
        "user": Value::Null,
        "metadata": echo.field("metadata", json!({})),
    })
}

/// Usage as the live API reports it: input includes cached tokens; reasoning tokens are part
/// of the output, derived from the thinking text (~4 bytes per token), never more than the
/// output.
fn usage_object(usage: Usage, reply: &Reply) -> Value {
    let thinking_chars: usize = reply
        .parts
        .iter()
        .map(|p| match p {
            Part::Thinking { text, .. } => text.chars().count(),
            _ => 0,
        })
        .sum();
    let has_thinking = reply
        .parts
        .iter()
        .any(|p| matches!(p, Part::Thinking { .. }));
    let reasoning_tokens = if has_thinking {
        (thinking_chars as u64 / 4).max(1).min(usage.output)
    } else {
        0
    };
    let input = usage.input + usage.cache_read + usage.cache_write;
    json!({
        "input_tokens": input,
        "input_tokens_details": {
            "cached_tokens": usage.cache_read,
            "cache_write_tokens": usage.cache_write,
        },
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": input + usage.output,
    })
}

/// `(status, incomplete_details)` for the stop reason.
fn final_status(stop: StopKind) -> (&'static str, Value) {
    match stop {
        StopKind::Stop | StopKind::ToolUse => ("completed", Value::Null),
        StopKind::Length => ("incomplete", json!({"reason": "max_output_tokens"})),
        StopKind::ContentFilter => ("incomplete", json!({"reason": "content_filter"})),
    }
}

fn output_text_part(text: &str) -> Value {
    json!({"type": "output_text", "annotations": [], "logprobs": [], "text": text})
}

fn reasoning_item(id: &str, text: &str, encrypted: bool, done: bool) -> Value {
    let mut item = json!({"id": id, "type": "reasoning"});
    if encrypted {
        item["encrypted_content"] = reasoning::encrypt(id, text).into();
    }
    item["summary"] = if done && !text.is_empty() {
        json!([{"type": "summary_text", "text": text}])
    } else {
        json!([])
    };
    item
}

fn message_item(id: &str, content: Vec<Value>, status: &str) -> Value {
    json!({"id": id, "type": "message", "status": status, "content": content, "role": "assistant"})
}

fn function_call_item(id: &str, call_id: &str, name: &str, arguments: &str, status: &str) -> Value {
    json!({
        "id": id, "type": "function_call", "status": status,
        "arguments": arguments, "call_id": call_id, "name": name,
    })
}

/// Parts that become output items, each with its final (`output_item.done`) form.
fn output_items(reply: &Reply, ctx: &RenderCtx, echo: &Echo<'_>) -> Vec<Value> {
    let (status, _) = final_status(reply.stop_kind());
    let item_status = if status == "completed" {
        "completed"
    } else {
        "incomplete"
    };
    reply
        .parts
        .iter()
        .enumerate()
        .map(|(index, part)| (item_id(item_prefix(part), ctx, index), part))
        .map(|(item, part)| match part {
            Part::Thinking { text, .. } => {
                reasoning_item(&item, text, echo.wants_encrypted_reasoning(), true)
            }
            Part::Text(text) => message_item(&item, vec![output_text_part(text)], item_status),
            Part::ToolCall {
                id,
                name,
                arguments,
            } => function_call_item(&item, id, name, arguments, "completed"),
        })
        .collect()
}

/// Numbers events as they are added; the service counts from 0 in every stream.
struct Events {
    frames: Vec<Frame>,
    obfuscation: bool,
}

impl Events {
    fn push(&mut self, kind: &str, fields: Value) {
        let mut event = json!({"type": kind, "sequence_number": self.frames.len()});
        if let (Some(event), Value::Object(fields)) = (event.as_object_mut(), fields) {
            event.extend(fields);
        }
        self.frames.push(Frame::event(kind, &event.to_string()));
    }

    /// A delta event: `fields` then `delta` (and the service's padding) last.
    fn push_delta(&mut self, kind: &str, mut fields: Value, delta: &str, logprobs: bool) {
        fields["delta"] = delta.into();
        if logprobs {
            fields["logprobs"] = json!([]);
        }
        if self.obfuscation {
            fields["obfuscation"] = obfuscation(delta).into();
        }
        self.push(kind, fields);
    }
}

/// Deterministic stand-in for the service's random padding, which evens out delta sizes so
/// their length does not leak the text.
fn obfuscation(delta: &str) -> String {
    let pad = 16 - delta.chars().count() % 16;
    "Zq7Xw0pLm3Rt9Vb2".chars().take(pad).collect()
}

/// The complete SSE body for a streamed reply, the terminal `response.completed` (or
/// `response.incomplete`) included.
pub(crate) fn stream_frames(reply: &Reply, ctx: &RenderCtx, body: &Value) -> Vec<Frame> {
    let echo = Echo { body };
    let mut events = Events {
        frames: Vec::new(),
        obfuscation: echo.obfuscation(),
    };
    let started = |echo: &Echo<'_>| {
        response_object(
            ctx,
            echo,
            "in_progress",
            Vec::new(),
            (Value::Null, Value::Null),
            Value::Null,
        )
    };
    events.push("response.created", json!({"response": started(&echo)}));
    events.push("response.in_progress", json!({"response": started(&echo)}));

    let done_items = output_items(reply, ctx, &echo);
    for (output_index, (part, done)) in reply.parts.iter().zip(&done_items).enumerate() {
        let id = done["id"].as_str().unwrap_or_default().to_string();
        let at = json!({"item_id": id, "output_index": output_index});
        let added = match part {
            Part::Thinking { text, .. } => {
                reasoning_item(&id, text, echo.wants_encrypted_reasoning(), false)
            }
            Part::Text(_) => message_item(&id, Vec::new(), "in_progress"),
            Part::ToolCall { id: call, name, .. } => {
                function_call_item(&id, call, name, "", "in_progress")
            }
        };
        events.push(
            "response.output_item.added",
            json!({"output_index": output_index, "item": added}),
        );
        match part {
            Part::Thinking { text, .. } if !text.is_empty() => {
                let mut at = at.clone();
                at["summary_index"] = 0.into();
                let part = |text: &str| json!({"type": "summary_text", "text": text});
                events.push(
                    "response.reasoning_summary_part.added",
                    with(&at, "part", part("")),
                );
                for piece in text_pieces(text) {
                    events.push_delta(
                        "response.reasoning_summary_text.delta",
                        at.clone(),
                        piece,
                        false,
                    );
                }
                events.push(
                    "response.reasoning_summary_text.done",
                    with(&at, "text", text.as_str().into()),
                );
                events.push(
                    "response.reasoning_summary_part.done",
                    with(&at, "part", part(text)),
                );
            }
            Part::Thinking { .. } => {}
            Part::Text(text) => {
                let mut at = at.clone();
                at["content_index"] = 0.into();
                events.push(
                    "response.content_part.added",
                    with(&at, "part", output_text_part("")),
                );
                for piece in text_pieces(text) {
                    events.push_delta("response.output_text.delta", at.clone(), piece, true);
                }
                let mut text_done = with(&at, "text", text.as_str().into());
                text_done["logprobs"] = json!([]);
                events.push("response.output_text.done", text_done);
                events.push(
                    "response.content_part.done",
                    with(&at, "part", output_text_part(text)),
                );
            }
            Part::ToolCall { arguments, .. } => {
                for piece in argument_pieces(arguments) {
                    events.push_delta(
                        "response.function_call_arguments.delta",
                        at.clone(),
                        piece,
                        false,
                    );
                }
                events.push(
                    "response.function_call_arguments.done",
                    with(&at, "arguments", arguments.as_str().into()),
                );
            }
        }
        events.push(
            "response.output_item.done",
            json!({"output_index": output_index, "item": done}),
        );
    }

    let (status, incomplete) = final_status(reply.stop_kind());
    let kind = if status == "completed" {
        "response.completed"
    } else {
        "response.incomplete"
    };
    let response = response_object(
        ctx,
        &echo,
        status,
        done_items,
        (Value::Null, incomplete),
        usage_object(ctx.usage, reply),
    );
    events.push(kind, json!({"response": response}));
    let mut frames = events.frames;
    if let Some(last) = frames.pop() {
        frames.push(last.terminal());
    }
    frames
}

/// `fields` with one more key at the end.
fn with(fields: &Value, key: &str, value: Value) -> Value {
    let mut fields = fields.clone();
    fields[key] = value;
    fields
}

/// The response object for a non-streamed request.
pub(crate) fn response_body(reply: &Reply, ctx: &RenderCtx, body: &Value) -> String {
    let echo = Echo { body };
    let (status, incomplete) = final_status(reply.stop_kind());
    response_object(
        ctx,
        &echo,
        status,
        output_items(reply, ctx, &echo),
        (Value::Null, incomplete),
        usage_object(ctx.usage, reply),
    )
    .to_string()
}

/// The service's `error` event, numbered as the `sequence_number`-th event of the stream.
pub(crate) fn error_event_frame(sequence_number: usize) -> Frame {
    let event = json!({
        "type": "error", "sequence_number": sequence_number,
        "code": "server_error", "message": SERVER_ERROR, "param": null,
    });
    Frame::event("error", &event.to_string())
}

/// `response.failed`: the response object with status `failed` and its error.
pub(crate) fn failed_frame(ctx: &RenderCtx, body: &Value, sequence_number: usize) -> Frame {
    let echo = Echo { body };
    let error = json!({"code": "server_error", "message": SERVER_ERROR});
    let response = response_object(
        ctx,
        &echo,
        "failed",
        Vec::new(),
        (error, Value::Null),
        Value::Null,
    );
    let event = json!({"type": "response.failed", "sequence_number": sequence_number, "response": response});
    Frame::event("response.failed", &event.to_string())
}

/// An event that carries no content: `response.in_progress` again. The service has no ping
/// event on this route; a well-formed event without output is the closest equivalent.
pub(crate) fn ping_frame(ctx: &RenderCtx, body: &Value, sequence_number: usize) -> Frame {
    let echo = Echo { body };
    let response = response_object(
        ctx,
        &echo,
        "in_progress",
        Vec::new(),
        (Value::Null, Value::Null),
        Value::Null,
    );
    let event = json!({"type": "response.in_progress", "sequence_number": sequence_number, "response": response});
    Frame::event("response.in_progress", &event.to_string())
}

/// `response.output_text.delta` of output item 0, numbered as the `sequence_number`-th event.
pub(crate) fn text_delta_frame(ctx: &RenderCtx, sequence_number: usize, text: &str) -> Frame {
    let event = json!({
        "type": "response.output_text.delta", "sequence_number": sequence_number,
        "item_id": item_id("msg", ctx, 0), "output_index": 0, "content_index": 0,
        "delta": text, "logprobs": [],
    });
    Frame::event("response.output_text.delta", &event.to_string())
}

/// A text delta event cut off mid-object.
pub(crate) fn malformed_frame(ctx: &RenderCtx, sequence_number: usize) -> Frame {
    Frame {
        bytes: format!(
            "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":{sequence_number},\"item_id\":\"{}\",\"output_index\":0,\"content_index\":0,\"delta\":\"trunc\n\n",
            item_id("msg", ctx, 0)
        ),
        terminal: false,
    }
}

/// The start of a real event whose end never comes (for the trickle fault).
pub(crate) const TRICKLE_LEAD: &[u8] = b"event: response.output_text.delta\ndata: {\"type\":";

/// HTTP 400 body for an input longer than the context window.
pub(crate) fn context_overflow_body() -> String {
    json!({"error": {
        "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "type": "invalid_request_error",
        "param": "input",
        "code": "context_length_exceeded",
    }})
    .to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn ctx() -> RenderCtx {
        RenderCtx {
            model: "gpt-test".into(),
            seq: 1,
            include_usage: false,
            usage: Usage {
                input: 10,
                output: 5,
                cache_read: 4,
                cache_write: 0,
            },
        }
    }

    fn events(frames: &[Frame]) -> Vec<(String, Value)> {
        frames
            .iter()
            .map(|f| {
                let rest = f.bytes.strip_prefix("event: ").unwrap();
                let (name, data) = rest.split_once("\ndata: ").unwrap();
                let data = data.strip_suffix("\n\n").unwrap();
                (name.to_string(), serde_json::from_str(data).unwrap())
            })
            .collect()
    }

    #[test]
    fn every_event_names_its_type_and_counts_from_zero() {
        let reply = Reply::new().thinking("plan it").text("Hi there").tool_call(
            "call_1",
            "read",
            json!({"path": "a"}),
        );
        let body = json!({"include": ["reasoning.encrypted_content"]});
        let frames = stream_frames(&reply, &ctx(), &body);
        let events = events(&frames);
        for (n, (name, data)) in events.iter().enumerate() {
            assert_eq!(data["type"], name.as_str());
            assert_eq!(data["sequence_number"], n);
            // `type` and `sequence_number` lead, as the service writes them.
            let keys: Vec<&String> = data.as_object().unwrap().keys().take(2).collect();
            assert_eq!(keys, ["type", "sequence_number"]);
        }
        assert_eq!(events[0].0, "response.created");
        assert_eq!(events[1].0, "response.in_progress");
        assert_eq!(events.last().unwrap().0, "response.completed");
        assert!(frames.last().unwrap().terminal);
        assert_eq!(frames.iter().filter(|f| f.terminal).count(), 1);
    }

    #[test]
    fn text_reply_exact_bytes() {
        let body = json!({"stream_options": {"include_obfuscation": false}});
        let frames = stream_frames(&Reply::text("Hi there"), &ctx(), &body);
        let names: Vec<String> = events(&frames).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed"
            ]
        );
        assert_eq!(
            frames[2].bytes,
            "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":2,\"output_index\":0,\"item\":{\"id\":\"msg_fake000001_00\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}}\n\n"
        );
        assert_eq!(
            frames[4].bytes,
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":4,\"item_id\":\"msg_fake000001_00\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\",\"logprobs\":[]}\n\n"
        );
    }

    #[test]
    fn usage_counts_cached_input_and_reasoning() {
        let reply = Reply::new().thinking("a".repeat(40)).text("x");
        let u = usage_object(ctx().usage, &reply);
        assert_eq!(
            u,
            json!({"input_tokens": 14, "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 0},
                   "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 5},
                   "total_tokens": 19})
        );
        let u = usage_object(ctx().usage, &Reply::text("x"));
        assert_eq!(u["output_tokens_details"]["reasoning_tokens"], 0);
    }

    #[test]
    fn items_after_reasoning_are_linked_to_it() {
        let reply = Reply::new()
            .text("first")
            .thinking("a")
            .text("x")
            .tool_call("c1", "read", json!({}))
            .thinking("b")
            .tool_call("c2", "read", json!({}));
        let links = reasoning_links(&reply, 7);
        let pairs: Vec<(&str, &str)> = links
            .iter()
            .map(|(item, rs)| (item.as_str(), rs.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("msg_fake000007_02", "rs_fake000007_01"),
                ("fc_fake000007_03", "rs_fake000007_01"),
                ("fc_fake000007_05", "rs_fake000007_04"),
            ]
        );
        // The ids are the ones the stream carries.
        let ctx = RenderCtx { seq: 7, ..ctx() };
        let items = output_items(&reply, &ctx, &Echo { body: &json!({}) });
        assert_eq!(items[2]["id"], "msg_fake000007_02");
        assert_eq!(items[5]["id"], "fc_fake000007_05");
        assert!(reasoning_links(&Reply::text("x").tool_call("c", "n", json!({})), 1).is_empty());
    }

    #[test]
    fn obfuscation_pads_to_sixteen() {
        assert_eq!(obfuscation("").chars().count(), 16);
        assert_eq!(obfuscation("abc").chars().count(), 13);
        assert_eq!(obfuscation(&"x".repeat(15)).chars().count(), 1);
    }
}
