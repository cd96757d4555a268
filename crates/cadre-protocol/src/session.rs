//! Session file entries (Pi session format v3).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{Message, UserContent};

pub const SESSION_VERSION: u32 = 3;

/// First line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default = "default_version")]
    pub version: u32,
    pub id: String,
    pub timestamp: String,
    pub cwd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
}

fn default_version() -> u32 {
    1
}

/// One tree entry of a session file (every line after the header).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    pub id: String,
    pub parent_id: Option<String>,
    pub timestamp: String,
    #[serde(flatten)]
    pub kind: SessionEntryKind,
}

/// The typed payload of a session entry; unknown entry types are kept verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionEntryKind {
    Message {
        message: Message,
    },
    ModelChange {
        provider: String,
        #[serde(rename = "modelId")]
        model_id: String,
    },
    ThinkingLevelChange {
        #[serde(rename = "thinkingLevel")]
        thinking_level: String,
    },
    CustomMessage {
        #[serde(rename = "customType")]
        custom_type: String,
        content: UserContent,
        #[serde(default)]
        display: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
    Custom {
        #[serde(rename = "customType")]
        custom_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
    },
    SessionInfo {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    Label {
        #[serde(rename = "targetId")]
        target_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    Compaction {
        summary: String,
        #[serde(rename = "firstKeptEntryId")]
        first_kept_entry_id: String,
        #[serde(rename = "tokensBefore", default)]
        tokens_before: u64,
        /// Pi's file lists (`{readFiles, modifiedFiles}`) for a summary it generated, or an
        /// extension's own data.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
        /// `true` when an extension produced the summary (Pi's legacy field name).
        #[serde(rename = "fromHook", default, skip_serializing_if = "Option::is_none")]
        from_hook: Option<bool>,
    },
    BranchSummary {
        #[serde(rename = "fromId")]
        from_id: String,
        summary: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn message_entry_matches_pi_layout() {
        let line = json!({"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z",
                          "message":{"role":"user","content":[{"type":"text","text":"Hello"}],"timestamp":1}});
        let e: SessionEntry = serde_json::from_value(line.clone()).unwrap();
        assert!(matches!(e.kind, SessionEntryKind::Message { .. }));
        assert_eq!(serde_json::to_value(&e).unwrap(), line);
        // Pi's other form of user content, a string, reads as the same message.
        let mut short = line.clone();
        short["message"]["content"] = json!("Hello");
        let e: SessionEntry = serde_json::from_value(short).unwrap();
        assert_eq!(serde_json::to_value(&e).unwrap(), line);
    }

    #[test]
    fn compaction_entry_round_trips_in_pi_layout() {
        let line = json!({"type":"compaction","id":"f6g7h8i9","parentId":"e5f6g7h8","timestamp":"2024-12-03T14:10:00.000Z",
                          "summary":"User discussed X","firstKeptEntryId":"c3d4e5f6","tokensBefore":50000,
                          "details":{"readFiles":["a.rs"],"modifiedFiles":[]},"fromHook":false});
        let e: SessionEntry = serde_json::from_value(line.clone()).unwrap();
        let SessionEntryKind::Compaction {
            first_kept_entry_id,
            tokens_before,
            details,
            from_hook,
            ..
        } = &e.kind
        else {
            panic!("not a compaction: {e:?}")
        };
        assert_eq!(first_kept_entry_id, "c3d4e5f6");
        assert_eq!(*tokens_before, 50000);
        assert_eq!(details.as_ref().unwrap()["readFiles"][0], "a.rs");
        assert_eq!(*from_hook, Some(false));
        assert_eq!(serde_json::to_value(&e).unwrap(), line);
        // Pi's minimal form (no details, no fromHook) reads and writes back the same.
        let bare = json!({"type":"compaction","id":"a","parentId":null,"timestamp":"t",
                          "summary":"S","firstKeptEntryId":"b","tokensBefore":1});
        let e: SessionEntry = serde_json::from_value(bare.clone()).unwrap();
        assert_eq!(serde_json::to_value(&e).unwrap(), bare);
    }

    #[test]
    fn model_change_entry_parses() {
        let line = json!({"type":"model_change","id":"d4e5f6g7","parentId":"c3d4e5f6","timestamp":"t","provider":"openai","modelId":"gpt-4o"});
        let e: SessionEntry = serde_json::from_value(line).unwrap();
        assert_eq!(
            e.kind,
            SessionEntryKind::ModelChange {
                provider: "openai".into(),
                model_id: "gpt-4o".into()
            }
        );
    }
}
