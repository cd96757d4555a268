//! A provider that admits every request against a budget node and charges its response.
//!
//! Wrapping the provider, not the agent loop, is what makes "every request counts" hold:
//! turns, compaction summaries, reviewers and fallbacks all reach the model through the
//! provider their task was given. A refused request fails like any other request (stop reason
//! `error`, its message saying which budget), before a byte is sent.

use std::sync::Arc;

use cadre_llm::{CompletionRequest, LlmError, Provider, StreamEvent};
use cadre_protocol::{AssistantMessage, Message, StopReason, Usage};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{BudgetNode, Spend};
use crate::compaction::estimate::estimate_tokens;

/// Events buffered between the inner provider and the agent loop.
const CHANNEL_CAPACITY: usize = 64;

pub struct MeteredProvider {
    inner: Arc<dyn Provider>,
    node: Arc<BudgetNode>,
}

impl MeteredProvider {
    pub fn new(inner: Arc<dyn Provider>, node: Arc<BudgetNode>) -> MeteredProvider {
        MeteredProvider { inner, node }
    }

    /// `inner` metered by `node` when the node has a cap; unmetered otherwise (its usage is
    /// counted by the task's record all the same, and no cap can be reached).
    pub fn wrap(inner: Arc<dyn Provider>, node: &Arc<BudgetNode>) -> Arc<dyn Provider> {
        if node.cap().is_unlimited() {
            inner
        } else {
            Arc::new(MeteredProvider::new(inner, Arc::clone(node)))
        }
    }
}

impl Provider for MeteredProvider {
    fn stream(
        &self,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> mpsc::Receiver<StreamEvent> {
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        if let Err(exhausted) = self.node.admit() {
            self.node.mark_exhausted(exhausted.meter);
            let mut partial = AssistantMessage::empty(
                request.model.api.as_str(),
                &request.model.provider,
                &request.model.id,
            );
            let message = format!("{exhausted}; the request was not sent");
            partial.stop_reason = StopReason::Error;
            partial.error_message = Some(message.clone());
            // The receiver is ours until returned: the buffer has room for this one event.
            let _ = tx.try_send(StreamEvent::Failed {
                error: LlmError::Budget(message),
                partial,
            });
            return rx;
        }
        // Only what an estimate needs is kept: the request itself goes to the provider.
        let estimate_input = input_estimate(&request);
        let model = request.model.clone();
        let mut upstream = self.inner.stream(request, cancel);
        let node = Arc::clone(&self.node);
        tokio::spawn(async move {
            while let Some(event) = upstream.recv().await {
                match &event {
                    StreamEvent::Done(message) => {
                        let (spend, estimated) =
                            spend_of(&message.usage, message, &model, estimate_input);
                        node.charge(spend, estimated);
                    }
                    StreamEvent::Failed { partial, .. } => {
                        // A request that failed after the service reported its usage was
                        // paid for: the client prices only complete replies, so price it here.
                        let mut usage = partial.usage;
                        cadre_llm::cost::apply_cost(&model, &mut usage);
                        node.charge(Spend::of_usage(&usage), false);
                    }
                    _ => {}
                }
                if tx.send(event).await.is_err() {
                    // The loop stopped listening (an abort): dropping `upstream` stops the
                    // request, and nothing more arrives to be charged.
                    return;
                }
            }
        });
        rx
    }
}

/// Tokens the request's input is estimated at (characters / 4), for a reply without usage.
fn input_estimate(request: &CompletionRequest) -> u64 {
    let system = (request.system_prompt.len() as u64).div_ceil(4);
    request
        .messages
        .iter()
        .map(estimate_tokens)
        .fold(system, u64::saturating_add)
}

/// What a reply costs: its reported usage, or, when it reported none, an estimate priced from
/// the model table and marked so.
fn spend_of(
    usage: &Usage,
    message: &AssistantMessage,
    model: &cadre_llm::Model,
    input_estimate: u64,
) -> (Spend, bool) {
    if usage.token_sum() > 0 {
        return (Spend::of_usage(usage), false);
    }
    let mut estimate = Usage {
        input: input_estimate,
        output: estimate_tokens(&Message::Assistant(message.clone())),
        ..Usage::default()
    };
    cadre_llm::cost::apply_cost(model, &mut estimate);
    (Spend::of_usage(&estimate), true)
}
