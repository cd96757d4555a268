//! What a continued session brings back: the model and thinking level it last ran with, read
//! from its active branch as Pi's `buildSessionContext` reads them, and Pi's precedence between
//! them, the flags and the settings.

use cadre_protocol::{Message, SessionEntryKind, ThinkingLevel};

use super::load::LoadedSession;

/// The model and thinking level recorded on a session's active branch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoredSettings {
    /// `(provider, model id)`: the last `model_change` entry or assistant message on the
    /// branch, whichever is later (an assistant message names the model that wrote it).
    pub model: Option<(String, String)>,
    /// The last `thinking_level_change` on the branch, when it names a level cadre knows.
    pub thinking: Option<ThinkingLevel>,
    /// Whether the branch holds a message at all: Pi restores nothing from a session without
    /// one (a file with only its header and settings entries starts like a new session).
    pub has_messages: bool,
}

impl RestoredSettings {
    /// The model to continue with as a registry name (`provider/id`), when one is recorded and
    /// the session has messages. The caller uses it unless `--model` is given, and falls back
    /// to the default model (with a note) when it cannot be resolved, as Pi does.
    pub fn model_name(&self) -> Option<String> {
        let (provider, id) = self.model.as_ref().filter(|_| self.has_messages)?;
        Some(format!("{provider}/{id}"))
    }

    /// Pi's thinking level for a continued session: `flag` (`--thinking`), else the level the
    /// session last recorded (when it has messages), else the settings' default, else `off`
    /// (cadre's default level).
    pub fn thinking_level(
        &self,
        flag: Option<ThinkingLevel>,
        settings_default: Option<ThinkingLevel>,
    ) -> ThinkingLevel {
        flag.or(self.thinking.filter(|_| self.has_messages))
            .or(settings_default)
            .unwrap_or_default()
    }
}

impl LoadedSession {
    /// The model and thinking level the active branch last recorded.
    pub fn restored_settings(&self) -> RestoredSettings {
        let mut out = RestoredSettings::default();
        for entry in self.branch() {
            match &entry.kind {
                SessionEntryKind::ModelChange { provider, model_id } => {
                    out.model = Some((provider.clone(), model_id.clone()));
                }
                SessionEntryKind::ThinkingLevelChange { thinking_level } => {
                    out.thinking = ThinkingLevel::parse(thinking_level);
                }
                SessionEntryKind::Message { message } => {
                    out.has_messages = true;
                    if let Message::Assistant(a) = message
                        && !a.provider.is_empty()
                        && !a.model.is_empty()
                    {
                        out.model = Some((a.provider.clone(), a.model.clone()));
                    }
                }
                SessionEntryKind::CustomMessage { .. } | SessionEntryKind::BranchSummary { .. } => {
                    out.has_messages = true;
                }
                _ => {}
            }
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::session::load_session;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/p"}"#;

    fn load(lines: &[&str]) -> LoadedSession {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.jsonl");
        std::fs::write(&path, format!("{HEADER}\n{}\n", lines.join("\n"))).unwrap();
        load_session(Path::new(&path)).unwrap()
    }

    const MODEL: &str = r#"{"type":"model_change","id":"m","parentId":null,"timestamp":"t","provider":"openai","modelId":"gpt-5"}"#;
    const THINK: &str = r#"{"type":"thinking_level_change","id":"k","parentId":"m","timestamp":"t","thinkingLevel":"high"}"#;
    const USER: &str = r#"{"type":"message","id":"u","parentId":"k","timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}"#;
    const REPLY: &str = r#"{"type":"message","id":"a","parentId":"u","timestamp":"t","message":{"role":"assistant","content":[],"provider":"anthropic","model":"claude-sonnet-4-5","api":"anthropic-messages","stopReason":"stop","timestamp":2}}"#;

    #[test]
    fn the_latest_model_and_level_of_the_branch_are_restored() {
        let s = load(&[MODEL, THINK, USER]).restored_settings();
        assert_eq!(s.model_name().as_deref(), Some("openai/gpt-5"));
        assert_eq!(s.thinking, Some(ThinkingLevel::High));
        // An assistant message after the change names the model that last ran, as in Pi.
        let s = load(&[MODEL, THINK, USER, REPLY]).restored_settings();
        assert_eq!(
            s.model_name().as_deref(),
            Some("anthropic/claude-sonnet-4-5")
        );
        // A branch that left those entries behind does not see them.
        let other = r#"{"type":"message","id":"o","parentId":null,"timestamp":"t","message":{"role":"user","content":"x","timestamp":1}}"#;
        let s = load(&[MODEL, THINK, USER, other]).restored_settings();
        assert_eq!((s.model, s.thinking), (None, None));
        assert!(s.has_messages);
    }

    #[test]
    fn flags_win_then_the_session_then_the_settings() {
        let s = load(&[MODEL, THINK, USER]).restored_settings();
        let (low, medium) = (Some(ThinkingLevel::Low), Some(ThinkingLevel::Medium));
        assert_eq!(s.thinking_level(low, medium), ThinkingLevel::Low);
        assert_eq!(s.thinking_level(None, medium), ThinkingLevel::High);
        // Without messages nothing is restored.
        let empty = load(&[MODEL, THINK]).restored_settings();
        assert!(!empty.has_messages);
        assert_eq!(empty.model_name(), None);
        assert_eq!(empty.thinking_level(None, medium), ThinkingLevel::Medium);
        assert_eq!(empty.thinking_level(None, None), ThinkingLevel::Off);
        // A level cadre does not know is no level.
        let odd = THINK.replace("high", "ultra");
        let s = load(&[MODEL, &odd, USER]).restored_settings();
        assert_eq!(s.thinking, None);
        assert_eq!(s.thinking_level(None, low), ThinkingLevel::Low);
    }
}
