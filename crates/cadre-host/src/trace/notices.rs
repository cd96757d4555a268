//! Execution receipts are not kept in task records: they reach the parent inside the task's
//! `<task-notification>` (O6, V3). This finds them in the root conversation, by task id.

use std::collections::HashMap;

use cadre_protocol::{Message, TaskRecord, UserContent};

const OPEN: &str = "<task-notification>";
const CLOSE: &str = "</task-notification>";
const RECEIPT_OPEN: &str = "<execution-receipt>";
const RECEIPT_CLOSE: &str = "</execution-receipt>";

/// The newest receipt of each task in `records`, from the notifications in `messages`. A
/// child's own text cannot open these elements (its output is neutralised before it is
/// embedded), so a receipt found here is cadre's.
pub fn receipts<'r>(messages: &[Message], records: &'r [TaskRecord]) -> HashMap<&'r str, String> {
    let mut found = HashMap::new();
    for text in messages.iter().filter_map(text_of) {
        let mut rest = text.as_str();
        while let Some(at) = rest.find(OPEN) {
            let body = &rest[at + OPEN.len()..];
            let end = body.find(CLOSE).unwrap_or(body.len());
            let notice = &body[..end];
            rest = &body[end..];
            let (Some(id), Some(receipt)) = (
                between(notice, "<task-id>", "</task-id>"),
                between(notice, RECEIPT_OPEN, RECEIPT_CLOSE),
            ) else {
                continue;
            };
            if let Some(r) = records.iter().find(|r| r.id == id.trim()) {
                found.insert(r.id.as_str(), receipt.trim().to_string());
            }
        }
    }
    found
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let len = text[start..].find(close)?;
    Some(&text[start..start + len])
}

fn text_of(message: &Message) -> Option<String> {
    match message {
        Message::User(u) => match &u.content {
            UserContent::Text(t) => Some(t.clone()),
            UserContent::Blocks(blocks) => Some(cadre_protocol::join_text(blocks)),
        },
        Message::ToolResult(r) => Some(cadre_protocol::join_text(&r.content)),
        Message::Assistant(_) => None,
        other => {
            let value = serde_json::to_value(other).ok()?;
            value["content"].as_str().map(str::to_string)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn a_receipt_is_found_by_its_task_id() {
        let records = vec![TaskRecord {
            id: "t-1".into(),
            ..TaskRecord::default()
        }];
        let text = "before <task-notification>\n<task-id>t-1</task-id>\n<execution-receipt>\nVerification: PASS\n</execution-receipt>\n<result>\nok\n</result>\n</task-notification> \
                    <task-notification><task-id>other</task-id><execution-receipt>x</execution-receipt></task-notification>";
        let found = receipts(&[Message::user(text)], &records);
        assert_eq!(found.len(), 1);
        assert_eq!(found["t-1"], "Verification: PASS");
    }
}
