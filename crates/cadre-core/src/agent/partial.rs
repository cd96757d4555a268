//! The assistant message being streamed, rebuilt from provider deltas.
//!
//! The rebuilding itself is cadre-llm's [`cadre_llm::PartialMessage`] (the same code the
//! providers assemble replies with, so `message_update` never disagrees with the final
//! message); this wrapper adds what the loop needs when a reply ends early.

use cadre_llm::Model;
use cadre_llm::assemble::parse_tool_arguments;
use cadre_protocol::{AssistantMessage, AssistantMessageEvent, ContentBlock, StopReason};

pub(crate) struct PartialMessage(cadre_llm::PartialMessage);

impl PartialMessage {
    pub(crate) fn new(model: &Model) -> Self {
        PartialMessage(cadre_llm::PartialMessage::new(AssistantMessage::empty(
            model.api.as_str(),
            &model.provider,
            &model.id,
        )))
    }

    pub(crate) fn message(&self) -> &AssistantMessage {
        self.0.message()
    }

    pub(crate) fn apply(&mut self, event: &AssistantMessageEvent) {
        self.0.apply(event);
    }

    /// The message as it stands, ended early (abort, failure, or a stream that stopped).
    /// Tool calls whose arguments were still streaming keep what arrived: parsed if it is
    /// valid JSON, otherwise the raw text, so the call can still be answered.
    pub(crate) fn interrupted(self, stop_reason: StopReason, error: String) -> AssistantMessage {
        let streaming: Vec<(usize, serde_json::Value)> = (0..self.0.message().content.len())
            .filter_map(|i| {
                self.0
                    .raw_arguments(i)
                    .map(|raw| (i, parse_tool_arguments(raw)))
            })
            .collect();
        let mut message = self.0.into_message();
        for (i, arguments) in streaming {
            if let Some(ContentBlock::ToolCall(call)) = message.content.get_mut(i) {
                call.arguments = arguments;
            }
        }
        message.stop_reason = stop_reason;
        message.error_message = Some(error);
        message
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_llm::{Api, Compat, ModelCost};
    use cadre_protocol::ToolCall;
    use serde_json::{Value, json};

    fn model() -> Model {
        Model {
            provider: "p".into(),
            id: "m".into(),
            name: "m".into(),
            api: Api::OpenAiCompletions,
            base_url: String::new(),
            api_key: None,
            headers: Default::default(),
            reasoning: false,
            thinking_level_map: Default::default(),
            input: vec!["text".into(), "image".into()],
            context_window: 0,
            max_tokens: 0,
            cost: ModelCost::default(),
            compat: Compat::default(),
        }
    }

    #[test]
    fn rebuilds_text_thinking_and_tool_calls() {
        let mut p = PartialMessage::new(&model());
        use AssistantMessageEvent as E;
        for e in [
            E::Start,
            E::ThinkingStart {
                content_index: 0,
                signature: Some(String::new()),
            },
            E::ThinkingDelta {
                content_index: 0,
                delta: "hm".into(),
            },
            E::ThinkingEnd {
                content_index: 0,
                content: "hmm".into(),
                signature: Some("sig".into()),
            },
            E::TextDelta {
                content_index: 1,
                delta: "Hel".into(),
            },
            E::TextDelta {
                content_index: 1,
                delta: "lo".into(),
            },
            E::ToolCallStart {
                content_index: 2,
                id: "c1".into(),
                name: "read".into(),
            },
            E::ToolCallDelta {
                content_index: 2,
                delta: "{\"path\":".into(),
            },
            E::ToolCallEnd {
                content_index: 2,
                tool_call: ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                },
            },
            E::TextEnd {
                content_index: 1,
                content: "Hello!".into(),
            },
        ] {
            p.apply(&e);
        }
        let m = p.message().clone();
        assert_eq!(m.content.len(), 3);
        assert_eq!(m.text(), "Hello!");
        assert!(
            matches!(&m.content[0], ContentBlock::Thinking { thinking, signature: Some(sig), .. }
                if thinking == "hmm" && sig == "sig")
        );
        assert_eq!(
            m.tool_calls().next().unwrap().arguments,
            json!({"path": "a"})
        );
        assert_eq!(m.provider, "p");
        assert_eq!(m.api, "openai-completions");
    }

    #[test]
    fn interrupted_keeps_unfinished_tool_calls() {
        use AssistantMessageEvent as E;
        let mut p = PartialMessage::new(&model());
        p.apply(&E::ToolCallStart {
            content_index: 0,
            id: "a".into(),
            name: "x".into(),
        });
        p.apply(&E::ToolCallDelta {
            content_index: 0,
            delta: "{\"k\":1}".into(),
        });
        p.apply(&E::ToolCallStart {
            content_index: 1,
            id: "b".into(),
            name: "y".into(),
        });
        p.apply(&E::ToolCallDelta {
            content_index: 1,
            delta: "{\"k\":".into(),
        });
        p.apply(&E::ToolCallStart {
            content_index: 2,
            id: "c".into(),
            name: "z".into(),
        });
        // A delta for an index never started is ignored.
        p.apply(&E::ToolCallDelta {
            content_index: 9,
            delta: "x".into(),
        });
        let m = p.interrupted(StopReason::Aborted, "aborted".into());
        let args: Vec<Value> = m.tool_calls().map(|c| c.arguments.clone()).collect();
        assert_eq!(args, vec![json!({"k": 1}), json!("{\"k\":"), json!({})]);
        assert_eq!(m.stop_reason, StopReason::Aborted);
        assert_eq!(m.error_message.as_deref(), Some("aborted"));
    }
}
