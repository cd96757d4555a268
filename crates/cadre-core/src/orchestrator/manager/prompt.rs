//! The child's system prompt and first message.

use std::path::Path;
use std::time::SystemTime;

use cadre_protocol::ToolSpec;

use crate::context::collect_context_files;
use crate::handoff::contract::append_output_contract;
use crate::orchestrator::lifecycle::STAGE_NOTE_INSTRUCTION;
use crate::prompt::{SystemPromptInput, build_system_prompt, today};
use crate::roles::{RoleDef, Skill};

/// Roles that start without the project's context files (T8).
const NO_CONTEXT_FILES: [&str; 2] = ["Explore", "Plan"];

/// Who the child is and how it reports, put before the role's own body.
const SUBAGENT_PREAMBLE: &str = "You are a subagent: a parent agent delegated the task in the \
user message to you. Work on it autonomously with your tools; the parent sees only your final \
message, so end with a complete, self-contained answer (not a question).";

/// The system prompt of a fresh child: the host prompt for its tools and cwd, the role body and
/// preloaded skills, the stage-note instruction (L5), and the date and cwd last.
pub(crate) fn child_system_prompt(
    role: &RoleDef,
    skills: &[Skill],
    tools: &[ToolSpec],
    cwd: &Path,
    cadre_home: &Path,
) -> String {
    let context_files = if NO_CONTEXT_FILES.contains(&role.name.as_str()) {
        Vec::new()
    } else {
        collect_context_files(cwd, cadre_home).files
    };
    let mut append = vec![SUBAGENT_PREAMBLE.to_string()];
    if !role.prompt.trim().is_empty() {
        append.push(role.prompt.trim().to_string());
    }
    for skill in skills {
        append.push(format!(
            "<skill name=\"{}\">\n{}\n</skill>",
            skill.name,
            skill.content.trim()
        ));
    }
    append.push(STAGE_NOTE_INSTRUCTION.to_string());
    let date = today(SystemTime::now());
    build_system_prompt(&SystemPromptInput {
        cwd,
        date: &date,
        tools,
        context_files: &context_files,
        custom: None,
        append: &append,
    })
}

/// The child's task message: the prompt, then the output contract at the very end (V1).
pub(crate) fn task_message(prompt: &str, expected_output: Option<&str>) -> String {
    append_output_contract(prompt, expected_output.unwrap_or(""))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::handoff::contract::OUTPUT_CONTRACT_HEADING;

    #[test]
    fn contract_goes_last() {
        let t = task_message("Find the bug.\n", Some("- root cause\n- fix"));
        assert!(t.starts_with("Find the bug."));
        assert!(t.ends_with(&format!("{OUTPUT_CONTRACT_HEADING}\n- root cause\n- fix")));
        assert_eq!(task_message("x", Some("  ")), "x");
        assert_eq!(task_message("x", None), "x");
    }

    #[test]
    fn system_prompt_has_role_body_and_stage_note() {
        let role = RoleDef {
            name: "Explore".into(),
            prompt: "Trace code paths.".into(),
            ..RoleDef::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let p = child_system_prompt(&role, &[], &[], dir.path(), dir.path());
        assert!(p.contains("Trace code paths."));
        assert!(p.contains(STAGE_NOTE_INSTRUCTION));
        assert!(p.contains("subagent"));
    }
}
