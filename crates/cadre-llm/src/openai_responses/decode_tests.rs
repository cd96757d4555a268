#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cadre_protocol::{AssistantMessage, AssistantMessageEvent, ContentBlock, StopReason};
use serde_json::{Value, json};

use super::ResponsesDecoder;
use crate::error::{ErrorKind, LlmError};
use crate::model::{Api, Model};
use crate::test_support::{Decoded, decode, decode_all_splits, decode_mutations, model, sse};

fn m() -> Model {
    model(Api::OpenAiResponses)
}

fn make() -> ResponsesDecoder {
    ResponsesDecoder::new(&m())
}

/// SSE of Responses events, each named by its `type` as OpenAI's server names them.
fn events(list: &[Value]) -> Vec<u8> {
    let named: Vec<(&str, Value)> = list
        .iter()
        .map(|e| (e["type"].as_str().unwrap_or(""), e.clone()))
        .collect();
    sse(&named)
}

fn ok(d: &Decoded) -> &AssistantMessage {
    match &d.1 {
        Ok(m) => m,
        Err((e, _)) => panic!("decode failed: {e}"),
    }
}

fn err(d: &Decoded) -> (&LlmError, &AssistantMessage) {
    match &d.1 {
        Ok(m) => panic!("expected an error, got {m:?}"),
        Err((e, p)) => (e, p),
    }
}

fn created() -> Value {
    json!({"type": "response.created", "sequence_number": 0,
        "response": {"id": "resp_1", "status": "in_progress", "output": [], "usage": null}})
}

fn completed(status: &str, usage: Value) -> Value {
    json!({"type": "response.completed", "response": {"id": "resp_1", "status": status,
        "usage": usage, "error": null, "incomplete_details": null}})
}

fn usage(input: u64, cached: u64, output: u64, reasoning: u64) -> Value {
    json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output, "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input + output})
}

fn text_item_events(oi: u64, id: &str, pieces: &[&str]) -> Vec<Value> {
    let full: String = pieces.concat();
    let mut v = vec![
        json!({"type": "response.output_item.added", "output_index": oi,
            "item": {"id": id, "type": "message", "role": "assistant", "status": "in_progress",
                "content": []}}),
        json!({"type": "response.content_part.added", "output_index": oi, "content_index": 0,
            "item_id": id, "part": {"type": "output_text", "text": "", "annotations": []}}),
    ];
    for p in pieces {
        v.push(
            json!({"type": "response.output_text.delta", "output_index": oi,
            "content_index": 0, "item_id": id, "delta": p}),
        );
    }
    v.push(
        json!({"type": "response.output_text.done", "output_index": oi,
        "content_index": 0, "item_id": id, "text": full}),
    );
    v.push(
        json!({"type": "response.content_part.done", "output_index": oi,
        "content_index": 0, "item_id": id,
        "part": {"type": "output_text", "text": full, "annotations": []}}),
    );
    v.push(
        json!({"type": "response.output_item.done", "output_index": oi,
        "item": {"id": id, "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": full, "annotations": []}]}}),
    );
    v
}

/// The reasoning item of [`reasoning_events`] as its `output_item.done` carries it, written
/// exactly as the stream has it.
const REASONING_DONE_ITEM: &str = r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Plan: read."},{"type":"summary_text","text":"Then \"answer\"."}],"encrypted_content":"gAAAA-enc=="}"#;

fn reasoning_events(oi: u64) -> Vec<Value> {
    vec![
        json!({"type": "response.output_item.added", "output_index": oi,
            "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
        json!({"type": "response.reasoning_summary_part.added", "output_index": oi,
            "item_id": "rs_1", "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": oi,
            "item_id": "rs_1", "summary_index": 0, "delta": "Plan: "}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": oi,
            "item_id": "rs_1", "summary_index": 0, "delta": "read."}),
        json!({"type": "response.reasoning_summary_text.done", "output_index": oi,
            "item_id": "rs_1", "summary_index": 0, "text": "Plan: read."}),
        json!({"type": "response.reasoning_summary_part.done", "output_index": oi,
            "item_id": "rs_1", "summary_index": 0,
            "part": {"type": "summary_text", "text": "Plan: read."}}),
        json!({"type": "response.reasoning_summary_part.added", "output_index": oi,
            "item_id": "rs_1", "summary_index": 1, "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": oi,
            "item_id": "rs_1", "summary_index": 1, "delta": "Then \"answer\"."}),
        json!({"type": "response.reasoning_summary_part.done", "output_index": oi,
            "item_id": "rs_1", "summary_index": 1,
            "part": {"type": "summary_text", "text": "Then \"answer\"."}}),
    ]
}

/// `reasoning_events`' done event, with the item bytes exactly as [`REASONING_DONE_ITEM`].
fn reasoning_done_sse(oi: u64) -> String {
    format!(
        "event: response.output_item.done\ndata: {{\"type\":\"response.output_item.done\",\"output_index\":{oi},\"item\":{REASONING_DONE_ITEM}}}\n\n"
    )
}

fn call_events(oi: u64, call_id: &str, fc: &str, name: &str, pieces: &[&str]) -> Vec<Value> {
    let full: String = pieces.concat();
    let mut v = vec![
        json!({"type": "response.output_item.added", "output_index": oi,
        "item": {"id": fc, "type": "function_call", "status": "in_progress", "call_id": call_id,
            "name": name, "arguments": ""}}),
    ];
    for p in pieces {
        v.push(
            json!({"type": "response.function_call_arguments.delta", "output_index": oi,
            "item_id": fc, "delta": p}),
        );
    }
    v.push(
        json!({"type": "response.function_call_arguments.done", "output_index": oi,
        "item_id": fc, "arguments": full}),
    );
    v.push(
        json!({"type": "response.output_item.done", "output_index": oi,
        "item": {"id": fc, "type": "function_call", "status": "completed", "call_id": call_id,
            "name": name, "arguments": full}}),
    );
    v
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn a_text_reply_is_assembled_with_usage_and_response_id() {
    let mut list = vec![created()];
    list.push(json!({"type": "response.in_progress", "response": {"id": "resp_1"}}));
    list.extend(text_item_events(0, "msg_1", &["Hel", "lo ", "wörld"]));
    list.push(completed("completed", usage(100, 40, 7, 0)));
    let d = decode_all_splits(make, &events(&list));
    let msg = ok(&d);
    assert_eq!(msg.content, vec![ContentBlock::text("Hello wörld")]);
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(msg.response_id.as_deref(), Some("resp_1"));
    assert_eq!(msg.api, "openai-responses");
    assert_eq!(
        (
            msg.usage.input,
            msg.usage.cache_read,
            msg.usage.output,
            msg.usage.total_tokens
        ),
        (60, 40, 7, 107)
    );
    use AssistantMessageEvent as E;
    assert_eq!(d.0[0], E::Start);
    assert!(matches!(&d.0[1], E::ResponseId { response_id } if response_id == "resp_1"));
    let deltas: Vec<&str> =
        d.0.iter()
            .filter_map(|e| match e {
                E::TextDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
    assert_eq!(deltas, ["Hel", "lo ", "wörld"]);
    assert!(matches!(d.0.last(), Some(E::TextEnd { content, .. }) if content == "Hello wörld"));
}

#[test]
fn usage_costs_are_priced_with_cached_input_apart() {
    let mut list = vec![created()];
    list.extend(text_item_events(0, "msg_1", &["ok"]));
    list.push(completed(
        "completed",
        usage(1_000_000, 500_000, 100_000, 60_000),
    ));
    let d = decode(make(), &[&events(&list)]);
    let mut msg = ok(&d).clone();
    let mut model = m();
    model.cost = crate::model::ModelCost {
        input: 2.0,
        output: 8.0,
        cache_read: 0.5,
        cache_write: 0.0,
    };
    crate::cost::apply_cost(&model, &mut msg.usage);
    // 0.5 M uncached input at 2, 0.5 M cached at 0.5, 0.1 M output (reasoning included) at 8.
    assert!((msg.usage.cost.input - 1.0).abs() < 1e-9, "{:?}", msg.usage);
    assert!((msg.usage.cost.cache_read - 0.25).abs() < 1e-9);
    assert!((msg.usage.cost.output - 0.8).abs() < 1e-9);
    assert!((msg.usage.cost.total - 2.05).abs() < 1e-9);
}

#[test]
fn reasoning_and_a_tool_call_become_thinking_with_the_item_and_a_call() {
    let mut bytes = events(&[created()]);
    bytes.extend(events(&reasoning_events(0)));
    bytes.extend(reasoning_done_sse(0).as_bytes());
    let mut list = call_events(
        1,
        "call_abc",
        "fc_1",
        "read",
        &["{\"pa", "th\": \"a.txt\"}"],
    );
    list.push(completed("completed", usage(10, 0, 20, 12)));
    bytes.extend(events(&list));
    let d = decode_all_splits(make, &bytes);
    let msg = ok(&d);
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    let ContentBlock::Thinking {
        thinking,
        signature,
        redacted,
    } = &msg.content[0]
    else {
        panic!("{:?}", msg.content)
    };
    assert_eq!(thinking, "Plan: read.\n\nThen \"answer\".");
    // The item exactly as received, byte for byte.
    assert_eq!(signature.as_deref(), Some(REASONING_DONE_ITEM));
    assert!(!redacted);
    let ContentBlock::ToolCall(call) = &msg.content[1] else {
        panic!("{:?}", msg.content)
    };
    assert_eq!(call.id, "call_abc|fc_1");
    assert_eq!(call.name, "read");
    assert_eq!(call.arguments, json!({"path": "a.txt"}));
    // The thinking end event carries the signature, so the rebuilt partial has it too.
    assert!(
        d.0.iter().any(|e| matches!(e,
        AssistantMessageEvent::ThinkingEnd { signature: Some(s), .. } if s == REASONING_DONE_ITEM))
    );
}

#[test]
fn reasoning_without_a_summary_keeps_its_place_and_item() {
    let item = r#"{"id":"rs_2","type":"reasoning","summary":[],"encrypted_content":"e"}"#;
    let mut bytes = events(&[
        created(),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": "rs_2", "type": "reasoning", "summary": []}}),
    ]);
    bytes.extend(format!("data: {{\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{item}}}\n\n").as_bytes());
    let mut list = text_item_events(1, "msg_2", &["Done."]);
    list.push(completed("completed", usage(1, 0, 1, 0)));
    bytes.extend(events(&list));
    let d = decode_all_splits(make, &bytes);
    let msg = ok(&d);
    assert_eq!(
        msg.content,
        vec![
            ContentBlock::Thinking {
                thinking: String::new(),
                signature: Some(item.into()),
                redacted: false
            },
            ContentBlock::text("Done.")
        ]
    );
}

#[test]
fn raw_reasoning_text_streams_as_thinking() {
    let list = vec![
        created(),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": "r1", "type": "reasoning", "summary": []}}),
        json!({"type": "response.content_part.added", "output_index": 0, "content_index": 0,
            "part": {"type": "reasoning_text", "text": ""}}),
        json!({"type": "response.reasoning_text.delta", "output_index": 0, "delta": "think"}),
        completed("completed", usage(1, 0, 1, 0)),
    ];
    let msg = ok(&decode(make(), &[&events(&list)])).clone();
    assert!(matches!(&msg.content[0],
        ContentBlock::Thinking { thinking, signature: None, .. } if thinking == "think"));
}

#[test]
fn items_done_without_deltas_fill_in_text_and_arguments() {
    let list = vec![
        created(),
        json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"id": "msg_1", "type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "Hi "},
                            {"type": "refusal", "refusal": "no."}]}}),
        json!({"type": "response.output_item.added", "output_index": 1,
            "item": {"id": "fc_9", "type": "function_call", "call_id": "call_9", "name": "bash",
                "arguments": ""}}),
        json!({"type": "response.function_call_arguments.done", "output_index": 1,
            "arguments": "{\"command\":\"ls\"}"}),
        json!({"type": "response.output_item.done", "output_index": 2,
            "item": {"id": "fc_10", "type": "function_call", "call_id": "call_10",
                "name": "read", "arguments": "{\"path\":\"x\"}"}}),
        // A hosted tool's item: nothing of it is cadre's.
        json!({"type": "response.output_item.added", "output_index": 3,
            "item": {"id": "ws_1", "type": "web_search_call"}}),
        json!({"type": "response.web_search_call.completed", "output_index": 3}),
        completed("completed", usage(1, 0, 1, 0)),
    ];
    let d = decode_all_splits(make, &events(&list));
    let msg = ok(&d);
    assert_eq!(msg.content[0], ContentBlock::text("Hi no."));
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "call_9|fc_9");
    assert_eq!(calls[0].arguments, json!({"command": "ls"}));
    assert_eq!(calls[1].id, "call_10|fc_10");
    assert_eq!(calls[1].arguments, json!({"path": "x"}));
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
}

#[test]
fn incomplete_responses_stop_at_a_length_or_the_filter() {
    let incomplete = |reason: &str| {
        json!({"type": "response.incomplete", "response": {"id": "resp_1",
            "status": "incomplete", "incomplete_details": {"reason": reason},
            "usage": usage(5, 0, 9, 0)}})
    };
    let mut list = vec![created()];
    list.extend(text_item_events(0, "msg_1", &["cut"]));
    list.push(incomplete("max_output_tokens"));
    let msg = ok(&decode(make(), &[&events(&list)])).clone();
    assert_eq!(msg.stop_reason, StopReason::Length);
    assert_eq!(msg.usage.output, 9);
    assert_eq!(msg.text(), "cut");

    let mut list = vec![created()];
    list.extend(text_item_events(0, "msg_1", &["x"]));
    list.push(incomplete("content_filter"));
    let msg = ok(&decode(make(), &[&events(&list)])).clone();
    assert_eq!(msg.stop_reason, StopReason::Stop);

    // Cut while calling a tool: the call is unfinished, so it is a length, not a tool use.
    let mut list = vec![created()];
    list.push(
        json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "read",
            "arguments": ""}}),
    );
    list.push(
        json!({"type": "response.function_call_arguments.delta", "output_index": 0,
        "delta": "{\"pa"}),
    );
    list.push(incomplete("max_output_tokens"));
    let msg = ok(&decode(make(), &[&events(&list)])).clone();
    assert_eq!(msg.stop_reason, StopReason::Length);
}

#[test]
fn failed_responses_and_error_events_are_typed_errors() {
    let failed = |code: &str, message: &str| {
        json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
            "error": {"code": code, "message": message}, "usage": usage(3, 0, 1, 0)}})
    };
    let mut list = vec![created()];
    list.extend(text_item_events(0, "msg_1", &["partial"]));
    list.push(failed("server_error", "The server had an error"));
    let d = decode(make(), &[&events(&list)]);
    let (e, partial) = err(&d);
    assert!(e.is_retryable(), "{e}");
    assert!(e.to_string().contains("The server had an error"), "{e}");
    assert_eq!(partial.text(), "partial");
    assert_eq!(partial.usage.input, 3);

    let d = decode(
        make(),
        &[&events(&[
            created(),
            failed("invalid_prompt", "Invalid prompt: flagged"),
        ])],
    );
    let (e, _) = err(&d);
    assert!(matches!(e, LlmError::Http { status: 400, .. }), "{e}");
    assert_eq!(e.kind(), ErrorKind::Fatal);

    // `response.failed` without an error object still fails.
    let d = decode(
        make(),
        &[&events(&[
            json!({"type": "response.failed", "response": {"status": "failed",
            "error": null}}),
        ])],
    );
    assert!(err(&d).0.is_retryable());

    // A completion whose response failed is a failure too.
    let d = decode(
        make(),
        &[&events(&[
            created(),
            completed("failed", usage(1, 0, 0, 0)),
        ])],
    );
    assert!(
        err(&d).0.to_string().contains("response failed"),
        "{:?}",
        d.1
    );

    let d = decode(
        make(),
        &[&events(&[
            created(),
            json!({"type": "error", "code": "rate_limit_exceeded",
                "message": "Rate limit reached", "param": null, "sequence_number": 2}),
        ])],
    );
    let (e, _) = err(&d);
    assert!(matches!(e, LlmError::Http { status: 429, .. }), "{e}");
    assert!(e.is_retryable());
    assert!(e.to_string().contains("stream error"), "{e}");

    let d = decode(
        make(),
        &[&events(&[
            json!({"type": "error", "error": {"type": "invalid_request_error",
            "code": "context_length_exceeded",
            "message": "Your input exceeds the context window of this model."}}),
        ])],
    );
    let (e, _) = err(&d);
    assert_eq!(e.kind(), ErrorKind::ContextOverflow, "{e}");

    let d = decode(
        make(),
        &[&events(&[
            json!({"type": "error", "code": "insufficient_quota",
            "message": "You exceeded your current quota"}),
        ])],
    );
    assert_eq!(err(&d).0.kind(), ErrorKind::Quota);
}

#[test]
fn a_stream_without_its_terminal_event_is_incomplete() {
    let mut list = vec![created()];
    list.extend(text_item_events(0, "msg_1", &["all of it"]));
    let bytes = events(&list);
    let d = decode(make(), &[&bytes]);
    let (e, partial) = err(&d);
    assert!(matches!(e, LlmError::IncompleteStream { .. }), "{e}");
    assert!(e.is_retryable());
    assert_eq!(partial.text(), "all of it");

    // Cut in the middle of an event.
    let mut list = vec![created()];
    list.extend(text_item_events(0, "msg_1", &["cut"]));
    list.push(completed("completed", usage(1, 0, 1, 0)));
    let bytes = events(&list);
    let cut = bytes.len() - 30;
    let d = decode(make(), &[&bytes[..cut]]);
    assert!(matches!(err(&d).0, LlmError::IncompleteStream { .. }));
}

#[test]
fn unknown_events_and_the_done_sentinel_are_ignored_and_garbage_is_malformed() {
    let mut list = vec![created()];
    list.push(json!({"type": "response.future_thing", "output_index": 0, "delta": "x"}));
    list.push(json!({"type": "response.output_text.annotation.added", "output_index": 0}));
    list.extend(text_item_events(0, "msg_1", &["ok"]));
    list.push(completed("completed", usage(1, 0, 1, 0)));
    let bytes = cat(&[b": keep-alive\n\n", &events(&list), b"data: [DONE]\n\n"]);
    let d = decode_all_splits(make, &bytes);
    assert_eq!(ok(&d).text(), "ok");

    let d = decode(make(), &[b"data: {not json\n\n"]);
    assert!(matches!(err(&d).0, LlmError::MalformedStream { .. }));
    let d = decode(make(), &[b"data: [1, 2]\n\n"]);
    assert!(matches!(err(&d).0, LlmError::MalformedStream { .. }));
}

#[test]
fn the_type_may_come_from_the_event_name_alone() {
    let bytes =
        b"event: response.output_text.delta\ndata: {\"output_index\":0,\"delta\":\"hi\"}\n\n\
event: response.completed\ndata: {\"response\":{\"status\":\"completed\"}}\n\n";
    let d = decode(make(), &[bytes]);
    assert_eq!(ok(&d).text(), "hi");
}

#[test]
fn mutated_streams_never_panic() {
    let mut bytes = events(&[created()]);
    bytes.extend(events(&reasoning_events(0)));
    bytes.extend(reasoning_done_sse(0).as_bytes());
    let mut list = call_events(1, "call_1", "fc_1", "read", &["{\"a\":", "1}"]);
    list.extend(text_item_events(2, "msg_1", &["text"]));
    list.push(completed("completed", usage(1, 0, 1, 0)));
    bytes.extend(events(&list));
    decode_mutations(&bytes, make);
}

#[test]
fn an_output_item_beginning_is_content_for_the_deadlines() {
    // The first content of a reply is the start of its first item, as in Pi: events come out
    // of it, and the stream loop counts them as progress.
    for item in [
        json!({"id": "msg_1", "type": "message", "role": "assistant", "content": []}),
        json!({"id": "rs_1", "type": "reasoning", "summary": []}),
        json!({"id": "fc_1", "type": "function_call", "call_id": "c", "name": "read",
            "arguments": ""}),
    ] {
        let bytes = events(&[
            created(),
            json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        ]);
        let (out, _) = decode(make(), &[&bytes]);
        assert!(out.len() > 1, "{item}: {out:?}");
    }
    // The response's lifecycle events are not.
    let bytes = events(&[
        created(),
        json!({"type": "response.in_progress", "response": {"id": "resp_1"}}),
    ]);
    let (out, _) = decode(make(), &[&bytes]);
    assert_eq!(out, vec![AssistantMessageEvent::Start]);
}

/// A repeated `output_item.done` (or a late delta) for an item that finished opens no second
/// block, and a tool call repeated under another output index is kept once: otherwise the call
/// runs twice and the next request carries its ids twice.
#[test]
fn a_finished_item_repeated_is_ignored_and_calls_are_kept_once() {
    let mut list = vec![created()];
    list.extend(text_item_events(0, "msg_1", &["Hi"]));
    let calls = call_events(1, "call_1", "fc_1", "read", &["{\"path\":\"a\"}"]);
    list.extend(calls.clone());
    // The same `done` again, a late delta for it, and the finished text's `done` again.
    list.push(calls.last().unwrap().clone());
    list.push(
        json!({"type": "response.function_call_arguments.delta", "output_index": 1,
        "item_id": "fc_1", "delta": "x"}),
    );
    list.push(
        json!({"type": "response.output_text.delta", "output_index": 0,
        "content_index": 0, "delta": " again"}),
    );
    list.push(
        text_item_events(0, "msg_1", &["Hi"])
            .last()
            .unwrap()
            .clone(),
    );
    // The same item (by id), and the same call (by call_id), under other output indexes.
    let mut same_item = calls.last().unwrap().clone();
    same_item["output_index"] = json!(2);
    list.push(same_item);
    list.extend(call_events(
        3,
        "call_1",
        "fc_9",
        "read",
        &["{\"path\":\"a\"}"],
    ));
    list.push(completed("completed", usage(1, 0, 1, 0)));
    let d = decode_all_splits(make, &events(&list));
    let msg = ok(&d);
    assert_eq!(msg.content.len(), 2, "{:?}", msg.content);
    assert_eq!(msg.content[0], ContentBlock::text("Hi"));
    let ContentBlock::ToolCall(call) = &msg.content[1] else {
        panic!("{:?}", msg.content)
    };
    assert_eq!(call.id, "call_1|fc_1");
    assert_eq!(call.arguments, json!({"path": "a"}));
    let starts =
        d.0.iter()
            .filter(|e| matches!(e, AssistantMessageEvent::ToolCallStart { .. }));
    assert_eq!(starts.count(), 1);
}

/// Argument deltas that come before the call's `output_item.added` open it without a name; the
/// item, when it comes, gives the call its id and name.
#[test]
fn a_call_whose_deltas_came_first_gets_its_id_and_name_from_the_item() {
    let mut list = vec![created()];
    list.push(
        json!({"type": "response.function_call_arguments.delta", "output_index": 0,
        "item_id": "fc_1", "delta": "{\"path\":"}),
    );
    list.push(
        json!({"type": "response.function_call_arguments.delta", "output_index": 0,
        "item_id": "fc_1", "delta": "\"a\"}"}),
    );
    list.push(
        json!({"type": "response.output_item.done", "output_index": 0,
        "item": {"id": "fc_1", "type": "function_call", "status": "completed",
            "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}"}}),
    );
    list.push(completed("completed", usage(1, 0, 1, 0)));
    let d = decode(make(), &[&events(&list)]);
    let msg = ok(&d);
    assert_eq!(msg.content.len(), 1, "{:?}", msg.content);
    let ContentBlock::ToolCall(call) = &msg.content[0] else {
        panic!("{:?}", msg.content)
    };
    assert_eq!(call.id, "call_1|fc_1");
    assert_eq!(call.name, "read");
    assert_eq!(call.arguments, json!({"path": "a"}));
    // The end event carries them, so a consumer rebuilding the message has them too.
    assert!(d.0.iter().any(|e| matches!(e,
        AssistantMessageEvent::ToolCallEnd { tool_call, .. }
            if tool_call.id == "call_1|fc_1" && tool_call.name == "read")));
}

/// Counts at the top of u64 saturate instead of overflowing (a panic in a debug build).
#[test]
fn huge_usage_counts_saturate() {
    let mut list = vec![created()];
    list.extend(text_item_events(0, "msg_1", &["hi"]));
    list.push(completed(
        "completed",
        json!({"input_tokens": u64::MAX, "output_tokens": u64::MAX,
            "input_tokens_details": {"cached_tokens": 0}}),
    ));
    let d = decode(make(), &[&events(&list)]);
    let msg = ok(&d);
    assert_eq!(msg.usage.input, u64::MAX);
    assert_eq!(msg.usage.output, u64::MAX);
    assert_eq!(msg.usage.total_tokens, u64::MAX);
}
