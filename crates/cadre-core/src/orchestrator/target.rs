//! Task targets of `SendMessage`, `TaskOutput` and `TaskStop` (SPEC O5).
//!
//! A target resolves by exact id → unique id prefix → unique exact name → unique name ignoring
//! case. The first step that matches anything decides: one match is the target, several are
//! ambiguous. A unique id prefix that is also another task's exact name is ambiguous too. An
//! ambiguous or unknown target never picks: the error lists the candidates so the model can
//! retry with an exact id.

use std::fmt;

use cadre_protocol::TaskStatus;

/// How many recent tasks an "unknown target" error lists.
pub const RECENT_CANDIDATES: usize = 10;

/// One task a target may name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetCandidate {
    pub id: String,
    pub name: Option<String>,
    pub status: TaskStatus,
    /// RFC 3339; used only to order candidates, most recent first.
    pub created_at: String,
}

impl fmt::Display for TargetCandidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id8: String = self.id.chars().take(8).collect();
        let name = self.name.as_deref().unwrap_or("-");
        write!(f, "{id8} {name} {}", self.status.as_str())
    }
}

/// A target that does not name exactly one task.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("task target `{query}` is ambiguous; use a task id.{}", list(.candidates))]
    Ambiguous {
        query: String,
        candidates: Vec<TargetCandidate>,
    },
    #[error("no task matches `{query}`.{}", recent(.candidates))]
    Unknown {
        query: String,
        /// The most recent tasks, newest first.
        candidates: Vec<TargetCandidate>,
    },
}

fn list(candidates: &[TargetCandidate]) -> String {
    let mut out = String::from(" Candidates:");
    for c in candidates {
        out.push_str("\n  ");
        out.push_str(&c.to_string());
    }
    out
}

fn recent(candidates: &[TargetCandidate]) -> String {
    if candidates.is_empty() {
        " There are no tasks.".to_string()
    } else {
        format!(
            " Recent tasks:{}",
            &list(candidates)[" Candidates:".len()..]
        )
    }
}

/// Resolve `query` to exactly one candidate.
pub fn resolve_target<'a>(
    query: &str,
    candidates: &'a [TargetCandidate],
) -> Result<&'a TargetCandidate, TargetError> {
    let q = query.trim();
    let unknown = || TargetError::Unknown {
        query: q.to_string(),
        candidates: most_recent(candidates),
    };
    if q.is_empty() {
        return Err(unknown());
    }
    if let Some(c) = candidates.iter().find(|c| c.id == q) {
        return Ok(c);
    }
    let by_prefix: Vec<&TargetCandidate> =
        candidates.iter().filter(|c| c.id.starts_with(q)).collect();
    let by_name: Vec<&TargetCandidate> = candidates
        .iter()
        .filter(|c| c.name.as_deref() == Some(q))
        .collect();
    if !by_prefix.is_empty() {
        // A prefix that also names another task: two readings, so no pick.
        let conflict = by_name
            .iter()
            .any(|n| by_prefix.iter().all(|p| p.id != n.id));
        if by_prefix.len() == 1 && !conflict {
            return Ok(by_prefix[0]);
        }
        return Err(ambiguous(q, by_prefix.into_iter().chain(by_name)));
    }
    if !by_name.is_empty() {
        return pick(q, by_name);
    }
    let q_lower = q.to_lowercase();
    let by_name_ci: Vec<&TargetCandidate> = candidates
        .iter()
        .filter(|c| c.name.as_deref().map(str::to_lowercase) == Some(q_lower.clone()))
        .collect();
    if !by_name_ci.is_empty() {
        return pick(q, by_name_ci);
    }
    Err(unknown())
}

fn pick<'a>(
    q: &str,
    matches: Vec<&'a TargetCandidate>,
) -> Result<&'a TargetCandidate, TargetError> {
    match matches.as_slice() {
        [one] => Ok(one),
        _ => Err(ambiguous(q, matches.into_iter())),
    }
}

fn ambiguous<'a>(q: &str, matches: impl Iterator<Item = &'a TargetCandidate>) -> TargetError {
    let mut candidates: Vec<TargetCandidate> = Vec::new();
    for c in matches {
        if !candidates.iter().any(|k| k.id == c.id) {
            candidates.push(c.clone());
        }
    }
    sort_recent_first(&mut candidates);
    TargetError::Ambiguous {
        query: q.to_string(),
        candidates,
    }
}

fn most_recent(candidates: &[TargetCandidate]) -> Vec<TargetCandidate> {
    let mut all = candidates.to_vec();
    sort_recent_first(&mut all);
    all.truncate(RECENT_CANDIDATES);
    all
}

fn sort_recent_first(c: &mut [TargetCandidate]) {
    c.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn cand(id: &str, name: Option<&str>, at: &str) -> TargetCandidate {
        TargetCandidate {
            id: id.to_string(),
            name: name.map(str::to_string),
            status: TaskStatus::Running,
            created_at: at.to_string(),
        }
    }

    fn fixture() -> Vec<TargetCandidate> {
        vec![
            cand("aaaa1111-0000", Some("auth"), "2026-01-01T00:00:01Z"),
            cand("aaaa2222-0000", Some("Auth"), "2026-01-01T00:00:02Z"),
            cand("bbbb3333-0000", Some("tests"), "2026-01-01T00:00:03Z"),
            cand("cccc4444-0000", None, "2026-01-01T00:00:04Z"),
            cand("dddd5555-0000", Some("dup"), "2026-01-01T00:00:05Z"),
            cand("dddd6666-0000", Some("dup"), "2026-01-01T00:00:06Z"),
            cand("eeee7777-0000", Some("bbbb"), "2026-01-01T00:00:07Z"),
            cand("ffff8888-0000", Some("Report"), "2026-01-01T00:00:08Z"),
            cand("ffff9999-0000", Some("REPORT"), "2026-01-01T00:00:09Z"),
        ]
    }

    enum Want {
        Pick(&'static str),
        Ambiguous(&'static [&'static str]),
        Unknown,
    }

    #[test]
    fn o5_target_resolution_table() {
        use Want::*;
        let cases: &[(&str, Want)] = &[
            ("aaaa1111-0000", Pick("aaaa1111-0000")),
            ("  aaaa1111-0000 ", Pick("aaaa1111-0000")),
            ("aaaa1", Pick("aaaa1111-0000")),
            ("cccc", Pick("cccc4444-0000")),
            ("aaaa", Ambiguous(&["aaaa2222-0000", "aaaa1111-0000"])),
            ("auth", Pick("aaaa1111-0000")),
            ("Auth", Pick("aaaa2222-0000")),
            // Neither exact: case-insensitive matches both.
            ("AUTH", Ambiguous(&["aaaa2222-0000", "aaaa1111-0000"])),
            ("TESTS", Pick("bbbb3333-0000")),
            ("dup", Ambiguous(&["dddd6666-0000", "dddd5555-0000"])),
            // A unique prefix of one task that is another task's name.
            ("bbbb", Ambiguous(&["eeee7777-0000", "bbbb3333-0000"])),
            ("Report", Pick("ffff8888-0000")),
            ("report", Ambiguous(&["ffff9999-0000", "ffff8888-0000"])),
            ("zzzz", Unknown),
            ("", Unknown),
            ("   ", Unknown),
            ("aut", Unknown),
        ];
        let all = fixture();
        for (q, want) in cases {
            let got = resolve_target(q, &all);
            match (want, got) {
                (Pick(id), Ok(c)) => assert_eq!(&c.id, id, "{q:?}"),
                (Ambiguous(ids), Err(TargetError::Ambiguous { candidates, .. })) => {
                    let got: Vec<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
                    assert_eq!(&got, ids, "{q:?}");
                }
                (Unknown, Err(TargetError::Unknown { candidates, .. })) => {
                    assert_eq!(candidates.len(), all.len().min(RECENT_CANDIDATES));
                    assert_eq!(candidates[0].id, "ffff9999-0000", "newest first");
                }
                (_, other) => panic!("{q:?}: unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn o5_unknown_lists_at_most_the_recent_ones() {
        let many: Vec<TargetCandidate> = (0..25)
            .map(|i| {
                cand(
                    &format!("id{i:02}"),
                    None,
                    &format!("2026-01-01T00:00:{i:02}Z"),
                )
            })
            .collect();
        let Err(TargetError::Unknown { candidates, .. }) = resolve_target("nope", &many) else {
            panic!("expected unknown");
        };
        assert_eq!(candidates.len(), RECENT_CANDIDATES);
        assert_eq!(candidates[0].id, "id24");
        assert_eq!(candidates[9].id, "id15");
        let Err(e) = resolve_target("x", &[]) else {
            panic!("expected unknown");
        };
        assert_eq!(e.to_string(), "no task matches `x`. There are no tasks.");
    }

    #[test]
    fn o5_display_lists_id8_name_status() {
        let mut done = cand("0123456789abcdef", Some("audit"), "2026");
        done.status = TaskStatus::Completed;
        let unnamed = cand("fedcba98", None, "2025");
        let e = TargetError::Ambiguous {
            query: "x".into(),
            candidates: vec![done.clone(), unnamed.clone()],
        };
        assert_eq!(
            e.to_string(),
            "task target `x` is ambiguous; use a task id. Candidates:\n  01234567 audit completed\n  fedcba98 - running"
        );
        let e = TargetError::Unknown {
            query: "y".into(),
            candidates: vec![done],
        };
        assert_eq!(
            e.to_string(),
            "no task matches `y`. Recent tasks:\n  01234567 audit completed"
        );
        // Short and non-ASCII ids never split a character.
        assert_eq!(cand("é", None, "").to_string(), "é - running");
    }
}
