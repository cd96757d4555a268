//! The tool trait and the registry of an agent's active tools.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use cadre_protocol::{ContentBlock, ToolSpec};
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Where and under what conditions a tool call runs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Working directory relative paths resolve against.
    pub cwd: PathBuf,
    /// Cancelled on abort: a tool must stop promptly (kill processes, stop walking).
    pub cancel: CancellationToken,
    /// Partial results for `tool_execution_update` events (e.g. bash output so far).
    pub updates: Option<mpsc::UnboundedSender<Value>>,
    /// Directory for artifacts such as bash's full output when the result was truncated.
    pub artifacts_dir: PathBuf,
}

/// The result of a tool call as the model will see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: Vec<ContentBlock>,
    /// Tool-specific metadata kept in the session (not sent to the model).
    pub details: Option<Value>,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            details: None,
            is_error: false,
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            details: None,
            is_error: true,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// A tool the model can call.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;

    /// Name, description and JSON Schema of the parameters.
    fn spec(&self) -> ToolSpec;

    /// True for tools that change files or run arbitrary commands.
    fn is_mutating(&self) -> bool {
        false
    }

    /// The file this call would change, if it is a single-file mutation. Calls that mutate the
    /// same file are serialised; everything else in one turn may run concurrently.
    fn mutation_target(&self, _args: &Value, _cwd: &std::path::Path) -> Option<PathBuf> {
        None
    }

    fn execute<'a>(&'a self, args: Value, ctx: ToolContext) -> BoxFuture<'a, ToolOutput>;
}

/// The active tools of one agent, in a stable order.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    /// The tools' specs, built on first use: a child agent needs them for its system prompt and
    /// for every request, and building them allocates a JSON schema per tool.
    specs: OnceLock<Arc<[ToolSpec]>>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a tool, replacing one of the same name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
        self.specs = OnceLock::new();
    }

    /// Put `tool` in the place of the tool of the same name (the order the model sees stays);
    /// without one, add it last.
    pub fn replace(&mut self, tool: Arc<dyn Tool>) {
        match self.tools.iter_mut().find(|t| t.name() == tool.name()) {
            Some(slot) => *slot = tool,
            None => self.tools.push(tool),
        }
        self.specs = OnceLock::new();
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name().to_string()).collect()
    }

    /// The specs of the tools, in order; built once and shared by every caller.
    pub fn specs(&self) -> Arc<[ToolSpec]> {
        Arc::clone(
            self.specs
                .get_or_init(|| self.tools.iter().map(|t| t.spec()).collect()),
        )
    }

    /// Take `specs`, built for an earlier registry of the same kind of tools, instead of
    /// building them again (a fan-out's children share one copy). Ignored, returning false,
    /// unless they name exactly these tools in this order; the caller vouches that tools of the
    /// same name here describe themselves the same way.
    pub fn reuse_specs(&mut self, specs: &Arc<[ToolSpec]>) -> bool {
        let same = specs.len() == self.tools.len()
            && specs
                .iter()
                .zip(&self.tools)
                .all(|(spec, tool)| spec.name == tool.name());
        if same {
            self.specs = OnceLock::from(Arc::clone(specs));
        }
        same
    }

    /// Keep only the named tools. Unknown names are returned as an error listing them, so a
    /// typo never silently widens or empties the set.
    pub fn retain_named(&mut self, names: &[String]) -> Result<(), Vec<String>> {
        let unknown: Vec<String> = names
            .iter()
            .filter(|n| self.get(n).is_none())
            .cloned()
            .collect();
        if !unknown.is_empty() {
            return Err(unknown);
        }
        self.tools.retain(|t| names.iter().any(|n| n == t.name()));
        self.specs = OnceLock::new();
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}
