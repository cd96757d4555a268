//! An MCP server's tool as a cadre tool (`mcp__<server>__<tool>`).

use std::sync::Arc;

use cadre_protocol::ToolSpec;
use cadre_tools::{Tool, ToolContext, ToolOutput};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use crate::names;
use crate::result::map_result;
use crate::server::{CallFailure, Server};

/// The longest description passed on (a server's descriptions go into every request).
pub const MAX_DESCRIPTION: usize = 4096;
/// The largest input schema passed on, serialized; a larger one is replaced by an empty object
/// schema (the server still checks the arguments).
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;

/// The most bytes (name, description and serialized schema) of one server's tools passed on:
/// every request of the root and of its children carries them.
pub const MAX_SERVER_SPEC_BYTES: usize = 256 * 1024;
/// The most bytes of all servers' tools together.
pub const MAX_TOTAL_SPEC_BYTES: usize = 512 * 1024;
/// The most characters of a server's own tool name quoted in a description.
pub const MAX_QUOTED_NAME: usize = 128;

/// One tool of one server.
pub struct McpTool {
    name: String,
    remote: String,
    description: String,
    schema: Value,
    read_only: bool,
    /// What its spec adds to a request, in bytes.
    spec_bytes: usize,
    server: Arc<Server>,
}

impl McpTool {
    /// `server`'s tool `tool` under `name` (see [`names::tool_name`]).
    pub fn new(server: Arc<Server>, tool: &rmcp::model::Tool, name: String) -> McpTool {
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or("");
        let description =
            cadre_tools::truncate::head_on_char_boundary(description, MAX_DESCRIPTION);
        let description = format!(
            "{description}{}(MCP tool `{}` of server `{}`)",
            if description.is_empty() { "" } else { "\n\n" },
            crate::shown::one_line(&tool.name, MAX_QUOTED_NAME),
            server.name
        );
        let schema = bounded(object_schema(Value::Object((*tool.input_schema).clone())));
        let spec_bytes = name.len()
            + description.len()
            + serde_json::to_string(&schema).map_or(MAX_SCHEMA_BYTES, |s| s.len());
        McpTool {
            name,
            remote: tool.name.to_string(),
            description,
            schema,
            read_only,
            spec_bytes,
            server,
        }
    }

    /// Whether the server annotates it `readOnlyHint: true`.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    pub fn server_name(&self) -> &str {
        &self.server.name
    }

    /// What its spec adds to every request, in bytes.
    pub fn spec_bytes(&self) -> usize {
        self.spec_bytes
    }
}

/// `schema`, or an empty object schema when it is over [`MAX_SCHEMA_BYTES`].
fn bounded(schema: Value) -> Value {
    let size = serde_json::to_string(&schema).map_or(usize::MAX, |s| s.len());
    if size > MAX_SCHEMA_BYTES {
        json!({"type": "object"})
    } else {
        schema
    }
}

/// Providers take only object schemas for parameters: one without a type gets `object`, and
/// anything else — or an object schema whose `properties` is not an object of schemas or whose
/// `required` is not a list of names, which a provider refuses with the whole request — is
/// replaced by an empty object schema.
fn object_schema(schema: Value) -> Value {
    let malformed = |map: &serde_json::Map<String, Value>| {
        let bad_properties = map.get("properties").is_some_and(|p| {
            p.as_object()
                .is_none_or(|props| props.values().any(|v| !v.is_object() && !v.is_boolean()))
        });
        let bad_required = map.get("required").is_some_and(|r| {
            r.as_array()
                .is_none_or(|names| names.iter().any(|n| !n.is_string()))
        });
        bad_properties || bad_required
    };
    match schema {
        Value::Object(map) if malformed(&map) => json!({"type": "object"}),
        Value::Object(mut map) => match map.get("type") {
            None => {
                map.insert("type".into(), json!("object"));
                Value::Object(map)
            }
            Some(t) if t == "object" => Value::Object(map),
            Some(_) => json!({"type": "object"}),
        },
        _ => json!({"type": "object"}),
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.schema.clone(),
        }
    }

    fn is_mutating(&self) -> bool {
        !self.read_only
    }

    fn execute<'a>(&'a self, args: Value, ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let server = &self.server.name;
            let arguments = match args {
                Value::Object(map) => Some(map),
                Value::Null => None,
                other => {
                    return ToolOutput::error(format!(
                        "the arguments of {} must be a JSON object, not {other}",
                        self.name
                    ));
                }
            };
            if self.server.is_closed() {
                return ToolOutput::error(self.closed_message("it is no longer running"));
            }
            match self.server.call(&self.remote, arguments, &ctx.cancel).await {
                Ok(result) => map_result(server, &self.remote, &result),
                Err(CallFailure::Cancelled) => ToolOutput::error("Operation aborted"),
                Err(CallFailure::TimedOut(after)) => ToolOutput::error(format!(
                    "MCP server `{server}` did not answer the call of `{}` within {}s; the call \
                     was cancelled",
                    self.remote,
                    after.as_secs_f64()
                )),
                Err(CallFailure::Error(message)) => ToolOutput::error(format!(
                    "MCP server `{server}` refused the call of `{}`: {}",
                    self.remote,
                    names_safe(&message)
                )),
                // Over HTTP a failed request can leave the session usable; a closed channel
                // cannot be.
                Err(CallFailure::Closed(why)) if self.server.is_closed() => {
                    ToolOutput::error(self.closed_message(&why))
                }
                Err(CallFailure::Closed(why)) => ToolOutput::error(format!(
                    "MCP server `{server}` could not run `{}`: {}",
                    self.remote,
                    names_safe(&why)
                )),
            }
        })
    }
}

impl McpTool {
    fn closed_message(&self, why: &str) -> String {
        let log = self
            .server
            .log
            .as_ref()
            .map(|p| format!("; its stderr is in {}", p.display()))
            .unwrap_or_default();
        format!(
            "MCP server `{}` cannot run `{}`: {why} (the server has exited or its session \
             ended, so its tools fail for the rest of this session{log})",
            self.server.name, self.remote
        )
    }
}

/// A server's error message, cut to a sane length.
fn names_safe(message: &str) -> String {
    const MAX: usize = 8 * 1024;
    let head = cadre_tools::truncate::head_on_char_boundary(message, MAX);
    if head.len() < message.len() {
        format!("{head}… [cut]")
    } else {
        head.to_string()
    }
}

/// The model-facing tools of `server`, and a note for each tool left out (a name that
/// collides after it was made to fit) and for those past [`MAX_SERVER_SPEC_BYTES`].
pub fn tools_of(server: &Arc<Server>) -> (Vec<Arc<McpTool>>, Vec<String>) {
    let mut tools: Vec<Arc<McpTool>> = Vec::new();
    let mut notes = Vec::new();
    let mut bytes = 0;
    let mut over = 0;
    for tool in &server.tools {
        let name = names::tool_name(&server.name, &tool.name);
        if tools.iter().any(|t| t.name == name) {
            notes.push(format!(
                "tool {:?} of MCP server `{}` is left out: its name {name} is taken",
                crate::shown::one_line(&tool.name, MAX_QUOTED_NAME),
                server.name
            ));
            continue;
        }
        let tool = McpTool::new(server.clone(), tool, name);
        if over > 0 || bytes + tool.spec_bytes > MAX_SERVER_SPEC_BYTES {
            over += 1;
            continue;
        }
        bytes += tool.spec_bytes;
        tools.push(Arc::new(tool));
    }
    if over > 0 {
        notes.push(format!(
            "{over} tool(s) of MCP server `{}` are left out: its tools' descriptions and \
             schemas pass {} KiB, which every model request would carry",
            server.name,
            MAX_SERVER_SPEC_BYTES / 1024
        ));
    }
    (tools, notes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn parameter_schemas_are_objects() {
        let props = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert_eq!(object_schema(props.clone()), props);
        assert_eq!(
            object_schema(json!({"properties": {}})),
            json!({"properties": {}, "type": "object"})
        );
        assert_eq!(
            object_schema(json!({"type": "string"})),
            json!({"type": "object"})
        );
        assert_eq!(object_schema(json!([1])), json!({"type": "object"}));
        for bad in [
            json!({"type": "object", "properties": 5}),
            json!({"type": "object", "properties": {"a": "string"}}),
            json!({"type": "object", "required": "a"}),
            json!({"type": "object", "required": [1]}),
            json!({"type": ["object", "null"]}),
        ] {
            assert_eq!(
                object_schema(bad.clone()),
                json!({"type": "object"}),
                "{bad}"
            );
        }
        let huge = json!({"type": "object", "description": "x".repeat(MAX_SCHEMA_BYTES)});
        assert_eq!(bounded(huge), json!({"type": "object"}));
        assert_eq!(bounded(props.clone()), props);
        assert!(names_safe(&"e".repeat(20_000)).ends_with("… [cut]"));
    }
}
