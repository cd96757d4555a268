//! Helpers shared by the unit tests of the wire formats.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use cadre_protocol::{AssistantMessage, AssistantMessageEvent, Message, ThinkingLevel, ToolSpec};
use serde_json::json;

use crate::client::Decoder;
use crate::error::LlmError;
use crate::model::{Api, Compat, Model, ModelCost};
use crate::provider::CompletionRequest;
use crate::sse::SseParser;

pub fn model(api: Api) -> Model {
    Model {
        provider: "prov".into(),
        id: "model-1".into(),
        name: "Model 1".into(),
        api,
        base_url: "http://localhost:1/v1".into(),
        api_key: Some("secret-key".into()),
        headers: BTreeMap::new(),
        reasoning: false,
        thinking_level_map: BTreeMap::new(),
        input: vec!["text".into(), "image".into()],
        context_window: 100_000,
        max_tokens: 8_000,
        cost: ModelCost::default(),
        compat: Compat::default(),
    }
}

pub fn request(model: Model, messages: Vec<Message>) -> CompletionRequest {
    CompletionRequest {
        model,
        system_prompt: "You are terse.".into(),
        messages,
        tools: vec![ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }]
        .into(),
        thinking: ThinkingLevel::Off,
    }
}

pub type Decoded = (
    Vec<AssistantMessageEvent>,
    Result<AssistantMessage, (LlmError, AssistantMessage)>,
);

/// Run SSE bytes, split into the given chunks, through a decoder the way the client does.
pub fn decode<D: Decoder>(mut decoder: D, chunks: &[&[u8]]) -> Decoded {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    decoder.begin(&mut out);
    let mut events = Vec::new();
    for chunk in chunks {
        parser.push(chunk, &mut events).unwrap();
        for ev in &events {
            match decoder.on_event(ev, &mut out) {
                Ok(false) => {}
                Ok(true) => return finish(decoder, out),
                Err(e) => {
                    let partial = decoder.into_partial();
                    return (out, Err((e, partial)));
                }
            }
        }
        // As the client does: later events are built in these events' buffers.
        parser.recycle(&mut events);
    }
    finish(decoder, out)
}

fn finish<D: Decoder>(decoder: D, mut out: Vec<AssistantMessageEvent>) -> Decoded {
    match decoder.check_complete() {
        Ok(()) => {
            let msg = decoder.finish(&mut out);
            (out, Ok(msg))
        }
        Err(e) => (out, Err((e, decoder.into_partial()))),
    }
}

/// Decode the whole input at once and at every single split point; all must agree.
pub fn decode_all_splits<D: Decoder>(make: impl Fn() -> D, input: &[u8]) -> Decoded {
    let whole = decode(make(), &[input]);
    for i in 0..=input.len() {
        let split = decode(make(), &[&input[..i], &input[i..]]);
        assert_eq!(
            format!("{:?}", split.0),
            format!("{:?}", whole.0),
            "events differ at split {i}"
        );
        let a = split
            .1
            .as_ref()
            .map(strip_ts)
            .map_err(|(e, p)| (e.to_string(), strip_ts(p)));
        let b = whole
            .1
            .as_ref()
            .map(strip_ts)
            .map_err(|(e, p)| (e.to_string(), strip_ts(p)));
        assert_eq!(a, b, "result differs at split {i}");
    }
    whole
}

/// Decode 1500 random mutations of `fixture` (bytes overwritten, cut short or sprinkled with
/// JSON punctuation), each split at a random point: any outcome is fine as long as it is an
/// outcome, never a panic. The seed is fixed so a failure reproduces.
pub fn decode_mutations<D: Decoder>(fixture: &[u8], make: impl Fn() -> D) {
    let mut rng = fastrand::Rng::with_seed(11);
    let base = fixture.to_vec();
    for _ in 0..1500 {
        let mut input = base.clone();
        for _ in 0..rng.usize(1..6) {
            match rng.u8(0..3) {
                0 if !input.is_empty() => {
                    let i = rng.usize(0..input.len());
                    input[i] = rng.u8(..);
                }
                1 if !input.is_empty() => {
                    let i = rng.usize(0..input.len());
                    input.truncate(i);
                }
                _ => {
                    let i = rng.usize(0..=input.len());
                    let noise = b"{}[]:\"\n,0";
                    input.insert(i, noise[rng.usize(0..noise.len())]);
                }
            }
        }
        let cut = rng.usize(0..=input.len());
        // Any outcome is fine as long as it is an outcome.
        let _ = decode(make(), &[&input[..cut], &input[cut..]]);
    }
}

fn strip_ts(m: &AssistantMessage) -> AssistantMessage {
    let mut m = m.clone();
    m.timestamp = 0;
    m
}

/// Build SSE bytes from (event name, JSON data) pairs.
pub fn sse(events: &[(&str, serde_json::Value)]) -> Vec<u8> {
    let mut s = String::new();
    for (name, data) in events {
        if !name.is_empty() {
            s.push_str(&format!("event: {name}\n"));
        }
        s.push_str(&format!("data: {data}\n\n"));
    }
    s.into_bytes()
}

/// A conversation that touches every part of the request mapping: a system prompt, user text
/// with an image, a custom message, an assistant turn with signed and redacted thinking, text
/// and three tool calls (one with an id other providers minted, one with arguments that were not
/// JSON), then their results (plain, an error, one with an image), and two tools. Strings carry
/// characters that need escaping. The model reasons and thinking is on.
pub fn rich_request(api: Api, origin_api: &str) -> CompletionRequest {
    use cadre_protocol::{
        ContentBlock, CustomMessage, ToolCall, ToolResultMessage, UserContent, UserMessage,
    };
    let image = |data: &str| ContentBlock::Image {
        data: data.into(),
        mime_type: "image/png".into(),
    };
    let call = |id: &str, name: &str, arguments: serde_json::Value| {
        ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        })
    };
    let result = |id: &str, content: Vec<ContentBlock>, is_error: bool| {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content,
            details: Some(json!({"ignored": true})),
            is_error,
            timestamp: 7,
        })
    };
    let mut model = model(api);
    model.reasoning = true;
    model.max_tokens = 64_000;
    let assistant = AssistantMessage {
        content: vec![
            ContentBlock::Thinking {
                thinking: "Plan: read \"a\" then b\\c.".into(),
                signature: Some("sig-1".into()),
                redacted: false,
            },
            ContentBlock::Thinking {
                thinking: String::new(),
                signature: Some("opaque==".into()),
                redacted: true,
            },
            ContentBlock::text("I will read\ttwo files ✓."),
            ContentBlock::text(""),
            ContentBlock::text("Then run one command."),
            call("toolu_1", "read", json!({"path": "a.txt", "limit": 10})),
            call("call.2:x", "read", json!({"path": "b \"quoted\".txt"})),
            call("c3", "bash", json!("{\"command\": ls")),
        ],
        ..AssistantMessage::empty(origin_api, "prov", "model-1")
    };
    let messages = vec![
        Message::User(UserMessage {
            content: UserContent::Blocks(vec![
                ContentBlock::text("Look at this \u{1} <image>:"),
                image("iVBORw0KGgo="),
            ]),
            timestamp: 1,
        }),
        Message::Custom(CustomMessage {
            custom_type: "note".into(),
            content: UserContent::Text("a note\nwith two lines".into()),
            display: false,
            details: None,
            timestamp: 2,
        }),
        Message::Assistant(assistant),
        result(
            "toolu_1",
            vec![ContentBlock::text("line 1\nline 2"), ContentBlock::text("")],
            false,
        ),
        result(
            "call.2:x",
            vec![ContentBlock::text("no such file: b \"quoted\".txt")],
            true,
        ),
        result(
            "c3",
            vec![ContentBlock::text("screen:"), image("R0lGODlh")],
            false,
        ),
    ];
    let mut req = request(model, messages);
    req.tools = vec![
        ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1}}, "required": ["path"]}),
        },
        ToolSpec {
            name: "bash".into(),
            description: "Run a \"command\"".into(),
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        },
    ]
    .into();
    req.thinking = ThinkingLevel::High;
    req
}
