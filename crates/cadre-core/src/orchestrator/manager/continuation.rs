//! What a continuation (`SendMessage` to a finished task, or a nested child's notice that
//! reopens its parent task) is checked against: the same rules as a launch. Pure.
//!
//! A task record keeps the boundary its task was launched with (tools, read-only, shell policy,
//! `Bash(…)` patterns), and cadre's home, where records live, is out of every child's reach. But
//! the session continuing a task may be under rules the launch was not: plan mode (`cadre --plan
//! --continue`), a project whose trust was revoked, a role file narrowed since. So a continuation
//! runs under the record's boundary narrowed by the role as it is now — never wider than
//! either — and plan mode refuses it exactly as it refuses launching the role: a writing,
//! verifying, forked or worktree task is not continued in plan mode, as none of them may launch
//! there. Refusing rather than continuing read-only follows the launch path, which refuses a
//! writing role in plan mode instead of running it read-only: a writer continued without its
//! write tools would be told to finish work it can no longer do.

use cadre_protocol::TaskRecord;

use super::child::parse_shell_policy;
use super::prepare::narrower_policy;
use super::{LaunchError, RefusalCode};
use crate::roles::{ContextMode, Isolation, RoleDef, ShellPolicy};

/// The boundary a continuation runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Boundary {
    pub readonly: bool,
    pub shell_policy: ShellPolicy,
    pub bash_allow: Vec<String>,
}

/// How the task is named in a refusal: its name, else its id.
fn shown(record: &TaskRecord) -> String {
    match &record.name {
        Some(name) => format!("`{name}` ({})", record.id),
        None => record.id.clone(),
    }
}

/// Plan mode's refusal of continuing `record` with `boundary` (S6), as the launch path refuses
/// a role that is not a planning role; `None` when plan mode allows it.
pub(crate) fn plan_mode_refusal(record: &TaskRecord, boundary: &Boundary) -> Option<LaunchError> {
    let refused = |message: String| LaunchError::refused(RefusalCode::PlanMode, message);
    if record.worktree.is_some() {
        return Some(refused(format!(
            "plan mode: task {} works in a worktree and may not be continued (worktree isolation \
             is refused in plan mode)",
            shown(record)
        )));
    }
    let as_launched = RoleDef {
        readonly: boundary.readonly,
        shell_policy: boundary.shell_policy,
        isolation: Isolation::None,
        context: if record.forked {
            ContextMode::Fork
        } else {
            ContextMode::Fresh
        },
        ..RoleDef::default()
    };
    (!as_launched.plan_mode_compatible()).then(|| {
        refused(format!(
            "plan mode: task {} (`{}`) may not be continued; only tasks of read-only planning \
             roles (such as Explore, Plan, research, review, advisor) may. Launch a planning \
             role instead, or continue the task outside plan mode",
            shown(record),
            record.agent
        ))
    })
}

/// The boundary of `record` as persisted.
pub(crate) fn recorded(record: &TaskRecord) -> Boundary {
    Boundary {
        readonly: record.readonly,
        shell_policy: parse_shell_policy(&record.shell_policy),
        bash_allow: record.bash_allow.clone(),
    }
}

/// The boundary a continuation of `record` runs under: the record's, narrowed by `role` as it
/// is now (read-only when either is, the narrower shell policy, the narrower command
/// patterns), and refused where plan mode would refuse it. A role whose patterns and the
/// record's allow different commands cannot be combined into one list: refused.
pub(crate) fn continuation_boundary(
    record: &TaskRecord,
    role: &RoleDef,
    plan_mode: bool,
) -> Result<Boundary, LaunchError> {
    let was = recorded(record);
    let bash_allow = narrower_patterns(&was.bash_allow, &role.bash_allow).ok_or_else(|| {
        LaunchError::refused(
            RefusalCode::RoleChanged,
            format!(
                "task {} cannot be continued: its role `{}` now has other Bash(…) command patterns \
             ({}) than the task ran under ({}); launch a new task instead",
                shown(record),
                record.agent,
                role.bash_allow.join(", "),
                was.bash_allow.join(", ")
            ),
        )
    })?;
    let boundary = Boundary {
        readonly: was.readonly || role.readonly,
        shell_policy: narrower_policy(was.shell_policy, role.shell_policy),
        bash_allow,
    };
    if plan_mode && let Some(refusal) = plan_mode_refusal(record, &boundary) {
        return Err(refusal);
    }
    Ok(boundary)
}

/// The narrower of two `Bash(…)` pattern lists (empty: every command), or `None` when neither
/// holds the other.
fn narrower_patterns(a: &[String], b: &[String]) -> Option<Vec<String>> {
    let within = |x: &[String], y: &[String]| x.iter().all(|p| y.contains(p));
    if b.is_empty() || (!a.is_empty() && within(a, b)) {
        Some(a.to_vec())
    } else if a.is_empty() || within(b, a) {
        Some(b.to_vec())
    } else {
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_protocol::WorktreeInfo;

    fn record(readonly: bool, policy: &str, patterns: &[&str]) -> TaskRecord {
        TaskRecord {
            id: "t1".into(),
            agent: "r".into(),
            readonly,
            shell_policy: policy.into(),
            bash_allow: patterns.iter().map(|p| p.to_string()).collect(),
            ..TaskRecord::default()
        }
    }

    fn role(readonly: bool, policy: ShellPolicy, patterns: &[&str]) -> RoleDef {
        RoleDef {
            name: "r".into(),
            readonly,
            shell_policy: policy,
            bash_allow: patterns.iter().map(|p| p.to_string()).collect(),
            ..RoleDef::default()
        }
    }

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_continuation_is_never_wider_than_the_record_or_the_role_now() {
        use ShellPolicy::{Inspect, None as NoShell, Unrestricted, Verify};
        // (record, role now, expected boundary or None for refused)
        type Case = (
            TaskRecord,
            RoleDef,
            Option<(bool, ShellPolicy, Vec<String>)>,
        );
        let cases: Vec<Case> = vec![
            // Unchanged role: the record's boundary.
            (
                record(false, "unrestricted", &[]),
                role(false, Unrestricted, &[]),
                Some((false, Unrestricted, vec![])),
            ),
            // The role file does not widen a narrower record.
            (
                record(true, "inspect", &["git status:*"]),
                role(false, Unrestricted, &[]),
                Some((true, Inspect, strings(&["git status:*"]))),
            ),
            // A role narrowed since the launch narrows the continuation.
            (
                record(false, "unrestricted", &[]),
                role(true, Inspect, &["git diff:*"]),
                Some((true, Inspect, strings(&["git diff:*"]))),
            ),
            (
                record(false, "verify", &["git diff:*", "ls"]),
                role(false, NoShell, &["ls"]),
                Some((false, NoShell, strings(&["ls"]))),
            ),
            (
                record(false, "inspect", &["ls"]),
                role(false, Verify, &["ls", "git diff:*"]),
                Some((false, Inspect, strings(&["ls"]))),
            ),
            // An unreadable policy in the record is the strictest.
            (
                record(false, "anything", &[]),
                role(false, Unrestricted, &[]),
                Some((false, NoShell, vec![])),
            ),
            // Patterns that cannot be combined: refused.
            (
                record(false, "unrestricted", &["touch x; rm -rf /"]),
                role(false, Unrestricted, &["git status:*"]),
                None,
            ),
        ];
        for (rec, r, want) in cases {
            let got = continuation_boundary(&rec, &r, false);
            match (got, want) {
                (Ok(b), Some((ro, policy, patterns))) => assert_eq!(
                    (b.readonly, b.shell_policy, b.bash_allow),
                    (ro, policy, patterns),
                    "{rec:?} {r:?}"
                ),
                (Err(e), None) => {
                    assert_eq!(e.code(), RefusalCode::RoleChanged);
                    assert!(e.to_string().contains("command patterns"), "{e}");
                }
                (got, want) => panic!("{rec:?} {r:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn plan_mode_continues_only_what_it_would_launch() {
        let planning = role(true, ShellPolicy::Inspect, &[]);
        // (record, role now, allowed in plan mode)
        let worktree = TaskRecord {
            worktree: Some(WorktreeInfo::default()),
            ..record(true, "inspect", &[])
        };
        let forked = TaskRecord {
            forked: true,
            ..record(true, "inspect", &[])
        };
        let cases: Vec<(TaskRecord, RoleDef, bool)> = vec![
            (record(true, "inspect", &[]), planning.clone(), true),
            (record(true, "unrestricted", &[]), planning.clone(), true),
            // A writing task: refused, as launching a writing role is.
            (
                record(false, "unrestricted", &[]),
                role(false, ShellPolicy::Unrestricted, &[]),
                false,
            ),
            // Its role file made read-only since: the continuation would be read-only.
            (record(false, "inspect", &[]), planning.clone(), true),
            // Verification runs project code: not planning.
            (
                record(true, "verify", &[]),
                role(true, ShellPolicy::Verify, &[]),
                false,
            ),
            (worktree, planning.clone(), false),
            (forked, planning.clone(), false),
        ];
        for (rec, r, allowed) in cases {
            let got = continuation_boundary(&rec, &r, true);
            assert_eq!(got.is_ok(), allowed, "{rec:?}: {got:?}");
            if let Err(e) = got {
                assert_eq!(e.code(), RefusalCode::PlanMode);
                assert!(e.to_string().starts_with("plan mode: task t1"), "{e}");
            }
            // Outside plan mode every one of them continues.
            assert!(continuation_boundary(&rec, &r, false).is_ok());
        }
        let named = TaskRecord {
            name: Some("writer".into()),
            agent: "code".into(),
            ..record(false, "unrestricted", &[])
        };
        let e = plan_mode_refusal(&named, &recorded(&named)).unwrap();
        assert_eq!(e.code(), RefusalCode::PlanMode);
        let e = e.to_string();
        assert!(
            e.contains("task `writer` (t1) (`code`) may not be continued"),
            "{e}"
        );
    }
}
