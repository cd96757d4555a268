//! The root parent's side of notices, for front ends that run one prompt to its end (print and
//! JSON modes, O6): notices arriving while the parent runs are steered into it; after the run,
//! the parent is woken with each further notice until every task has ended and its notice has
//! been answered. No result is lost and none is delivered twice.

use std::future::Future;

use cadre_protocol::Message;
use tokio::sync::mpsc;

use super::TaskManager;
use super::types::ParentNotice;
use crate::agent::{Agent, AgentController, AgentError, RunOutcome};

/// Run `agent` on `prompt`, then keep it answering notices until nothing is pending. Returns
/// the last run's outcome (the parent's final answer). Stops early, leaving tasks running, when
/// a run ends in an error or an abort: the caller then calls [`TaskManager::shutdown`] (L6).
pub async fn run_until_settled(
    manager: &TaskManager,
    agent: &mut Agent,
    notices: &mut mpsc::UnboundedReceiver<ParentNotice>,
    prompt: Vec<Message>,
) -> Result<RunOutcome, AgentError> {
    let controller = agent.controller();
    let mut outcome = steering(agent.prompt_messages(prompt), &controller, notices).await?;
    loop {
        if outcome.error.is_some() {
            return Ok(outcome);
        }
        // Notices steered in as the run was ending are still queued: answer them first.
        let (steer, follow_up) = controller.queued();
        if !steer.is_empty() || !follow_up.is_empty() {
            outcome = steering(agent.run_queued(), &controller, notices).await?;
            continue;
        }
        let notice = tokio::select! {
            n = notices.recv() => n,
            _ = manager.wait_idle() => None,
        };
        let Some(notice) = notice else {
            return Ok(outcome);
        };
        let run = agent.prompt_messages(vec![notice.message()]);
        // Taken: the notice is in the conversation once the run has started.
        outcome = steering(run, &controller, notices).await?;
        drop(notice);
    }
}

/// Poll a run, steering every notice that arrives meanwhile into it.
async fn steering<F>(
    run: F,
    controller: &AgentController,
    notices: &mut mpsc::UnboundedReceiver<ParentNotice>,
) -> Result<RunOutcome, AgentError>
where
    F: Future<Output = Result<RunOutcome, AgentError>>,
{
    tokio::pin!(run);
    loop {
        tokio::select! {
            biased;
            res = &mut run => return res,
            Some(notice) = notices.recv() => {
                controller.steer(notice.text());
                drop(notice);
            }
        }
    }
}
