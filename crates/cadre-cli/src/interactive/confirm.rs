//! D3 `ask` in the interactive mode: a launch under `subagents.authorization: ask` is put to
//! the person (`y` allows, `n` or Esc declines). No answer within [`ASK_WAIT`], or a session
//! that is gone, is a refusal; the model gets the manager's "declined" result either way.

use std::time::Duration;

use cadre_core::orchestrator::manager::LaunchConfirmer;
use futures_util::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};

/// How long the person has to answer.
pub const ASK_WAIT: Duration = Duration::from_secs(300);

/// One question: what would be launched, and where the answer goes.
pub struct Ask {
    pub summary: String,
    pub answer: oneshot::Sender<bool>,
}

pub struct AskPerson {
    pub questions: mpsc::UnboundedSender<Ask>,
}

impl LaunchConfirmer for AskPerson {
    fn confirm<'a>(&'a self, summary: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let (answer, reply) = oneshot::channel();
            let ask = Ask {
                summary: summary.to_string(),
                answer,
            };
            if self.questions.send(ask).is_err() {
                return false;
            }
            matches!(tokio::time::timeout(ASK_WAIT, reply).await, Ok(Ok(true)))
        })
    }
}

/// A confirmer for the host options, and the questions it will ask.
pub fn channel() -> (cadre_host::Confirmer, mpsc::UnboundedReceiver<Ask>) {
    let (questions, asked) = mpsc::unbounded_channel();
    (
        cadre_host::Confirmer(std::sync::Arc::new(AskPerson { questions })),
        asked,
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_decides_and_a_gone_front_end_declines() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let person = AskPerson { questions: tx };
        let asking = tokio::spawn(async move { person.confirm("Explore: scan").await });
        let ask = rx.recv().await.unwrap();
        assert_eq!(ask.summary, "Explore: scan");
        ask.answer.send(true).unwrap();
        assert!(asking.await.unwrap());

        let (tx, rx) = mpsc::unbounded_channel();
        drop(rx);
        assert!(!AskPerson { questions: tx }.confirm("x").await);
    }
}
