//! Reading a session file back: header, entries, the active branch and its messages.
//!
//! Loading is forgiving by design: a crash can cut the last line off, and a future Pi version
//! can add entry types. A line that is not a JSON object with an id is dropped and reported in
//! [`LoadedSession::dropped_lines`]; a well-formed entry of an unknown type (or a message with
//! a role cadre does not model) is kept as a [`SkippedEntry`] so the `parentId` chain through it
//! stays intact. Only a file whose first line is not a session header is refused.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use cadre_protocol::{
    CustomMessage, Message, SessionEntry, SessionEntryKind, SessionHeader, UserContent, UserMessage,
};
use serde_json::Value;

use super::error::SessionError;
use crate::compaction::summary::summary_message as compaction_summary_message;

/// Pi's wrapper around a branch summary when it is sent to the model.
const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// A well-formed entry that cadre does not interpret (unknown type, unknown message role). It
/// is not part of the context but keeps its place in the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct SkippedEntry {
    /// 1-based line number in the file.
    pub line: usize,
    pub id: String,
    pub parent_id: Option<String>,
    pub entry_type: String,
    pub reason: String,
}

/// The model context of a session's active branch (see [`LoadedSession::context`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionContext {
    pub messages: Vec<Message>,
    /// The id of the entry each message comes from (the compaction entry for its summary).
    pub entry_ids: Vec<String>,
    /// The compaction the context starts from, if any.
    pub compaction: Option<ContextCompaction>,
}

/// The latest compaction on a branch.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextCompaction {
    pub entry_id: String,
    pub summary: String,
    pub tokens_before: u64,
    pub details: Option<Value>,
}

/// One tree node in file order: a typed entry or a skipped one.
#[derive(Debug, Clone)]
struct Node {
    id: String,
    parent_id: Option<String>,
    /// Index into `LoadedSession::entries`, `None` for a skipped entry.
    entry: Option<usize>,
}

/// A session file as read from disk.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    pub path: PathBuf,
    pub header: SessionHeader,
    /// Typed entries in file order.
    pub entries: Vec<SessionEntry>,
    /// Entries kept only for the tree (see [`SkippedEntry`]).
    pub skipped: Vec<SkippedEntry>,
    /// Lines that could not be read at all: `(1-based line number, reason)`.
    pub dropped_lines: Vec<(usize, String)>,
    /// False when the file ends in the middle of a line (a torn write); appending must start
    /// with a newline then.
    pub ends_with_newline: bool,
    nodes: Vec<Node>,
}

/// Read and parse a session file.
pub fn load_session(path: &Path) -> Result<LoadedSession, SessionError> {
    let bytes = std::fs::read(path).map_err(|source| SessionError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_session(path, &bytes)
}

fn not_a_session(path: &Path, reason: impl Into<String>) -> SessionError {
    SessionError::NotASession {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn parse_session(path: &Path, bytes: &[u8]) -> Result<LoadedSession, SessionError> {
    let ends_with_newline = bytes.is_empty() || bytes.ends_with(b"\n");
    let segments: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let last_index = segments.len().saturating_sub(1);

    let mut lines = segments
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.iter().all(u8::is_ascii_whitespace));
    let Some((header_index, header_bytes)) = lines.next() else {
        return Err(not_a_session(path, "the file is empty"));
    };
    let header = parse_header(path, header_bytes)?;
    let version = header.version;

    let mut loaded = LoadedSession {
        path: path.to_path_buf(),
        header,
        entries: Vec::new(),
        skipped: Vec::new(),
        dropped_lines: Vec::new(),
        ends_with_newline,
        nodes: Vec::new(),
    };
    let _ = header_index;

    for (index, raw) in lines {
        let line_no = index + 1;
        let unterminated = index == last_index && !ends_with_newline;
        match parse_line(
            raw,
            version,
            loaded.nodes.last().map(|n| n.id.as_str()),
            line_no,
        ) {
            Ok(ParsedLine::Entry(entry)) => {
                loaded.nodes.push(Node {
                    id: entry.id.clone(),
                    parent_id: entry.parent_id.clone(),
                    entry: Some(loaded.entries.len()),
                });
                loaded.entries.push(*entry);
            }
            Ok(ParsedLine::Skipped(skipped)) => {
                loaded.nodes.push(Node {
                    id: skipped.id.clone(),
                    parent_id: skipped.parent_id.clone(),
                    entry: None,
                });
                loaded.skipped.push(skipped);
            }
            Err(reason) => {
                let reason = if unterminated {
                    format!("line cut off (no newline at end of file): {reason}")
                } else {
                    reason
                };
                loaded.dropped_lines.push((line_no, reason));
            }
        }
    }
    Ok(loaded)
}

fn parse_header(path: &Path, raw: &[u8]) -> Result<SessionHeader, SessionError> {
    let text = std::str::from_utf8(raw)
        .map_err(|_| not_a_session(path, "the first line is not UTF-8 text"))?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| not_a_session(path, format!("the first line is not JSON ({e})")))?;
    match value.get("type").and_then(Value::as_str) {
        Some("session") => {}
        Some(other) => {
            return Err(not_a_session(
                path,
                format!("the first line has type \"{other}\", expected a \"session\" header"),
            ));
        }
        None => {
            return Err(not_a_session(
                path,
                "the first line has no \"type\" field, expected a \"session\" header",
            ));
        }
    }
    serde_json::from_value(value)
        .map_err(|e| not_a_session(path, format!("invalid session header: {e}")))
}

enum ParsedLine {
    Entry(Box<SessionEntry>),
    Skipped(SkippedEntry),
}

fn parse_line(
    raw: &[u8],
    version: u32,
    previous_id: Option<&str>,
    line_no: usize,
) -> Result<ParsedLine, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "not UTF-8 text".to_string())?;
    let mut value: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let Some(object) = value.as_object_mut() else {
        return Err("not a JSON object".into());
    };
    let entry_type = match object.get("type").and_then(Value::as_str) {
        Some("session") => return Err("a second session header".into()),
        Some(t) => t.to_string(),
        None => return Err("entry without a \"type\"".into()),
    };

    // Version 1 files are a linear list without ids: give each entry a synthetic id chained to
    // the previous one, the migration Pi applies on load.
    if version < 2 && !object.contains_key("id") {
        object.insert("id".into(), Value::String(format!("{line_no:08x}")));
        object.insert(
            "parentId".into(),
            previous_id.map_or(Value::Null, |p| Value::String(p.to_string())),
        );
    }
    let id = match object.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => return Err(format!("{entry_type} entry without an id")),
    };
    let parent_id = object
        .get("parentId")
        .and_then(Value::as_str)
        .map(str::to_string);
    if !object.contains_key("parentId") {
        object.insert("parentId".into(), Value::Null);
    }
    if !object.contains_key("timestamp") {
        object.insert("timestamp".into(), Value::String(String::new()));
    }
    // Version 3 renamed the `hookMessage` role to `custom`.
    if version < 3
        && let Some(message) = object.get_mut("message").and_then(Value::as_object_mut)
        && message.get("role").and_then(Value::as_str) == Some("hookMessage")
    {
        message.insert("role".into(), Value::String("custom".into()));
    }

    match serde_json::from_value::<SessionEntry>(value) {
        Ok(entry) => Ok(ParsedLine::Entry(Box::new(entry))),
        Err(e) => Ok(ParsedLine::Skipped(SkippedEntry {
            line: line_no,
            id,
            parent_id,
            entry_type,
            reason: e.to_string(),
        })),
    }
}

impl LoadedSession {
    /// The session id from the header.
    pub fn session_id(&self) -> &str {
        &self.header.id
    }

    /// The id of the last entry in the file: where appending continues.
    pub fn leaf_id(&self) -> Option<&str> {
        self.nodes.last().map(|n| n.id.as_str())
    }

    /// Every entry id in the file, typed or skipped.
    pub fn entry_ids(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(|n| n.id.as_str())
    }

    /// The typed entries from the root to the leaf.
    ///
    /// A `parentId` that names no entry (its line was lost) links to the entry just before it
    /// in the file, so one damaged line does not cut the conversation off.
    pub fn branch(&self) -> Vec<&SessionEntry> {
        let index: HashMap<&str, usize> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.as_str(), i))
            .collect();
        let mut visited = vec![false; self.nodes.len()];
        let mut path = Vec::new();
        let mut current = self.nodes.len().checked_sub(1);
        while let Some(i) = current {
            if visited[i] {
                break;
            }
            visited[i] = true;
            path.push(i);
            current = match &self.nodes[i].parent_id {
                None => None,
                Some(parent) => match index.get(parent.as_str()) {
                    Some(&j) => Some(j),
                    None => i.checked_sub(1),
                },
            };
        }
        path.iter()
            .rev()
            .filter_map(|&i| self.nodes[i].entry)
            .filter_map(|e| self.entries.get(e))
            .collect()
    }

    /// The conversation of the active branch, as sent to the model. A compaction on the branch
    /// contributes its summary, then the kept messages from `firstKeptEntryId` on.
    pub fn messages(&self) -> Vec<Message> {
        self.context().messages
    }

    /// The conversation of the active branch with the entries it comes from, rebuilt as Pi
    /// rebuilds it: with a compaction on the branch (the latest counts), its summary first, then
    /// the messages from its `firstKeptEntryId` up to it, then every message after it. A
    /// `firstKeptEntryId` that is not on the branch keeps nothing before the compaction.
    pub fn context(&self) -> SessionContext {
        let branch = self.branch();
        let mut context = SessionContext::default();
        let push = |context: &mut SessionContext, entry: &SessionEntry| {
            if let Some(message) = entry_message(entry) {
                context.messages.push(message);
                context.entry_ids.push(entry.id.clone());
            }
        };
        let compaction = branch
            .iter()
            .rposition(|e| matches!(e.kind, SessionEntryKind::Compaction { .. }));
        let Some(c) = compaction else {
            for entry in &branch {
                push(&mut context, entry);
            }
            return context;
        };
        let entry = branch[c];
        if let SessionEntryKind::Compaction {
            summary,
            first_kept_entry_id,
            tokens_before,
            details,
            ..
        } = &entry.kind
        {
            context.messages.push(compaction_summary_message(
                summary,
                iso_to_millis(&entry.timestamp),
            ));
            context.entry_ids.push(entry.id.clone());
            context.compaction = Some(ContextCompaction {
                entry_id: entry.id.clone(),
                summary: summary.clone(),
                tokens_before: *tokens_before,
                details: details.clone(),
            });
            if let Some(first) = branch[..c]
                .iter()
                .position(|e| &e.id == first_kept_entry_id)
            {
                for kept in &branch[first..c] {
                    push(&mut context, kept);
                }
            }
        }
        for later in &branch[c + 1..] {
            push(&mut context, later);
        }
        context
    }

    /// The model last selected on the active branch, as `(provider, model id)`.
    pub fn model(&self) -> Option<(String, String)> {
        self.branch().iter().rev().find_map(|e| match &e.kind {
            SessionEntryKind::ModelChange { provider, model_id } => {
                Some((provider.clone(), model_id.clone()))
            }
            _ => None,
        })
    }

    /// The thinking level last selected on the active branch.
    pub fn thinking_level(&self) -> Option<String> {
        self.branch().iter().rev().find_map(|e| match &e.kind {
            SessionEntryKind::ThinkingLevelChange { thinking_level } => {
                Some(thinking_level.clone())
            }
            _ => None,
        })
    }
}

fn iso_to_millis(timestamp: &str) -> u64 {
    humantime::parse_rfc3339_weak(timestamp)
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

fn branch_summary_message(summary: &str, timestamp: &str) -> Message {
    Message::User(UserMessage {
        content: UserContent::Text(format!(
            "{BRANCH_SUMMARY_PREFIX}{summary}{BRANCH_SUMMARY_SUFFIX}"
        )),
        timestamp: iso_to_millis(timestamp),
    })
}

/// The model-context message of one entry, if it has one.
fn entry_message(entry: &SessionEntry) -> Option<Message> {
    match &entry.kind {
        SessionEntryKind::Message { message } => Some(message.clone()),
        SessionEntryKind::CustomMessage {
            custom_type,
            content,
            display,
            details,
        } => Some(Message::Custom(CustomMessage {
            custom_type: custom_type.clone(),
            content: content.clone(),
            display: *display,
            details: details.clone(),
            timestamp: iso_to_millis(&entry.timestamp),
        })),
        SessionEntryKind::BranchSummary { summary, .. } => {
            Some(branch_summary_message(summary, &entry.timestamp))
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/p"}"#;

    fn msg(id: &str, parent: Option<&str>, role_text: (&str, &str)) -> String {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        let (role, text) = role_text;
        let message = match role {
            "user" => format!(r#"{{"role":"user","content":"{text}","timestamp":1}}"#),
            _ => format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}],"stopReason":"stop","timestamp":2}}"#
            ),
        };
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2024-12-03T14:00:01.000Z","message":{message}}}"#
        )
    }

    fn parse(text: &str) -> LoadedSession {
        parse_session(Path::new("/s.jsonl"), text.as_bytes()).unwrap()
    }

    fn texts(messages: &[Message]) -> Vec<String> {
        messages
            .iter()
            .map(|m| match m {
                Message::User(u) => u.content.to_text(),
                Message::Assistant(a) => a.text(),
                Message::Custom(c) => format!("custom:{}", c.content.to_text()),
                Message::ToolResult(t) => t.tool_call_id.clone(),
                Message::BashExecution(b) => format!("bash:{}", b.command),
            })
            .collect()
    }

    #[test]
    fn linear_file_loads_in_order() {
        let text = format!(
            "{HEADER}\n{}\n{}\n",
            msg("a", None, ("user", "hi")),
            msg("b", Some("a"), ("assistant", "hello"))
        );
        let s = parse(&text);
        assert_eq!(s.header.id, "s1");
        assert_eq!(s.session_id(), "s1");
        assert_eq!(s.leaf_id(), Some("b"));
        assert!(s.dropped_lines.is_empty());
        assert!(s.ends_with_newline);
        assert_eq!(texts(&s.messages()), vec!["hi", "hello"]);
    }

    #[test]
    fn rejects_files_that_are_not_sessions() {
        for bad in [
            "",
            "\n\n",
            "not json\n",
            r#"{"type":"message","id":"a"}"#,
            r#"{"no":"type"}"#,
            "[1,2]",
            r#"{"type":"session"}"#,
        ] {
            let err = parse_session(Path::new("/x.jsonl"), bad.as_bytes()).unwrap_err();
            assert!(
                matches!(err, SessionError::NotASession { .. }),
                "{bad:?} -> {err}"
            );
            assert!(err.to_string().contains("/x.jsonl"));
        }
    }

    #[test]
    fn torn_last_line_is_dropped_and_reported() {
        let full = msg("b", Some("a"), ("assistant", "hello"));
        let text = format!(
            "{HEADER}\n{}\n{}",
            msg("a", None, ("user", "hi")),
            &full[..full.len() / 2]
        );
        let s = parse(&text);
        assert!(!s.ends_with_newline);
        assert_eq!(s.dropped_lines.len(), 1);
        assert_eq!(s.dropped_lines[0].0, 3);
        assert!(s.dropped_lines[0].1.contains("cut off"));
        assert_eq!(s.leaf_id(), Some("a"));
        assert_eq!(texts(&s.messages()), vec!["hi"]);
    }

    #[test]
    fn complete_last_line_without_newline_still_loads() {
        let text = format!("{HEADER}\n{}", msg("a", None, ("user", "hi")));
        let s = parse(&text);
        assert!(!s.ends_with_newline);
        assert!(s.dropped_lines.is_empty());
        assert_eq!(texts(&s.messages()), vec!["hi"]);
    }

    #[test]
    fn bad_middle_lines_are_dropped_and_chain_is_repaired() {
        let text = format!(
            "{HEADER}\n{}\n{{garbage\n\u{0}\n[1]\n{{\"id\":\"x\"}}\n{{\"type\":\"message\"}}\n{{\"type\":\"session\",\"id\":\"z\"}}\n{}\n",
            msg("a", None, ("user", "hi")),
            // Its parent `lost` was on a line that did not survive.
            msg("c", Some("lost"), ("assistant", "after")),
        );
        let mut bytes = text.into_bytes();
        // Make one line invalid UTF-8.
        let pos = bytes.iter().position(|b| *b == 0).unwrap();
        bytes[pos] = 0xff;
        let s = parse_session(Path::new("/s.jsonl"), &bytes).unwrap();
        let lines: Vec<usize> = s.dropped_lines.iter().map(|d| d.0).collect();
        assert_eq!(lines, vec![3, 4, 5, 6, 7, 8]);
        assert_eq!(texts(&s.messages()), vec!["hi", "after"]);
    }

    #[test]
    fn unknown_entry_types_are_skipped_but_keep_the_chain() {
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n{}\n",
            msg("a", None, ("user", "hi")),
            r#"{"type":"future_thing","id":"f","parentId":"a","timestamp":"t","x":1}"#,
            r#"{"type":"message","id":"g","parentId":"f","timestamp":"t","message":{"role":"futureRole","x":1}}"#,
            msg("b", Some("g"), ("assistant", "hello")),
        );
        let s = parse(&text);
        assert!(s.dropped_lines.is_empty());
        assert_eq!(s.skipped.len(), 2);
        assert_eq!(s.skipped[0].entry_type, "future_thing");
        assert_eq!(s.skipped[0].line, 3);
        assert_eq!(s.skipped[1].parent_id.as_deref(), Some("f"));
        assert_eq!(texts(&s.messages()), vec!["hi", "hello"]);
        assert_eq!(s.entry_ids().count(), 4);
    }

    #[test]
    fn branches_follow_the_leaf() {
        // b and c are both children of a; the leaf (last line) is c's child d.
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n{}\n",
            msg("a", None, ("user", "q")),
            msg("b", Some("a"), ("assistant", "branch one")),
            msg("c", Some("a"), ("assistant", "branch two")),
            msg("d", Some("c"), ("user", "more")),
        );
        assert_eq!(
            texts(&parse(&text).messages()),
            vec!["q", "branch two", "more"]
        );
    }

    #[test]
    fn compaction_emits_summary_then_kept_messages() {
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n{}\n{}\n",
            msg("a", None, ("user", "old")),
            msg("b", Some("a"), ("assistant", "kept")),
            r#"{"type":"compaction","id":"c","parentId":"b","timestamp":"2024-12-03T14:00:05.000Z","summary":"S","firstKeptEntryId":"b","tokensBefore":10}"#,
            r#"{"type":"custom_message","id":"d","parentId":"c","timestamp":"2024-12-03T14:00:06.000Z","customType":"note","content":"injected","display":true}"#,
            msg("e", Some("d"), ("user", "new")),
        );
        let m = parse(&text).messages();
        let t = texts(&m);
        assert_eq!(t.len(), 4);
        assert!(t[0].contains("<summary>\nS\n</summary>"));
        assert_eq!(&t[1..], &["kept", "custom:injected", "new"]);
        let Message::Custom(c) = &m[2] else { panic!() };
        assert_eq!(c.timestamp, 1_733_234_406_000);
    }

    #[test]
    fn context_rebuilds_from_the_latest_compaction_with_entry_ids() {
        // The kept part starts at an assistant message whose tool call is answered after it;
        // an older compaction is superseded; entries after the compaction follow.
        let call = r#"{"type":"message","id":"c","parentId":"b","timestamp":"2024-12-03T14:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"read","arguments":{"path":"a"}}],"stopReason":"toolUse","timestamp":3}}"#;
        let result = r#"{"type":"message","id":"d","parentId":"c","timestamp":"2024-12-03T14:00:03.000Z","message":{"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":"A"}],"isError":false,"timestamp":4}}"#;
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n",
            msg("a", None, ("user", "old")),
            r#"{"type":"compaction","id":"x","parentId":"a","timestamp":"2024-12-03T14:00:01.500Z","summary":"FIRST","firstKeptEntryId":"a","tokensBefore":5}"#,
            msg("b", Some("x"), ("user", "summarised")),
            call,
            result,
            r#"{"type":"compaction","id":"y","parentId":"d","timestamp":"2024-12-03T14:00:05.000Z","summary":"SECOND","firstKeptEntryId":"c","tokensBefore":10,"details":{"readFiles":["a"],"modifiedFiles":[]},"fromHook":false}"#,
            r#"{"type":"model_change","id":"m","parentId":"y","timestamp":"t","provider":"p","modelId":"q"}"#,
            msg("e", Some("m"), ("user", "new")),
        );
        let s = parse(&text);
        let context = s.context();
        assert_eq!(context.entry_ids, vec!["y", "c", "d", "e"]);
        let t = texts(&context.messages);
        assert_eq!(
            t[0],
            "The conversation history before this point was compacted into the following \
             summary:\n\n<summary>\nSECOND\n</summary>"
        );
        assert_eq!(&t[1..], &["", "t1", "new"]);
        let Message::User(summary) = &context.messages[0] else {
            panic!()
        };
        assert_eq!(summary.timestamp, 1_733_234_405_000);
        let c = context.compaction.unwrap();
        assert_eq!((c.entry_id.as_str(), c.summary.as_str()), ("y", "SECOND"));
        assert_eq!(c.details.unwrap()["readFiles"][0], "a");
        assert_eq!(s.messages(), context.messages);

        // A firstKeptEntryId that is not on the branch keeps nothing before the compaction.
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n",
            msg("a", None, ("user", "old")),
            r#"{"type":"compaction","id":"y","parentId":"a","timestamp":"t","summary":"S","firstKeptEntryId":"gone","tokensBefore":1}"#,
            msg("e", Some("y"), ("user", "new")),
        );
        let context = parse(&text).context();
        assert_eq!(context.entry_ids, vec!["y", "e"]);
    }

    #[test]
    fn commands_the_user_ran_load_as_messages() {
        let bash = r#"{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"bashExecution","command":"ls","output":"x","exitCode":0,"cancelled":false,"truncated":false,"timestamp":3}}"#;
        let text = format!("{HEADER}\n{}\n{bash}\n", msg("a", None, ("user", "hi")));
        let s = parse(&text);
        assert!(s.skipped.is_empty(), "{:?}", s.skipped);
        assert_eq!(texts(&s.messages()), vec!["hi", "bash:ls"]);
    }

    #[test]
    fn branch_summary_becomes_user_message_and_settings_are_read() {
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n{}\n",
            msg("a", None, ("user", "q")),
            r#"{"type":"branch_summary","id":"b","parentId":"a","timestamp":"t","fromId":"x","summary":"tried A"}"#,
            r#"{"type":"model_change","id":"c","parentId":"b","timestamp":"t","provider":"openai","modelId":"gpt-4o"}"#,
            r#"{"type":"thinking_level_change","id":"d","parentId":"c","timestamp":"t","thinkingLevel":"high"}"#,
        );
        let s = parse(&text);
        let t = texts(&s.messages());
        assert_eq!(t.len(), 2);
        assert!(t[1].contains("tried A"));
        assert_eq!(s.model(), Some(("openai".into(), "gpt-4o".into())));
        assert_eq!(s.thinking_level(), Some("high".into()));
    }

    #[test]
    fn version_one_and_two_files_are_migrated() {
        let v1 = concat!(
            r#"{"type":"session","id":"old","timestamp":"t","cwd":"/p"}"#,
            "\n",
            r#"{"type":"message","timestamp":"t","message":{"role":"user","content":"one","timestamp":1}}"#,
            "\n",
            r#"{"type":"message","message":{"role":"user","content":"two","timestamp":1}}"#,
            "\n"
        );
        let s = parse(v1);
        assert_eq!(s.header.version, 1);
        assert_eq!(texts(&s.messages()), vec!["one", "two"]);
        assert_eq!(
            s.entries[1].parent_id.as_deref(),
            Some(s.entries[0].id.as_str())
        );

        let v2 = concat!(
            r#"{"type":"session","version":2,"id":"s","timestamp":"t","cwd":"/p"}"#,
            "\n",
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"hookMessage","customType":"h","content":"x","display":false,"timestamp":1}}"#,
            "\n"
        );
        assert_eq!(texts(&parse(v2).messages()), vec!["custom:x"]);
    }

    #[test]
    fn parent_cycles_do_not_hang() {
        let text = format!(
            "{HEADER}\n{}\n{}\n",
            msg("a", Some("b"), ("user", "x")),
            msg("b", Some("a"), ("user", "y")),
        );
        assert_eq!(texts(&parse(&text).messages()), vec!["x", "y"]);
    }
}
