#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cadre_protocol::{
    AssistantMessage, ContentBlock, Message, StopReason, ThinkingLevel, ToolCall, ToolResultMessage,
};
use serde_json::{Value, json};

use super::{ResponsesDecoder, build_body, build_request};
use crate::model::{Api, Model};
use crate::provider::CompletionRequest;
use crate::test_support::{decode, model, request, rich_request};

fn m() -> Model {
    model(Api::OpenAiResponses)
}

fn reasoner() -> Model {
    let mut model = m();
    model.reasoning = true;
    model
}

fn body_json(req: &CompletionRequest) -> Value {
    serde_json::from_slice(&build_body(req).unwrap()).unwrap()
}

fn assistant(content: Vec<ContentBlock>, model_id: &str) -> Message {
    Message::Assistant(AssistantMessage {
        content,
        stop_reason: StopReason::ToolUse,
        ..AssistantMessage::empty("openai-responses", "prov", model_id)
    })
}

fn call(id: &str) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments: json!({"path": "a.txt"}),
    })
}

fn result(id: &str, text: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        content: vec![ContentBlock::text(text)],
        details: None,
        is_error: false,
        timestamp: 0,
    })
}

const ITEM: &str = r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Plan."}],"encrypted_content":"gAAAA=="}"#;

fn thinking(signature: &str) -> ContentBlock {
    ContentBlock::Thinking {
        thinking: "Plan.".into(),
        signature: Some(signature.into()),
        redacted: false,
    }
}

#[test]
fn url_headers_and_a_plain_body() {
    let req = request(m(), vec![Message::user("hi")]);
    let w = build_request(&req).unwrap();
    assert_eq!(w.url, "http://localhost:1/v1/responses");
    assert!(
        w.headers
            .contains(&("authorization".into(), "Bearer secret-key".into()))
    );
    assert!(
        w.headers
            .contains(&("accept".into(), "text/event-stream".into()))
    );
    let b: Value = serde_json::from_slice(&w.body).unwrap();
    assert_eq!(
        b,
        json!({
            "model": "model-1",
            "input": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            ],
            "stream": true,
            "store": false,
            "max_output_tokens": 8000,
            "tools": [{"type": "function", "name": "read", "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                "strict": false}],
        })
    );

    let mut model = m();
    model.api_key = None;
    model.base_url = "http://h/v1/".into();
    model.max_tokens = 0;
    let mut req = request(model, vec![Message::user("x")]);
    req.system_prompt.clear();
    req.tools = Vec::new().into();
    let w = build_request(&req).unwrap();
    assert_eq!(w.url, "http://h/v1/responses");
    assert!(!w.headers.iter().any(|(k, _)| k == "authorization"));
    let b: Value = serde_json::from_slice(&w.body).unwrap();
    assert!(b.get("tools").is_none());
    assert!(b.get("max_output_tokens").is_none());
    assert_eq!(b["input"].as_array().unwrap().len(), 1);
}

#[test]
fn reasoning_on_and_off() {
    let mut req = request(reasoner(), vec![Message::user("hi")]);
    req.thinking = ThinkingLevel::High;
    let b = body_json(&req);
    assert_eq!(b["reasoning"], json!({"effort": "high", "summary": "auto"}));
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
    // A reasoning model's system prompt is a developer message.
    assert_eq!(b["input"][0]["role"], "developer");

    // Off: no effort (the model's default), and the encrypted content is still asked for.
    req.thinking = ThinkingLevel::Off;
    let b = body_json(&req);
    assert!(b.get("reasoning").is_none(), "{b}");
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
    // An `off` the map gives a value is sent as that effort.
    let mut model = reasoner();
    model
        .thinking_level_map
        .insert(ThinkingLevel::Off, Some("none".into()));
    let mut req = request(model, vec![]);
    req.thinking = ThinkingLevel::Off;
    assert_eq!(body_json(&req)["reasoning"], json!({"effort": "none"}));

    // A model whose map says `off` is no level of its own is clamped as `resolve_thinking`
    // records it (to the nearest level it takes), and sent that.
    let mut model = reasoner();
    model.thinking_level_map.insert(ThinkingLevel::Off, None);
    let mut req = request(model.clone(), vec![]);
    req.thinking = ThinkingLevel::Off;
    let resolved = crate::thinking::resolve_thinking(&model, ThinkingLevel::Off);
    let effort = resolved.wire_value.unwrap();
    assert_eq!(
        body_json(&req)["reasoning"],
        json!({"effort": effort, "summary": "auto"})
    );
    // One that takes no level at all gets no effort.
    for level in ThinkingLevel::ALL {
        model.thinking_level_map.insert(level, None);
    }
    let mut req = request(model, vec![]);
    req.thinking = ThinkingLevel::High;
    let b = body_json(&req);
    assert!(b.get("reasoning").is_none(), "{b}");

    // Mapped values are sent as mapped.
    let mut model = reasoner();
    model
        .thinking_level_map
        .insert(ThinkingLevel::Xhigh, Some("xhigh".into()));
    let mut req = request(model, vec![]);
    req.thinking = ThinkingLevel::Xhigh;
    assert_eq!(
        body_json(&req)["reasoning"],
        json!({"effort": "xhigh", "summary": "auto"})
    );

    // Compat switches.
    let mut model = reasoner();
    model.compat.supports_reasoning_effort = Some(false);
    model.compat.supports_developer_role = Some(false);
    let mut req = request(model, vec![]);
    req.thinking = ThinkingLevel::High;
    let b = body_json(&req);
    assert!(b.get("reasoning").is_none());
    assert_eq!(b["input"][0]["role"], "system");

    // A model that does not reason gets neither.
    let mut req = request(m(), vec![]);
    req.thinking = ThinkingLevel::High;
    let b = body_json(&req);
    assert!(b.get("reasoning").is_none());
    assert!(b.get("include").is_none());
}

#[test]
fn the_whole_conversation_maps_to_input_items() {
    let req = rich_request(Api::OpenAiResponses, "openai-responses");
    let b = body_json(&req);
    assert_eq!(b["max_output_tokens"], crate::openai::DEFAULT_MAX_OUTPUT);
    assert_eq!(
        b["input"],
        json!([
            {"role": "developer", "content": "You are terse."},
            {"role": "user", "content": [
                {"type": "input_text", "text": "Look at this \u{1} <image>:"},
                {"type": "input_image", "detail": "auto",
                    "image_url": "data:image/png;base64,iVBORw0KGgo="},
            ]},
            {"role": "user", "content": [{"type": "input_text", "text": "a note\nwith two lines"}]},
            // Signatures that are not reasoning items (Anthropic's, a redacted block) are left
            // out; each text block is an output message.
            {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "I will read\ttwo files ✓."}]},
            {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "Then run one command."}]},
            {"type": "function_call", "call_id": "toolu_1", "name": "read",
                "arguments": "{\"path\":\"a.txt\",\"limit\":10}"},
            // Characters the API refuses in ids become `_`, on the call and its result alike.
            {"type": "function_call", "call_id": "call_2_x", "name": "read",
                "arguments": "{\"path\":\"b \\\"quoted\\\".txt\"}"},
            // Arguments that were not JSON go back verbatim.
            {"type": "function_call", "call_id": "c3", "name": "bash",
                "arguments": "{\"command\": ls"},
            {"type": "function_call_output", "call_id": "toolu_1", "output": "line 1\nline 2\n"},
            {"type": "function_call_output", "call_id": "call_2_x",
                "output": "no such file: b \"quoted\".txt"},
            {"type": "function_call_output", "call_id": "c3", "output": [
                {"type": "input_text", "text": "screen:"},
                {"type": "input_image", "detail": "auto",
                    "image_url": "data:image/png;base64,R0lGODlh"},
            ]},
        ])
    );
    assert_eq!(
        b["tools"][1],
        json!({"type": "function", "name": "bash", "description": "Run a \"command\"",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            "strict": false})
    );
    assert_eq!(b["reasoning"], json!({"effort": "high", "summary": "auto"}));
}

#[test]
fn images_for_a_text_only_model_become_notes() {
    let mut req = rich_request(Api::OpenAiResponses, "openai-responses");
    req.model.input = vec!["text".into()];
    let b = body_json(&req);
    let input = b["input"].as_array().unwrap();
    assert_eq!(
        input[1]["content"][1],
        json!({"type": "input_text", "text": crate::convert::USER_IMAGE_OMITTED})
    );
    assert_eq!(
        input.last().unwrap()["output"],
        json!(format!("screen:\n{}", crate::convert::TOOL_IMAGE_OMITTED))
    );
}

#[test]
fn reasoning_items_go_back_to_the_model_that_made_them() {
    let messages = |model_id: &str| {
        vec![
            Message::user("read a"),
            assistant(
                vec![
                    thinking(ITEM),
                    ContentBlock::text("Reading."),
                    call("call_1|fc_1"),
                ],
                model_id,
            ),
            result("call_1|fc_1", "contents"),
        ]
    };
    let b = body_json(&request(reasoner(), messages("model-1")));
    let input = &b["input"];
    // Exactly as received, before the items that followed it.
    assert_eq!(input[2], serde_json::from_str::<Value>(ITEM).unwrap());
    assert_eq!(
        input[3],
        json!({"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "Reading."}]})
    );
    assert_eq!(
        input[4],
        json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read",
            "arguments": "{\"path\":\"a.txt\"}"})
    );
    assert_eq!(
        input[5],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "contents"})
    );
    // The item is written into the body as it was received (byte for byte).
    let raw = String::from_utf8(
        build_body(&request(reasoner(), messages("model-1")))
            .unwrap()
            .to_vec(),
    )
    .unwrap();
    assert!(raw.contains(ITEM), "{raw}");

    // Another model (or provider, or wire) gets neither the item nor the item id.
    let b = body_json(&request(reasoner(), messages("other-model")));
    let input = b["input"].as_array().unwrap();
    assert!(!input.iter().any(|i| i["type"] == "reasoning"), "{b}");
    assert_eq!(
        input[3],
        json!({"type": "function_call", "call_id": "call_1", "name": "read",
            "arguments": "{\"path\":\"a.txt\"}"})
    );
    let mut msgs = messages("model-1");
    if let Message::Assistant(a) = &mut msgs[1] {
        a.provider = "openai".into();
    }
    let b = body_json(&request(reasoner(), msgs));
    assert!(
        !b["input"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["type"] == "reasoning")
    );
}

#[test]
fn unusable_reasoning_signatures_and_failed_replies_are_left_out() {
    let no_encrypted = r#"{"id":"rs_1","type":"reasoning","summary":[]}"#;
    let msgs = vec![
        Message::user("a"),
        assistant(
            vec![
                thinking(no_encrypted),
                thinking("not json"),
                thinking(r#"{"type":"message"}"#),
                ContentBlock::text("ok"),
            ],
            "model-1",
        ),
        Message::Assistant(AssistantMessage {
            content: vec![thinking(ITEM), ContentBlock::text("half")],
            stop_reason: StopReason::Error,
            ..AssistantMessage::empty("openai-responses", "prov", "model-1")
        }),
        Message::Assistant(AssistantMessage {
            content: vec![ContentBlock::text("aborted")],
            stop_reason: StopReason::Aborted,
            ..AssistantMessage::empty("openai-responses", "prov", "model-1")
        }),
    ];
    let b = body_json(&request(reasoner(), msgs));
    let input = b["input"].as_array().unwrap();
    assert_eq!(input.len(), 3, "{b}");
    assert_eq!(input[2]["content"][0]["text"], "ok");
}

#[test]
fn long_foreign_call_ids_are_cut_to_64_characters() {
    let long = format!("{}...", "a".repeat(70));
    let msgs = vec![assistant(vec![call(&long)], "model-1"), result(&long, "x")];
    let b = body_json(&request(m(), msgs));
    let id = "a".repeat(64);
    assert_eq!(b["input"][1]["call_id"], json!(id));
    assert_eq!(b["input"][2]["call_id"], json!(id));
    let msgs = vec![assistant(vec![call("call_x:__")], "model-1")];
    assert_eq!(
        body_json(&request(m(), msgs))["input"][1]["call_id"],
        "call_x"
    );
}

/// A reply decoded from the stream, sent back on the next turn, carries its reasoning item
/// and call ids as the server sent them.
#[test]
fn a_decoded_reply_round_trips_into_the_next_request() {
    let stream = format!(
        "data: {{\"type\":\"response.created\",\"response\":{{\"id\":\"resp_9\"}}}}\n\n\
data: {{\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[]}}}}\n\n\
data: {{\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{ITEM}}}\n\n\
data: {{\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{{\"id\":\"fc_7\",\"type\":\"function_call\",\"call_id\":\"call_7\",\"name\":\"read\",\"arguments\":\"\"}}}}\n\n\
data: {{\"type\":\"response.function_call_arguments.delta\",\"output_index\":1,\"delta\":\"{{\\\"path\\\":\\\"a.txt\\\"}}\"}}\n\n\
data: {{\"type\":\"response.output_item.done\",\"output_index\":1,\"item\":{{\"id\":\"fc_7\",\"type\":\"function_call\",\"call_id\":\"call_7\",\"name\":\"read\",\"arguments\":\"{{\\\"path\\\":\\\"a.txt\\\"}}\"}}}}\n\n\
data: {{\"type\":\"response.completed\",\"response\":{{\"id\":\"resp_9\",\"status\":\"completed\"}}}}\n\n"
    );
    let model = reasoner();
    let (_, reply) = decode(ResponsesDecoder::new(&model), &[stream.as_bytes()]);
    let reply = reply.map_err(|(e, _)| e.to_string()).unwrap();
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    let call_id = reply.tool_calls().next().unwrap().id.clone();
    assert_eq!(call_id, "call_7|fc_7");
    // Through the session format and back, as a resumed session would have it.
    let stored = serde_json::to_string(&Message::Assistant(reply)).unwrap();
    let reply: Message = serde_json::from_str(&stored).unwrap();
    let msgs = vec![Message::user("go"), reply, result(&call_id, "text")];
    let b = body_json(&request(model, msgs));
    let input = b["input"].as_array().unwrap();
    assert_eq!(input[2], serde_json::from_str::<Value>(ITEM).unwrap());
    assert_eq!(input[3]["id"], "fc_7");
    assert_eq!(input[3]["call_id"], "call_7");
    assert_eq!(input[4]["call_id"], "call_7");
}

#[test]
fn every_call_gets_an_output_and_every_output_a_call() {
    let other = ContentBlock::ToolCall(ToolCall {
        id: "call_2|fc_2".into(),
        name: "bash".into(),
        arguments: json!({}),
    });
    let msgs = vec![
        Message::user("go"),
        assistant(vec![call("call_1|fc_1"), other], "model-1"),
        result("call_1|fc_1", "one"),
        // The user spoke before the second call had its result.
        Message::user("stop"),
        // A reply that failed is left out, and so is the result of its call.
        Message::Assistant(AssistantMessage {
            content: vec![call("call_3")],
            stop_reason: StopReason::Error,
            ..AssistantMessage::empty("openai-responses", "prov", "model-1")
        }),
        result("call_3", "three"),
        assistant(vec![call("call_4")], "model-1"),
    ];
    let b = body_json(&request(m(), msgs));
    let kinds: Vec<(String, String)> = b["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let kind = i["type"].as_str().or(i["role"].as_str()).unwrap_or("");
            let detail = i["call_id"]
                .as_str()
                .map(|c| format!("{c}:{}", i["output"].as_str().unwrap_or("")))
                .unwrap_or_default();
            (kind.to_string(), detail)
        })
        .collect();
    let no = super::request::NO_RESULT;
    let want: Vec<(String, String)> = [
        ("system", String::new()),
        ("user", String::new()),
        ("function_call", "call_1:".into()),
        ("function_call", "call_2:".into()),
        ("function_call_output", "call_1:one".into()),
        ("function_call_output", format!("call_2:{no}")),
        ("user", String::new()),
        ("function_call", "call_4:".into()),
        ("function_call_output", format!("call_4:{no}")),
    ]
    .into_iter()
    .map(|(k, d)| (k.to_string(), d))
    .collect();
    assert_eq!(kinds, want, "{b}");
}

/// Pi 0.73.1's own record of a Responses tool turn (see tests/fixtures/pi/README.md).
fn pi_fixture() -> (Vec<Message>, Vec<Value>) {
    let fixture: Value = serde_json::from_str(include_str!(
        "../../tests/fixtures/pi/responses_tool_turn.json"
    ))
    .unwrap();
    let messages = serde_json::from_value(fixture["session_messages"].clone()).unwrap();
    let input = fixture["pi_request_input_after_system"]
        .as_array()
        .unwrap()
        .clone();
    (messages, input)
}

fn pi_model() -> Model {
    let mut model = reasoner();
    model.provider = "fakeresp".into();
    model.id = "m1".into();
    model
}

#[test]
fn the_stream_pi_decoded_becomes_the_message_pi_stored() {
    let (messages, _) = pi_fixture();
    let Message::Assistant(stored) = &messages[1] else {
        panic!("{:?}", messages[1])
    };
    let sse = include_bytes!("../../tests/fixtures/pi/responses_tool_turn.sse");
    let (_, decoded) = decode(ResponsesDecoder::new(&pi_model()), &[sse]);
    let decoded = decoded.map_err(|(e, _)| e.to_string()).unwrap();
    // The reasoning item in the signature, byte for byte; the call id as `call_id|item_id`.
    assert_eq!(decoded.content, stored.content);
    assert_eq!(decoded.stop_reason, stored.stop_reason);
    assert_eq!(decoded.response_id, stored.response_id);
    assert_eq!(decoded.usage.total_tokens, stored.usage.total_tokens);
}

#[test]
fn a_conversation_pi_stored_is_sent_back_as_pi_sends_it() {
    let (messages, mut pi_input) = pi_fixture();
    // Pi also sends the id of each assistant message item, kept in a text signature cadre does
    // not store (with `status` and `annotations`); everything else is the same.
    for item in &mut pi_input {
        if item["type"] == "message" {
            let item = item.as_object_mut().unwrap();
            item.remove("id");
            item.remove("status");
            item["content"][0]
                .as_object_mut()
                .unwrap()
                .remove("annotations");
        }
    }
    let mut req = request(pi_model(), messages);
    req.thinking = ThinkingLevel::Medium;
    let b = body_json(&req);
    let input = b["input"].as_array().unwrap();
    assert_eq!(input[0]["role"], "developer");
    assert_eq!(input[1..], pi_input[..]);
}

/// OpenAI refuses a `function_call` item id whose reasoning item is not in the input ("provided
/// without its required reasoning item"): the id goes only with the reasoning item before it.
#[test]
fn a_call_id_goes_only_with_its_reasoning_item() {
    let no_encrypted = r#"{"id":"rs_1","type":"reasoning","summary":[]}"#;
    let msgs = vec![
        Message::user("read a"),
        assistant(vec![thinking(no_encrypted), call("call_1|fc_1")], "model-1"),
        result("call_1|fc_1", "contents"),
        assistant(vec![call("call_2|fc_2")], "model-1"),
        result("call_2|fc_2", "more"),
        assistant(vec![thinking(ITEM), call("call_3|fc_3")], "model-1"),
        result("call_3|fc_3", "last"),
    ];
    let b = body_json(&request(reasoner(), msgs));
    let calls: Vec<&Value> = b["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call")
        .collect();
    assert_eq!(calls.len(), 3, "{b}");
    // The reasoning item had no encrypted content, so it was dropped: no id.
    assert_eq!(calls[0].get("id"), None, "{b}");
    assert_eq!(calls[0]["call_id"], "call_1");
    // No reasoning item at all: no id.
    assert_eq!(calls[1].get("id"), None, "{b}");
    // The reasoning item is sent, and the id with it.
    assert_eq!(calls[2]["id"], "fc_3", "{b}");
    let kinds: Vec<&str> = b["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["type"].as_str())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "reasoning").count(),
        1,
        "{b}"
    );
}

/// A reply cut at its output limit while it was still reasoning ends with a reasoning item
/// nothing followed; OpenAI refuses it ("provided without its required following item").
#[test]
fn a_reasoning_item_nothing_followed_is_left_out() {
    let second = ITEM.replace("rs_1", "rs_2");
    let msgs = vec![
        Message::user("think"),
        Message::Assistant(AssistantMessage {
            content: vec![thinking(ITEM)],
            stop_reason: StopReason::Length,
            ..AssistantMessage::empty("openai-responses", "prov", "model-1")
        }),
        Message::user("go on"),
        Message::Assistant(AssistantMessage {
            content: vec![
                thinking(ITEM),
                ContentBlock::text("Half"),
                thinking(&second),
                ContentBlock::text(""),
            ],
            stop_reason: StopReason::Length,
            ..AssistantMessage::empty("openai-responses", "prov", "model-1")
        }),
    ];
    let b = body_json(&request(reasoner(), msgs));
    let ids: Vec<&str> = b["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "reasoning")
        .filter_map(|i| i["id"].as_str())
        .collect();
    // Only the item the text followed.
    assert_eq!(ids, ["rs_1"], "{b}");
    let input = b["input"].as_array().unwrap();
    // System prompt, two user messages, the item and the text.
    assert_eq!(input.len(), 5, "{b}");
    assert_eq!(input[3]["type"], "reasoning", "{b}");
    assert_eq!(input[4]["content"][0]["text"], "Half", "{b}");
}
