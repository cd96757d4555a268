//! The stdio channel of `cadre mcp`: JSON-RPC lines on stdin and stdout, read and written on
//! plain threads, with every wait bounded.
//!
//! rmcp's own stdio transport writes on the runtime: a client that stops reading stdout
//! blocks a write for ever, and the process cannot exit (the runtime waits for its blocking
//! tasks). Here a frame that cannot be queued within [`WRITE_TIMEOUT`] fails its send, end
//! of input ends the connection whatever is still unwritten, and the writer thread never holds
//! the exit. Requests whose parameters have the wrong shape are answered here with a clear
//! invalid-params error (rmcp would take them for an unknown method).

use std::io;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::rpc::input::{self, Line};

/// Frames queued for the writer thread.
const QUEUED_FRAMES: usize = 64;

/// How long a frame may wait for room in the queue (the client is not reading stdout).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long closing waits for the queued frames to be written.
const CLOSE_FLUSH: Duration = Duration::from_secs(2);

enum Out {
    Line(String),
    /// Answered once every line queued before it has been written.
    Flush(oneshot::Sender<()>),
}

pub struct StdioTransport {
    lines: mpsc::UnboundedReceiver<Line>,
    out: mpsc::Sender<Out>,
}

impl StdioTransport {
    pub fn start() -> StdioTransport {
        StdioTransport::over(io::stdin(), io::stdout())
    }

    fn over<R, W>(input: R, output: W) -> StdioTransport
    where
        R: io::Read + Send + 'static,
        W: io::Write + Send + 'static,
    {
        let (out, mut rx) = mpsc::channel::<Out>(QUEUED_FRAMES);
        std::thread::spawn(move || {
            let mut output = output;
            let mut broken = false;
            while let Some(next) = rx.blocking_recv() {
                match next {
                    Out::Line(line) if !broken => {
                        broken = output
                            .write_all(line.as_bytes())
                            .and_then(|()| output.flush())
                            .is_err();
                    }
                    Out::Line(_) => {}
                    Out::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        StdioTransport {
            lines: input::spawn_reader(input),
            out,
        }
    }

    /// Queue a frame the transport answers itself (a parse or parameter error).
    fn answer(&self, frame: Value) {
        // A client that does not read its answers loses this one rather than stalling input.
        let _ = self.out.try_send(Out::Line(format!("{frame}\n")));
    }
}

impl Transport<RoleServer> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let out = self.out.clone();
        let line = serde_json::to_string(&item).map(|mut s| {
            s.push('\n');
            s
        });
        async move {
            let line = line.map_err(io::Error::other)?;
            match tokio::time::timeout(WRITE_TIMEOUT, out.send(Out::Line(line))).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(_)) => Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "stdout is closed",
                )),
                Err(_) => Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client has not read stdout for too long",
                )),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.lines.recv().await? {
                Line::Text(text) => match decode(&text) {
                    Ok(message) => return Some(message),
                    Err(Some(frame)) => self.answer(frame),
                    Err(None) => {}
                },
                Line::TooLong(limit) => {
                    errln!("cadre: mcp: a message longer than {limit} bytes was skipped");
                    self.answer(error_frame(
                        Value::Null,
                        -32700,
                        format!("a message longer than {limit} bytes was skipped"),
                    ));
                }
                Line::End => return None,
                Line::Failed(e) => {
                    errln!("cadre: mcp: cannot read stdin: {e}");
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        // What was queued goes out if the client reads it soon; end of input never waits
        // longer than this for a client that does not.
        let (done, flushed) = oneshot::channel();
        let queued = tokio::time::timeout(CLOSE_FLUSH, self.out.send(Out::Flush(done))).await;
        if matches!(queued, Ok(Ok(()))) {
            let _ = tokio::time::timeout(CLOSE_FLUSH, flushed).await;
        }
        Ok(())
    }
}

/// The methods whose parameters rmcp reads into a type; a request of one of them whose
/// parameters do not fit would otherwise be answered "method not found".
const TYPED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];

/// A line as an rmcp message, or the error frame that answers it (`None`: nothing to answer,
/// e.g. a malformed notification).
fn decode(text: &str) -> Result<RxJsonRpcMessage<RoleServer>, Option<Value>> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Some(error_frame(
            Value::Null,
            -32700,
            format!("the message is not JSON: {e}"),
        ))
    })?;
    let id = value.get("id").cloned();
    let method = value
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let (Some(id), Some(method)) = (&id, &method)
        && let Some(problem) = params_problem(method, value.get("params"))
    {
        return Err(Some(error_frame(id.clone(), -32602, problem)));
    }
    let message: RxJsonRpcMessage<RoleServer> = match serde_json::from_value(value) {
        Ok(m) => m,
        Err(e) => {
            return Err(
                id.map(|id| error_frame(id, -32600, format!("not a valid JSON-RPC message: {e}")))
            );
        }
    };
    // A known method whose parameters did not fit its type was read as a custom request.
    if let rmcp::model::JsonRpcMessage::Request(request) = &message
        && let rmcp::model::ClientRequest::CustomRequest(custom) = &request.request
        && TYPED_METHODS.contains(&custom.method.as_str())
    {
        return Err(Some(error_frame(
            id.unwrap_or(Value::Null),
            -32602,
            format!("invalid params for {}", custom.method),
        )));
    }
    Ok(message)
}

/// What is wrong with a request's parameters, where a clear message can be given.
pub(super) fn params_problem(method: &str, params: Option<&Value>) -> Option<String> {
    if let Some(p) = params
        && !p.is_object()
        && !p.is_null()
    {
        return Some(format!(
            "invalid params for {method}: params must be an object, got {}",
            kind(p)
        ));
    }
    if method == "tools/call" {
        let params = params.and_then(Value::as_object);
        match params.and_then(|p| p.get("name")) {
            Some(Value::String(_)) => {}
            Some(other) => {
                return Some(format!(
                    "invalid params for tools/call: `name` must be a string, got {}",
                    kind(other)
                ));
            }
            None => return Some("invalid params for tools/call: `name` is missing".into()),
        }
        if let Some(args) = params.and_then(|p| p.get("arguments"))
            && !args.is_object()
            && !args.is_null()
        {
            return Some(format!(
                "invalid params for tools/call: `arguments` must be an object of the tool's parameters, got {}",
                kind(args)
            ));
        }
    }
    None
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(super) fn error_frame(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn string_arguments_are_a_clear_invalid_params_error() {
        let line = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"TaskOutput","arguments":"str"}}"#;
        let frame = decode(line).err().flatten().unwrap();
        assert_eq!(frame["id"], 3);
        assert_eq!(frame["error"]["code"], -32602);
        let message = frame["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("`arguments` must be an object"),
            "{message}"
        );
        assert!(message.contains("a string"), "{message}");
    }

    #[test]
    fn garbage_gets_a_parse_error_and_a_valid_request_passes() {
        let frame = decode("not json").err().flatten().unwrap();
        assert_eq!(frame["error"]["code"], -32700);
        assert!(decode(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).is_ok());
        let ok = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"TaskStop","arguments":{"task_id":"x"}}}"#;
        assert!(decode(ok).is_ok());
    }
}
