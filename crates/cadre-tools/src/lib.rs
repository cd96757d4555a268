//! Tools for cadre agents.
//!
//! A [`Tool`] is a named operation the model may call with JSON arguments. Failures are results
//! the model sees (`ToolOutput { is_error: true, .. }`), never panics or runtime errors. The
//! [`ToolRegistry`] holds the active tool set of one agent; the built-in tools follow Pi's names,
//! parameters and output limits.

pub mod args;
pub mod bash;
pub mod diff;
pub mod edit;
pub use cadre_sandbox::fds;
pub mod find;
mod fsutil;
pub mod full_output;
mod fuzzy;
pub mod git;
pub mod grep;
pub use cadre_sandbox::hidden;
mod listing;
pub mod ls;
mod names;
pub mod paths;
pub mod read;
pub mod registry;
pub mod sandbox;
pub mod shell_env;
pub mod shell_policy;
pub use cadre_sandbox::supervise;
pub mod tree_fingerprint;
pub mod truncate;
mod unsearched;
pub mod write;

use std::sync::Arc;

pub use bash::BashTool;
pub use edit::EditTool;
pub use find::FindTool;
/// Image sniffing and base64, shared with the `@file` arguments of the front ends.
pub use fsutil::{base64_encode, image_mime};
pub use grep::GrepTool;
pub use ls::LsTool;
pub use read::ReadTool;
pub use registry::{Tool, ToolContext, ToolOutput, ToolRegistry};
pub use write::WriteTool;

/// The built-in tools, in the order they are registered and described to the model.
pub const BUILTIN_TOOL_NAMES: &[&str] = &["read", "bash", "edit", "write", "grep", "find", "ls"];

/// A registry with all seven built-in tools, in [`BUILTIN_TOOL_NAMES`] order.
pub fn builtin_tools() -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry.register(Arc::new(ReadTool));
    registry.register(Arc::new(BashTool::new()));
    registry.register(Arc::new(EditTool));
    registry.register(Arc::new(WriteTool));
    registry.register(Arc::new(GrepTool));
    registry.register(Arc::new(FindTool));
    registry.register(Arc::new(LsTool));
    registry
}

/// Run blocking file-system work off the async runtime. A panic inside becomes an error result
/// rather than taking the agent down.
pub(crate) async fn blocking<F>(work: F) -> ToolOutput
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(output) => output,
        Err(e) => ToolOutput::error(format!("Internal error in tool: {e}")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_built_once_and_follow_changes() {
        let mut registry = builtin_tools();
        let first = registry.specs();
        assert!(Arc::ptr_eq(&first, &registry.specs()), "built again");
        assert_eq!(first.len(), registry.names().len());
        registry
            .retain_named(&["read".to_string(), "ls".to_string()])
            .unwrap();
        let names: Vec<String> = registry.specs().iter().map(|s| s.name.clone()).collect();
        assert_eq!(names, ["read", "ls"]);
        registry.register(Arc::new(GrepTool));
        let names: Vec<String> = registry.specs().iter().map(|s| s.name.clone()).collect();
        assert_eq!(names, ["read", "ls", "grep"]);
    }

    #[test]
    fn reused_specs_must_name_the_same_tools_in_order() {
        let mut a = builtin_tools();
        a.retain_named(&["read".to_string(), "ls".to_string()])
            .unwrap();
        let specs = a.specs();
        let mut b = builtin_tools();
        b.retain_named(&["read".to_string(), "ls".to_string()])
            .unwrap();
        assert!(b.reuse_specs(&specs));
        assert!(Arc::ptr_eq(&b.specs(), &specs));
        let mut c = builtin_tools();
        c.retain_named(&["ls".to_string(), "grep".to_string()])
            .unwrap();
        assert!(!c.reuse_specs(&specs));
        let names: Vec<String> = c.specs().iter().map(|s| s.name.clone()).collect();
        assert_eq!(names, ["grep", "ls"]);
    }

    #[test]
    fn builtin_registry_matches_names() {
        let registry = builtin_tools();
        assert_eq!(registry.names(), BUILTIN_TOOL_NAMES);
        for spec in registry.specs().iter() {
            assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
            assert!(!spec.description.is_empty());
        }
        let mutating: Vec<String> = BUILTIN_TOOL_NAMES
            .iter()
            .filter(|n| registry.get(n).is_some_and(|t| t.is_mutating()))
            .map(|n| n.to_string())
            .collect();
        assert_eq!(mutating, ["bash", "edit", "write"]);
    }

    #[test]
    fn mutation_targets_resolve_paths() {
        let registry = builtin_tools();
        let cwd = std::path::Path::new("/w");
        let args = serde_json::json!({"path": "a/../b.txt", "content": "x"});
        for name in ["write", "edit"] {
            let tool = registry.get(name).unwrap();
            assert_eq!(
                tool.mutation_target(&args, cwd),
                Some(std::path::PathBuf::from("/w/b.txt"))
            );
            assert_eq!(tool.mutation_target(&serde_json::json!(7), cwd), None);
        }
        assert_eq!(
            registry.get("bash").unwrap().mutation_target(&args, cwd),
            None
        );
    }
}
