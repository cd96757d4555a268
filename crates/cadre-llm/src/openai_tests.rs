#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cadre_protocol::{
    AssistantMessage, AssistantMessageEvent, ContentBlock, CustomMessage, Message, StopReason,
    ThinkingLevel, ToolCall, ToolResultMessage, UserContent, UserMessage,
};
use serde_json::{Value, json};

use super::*;
use crate::error::ErrorKind;
use crate::model::Api;
use crate::test_support::{
    decode, decode_all_splits, decode_mutations, model, request, rich_request, sse,
};

fn m() -> Model {
    model(Api::OpenAiCompletions)
}

fn assistant(content: Vec<ContentBlock>) -> Message {
    Message::Assistant(AssistantMessage {
        content,
        ..AssistantMessage::empty("openai-completions", "prov", "model-1")
    })
}

fn tool_result(id: &str, content: Vec<ContentBlock>, is_error: bool) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        content,
        details: None,
        is_error,
        timestamp: 0,
    })
}

// ---- request building ----

fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap()
}

/// The encoded body, parsed back for inspection.
fn body_json(req: &CompletionRequest) -> Value {
    json_of(&build_body(req).unwrap())
}

#[test]
fn request_url_headers_and_basics() {
    let req = request(m(), vec![Message::user("hi")]);
    let w = build_request(&req).unwrap();
    assert_eq!(w.url, "http://localhost:1/v1/chat/completions");
    assert!(
        w.headers
            .contains(&("authorization".into(), "Bearer secret-key".into()))
    );
    let b = &json_of(&w.body);
    assert_eq!(b["model"], "model-1");
    assert_eq!(b["stream"], true);
    assert_eq!(b["stream_options"], json!({"include_usage": true}));
    assert_eq!(b["max_completion_tokens"], 8000);
    assert!(b.get("reasoning_effort").is_none());
    assert!(b.get("store").is_none());
    assert_eq!(
        b["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "hi"},
        ])
    );
    assert_eq!(
        b["tools"],
        json!([{"type": "function", "function": {
            "name": "read", "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}
        }}])
    );
}

#[test]
fn no_key_no_authorization_and_trailing_slash() {
    let mut model = m();
    model.api_key = None;
    model.base_url = "http://h/v1/".into();
    let w = build_request(&request(model, vec![])).unwrap();
    assert_eq!(w.url, "http://h/v1/chat/completions");
    assert!(!w.headers.iter().any(|(k, _)| k == "authorization"));
}

#[test]
fn empty_system_prompt_and_no_tools_are_left_out() {
    let mut req = request(m(), vec![Message::user("x")]);
    req.system_prompt.clear();
    req.tools = Vec::new().into();
    let b = body_json(&req);
    assert_eq!(b["messages"], json!([{"role": "user", "content": "x"}]));
    assert!(b.get("tools").is_none());
}

#[test]
fn compat_switches() {
    let mut model = m();
    model.compat.supports_usage_in_streaming = Some(false);
    model.compat.max_tokens_field = Some("max_tokens".into());
    model.compat.supports_store = Some(true);
    model.max_tokens = 100_000;
    let b = body_json(&request(model, vec![]));
    assert!(b.get("stream_options").is_none());
    assert_eq!(b["max_tokens"], DEFAULT_MAX_OUTPUT);
    assert!(b.get("max_completion_tokens").is_none());
    assert_eq!(b["store"], false);

    let mut model = m();
    model.max_tokens = 0;
    let b = body_json(&request(model, vec![]));
    assert!(b.get("max_completion_tokens").is_none());
}

#[test]
fn developer_role_for_reasoning_models_unless_compat_says_no() {
    let mut model = m();
    model.reasoning = true;
    let b = body_json(&request(model.clone(), vec![]));
    assert_eq!(b["messages"][0]["role"], "developer");
    model.compat.supports_developer_role = Some(false);
    let b = body_json(&request(model, vec![]));
    assert_eq!(b["messages"][0]["role"], "system");
}

#[test]
fn reasoning_effort_from_levels_map_and_compat() {
    let mut model = m();
    assert_eq!(
        reasoning_effort(&model, ThinkingLevel::High),
        None,
        "not a reasoning model"
    );
    model.reasoning = true;
    assert_eq!(reasoning_effort(&model, ThinkingLevel::Off), None);
    for (level, want) in [
        (ThinkingLevel::Minimal, "minimal"),
        (ThinkingLevel::Low, "low"),
        (ThinkingLevel::Medium, "medium"),
        (ThinkingLevel::High, "high"),
        // Without a map value these are clamped by the thinking rules.
        (ThinkingLevel::Xhigh, "high"),
        (ThinkingLevel::Max, "high"),
    ] {
        assert_eq!(reasoning_effort(&model, level).as_deref(), Some(want));
    }
    model
        .thinking_level_map
        .insert(ThinkingLevel::Xhigh, Some("max".into()));
    model
        .thinking_level_map
        .insert(ThinkingLevel::Off, Some("none".into()));
    model.thinking_level_map.insert(ThinkingLevel::Low, None);
    assert_eq!(
        reasoning_effort(&model, ThinkingLevel::Xhigh).as_deref(),
        Some("max")
    );
    assert_eq!(
        reasoning_effort(&model, ThinkingLevel::Off).as_deref(),
        Some("none")
    );
    // A level mapped to null is clamped to the nearest supported one below.
    assert_eq!(
        reasoning_effort(&model, ThinkingLevel::Low).as_deref(),
        Some("minimal")
    );

    let mut req = request(model.clone(), vec![]);
    req.thinking = ThinkingLevel::Medium;
    assert_eq!(body_json(&req)["reasoning_effort"], "medium");

    model.compat.supports_reasoning_effort = Some(false);
    assert_eq!(reasoning_effort(&model, ThinkingLevel::High), None);
}

#[test]
fn conversation_mapping() {
    let msgs = vec![
        Message::user("read a"),
        assistant(vec![
            ContentBlock::Thinking {
                thinking: "private".into(),
                signature: Some("sig".into()),
                redacted: false,
            },
            ContentBlock::text("Reading."),
            ContentBlock::ToolCall(ToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: json!({"path": "a"}),
            }),
            ContentBlock::ToolCall(ToolCall {
                id: "c2".into(),
                name: "read".into(),
                arguments: json!("{\"path\": bad"),
            }),
        ]),
        tool_result(
            "c1",
            vec![ContentBlock::text("one"), ContentBlock::text("two")],
            false,
        ),
        tool_result("c2", vec![ContentBlock::text("invalid arguments")], true),
        Message::Custom(CustomMessage {
            custom_type: "note".into(),
            content: UserContent::Text("injected".into()),
            display: false,
            details: None,
            timestamp: 0,
        }),
        // Nothing left to send for a thinking-only assistant message.
        assistant(vec![ContentBlock::Thinking {
            thinking: "x".into(),
            signature: None,
            redacted: false,
        }]),
    ];
    let b = body_json(&request(m(), msgs));
    let got = &b["messages"];
    assert_eq!(
        *got,
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "read a"},
            {"role": "assistant", "content": "Reading.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "read", "arguments": "{\"path\": bad"}},
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "one\ntwo"},
            {"role": "tool", "tool_call_id": "c2", "content": "invalid arguments"},
            {"role": "user", "content": "injected"},
        ])
    );
}

#[test]
fn responses_call_ids_are_sent_as_their_call_part() {
    // A call made on the Responses API, stored as Pi stores it: `call_id|item_id`.
    let item = format!("fc_{}", "0123456789abcdef".repeat(4));
    let stored = format!("call_Ab+/={}|{item}", "x".repeat(40));
    let msgs = vec![
        assistant(vec![ContentBlock::ToolCall(ToolCall {
            id: stored.clone(),
            name: "read".into(),
            arguments: json!({}),
        })]),
        tool_result(&stored, vec![ContentBlock::text("ok")], false),
    ];
    let b = body_json(&request(m(), msgs));
    let want: String = format!("call_Ab___{}", "x".repeat(40))
        .chars()
        .take(40)
        .collect();
    assert_eq!(b["messages"][1]["tool_calls"][0]["id"], json!(want));
    assert_eq!(b["messages"][2]["tool_call_id"], json!(want));
    // Ids of other origins are sent as they are.
    let msgs = vec![assistant(vec![ContentBlock::ToolCall(ToolCall {
        id: "toolu_01+x".into(),
        name: "read".into(),
        arguments: json!({}),
    })])];
    let b = body_json(&request(m(), msgs));
    assert_eq!(b["messages"][1]["tool_calls"][0]["id"], "toolu_01+x");
}

#[test]
fn tool_only_assistant_has_null_content() {
    let msgs = vec![assistant(vec![ContentBlock::ToolCall(ToolCall {
        id: "c1".into(),
        name: "read".into(),
        arguments: json!({}),
    })])];
    let b = body_json(&request(m(), msgs));
    assert_eq!(b["messages"][1]["content"], Value::Null);
    assert_eq!(
        b["messages"][1]["tool_calls"][0]["function"]["arguments"],
        "{}"
    );
}

#[test]
fn a_text_only_model_gets_notes_instead_of_images() {
    let img = ContentBlock::Image {
        data: "AAA".into(),
        mime_type: "image/png".into(),
    };
    let mut model = m();
    model.input = vec!["text".into()];
    let msgs = vec![
        Message::User(UserMessage {
            content: UserContent::Blocks(vec![ContentBlock::text("look"), img.clone()]),
            timestamp: 0,
        }),
        tool_result("t1", vec![img], false),
    ];
    let b = body_json(&request(model, msgs));
    let text = b["messages"].to_string();
    assert!(!text.contains("image_url"), "{text}");
    assert!(text.contains(crate::convert::USER_IMAGE_OMITTED), "{text}");
    assert!(text.contains(crate::convert::TOOL_IMAGE_OMITTED), "{text}");
}

#[test]
fn images_in_user_and_tool_messages() {
    let img = ContentBlock::Image {
        data: "AAA".into(),
        mime_type: "image/png".into(),
    };
    let msgs = vec![
        Message::User(UserMessage {
            content: UserContent::Blocks(vec![ContentBlock::text("look"), img.clone()]),
            timestamp: 0,
        }),
        Message::User(UserMessage {
            content: UserContent::Blocks(vec![ContentBlock::text("a"), ContentBlock::text("b")]),
            timestamp: 0,
        }),
        tool_result("c1", vec![img], false),
        Message::user("next"),
    ];
    let b = body_json(&request(m(), msgs));
    let got = &b["messages"];
    assert_eq!(
        got[1]["content"],
        json!([
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}},
        ])
    );
    assert_eq!(got[2]["content"], "a\nb");
    assert_eq!(got[3]["role"], "tool");
    assert_eq!(got[3]["content"], "(see attached image)");
    assert_eq!(got[4]["role"], "user");
    assert_eq!(got[4]["content"][1]["type"], "image_url");
    assert_eq!(got[5]["content"], "next");
}

/// The body the former `serde_json::Value` builder produced for [`rich_request`], recorded from
/// it when bodies became encoded straight from the request: the encoder must send the same JSON.
const RICH_BODY: &str = r#"{
    "max_completion_tokens": 32000,
    "messages": [
        {"content": "You are terse.", "role": "developer"},
        {
            "content": [
                {"text": "Look at this \u0001 <image>:", "type": "text"},
                {
                    "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
                    "type": "image_url"
                }
            ],
            "role": "user"
        },
        {"content": "a note\nwith two lines", "role": "user"},
        {
            "content": "I will read\ttwo files ✓.\n\nThen run one command.",
            "role": "assistant",
            "tool_calls": [
                {
                    "function": {
                        "arguments": "{\"path\":\"a.txt\",\"limit\":10}",
                        "name": "read"
                    },
                    "id": "toolu_1",
                    "type": "function"
                },
                {
                    "function": {
                        "arguments": "{\"path\":\"b \\\"quoted\\\".txt\"}",
                        "name": "read"
                    },
                    "id": "call.2:x",
                    "type": "function"
                },
                {
                    "function": {"arguments": "{\"command\": ls", "name": "bash"},
                    "id": "c3",
                    "type": "function"
                }
            ]
        },
        {"content": "line 1\nline 2\n", "role": "tool", "tool_call_id": "toolu_1"},
        {
            "content": "no such file: b \"quoted\".txt",
            "role": "tool",
            "tool_call_id": "call.2:x"
        },
        {"content": "screen:", "role": "tool", "tool_call_id": "c3"},
        {
            "content": [
                {"text": "Attached image(s) from tool result:", "type": "text"},
                {"image_url": {"url": "data:image/png;base64,R0lGODlh"}, "type": "image_url"}
            ],
            "role": "user"
        }
    ],
    "model": "model-1",
    "reasoning_effort": "high",
    "stream": true,
    "stream_options": {"include_usage": true},
    "tools": [
        {
            "function": {
                "description": "Read a file",
                "name": "read",
                "parameters": {
                    "properties": {
                        "limit": {"minimum": 1, "type": "integer"},
                        "path": {"type": "string"}
                    },
                    "required": ["path"],
                    "type": "object"
                }
            },
            "type": "function"
        },
        {
            "function": {
                "description": "Run a \"command\"",
                "name": "bash",
                "parameters": {"properties": {"command": {"type": "string"}}, "type": "object"}
            },
            "type": "function"
        }
    ]
}"#;

#[test]
fn rich_conversation_encodes_as_the_value_builder_did() {
    let want: Value = serde_json::from_str(RICH_BODY).unwrap();
    let req = rich_request(Api::OpenAiCompletions, "openai-completions");
    assert_eq!(body_json(&req), want);
    let bytes = build_body(&req).unwrap();
    assert!(bytes.starts_with(b"{\"model\":\"model-1\",\"messages\":[{\"role\":\"developer\","));
}

// ---- stream decoding ----

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "x", "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": delta, "finish_reason": finish}
    ]})
}

fn stream(chunks: &[Value], done: bool) -> Vec<u8> {
    let pairs: Vec<(&str, Value)> = chunks.iter().map(|c| ("", c.clone())).collect();
    let mut bytes = sse(&pairs);
    if done {
        bytes.extend_from_slice(b"data: [DONE]\n\n");
    }
    bytes
}

fn usage_chunk() -> Value {
    json!({"choices": [], "usage": {
        "prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
        "prompt_tokens_details": {"cached_tokens": 60}
    }})
}

#[test]
fn text_reply_with_usage() {
    let input = stream(
        &[
            chunk(json!({"role": "assistant", "content": ""}), None),
            chunk(json!({"content": "Hel"}), None),
            chunk(json!({"content": "lo ✓"}), None),
            chunk(json!({}), Some("stop")),
            usage_chunk(),
        ],
        true,
    );
    let (events, result) = decode_all_splits(|| OpenAiDecoder::new(&m()), &input);
    let msg = result.unwrap();
    assert_eq!(msg.text(), "Hello ✓");
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(msg.api, "openai-completions");
    assert_eq!(msg.provider, "prov");
    assert_eq!(msg.model, "model-1");
    assert_eq!(msg.usage.input, 40);
    assert_eq!(msg.usage.cache_read, 60);
    assert_eq!(msg.usage.output, 20);
    assert_eq!(msg.usage.total_tokens, 120);
    assert_eq!(msg.response_id.as_deref(), Some("x"), "the chunks' id");
    assert_eq!(
        events,
        vec![
            AssistantMessageEvent::Start,
            // The id goes out with the first content, not as an event of its own.
            AssistantMessageEvent::ResponseId {
                response_id: "x".into()
            },
            AssistantMessageEvent::TextStart { content_index: 0 },
            AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "Hel".into()
            },
            AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "lo ✓".into()
            },
            AssistantMessageEvent::TextEnd {
                content_index: 0,
                content: "Hello ✓".into()
            },
        ]
    );
}

#[test]
fn reasoning_then_text() {
    let input = stream(
        &[
            chunk(json!({"reasoning_content": "think "}), None),
            chunk(json!({"reasoning": "more"}), None),
            chunk(json!({"content": "answer"}), None),
            chunk(json!({}), Some("stop")),
        ],
        true,
    );
    let (_, result) = decode_all_splits(|| OpenAiDecoder::new(&m()), &input);
    let msg = result.unwrap();
    assert_eq!(
        msg.content,
        vec![
            // The first field the reasoning came in names the block, as in Pi.
            ContentBlock::Thinking {
                thinking: "think more".into(),
                signature: Some("reasoning_content".into()),
                redacted: false
            },
            ContentBlock::text("answer"),
        ]
    );
}

#[test]
fn interleaved_tool_calls_by_index() {
    let tc = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut f = serde_json::Map::new();
        if let Some(n) = name {
            f.insert("name".into(), json!(n));
        }
        f.insert("arguments".into(), json!(args));
        let mut c = json!({"index": index, "type": "function", "function": f});
        if let Some(id) = id {
            c["id"] = json!(id);
        }
        chunk(json!({"tool_calls": [c]}), None)
    };
    let input = stream(
        &[
            chunk(json!({"content": "Let me look."}), None),
            tc(0, Some("call_a"), Some("read"), ""),
            tc(1, Some("call_b"), Some("bash"), "{\"comm"),
            tc(0, None, None, "{\"path\":"),
            tc(1, None, None, "and\":\"ls\"}"),
            tc(0, None, None, "\"a.txt\"}"),
            chunk(json!({}), Some("tool_calls")),
            usage_chunk(),
        ],
        true,
    );
    let (events, result) = decode_all_splits(|| OpenAiDecoder::new(&m()), &input);
    let msg = result.unwrap();
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    assert_eq!(msg.text(), "Let me look.");
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_a", "read")
    );
    assert_eq!(calls[0].arguments, json!({"path": "a.txt"}));
    assert_eq!(
        (calls[1].id.as_str(), calls[1].name.as_str()),
        ("call_b", "bash")
    );
    assert_eq!(calls[1].arguments, json!({"command": "ls"}));
    // As in Pi's client, the blocks stay open until the reply ends, then end in content
    // order: the text after the last tool call started.
    let ends: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::TextEnd { content_index, .. }
            | AssistantMessageEvent::ToolCallEnd { content_index, .. } => Some(*content_index),
            _ => None,
        })
        .collect();
    assert_eq!(ends, vec![0, 1, 2]);
    let text_end = events
        .iter()
        .position(|e| matches!(e, AssistantMessageEvent::TextEnd { .. }))
        .unwrap();
    let last_start = events
        .iter()
        .rposition(|e| matches!(e, AssistantMessageEvent::ToolCallStart { .. }))
        .unwrap();
    assert!(text_end > last_start);
    // The events alone rebuild the same message.
    let mut p = crate::assemble::PartialMessage::new(AssistantMessage::empty("a", "p", "m"));
    for e in &events {
        p.apply(e);
    }
    assert_eq!(p.message().content, msg.content);
}

#[test]
fn every_finish_reason() {
    for (reason, want) in [
        ("stop", StopReason::Stop),
        ("length", StopReason::Length),
        ("tool_calls", StopReason::ToolUse),
        ("function_call", StopReason::ToolUse),
        ("content_filter", StopReason::Stop),
        ("something_new", StopReason::Stop),
    ] {
        let input = stream(
            &[
                chunk(json!({"content": "x"}), None),
                chunk(json!({}), Some(reason)),
            ],
            true,
        );
        let (_, result) = decode(OpenAiDecoder::new(&m()), &[&input]);
        assert_eq!(result.unwrap().stop_reason, want, "{reason}");
    }
}

#[test]
fn finish_reason_and_usage_in_one_chunk() {
    let mut c = chunk(json!({"content": "x"}), Some("stop"));
    c["usage"] = json!({"prompt_tokens": 3, "completion_tokens": 1});
    let (_, result) = decode(OpenAiDecoder::new(&m()), &[&stream(&[c], true)]);
    let msg = result.unwrap();
    assert_eq!(
        (msg.usage.input, msg.usage.output, msg.usage.total_tokens),
        (3, 1, 4)
    );
}

#[test]
fn missing_done_is_incomplete_not_empty_success() {
    let input = stream(
        &[
            chunk(json!({"content": "partial"}), None),
            chunk(json!({}), Some("stop")),
            usage_chunk(),
        ],
        false,
    );
    let (_, result) = decode(OpenAiDecoder::new(&m()), &[&input]);
    let (err, partial) = result.unwrap_err();
    assert!(matches!(err, LlmError::IncompleteStream { .. }), "{err}");
    assert!(err.is_retryable());
    assert_eq!(partial.text(), "partial");
}

#[test]
fn missing_finish_reason_is_incomplete() {
    let input = stream(&[chunk(json!({"content": "partial"}), None)], true);
    let (_, result) = decode(OpenAiDecoder::new(&m()), &[&input]);
    let (err, _) = result.unwrap_err();
    assert!(err.to_string().contains("without a finish_reason"), "{err}");
    let (_, result) = decode(OpenAiDecoder::new(&m()), &[b""]);
    assert!(matches!(
        result.unwrap_err().0,
        LlmError::IncompleteStream { .. }
    ));
}

#[test]
fn reading_stops_at_done() {
    let mut input = stream(&[chunk(json!({"content": "a"}), Some("stop"))], true);
    input.extend_from_slice(b"data: not json at all\n\n");
    let (_, result) = decode(OpenAiDecoder::new(&m()), &[&input]);
    assert_eq!(result.unwrap().text(), "a");
}

#[test]
fn malformed_chunks_are_retryable_errors() {
    for bad in [
        &b"data: {\"choices\": [\n\n"[..],
        &b"data: 42\n\n"[..],
        &b"data: nonsense\n\n"[..],
    ] {
        let mut input = stream(&[chunk(json!({"content": "ok"}), None)], false);
        input.extend_from_slice(bad);
        let (_, result) = decode(OpenAiDecoder::new(&m()), &[&input]);
        let (err, partial) = result.unwrap_err();
        assert!(matches!(err, LlmError::MalformedStream { .. }), "{err}");
        assert!(err.is_retryable());
        assert_eq!(partial.text(), "ok");
    }
}

#[test]
fn odd_but_valid_chunks_are_tolerated() {
    let input = stream(
        &[
            json!({"choices": null}),
            json!({"choices": [{"index": 0, "delta": null}]}),
            json!({"choices": [{"index": 1, "delta": {"content": "other choice"}}]}),
            json!({"choices": [{"delta": {"content": "no index"}}]}),
            chunk(json!({"tool_calls": "weird"}), None),
            chunk(
                json!({"content": null, "reasoning_content": null}),
                Some("stop"),
            ),
        ],
        true,
    );
    let (_, result) = decode(OpenAiDecoder::new(&m()), &[&input]);
    assert_eq!(result.unwrap().text(), "no index");
}

#[test]
fn arguments_sent_as_object_and_missing_ids() {
    let input = stream(
        &[
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"name": "read", "arguments": {"path": "a"}}}]}),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
        ],
        true,
    );
    let (_, result) = decode(OpenAiDecoder::new(&m()), &[&input]);
    let msg = result.unwrap();
    let call = msg.tool_calls().next().unwrap();
    assert_eq!(call.arguments, json!({"path": "a"}));
    assert!(call.id.starts_with("call_"));
}

#[test]
fn invalid_tool_json_is_kept_as_string() {
    let input = stream(
        &[
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "write", "arguments": "{\"path\": \"a\", "}}]}),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
        ],
        true,
    );
    let (_, result) = decode(OpenAiDecoder::new(&m()), &[&input]);
    let msg = result.unwrap();
    assert_eq!(
        msg.tool_calls().next().unwrap().arguments,
        json!("{\"path\": \"a\", ")
    );
}

#[test]
fn error_chunks_are_typed() {
    let cases = [
        (
            json!({"error": {"message": "Overloaded", "type": "server_error"}}),
            ErrorKind::Retryable,
        ),
        (
            json!({"error": {"message": "slow down", "code": "rate_limit_exceeded"}}),
            ErrorKind::Retryable,
        ),
        (
            json!({"error": {"message": "no money", "code": "insufficient_quota"}}),
            ErrorKind::Quota,
        ),
        (
            json!({"error": {"message": "maximum context length exceeded", "code": "context_length_exceeded"}}),
            ErrorKind::ContextOverflow,
        ),
        (
            json!({"error": {"message": "bad", "code": 502}}),
            ErrorKind::Retryable,
        ),
        (json!({"error": "just a string"}), ErrorKind::Retryable),
    ];
    for (chunk_json, kind) in cases {
        let input = stream(std::slice::from_ref(&chunk_json), false);
        let (_, result) = decode(OpenAiDecoder::new(&m()), &[&input]);
        let (err, _) = result.unwrap_err();
        assert_eq!(err.kind(), kind, "{chunk_json}");
        assert!(err.to_string().contains("stream error"), "{err}");
    }
}

const FIXTURE: &[u8] = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hm\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"pa\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"th\\\":1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n\
data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n\
data: [DONE]\n\n";

fn fresh_decoder() -> OpenAiDecoder {
    OpenAiDecoder::new(&m())
}

#[test]
fn fixture_decodes() {
    let (_, result) = decode(fresh_decoder(), &[FIXTURE]);
    let msg = result.unwrap();
    assert_eq!(msg.text(), "Hi");
    assert_eq!(
        msg.tool_calls().next().unwrap().arguments,
        json!({"path": 1})
    );
}

#[test]
fn mutated_streams_never_panic() {
    decode_mutations(FIXTURE, fresh_decoder);
}

#[test]
fn escaped_strings_in_chunks_are_decoded() {
    let text = "say \"hi\"\n\tto C:\\dir — é 😀 \u{1}";
    let input = stream(
        &[
            chunk(json!({"reasoning_content": "a\\b"}), None),
            chunk(json!({"content": text}), None),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "c\"1", "function": {"name": "re\\ad",
                       "arguments": "{\"path\": \"a\\\\b\"}"}}]}),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
        ],
        true,
    );
    let (_, result) = decode_all_splits(fresh_decoder, &input);
    let msg = result.unwrap();
    assert_eq!(msg.text(), text);
    assert_eq!(
        msg.content[0],
        ContentBlock::Thinking {
            thinking: "a\\b".into(),
            signature: Some("reasoning_content".into()),
            redacted: false
        }
    );
    let call = msg.tool_calls().next().unwrap();
    assert_eq!((call.id.as_str(), call.name.as_str()), ("c\"1", "re\\ad"));
    assert_eq!(call.arguments, json!({"path": "a\\b"}));
}

#[test]
fn fields_of_another_type_count_as_missing() {
    let input = stream(
        &[
            // An index that is not a number counts as choice 0.
            json!({"choices": [{"index": "3", "delta": {"content": "a"}}]}),
            chunk(
                json!({"content": 5, "reasoning_content": ["x"], "reasoning": {}}),
                None,
            ),
            chunk(json!({"content": "b"}), Some("")),
            // Entries that are not objects still count for the positions of the others.
            chunk(
                json!({"tool_calls": [7, {"id": "c2", "function": {"name": "read", "arguments": 1}},
                       {"index": "x", "function": "read"}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
                None,
            ),
            json!({"choices": "none", "usage": {"prompt_tokens": "3", "completion_tokens": 2,
                   "prompt_tokens_details": {"cached_tokens": -1}}}),
            json!({"choices": [5], "error": null}),
            chunk(json!({}), Some("tool_calls")),
        ],
        true,
    );
    let (_, result) = decode_all_splits(fresh_decoder, &input);
    let msg = result.unwrap();
    assert_eq!(msg.text(), "ab");
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("c2", "read")
    );
    assert_eq!(calls[0].arguments, json!({}));
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    assert_eq!(
        (
            msg.usage.input,
            msg.usage.output,
            msg.usage.cache_read,
            msg.usage.total_tokens
        ),
        (0, 2, 0, 2)
    );
}

#[test]
fn map_usage_reads_a_value() {
    let u = map_usage(&json!({"prompt_tokens": 10, "completion_tokens": 4,
                              "prompt_tokens_details": {"cached_tokens": 30}}));
    assert_eq!(
        (u.input, u.cache_read, u.output, u.total_tokens),
        (0, 10, 4, 14)
    );
    assert_eq!(map_usage(&json!("not usage")).total_tokens, 0);
}

/// Counts at the top of u64 saturate instead of overflowing (a panic in a debug build).
#[test]
fn huge_usage_counts_saturate() {
    let input = stream(
        &[
            chunk(json!({"content": "hi"}), Some("stop")),
            json!({"choices": [], "usage": {
                "prompt_tokens": u64::MAX, "completion_tokens": u64::MAX,
                "prompt_tokens_details": {"cached_tokens": 0}}}),
        ],
        true,
    );
    let (_, result) = decode(OpenAiDecoder::new(&m()), &[&input]);
    let msg = result.map_err(|(e, _)| e.to_string()).unwrap();
    assert_eq!(msg.usage.input, u64::MAX);
    assert_eq!(msg.usage.total_tokens, u64::MAX);
}
