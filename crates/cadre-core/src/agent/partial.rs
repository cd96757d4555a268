//! The assistant message being streamed, rebuilt from provider deltas.

use std::collections::HashMap;

use cadre_llm::Model;
use cadre_protocol::{AssistantMessage, AssistantMessageEvent, ContentBlock, StopReason, ToolCall};
use serde_json::Value;

/// A partial assistant message. Providers number content blocks (`contentIndex`); the map
/// tolerates numbering that is sparse or restarts, appending a block whenever an index is new.
pub(crate) struct PartialMessage {
    message: AssistantMessage,
    positions: HashMap<usize, usize>,
    /// Raw JSON argument text of tool calls still streaming, by position.
    tool_args: HashMap<usize, String>,
}

impl PartialMessage {
    pub(crate) fn new(model: &Model) -> Self {
        PartialMessage {
            message: AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id),
            positions: HashMap::new(),
            tool_args: HashMap::new(),
        }
    }

    pub(crate) fn message(&self) -> &AssistantMessage {
        &self.message
    }

    /// Position of the block for `index`, creating it with `make` when new.
    fn slot(&mut self, index: usize, make: impl FnOnce() -> ContentBlock) -> usize {
        if let Some(&p) = self.positions.get(&index) {
            return p;
        }
        let p = self.message.content.len();
        self.message.content.push(make());
        self.positions.insert(index, p);
        p
    }

    pub(crate) fn apply(&mut self, event: &AssistantMessageEvent) {
        let empty_text = || ContentBlock::text("");
        let empty_thinking = || ContentBlock::Thinking {
            thinking: String::new(),
            signature: None,
            redacted: false,
        };
        match event {
            AssistantMessageEvent::Start => {}
            AssistantMessageEvent::TextStart { content_index } => {
                self.slot(*content_index, empty_text);
            }
            AssistantMessageEvent::TextDelta {
                content_index,
                delta,
            } => {
                let p = self.slot(*content_index, empty_text);
                if let Some(ContentBlock::Text { text }) = self.message.content.get_mut(p) {
                    text.push_str(delta);
                }
            }
            AssistantMessageEvent::TextEnd {
                content_index,
                content,
            } => {
                let p = self.slot(*content_index, empty_text);
                self.message.content[p] = ContentBlock::text(content.clone());
            }
            AssistantMessageEvent::ThinkingStart { content_index } => {
                self.slot(*content_index, empty_thinking);
            }
            AssistantMessageEvent::ThinkingDelta {
                content_index,
                delta,
            } => {
                let p = self.slot(*content_index, empty_thinking);
                if let Some(ContentBlock::Thinking { thinking, .. }) =
                    self.message.content.get_mut(p)
                {
                    thinking.push_str(delta);
                }
            }
            AssistantMessageEvent::ThinkingEnd {
                content_index,
                content,
            } => {
                let p = self.slot(*content_index, empty_thinking);
                if let Some(ContentBlock::Thinking { thinking, .. }) =
                    self.message.content.get_mut(p)
                {
                    *thinking = content.clone();
                }
            }
            AssistantMessageEvent::ToolCallStart {
                content_index,
                id,
                name,
            } => {
                let p = self.slot(*content_index, || {
                    ContentBlock::ToolCall(ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments: Value::Object(Default::default()),
                    })
                });
                self.tool_args.entry(p).or_default();
            }
            AssistantMessageEvent::ToolCallDelta {
                content_index,
                delta,
            } => {
                if let Some(&p) = self.positions.get(content_index) {
                    self.tool_args.entry(p).or_default().push_str(delta);
                }
            }
            AssistantMessageEvent::ToolCallEnd {
                content_index,
                tool_call,
            } => {
                let p = self.slot(*content_index, || ContentBlock::ToolCall(tool_call.clone()));
                self.message.content[p] = ContentBlock::ToolCall(tool_call.clone());
                self.tool_args.remove(&p);
            }
        }
    }

    /// The message as it stands, ended early (abort, failure, or a stream that stopped).
    /// Tool calls whose arguments were still streaming keep what arrived: parsed if it is
    /// valid JSON, otherwise the raw text, so the call can still be answered.
    pub(crate) fn interrupted(
        mut self,
        stop_reason: StopReason,
        error: String,
    ) -> AssistantMessage {
        for (p, raw) in self.tool_args.drain() {
            if let Some(ContentBlock::ToolCall(call)) = self.message.content.get_mut(p)
                && !raw.is_empty()
            {
                call.arguments = serde_json::from_str(&raw).unwrap_or(Value::String(raw));
            }
        }
        self.message.stop_reason = stop_reason;
        self.message.error_message = Some(error);
        self.message
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_llm::{Api, Compat, ModelCost};
    use serde_json::json;

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
            E::ThinkingStart { content_index: 0 },
            E::ThinkingDelta {
                content_index: 0,
                delta: "hm".into(),
            },
            E::ThinkingEnd {
                content_index: 0,
                content: "hmm".into(),
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
                content_index: 7,
                id: "c1".into(),
                name: "read".into(),
            },
            E::ToolCallDelta {
                content_index: 7,
                delta: "{\"path\":".into(),
            },
            E::ToolCallEnd {
                content_index: 7,
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
            matches!(&m.content[0], ContentBlock::Thinking { thinking, .. } if thinking == "hmm")
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
