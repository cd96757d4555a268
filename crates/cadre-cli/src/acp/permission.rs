//! D3 `ask`: a launch under `subagents.authorization: ask` is put to the editor as a
//! `session/request_permission` (allow once / reject). No answer within the bound, a
//! cancelled turn, or a broken connection is a refusal; the model gets the manager's
//! "declined" result either way.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
};
use cadre_core::orchestrator::manager::LaunchConfirmer;
use futures_util::future::BoxFuture;
use serde_json::json;
use tokio::sync::Notify;

use super::view::CurrentCall;

/// How long the editor has to answer a permission request.
pub const PERMISSION_WAIT: Duration = Duration::from_secs(300);
/// Overrides [`PERMISSION_WAIT`] (milliseconds), e.g. for tests of an editor that never
/// answers.
pub const PERMISSION_WAIT_VAR: &str = "CADRE_ACP_PERMISSION_TIMEOUT_MS";

/// How long a launch waits for the view to know the `Agent` call it comes from.
const CALL_WAIT: Duration = Duration::from_secs(2);

const ALLOW: &str = "allow";
const REJECT: &str = "reject";

pub struct EditorConfirmer {
    pub cx: ConnectionTo<Client>,
    /// Set once the session exists (the host is built before its id is known).
    pub session: Arc<OnceLock<String>>,
    pub current: CurrentCall,
    /// Notified by `session/cancel`: a pending question is withdrawn.
    pub cancelled: Arc<Notify>,
}

impl LaunchConfirmer for EditorConfirmer {
    fn confirm<'a>(&'a self, summary: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let Some(session) = self.session.get() else {
                return false;
            };
            // The launch runs inside an `Agent` call whose start event may still be on its
            // way to the view: wait for it, briefly.
            let mut current = self.current.subscribe();
            let known = tokio::time::timeout(CALL_WAIT, current.wait_for(Option::is_some))
                .await
                .ok()
                .and_then(Result::ok)
                .and_then(|call| call.clone());
            let call = known.unwrap_or_else(|| format!("launch-{}", uuid::Uuid::now_v7()));
            let request = json!({
                "sessionId": session,
                "toolCall": {
                    "toolCallId": call,
                    "title": format!("Launch subagent: {summary}"),
                    "kind": "think",
                    "status": "pending",
                },
                "options": [
                    {"optionId": ALLOW, "name": "Allow once", "kind": "allow_once"},
                    {"optionId": REJECT, "name": "Reject", "kind": "reject_once"},
                ],
            });
            let Ok(request) = serde_json::from_value::<RequestPermissionRequest>(request) else {
                return false;
            };
            let cancelled = self.cancelled.notified();
            let answer = self.cx.send_request(request).block_task();
            tokio::select! {
                answer = answer => allowed(answer.ok()),
                () = tokio::time::sleep(wait()) => {
                    errln!("cadre acp: the editor did not answer a permission request in time; the launch is refused");
                    false
                }
                () = cancelled => false,
            }
        })
    }
}

fn allowed(answer: Option<RequestPermissionResponse>) -> bool {
    match answer.map(|a| a.outcome) {
        Some(RequestPermissionOutcome::Selected(selected)) => &*selected.option_id.0 == ALLOW,
        _ => false,
    }
}

fn wait() -> Duration {
    std::env::var(PERMISSION_WAIT_VAR)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(PERMISSION_WAIT, Duration::from_millis)
}
