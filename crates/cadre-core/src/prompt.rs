//! The default system prompt, modelled on Pi's: who the agent is, its tools, guidelines that
//! depend on which tools it has, the project context files, and the date and cwd last.

use std::path::Path;
use std::time::SystemTime;

use cadre_protocol::ToolSpec;

use crate::context::ContextFile;

/// One-line descriptions of the built-in tools (Pi's wording); other tools use the first line
/// of their own description.
const BUILTIN_DESCRIPTIONS: [(&str, &str); 7] = [
    ("read", "Read file contents"),
    ("bash", "Execute bash commands (ls, grep, find, etc.)"),
    (
        "edit",
        "Make surgical edits to files (find exact text and replace)",
    ),
    ("write", "Create or overwrite files"),
    (
        "grep",
        "Search file contents for patterns (respects .gitignore)",
    ),
    ("find", "Find files by glob pattern (respects .gitignore)"),
    ("ls", "List directory contents"),
];

/// Longest tool description line put into the prompt.
const MAX_TOOL_LINE: usize = 200;

/// Everything the system prompt is built from.
#[derive(Debug, Clone, Copy)]
pub struct SystemPromptInput<'a> {
    pub cwd: &'a Path,
    /// Today's date as it should appear, e.g. from [`today`].
    pub date: &'a str,
    pub tools: &'a [ToolSpec],
    pub context_files: &'a [ContextFile],
    /// `--system-prompt`: replaces the base prompt. `{{tools}}` and `{{context}}` in it are
    /// replaced by the tool list and the context files (which are then not appended again).
    pub custom: Option<&'a str>,
    /// `--append-system-prompt` texts, appended in order.
    pub append: &'a [String],
}

/// Today's date (UTC) as `YYYY-MM-DD`.
pub fn today(now: SystemTime) -> String {
    let stamp = humantime::format_rfc3339_seconds(now).to_string();
    stamp.chars().take(10).collect()
}

/// Build the system prompt.
pub fn build_system_prompt(input: &SystemPromptInput<'_>) -> String {
    let tools = tool_list(input.tools);
    let context = context_section(input.context_files);
    let mut prompt = match input.custom {
        Some(custom) => {
            let mut p = custom.replace("{{tools}}", &tools);
            if p.contains("{{context}}") {
                p = p.replace("{{context}}", &context);
            } else if !context.is_empty() {
                p.push_str("\n\n");
                p.push_str(&context);
            }
            p
        }
        None => {
            let mut p = base_prompt(input.tools, &tools);
            if !context.is_empty() {
                p.push_str("\n\n");
                p.push_str(&context);
            }
            p
        }
    };
    for extra in input.append.iter().filter(|a| !a.trim().is_empty()) {
        prompt.push_str("\n\n");
        prompt.push_str(extra.trim_end());
    }
    prompt.push_str(&format!("\n\nCurrent date: {}", input.date));
    prompt.push_str(&format!(
        "\nCurrent working directory: {}",
        input.cwd.display()
    ));
    prompt
}

fn base_prompt(specs: &[ToolSpec], tools: &str) -> String {
    let has = |name: &str| specs.iter().any(|t| t.name == name);
    let mut guidelines: Vec<&str> = Vec::new();
    let explorers = has("grep") || has("find") || has("ls");
    if has("bash") && !explorers {
        guidelines.push("Use bash for file operations like ls, rg, find");
    } else if has("bash") && explorers {
        guidelines.push(
            "Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)",
        );
    }
    if has("read") && has("edit") {
        guidelines.push(
            "Use read to examine files before editing. You must use this tool instead of cat or sed.",
        );
    }
    if has("edit") {
        guidelines.push("Use edit for precise changes (old text must match exactly)");
    }
    if has("write") {
        guidelines.push("Use write only for new files or complete rewrites");
    }
    if has("edit") || has("write") {
        guidelines.push(
            "When summarizing your actions, output plain text directly - do NOT use cat or bash to display what you did",
        );
    }
    guidelines.push("Be concise in your responses");
    guidelines.push("Show file paths clearly when working with files");
    let guidelines: Vec<String> = guidelines.iter().map(|g| format!("- {g}")).collect();

    format!(
        "You are an expert coding assistant operating inside cadre, a coding agent harness. \
         You help users by reading files, executing commands, editing code, and writing new files.\n\n\
         Available tools:\n{tools}\n\n\
         In addition to the tools above, you may have access to other custom tools depending on the project.\n\n\
         Guidelines:\n{}",
        guidelines.join("\n")
    )
}

fn tool_list(specs: &[ToolSpec]) -> String {
    if specs.is_empty() {
        return "(none)".into();
    }
    let lines: Vec<String> = specs
        .iter()
        .map(|t| format!("- {}: {}", t.name, short_description(t)))
        .collect();
    lines.join("\n")
}

fn short_description(tool: &ToolSpec) -> String {
    if let Some((_, d)) = BUILTIN_DESCRIPTIONS.iter().find(|(n, _)| *n == tool.name) {
        return (*d).to_string();
    }
    let first = tool
        .description
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("Custom tool");
    if first.chars().count() > MAX_TOOL_LINE {
        let cut: String = first.chars().take(MAX_TOOL_LINE).collect();
        format!("{cut}…")
    } else {
        first.to_string()
    }
}

fn context_section(files: &[ContextFile]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut s =
        String::from("# Project Context\n\nProject-specific instructions and guidelines:\n");
    for f in files {
        s.push_str(&format!(
            "\n## {}\n\n{}\n",
            f.path.display(),
            f.content.trim_end()
        ));
    }
    s.trim_end().to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;
    use std::time::Duration;

    fn spec(name: &str, description: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: json!({}),
        }
    }

    #[test]
    fn today_is_utc_date() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_733_234_400);
        assert_eq!(today(t), "2024-12-03");
    }

    #[test]
    fn default_prompt_names_cwd_date_tools_and_context() {
        let tools = vec![
            spec("read", "long read description"),
            spec("bash", "x"),
            spec("edit", "x"),
            spec("grep", "x"),
            spec("mytool", "\n  Does custom things.\nMore detail."),
        ];
        let files = vec![ContextFile {
            path: PathBuf::from("/p/AGENTS.md"),
            content: "Use tabs.\n".into(),
        }];
        let append = vec!["Extra rule.".to_string(), "  ".to_string()];
        let p = build_system_prompt(&SystemPromptInput {
            cwd: Path::new("/p/work"),
            date: "2024-12-03",
            tools: &tools,
            context_files: &files,
            custom: None,
            append: &append,
        });
        assert!(p.starts_with("You are an expert coding assistant operating inside cadre"));
        assert!(p.contains("- read: Read file contents"));
        assert!(p.contains("- mytool: Does custom things."));
        assert!(p.contains("Prefer grep/find/ls tools over bash"));
        assert!(p.contains("Use read to examine files before editing"));
        assert!(!p.contains("Use write only"));
        assert!(p.contains("# Project Context"));
        assert!(p.contains("## /p/AGENTS.md\n\nUse tabs."));
        assert!(p.contains("\n\nExtra rule."));
        assert!(p.ends_with("Current date: 2024-12-03\nCurrent working directory: /p/work"));
        // Context comes before the appended text, date and cwd last.
        assert!(p.find("Use tabs.").unwrap() < p.find("Extra rule.").unwrap());
    }

    #[test]
    fn no_tools_and_bash_only_variants() {
        let p = build_system_prompt(&SystemPromptInput {
            cwd: Path::new("/"),
            date: "d",
            tools: &[],
            context_files: &[],
            custom: None,
            append: &[],
        });
        assert!(p.contains("Available tools:\n(none)"));
        assert!(!p.contains("Project Context"));
        let bash = vec![spec("bash", "x")];
        let p = build_system_prompt(&SystemPromptInput {
            cwd: Path::new("/"),
            date: "d",
            tools: &bash,
            context_files: &[],
            custom: None,
            append: &[],
        });
        assert!(p.contains("Use bash for file operations"));
    }

    #[test]
    fn custom_prompt_replaces_base_and_fills_templates() {
        let tools = vec![spec("ls", "x")];
        let files = vec![ContextFile {
            path: PathBuf::from("/AGENTS.md"),
            content: "ctx".into(),
        }];
        let p = build_system_prompt(&SystemPromptInput {
            cwd: Path::new("/w"),
            date: "d",
            tools: &tools,
            context_files: &files,
            custom: Some("Role.\nTools:\n{{tools}}\n{{context}}\nEnd."),
            append: &["More.".to_string()],
        });
        assert!(p.starts_with("Role.\nTools:\n- ls: List directory contents\n# Project Context"));
        assert_eq!(p.matches("ctx").count(), 1);
        assert!(!p.contains("expert coding assistant"));
        assert!(p.contains("End.\n\nMore.\n\nCurrent date: d"));

        let long = "x".repeat(300);
        let tools = vec![spec("t", &long)];
        let p = build_system_prompt(&SystemPromptInput {
            cwd: Path::new("/w"),
            date: "d",
            tools: &tools,
            context_files: &files,
            custom: Some("Plain {{tools}}"),
            append: &[],
        });
        assert!(p.contains(&format!("- t: {}…", "x".repeat(200))));
        assert!(p.contains("Plain - t:"));
        assert!(p.contains("## /AGENTS.md\n\nctx"));
    }
}
