//! What every HTTP request passes before rmcp's service: the bearer token, the body cap, the
//! limit on live MCP sessions, and the parameter checks stdio makes (`stdio::params_problem`).

use std::convert::Infallible;
use std::sync::Arc;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};

use super::http::MAX_BODY_BYTES;
use super::http_auth::Token;

pub type Reply = Response<BoxBody<Bytes, Infallible>>;

pub struct Gate {
    token: Token,
    sessions: Arc<LocalSessionManager>,
    max_sessions: usize,
    /// Held while a session is opened, so two initialisations cannot both take the last slot.
    opening: tokio::sync::Mutex<()>,
}

impl Gate {
    pub fn new(token: Token, sessions: Arc<LocalSessionManager>, max_sessions: usize) -> Gate {
        Gate {
            token,
            sessions,
            max_sessions,
            opening: tokio::sync::Mutex::new(()),
        }
    }

    /// Answer `request` itself (refused, malformed) or pass it to `inner`.
    pub async fn serve<S>(&self, request: Request<Incoming>, inner: &S) -> Result<Reply, Infallible>
    where
        S: hyper::service::Service<Request<Full<Bytes>>, Response = Reply, Error = Infallible>,
    {
        let authorization = request.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
        if !self.token.admits(authorization) {
            return Ok(unauthorized());
        }
        let (parts, body) = request.into_parts();
        let bytes = match Limited::new(body, MAX_BODY_BYTES).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => {
                return Ok(plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the request body is over {MAX_BODY_BYTES} bytes or was cut"),
                ));
            }
        };
        let message: Option<Value> = if parts.method == Method::POST {
            serde_json::from_slice(&bytes).ok()
        } else {
            None
        };
        let id = message.as_ref().and_then(|m| m.get("id")).cloned();
        let method = message
            .as_ref()
            .and_then(|m| m.get("method"))
            .and_then(Value::as_str);
        if let (Some(id), Some(method)) = (&id, method)
            && let Some(problem) =
                super::stdio::params_problem(method, message.as_ref().and_then(|m| m.get("params")))
        {
            let frame = super::stdio::error_frame(id.clone(), -32602, problem);
            return Ok(json_reply(StatusCode::OK, &frame));
        }
        let opens_session =
            method == Some("initialize") && !parts.headers.contains_key("mcp-session-id");
        let request = Request::from_parts(parts, Full::new(bytes));
        if !opens_session {
            return inner.call(request).await;
        }
        let _opening = self.opening.lock().await;
        let live = self.sessions.sessions.read().await.len();
        if live >= self.max_sessions {
            let frame = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": format!(
                "cadre mcp serves at most {} MCP sessions at once and all are open; end one \
                 (HTTP DELETE with its Mcp-Session-Id) or wait until an idle one expires",
                self.max_sessions
            )}});
            return Ok(json_reply(StatusCode::SERVICE_UNAVAILABLE, &frame));
        }
        inner.call(request).await
    }
}

fn unauthorized() -> Reply {
    let mut reply = plain(
        StatusCode::UNAUTHORIZED,
        "cadre mcp needs `Authorization: Bearer <token>`: the token is printed when the server \
         starts and written to <CADRE_HOME>/mcp-http/<port>.token"
            .to_string(),
    );
    reply.headers_mut().insert(
        WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Bearer realm=\"cadre mcp\""),
    );
    reply
}

fn plain(status: StatusCode, text: String) -> Reply {
    let mut reply = Response::new(Full::new(Bytes::from(text)).boxed());
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    reply
}

fn json_reply(status: StatusCode, value: &Value) -> Reply {
    let mut reply = Response::new(Full::new(Bytes::from(value.to_string())).boxed());
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    reply
}
