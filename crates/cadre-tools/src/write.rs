//! `write{path, content}`: create or replace a file, creating parent directories.

use std::fs;
use std::path::{Path, PathBuf};

use cadre_protocol::ToolSpec;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use crate::args::{ArgError, Args};
use crate::fsutil::atomic_write;
use crate::registry::{Tool, ToolContext, ToolOutput};
use crate::{blocking, paths};

#[derive(Debug, Clone, Copy, Default)]
pub struct WriteTool;

/// The resolved path of a call that names one file (write and edit).
pub(crate) fn target_path(args: &Value, cwd: &Path) -> Option<PathBuf> {
    let args = Args::parse(args.clone()).ok()?;
    let raw = args.optional_str("path").ok()??;
    Some(paths::resolve(&raw, cwd))
}

impl Tool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write".into(),
            description: "Write content to a file. Creates the file if it doesn't exist, \
                          overwrites if it does. Automatically creates parent directories."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
                    "content": {"type": "string", "description": "Content to write to the file"}
                },
                "required": ["path", "content"]
            }),
        }
    }

    fn is_mutating(&self) -> bool {
        true
    }

    fn mutation_target(&self, args: &Value, cwd: &Path) -> Option<PathBuf> {
        target_path(args, cwd)
    }

    fn execute<'a>(&'a self, args: Value, ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let parsed = (|| {
                let args = Args::parse(args)?;
                Ok::<_, ArgError>((args.required_str("path")?, args.required_str("content")?))
            })();
            let (raw, content) = match parsed {
                Ok(p) => p,
                Err(e) => return e.into_output("write"),
            };
            if ctx.cancel.is_cancelled() {
                return ToolOutput::error("Operation aborted");
            }
            let abs = paths::resolve(&raw, &ctx.cwd);
            blocking(move || write_file(&raw, &abs, &content)).await
        })
    }
}

fn write_file(raw: &str, abs: &Path, content: &str) -> ToolOutput {
    if abs.is_dir() {
        return ToolOutput::error(format!("Cannot write {raw}: it is a directory"));
    }
    if let Some(parent) = abs.parent()
        && let Err(e) = fs::create_dir_all(parent)
    {
        return ToolOutput::error(format!("Cannot create directory {}: {e}", parent.display()));
    }
    match atomic_write(abs, content.as_bytes()) {
        Ok(()) => ToolOutput::ok(format!(
            "Successfully wrote {} bytes to {raw}",
            content.len()
        )),
        Err(e) => ToolOutput::error(format!("Cannot write {raw}: {e}")),
    }
}
