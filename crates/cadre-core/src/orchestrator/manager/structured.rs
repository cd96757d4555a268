//! Structured output (SPEC V8): a task launched with `output_schema` answers through a
//! terminating `structured_output` tool. Its argument is validated against the schema
//! ([`crate::handoff::schema`]); an invalid value is an error result that says exactly what is
//! wrong (the child may retry), a valid one is kept, ends the run, and becomes the task's
//! result as JSON.

use std::sync::{Arc, Mutex, OnceLock};

use cadre_protocol::ToolSpec;
use cadre_tools::{Tool, ToolContext, ToolOutput};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::handle::lock;
use crate::agent::AgentController;
use crate::handoff::schema::validate;

pub(crate) const STRUCTURED_OUTPUT_TOOL: &str = "structured_output";

/// What the child is told in its task when it must answer with structured output.
pub(crate) const STRUCTURED_OUTPUT_INSTRUCTION: &str = "Answer by calling the \
`structured_output` tool with a value matching its schema; that call ends your task and its \
value is your whole answer. If it is rejected, fix what it names and call it again.";

/// Where the accepted value is kept for the run.
pub(crate) type StructuredSlot = Arc<Mutex<Option<Value>>>;

pub(crate) struct StructuredOutputTool {
    schema: Value,
    /// A non-object schema is wrapped as the `value` property (tool arguments are objects).
    wrapped: bool,
    slot: StructuredSlot,
    /// The child's controller (set once the agent exists): an accepted value ends the run.
    stop: Arc<OnceLock<AgentController>>,
}

impl StructuredOutputTool {
    pub(crate) fn new(
        schema: Value,
        slot: StructuredSlot,
        stop: Arc<OnceLock<AgentController>>,
    ) -> StructuredOutputTool {
        let wrapped = schema.get("type").and_then(Value::as_str) != Some("object");
        StructuredOutputTool {
            schema,
            wrapped,
            slot,
            stop,
        }
    }

    /// Validate a call's arguments; `Ok` is the accepted value.
    pub(crate) fn accept(&self, args: &Value) -> Result<Value, Vec<String>> {
        let value = if self.wrapped {
            match args.get("value") {
                Some(v) => v.clone(),
                None => return Err(vec!["$: missing the `value` argument".into()]),
            }
        } else {
            args.clone()
        };
        let errors = validate(&self.schema, &value);
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(errors)
        }
    }
}

impl Tool for StructuredOutputTool {
    fn name(&self) -> &str {
        STRUCTURED_OUTPUT_TOOL
    }

    fn spec(&self) -> ToolSpec {
        let parameters = if self.wrapped {
            json!({
                "type": "object",
                "properties": {"value": self.schema},
                "required": ["value"],
                "additionalProperties": false
            })
        } else {
            self.schema.clone()
        };
        ToolSpec {
            name: STRUCTURED_OUTPUT_TOOL.into(),
            description: "Submit your final answer as JSON matching this schema. A valid call \
                          ends your task; an invalid one is rejected with the reasons."
                .into(),
            parameters,
        }
    }

    fn execute<'a>(&'a self, args: Value, _ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            match self.accept(&args) {
                Ok(value) => {
                    *lock(&self.slot) = Some(value);
                    // The run ends here: no further turn sees this result.
                    if let Some(c) = self.stop.get() {
                        c.abort();
                    }
                    ToolOutput::ok(
                        "Accepted: your structured output is recorded; your task is complete.",
                    )
                }
                Err(errors) => ToolOutput::error(format!(
                    "Rejected: the value does not match the output schema:\n- {}\nFix these and \
                     call structured_output again.",
                    errors.join("\n- ")
                )),
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn object_schemas_are_the_arguments_and_others_are_wrapped() {
        let slot = StructuredSlot::default();
        let stop = Arc::new(OnceLock::new());
        let t = StructuredOutputTool::new(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
            slot.clone(),
            stop.clone(),
        );
        assert_eq!(t.spec().parameters["required"], json!(["n"]));
        assert_eq!(t.accept(&json!({"n": 1})).unwrap(), json!({"n": 1}));
        assert_eq!(
            t.accept(&json!({"n": "1"})).unwrap_err(),
            ["$.n: expected integer, got string"]
        );
        let list = StructuredOutputTool::new(json!({"type": "array"}), slot, stop);
        assert_eq!(list.spec().parameters["required"], json!(["value"]));
        assert_eq!(list.accept(&json!({"value": [1]})).unwrap(), json!([1]));
        assert!(list.accept(&json!({})).is_err());
    }
}
