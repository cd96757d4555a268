//! Execution receipts are not kept in task records: they reach the parent in the task's result
//! (a foreground `Agent` call's tool result, `Task <id> …`) or its `<task-notification>` (O6,
//! V3). This finds them in the root conversation, by task id.

use std::collections::HashMap;

use cadre_protocol::{Message, TaskRecord, UserContent};

const RECEIPT_OPEN: &str = "<execution-receipt>";
const RECEIPT_CLOSE: &str = "</execution-receipt>";
/// Ends a task's block: what follows a receipt's block belongs to the next task.
const RESULT_CLOSE: &str = "</result>";

/// The newest receipt of each task in `records`, from the results and notifications in
/// `messages`. A child's own text cannot open these elements (its output is neutralised before
/// it is embedded), so a receipt found here is cadre's. One pass over each text: a receipt is
/// credited to the task its block names (`<task-id>ID</task-id>`, else a `Task ID` line).
pub fn receipts<'r>(messages: &[Message], records: &'r [TaskRecord]) -> HashMap<&'r str, String> {
    let ids: HashMap<&str, &'r str> = records
        .iter()
        .map(|r| (r.id.as_str(), r.id.as_str()))
        .collect();
    let mut found = HashMap::new();
    for text in messages.iter().filter_map(text_of) {
        let mut block_start = 0;
        let mut at = 0;
        while let Some(open) = text[at..].find(RECEIPT_OPEN).map(|i| at + i) {
            let body_start = open + RECEIPT_OPEN.len();
            let Some(close) = text[body_start..]
                .find(RECEIPT_CLOSE)
                .map(|i| body_start + i)
            else {
                break;
            };
            // The block of this receipt starts after the previous task's result.
            if let Some(end) = text[block_start..open].rfind(RESULT_CLOSE) {
                block_start += end + RESULT_CLOSE.len();
            }
            let block = &text[block_start..open];
            if let Some(id) = block_task_id(block).and_then(|id| ids.get(id)) {
                found.insert(*id, text[body_start..close].trim().to_string());
            }
            at = close + RECEIPT_CLOSE.len();
            block_start = at;
        }
    }
    found
}

/// The task a block names: its notification's `<task-id>`, else the id after the last `Task `
/// that starts a line.
fn block_task_id(block: &str) -> Option<&str> {
    if let Some(start) = block.rfind("<task-id>") {
        let rest = &block[start + "<task-id>".len()..];
        return rest.find("</task-id>").map(|end| rest[..end].trim());
    }
    let line = block
        .lines()
        .rev()
        .find_map(|l| l.trim_start().strip_prefix("Task "))?;
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(line.len());
    Some(&line[..end])
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

    #[test]
    fn a_foreground_result_credits_each_receipt_to_its_own_task() {
        let records: Vec<TaskRecord> = ["a-1", "b-2", "c-3"]
            .iter()
            .map(|id| TaskRecord {
                id: (*id).into(),
                ..TaskRecord::default()
            })
            .collect();
        let text = "Task a-1 \"x\" (Explore \"d\"): completed\nUsage: 1\n<execution-receipt>\nA\n\
                    </execution-receipt>\n<result>\nTask c-3 is mentioned\n</result>\n\
                    Task b-2 (Explore \"e\"): failed\n<result>\n</result>\n\
                    Task c-3 (Explore \"f\"): completed\n<execution-receipt>\nC\n</execution-receipt>\n\
                    <result>\n</result>";
        let found = receipts(&[Message::user(text)], &records);
        assert_eq!(found.get("a-1").map(String::as_str), Some("A"));
        assert_eq!(found.get("b-2"), None);
        assert_eq!(found.get("c-3").map(String::as_str), Some("C"));
    }
}
