//! The review gate's bounded loop (SPEC V5 steps 4–5) as pure decisions: after a review, pass,
//! give the implementer its one fix round, or fail the task with the findings and the
//! implementer's task id.

use std::fmt::Write as _;

use super::evidence::one_line;
use super::verdict::Verdict;

/// Reviews per task: the first, and one more after the single fix round.
pub const MAX_REVIEWS: u32 = 2;

/// What the gate does after review number `attempt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateStep {
    /// PASS backed by a successful check: the task completes.
    Passed,
    /// First review said NEEDS_FIX: send [`fix_prompt`] to the implementer, then review again.
    Fix { findings: Vec<String> },
    /// Anything else: the task fails with this message (see [`failure_message`]).
    Failed { message: String },
}

/// Decide the gate's next step. `verdict` is already read fail-closed, so a PASS here is a
/// PASS with a successful check.
pub fn next_step(attempt: u32, verdict: &Verdict, implementer_task_id: &str) -> GateStep {
    match verdict {
        Verdict::Pass => GateStep::Passed,
        Verdict::NeedsFix { findings } if attempt < MAX_REVIEWS => GateStep::Fix {
            findings: findings.clone(),
        },
        _ => GateStep::Failed {
            message: failure_message(verdict, attempt, implementer_task_id),
        },
    }
}

/// The implementer's fix round: the findings, and the order to re-run its checks.
pub fn fix_prompt(findings: &[String]) -> String {
    let mut out = String::from(
        "An independent review of your changes found problems (review 1 of 2). Fix every \
         finding below, then re-run the project's verification checks (tests, type checks, \
         linters) after your last edit and report their results. The second review is the \
         last: anything but a pass fails the task.\n\nFINDINGS:\n",
    );
    for f in findings {
        let _ = writeln!(out, "- {}", one_line(f));
    }
    out
}

/// Why the gate failed the task, with the reviewer's findings and the implementer's task id so
/// the parent can continue it.
pub fn failure_message(verdict: &Verdict, attempt: u32, implementer_task_id: &str) -> String {
    let mut out = format!(
        "Review gate failed after review {attempt} of {MAX_REVIEWS}: VERDICT {}",
        verdict.label()
    );
    if let Verdict::Uncertain { reason, .. } = verdict {
        let _ = write!(out, " ({reason})");
    }
    out.push_str(".\n");
    let findings = verdict.findings();
    if findings.is_empty() {
        out.push_str("Findings: none given\n");
    } else {
        out.push_str("Findings:\n");
        for f in findings {
            let _ = writeln!(out, "- {}", one_line(f));
        }
    }
    let _ = write!(
        out,
        "Implementer task: {implementer_task_id} (continue it with SendMessage to fix and \
         verify)."
    );
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::handoff::verdict::UncertainReason;

    fn fix(f: &[&str]) -> Verdict {
        Verdict::NeedsFix {
            findings: f.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn every_path() {
        assert_eq!(next_step(1, &Verdict::Pass, "t1"), GateStep::Passed);
        assert_eq!(next_step(2, &Verdict::Pass, "t1"), GateStep::Passed);
        assert_eq!(
            next_step(1, &fix(&["a"]), "t1"),
            GateStep::Fix {
                findings: vec!["a".into()]
            }
        );
        let GateStep::Failed { message } = next_step(2, &fix(&["a.rs:3 still wrong"]), "t1") else {
            panic!("second NEEDS_FIX must fail");
        };
        assert!(message.contains("review 2 of 2: VERDICT NEEDS_FIX."));
        assert!(message.contains("- a.rs:3 still wrong"));
        assert!(message.contains("Implementer task: t1"));
        let uncertain = Verdict::Uncertain {
            reason: UncertainReason::NoSuccessfulCheck,
            findings: vec![],
        };
        for attempt in [1, 2] {
            let GateStep::Failed { message } = next_step(attempt, &uncertain, "t9") else {
                panic!("UNCERTAIN must fail");
            };
            assert!(message.contains("VERDICT UNCERTAIN (VERDICT: PASS without a successful"));
            assert!(message.contains("Findings: none given"));
            assert!(message.contains("t9"));
        }
    }

    #[test]
    fn fix_prompt_lists_findings_and_demands_checks() {
        let p = fix_prompt(&["a.rs:1 x".into(), "multi\nline".into()]);
        assert!(p.contains("re-run"));
        assert!(p.ends_with("FINDINGS:\n- a.rs:1 x\n- multi line\n"));
    }
}
