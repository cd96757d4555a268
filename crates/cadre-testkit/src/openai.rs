//! OpenAI Chat Completions rendering: `chat.completion.chunk` SSE frames, whole completions
//! and `{"error": {...}}` bodies.

use serde::Serialize;

use crate::script::{Part, Reply, StopKind};
use crate::wire::{Frame, RenderCtx, Usage, argument_pieces, text_pieces};

/// A fixed `created` timestamp keeps output byte-for-byte reproducible.
const CREATED: u64 = 1_767_225_600;

#[derive(Serialize)]
struct Chunk<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    system_fingerprint: &'static str,
    choices: Vec<Choice<'a>>,
    /// Absent unless `include_usage`; then `null` on every chunk but the usage chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Option<WireUsage>>,
}

#[derive(Serialize)]
struct Choice<'a> {
    index: u32,
    delta: Delta<'a>,
    logprobs: Option<()>,
    finish_reason: Option<&'static str>,
}

#[derive(Serialize, Default)]
struct Delta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

#[derive(Serialize)]
struct ToolCallDelta<'a> {
    index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    function: FunctionDelta<'a>,
}

#[derive(Serialize)]
struct FunctionDelta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    arguments: &'a str,
}

#[derive(Serialize)]
struct WireUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    prompt_tokens_details: PromptDetails,
}

#[derive(Serialize)]
struct PromptDetails {
    cached_tokens: u64,
}

impl From<Usage> for WireUsage {
    fn from(u: Usage) -> WireUsage {
        let prompt = u.input + u.cache_read + u.cache_write;
        WireUsage {
            prompt_tokens: prompt,
            completion_tokens: u.output,
            total_tokens: prompt + u.output,
            prompt_tokens_details: PromptDetails {
                cached_tokens: u.cache_read,
            },
        }
    }
}

fn finish_reason(stop: StopKind) -> &'static str {
    match stop {
        StopKind::Stop => "stop",
        StopKind::ToolUse => "tool_calls",
        StopKind::Length => "length",
        StopKind::ContentFilter => "content_filter",
    }
}

fn completion_id(ctx: &RenderCtx) -> String {
    format!("chatcmpl-fake{:06}", ctx.seq)
}

/// The complete SSE body for a streamed reply, `[DONE]` included.
pub(crate) fn stream_frames(reply: &Reply, ctx: &RenderCtx) -> Vec<Frame> {
    let id = completion_id(ctx);
    let chunk = |delta: Delta<'_>, finish: Option<&'static str>| {
        let chunk = Chunk {
            id: &id,
            object: "chat.completion.chunk",
            created: CREATED,
            model: &ctx.model,
            system_fingerprint: "fp_cadre",
            choices: vec![Choice {
                index: 0,
                delta,
                logprobs: None,
                finish_reason: finish,
            }],
            usage: ctx.include_usage.then_some(None),
        };
        Frame::data(&to_json(&chunk))
    };

    let mut frames = vec![chunk(
        Delta {
            role: Some("assistant"),
            content: Some(""),
            ..Delta::default()
        },
        None,
    )];
    let mut tool_index = 0;
    for part in &reply.parts {
        match part {
            Part::Thinking { text, .. } => {
                for piece in text_pieces(text) {
                    frames.push(chunk(
                        Delta {
                            reasoning_content: Some(piece),
                            ..Delta::default()
                        },
                        None,
                    ));
                }
            }
            Part::Text(text) => {
                for piece in text_pieces(text) {
                    frames.push(chunk(
                        Delta {
                            content: Some(piece),
                            ..Delta::default()
                        },
                        None,
                    ));
                }
            }
            Part::ToolCall {
                id: call_id,
                name,
                arguments,
            } => {
                // As the service does: id, type and name first with empty arguments, then
                // the arguments in pieces carrying only the index.
                frames.push(chunk(
                    Delta {
                        tool_calls: Some(vec![ToolCallDelta {
                            index: tool_index,
                            id: Some(call_id),
                            kind: Some("function"),
                            function: FunctionDelta {
                                name: Some(name),
                                arguments: "",
                            },
                        }]),
                        ..Delta::default()
                    },
                    None,
                ));
                for piece in argument_pieces(arguments) {
                    frames.push(chunk(
                        Delta {
                            tool_calls: Some(vec![ToolCallDelta {
                                index: tool_index,
                                id: None,
                                kind: None,
                                function: FunctionDelta {
                                    name: None,
                                    arguments: piece,
                                },
                            }]),
                            ..Delta::default()
                        },
                        None,
                    ));
                }
                tool_index += 1;
            }
        }
    }
    frames.push(chunk(
        Delta::default(),
        Some(finish_reason(reply.stop_kind())),
    ));
    if ctx.include_usage {
        let usage_chunk = Chunk {
            id: &id,
            object: "chat.completion.chunk",
            created: CREATED,
            model: &ctx.model,
            system_fingerprint: "fp_cadre",
            choices: Vec::new(),
            usage: Some(Some(ctx.usage.into())),
        };
        frames.push(Frame::data(&to_json(&usage_chunk)));
    }
    frames.push(Frame::data("[DONE]").terminal());
    frames
}

#[derive(Serialize)]
struct Completion<'a> {
    id: String,
    object: &'static str,
    created: u64,
    model: &'a str,
    system_fingerprint: &'static str,
    choices: [CompletionChoice; 1],
    usage: WireUsage,
}

#[derive(Serialize)]
struct CompletionChoice {
    index: u32,
    message: serde_json::Value,
    logprobs: Option<()>,
    finish_reason: &'static str,
}

/// The `chat.completion` body for a non-streamed request.
pub(crate) fn completion_body(reply: &Reply, ctx: &RenderCtx) -> String {
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    for part in &reply.parts {
        match part {
            Part::Thinking { text, .. } => reasoning.push_str(text),
            Part::Text(text) => content.push_str(text),
            Part::ToolCall {
                id,
                name,
                arguments,
            } => calls.push(serde_json::json!({
                "id": id, "type": "function", "function": {"name": name, "arguments": arguments}
            })),
        }
    }
    let mut message = serde_json::json!({
        "role": "assistant",
        "content": if content.is_empty() { serde_json::Value::Null } else { content.into() },
    });
    if !reasoning.is_empty() {
        message["reasoning_content"] = reasoning.into();
    }
    if !calls.is_empty() {
        message["tool_calls"] = calls.into();
    }
    to_json(&Completion {
        id: completion_id(ctx),
        object: "chat.completion",
        created: CREATED,
        model: &ctx.model,
        system_fingerprint: "fp_cadre",
        choices: [CompletionChoice {
            index: 0,
            message,
            logprobs: None,
            finish_reason: finish_reason(reply.stop_kind()),
        }],
        usage: ctx.usage.into(),
    })
}

/// A chunk whose delta carries nothing: well-formed, but no content.
pub(crate) fn empty_delta_frame(ctx: &RenderCtx) -> Frame {
    text_delta_frame(ctx, "")
}

/// A chunk whose delta is this text.
pub(crate) fn text_delta_frame(ctx: &RenderCtx, text: &str) -> Frame {
    let id = completion_id(ctx);
    let chunk = Chunk {
        id: &id,
        object: "chat.completion.chunk",
        created: CREATED,
        model: &ctx.model,
        system_fingerprint: "fp_cadre",
        choices: vec![Choice {
            index: 0,
            delta: Delta {
                content: Some(text),
                ..Delta::default()
            },
            logprobs: None,
            finish_reason: None,
        }],
        usage: ctx.include_usage.then_some(None),
    };
    Frame::data(&to_json(&chunk))
}

/// A frame whose data is cut off mid-object, as a broken proxy might deliver.
pub(crate) fn malformed_frame(ctx: &RenderCtx) -> Frame {
    Frame {
        bytes: format!(
            "data: {{\"id\":\"{}\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"trunc\n\n",
            completion_id(ctx)
        ),
        terminal: false,
    }
}

/// The error object the service sends inside an SSE stream when it fails mid-response.
pub(crate) fn error_event_frame() -> Frame {
    Frame::data(&error_body_with(
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        None,
        None,
    ))
}

fn error_body_with(message: &str, kind: &str, param: Option<&str>, code: Option<&str>) -> String {
    serde_json::json!({
        "error": {"message": message, "type": kind, "param": param, "code": code}
    })
    .to_string()
}

/// The service's error body for `status`, with `message` replacing the default text.
pub(crate) fn error_body(status: u16, message: Option<&str>) -> String {
    let (default, kind, code) = match status {
        401 => (
            "Incorrect API key provided: sk-fake. You can find your API key at https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            Some("invalid_api_key"),
        ),
        403 => (
            "You are not allowed to sample from this model",
            "invalid_request_error",
            None,
        ),
        404 => (
            "The model does not exist or you do not have access to it.",
            "invalid_request_error",
            Some("model_not_found"),
        ),
        429 => (
            "Rate limit reached for requests. Please try again later.",
            "requests",
            Some("rate_limit_exceeded"),
        ),
        503 => (
            "The engine is currently overloaded, please try again later.",
            "server_error",
            None,
        ),
        500..=599 => (
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        ),
        _ => ("Invalid request.", "invalid_request_error", None),
    };
    error_body_with(message.unwrap_or(default), kind, None, code)
}

/// HTTP 400 body for a prompt longer than the context window.
pub(crate) fn context_overflow_body(prompt_tokens: u64) -> String {
    let message = format!(
        "This model's maximum context length is 128000 tokens. However, your messages resulted in {} tokens. Please reduce the length of the messages.",
        prompt_tokens.max(128_001)
    );
    error_body_with(
        &message,
        "invalid_request_error",
        Some("messages"),
        Some("context_length_exceeded"),
    )
}

fn to_json<T: Serialize>(value: &T) -> String {
    // Serialising these plain structs cannot fail; fall back to an empty object regardless.
    serde_json::to_string(value).unwrap_or_else(|_| "{}".to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn ctx(include_usage: bool) -> RenderCtx {
        RenderCtx {
            model: "gpt-test".into(),
            seq: 1,
            include_usage,
            usage: Usage {
                input: 10,
                output: 5,
                cache_read: 4,
                cache_write: 0,
            },
        }
    }

    fn json_frames(frames: &[Frame]) -> Vec<Value> {
        frames
            .iter()
            .filter(|f| !f.terminal)
            .map(|f| {
                let data = f.bytes.strip_prefix("data: ").unwrap();
                let data = data.strip_suffix("\n\n").unwrap();
                serde_json::from_str(data).unwrap()
            })
            .collect()
    }

    #[test]
    fn text_reply_exact_bytes() {
        let frames = stream_frames(&Reply::text("Hi there"), &ctx(false));
        let body: String = frames.iter().map(|f| f.bytes.as_str()).collect();
        let head = r#"data: {"id":"chatcmpl-fake000001","object":"chat.completion.chunk","created":1767225600,"model":"gpt-test","system_fingerprint":"fp_cadre","choices":[{"index":0,"delta":"#;
        let expected = [
            r#"{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"content":"Hi"},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"content":" th"},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"content":"ere"},"logprobs":null,"finish_reason":null}]}"#,
            r#"{},"logprobs":null,"finish_reason":"stop"}]}"#,
        ]
        .iter()
        .map(|tail| format!("{head}{tail}\n\n"))
        .collect::<String>()
            + "data: [DONE]\n\n";
        assert_eq!(body, expected);
        assert!(frames.last().unwrap().terminal);
        assert_eq!(frames.iter().filter(|f| f.terminal).count(), 1);
    }

    #[test]
    fn tool_calls_reassemble_and_usage_is_last() {
        let reply = Reply::new()
            .thinking("plan")
            .tool_call("call_1", "read", json!({"path": "a.txt"}))
            .tool_call("call_2", "ls", json!({}));
        let frames = stream_frames(&reply, &ctx(true));
        let chunks = json_frames(&frames);
        let mut args = ["".to_string(), "".to_string()];
        let mut pieces = [0, 0];
        let mut reasoning = String::new();
        for c in &chunks {
            assert!(c.get("usage").is_some(), "usage key present when requested");
            let Some(choice) = c["choices"].get(0) else {
                continue;
            };
            if let Some(r) = choice["delta"]["reasoning_content"].as_str() {
                reasoning.push_str(r);
            }
            if let Some(calls) = choice["delta"]["tool_calls"].as_array() {
                for call in calls {
                    let i = call["index"].as_u64().unwrap() as usize;
                    if let Some(id) = call.get("id") {
                        assert_eq!(id, &json!(["call_1", "call_2"][i]));
                        assert_eq!(call["type"], "function");
                    } else {
                        pieces[i] += 1;
                    }
                    args[i].push_str(call["function"]["arguments"].as_str().unwrap());
                }
            }
        }
        assert_eq!(reasoning, "plan");
        assert_eq!(
            serde_json::from_str::<Value>(&args[0]).unwrap(),
            json!({"path": "a.txt"})
        );
        assert_eq!(serde_json::from_str::<Value>(&args[1]).unwrap(), json!({}));
        assert!(pieces.iter().all(|&n| n >= 2));
        let finish = &chunks[chunks.len() - 2];
        assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(finish["usage"], Value::Null);
        let usage = chunks.last().unwrap();
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(
            usage["usage"],
            json!({"prompt_tokens": 14, "completion_tokens": 5, "total_tokens": 19, "prompt_tokens_details": {"cached_tokens": 4}})
        );
    }

    #[test]
    fn stop_kinds_map() {
        for (stop, reason) in [
            (StopKind::Stop, "stop"),
            (StopKind::ToolUse, "tool_calls"),
            (StopKind::Length, "length"),
            (StopKind::ContentFilter, "content_filter"),
        ] {
            let frames = stream_frames(&Reply::text("x").stop(stop), &ctx(false));
            let chunks = json_frames(&frames);
            assert_eq!(
                chunks.last().unwrap()["choices"][0]["finish_reason"],
                reason
            );
        }
    }

    #[test]
    fn completion_body_shape() {
        let reply = Reply::new()
            .thinking("t")
            .text("hi")
            .tool_call("c", "n", json!({"a": 1}));
        let v: Value = serde_json::from_str(&completion_body(&reply, &ctx(false))).unwrap();
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["choices"][0]["message"]["content"], "hi");
        assert_eq!(v["choices"][0]["message"]["reasoning_content"], "t");
        assert_eq!(
            v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            r#"{"a":1}"#
        );
        assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(v["usage"]["prompt_tokens"], 14);
    }

    #[test]
    fn error_bodies() {
        for status in [400, 401, 403, 404, 429, 500, 502, 503, 418] {
            let v: Value = serde_json::from_str(&error_body(status, None)).unwrap();
            assert!(v["error"]["message"].as_str().unwrap().len() > 5);
            assert!(v["error"]["type"].is_string());
        }
        let v: Value = serde_json::from_str(&error_body(429, Some("slow down"))).unwrap();
        assert_eq!(v["error"]["message"], "slow down");
        assert_eq!(v["error"]["code"], "rate_limit_exceeded");
        let v: Value = serde_json::from_str(&context_overflow_body(5)).unwrap();
        assert_eq!(v["error"]["code"], "context_length_exceeded");
        let v: Value = serde_json::from_str(
            error_event_frame()
                .bytes
                .trim_start_matches("data: ")
                .trim_end(),
        )
        .unwrap();
        assert_eq!(v["error"]["type"], "server_error");
    }

    #[test]
    fn malformed_frame_is_not_json() {
        let f = malformed_frame(&ctx(false));
        let data = f.bytes.strip_prefix("data: ").unwrap().trim_end();
        assert!(serde_json::from_str::<Value>(data).is_err());
        assert!(f.bytes.ends_with("\n\n"));
        assert_eq!(f.bytes.matches('\n').count(), 2);
    }
}
