//! A copy of a parent's conversation kept from its events, so a fork can branch from it (O9).
//!
//! The agent owns its history and is busy running the `Agent` call while the fork is prepared,
//! so the conversation is rebuilt from `message_end` events instead. The assistant message that
//! asks for the fork is emitted before its tool calls run, but events travel through a channel:
//! the fork waits (briefly) until the mirror has seen the call with the very same arguments.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cadre_protocol::{AgentEvent, Message};
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{Notify, mpsc};

use super::handle::lock;
use super::types::ConversationSource;
use crate::orchestrator::capability::AGENT_TOOL;

/// How long a fork waits for its own call to show up in the mirror.
const CALL_WAIT: Duration = Duration::from_secs(5);

/// The parent conversation as seen through its events.
pub struct ConversationMirror {
    messages: Mutex<Vec<Message>>,
    changed: Notify,
}

impl ConversationMirror {
    /// A mirror starting from `history` (the conversation the agent was created with).
    pub fn new(history: Vec<Message>) -> Arc<ConversationMirror> {
        Arc::new(ConversationMirror {
            messages: Mutex::new(history),
            changed: Notify::new(),
        })
    }

    /// Record a finished message from an event; other events are ignored.
    pub fn observe(&self, event: &AgentEvent) {
        if let AgentEvent::MessageEnd { message } = event {
            lock(&self.messages).push(message.clone());
            self.changed.notify_waiters();
        }
    }

    /// An event sender for the agent's config: every event is mirrored, then passed on to
    /// `downstream` (the front end's own listener), if any.
    pub fn tap(
        self: &Arc<Self>,
        downstream: Option<mpsc::UnboundedSender<AgentEvent>>,
    ) -> mpsc::UnboundedSender<AgentEvent> {
        let (tx, mut rx) = mpsc::unbounded_channel::<AgentEvent>();
        let me = Arc::clone(self);
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                me.observe(&event);
                if let Some(d) = &downstream {
                    let _ = d.send(event);
                }
            }
        });
        tx
    }

    /// Start over from `messages`: the agent's history changed other than by events (a
    /// compaction, a command's output added to the context).
    pub fn replace(&self, messages: Vec<Message>) {
        *lock(&self.messages) = messages;
        self.changed.notify_waiters();
    }

    /// The messages so far.
    pub fn messages(&self) -> Vec<Message> {
        lock(&self.messages).clone()
    }

    /// The conversation up to the last assistant message with an `Agent` call carrying `args`.
    fn up_to_call(&self, args: &Value) -> Option<Vec<Message>> {
        let messages = lock(&self.messages);
        let at = messages.iter().rposition(|m| match m {
            Message::Assistant(a) => a
                .tool_calls()
                .any(|c| c.name == AGENT_TOOL && &c.arguments == args),
            _ => false,
        })?;
        Some(messages[..=at].to_vec())
    }
}

impl ConversationSource for ConversationMirror {
    fn snapshot_for_call<'a>(&'a self, args: &'a Value) -> BoxFuture<'a, Option<Vec<Message>>> {
        Box::pin(async move {
            let wait = async {
                loop {
                    let changed = self.changed.notified();
                    if let Some(found) = self.up_to_call(args) {
                        return found;
                    }
                    changed.await;
                }
            };
            tokio::time::timeout(CALL_WAIT, wait).await.ok()
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_protocol::{AssistantMessage, ContentBlock, ToolCall};
    use serde_json::json;

    fn agent_call(args: Value) -> Message {
        let mut a = AssistantMessage::empty("x", "y", "z");
        a.content.push(ContentBlock::ToolCall(ToolCall {
            id: "c1".into(),
            name: AGENT_TOOL.into(),
            arguments: args,
        }));
        Message::Assistant(a)
    }

    #[tokio::test]
    async fn snapshot_waits_for_the_call_and_cuts_after_it() {
        let mirror = ConversationMirror::new(vec![Message::user("hi")]);
        let args = json!({"subagent_type": "fork", "prompt": "p"});
        let tx = mirror.tap(None);
        let waiter = {
            let mirror = Arc::clone(&mirror);
            let args = args.clone();
            tokio::spawn(async move { mirror.snapshot_for_call(&args).await })
        };
        tx.send(AgentEvent::MessageEnd {
            message: agent_call(json!({"other": 1})),
        })
        .unwrap();
        tx.send(AgentEvent::MessageEnd {
            message: agent_call(args.clone()),
        })
        .unwrap();
        tx.send(AgentEvent::MessageEnd {
            message: Message::user("later"),
        })
        .unwrap();
        let got = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(got.len(), 3);
        assert!(
            matches!(&got[2], Message::Assistant(a) if a.tool_calls().next().unwrap().arguments == args)
        );
    }
}
