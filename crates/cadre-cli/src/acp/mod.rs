//! `cadre acp`: cadre as an Agent Client Protocol agent over stdio (SPEC I6, `docs/acp.md`).
//!
//! A thin adapter over the host: each ACP session is one cadre root session, a prompt is a
//! host prompt settled to its end, the host's events are `session/update`s. The SDK
//! (`agent-client-protocol`) does the JSON-RPC: malformed frames, unknown methods and bad
//! parameters get JSON-RPC errors from it. Requests that take time (starting a session, a
//! prompt turn) run on tasks of their own, so the dispatch loop keeps reading: a
//! `session/cancel` is seen while the turn it cancels runs.

mod backlog;
mod content;
mod permission;
mod replay;
mod session;
mod tools;
mod transport;
mod view;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, CancelNotification, Implementation, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
};
use agent_client_protocol::{Agent, Error, Lines};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::args::AcpArgs;
use session::Sessions;
use view::Update;

/// How long the connection may take to end after the editor closed stdin: the answers still
/// queued are written meanwhile. An editor that closed stdin but does not read stdout would
/// otherwise keep cadre waiting on a full pipe forever.
const END_OF_INPUT_WAIT: Duration = Duration::from_secs(10);

/// How long the frames queued at the end are given to reach the editor.
const LAST_FRAMES_WAIT: Duration = Duration::from_secs(5);

pub async fn run(args: AcpArgs) -> anyhow::Result<ExitCode> {
    let backlog = backlog::Backlog::default();
    let sessions = Arc::new(Sessions::new(args.serve, backlog.clone()));
    let input_ended = CancellationToken::new();
    let (writer, sink) = transport::Writer::start(backlog);
    let transport = Lines::new(
        Box::pin(sink),
        Box::pin(transport::stdin_lines(input_ended.clone())),
    );
    // Registered before anything runs, so no signal reaches the default handler.
    let mut signals = cadre_host::Signals::new().ok();
    let signal = async {
        match signals.as_mut() {
            Some(signals) => signals.next().await,
            None => std::future::pending().await,
        }
    };
    let stalled = async {
        input_ended.cancelled().await;
        tokio::time::sleep(END_OF_INPUT_WAIT).await;
    };
    let (served, signal) = tokio::select! {
        served = serve(sessions.clone(), transport) => (served, None),
        signal = signal => (Ok(()), signal),
        () = stalled => {
            errln!("cadre acp: input ended and the editor is not reading the output; ending");
            (Ok(()), None)
        }
    };
    // End of input, a signal or a broken connection: every session ends, its tasks stopped
    // (L6), its session file closed.
    sessions.close_all().await;
    // Whether or not they get out, nothing waits on them longer.
    let _written = writer.flush(LAST_FRAMES_WAIT).await;
    if let Some(n) = signal {
        return Ok(ExitCode::from(u8::try_from(128 + n).unwrap_or(1)));
    }
    match served {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            errln!("cadre acp: error: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid_params().data(Value::String(message.into()))
}

/// A refusal as the error a client shows: the reason is the message.
fn refused(message: impl std::fmt::Display) -> Error {
    Error::new(
        agent_client_protocol::ErrorCode::INVALID_PARAMS,
        message.to_string(),
    )
}

async fn serve(
    sessions: Arc<Sessions>,
    transport: impl agent_client_protocol::ConnectTo<Agent> + 'static,
) -> Result<(), Error> {
    let s_init = sessions.clone();
    let s_new = sessions.clone();
    let s_load = sessions.clone();
    let s_prompt = sessions.clone();
    let s_cancel = sessions;
    Agent
        .v1()
        .name("cadre")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                let declared = serde_json::to_value(&request.client_capabilities)
                    .ok()
                    .and_then(|c| c.get("subagents").cloned())
                    .is_some_and(|s| s.is_object());
                s_init.subagents.store(declared, Ordering::SeqCst);
                responder.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(
                            AgentCapabilities::new()
                                .load_session(true)
                                .prompt_capabilities(
                                    PromptCapabilities::new()
                                        .image(s_init.model_takes_images())
                                        .embedded_context(true),
                                )
                                .mcp_capabilities(McpCapabilities::new().http(true).sse(false)),
                        )
                        .agent_info(
                            Implementation::new("cadre", env!("CARGO_PKG_VERSION")).title("cadre"),
                        ),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: AuthenticateRequest, responder, _cx| {
                responder.respond_with_error(refused(
                    "cadre needs no authentication: model keys come from the environment, \
                     auth.json or --api-key",
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let sessions = s_new.clone();
                let servers = to_values(&request.mcp_servers);
                let cwd: PathBuf = request.cwd.clone();
                tokio::spawn(async move {
                    // A connection already gone cannot be answered; nothing else to do.
                    let _answered = match sessions.open(&cx, &cwd, &servers, None).await {
                        Ok((id, _)) => responder.respond(NewSessionResponse::new(id)),
                        Err(e) => responder.respond_with_error(refused(e)),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let sessions = s_load.clone();
                let servers = to_values(&request.mcp_servers);
                let cwd: PathBuf = request.cwd.clone();
                let id = request.session_id.0.to_string();
                tokio::spawn(async move {
                    // A connection already gone cannot be answered; nothing else to do.
                    let _answered = match sessions.open(&cx, &cwd, &servers, Some(&id)).await {
                        Ok((id, history)) => {
                            // The history goes out before the answer, as ACP asks.
                            for update in replay::history(&history, &cwd) {
                                session::send_update(
                                    &cx,
                                    &sessions.backlog,
                                    Update {
                                        session: id.clone(),
                                        update,
                                    },
                                );
                            }
                            responder.respond(LoadSessionResponse::new())
                        }
                        Err(e) => responder.respond_with_error(refused(e)),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, _cx| {
                let content = match content::user_content(&to_values(&request.prompt)) {
                    Ok(content) => content,
                    Err(e) => return responder.respond_with_error(invalid(e)),
                };
                // Claimed here, in the order of the requests, so a cancel that follows the
                // prompt finds its turn.
                let session = match s_prompt.begin(&request.session_id.0) {
                    Ok(session) => session,
                    Err(e) => return responder.respond_with_error(refused(e)),
                };
                tokio::spawn(async move {
                    // A connection already gone cannot be answered; nothing else to do.
                    let _answered = match Sessions::prompt(session, content).await {
                        Ok(stop) => responder.respond(PromptResponse::new(stop)),
                        Err(e) => responder.respond_with_error(refused(e)),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                s_cancel.cancel(&notification.session_id.0);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await
}

/// Typed schema values as JSON, read by field (the schema's types are non-exhaustive).
fn to_values<T: serde::Serialize>(items: &[T]) -> Vec<Value> {
    items
        .iter()
        .filter_map(|i| serde_json::to_value(i).ok())
        .collect()
}
