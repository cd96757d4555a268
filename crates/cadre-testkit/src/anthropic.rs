//! Anthropic Messages rendering: named SSE events, whole messages and
//! `{"type":"error","error":{...}}` bodies.

use serde::Serialize;
use serde_json::{Value, json};

use crate::script::{Part, Reply, StopKind};
use crate::wire::{Frame, RenderCtx, Usage, argument_pieces, text_pieces};

/// Stream events; the internal tag puts `"type"` first, as the service writes it.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event<'a> {
    MessageStart {
        message: StartMessage<'a>,
    },
    ContentBlockStart {
        index: usize,
        content_block: Block<'a>,
    },
    Ping,
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta<'a>,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: StopDelta,
        usage: OutputUsage,
    },
    MessageStop,
    Error {
        error: ErrorDetail<'a>,
    },
}

impl Event<'_> {
    /// The SSE event name, which always equals the data's `type`.
    fn name(&self) -> &'static str {
        match self {
            Event::MessageStart { .. } => "message_start",
            Event::ContentBlockStart { .. } => "content_block_start",
            Event::Ping => "ping",
            Event::ContentBlockDelta { .. } => "content_block_delta",
            Event::ContentBlockStop { .. } => "content_block_stop",
            Event::MessageDelta { .. } => "message_delta",
            Event::MessageStop => "message_stop",
            Event::Error { .. } => "error",
        }
    }

    fn frame(&self) -> Frame {
        Frame::event(self.name(), &to_json(self))
    }
}

#[derive(Serialize)]
struct StartMessage<'a> {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    content: [(); 0],
    model: &'a str,
    stop_reason: Option<()>,
    stop_sequence: Option<()>,
    usage: WireUsage,
}

#[derive(Serialize)]
struct WireUsage {
    input_tokens: u64,
    cache_creation_input_tokens: u64,
    cache_read_input_tokens: u64,
    output_tokens: u64,
}

impl WireUsage {
    fn new(u: Usage, output_tokens: u64) -> WireUsage {
        WireUsage {
            input_tokens: u.input,
            cache_creation_input_tokens: u.cache_write,
            cache_read_input_tokens: u.cache_read,
            output_tokens,
        }
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Thinking {
        thinking: &'a str,
    },
    Text {
        text: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Empty,
    },
}

/// Serialises as `{}`: a streamed tool_use block starts with empty input.
#[derive(Serialize)]
struct Empty {}

/// The variant names are the wire's `…_delta` type names.
#[derive(Serialize)]
#[serde(tag = "type")]
enum BlockDelta<'a> {
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: &'a str },
    #[serde(rename = "signature_delta")]
    Signature { signature: &'a str },
    #[serde(rename = "text_delta")]
    Text { text: &'a str },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: &'a str },
}

#[derive(Serialize)]
struct StopDelta {
    stop_reason: &'static str,
    stop_sequence: Option<()>,
}

#[derive(Serialize)]
struct OutputUsage {
    output_tokens: u64,
}

#[derive(Serialize)]
struct ErrorDetail<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    message: &'a str,
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    error: ErrorDetail<'a>,
}

fn to_json<T: Serialize>(value: &T) -> String {
    // Serialising these plain structs cannot fail; fall back to an empty object regardless.
    serde_json::to_string(value).unwrap_or_else(|_| "{}".to_string())
}

fn stop_reason(stop: StopKind) -> &'static str {
    match stop {
        StopKind::Stop => "end_turn",
        StopKind::ToolUse => "tool_use",
        StopKind::Length => "max_tokens",
        StopKind::ContentFilter => "refusal",
    }
}

fn message_id(ctx: &RenderCtx) -> String {
    format!("msg_fake{:06}", ctx.seq)
}

/// Parts that become content blocks; empty text and thinking are not sent as blocks.
fn blocks(reply: &Reply) -> impl Iterator<Item = &Part> {
    reply.parts.iter().filter(|p| match p {
        Part::Thinking { text, .. } | Part::Text(text) => !text.is_empty(),
        Part::ToolCall { .. } => true,
    })
}

/// The complete SSE body for a streamed reply, `message_stop` included.
pub(crate) fn stream_frames(reply: &Reply, ctx: &RenderCtx) -> Vec<Frame> {
    let mut frames = vec![
        Event::MessageStart {
            message: StartMessage {
                id: message_id(ctx),
                kind: "message",
                role: "assistant",
                content: [],
                model: &ctx.model,
                stop_reason: None,
                stop_sequence: None,
                usage: WireUsage::new(ctx.usage, 1),
            },
        }
        .frame(),
    ];
    let mut pinged = false;
    for (index, part) in blocks(reply).enumerate() {
        let content_block = match part {
            Part::Thinking { .. } => Block::Thinking { thinking: "" },
            Part::Text(_) => Block::Text { text: "" },
            Part::ToolCall { id, name, .. } => Block::ToolUse {
                id,
                name,
                input: Empty {},
            },
        };
        frames.push(
            Event::ContentBlockStart {
                index,
                content_block,
            }
            .frame(),
        );
        // The service pings once early in the stream, after the first block opens.
        if !pinged {
            frames.push(Event::Ping.frame());
            pinged = true;
        }
        let delta = |delta: BlockDelta<'_>| Event::ContentBlockDelta { index, delta }.frame();
        match part {
            Part::Thinking { text, signature } => {
                for piece in text_pieces(text) {
                    frames.push(delta(BlockDelta::Thinking { thinking: piece }));
                }
                frames.push(delta(BlockDelta::Signature { signature }));
            }
            Part::Text(text) => {
                for piece in text_pieces(text) {
                    frames.push(delta(BlockDelta::Text { text: piece }));
                }
            }
            Part::ToolCall { arguments, .. } => {
                for piece in argument_pieces(arguments) {
                    frames.push(delta(BlockDelta::InputJson {
                        partial_json: piece,
                    }));
                }
            }
        }
        frames.push(Event::ContentBlockStop { index }.frame());
    }
    if !pinged {
        frames.push(Event::Ping.frame());
    }
    frames.push(
        Event::MessageDelta {
            delta: StopDelta {
                stop_reason: stop_reason(reply.stop_kind()),
                stop_sequence: None,
            },
            usage: OutputUsage {
                output_tokens: ctx.usage.output,
            },
        }
        .frame(),
    );
    frames.push(Event::MessageStop.frame().terminal());
    frames
}

/// The `message` body for a non-streamed request.
pub(crate) fn message_body(reply: &Reply, ctx: &RenderCtx) -> String {
    let content: Vec<Value> = blocks(reply)
        .map(|part| match part {
            Part::Thinking { text, signature } => {
                json!({"type": "thinking", "thinking": text, "signature": signature})
            }
            Part::Text(text) => json!({"type": "text", "text": text}),
            Part::ToolCall {
                id,
                name,
                arguments,
            } => {
                // A non-streamed tool_use carries parsed input; raw invalid JSON becomes a string.
                let input = serde_json::from_str::<Value>(arguments)
                    .unwrap_or_else(|_| Value::String(arguments.clone()));
                json!({"type": "tool_use", "id": id, "name": name, "input": input})
            }
        })
        .collect();
    json!({
        "id": message_id(ctx),
        "type": "message",
        "role": "assistant",
        "content": content,
        "model": ctx.model,
        "stop_reason": stop_reason(reply.stop_kind()),
        "stop_sequence": null,
        "usage": WireUsage::new(ctx.usage, ctx.usage.output),
    })
    .to_string()
}

/// The keep-alive event the service sends while a reply is slow to come.
pub(crate) fn ping_frame() -> Frame {
    Event::Ping.frame()
}

/// A `text_delta` of content block 0.
pub(crate) fn text_delta_frame(text: &str) -> Frame {
    Event::ContentBlockDelta {
        index: 0,
        delta: BlockDelta::Text { text },
    }
    .frame()
}

/// A frame whose data is cut off mid-object.
pub(crate) fn malformed_frame() -> Frame {
    Frame {
        bytes: "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"trunc\n\n".to_string(),
        terminal: false,
    }
}

/// The in-stream error the service sends when it fails mid-response.
pub(crate) fn error_event_frame() -> Frame {
    Event::Error {
        error: ErrorDetail {
            kind: "overloaded_error",
            message: "Overloaded",
        },
    }
    .frame()
}

fn error_json(kind: &str, message: &str) -> String {
    to_json(&ErrorEnvelope {
        kind: "error",
        error: ErrorDetail { kind, message },
    })
}

/// The service's error body for `status`, with `message` replacing the default text.
pub(crate) fn error_body(status: u16, message: Option<&str>) -> String {
    let (kind, default) = match status {
        400 => ("invalid_request_error", "Invalid request."),
        401 => ("authentication_error", "invalid x-api-key"),
        403 => (
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        404 => ("not_found_error", "The requested resource was not found."),
        413 => (
            "request_too_large",
            "Request exceeds the maximum allowed size.",
        ),
        429 => (
            "rate_limit_error",
            "This request would exceed your organization's rate limit. Please try again later.",
        ),
        529 => ("overloaded_error", "Overloaded"),
        500..=599 => ("api_error", "Internal server error"),
        _ => ("invalid_request_error", "Invalid request."),
    };
    error_json(kind, message.unwrap_or(default))
}

/// HTTP 400 body for a prompt longer than the context window.
pub(crate) fn context_overflow_body(input_tokens: u64) -> String {
    error_json(
        "invalid_request_error",
        &format!(
            "prompt is too long: {} tokens > 200000 maximum",
            input_tokens.max(200_001)
        ),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn ctx() -> RenderCtx {
        RenderCtx {
            model: "claude-test".into(),
            seq: 2,
            include_usage: false,
            usage: Usage {
                input: 10,
                output: 5,
                cache_read: 4,
                cache_write: 3,
            },
        }
    }

    fn parse(frames: &[Frame]) -> Vec<(String, Value)> {
        frames
            .iter()
            .map(|f| {
                let rest = f.bytes.strip_prefix("event: ").unwrap();
                let (name, rest) = rest.split_once("\ndata: ").unwrap();
                let data = rest.strip_suffix("\n\n").unwrap();
                let v: Value = serde_json::from_str(data).unwrap();
                assert_eq!(v["type"], name, "event name equals data type");
                (name.to_string(), v)
            })
            .collect()
    }

    #[test]
    fn text_reply_exact_bytes() {
        let frames = stream_frames(&Reply::text("Hi there"), &ctx());
        let body: String = frames.iter().map(|f| f.bytes.as_str()).collect();
        let expected = concat!(
            "event: message_start\n",
            r#"data: {"type":"message_start","message":{"id":"msg_fake000002","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":3,"cache_read_input_tokens":4,"output_tokens":1}}}"#,
            "\n\n",
            "event: content_block_start\n",
            r#"data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            "\n\n",
            "event: ping\n",
            r#"data: {"type":"ping"}"#,
            "\n\n",
            "event: content_block_delta\n",
            r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
            "\n\n",
            "event: content_block_delta\n",
            r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" th"}}"#,
            "\n\n",
            "event: content_block_delta\n",
            r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ere"}}"#,
            "\n\n",
            "event: content_block_stop\n",
            r#"data: {"type":"content_block_stop","index":0}"#,
            "\n\n",
            "event: message_delta\n",
            r#"data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}"#,
            "\n\n",
            "event: message_stop\n",
            r#"data: {"type":"message_stop"}"#,
            "\n\n",
        );
        assert_eq!(body, expected);
        assert!(frames.last().unwrap().terminal);
    }

    #[test]
    fn thinking_and_tool_use_blocks() {
        let reply = Reply::new()
            .thinking_signed("deep thought", "SIG")
            .text("")
            .text("ok")
            .tool_call("toolu_1", "read", json!({"path": "a"}));
        let events = parse(&stream_frames(&reply, &ctx()));
        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names[0], "message_start");
        assert_eq!(names[1], "content_block_start");
        assert_eq!(names[2], "ping");
        assert_eq!(names.iter().filter(|n| **n == "ping").count(), 1);
        assert_eq!(names[names.len() - 2], "message_delta");
        assert_eq!(names[names.len() - 1], "message_stop");

        let starts: Vec<&Value> = events
            .iter()
            .filter(|(n, _)| n == "content_block_start")
            .map(|(_, v)| v)
            .collect();
        assert_eq!(starts.len(), 3, "empty text is not a block");
        assert_eq!(starts[0]["content_block"]["type"], "thinking");
        assert_eq!(starts[1]["content_block"]["type"], "text");
        assert_eq!(
            starts[2]["content_block"],
            json!({"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}})
        );
        assert_eq!(starts[2]["index"], 2);

        let deltas = |index: u64, kind: &str, field: &str| -> Vec<String> {
            events
                .iter()
                .filter(|(n, v)| n == "content_block_delta" && v["index"] == index)
                .filter(|(_, v)| v["delta"]["type"] == kind)
                .map(|(_, v)| v["delta"][field].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(
            deltas(0, "thinking_delta", "thinking").concat(),
            "deep thought"
        );
        assert_eq!(deltas(0, "signature_delta", "signature"), vec!["SIG"]);
        assert_eq!(deltas(1, "text_delta", "text").concat(), "ok");
        let json_pieces = deltas(2, "input_json_delta", "partial_json");
        assert!(json_pieces.len() >= 2);
        assert_eq!(
            serde_json::from_str::<Value>(&json_pieces.concat()).unwrap(),
            json!({"path": "a"})
        );
        let (_, delta) = &events[events.len() - 2];
        assert_eq!(delta["delta"]["stop_reason"], "tool_use");
        assert_eq!(delta["usage"]["output_tokens"], 5);
    }

    #[test]
    fn empty_reply_still_pings_and_terminates() {
        let events = parse(&stream_frames(&Reply::new(), &ctx()));
        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            vec!["message_start", "ping", "message_delta", "message_stop"]
        );
    }

    #[test]
    fn stop_reasons_map() {
        for (stop, reason) in [
            (StopKind::Stop, "end_turn"),
            (StopKind::ToolUse, "tool_use"),
            (StopKind::Length, "max_tokens"),
            (StopKind::ContentFilter, "refusal"),
        ] {
            let events = parse(&stream_frames(&Reply::text("x").stop(stop), &ctx()));
            assert_eq!(events[events.len() - 2].1["delta"]["stop_reason"], reason);
        }
    }

    #[test]
    fn message_body_shape() {
        let reply = Reply::new()
            .thinking_signed("t", "S")
            .text("hi")
            .tool_call("toolu_1", "n", json!({"a": 1}))
            .tool_call_raw("toolu_2", "n", "{bad");
        let v: Value = serde_json::from_str(&message_body(&reply, &ctx())).unwrap();
        assert_eq!(v["type"], "message");
        assert_eq!(v["content"][0]["signature"], "S");
        assert_eq!(v["content"][1]["text"], "hi");
        assert_eq!(v["content"][2]["input"], json!({"a": 1}));
        assert_eq!(v["content"][3]["input"], "{bad");
        assert_eq!(v["stop_reason"], "tool_use");
        assert_eq!(v["usage"]["output_tokens"], 5);
        assert_eq!(v["usage"]["cache_read_input_tokens"], 4);
    }

    #[test]
    fn error_bodies() {
        for (status, kind) in [
            (400, "invalid_request_error"),
            (401, "authentication_error"),
            (403, "permission_error"),
            (404, "not_found_error"),
            (413, "request_too_large"),
            (429, "rate_limit_error"),
            (500, "api_error"),
            (503, "api_error"),
            (529, "overloaded_error"),
            (418, "invalid_request_error"),
        ] {
            let v: Value = serde_json::from_str(&error_body(status, None)).unwrap();
            assert_eq!(v["type"], "error");
            assert_eq!(v["error"]["type"], kind);
        }
        let v: Value = serde_json::from_str(&error_body(400, Some("custom"))).unwrap();
        assert_eq!(v["error"]["message"], "custom");
        let v: Value = serde_json::from_str(&context_overflow_body(3)).unwrap();
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("prompt is too long")
        );
        let events = parse(&[error_event_frame()]);
        assert_eq!(events[0].1["error"]["type"], "overloaded_error");
    }

    #[test]
    fn malformed_frame_is_not_json() {
        let f = malformed_frame();
        let data = f.bytes.split_once("\ndata: ").unwrap().1.trim_end();
        assert!(serde_json::from_str::<Value>(data).is_err());
    }
}
