//! Pi's summarisation prompts, the conversation rendered as text for them, and the file lists
//! a summary carries.
//!
//! The conversation is sent as one user message of text (`[User]: …`, `[Assistant]: …`,
//! `[Tool result]: …`) inside `<conversation>` tags, so the model summarises it instead of
//! continuing it. The wording is Pi's, so a summary reads the same whichever tool wrote it.

use std::collections::BTreeSet;

use cadre_protocol::{ContentBlock, Message, UserContent};
use serde_json::{Value, json};

/// System prompt of every summarisation request.
pub const SUMMARIZATION_SYSTEM_PROMPT: &str = "You are a context summarization assistant. Your task is to read a conversation between a user and an AI coding assistant, then produce a structured summary following the exact format specified.

Do NOT continue the conversation. Do NOT respond to any questions in the conversation. ONLY output the structured summary.";

/// The first summary of a conversation.
pub const SUMMARIZATION_PROMPT: &str = "The messages above are a conversation to summarize. Create a structured context checkpoint summary that another LLM will use to continue the work.

Use this EXACT format:

## Goal
[What is the user trying to accomplish? Can be multiple items if the session covers different tasks.]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned by user]
- [Or \"(none)\" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Current work]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [Ordered list of what should happen next]

## Critical Context
- [Any data, examples, or references needed to continue]
- [Or \"(none)\" if not applicable]

Keep each section concise. Preserve exact file paths, function names, and error messages.";

/// A later summary: the previous one updated with the newly summarised messages.
pub const UPDATE_SUMMARIZATION_PROMPT: &str = "The messages above are NEW conversation messages to incorporate into the existing summary provided in <previous-summary> tags.

Update the existing structured summary with new information. RULES:
- PRESERVE all existing information from the previous summary
- ADD new progress, decisions, and context from the new messages
- UPDATE the Progress section: move items from \"In Progress\" to \"Done\" when completed
- UPDATE \"Next Steps\" based on what was accomplished
- PRESERVE exact file paths, function names, and error messages
- If something is no longer relevant, you may remove it

Use this EXACT format:

## Goal
[Preserve existing goals, add new ones if the task expanded]

## Constraints & Preferences
- [Preserve existing, add new ones discovered]

## Progress
### Done
- [x] [Include previously done items AND newly completed items]

### In Progress
- [ ] [Current work - update based on progress]

### Blocked
- [Current blockers - remove if resolved]

## Key Decisions
- **[Decision]**: [Brief rationale] (preserve all previous, add new)

## Next Steps
1. [Update based on current state]

## Critical Context
- [Preserve important context, add new if needed]

Keep each section concise. Preserve exact file paths, function names, and error messages.";

/// The part of a turn cut off before the kept part (a split turn).
pub const TURN_PREFIX_SUMMARIZATION_PROMPT: &str =
    "This is the PREFIX of a turn that was too large to keep. The SUFFIX (recent work) is retained.

Summarize the prefix to provide context for the retained suffix:

## Original Request
[What did the user ask for in this turn?]

## Early Progress
- [Key decisions and work done in the prefix]

## Context for Suffix
- [Information needed to understand the retained recent work]

Be concise. Focus on what's needed to understand the kept suffix.";

/// Longest tool result rendered into a summarisation request, in characters.
const TOOL_RESULT_MAX_CHARS: usize = 2000;

/// The text of a summarisation request for the history part.
pub fn history_prompt(
    conversation: &[Message],
    previous_summary: Option<&str>,
    custom_instructions: Option<&str>,
) -> String {
    let mut base = if previous_summary.is_some() {
        UPDATE_SUMMARIZATION_PROMPT.to_string()
    } else {
        SUMMARIZATION_PROMPT.to_string()
    };
    if let Some(custom) = custom_instructions.filter(|c| !c.trim().is_empty()) {
        base.push_str("\n\nAdditional focus: ");
        base.push_str(custom);
    }
    let mut text = format!(
        "<conversation>\n{}\n</conversation>\n\n",
        serialize_conversation(conversation)
    );
    if let Some(previous) = previous_summary {
        text.push_str(&format!(
            "<previous-summary>\n{previous}\n</previous-summary>\n\n"
        ));
    }
    text.push_str(&base);
    text
}

/// The text of a summarisation request for a split turn's prefix.
pub fn turn_prefix_prompt(prefix: &[Message]) -> String {
    format!(
        "<conversation>\n{}\n</conversation>\n\n{TURN_PREFIX_SUMMARIZATION_PROMPT}",
        serialize_conversation(prefix)
    )
}

/// A history summary and a turn-prefix summary as one (Pi's layout).
pub fn merge_split_turn(history: &str, turn_prefix: &str) -> String {
    format!("{history}\n\n---\n\n**Turn Context (split turn):**\n\n{turn_prefix}")
}

fn concat_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn user_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(t) => t.clone(),
        UserContent::Blocks(blocks) => concat_text(blocks),
    }
}

fn truncate_for_summary(text: &str) -> String {
    let total = text.chars().count();
    if total <= TOOL_RESULT_MAX_CHARS {
        return text.to_string();
    }
    let kept: String = text.chars().take(TOOL_RESULT_MAX_CHARS).collect();
    format!(
        "{kept}\n\n[... {} more characters truncated]",
        total - TOOL_RESULT_MAX_CHARS
    )
}

fn render_call(name: &str, arguments: &Value) -> String {
    let args = match arguments {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    };
    format!("{name}({args})")
}

/// The conversation as plain text, one block per message part (Pi's `serializeConversation`).
/// Tool results are cut to 2000 characters: the summary does not need them whole.
pub fn serialize_conversation(messages: &[Message]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for message in messages {
        match message {
            Message::User(u) => {
                let text = user_text(&u.content);
                if !text.is_empty() {
                    parts.push(format!("[User]: {text}"));
                }
            }
            Message::Custom(c) => {
                let text = user_text(&c.content);
                if !text.is_empty() {
                    parts.push(format!("[User]: {text}"));
                }
            }
            Message::Assistant(a) => {
                let mut texts = Vec::new();
                let mut thinking = Vec::new();
                let mut calls = Vec::new();
                for block in &a.content {
                    match block {
                        ContentBlock::Text { text } => texts.push(text.as_str()),
                        ContentBlock::Thinking { thinking: t, .. } => thinking.push(t.as_str()),
                        ContentBlock::ToolCall(c) => calls.push(render_call(&c.name, &c.arguments)),
                        ContentBlock::Image { .. } => {}
                    }
                }
                if !thinking.is_empty() {
                    parts.push(format!("[Assistant thinking]: {}", thinking.join("\n")));
                }
                if !texts.is_empty() {
                    parts.push(format!("[Assistant]: {}", texts.join("\n")));
                }
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            // As the model saw it (Pi serializes the converted conversation).
            Message::BashExecution(b) if !b.exclude_from_context => {
                parts.push(format!("[User]: {}", b.to_text()));
            }
            Message::BashExecution(_) => {}
            Message::ToolResult(r) => {
                let text = concat_text(&r.content);
                if !text.is_empty() {
                    parts.push(format!("[Tool result]: {}", truncate_for_summary(&text)));
                }
            }
        }
    }
    parts.join("\n\n")
}

/// Files the summarised part read and changed, carried from summary to summary (Pi's
/// `details: {readFiles, modifiedFiles}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOps {
    read: BTreeSet<String>,
    modified: BTreeSet<String>,
}

impl FileOps {
    /// Start from a previous compaction's `details`, when it has Pi's file lists.
    pub fn from_details(details: Option<&Value>) -> FileOps {
        let mut ops = FileOps::default();
        let list = |key: &str| -> Vec<String> {
            details
                .and_then(|d| d.get(key))
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        ops.read.extend(list("readFiles"));
        ops.modified.extend(list("modifiedFiles"));
        ops
    }

    /// Add the paths of the `read`, `write` and `edit` calls of `messages`.
    pub fn add_calls(&mut self, messages: &[Message]) {
        for message in messages {
            let Message::Assistant(a) = message else {
                continue;
            };
            for call in a.tool_calls() {
                let Some(path) = call.arguments.get("path").and_then(Value::as_str) else {
                    continue;
                };
                match call.name.as_str() {
                    "read" => {
                        self.read.insert(path.to_string());
                    }
                    "write" | "edit" => {
                        self.modified.insert(path.to_string());
                    }
                    _ => {}
                }
            }
        }
    }

    /// Files only read (never changed), and files changed; both sorted.
    pub fn lists(&self) -> (Vec<String>, Vec<String>) {
        let read = self.read.difference(&self.modified).cloned().collect();
        (read, self.modified.iter().cloned().collect())
    }

    /// Pi's `details` object.
    pub fn details(&self) -> Value {
        let (read, modified) = self.lists();
        json!({"readFiles": read, "modifiedFiles": modified})
    }

    /// The lists as the tags Pi appends to a summary (empty when there are none).
    pub fn summary_suffix(&self) -> String {
        let (read, modified) = self.lists();
        let mut sections = Vec::new();
        if !read.is_empty() {
            sections.push(format!("<read-files>\n{}\n</read-files>", read.join("\n")));
        }
        if !modified.is_empty() {
            sections.push(format!(
                "<modified-files>\n{}\n</modified-files>",
                modified.join("\n")
            ));
        }
        if sections.is_empty() {
            String::new()
        } else {
            format!("\n\n{}", sections.join("\n\n"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cadre_protocol::{AssistantMessage, ToolCall, ToolResultMessage};

    fn assistant(blocks: Vec<ContentBlock>) -> Message {
        let mut a = AssistantMessage::empty("api", "p", "m");
        a.content = blocks;
        Message::Assistant(a)
    }

    fn call(name: &str, args: Value) -> ContentBlock {
        ContentBlock::ToolCall(ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args,
        })
    }

    #[test]
    fn conversation_renders_like_pis() {
        let m = vec![
            Message::user("fix it"),
            assistant(vec![
                ContentBlock::Thinking {
                    thinking: "look first".into(),
                    signature: None,
                    redacted: false,
                },
                ContentBlock::text("Reading."),
                call("read", json!({"path": "src/a.rs", "offset": 1})),
                call("bash", json!({"command": "ls"})),
            ]),
            Message::ToolResult(ToolResultMessage {
                tool_call_id: "c".into(),
                tool_name: "read".into(),
                content: vec![ContentBlock::text("y".repeat(2005))],
                details: None,
                is_error: false,
                timestamp: 0,
            }),
        ];
        let text = serialize_conversation(&m);
        let parts: Vec<&str> = text.split("\n\n").collect();
        assert_eq!(parts[0], "[User]: fix it");
        assert_eq!(parts[1], "[Assistant thinking]: look first");
        assert_eq!(parts[2], "[Assistant]: Reading.");
        // Arguments in the order the model wrote them, as Pi (JavaScript) keeps them.
        assert_eq!(
            parts[3],
            "[Assistant tool calls]: read(path=\"src/a.rs\", offset=1); bash(command=\"ls\")"
        );
        assert!(parts[4].starts_with("[Tool result]: yyyy"));
        assert_eq!(parts[5], "[... 5 more characters truncated]");
    }

    #[test]
    fn prompts_carry_previous_summary_and_custom_instructions() {
        let m = vec![Message::user("hello")];
        let first = history_prompt(&m, None, None);
        assert!(first.starts_with("<conversation>\n[User]: hello\n</conversation>\n\n"));
        assert!(first.ends_with(SUMMARIZATION_PROMPT));
        let next = history_prompt(&m, Some("OLD"), Some("Focus on tests"));
        assert!(next.contains("<previous-summary>\nOLD\n</previous-summary>\n\n"));
        assert!(next.contains(UPDATE_SUMMARIZATION_PROMPT));
        assert!(next.ends_with("\n\nAdditional focus: Focus on tests"));
        assert!(turn_prefix_prompt(&m).ends_with(TURN_PREFIX_SUMMARIZATION_PROMPT));
    }

    #[test]
    fn file_lists_carry_over_and_exclude_changed_files_from_reads() {
        let previous = json!({"readFiles": ["old.rs", "b.rs"], "modifiedFiles": ["m.rs"]});
        let mut ops = FileOps::from_details(Some(&previous));
        ops.add_calls(&[assistant(vec![
            call("read", json!({"path": "a.rs"})),
            call("edit", json!({"path": "b.rs"})),
            call("write", json!({"path": "c.rs"})),
            call("grep", json!({"path": "ignored"})),
        ])]);
        assert_eq!(
            ops.details(),
            json!({"readFiles": ["a.rs", "old.rs"], "modifiedFiles": ["b.rs", "c.rs", "m.rs"]})
        );
        assert_eq!(
            ops.summary_suffix(),
            "\n\n<read-files>\na.rs\nold.rs\n</read-files>\n\n<modified-files>\nb.rs\nc.rs\nm.rs\n</modified-files>"
        );
        assert_eq!(FileOps::default().summary_suffix(), "");
    }
}
