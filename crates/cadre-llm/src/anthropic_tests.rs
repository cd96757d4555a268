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
    let mut m = model(Api::AnthropicMessages);
    m.base_url = "https://api.example.com".into();
    m
}

fn assistant(content: Vec<ContentBlock>, api: &str, provider: &str) -> Message {
    Message::Assistant(AssistantMessage {
        content,
        ..AssistantMessage::empty(api, provider, "model-1")
    })
}

fn tool_result(id: &str, text: &str, is_error: bool) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        content: vec![ContentBlock::text(text)],
        details: None,
        is_error,
        timestamp: 0,
    })
}

fn call(id: &str, args: Value) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments: args,
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
    let w = build_request(&request(m(), vec![Message::user("hi")])).unwrap();
    assert_eq!(w.url, "https://api.example.com/v1/messages");
    assert!(
        w.headers
            .contains(&("x-api-key".into(), "secret-key".into()))
    );
    assert!(
        w.headers
            .contains(&("anthropic-version".into(), "2023-06-01".into()))
    );
    assert!(!w.headers.iter().any(|(k, _)| k == "authorization"));
    let b = &json_of(&w.body);
    assert_eq!(b["model"], "model-1");
    assert_eq!(b["stream"], true);
    assert_eq!(b["max_tokens"], 8000);
    assert!(b.get("thinking").is_none());
    assert_eq!(
        b["system"],
        json!([{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        b["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
        ]}])
    );
    assert_eq!(
        b["tools"],
        json!([{"name": "read", "description": "Read a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}])
    );
}

#[test]
fn base_url_with_version_path_and_no_key() {
    let mut model = m();
    model.base_url = "http://proxy/v1/".into();
    model.api_key = None;
    let w = build_request(&request(model, vec![])).unwrap();
    assert_eq!(w.url, "http://proxy/v1/messages");
    assert!(!w.headers.iter().any(|(k, _)| k == "x-api-key"));
}

#[test]
fn empty_system_and_tools_left_out() {
    let mut req = request(m(), vec![]);
    req.system_prompt.clear();
    req.tools = Vec::new().into();
    let b = body_json(&req);
    assert!(b.get("system").is_none());
    assert!(b.get("tools").is_none());
    assert_eq!(b["messages"], json!([]));
}

#[test]
fn thinking_budget_and_max_tokens() {
    let mut model = m();
    model.max_tokens = 64_000;
    // Not a reasoning model: no thinking whatever the level.
    assert_eq!(token_limits(&model, ThinkingLevel::High), (32_000, None));
    model.reasoning = true;
    assert_eq!(token_limits(&model, ThinkingLevel::Off), (32_000, None));
    assert_eq!(
        token_limits(&model, ThinkingLevel::Medium),
        (40_192, Some(8_192))
    );
    assert_eq!(
        token_limits(&model, ThinkingLevel::High),
        (48_384, Some(16_384))
    );
    // xhigh and max need a map value; the sum is capped at the model limit and the budget
    // stays below max_tokens.
    model
        .thinking_level_map
        .insert(ThinkingLevel::Max, Some("64000".into()));
    assert_eq!(
        token_limits(&model, ThinkingLevel::Max),
        (64_000, Some(62_976))
    );
    model.max_tokens = 16_000;
    assert_eq!(
        token_limits(&model, ThinkingLevel::High),
        (16_000, Some(14_976))
    );
    // Too small for any thinking.
    model.max_tokens = 1_500;
    assert_eq!(token_limits(&model, ThinkingLevel::High), (1_500, None));
    // Unknown limit: max_tokens is still sent, thinking has no room.
    model.max_tokens = 0;
    assert_eq!(token_limits(&model, ThinkingLevel::Low), (4_096, None));
    // Map overrides: a number is the budget, null disables, other strings fall back.
    model.max_tokens = 64_000;
    model
        .thinking_level_map
        .insert(ThinkingLevel::Low, Some("3000".into()));
    model
        .thinking_level_map
        .insert(ThinkingLevel::Minimal, None);
    model
        .thinking_level_map
        .insert(ThinkingLevel::Medium, Some("medium".into()));
    assert_eq!(
        token_limits(&model, ThinkingLevel::Low),
        (35_000, Some(3_000))
    );
    assert_eq!(token_limits(&model, ThinkingLevel::Minimal), (32_000, None));
    assert_eq!(
        token_limits(&model, ThinkingLevel::Medium),
        (40_192, Some(8_192))
    );

    let mut req = request(model, vec![]);
    req.thinking = ThinkingLevel::High;
    let b = body_json(&req);
    assert_eq!(
        b["thinking"],
        json!({"type": "enabled", "budget_tokens": 16_384})
    );
    assert_eq!(b["max_tokens"], 48_384);
}

#[test]
fn conversation_mapping_groups_tool_results() {
    let msgs = vec![
        Message::user("read two"),
        assistant(
            vec![
                ContentBlock::Thinking {
                    thinking: "plan".into(),
                    signature: Some("sig1".into()),
                    redacted: false,
                },
                ContentBlock::Thinking {
                    thinking: String::new(),
                    signature: Some("opaque".into()),
                    redacted: true,
                },
                ContentBlock::Thinking {
                    thinking: "unsigned".into(),
                    signature: None,
                    redacted: false,
                },
                ContentBlock::text("Reading."),
                ContentBlock::text(""),
                call("toolu_1", json!({"path": "a"})),
                call("functions.read:2", json!("{bad")),
            ],
            "anthropic-messages",
            "prov",
        ),
        tool_result("toolu_1", "A", false),
        tool_result("functions.read:2", "invalid arguments", true),
        Message::Custom(CustomMessage {
            custom_type: "note".into(),
            content: UserContent::Text("injected".into()),
            display: false,
            details: None,
            timestamp: 0,
        }),
    ];
    let b = body_json(&request(m(), msgs));
    assert_eq!(
        b["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "read two"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "plan", "signature": "sig1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "functions_read_2", "name": "read", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "A"}]},
                {"type": "tool_result", "tool_use_id": "functions_read_2",
                 "content": [{"type": "text", "text": "invalid arguments"}], "is_error": true},
            ]},
            {"role": "user", "content": [
                {"type": "text", "text": "injected", "cache_control": {"type": "ephemeral"}}
            ]},
        ])
    );
}

#[test]
fn thinking_from_another_provider_is_dropped_and_empty_messages_skipped() {
    let msgs = vec![
        Message::user(""),
        assistant(
            vec![
                ContentBlock::Thinking {
                    thinking: "t".into(),
                    signature: Some("foreign".into()),
                    redacted: false,
                },
                ContentBlock::text("hi"),
            ],
            "openai-completions",
            "other",
        ),
        assistant(vec![], "anthropic-messages", "prov"),
        tool_result("c1", "", false),
    ];
    let b = body_json(&request(m(), msgs));
    assert_eq!(
        b["messages"],
        json!([
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "cache_control": {"type": "ephemeral"}}
            ]},
        ])
    );
}

#[test]
fn commands_the_user_ran_are_sent_as_user_text() {
    let ran = |command: &str, excluded: bool| {
        Message::BashExecution(cadre_protocol::BashExecutionMessage {
            command: command.into(),
            output: "total 0".into(),
            exit_code: Some(2),
            cancelled: false,
            truncated: false,
            full_output_path: None,
            exclude_from_context: excluded,
            timestamp: 0,
        })
    };
    let msgs = vec![
        ran("ls", false),
        ran("cat secret", true),
        Message::user("and?"),
    ];
    let b = body_json(&request(m(), msgs));
    let text = b["messages"].to_string();
    assert!(!text.contains("cat secret"), "{text}");
    assert_eq!(b["messages"][0]["role"], "user");
    assert_eq!(
        b["messages"][0]["content"][0]["text"],
        "Ran `ls`\n```\ntotal 0\n```\n\nCommand exited with code 2"
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
            content: UserContent::Blocks(vec![ContentBlock::text("see"), img.clone()]),
            timestamp: 0,
        }),
        Message::ToolResult(ToolResultMessage {
            tool_call_id: "t1".into(),
            tool_name: "read".into(),
            content: vec![img],
            details: None,
            is_error: false,
            timestamp: 0,
        }),
    ];
    let b = body_json(&request(model, msgs));
    let text = b["messages"].to_string();
    assert!(!text.contains("\"image\""), "{text}");
    assert_eq!(
        b["messages"][0]["content"][1]["text"],
        crate::convert::USER_IMAGE_OMITTED
    );
    assert_eq!(
        b["messages"][1]["content"][0]["content"][0]["text"],
        crate::convert::TOOL_IMAGE_OMITTED
    );
}

#[test]
fn images_in_user_content() {
    let msgs = vec![Message::User(UserMessage {
        content: UserContent::Blocks(vec![
            ContentBlock::text("see"),
            ContentBlock::Image {
                data: "AAA".into(),
                mime_type: "image/png".into(),
            },
        ]),
        timestamp: 0,
    })];
    let b = body_json(&request(m(), msgs));
    assert_eq!(
        b["messages"][0]["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"},
               "cache_control": {"type": "ephemeral"}})
    );
}

#[test]
fn tool_ids_are_sanitized() {
    assert_eq!(sanitize_tool_id("toolu_01-A"), "toolu_01-A");
    assert_eq!(sanitize_tool_id("a.b:c d"), "a_b_c_d");
    assert_eq!(sanitize_tool_id(""), "_");
    assert_eq!(sanitize_tool_id("é"), "_");
}

/// A Responses tool id (`call_id|item_id`, often over 100 characters) is longer than the 64
/// Anthropic takes: cut, the same way on the call and on its result.
#[test]
fn long_tool_ids_are_cut_to_64_characters_on_the_call_and_its_result() {
    let long = format!("call_{}|fc_{}", "a".repeat(40), "b".repeat(60));
    let msgs = vec![
        Message::user("go"),
        assistant(
            vec![ContentBlock::ToolCall(ToolCall {
                id: long.clone(),
                name: "read".into(),
                arguments: json!({}),
            })],
            "openai-responses",
            "openai",
        ),
        tool_result(&long, "A", false),
    ];
    let b = body_json(&request(m(), msgs));
    let want = format!("call_{}_fc_{}", "a".repeat(40), "b".repeat(15));
    assert_eq!(want.len(), 64);
    let call = &b["messages"][1]["content"][0];
    assert_eq!(call["type"], "tool_use", "{b}");
    assert_eq!(call["id"], json!(want), "{b}");
    let result = &b["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], json!(want), "{b}");
    assert_eq!(sanitize_tool_id(&"x".repeat(65)), "x".repeat(64));
}

/// The body the former `serde_json::Value` builder produced for [`rich_request`], recorded from
/// it when bodies became encoded straight from the request: the encoder must send the same JSON.
const RICH_BODY: &str = r#"{
    "max_tokens": 48384,
    "messages": [
        {
            "content": [
                {"text": "Look at this \u0001 <image>:", "type": "text"},
                {
                    "source": {
                        "data": "iVBORw0KGgo=",
                        "media_type": "image/png",
                        "type": "base64"
                    },
                    "type": "image"
                }
            ],
            "role": "user"
        },
        {"content": [{"text": "a note\nwith two lines", "type": "text"}], "role": "user"},
        {
            "content": [
                {
                    "signature": "sig-1",
                    "thinking": "Plan: read \"a\" then b\\c.",
                    "type": "thinking"
                },
                {"data": "opaque==", "type": "redacted_thinking"},
                {"text": "I will read\ttwo files ✓.", "type": "text"},
                {"text": "Then run one command.", "type": "text"},
                {
                    "id": "toolu_1",
                    "input": {"limit": 10, "path": "a.txt"},
                    "name": "read",
                    "type": "tool_use"
                },
                {
                    "id": "call_2_x",
                    "input": {"path": "b \"quoted\".txt"},
                    "name": "read",
                    "type": "tool_use"
                },
                {"id": "c3", "input": {}, "name": "bash", "type": "tool_use"}
            ],
            "role": "assistant"
        },
        {
            "content": [
                {
                    "content": [{"text": "line 1\nline 2", "type": "text"}],
                    "tool_use_id": "toolu_1",
                    "type": "tool_result"
                },
                {
                    "content": [{"text": "no such file: b \"quoted\".txt", "type": "text"}],
                    "is_error": true,
                    "tool_use_id": "call_2_x",
                    "type": "tool_result"
                },
                {
                    "cache_control": {"type": "ephemeral"},
                    "content": [
                        {"text": "screen:", "type": "text"},
                        {
                            "source": {
                                "data": "R0lGODlh",
                                "media_type": "image/png",
                                "type": "base64"
                            },
                            "type": "image"
                        }
                    ],
                    "tool_use_id": "c3",
                    "type": "tool_result"
                }
            ],
            "role": "user"
        }
    ],
    "model": "model-1",
    "stream": true,
    "system": [
        {"cache_control": {"type": "ephemeral"}, "text": "You are terse.", "type": "text"}
    ],
    "thinking": {"budget_tokens": 16384, "type": "enabled"},
    "tools": [
        {
            "description": "Read a file",
            "input_schema": {
                "properties": {
                    "limit": {"minimum": 1, "type": "integer"},
                    "path": {"type": "string"}
                },
                "required": ["path"],
                "type": "object"
            },
            "name": "read"
        },
        {
            "description": "Run a \"command\"",
            "input_schema": {"properties": {"command": {"type": "string"}}, "type": "object"},
            "name": "bash"
        }
    ]
}"#;

#[test]
fn rich_conversation_encodes_as_the_value_builder_did() {
    let want: Value = serde_json::from_str(RICH_BODY).unwrap();
    let req = rich_request(Api::AnthropicMessages, "anthropic-messages");
    assert_eq!(body_json(&req), want);
    // Compact, in the declared field order.
    let bytes = build_body(&req).unwrap();
    assert!(bytes.starts_with(b"{\"model\":\"model-1\",\"max_tokens\":48384,\"stream\":true,"));
    // The same turn from another provider: its thinking is left out, and with its tool turn
    // still open the request goes without thinking.
    let mut want = want;
    want["max_tokens"] = json!(32_000);
    want.as_object_mut().unwrap().remove("thinking");
    want["messages"][2]["content"]
        .as_array_mut()
        .unwrap()
        .drain(..2);
    let req = rich_request(Api::AnthropicMessages, "openai-completions");
    assert_eq!(body_json(&req), want);
}

// ---- stream decoding ----

fn message_start() -> (&'static str, Value) {
    (
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "content": [], "model": "model-1", "stop_reason": null,
            "usage": {"input_tokens": 50, "output_tokens": 1, "cache_read_input_tokens": 200,
                      "cache_creation_input_tokens": 30}}}),
    )
}

fn block_start(index: u64, block: Value) -> (&'static str, Value) {
    (
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn delta(index: u64, d: Value) -> (&'static str, Value) {
    (
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": d}),
    )
}

fn block_stop(index: u64) -> (&'static str, Value) {
    (
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

fn message_delta(reason: &str, output: u64) -> (&'static str, Value) {
    (
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
               "usage": {"output_tokens": output}}),
    )
}

fn message_stop() -> (&'static str, Value) {
    ("message_stop", json!({"type": "message_stop"}))
}

fn ping() -> (&'static str, Value) {
    ("ping", json!({"type": "ping"}))
}

#[test]
fn text_reply_with_usage() {
    let input = sse(&[
        message_start(),
        block_start(0, json!({"type": "text", "text": ""})),
        ping(),
        delta(0, json!({"type": "text_delta", "text": "Hello"})),
        delta(0, json!({"type": "text_delta", "text": " wörld"})),
        block_stop(0),
        message_delta("end_turn", 12),
        message_stop(),
    ]);
    let (events, result) = decode_all_splits(|| AnthropicDecoder::new(&m()), &input);
    let msg = result.unwrap();
    assert_eq!(msg.text(), "Hello wörld");
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(msg.api, "anthropic-messages");
    assert_eq!(
        (
            msg.usage.input,
            msg.usage.output,
            msg.usage.cache_read,
            msg.usage.cache_write
        ),
        (50, 12, 200, 30)
    );
    assert_eq!(msg.usage.total_tokens, 292);
    assert_eq!(
        msg.response_id.as_deref(),
        Some("msg_1"),
        "message_start's id"
    );
    assert_eq!(events[0], AssistantMessageEvent::Start);
    // The id goes out with the first content, not as an event of its own.
    assert_eq!(
        events[1],
        AssistantMessageEvent::ResponseId {
            response_id: "msg_1".into()
        }
    );
    assert_eq!(
        events[2],
        AssistantMessageEvent::TextStart { content_index: 0 }
    );
    assert_eq!(
        events.last(),
        Some(&AssistantMessageEvent::TextEnd {
            content_index: 0,
            content: "Hello wörld".into()
        })
    );
}

#[test]
fn thinking_with_signature_redacted_and_interleaved_tools() {
    let input = sse(&[
        message_start(),
        block_start(0, json!({"type": "thinking", "thinking": ""})),
        delta(0, json!({"type": "thinking_delta", "thinking": "Let me "})),
        delta(0, json!({"type": "thinking_delta", "thinking": "think."})),
        delta(0, json!({"type": "signature_delta", "signature": "EqQB"})),
        block_stop(0),
        block_start(1, json!({"type": "redacted_thinking", "data": "opaque=="})),
        block_stop(1),
        block_start(2, json!({"type": "text", "text": "Two reads."})),
        block_stop(2),
        block_start(
            3,
            json!({"type": "tool_use", "id": "toolu_a", "name": "read", "input": {}}),
        ),
        block_start(
            4,
            json!({"type": "tool_use", "id": "toolu_b", "name": "read", "input": {}}),
        ),
        delta(
            3,
            json!({"type": "input_json_delta", "partial_json": "{\"path\":"}),
        ),
        delta(
            4,
            json!({"type": "input_json_delta", "partial_json": "{\"path\": \"b\"}"}),
        ),
        delta(
            3,
            json!({"type": "input_json_delta", "partial_json": " \"a\"}"}),
        ),
        block_stop(4),
        block_stop(3),
        message_delta("tool_use", 80),
        message_stop(),
    ]);
    let (events, result) = decode_all_splits(|| AnthropicDecoder::new(&m()), &input);
    let msg = result.unwrap();
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    assert_eq!(
        msg.content[..3],
        [
            ContentBlock::Thinking {
                thinking: "Let me think.".into(),
                signature: Some("EqQB".into()),
                redacted: false
            },
            ContentBlock::Thinking {
                thinking: String::new(),
                signature: Some("opaque==".into()),
                redacted: true
            },
            ContentBlock::text("Two reads."),
        ]
    );
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls[0].id, "toolu_a");
    assert_eq!(calls[0].arguments, json!({"path": "a"}));
    assert_eq!(calls[1].id, "toolu_b");
    assert_eq!(calls[1].arguments, json!({"path": "b"}));
    let ends = events
        .iter()
        .filter(|e| matches!(e, AssistantMessageEvent::ToolCallEnd { .. }))
        .count();
    assert_eq!(ends, 2);
    // The reply round-trips into the next request with its signatures.
    let b = body_json(&request(m(), vec![Message::Assistant(msg)]));
    assert_eq!(b["messages"][0]["content"][0]["signature"], "EqQB");
    assert_eq!(b["messages"][0]["content"][1]["type"], "redacted_thinking");
}

#[test]
fn every_stop_reason() {
    for (reason, want) in [
        ("end_turn", StopReason::Stop),
        ("tool_use", StopReason::ToolUse),
        ("max_tokens", StopReason::Length),
        ("stop_sequence", StopReason::Stop),
        ("pause_turn", StopReason::Stop),
        ("refusal", StopReason::Stop),
        ("model_context_window_exceeded", StopReason::Length),
        ("brand_new", StopReason::Stop),
    ] {
        let input = sse(&[message_start(), message_delta(reason, 1), message_stop()]);
        let (_, result) = decode(AnthropicDecoder::new(&m()), &[&input]);
        assert_eq!(result.unwrap().stop_reason, want, "{reason}");
    }
}

#[test]
fn missing_message_stop_is_incomplete() {
    let input = sse(&[
        message_start(),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "cut"})),
        block_stop(0),
        message_delta("end_turn", 3),
    ]);
    let (_, result) = decode(AnthropicDecoder::new(&m()), &[&input]);
    let (err, partial) = result.unwrap_err();
    assert!(matches!(err, LlmError::IncompleteStream { .. }), "{err}");
    assert!(err.is_retryable());
    assert_eq!(partial.text(), "cut");
    let (_, result) = decode(AnthropicDecoder::new(&m()), &[b""]);
    assert!(matches!(
        result.unwrap_err().0,
        LlmError::IncompleteStream { .. }
    ));
}

#[test]
fn error_events_are_typed() {
    for (kind, want) in [
        ("overloaded_error", ErrorKind::Retryable),
        ("api_error", ErrorKind::Retryable),
        ("rate_limit_error", ErrorKind::Retryable),
        ("authentication_error", ErrorKind::Auth),
        ("permission_error", ErrorKind::Auth),
        ("billing_error", ErrorKind::Quota),
        ("invalid_request_error", ErrorKind::Fatal),
        ("not_found_error", ErrorKind::Fatal),
        ("timeout_error", ErrorKind::Retryable),
        ("mystery_error", ErrorKind::Retryable),
    ] {
        let input = sse(&[
            message_start(),
            (
                "error",
                json!({"type": "error", "error": {"type": kind, "message": "Boom"}}),
            ),
        ]);
        let (_, result) = decode(AnthropicDecoder::new(&m()), &[&input]);
        let (err, _) = result.unwrap_err();
        assert_eq!(err.kind(), want, "{kind}");
        assert!(err.to_string().contains("Boom"), "{err}");
    }
    let input = sse(&[(
        "error",
        json!({"type": "error", "error": {"type": "invalid_request_error",
               "message": "prompt is too long: 300000 tokens > 200000 maximum"}}),
    )]);
    let (_, result) = decode(AnthropicDecoder::new(&m()), &[&input]);
    assert_eq!(result.unwrap_err().0.kind(), ErrorKind::ContextOverflow);
}

#[test]
fn malformed_events_are_retryable_errors() {
    for bad in [
        &b"event: content_block_delta\ndata: {\"type\": \"content_block_delta\",\n\n"[..],
        &b"data: [1, 2]\n\n"[..],
        &b"event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"delta\": {}}\n\n"[..],
        &b"data: {\"type\": \"content_block_stop\"}\n\n"[..],
        &b"data: {\"type\": \"content_block_start\", \"index\": -1}\n\n"[..],
    ] {
        let mut input = sse(&[message_start()]);
        input.extend_from_slice(bad);
        let (_, result) = decode(AnthropicDecoder::new(&m()), &[&input]);
        let (err, _) = result.unwrap_err();
        assert!(matches!(err, LlmError::MalformedStream { .. }), "{err}");
        assert!(err.is_retryable());
    }
}

#[test]
fn unknown_blocks_and_events_are_skipped() {
    let input = sse(&[
        message_start(),
        block_start(
            0,
            json!({"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}}),
        ),
        delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"q\":1}"}),
        ),
        block_stop(0),
        block_start(1, json!({"type": "text", "text": ""})),
        delta(1, json!({"type": "citations_delta", "citation": {}})),
        delta(1, json!({"type": "text_delta", "text": "ok"})),
        block_stop(1),
        ("future_event", json!({"type": "future_event"})),
        message_delta("end_turn", 1),
        message_stop(),
    ]);
    let (_, result) = decode(AnthropicDecoder::new(&m()), &[&input]);
    let msg = result.unwrap();
    assert_eq!(msg.content, vec![ContentBlock::text("ok")]);
}

#[test]
fn event_name_is_the_fallback_type_and_input_in_start_is_kept() {
    let input = b"event: message_start\ndata: {\"message\": {\"usage\": {\"input_tokens\": 4}}}\n\n\
event: content_block_start\ndata: {\"index\": 0, \"content_block\": {\"type\": \"tool_use\", \"id\": \"t\", \"name\": \"read\", \"input\": {\"path\": \"x\"}}}\n\n\
event: content_block_stop\ndata: {\"index\": 0}\n\n\
event: message_stop\ndata: {}\n\n";
    let (_, result) = decode(AnthropicDecoder::new(&m()), &[input]);
    let msg = result.unwrap();
    assert_eq!(msg.usage.input, 4);
    assert_eq!(
        msg.tool_calls().next().unwrap().arguments,
        json!({"path": "x"})
    );
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
}

#[test]
fn thinking_is_dropped_when_the_open_tool_turn_has_none() {
    let mut model = m();
    model.reasoning = true;
    model.max_tokens = 64_000;
    let foreign = assistant(
        vec![call("call_1", json!({"path": "a"}))],
        "openai-completions",
        "other",
    );
    let signed = assistant(
        vec![
            ContentBlock::Thinking {
                thinking: "plan".into(),
                signature: Some("sig".into()),
                redacted: false,
            },
            call("call_1", json!({"path": "a"})),
        ],
        "anthropic-messages",
        "prov",
    );
    for (turn, thinking) in [(foreign.clone(), false), (signed, true)] {
        let mut req = request(
            model.clone(),
            vec![Message::user("go"), turn, tool_result("call_1", "A", false)],
        );
        req.thinking = ThinkingLevel::High;
        let b = body_json(&req);
        assert_eq!(b.get("thinking").is_some(), thinking, "{b}");
    }
    // Once the user speaks again the old turn is closed and thinking is fine.
    let mut req = request(
        model,
        vec![
            Message::user("go"),
            foreign,
            tool_result("call_1", "A", false),
            assistant(
                vec![ContentBlock::text("done")],
                "openai-completions",
                "other",
            ),
            Message::user("next"),
        ],
    );
    req.thinking = ThinkingLevel::High;
    assert!(body_json(&req).get("thinking").is_some());
}

const FIXTURE: &[u8] = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"s\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"read\",\"input\":{}}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": 1}\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":4}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

fn fresh_decoder() -> AnthropicDecoder {
    AnthropicDecoder::new(&m())
}

#[test]
fn fixture_decodes() {
    let (_, result) = decode(fresh_decoder(), &[FIXTURE]);
    let msg = result.unwrap();
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
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
fn escaped_strings_in_deltas_are_decoded() {
    let text = "say \"hi\"\n\tto C:\\dir — é 😀 \u{1}";
    let input = sse(&[
        message_start(),
        block_start(0, json!({"type": "text", "text": "<"})),
        delta(0, json!({"type": "text_delta", "text": text})),
        block_stop(0),
        block_start(
            1,
            json!({"type": "tool_use", "id": "t\"1", "name": "re\\ad", "input": {}}),
        ),
        delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "{\"path\": \"a\\\\b\"}"}),
        ),
        block_stop(1),
        message_delta("tool_use", 1),
        message_stop(),
    ]);
    let (_, result) = decode_all_splits(fresh_decoder, &input);
    let msg = result.unwrap();
    assert_eq!(msg.text(), format!("<{text}"));
    let call = msg.tool_calls().next().unwrap();
    assert_eq!((call.id.as_str(), call.name.as_str()), ("t\"1", "re\\ad"));
    assert_eq!(call.arguments, json!({"path": "a\\b"}));
}

#[test]
fn fields_of_another_type_count_as_missing() {
    let input = sse(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": "50",
                   "output_tokens": -1, "cache_read_input_tokens": 2.5, "cache_creation_input_tokens": 4}}}),
        ),
        // A `type` that is not a string: the event name decides.
        (
            "content_block_start",
            json!({"type": 7, "index": 0, "content_block": {"type": "text", "text": ["x"]}}),
        ),
        delta(0, json!({"type": "text_delta", "text": 5})),
        delta(0, json!({"type": "text_delta", "text": "ok"})),
        delta(0, json!({"type": ["text_delta"], "text": "dropped"})),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": "x"}),
        ),
        // No delta at all, and a block start without its block: nothing to add.
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 1}),
        ),
        delta(1, json!({"type": "text_delta", "text": "ignored block"})),
        block_stop(0),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": 1}, "usage": {"output_tokens": 9}}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": [], "usage": "many"}),
        ),
        message_stop(),
    ]);
    let (_, result) = decode_all_splits(fresh_decoder, &input);
    let msg = result.unwrap();
    assert_eq!(msg.content, vec![ContentBlock::text("ok")]);
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(
        (
            msg.usage.input,
            msg.usage.output,
            msg.usage.cache_read,
            msg.usage.cache_write
        ),
        (0, 9, 0, 4)
    );
    assert_eq!(msg.usage.total_tokens, 13);
}

#[test]
fn an_index_of_another_type_is_malformed() {
    for index in [json!("0"), json!(-1), json!(0.5), json!(null), json!({})] {
        let input = sse(&[
            message_start(),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ),
        ]);
        let (_, result) = decode(fresh_decoder(), &[&input]);
        let (err, _) = result.unwrap_err();
        assert!(
            matches!(err, LlmError::MalformedStream { .. }),
            "{index}: {err}"
        );
    }
}

#[test]
fn error_events_without_details_are_api_errors() {
    for error in [
        json!(null),
        json!("boom"),
        json!({"type": 5, "message": ["x"]}),
    ] {
        let input = sse(&[("error", json!({"type": "error", "error": error}))]);
        let (_, result) = decode(fresh_decoder(), &[&input]);
        let (err, _) = result.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Retryable, "{error}");
        assert!(err.to_string().contains("api_error"), "{err}");
        assert!(err.to_string().contains("error event in stream"), "{err}");
    }
}

/// Counts at the top of u64 saturate instead of overflowing (a panic in a debug build).
#[test]
fn huge_usage_counts_saturate() {
    let input = sse(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "content": [], "model": "model-1", "stop_reason": null,
                "usage": {"input_tokens": u64::MAX, "output_tokens": 1,
                    "cache_read_input_tokens": u64::MAX,
                    "cache_creation_input_tokens": u64::MAX}}}),
        ),
        message_delta("end_turn", u64::MAX),
        message_stop(),
    ]);
    let (_, result) = decode(AnthropicDecoder::new(&m()), &[&input]);
    let msg = result.map_err(|(e, _)| e.to_string()).unwrap();
    assert_eq!(msg.usage.output, u64::MAX);
    assert_eq!(msg.usage.total_tokens, u64::MAX);
}
