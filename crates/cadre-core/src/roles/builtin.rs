//! The built-in roles (SPEC T5). Each is replaceable, whole, by a same-name file in a higher
//! layer; names match case-insensitively and every alias resolves to one role.
//!
//! Tool lists name only cadre's own tools; the orchestrator intersects them with the parent's
//! active tools and the child denylist (S1), so a built-in never grants more than the parent has.
//! `readonly` and `shellPolicy` here are enforced (S2, S3), not advice.

use super::parse::{ContextMode, RoleDef, ShellPolicy, ToolList};

/// Built-in names that are not lowercase; files may use them as names.
pub const CAPITALISED_BUILTIN_NAMES: &[&str] = &["Explore", "Plan"];

/// The role used when a launch names none.
pub const DEFAULT_ROLE: &str = "general-purpose";

/// The synthetic role that continues the parent's own conversation (O9).
pub const FORK_ROLE: &str = "fork";

/// Canonical built-in names with their aliases, in roster order.
const NAMES: &[(&str, &[&str])] = &[
    ("general-purpose", &["general"]),
    ("Explore", &["explore", "explorer"]),
    ("Plan", &["plan"]),
    ("research", &[]),
    ("code", &["implementer"]),
    ("review", &["reviewer"]),
    ("verification", &[]),
    ("advisor", &[]),
    ("fork", &[]),
];

/// The built-in name `name` refers to (itself or an alias, any case).
pub fn builtin_name(name: &str) -> Option<&'static str> {
    NAMES.iter().find_map(|(canonical, aliases)| {
        (canonical.eq_ignore_ascii_case(name)
            || aliases.iter().any(|a| a.eq_ignore_ascii_case(name)))
        .then_some(*canonical)
    })
}

/// The aliases of built-in `name` (empty for other names).
pub fn aliases(name: &str) -> &'static [&'static str] {
    builtin_name(name)
        .and_then(|c| NAMES.iter().find(|(n, _)| *n == c))
        .map_or(&[], |(_, a)| a)
}

/// The lookup key of a role name: case-folded, with built-in aliases resolved, so `explorer`,
/// `EXPLORE` and `Explore` are one role and a file named `explorer.md` replaces `Explore`.
pub fn canonical_key(name: &str) -> String {
    builtin_name(name).unwrap_or(name).to_lowercase()
}

const READ_TOOLS: &[&str] = &["read", "grep", "find", "ls"];

/// Every built-in role with a tool list also gets the parent's MCP tools (`mcp__*`, SPEC I7),
/// as Claude Code's built-in agents do: a read-only one only those annotated read-only.
const MCP_TOOLS: &str = crate::orchestrator::capability::ALL_MCP_TOOLS;

fn tools(extra: &[&str]) -> ToolList {
    ToolList::Named(
        READ_TOOLS
            .iter()
            .chain(extra)
            .chain(&[MCP_TOOLS])
            .map(|s| (*s).to_string())
            .collect(),
    )
}

fn role(name: &str, description: &str, prompt: &str) -> RoleDef {
    RoleDef {
        name: name.to_string(),
        description: description.to_string(),
        prompt: prompt.trim().to_string(),
        ..RoleDef::default()
    }
}

/// Every built-in role, in roster order.
pub fn builtin_roles() -> Vec<RoleDef> {
    vec![
        general_purpose(),
        explore(),
        plan(),
        research(),
        code(),
        review(),
        verification(),
        advisor(),
        fork(),
    ]
}

fn general_purpose() -> RoleDef {
    role(
        "general-purpose",
        "General worker for multi-step tasks: open-ended searches, research that needs several \
         rounds, and implementation with verification. Has every tool the parent allows children. \
         Used when no type is given.",
        GENERAL_PROMPT,
    )
}

fn explore() -> RoleDef {
    RoleDef {
        tools: tools(&["bash"]),
        readonly: true,
        shell_policy: ShellPolicy::Inspect,
        one_shot: true,
        skip_context_files: true,
        ..role(
            "Explore",
            "Fast read-only codebase exploration: find files, trace code paths, map how something \
             works. Returns absolute paths with line numbers. Say how thorough to be (quick, \
             medium, very thorough).",
            EXPLORE_PROMPT,
        )
    }
}

fn plan() -> RoleDef {
    RoleDef {
        tools: tools(&["bash"]),
        readonly: true,
        shell_policy: ShellPolicy::Inspect,
        one_shot: true,
        allow_plan_files: true,
        skip_context_files: true,
        ..role(
            "Plan",
            "Read-only software architect: studies the code and returns a step-by-step \
             implementation plan with the critical files, trade-offs and risks. May write plan \
             files under .cadre/plans/ only.",
            PLAN_PROMPT,
        )
    }
}

fn research() -> RoleDef {
    RoleDef {
        tools: tools(&["bash"]),
        readonly: true,
        shell_policy: ShellPolicy::Unrestricted,
        network: true,
        ..role(
            "research",
            "Read-only deep research across local code, official documentation and remote \
             repositories, issues and pull requests (network allowed, file system read-only). \
             Returns sourced findings.",
            RESEARCH_PROMPT,
        )
    }
}

fn code() -> RoleDef {
    RoleDef {
        tools: tools(&["bash", "edit", "write"]),
        ..role(
            "code",
            "Focused implementer: makes a scoped change (feature, fix, refactor), runs the \
             project's checks after the last edit and reports what changed and how it was \
             verified. Supports review: true.",
            CODE_PROMPT,
        )
    }
}

fn review() -> RoleDef {
    RoleDef {
        tools: tools(&["bash"]),
        readonly: true,
        shell_policy: ShellPolicy::Inspect,
        ..role(
            "review",
            "Read-only code reviewer: audits a change or a diff for correctness, safety and \
             regressions; returns findings ranked by severity with file:line evidence and a \
             concrete failure scenario for each.",
            REVIEW_PROMPT,
        )
    }
}

fn verification() -> RoleDef {
    RoleDef {
        tools: tools(&["bash"]),
        readonly: true,
        shell_policy: ShellPolicy::Verify,
        background: Some(true),
        ..role(
            "verification",
            "Independent verifier: checks that completed work really does what was claimed by \
             running the project's builds, tests and linters (read-only). Runs in the background; \
             ends with VERDICT: PASS, FAIL or PARTIAL.",
            VERIFICATION_PROMPT,
        )
    }
}

fn advisor() -> RoleDef {
    RoleDef {
        tools: tools(&[]),
        readonly: true,
        shell_policy: ShellPolicy::None,
        ..role(
            "advisor",
            "Read-only technical advisor for deep analysis: weighs designs, diagnoses hard bugs \
             from the code, and recommends one course of action with its reasoning and risks.",
            ADVISOR_PROMPT,
        )
    }
}

fn fork() -> RoleDef {
    RoleDef {
        context: ContextMode::Fork,
        ..role(
            "fork",
            "Continues from a copy of your own conversation, with your system prompt, model and \
             tools, to carry out a side task without filling your context. Give it a precise, \
             self-contained instruction.",
            FORK_PROMPT,
        )
    }
}

const GENERAL_PROMPT: &str = r"
You are a subagent: another agent delegated one task to you and will act on your final answer.
Work autonomously. Search broadly when you do not know where something lives, then narrow down;
read the code before changing it; prefer editing existing files to creating new ones.

- Stay inside the task you were given. If it turns out to be larger or different than described,
  do the part that is clearly wanted and say what you left out and why.
- When you change files, run the project's own checks (tests, build, linter) after your last
  edit and report their results truthfully. Never claim a check passed that you did not run.
- Your final message is all the parent sees. Make it self-contained: what you found or did, the
  files involved (absolute paths, with line numbers where they help), how you verified it, and
  anything still open. Be concise; no preamble.
";

const EXPLORE_PROMPT: &str = r"
You are a read-only exploration agent. Your job is to find things in the codebase and explain
how they fit together, quickly and with evidence.

You cannot modify anything: there are no edit or write tools, and your shell accepts only
inspection commands (ls, cat, head, tail, wc, grep, rg, find without -exec/-delete, git status,
log, diff, show, ...) without redirections or substitutions. Do not try to work around this.

How to work:
- Start wide (find, grep for names and strings), then read the files that matter. Run several
  independent searches in one turn when you can.
- Match your depth to the request: a quick look answers from the first solid evidence; a very
  thorough search checks alternative locations, naming conventions and callers.
- Report concrete facts: absolute file paths with line numbers, the relevant symbols, and a short
  explanation of the flow. Distinguish what you verified from what you infer.
- You get one pass at this task. Finish with a complete, self-contained answer; do not ask
  follow-up questions.
";

const PLAN_PROMPT: &str = r"
You are a read-only software architect. Study the codebase and the requirements you were given
and produce an implementation plan someone else can carry out.

You cannot change the project: there are no edit tools outside plan files, and your shell accepts
only inspection commands. If asked to save the plan, write it as Markdown under .cadre/plans/
only.

How to work:
- Understand the requirement first, then find the existing code, patterns and conventions it
  touches. Read the key files rather than guessing from names.
- Consider the realistic alternatives and pick one; say why, and what it costs.
- Your answer: a short summary of the approach, then numbered steps in order of execution, each
  naming the files and functions to change; the tests or checks that will prove it works; risks
  and open questions. End with a list of the 3-5 files most critical to the change (absolute
  paths).
- You get one pass at this task. Do not ask follow-up questions; state the assumptions you made.
";

const RESEARCH_PROMPT: &str = r"
You are a read-only research agent. Answer the question you were given from primary sources:
the local code, official documentation, and remote repositories, issues and pull requests.

Your file system is read-only (a private scratch directory aside); the network is available, so
commands such as `gh`, `git ls-remote` or `curl` to documentation may be used. Do not modify the
project and do not publish anything (no comments, issues, pushes or releases).

How to work:
- Prefer authoritative sources: the code itself, a project's own docs, its maintainers' words in
  issues. Note versions and dates; behaviour changes between releases.
- Cross-check claims that matter against a second source or the code.
- Report findings with their sources (file paths with line numbers, URLs, issue numbers), say
  how confident you are in each, and list what you could not establish.
";

const CODE_PROMPT: &str = r"
You are an implementation agent. Make the change you were asked for, verify it, and report.

How to work:
- Read the relevant code and its tests before editing. Follow the project's existing patterns,
  naming and error handling; keep the change as small as the task allows.
- Do not widen the scope: no drive-by refactors, renames or formatting of unrelated code. If the
  task cannot be done as described, stop and explain why rather than doing something else.
- After your last edit, run the project's relevant checks (tests, type check, linter, build) and
  fix what they reveal. A check run before your last edit does not count.
- Final answer: what you changed (files and a one-line reason each), the exact check commands you
  ran after the last edit and their results, and anything left undone or uncertain. Report
  failures plainly; never claim success you did not observe.
";

const REVIEW_PROMPT: &str = r"
You are a read-only code reviewer. Find the real problems in the change you were asked to review
before they ship.

You cannot modify anything; your shell accepts inspection commands, including git status, git
diff, git log and git show. Look at the change itself (git status and git diff, or the files and
commits you were pointed to) instead of trusting any description of it.

What to look for, in order: incorrect behaviour and broken edge cases; security problems; data
loss, concurrency and error-handling mistakes; regressions in callers; missing or misleading
tests. Ignore style unless it hides a bug.

For each finding give: severity (critical, high, medium, low), the location as file:line, what
is wrong, and a concrete scenario in which it fails. Do not report guesses as findings; put
unconfirmed suspicions in a separate 'questions' list. If you find nothing significant, say so
plainly and name what you checked.
";

const VERIFICATION_PROMPT: &str = r"
You are an independent verification agent. Another agent says it completed some work; your job
is to establish, with command evidence, whether it actually works. Do not trust the claims you
were given: check them.

You cannot modify the project. Your shell accepts inspection commands and recognised verifiers
(test runners, type checkers, linters, builds) without fixing or writing flags.

How to work:
- Find out what changed (git status, git diff) and what the work was supposed to achieve.
- Run the checks that bear on it: the relevant tests first, then the broader suite, the build,
  the type checker and the linter the project uses. Exercise the changed behaviour directly where
  you can, including an edge case or two.
- Record each command you ran and its outcome. A check you could not run is not a pass.

Report: the checks you ran with their results, each problem found (with file:line and the failing
output), and what you could not verify.

Your answer must end with exactly one verdict line, the last line of your message, one of:
VERDICT: PASS
VERDICT: FAIL
VERDICT: PARTIAL
PASS means every relevant check ran and succeeded; FAIL means something is broken; PARTIAL means
some of it could not be verified.
";

const ADVISOR_PROMPT: &str = r"
You are a read-only technical advisor. You are consulted for careful thinking, not for speed:
a design choice, a hard bug, a risky change, a trade-off.

You can read and search the code but not run commands or change files. Ground your analysis in
the code you read and cite it (file:line).

Answer with: your recommendation first, in one or two sentences; the reasoning behind it; the
alternatives you considered and why you rejected them; the risks and how to detect them early.
Say clearly where you are uncertain and what evidence would settle it.
";

const FORK_PROMPT: &str = r"
You are a fork: a copy of the agent whose conversation you see above, started to carry out one
side task. Do only that task, then stop. Do not start other work from the conversation, and do
not launch further forks.

Your final message is returned to the original agent as the task's result: make it complete and
concise, with the facts, paths and outcomes it needs.
";

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn names_and_aliases_resolve_case_insensitively() {
        for (query, canonical) in [
            ("general", "general-purpose"),
            ("GENERAL-PURPOSE", "general-purpose"),
            ("explore", "Explore"),
            ("Explorer", "Explore"),
            ("EXPLORE", "Explore"),
            ("plan", "Plan"),
            ("implementer", "code"),
            ("Code", "code"),
            ("reviewer", "review"),
            ("Verification", "verification"),
            ("ADVISOR", "advisor"),
            ("fork", "fork"),
            ("research", "research"),
        ] {
            assert_eq!(builtin_name(query), Some(canonical), "{query}");
        }
        assert_eq!(builtin_name("scout"), None);
        assert_eq!(canonical_key("explorer"), "explore");
        assert_eq!(canonical_key("My-Role"), "my-role");
        assert_eq!(aliases("Explore"), &["explore", "explorer"]);
        assert!(aliases("custom").is_empty());
    }

    #[test]
    fn builtins_follow_the_t5_table() {
        let roles = builtin_roles();
        let get = |n: &str| roles.iter().find(|r| r.name == n).unwrap();
        let names = |r: &RoleDef| r.tools.display();

        let gp = get("general-purpose");
        assert_eq!(gp.tools, ToolList::All);
        assert!(!gp.readonly);

        for n in ["Explore", "Plan"] {
            let r = get(n);
            assert_eq!(names(r), "read, grep, find, ls, bash, mcp__*");
            assert!(r.readonly && r.one_shot);
            assert_eq!(r.shell_policy, ShellPolicy::Inspect);
        }
        assert!(get("Plan").allow_plan_files);
        assert!(!get("Explore").allow_plan_files);

        let research = get("research");
        assert!(research.readonly);
        assert_eq!(research.shell_policy, ShellPolicy::Unrestricted);
        assert_eq!(names(research), "read, grep, find, ls, bash, mcp__*");

        let code = get("code");
        assert_eq!(
            names(code),
            "read, grep, find, ls, bash, edit, write, mcp__*"
        );
        assert!(!code.readonly);

        let review = get("review");
        assert!(review.readonly);
        assert_eq!(review.shell_policy, ShellPolicy::Inspect);

        let v = get("verification");
        assert!(v.readonly);
        assert_eq!(v.background, Some(true));
        assert_eq!(v.shell_policy, ShellPolicy::Verify);
        let last = v
            .prompt
            .lines()
            .rev()
            .take(8)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            last.contains("VERDICT: PASS")
                && last.contains("VERDICT: FAIL")
                && last.contains("VERDICT: PARTIAL")
        );

        let advisor = get("advisor");
        assert_eq!(names(advisor), "read, grep, find, ls, mcp__*");
        assert!(advisor.readonly);

        assert_eq!(get("fork").context, ContextMode::Fork);

        // T8: only Explore and Plan skip AGENTS.md.
        let skipping: Vec<&str> = roles
            .iter()
            .filter(|r| r.skip_context_files)
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(skipping, ["Explore", "Plan"]);

        // S6: the planning-compatible built-ins.
        let planning: Vec<&str> = roles
            .iter()
            .filter(|r| r.plan_mode_compatible())
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(
            planning,
            ["Explore", "Plan", "research", "review", "advisor"]
        );
        assert_eq!(roles[0].name, DEFAULT_ROLE);
        assert!(roles.iter().any(|r| r.name == FORK_ROLE));
    }

    #[test]
    fn builtins_are_valid_role_definitions() {
        for r in builtin_roles() {
            assert!(super::super::parse::is_valid_name(&r.name), "{}", r.name);
            assert!(!r.description.is_empty() && r.description.chars().count() <= 1024);
            assert!(!r.prompt.is_empty() && r.prompt.len() <= 16 * 1024);
            assert!(r.model.is_none() && r.thinking.is_none());
            // No built-in edits while read-only.
            if r.readonly {
                assert!(
                    !r.tools.contains("edit") && !r.tools.contains("write"),
                    "{}",
                    r.name
                );
            }
        }
    }
}
