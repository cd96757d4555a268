//! The conversation as the interactive mode shows it: entries built from the root agent's
//! events as they stream, or from a session's messages when one is resumed.
//!
//! Only what a person reads is kept, and each entry is capped: a tool that prints a gigabyte
//! or a model that streams without end costs the screen a bounded amount. The session file,
//! not this, is the conversation's record.

use cadre_protocol::redact::StreamRedactor;
use cadre_protocol::{AgentEvent, AssistantMessageEvent, ContentBlock, Message, UserContent};
use serde_json::Value;

/// The most bytes of one entry's text that are kept (a streamed answer, a tool's output).
const ENTRY_CAP: usize = 64 * 1024;
/// The most entries kept; older ones are dropped from the screen (not from the session).
const MAX_ENTRIES: usize = 2_000;

/// One thing on the conversation screen.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// What the person typed (or a resumed session's user message).
    User(String),
    /// A reply of the model: its thinking and text, in order.
    Assistant {
        thinking: String,
        text: String,
        /// Still streaming.
        open: bool,
    },
    /// A tool call and, once it ended, its result.
    Tool(ToolEntry),
    /// Something cadre says: a task's end, a notice, a command's output.
    Note { kind: NoteKind, text: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    pub call_id: String,
    pub name: String,
    /// The arguments in one short line.
    pub summary: String,
    /// `None` while it runs.
    pub result: Option<String>,
    pub is_error: bool,
    /// An edit's unified diff.
    pub diff: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    Info,
    /// A task ended or reported.
    Task,
    Warning,
    Error,
}

#[derive(Debug, Default)]
pub struct Transcript {
    pub entries: Vec<Entry>,
    /// Bumped on every change, so the view knows when to redraw.
    pub version: u64,
    /// Prompts shown when they were typed, whose own `message_end` is still to come (and must
    /// not show them twice).
    echoes: std::collections::VecDeque<String>,
    /// The open reply's text and thinking as they stream: never a registered secret on the
    /// screen, not even its first characters while the rest is on its way.
    stream_text: StreamRedactor,
    stream_thinking: StreamRedactor,
}

impl Transcript {
    /// The entries of a resumed session's messages.
    pub fn from_messages(messages: &[Message]) -> Transcript {
        let mut t = Transcript::default();
        for message in messages {
            t.message_end(message);
        }
        t
    }

    pub fn note(&mut self, kind: NoteKind, text: impl Into<String>) {
        self.push(Entry::Note {
            kind,
            text: capped(text.into()),
        });
    }

    pub fn user(&mut self, text: &str) {
        self.push(Entry::User(capped(text.to_string())));
    }

    /// A steer taken back before it was delivered (Esc): it leaves the conversation, where
    /// it was shown when typed, since the agent never got it.
    pub fn withdraw(&mut self, text: &str) {
        let Some(at) = self.echoes.iter().rposition(|e| e == text) else {
            return;
        };
        self.echoes.remove(at);
        if let Some(i) = self
            .entries
            .iter()
            .rposition(|e| matches!(e, Entry::User(t) if t == text))
        {
            self.entries.remove(i);
        }
        self.version += 1;
    }

    /// A prompt the person just sent (or steered with): shown now, and not again when the
    /// agent records it.
    pub fn typed(&mut self, text: &str) {
        self.user(text);
        self.echoes.push_back(text.to_string());
        if self.echoes.len() > 64 {
            self.echoes.pop_front();
        }
    }

    fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
        if self.entries.len() > MAX_ENTRIES {
            let over = self.entries.len() - MAX_ENTRIES;
            self.entries.drain(..over);
        }
        self.version += 1;
    }

    /// Take in one event of the root agent.
    pub fn apply(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageStart {
                message: Message::Assistant(_),
            } => {
                self.stream_text = StreamRedactor::default();
                self.stream_thinking = StreamRedactor::default();
                self.push(Entry::Assistant {
                    thinking: String::new(),
                    text: String::new(),
                    open: true,
                });
            }
            AgentEvent::MessageUpdate {
                assistant_message_event,
                ..
            } => self.stream(assistant_message_event),
            AgentEvent::MessageEnd { message } => self.message_end_live(message),
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => self.tool_start(tool_call_id, tool_name, args),
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } => self.tool_end(tool_call_id, result, *is_error),
            AgentEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => self.note(
                NoteKind::Warning,
                format!(
                    "retry {attempt}/{max_attempts} in {:.1} s: {error_message}",
                    *delay_ms as f64 / 1000.0
                ),
            ),
            AgentEvent::CompactionEnd {
                result: Some(result),
                ..
            } => self.note(
                NoteKind::Info,
                format!("context compacted ({} tokens before)", result.tokens_before),
            ),
            AgentEvent::CompactionEnd {
                error_message: Some(e),
                ..
            } => self.note(NoteKind::Error, format!("compaction failed: {e}")),
            // A run that ended without closing its reply (aborted before the message ended).
            AgentEvent::AgentEnd { .. } => {
                if let Some(Entry::Assistant { open, .. }) = self.entries.last_mut()
                    && *open
                {
                    *open = false;
                    self.version += 1;
                }
            }
            _ => {}
        }
    }

    /// The open reply, if the last entry is one.
    fn open_reply(&mut self) -> Option<(&mut String, &mut String)> {
        match self.entries.last_mut() {
            Some(Entry::Assistant {
                thinking,
                text,
                open: true,
            }) => Some((thinking, text)),
            _ => None,
        }
    }

    fn stream(&mut self, event: &AssistantMessageEvent) {
        let (shown, into_text) = match event {
            AssistantMessageEvent::TextDelta { delta, .. } => (self.stream_text.push(delta), true),
            AssistantMessageEvent::ThinkingDelta { delta, .. } => {
                (self.stream_thinking.push(delta), false)
            }
            _ => return,
        };
        let Some((thinking, text)) = self.open_reply() else {
            return;
        };
        push_capped(if into_text { text } else { thinking }, &shown);
        self.version += 1;
    }

    /// A message ended during a run: a reply is closed with its final content (the stream may
    /// have been partial), a user or custom message becomes an entry.
    fn message_end_live(&mut self, message: &Message) {
        if let Message::Assistant(a) = message
            && self.open_reply().is_some()
        {
            let (thinking, text) = reply_parts(&a.content);
            if let Some(Entry::Assistant {
                thinking: t,
                text: x,
                open,
            }) = self.entries.last_mut()
            {
                *t = capped(thinking);
                *x = capped(text);
                *open = false;
            }
            // An aborted reply was stopped by the person, who was told so already.
            if a.stop_reason != cadre_protocol::StopReason::Aborted
                && let Some(error) = a.error_message.as_deref().filter(|e| !e.is_empty())
            {
                self.note(NoteKind::Error, error.to_string());
            }
            self.version += 1;
            return;
        }
        match message {
            // The person's own prompt was shown when it was typed.
            Message::User(u) if !is_notice(&u.content) => {
                let text = u.content.to_text();
                match self.echoes.iter().position(|e| *e == text) {
                    Some(at) => {
                        self.echoes.remove(at);
                    }
                    // A queued follow-up (or a prompt from elsewhere) shows where it is
                    // delivered, after the answer it waited for.
                    None => self.user(&text),
                }
            }
            // The task's end was announced from its task event, with its figures; the
            // notice the parent reads would say it again.
            Message::User(u) if is_completion_notice(&u.content) => {}
            Message::Custom(c) if is_completion_notice(&c.content) => {}
            Message::ToolResult(_) => {}
            other => self.message_end(other),
        }
    }

    /// A whole message (a resumed session's, or one that ended without streaming).
    fn message_end(&mut self, message: &Message) {
        match message {
            Message::User(u) if is_notice(&u.content) => {
                self.note(NoteKind::Task, notice_line(&u.content.to_text()));
            }
            Message::User(u) => self.user(&u.content.to_text()),
            Message::Assistant(a) => {
                let (thinking, text) = reply_parts(&a.content);
                if !thinking.is_empty() || !text.is_empty() {
                    self.push(Entry::Assistant {
                        thinking: capped(thinking),
                        text: capped(text),
                        open: false,
                    });
                }
                for call in a.tool_calls() {
                    self.tool_start(&call.id, &call.name, &call.arguments);
                }
                if let Some(error) = a.error_message.as_deref().filter(|e| !e.is_empty()) {
                    self.note(NoteKind::Error, error.to_string());
                }
            }
            Message::ToolResult(r) => {
                let result = serde_json::json!({"content": r.content, "details": r.details});
                self.tool_end(&r.tool_call_id, &result, r.is_error);
            }
            Message::Custom(c) => {
                self.note(NoteKind::Task, notice_line(&c.content.to_text()));
            }
            Message::BashExecution(b) => {
                self.note(NoteKind::Info, format!("$ {}\n{}", b.command, b.output));
            }
        }
    }

    fn tool_start(&mut self, call_id: &str, name: &str, args: &Value) {
        // A resumed session's call and its live start are the same entry.
        if self.tool_mut(call_id).is_some() {
            return;
        }
        self.push(Entry::Tool(ToolEntry {
            call_id: call_id.to_string(),
            name: name.to_string(),
            summary: summarize_args(name, args),
            result: None,
            is_error: false,
            diff: None,
        }));
    }

    fn tool_end(&mut self, call_id: &str, result: &Value, is_error: bool) {
        let text = capped(result_text(result));
        let diff = result
            .pointer("/details/diff")
            .and_then(Value::as_str)
            .map(|d| capped(d.to_string()));
        match self.tool_mut(call_id) {
            Some(tool) => {
                tool.result = Some(text);
                tool.is_error = is_error;
                tool.diff = diff;
            }
            None => self.push(Entry::Tool(ToolEntry {
                call_id: call_id.to_string(),
                name: String::from("tool"),
                summary: String::new(),
                result: Some(text),
                is_error,
                diff,
            })),
        }
        self.version += 1;
    }

    fn tool_mut(&mut self, call_id: &str) -> Option<&mut ToolEntry> {
        // Calls are recent: look back a bounded distance.
        self.entries
            .iter_mut()
            .rev()
            .take(200)
            .find_map(|e| match e {
                Entry::Tool(t) if t.call_id == call_id => Some(t),
                _ => None,
            })
    }
}

/// A reply's thinking and text, each joined across its blocks.
fn reply_parts(content: &[ContentBlock]) -> (String, String) {
    let mut thinking = String::new();
    let mut text = String::new();
    for block in content {
        match block {
            ContentBlock::Thinking {
                thinking: t,
                redacted: false,
                ..
            } => join(&mut thinking, t),
            ContentBlock::Text { text: t } => join(&mut text, t),
            _ => {}
        }
    }
    (thinking, text)
}

fn join(into: &mut String, part: &str) {
    if part.trim().is_empty() {
        return;
    }
    if !into.is_empty() {
        into.push_str("\n\n");
    }
    into.push_str(part);
}

/// Whether a user message is one of cadre's task notices rather than the person's words.
fn is_notice(content: &UserContent) -> bool {
    let text = content.to_text();
    let t = text.trim_start();
    t.starts_with("<task-notification") || t.starts_with("<progress-warning")
}

fn is_completion_notice(content: &UserContent) -> bool {
    content
        .to_text()
        .trim_start()
        .starts_with("<task-notification")
}

/// One line for a task notice.
fn notice_line(text: &str) -> String {
    crate::render::notice_summary(text)
}

/// A tool result's text blocks.
fn result_text(result: &Value) -> String {
    match result.get("content") {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => match result {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        },
    }
}

/// A call's arguments in one line: the ones a person recognises the call by.
pub fn summarize_args(tool: &str, args: &Value) -> String {
    let field = |k: &str| args.get(k).and_then(Value::as_str);
    let main = match tool {
        "bash" => field("command"),
        "read" | "write" | "edit" | "ls" => field("path"),
        "grep" | "find" => field("pattern"),
        "Agent" => {
            // A batch: `tasks: [{subagent_type, description}, …]`.
            if let Some(tasks) = args.get("tasks").and_then(Value::as_array) {
                let each: Vec<String> = tasks
                    .iter()
                    .map(|t| {
                        let role = t.get("subagent_type").and_then(Value::as_str);
                        let what = t.get("description").and_then(Value::as_str);
                        format!(
                            "{}: {}",
                            role.unwrap_or("general-purpose"),
                            what.unwrap_or_default()
                        )
                    })
                    .collect();
                return format!("{} tasks — {}", tasks.len(), each.join("; "));
            }
            let role = field("subagent_type").unwrap_or("general-purpose");
            let what = field("description").unwrap_or_default();
            return format!("{role}: {what}");
        }
        "SendMessage" | "TaskOutput" | "TaskStop" => field("to").or(field("task_id")),
        _ => None,
    };
    match main {
        Some(main) => main.lines().next().unwrap_or_default().to_string(),
        None => match args {
            Value::Object(map) if map.is_empty() => String::new(),
            other => other.to_string(),
        },
    }
}

/// `text` without registered secrets: streamed text has not passed the agent's redaction yet
/// (a provider that echoes a key must not put it on the screen, S5).
fn redacted(text: String) -> String {
    match cadre_protocol::redact::redact_str(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(clean) => clean,
    }
}

fn capped(mut text: String) -> String {
    text = redacted(text);
    if text.len() > ENTRY_CAP {
        let mut cut = ENTRY_CAP;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n… (cut here on screen; the session file has it all)");
    }
    text
}

/// Append an already redacted piece (a [`StreamRedactor`]'s output, so a long reply costs
/// its length, not its square).
fn push_capped(into: &mut String, delta: &str) {
    if into.len() >= ENTRY_CAP {
        return;
    }
    into.push_str(delta);
    if into.len() > ENTRY_CAP {
        let owned = std::mem::take(into);
        *into = capped(owned);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_protocol::{AssistantMessage, ToolCall};
    use serde_json::json;

    fn reply(blocks: Vec<ContentBlock>) -> Message {
        let mut m = AssistantMessage::empty("test", "test", "test");
        m.content = blocks;
        Message::Assistant(m)
    }

    #[test]
    fn a_streamed_reply_grows_then_takes_its_final_content() {
        let mut t = Transcript::default();
        t.typed("hi");
        t.apply(&AgentEvent::MessageStart {
            message: reply(vec![]),
        });
        let delta = |d: &str| AgentEvent::MessageUpdate {
            message: Box::new(AssistantMessage::empty("test", "test", "test")),
            assistant_message_event: AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: d.into(),
            },
        };
        t.apply(&delta("Hel"));
        t.apply(&delta("lo"));
        assert!(
            matches!(&t.entries[1], Entry::Assistant { text, open: true, .. } if text == "Hello")
        );
        t.apply(&AgentEvent::MessageEnd {
            message: reply(vec![ContentBlock::text("Hello there")]),
        });
        assert!(
            matches!(&t.entries[1], Entry::Assistant { text, open: false, .. } if text == "Hello there")
        );
        // The prompt's own message_end does not repeat it.
        t.apply(&AgentEvent::MessageEnd {
            message: Message::user("hi"),
        });
        assert_eq!(t.entries.len(), 2);
    }

    #[test]
    fn tool_calls_pair_with_their_results_and_diffs() {
        let mut t = Transcript::default();
        t.apply(&AgentEvent::ToolExecutionStart {
            tool_call_id: "c1".into(),
            tool_name: "edit".into(),
            args: json!({"path": "src/a.rs"}),
        });
        t.apply(&AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "edit".into(),
            result: json!({"content": [{"type": "text", "text": "edited"}], "details": {"diff": "-a\n+b"}}),
            is_error: false,
        });
        let Entry::Tool(tool) = &t.entries[0] else {
            panic!()
        };
        assert_eq!(tool.summary, "src/a.rs");
        assert_eq!(tool.result.as_deref(), Some("edited"));
        assert_eq!(tool.diff.as_deref(), Some("-a\n+b"));
    }

    #[test]
    fn a_resumed_session_reads_as_it_was_lived() {
        let call = ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: json!({"command": "ls -la\necho"}),
        };
        let messages = vec![
            Message::user("list files"),
            reply(vec![
                ContentBlock::Thinking {
                    thinking: "let me look".into(),
                    signature: None,
                    redacted: false,
                },
                ContentBlock::ToolCall(call),
            ]),
            Message::ToolResult(cadre_protocol::ToolResultMessage {
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                content: vec![ContentBlock::text("a\nb")],
                details: None,
                is_error: false,
                timestamp: 0,
            }),
            Message::user(
                "<task-notification>\n<name>scan</name>\n<status>completed</status>\n</task-notification>",
            ),
        ];
        let t = Transcript::from_messages(&messages);
        assert_eq!(t.entries[0], Entry::User("list files".into()));
        assert!(
            matches!(&t.entries[1], Entry::Assistant { thinking, .. } if thinking == "let me look")
        );
        assert!(
            matches!(&t.entries[2], Entry::Tool(x) if x.summary == "ls -la" && x.result.as_deref() == Some("a\nb"))
        );
        assert!(
            matches!(&t.entries[3], Entry::Note { kind: NoteKind::Task, text } if text.contains("scan completed"))
        );
    }

    #[test]
    fn a_batch_of_launches_is_summarised_by_its_tasks() {
        let args = json!({"tasks": [
            {"subagent_type": "Explore", "description": "Child 0"},
            {"description": "Child 1"},
        ]});
        assert_eq!(
            summarize_args("Agent", &args),
            "2 tasks — Explore: Child 0; general-purpose: Child 1"
        );
    }

    #[test]
    fn a_secret_split_across_deltas_never_reaches_the_screen() {
        cadre_protocol::redact::set_secrets(["sk-transcript-secret-123456".to_string()]);
        let mut t = Transcript::default();
        t.apply(&AgentEvent::MessageStart {
            message: reply(vec![]),
        });
        for part in ["key: sk-transcript-", "secret-123456 ok"] {
            t.apply(&AgentEvent::MessageUpdate {
                message: Box::new(AssistantMessage::empty("test", "test", "test")),
                assistant_message_event: AssistantMessageEvent::TextDelta {
                    content_index: 0,
                    delta: part.into(),
                },
            });
            // Not even the key's first characters are drawn while the rest is on its way.
            let Entry::Assistant { text, .. } = &t.entries[0] else {
                panic!()
            };
            assert!(!text.contains("sk-"), "{text}");
        }
        let Entry::Assistant { text, .. } = &t.entries[0] else {
            panic!()
        };
        assert!(!text.contains("sk-transcript-secret-123456"), "{text}");
        assert!(text.ends_with(" ok"), "{text}");
    }

    #[test]
    fn an_endless_stream_is_capped_on_screen() {
        let mut t = Transcript::default();
        t.apply(&AgentEvent::MessageStart {
            message: reply(vec![]),
        });
        let chunk = "x".repeat(10_000);
        for _ in 0..20 {
            t.apply(&AgentEvent::MessageUpdate {
                message: Box::new(AssistantMessage::empty("test", "test", "test")),
                assistant_message_event: AssistantMessageEvent::TextDelta {
                    content_index: 0,
                    delta: chunk.clone(),
                },
            });
        }
        let Entry::Assistant { text, .. } = &t.entries[0] else {
            panic!()
        };
        assert!(text.len() < ENTRY_CAP + 100);
        for i in 0..(MAX_ENTRIES + 10) {
            t.note(NoteKind::Info, format!("n{i}"));
        }
        assert_eq!(t.entries.len(), MAX_ENTRIES);
    }
}
