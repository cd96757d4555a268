//! `session/load`: a session's history as the updates an editor would have seen live.

use std::collections::HashMap;
use std::path::Path;

use cadre_protocol::{ContentBlock, Message, UserContent};
use serde_json::{Value, json};

use super::tools;
use super::view::{chunk, tail, tool_call_start};

/// The updates that replay `messages`: user and agent text as chunks, reasoning as thought
/// chunks, each tool call announced and then completed with its result.
pub fn history(messages: &[Message], cwd: &Path) -> Vec<Value> {
    let results: HashMap<&str, &cadre_protocol::ToolResultMessage> = messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.tool_call_id.as_str(), r)),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for message in messages {
        match message {
            Message::User(user) => match &user.content {
                UserContent::Text(text) => out.push(chunk("user_message_chunk", text)),
                UserContent::Blocks(blocks) => {
                    for block in blocks {
                        match block {
                            ContentBlock::Text { text } => {
                                out.push(chunk("user_message_chunk", text));
                            }
                            ContentBlock::Image { data, mime_type } => out.push(json!({
                                "sessionUpdate": "user_message_chunk",
                                "content": {"type": "image", "data": data, "mimeType": mime_type},
                            })),
                            _ => {}
                        }
                    }
                }
            },
            Message::Assistant(assistant) => {
                for block in &assistant.content {
                    match block {
                        ContentBlock::Text { text } if !text.is_empty() => {
                            out.push(chunk("agent_message_chunk", text));
                        }
                        ContentBlock::Thinking {
                            thinking,
                            redacted: false,
                            ..
                        } if !thinking.is_empty() => {
                            out.push(chunk("agent_thought_chunk", thinking));
                        }
                        ContentBlock::ToolCall(call) => {
                            let result = results.get(call.id.as_str());
                            let status = match result {
                                Some(r) if r.is_error => "failed",
                                Some(_) => "completed",
                                None => "pending",
                            };
                            let mut update =
                                tool_call_start(&call.id, &call.name, &call.arguments, cwd, status);
                            if let Some(result) = result {
                                let text: Vec<&str> = result
                                    .content
                                    .iter()
                                    .filter_map(|b| match b {
                                        ContentBlock::Text { text } => Some(text.as_str()),
                                        _ => None,
                                    })
                                    .collect();
                                if let Some(content) = update["content"].as_array_mut() {
                                    content.push(tools::text_content(tail(&text.join("\n"))));
                                }
                                if let Some(meta) = tools::refusal_meta(result.details.as_ref()) {
                                    update["_meta"] = meta;
                                }
                            }
                            out.push(update);
                        }
                        _ => {}
                    }
                }
            }
            // Task notices and other injected messages are context for the model, not part of
            // the conversation the editor shows.
            Message::ToolResult(_) | Message::Custom(_) | Message::BashExecution(_) => {}
        }
    }
    out
}
