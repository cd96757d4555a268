//! Captured requests and the wire-format-independent view of their conversation.

use serde_json::Value;

/// Which service's wire format a request used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireApi {
    /// OpenAI Chat Completions (`POST …/chat/completions`).
    OpenAi,
    /// Anthropic Messages (`POST …/v1/messages`).
    Anthropic,
    /// OpenAI Responses (`POST …/responses`).
    OpenAiResponses,
}

/// One HTTP request as the server received it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    pub api: WireApi,
    /// Request path without the query string.
    pub path: String,
    /// Header names lower-cased, values as sent, in order.
    pub headers: Vec<(String, String)>,
    /// The JSON body, or `Value::Null` if the body was not JSON.
    pub body: Value,
}

/// A reasoning item a Responses client sent back in `input`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReasoningItem {
    pub id: String,
    pub encrypted_content: Option<String>,
    /// The summary text this server sealed into `encrypted_content`, when that is content it
    /// issued for this item id and it came back unchanged.
    pub sealed_text: Option<String>,
}

/// The role of a message in the normalised conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    System,
    User,
    Assistant,
    /// An OpenAI `role: "tool"` message or Responses `function_call_output` item; Anthropic
    /// results stay inside user messages.
    Tool,
}

/// A message reduced to what scripting and checks care about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Turn {
    pub role: Role,
    /// Authored text parts (not tool results, not thinking).
    pub texts: Vec<String>,
    /// Ids of tool calls made in this (assistant) message.
    pub tool_calls: Vec<String>,
    /// `(tool call id, result text)` answered in this message.
    pub tool_results: Vec<(String, String)>,
}

impl Turn {
    fn new(role: Role) -> Turn {
        Turn {
            role,
            texts: Vec::new(),
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
        }
    }

    fn joined_text(&self) -> Option<String> {
        let texts: Vec<&str> = self
            .texts
            .iter()
            .map(String::as_str)
            .filter(|t| !t.is_empty())
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    }
}

impl RecordedRequest {
    /// The normalised conversation: system first (if any), then messages in order.
    pub(crate) fn turns(&self) -> Vec<Turn> {
        match self.api {
            WireApi::OpenAi => openai_turns(&self.body),
            WireApi::Anthropic => anthropic_turns(&self.body),
            WireApi::OpenAiResponses => responses_turns(&self.body),
        }
    }

    /// Text of the first user message that has authored text (tool results do not count).
    pub fn first_user_text(&self) -> Option<String> {
        self.turns()
            .iter()
            .filter(|t| t.role == Role::User)
            .find_map(Turn::joined_text)
    }

    /// Text of the last user message that has authored text. A trailing message holding
    /// only tool results is skipped, so this is the prompt the model is currently working on.
    pub fn last_user_text(&self) -> Option<String> {
        self.turns()
            .iter()
            .rev()
            .filter(|t| t.role == Role::User)
            .find_map(Turn::joined_text)
    }

    /// All system (and OpenAI developer) text, joined with newlines; empty if none.
    pub fn system_text(&self) -> String {
        self.turns()
            .iter()
            .filter(|t| t.role == Role::System)
            .filter_map(Turn::joined_text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Number of assistant messages in the request.
    pub fn assistant_turns(&self) -> usize {
        self.turns()
            .iter()
            .filter(|t| t.role == Role::Assistant)
            .count()
    }

    /// Ids of every tool call made by the assistant, in order.
    pub fn tool_call_ids(&self) -> Vec<String> {
        self.turns()
            .into_iter()
            .flat_map(|t| t.tool_calls)
            .collect()
    }

    /// Every tool result as `(tool call id, text)`, in order.
    pub fn tool_results(&self) -> Vec<(String, String)> {
        self.turns()
            .into_iter()
            .flat_map(|t| t.tool_results)
            .collect()
    }

    /// Every piece of text in the conversation: system, user, assistant and tool results.
    pub fn all_text(&self) -> Vec<String> {
        self.turns()
            .into_iter()
            .flat_map(|t| {
                t.texts
                    .into_iter()
                    .chain(t.tool_results.into_iter().map(|(_, text)| text))
            })
            .collect()
    }

    /// The reasoning items in a Responses request's `input`, in order (none for other formats).
    pub fn reasoning_items(&self) -> Vec<ReasoningItem> {
        if self.api != WireApi::OpenAiResponses {
            return Vec::new();
        }
        let Some(items) = self.body.get("input").and_then(Value::as_array) else {
            return Vec::new();
        };
        items
            .iter()
            .filter(|item| item.get("type").and_then(Value::as_str) == Some("reasoning"))
            .map(|item| {
                let id = str_field(item, "id").to_string();
                let encrypted_content = item
                    .get("encrypted_content")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let sealed_text = encrypted_content
                    .as_deref()
                    .and_then(crate::reasoning::decrypt)
                    .filter(|(sealed_id, _)| *sealed_id == id)
                    .map(|(_, text)| text);
                ReasoningItem {
                    id,
                    encrypted_content,
                    sealed_text,
                }
            })
            .collect()
    }

    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The requested model id, or `""` if absent.
    pub fn model(&self) -> &str {
        self.body.get("model").and_then(Value::as_str).unwrap_or("")
    }

    /// Whether the client asked for a streamed response.
    pub fn is_stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    /// A one-line description used in "no scripted reply matches" errors.
    pub fn summary(&self) -> String {
        let api = match self.api {
            WireApi::OpenAi => "openai",
            WireApi::Anthropic => "anthropic",
            WireApi::OpenAiResponses => "openai-responses",
        };
        let show = |s: Option<String>| match s {
            Some(s) => format!("{:?}", truncate(&s, 80)),
            None => "none".to_string(),
        };
        let results: Vec<String> = self.tool_results().into_iter().map(|(id, _)| id).collect();
        format!(
            "api={api} path={} model={:?} first_user={} last_user={} assistant_turns={} tool_results=[{}] system={:?}",
            self.path,
            self.model(),
            show(self.first_user_text()),
            show(self.last_user_text()),
            self.assistant_turns(),
            results.join(","),
            truncate(&self.system_text(), 60),
        )
    }
}

/// Cuts `s` to at most `max` characters, marking the cut.
fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// Text of a content value that is a string or an array of typed parts/blocks.
fn content_texts(content: &Value) -> Vec<String> {
    match content {
        Value::String(s) => vec![s.clone()],
        Value::Array(parts) => parts
            .iter()
            // Chat Completions and Anthropic say `text`; Responses `input_text` / `output_text`.
            .filter(|p| {
                matches!(
                    p.get("type").and_then(Value::as_str),
                    Some("text" | "input_text" | "output_text")
                )
            })
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn openai_turns(body: &Value) -> Vec<Turn> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Vec::new();
    };
    messages
        .iter()
        .filter_map(|m| {
            let content = m.get("content").unwrap_or(&Value::Null);
            let turn = match str_field(m, "role") {
                "system" | "developer" => Turn {
                    texts: content_texts(content),
                    ..Turn::new(Role::System)
                },
                "user" => Turn {
                    texts: content_texts(content),
                    ..Turn::new(Role::User)
                },
                "assistant" => Turn {
                    texts: content_texts(content),
                    tool_calls: m
                        .get("tool_calls")
                        .and_then(Value::as_array)
                        .map(|calls| {
                            calls
                                .iter()
                                .map(|c| str_field(c, "id").to_string())
                                .collect()
                        })
                        .unwrap_or_default(),
                    ..Turn::new(Role::Assistant)
                },
                "tool" => Turn {
                    tool_results: vec![(
                        str_field(m, "tool_call_id").to_string(),
                        content_texts(content).join("\n"),
                    )],
                    ..Turn::new(Role::Tool)
                },
                _ => return None,
            };
            Some(turn)
        })
        .collect()
}

fn anthropic_turns(body: &Value) -> Vec<Turn> {
    let mut turns = Vec::new();
    if let Some(system) = body.get("system") {
        let texts = content_texts(system);
        if !texts.is_empty() {
            turns.push(Turn {
                texts,
                ..Turn::new(Role::System)
            });
        }
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return turns;
    };
    for m in messages {
        let mut turn = match str_field(m, "role") {
            "user" => Turn::new(Role::User),
            "assistant" => Turn::new(Role::Assistant),
            _ => continue,
        };
        match m.get("content") {
            Some(Value::String(s)) => turn.texts.push(s.clone()),
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    match str_field(block, "type") {
                        "text" => turn.texts.push(str_field(block, "text").to_string()),
                        "tool_use" => turn.tool_calls.push(str_field(block, "id").to_string()),
                        "tool_result" => turn.tool_results.push((
                            str_field(block, "tool_use_id").to_string(),
                            content_texts(block.get("content").unwrap_or(&Value::Null)).join("\n"),
                        )),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        turns.push(turn);
    }
    turns
}

/// Responses input: `instructions` as system text, then the `input` string or items. The
/// assistant-side items of one turn (reasoning, output messages, function calls) arrive one
/// after another and form one assistant message, as in the other formats.
fn responses_turns(body: &Value) -> Vec<Turn> {
    let mut turns = Vec::new();
    if let Some(Value::String(instructions)) = body.get("instructions") {
        turns.push(Turn {
            texts: vec![instructions.clone()],
            ..Turn::new(Role::System)
        });
    }
    let items = match body.get("input") {
        Some(Value::String(text)) => {
            turns.push(Turn {
                texts: vec![text.clone()],
                ..Turn::new(Role::User)
            });
            return turns;
        }
        Some(Value::Array(items)) => items,
        _ => return turns,
    };
    // The assistant message being assembled from consecutive assistant-side items.
    let mut assistant: Option<Turn> = None;
    for item in items {
        let kind = item.get("type").and_then(Value::as_str);
        let role = str_field(item, "role");
        let content = item.get("content").unwrap_or(&Value::Null);
        let assistant_side = matches!(kind, Some("reasoning" | "function_call"))
            || (role == "assistant" && matches!(kind, None | Some("message")));
        if assistant_side {
            let turn = assistant.get_or_insert_with(|| Turn::new(Role::Assistant));
            match kind {
                Some("function_call") => turn.tool_calls.push(str_field(item, "call_id").into()),
                Some("reasoning") => {}
                _ => turn.texts.extend(content_texts(content)),
            }
            continue;
        }
        turns.extend(assistant.take());
        let turn = match (kind, role) {
            (Some("function_call_output"), _) => Turn {
                tool_results: vec![(
                    str_field(item, "call_id").to_string(),
                    content_texts(item.get("output").unwrap_or(&Value::Null)).join("\n"),
                )],
                ..Turn::new(Role::Tool)
            },
            (None | Some("message"), "system" | "developer") => Turn {
                texts: content_texts(content),
                ..Turn::new(Role::System)
            },
            (None | Some("message"), "user") => Turn {
                texts: content_texts(content),
                ..Turn::new(Role::User)
            },
            _ => continue,
        };
        turns.push(turn);
    }
    turns.extend(assistant);
    turns
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn openai(body: Value) -> RecordedRequest {
        RecordedRequest {
            api: WireApi::OpenAi,
            path: "/v1/chat/completions".into(),
            headers: vec![("authorization".into(), "Bearer k".into())],
            body,
        }
    }

    pub(crate) fn anthropic(body: Value) -> RecordedRequest {
        RecordedRequest {
            api: WireApi::Anthropic,
            path: "/v1/messages".into(),
            headers: vec![("x-api-key".into(), "k".into())],
            body,
        }
    }

    fn openai_conversation() -> RecordedRequest {
        openai(json!({
            "model": "gpt-x",
            "stream": true,
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
                {"role": "user", "content": "read a"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "A-CONTENTS"},
                {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "B"}]},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": [{"type": "text", "text": "now b"}, {"type": "image_url", "image_url": {"url": "x"}}]}
            ]
        }))
    }

    fn anthropic_conversation() -> RecordedRequest {
        anthropic(json!({
            "model": "claude-x",
            "system": [{"type": "text", "text": "You are terse."}],
            "messages": [
                {"role": "user", "content": "read a"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "secret", "signature": "s"},
                    {"type": "text", "text": "reading"},
                    {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "A-CONTENTS"}]}
                ]}
            ]
        }))
    }

    #[test]
    fn openai_view() {
        let r = openai_conversation();
        assert_eq!(r.first_user_text().as_deref(), Some("read a"));
        assert_eq!(r.last_user_text().as_deref(), Some("now b"));
        assert_eq!(r.system_text(), "You are terse.\nUse tools.");
        assert_eq!(r.assistant_turns(), 2);
        assert_eq!(r.tool_call_ids(), vec!["call_1", "call_2"]);
        assert_eq!(
            r.tool_results(),
            vec![
                ("call_1".to_string(), "A-CONTENTS".to_string()),
                ("call_2".to_string(), "B".to_string())
            ]
        );
        assert!(r.all_text().contains(&"done".to_string()));
        assert_eq!(r.model(), "gpt-x");
        assert!(r.is_stream());
    }

    #[test]
    fn anthropic_view() {
        let r = anthropic_conversation();
        assert_eq!(r.first_user_text().as_deref(), Some("read a"));
        // The trailing tool-result-only message has no authored text.
        assert_eq!(r.last_user_text().as_deref(), Some("read a"));
        assert_eq!(r.system_text(), "You are terse.");
        assert_eq!(r.assistant_turns(), 1);
        assert_eq!(r.tool_call_ids(), vec!["toolu_1"]);
        assert_eq!(
            r.tool_results(),
            vec![("toolu_1".to_string(), "A-CONTENTS".to_string())]
        );
        // Thinking is not text.
        assert!(!r.all_text().iter().any(|t| t.contains("secret")));
        assert!(!r.is_stream());
    }

    fn responses(body: Value) -> RecordedRequest {
        RecordedRequest {
            api: WireApi::OpenAiResponses,
            path: "/v1/responses".into(),
            headers: Vec::new(),
            body,
        }
    }

    #[test]
    fn responses_view() {
        let sealed = crate::reasoning::encrypt("rs_1", "plan the read");
        let r = responses(json!({
            "model": "gpt-r",
            "stream": true,
            "input": [
                {"role": "developer", "content": "You are terse."},
                {"role": "user", "content": [{"type": "input_text", "text": "read a"}]},
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan the read"}], "encrypted_content": sealed},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "reading"}]},
                {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{}"},
                {"type": "function_call", "call_id": "call_2", "name": "read", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "A-CONTENTS"},
                {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "B"}]},
                {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAAABforged"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
                {"type": "item_reference", "id": "x"},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "now b"}]}
            ]
        }));
        assert_eq!(r.system_text(), "You are terse.");
        assert_eq!(r.first_user_text().as_deref(), Some("read a"));
        assert_eq!(r.last_user_text().as_deref(), Some("now b"));
        // Reasoning, message and calls of one turn are one assistant message.
        assert_eq!(r.assistant_turns(), 2);
        assert_eq!(r.tool_call_ids(), vec!["call_1", "call_2"]);
        assert_eq!(
            r.tool_results(),
            vec![
                ("call_1".to_string(), "A-CONTENTS".to_string()),
                ("call_2".to_string(), "B".to_string())
            ]
        );
        assert!(!r.all_text().iter().any(|t| t.contains("plan the read")));
        let reasoning = r.reasoning_items();
        assert_eq!(reasoning.len(), 2);
        assert_eq!(reasoning[0].sealed_text.as_deref(), Some("plan the read"));
        assert_eq!(reasoning[1].id, "rs_2");
        assert_eq!(reasoning[1].sealed_text, None);
        assert!(r.summary().contains("api=openai-responses"));
        // Only Responses requests carry reasoning items.
        assert!(openai(r.body.clone()).reasoning_items().is_empty());

        let r = responses(json!({"instructions": "sys", "input": "just this"}));
        assert_eq!(r.system_text(), "sys");
        assert_eq!(r.first_user_text().as_deref(), Some("just this"));
        assert_eq!(r.assistant_turns(), 0);
    }

    #[test]
    fn anthropic_string_system_and_string_tool_result() {
        let r = anthropic(json!({
            "system": "sys",
            "messages": [{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": "plain"},
                {"type": "text", "text": "and more"}
            ]}]
        }));
        assert_eq!(r.system_text(), "sys");
        assert_eq!(
            r.tool_results(),
            vec![("t".to_string(), "plain".to_string())]
        );
        assert_eq!(r.last_user_text().as_deref(), Some("and more"));
    }

    #[test]
    fn malformed_bodies_yield_empty_views() {
        for body in [
            Value::Null,
            json!("text"),
            json!({"messages": 3}),
            json!({"messages": [1, {"role": 2}, {"role": "user", "content": 5}]}),
            json!({"input": [1, {"role": 2}, {"role": "user", "content": 5}]}),
        ] {
            for r in [
                openai(body.clone()),
                anthropic(body.clone()),
                responses(body),
            ] {
                assert_eq!(r.first_user_text(), None);
                assert_eq!(r.last_user_text(), None);
                assert_eq!(r.system_text(), "");
                assert_eq!(r.assistant_turns(), 0);
                assert!(r.tool_call_ids().is_empty());
                assert!(r.tool_results().is_empty());
                assert_eq!(r.model(), "");
                let _ = r.summary();
            }
        }
    }

    #[test]
    fn header_lookup_is_case_insensitive() {
        let r = openai(json!({}));
        assert_eq!(r.header("Authorization"), Some("Bearer k"));
        assert_eq!(r.header("x-missing"), None);
    }

    #[test]
    fn summary_truncates_long_text() {
        let long = "x".repeat(500);
        let r = openai(json!({"model": "m", "messages": [{"role": "user", "content": long}]}));
        let s = r.summary();
        assert!(s.contains("api=openai"));
        assert!(s.contains('…'));
        assert!(s.len() < 400);
        assert_eq!(truncate("héllo", 2), "hé…");
        assert_eq!(truncate("hé", 2), "hé");
    }
}
