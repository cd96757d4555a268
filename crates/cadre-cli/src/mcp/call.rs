//! A client's tool call: run the root's orchestration tool without a model turn, report its
//! progress, record the call and its result in the root session, answer with the result.

use std::time::Duration;

use cadre_protocol::{
    AssistantMessage, ContentBlock, CustomMessage, Message, StopReason, ToolCall,
    ToolResultMessage, ToolSpec, UserContent, now_millis,
};
use cadre_tools::{ToolContext, ToolOutput};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

use super::progress::Reporter;
use super::session::Served;

/// How long a cancelled call waits for its tool to end (the tool stops its tasks first).
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// How long the result waits for the progress notifications still being sent.
const PROGRESS_DRAIN: Duration = Duration::from_secs(2);

/// A tool's MCP description: its name, description and parameters as the model sees them.
pub fn tool_json(spec: &ToolSpec) -> Value {
    let mut schema = spec.parameters.clone();
    // MCP requires an object schema at the top.
    if let Value::Object(map) = &mut schema {
        map.entry("type").or_insert_with(|| json!("object"));
    }
    json!({
        "name": spec.name,
        "description": spec.description,
        "inputSchema": schema,
    })
}

pub async fn call(
    served: &Served,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResult, McpError> {
    let host = served.host();
    let name = request.name.to_string();
    // An unknown tool is a protocol error (the request names nothing this server has).
    let Some(tool) = host.orchestration_tool(&name) else {
        let known = cadre_host::ORCHESTRATION_TOOLS.join(", ");
        return Err(McpError::invalid_params(
            format!("unknown tool `{name}`; this server has {known}"),
            None,
        ));
    };
    let args = Value::Object(request.arguments.unwrap_or_default());
    let with_schema = name == "Agent" && args.get("output_schema").is_some_and(Value::is_object);
    let (reporter, observer) = Reporter::new(
        &name,
        &args,
        context.meta.get_progress_token(),
        context.peer.clone(),
        host.tasks(),
    );
    let ctx = host.context();
    let tool_ctx = ToolContext {
        cwd: ctx.cwd.clone(),
        cancel: context.ct.child_token(),
        updates: None,
        artifacts_dir: ctx.home.root().join("artifacts"),
    };
    let cancel = context.ct.clone();
    let client = client_name(&context);
    let done = tokio_util::sync::CancellationToken::new();
    let mut progress = tokio::spawn(reporter.run(done.clone()));
    // The call runs on a task of its own: whatever happens to this request (cancelled, the
    // client gone), the tool ends its own way (a cancelled launch stops its tasks) and the
    // call is recorded.
    let served_for_run = served.clone();
    let run_cancel = cancel.clone();
    let mut run = tokio::spawn(async move {
        let run = execute(&served_for_run, tool.as_ref(), &args, tool_ctx, run_cancel);
        // The tasks this call launches are told to its reporter by id.
        let output = cadre_core::orchestrator::manager::observe_launches(observer, run).await;
        record(&served_for_run, tool.name(), args, &output, client).await;
        output
    });
    let joined = tokio::select! {
        joined = &mut run => joined,
        () = cancel.cancelled() => match tokio::time::timeout(CANCEL_GRACE, &mut run).await {
            Ok(joined) => joined,
            // The client stopped waiting; the task goes on ending and records the call.
            Err(_) => Ok(ToolOutput::error(format!("the {name} call was cancelled"))),
        },
    };
    // The last notifications (the tasks' ends) go out before the result.
    done.cancel();
    if tokio::time::timeout(PROGRESS_DRAIN, &mut progress)
        .await
        .is_err()
    {
        progress.abort();
    }
    let output =
        joined.unwrap_or_else(|e| ToolOutput::error(format!("the {name} call failed: {e}")));
    Ok(result_of(&output, with_schema))
}

/// Run the tool; a cancelled call ends as each tool can end: `Agent` stops its tasks itself
/// (through the context's token), `SendMessage` has the task it continues stopped, and a
/// waiting `TaskOutput` stops waiting. `TaskStop` ends on its own.
async fn execute(
    served: &Served,
    tool: &dyn cadre_tools::Tool,
    args: &Value,
    ctx: ToolContext,
    cancel: tokio_util::sync::CancellationToken,
) -> ToolOutput {
    let exec = tool.execute(args.clone(), ctx);
    tokio::pin!(exec);
    let mut cancel_seen = false;
    loop {
        tokio::select! {
            output = &mut exec => return output,
            () = cancel.cancelled(), if !cancel_seen => {
                cancel_seen = true;
                match tool.name() {
                    "TaskOutput" => {
                        return ToolOutput::error("TaskOutput was cancelled by the client");
                    }
                    "SendMessage" => {
                        let tasks = served.host().tasks();
                        let target = args.get("to").and_then(Value::as_str).unwrap_or_default();
                        if let Ok(id) = tasks.resolve(target) {
                            // The continuation ends once its task is stopped.
                            tokio::spawn(async move {
                                let _ = tasks.stop(&id).await;
                            });
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

/// The longest client name recorded.
const MAX_CLIENT_NAME: usize = 100;

/// The client's name as it introduced itself, for the session record.
fn client_name(context: &RequestContext<RoleServer>) -> String {
    context
        .peer
        .peer_info()
        .map(|info| {
            info.client_info
                .name
                .chars()
                .take(MAX_CLIENT_NAME)
                .collect::<String>()
        })
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| "an MCP client".into())
}

/// Record the call in the root session as a model's call would be: who called, the tool call,
/// its result. `cadre tasks`, `--continue`, export and `cadre trace` then see it.
async fn record(served: &Served, name: &str, args: Value, output: &ToolOutput, client: String) {
    let id = format!("mcp_{}", uuid::Uuid::now_v7().simple());
    let now = now_millis();
    let messages = vec![
        // A history that starts with the client's turn is valid for every provider.
        Message::Custom(CustomMessage {
            custom_type: "mcp-client-call".into(),
            content: UserContent::Text(format!(
                "{} called {name} through cadre mcp.",
                cadre_core::orchestrator::output::neutralize(&client)
            )),
            display: false,
            details: Some(json!({ "client": client })),
            timestamp: now,
        }),
        Message::Assistant(AssistantMessage {
            content: vec![ContentBlock::ToolCall(ToolCall {
                id: id.clone(),
                name: name.to_string(),
                arguments: args,
            })],
            api: "mcp".into(),
            provider: "mcp-client".into(),
            model: client,
            usage: cadre_protocol::Usage::default(),
            stop_reason: StopReason::ToolUse,
            error_message: None,
            timestamp: now,
            response_id: None,
        }),
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id,
            tool_name: name.to_string(),
            content: output.content.clone(),
            details: output.details.clone(),
            is_error: output.is_error,
            timestamp: now_millis(),
        }),
    ];
    if let Err(e) = served.host().append_messages(messages).await {
        errln!("cadre: warning: the {name} call could not be recorded in the session: {e}");
    }
}

/// The MCP result of a tool's output: its text (with the execution receipt), an error flag,
/// and the structured value when the call gave an `output_schema`.
fn result_of(output: &ToolOutput, with_schema: bool) -> CallToolResult {
    let content: Vec<rmcp::model::ContentBlock> = output
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(rmcp::model::ContentBlock::text(
                cadre_protocol::redact::redact_str(text).into_owned(),
            )),
            _ => None,
        })
        .collect();
    let mut result = if output.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    if with_schema
        && !output.is_error
        && let Some(value) = structured_value(output)
    {
        result.structured_content = Some(value);
    }
    result.meta = refusal_meta(output);
    result
}

/// The `_meta` key of a refused call's code: `{"cadre/refusal": {"code": "plan_mode"}}`.
pub const REFUSAL_META_KEY: &str = "cadre/refusal";
/// The `_meta` key of a `tasks` launch's refused entries:
/// `{"cadre/refusals": [{"task": 2, "code": "unknown_role"}]}`.
pub const REFUSALS_META_KEY: &str = "cadre/refusals";

/// The one place a refusal's code reaches MCP: the result's `_meta`, from the tool result's
/// `details` (see `cadre_core::orchestrator::tools::refused`); `None` for a call not refused.
fn refusal_meta(output: &ToolOutput) -> Option<rmcp::model::MetaObject> {
    use cadre_core::orchestrator::tools::{REFUSAL_DETAILS_KEY, REFUSALS_DETAILS_KEY};
    let details = output.details.as_ref()?;
    let mut meta = serde_json::Map::new();
    for (from, to) in [
        (REFUSAL_DETAILS_KEY, REFUSAL_META_KEY),
        (REFUSALS_DETAILS_KEY, REFUSALS_META_KEY),
    ] {
        if let Some(value) = details.get(from) {
            meta.insert(to.to_string(), value.clone());
        }
    }
    (!meta.is_empty()).then_some(rmcp::model::MetaObject(meta))
}

/// The value of a structured answer: the JSON between `<result>` and `</result>` of a
/// finished task. MCP wants an object; any other JSON value is wrapped as `{"value": …}`, as
/// the child was asked for it.
fn structured_value(output: &ToolOutput) -> Option<Value> {
    let text = output.content.iter().find_map(|b| match b {
        ContentBlock::Text { text } => Some(text.as_str()),
        _ => None,
    })?;
    let start = text.rfind("<result>\n")? + "<result>\n".len();
    let end = text.rfind("</result>")?;
    let inner = text.get(start..end)?.trim();
    match serde_json::from_str::<Value>(inner).ok()? {
        v @ Value::Object(_) => Some(v),
        other => Some(json!({ "value": other })),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn a_structured_answer_is_read_from_the_result() {
        let out = ToolOutput::ok("Task 1 (x \"y\"): completed\n<result>\n{\"n\": 2}\n</result>");
        assert_eq!(structured_value(&out), Some(json!({"n": 2})));
        let out = ToolOutput::ok("Task 1: completed\n<result>\n[1]\n</result>");
        assert_eq!(structured_value(&out), Some(json!({"value": [1]})));
        let out = ToolOutput::ok("Task 1: completed\n<result>\nnot json\n</result>");
        assert_eq!(structured_value(&out), None);
    }

    #[test]
    fn a_refusal_s_code_is_in_the_result_s_meta() {
        use cadre_core::orchestrator::manager::LaunchError;
        let out =
            cadre_core::orchestrator::tools::refused(&LaunchError::DepthLimit { max_depth: 2 });
        let result = serde_json::to_value(result_of(&out, false)).unwrap();
        assert_eq!(result["isError"], true);
        assert_eq!(
            result["_meta"],
            json!({"cadre/refusal": {"code": "depth_limit"}})
        );
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("maximum nesting depth")
        );
        let ok = serde_json::to_value(result_of(&ToolOutput::ok("fine"), false)).unwrap();
        assert!(ok.get("_meta").is_none(), "{ok}");
        let set = ToolOutput::ok("2 tasks")
            .with_details(json!({"refusals": [{"task": 2, "code": "plan_mode"}]}));
        let set = serde_json::to_value(result_of(&set, false)).unwrap();
        assert_eq!(set["_meta"]["cadre/refusals"][0]["code"], "plan_mode");
    }

    #[test]
    fn a_tool_schema_is_an_object_schema() {
        let spec = ToolSpec {
            name: "TaskStop".into(),
            description: "d".into(),
            parameters: json!({"properties": {}}),
        };
        assert_eq!(tool_json(&spec)["inputSchema"]["type"], "object");
    }
}
