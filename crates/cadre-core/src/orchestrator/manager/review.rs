//! The review gate at run time (SPEC V5, V7): after an implementer with `review: true` ends, its
//! evidence goes into a review packet in its task directory, a fresh read-only `review` task
//! (no parent conversation, prompt = the packet's handle) judges it, and the gate decides: pass,
//! one fix round in the implementer's own live session, or fail with the findings. The pure
//! parts (packet, verdict, decisions) are in [`crate::handoff`]; this module runs them.

use std::path::Path;
use std::sync::Arc;

use cadre_protocol::TaskStatus;
use futures_util::future::BoxFuture;

use super::Inner;
use super::handle::TaskHandle;
use super::launch::start;
use super::prepare::prepare;
use super::types::{ParentRef, TaskSpec};
use crate::handoff::gate::{GateStep, next_step};
use crate::handoff::packet::{
    PacketHandle, ReviewPacket, SHA256_TOOL, diff_lines_from_stat, review_turn_budget,
    reviewer_prompt, verify_packet, write_packet,
};
use crate::handoff::verdict::{UncertainReason, Verdict, parse_verdict};
use crate::orchestrator::output::{cap_output, neutralize};

/// The role that reviews (a built-in; a project may override it, but it must stay read-only).
pub(crate) const REVIEW_ROLE: &str = "review";
/// Roles whose tasks may ask for `review: true`.
pub(crate) const REVIEWABLE_ROLES: [&str; 2] = ["code", "general-purpose"];

/// What the gate needs to know about the implementer's launch.
#[derive(Clone)]
pub(crate) struct ReviewSetup {
    /// The implementer's own parent: the reviewer is its sibling, never a child of it and never
    /// in the parent's session.
    pub parent: ParentRef,
    pub criteria: String,
    pub expected_output: Option<String>,
}

/// What the run does after a review.
pub(crate) enum ReviewStep {
    Passed,
    /// Send [`fix_prompt`] of these findings to the implementer, then review again.
    Fix(Vec<String>),
    /// End the task `failed` (`review_failed`) with this message.
    Failed(String),
}

/// Run review number `attempt` (1 or 2) of the implementer `h`, whose run is idle.
pub(crate) async fn review(
    inner: &Arc<Inner>,
    h: &Arc<TaskHandle>,
    setup: &ReviewSetup,
    attempt: u32,
    previous_findings: &[String],
) -> ReviewStep {
    let receipt = h.execution_receipt();
    let has_check = receipt.evidence().has_successful_check();
    let cwd = std::path::PathBuf::from(&h.data().record.cwd);
    let (diff_stat, diff_lines) = changes(&cwd).await;
    let packet = ReviewPacket {
        implementer_task_id: h.id.clone(),
        attempt,
        task_criteria: setup.criteria.clone(),
        expected_output: setup.expected_output.clone(),
        evidence_summary: receipt.evidence().summary(),
        has_successful_check: has_check,
        receipt: receipt.render(),
        diff_stat: diff_stat.clone(),
        files: receipt.files().to_vec(),
        previous_findings: previous_findings.to_vec(),
    };
    let fail = |why: String| {
        ReviewStep::Failed(neutralize(&format!(
            "Review gate failed closed on review {attempt}: {why}. The work was not reviewed.\n\
             Implementer task: {} (continue it with SendMessage).",
            h.id
        )))
    };
    let dir = match inner.store.task_dir(&inner.root_session_id, &h.id) {
        Ok(d) => d,
        Err(e) => return fail(format!("no task directory for the review packet: {e}")),
    };
    let handle = match write_packet(&dir, &packet) {
        Ok(p) => p,
        Err(e) => return fail(e.to_string()),
    };
    let budget = review_turn_budget(diff_lines);
    let answer = match run_reviewer(inner, h, setup, &handle, attempt, budget, &cwd).await {
        Ok(a) => a,
        Err(why) => return fail(why),
    };
    note(
        h,
        format!("review {attempt}: reviewer task {}", answer.task_id),
    );
    // The runtime checks the packet too: a packet changed during the review is no review.
    let verdict = match verify_packet(&handle) {
        Err(e) if e.uncertain_reason().is_some() => Verdict::Uncertain {
            reason: UncertainReason::DigestMismatch,
            findings: vec![e.to_string()],
        },
        _ if answer.status != TaskStatus::Completed => {
            return fail(format!(
                "the reviewer task {} ended {} ({})",
                answer.task_id,
                answer.status.as_str(),
                answer.error.as_deref().unwrap_or("no answer")
            ));
        }
        _ => parse_verdict(&answer.text, has_check),
    };
    match next_step(attempt, &verdict, &h.id) {
        GateStep::Passed => ReviewStep::Passed,
        GateStep::Fix { findings } => ReviewStep::Fix(findings),
        // The findings are the reviewer's words: no reserved tag survives into the parent's
        // view of the error, and they are capped like a result (O10).
        GateStep::Failed { message } => ReviewStep::Failed(capped_failure(
            inner,
            &neutralize(&message),
            &format!("Reviewer task: {}.", answer.task_id),
            &answer.output_file,
        )),
    }
}

/// A failure message within the parent's output caps: the verdict and findings are cut (the
/// whole answer stays in the reviewer's `output.md`), the implementer's and the reviewer's
/// task ids at its end are always kept.
fn capped_failure(inner: &Inner, message: &str, reviewer: &str, full_path: &str) -> String {
    let (body, implementer) = match message.rfind("\nImplementer task: ") {
        Some(at) => (&message[..at], &message[at + 1..]),
        None => (message, ""),
    };
    let trailer = if implementer.is_empty() {
        reviewer.to_string()
    } else {
        format!("{implementer}\n{reviewer}")
    };
    let capped = cap_output(
        body,
        inner
            .settings
            .max_output_bytes
            .saturating_sub(trailer.len() + 1),
        inner
            .settings
            .max_output_lines
            .saturating_sub(trailer.lines().count()),
        full_path,
    );
    format!("{}\n{trailer}", capped.text)
}

struct ReviewerAnswer {
    task_id: String,
    /// The reviewer's `output.md`: its whole answer.
    output_file: String,
    status: TaskStatus,
    text: String,
    error: Option<String>,
}

/// Launch the fresh read-only reviewer and wait for its answer. `Err` when it cannot start
/// (V7: then there is no review, and the caller fails closed).
async fn run_reviewer(
    inner: &Arc<Inner>,
    h: &Arc<TaskHandle>,
    setup: &ReviewSetup,
    handle: &PacketHandle,
    attempt: u32,
    budget: u32,
    cwd: &Path,
) -> Result<ReviewerAnswer, String> {
    let mut parent = setup.parent.clone();
    // A fresh session: nothing of the parent's conversation, in the implementer's tree.
    parent.conversation = None;
    parent.cwd = cwd.to_path_buf();
    let spec = TaskSpec {
        description: format!("review of {} (attempt {attempt})", h.id),
        prompt: reviewer_prompt(handle),
        subagent_type: Some(REVIEW_ROLE.into()),
        run_in_background: Some(false),
        isolation: Some("none".into()),
        ..TaskSpec::default()
    };
    let mut p = prepare(inner, &parent, spec, None)
        .await
        .map_err(|e| format!("the reviewer could not start: {e}"))?;
    if !p.role.readonly || p.fork_history.is_some() {
        return Err(format!(
            "the `{REVIEW_ROLE}` role is not a fresh read-only role, so it cannot review"
        ));
    }
    p.background = false;
    p.worktree = false;
    p.cwd = cwd.to_path_buf();
    p.budgets.max_turns = Some(budget);
    // The packet's digest can be checked whatever the role's shell policy allows.
    if !p.caps.tools.iter().any(|t| t == SHA256_TOOL) {
        p.caps.tools.push(SHA256_TOOL.to_string());
    }
    // The implementer is idle while it is reviewed: its slot goes to the reviewer (O7).
    h.data().permit.take();
    let started = start_boxed(inner, &parent, p).await;
    match started {
        Ok(rh) => {
            // Stopping the implementer (TaskStop, shutdown, its launcher's abort) stops its
            // review too, rather than waiting for it.
            tokio::select! {
                _ = rh.wait(false) => {}
                _ = h.aborted() => {
                    let actions = rh.data().lifecycle.on_parent_shutdown();
                    super::run::apply_actions(inner, &rh, actions);
                    rh.abort();
                    rh.wait(false).await;
                }
            }
            let r = rh.record();
            Ok(ReviewerAnswer {
                task_id: r.id,
                output_file: r.output_file,
                status: r.status,
                text: rh.data().final_text.clone(),
                error: r.error,
            })
        }
        Err(e) => Err(format!("the reviewer could not start: {e}")),
    }
}

/// Take a quota slot again for the implementer's fix round (its slot went to the reviewer).
/// `false` when the task was stopped while it waited.
pub(crate) async fn reacquire_slot(inner: &Inner, h: &TaskHandle) -> bool {
    // A foreground child of a task borrows its blocked parent's slot again, as at its start:
    // under a full quota that parent may hold the very slot the queue would wait for (O7).
    let parent = (!h.is_background())
        .then(|| h.data().record.parent_task_id.clone())
        .flatten();
    let lender = parent
        .and_then(|pid| inner.handle(&pid))
        .and_then(|ph| ph.data().permit.clone());
    let permit = tokio::select! {
        p = inner.quota.acquire_for_foreground_child(lender.as_deref()) => p,
        _ = h.aborted() => return false,
    };
    h.data().permit = Some(Arc::new(permit));
    true
}

/// `start` behind a boxed `Send` future: a run may start a reviewer, whose start spawns a run,
/// and the explicit type breaks that cycle for the compiler's `Send` check.
fn start_boxed<'a>(
    inner: &'a Arc<Inner>,
    parent: &'a ParentRef,
    p: super::prepare::Prepared,
) -> BoxFuture<'a, Result<Arc<TaskHandle>, super::types::LaunchError>> {
    Box::pin(start(inner, parent, p, crate::budget::CHILD_SHARE))
}

/// Untracked files whose lines are counted into the diff size (more are listed, not read).
const MAX_UNTRACKED_COUNTED: usize = 200;

/// The most of one untracked file read to count its lines.
const MAX_UNTRACKED_BYTES: u64 = 1024 * 1024;

/// The implementer's changes for the packet, and their size in changed lines: `git diff --stat
/// HEAD` (tracked files, staged or not) plus the files git does not track yet, which a plain
/// diff leaves out although an implementer often adds them. Empty outside a repository.
async fn changes(cwd: &Path) -> (String, usize) {
    let mut stat = git(cwd, &["diff", "--stat", "HEAD"]).await;
    let mut lines = diff_lines_from_stat(&stat);
    let untracked = git(cwd, &["ls-files", "--others", "--exclude-standard", "-z"]).await;
    let new: Vec<String> = untracked
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    if !new.is_empty() {
        // Up to 200 MiB of reads: off the runtime's thread.
        let dir = cwd.to_path_buf();
        let counted = tokio::task::spawn_blocking(move || untracked_stat(&dir, &new))
            .await
            .unwrap_or_default();
        stat.push_str(&counted.0);
        lines += counted.1;
    }
    (stat, lines)
}

/// The packet's lines for the untracked files `paths` of `cwd`, and the lines counted in them.
fn untracked_stat(cwd: &Path, paths: &[String]) -> (String, usize) {
    let mut stat = String::from("Untracked files (new, not in the diff above):\n");
    let mut lines = 0;
    for (i, path) in paths.iter().enumerate() {
        let counted = if i < MAX_UNTRACKED_COUNTED {
            count_lines(&cwd.join(path))
        } else {
            None
        };
        match counted {
            Some(Counted::Whole(n)) => {
                lines += n;
                stat.push_str(&format!(" {path} ({n} lines)\n"));
            }
            Some(Counted::Head(n)) => {
                lines += n;
                let mib = MAX_UNTRACKED_BYTES / (1024 * 1024);
                stat.push_str(&format!(
                    " {path} ({n} lines in its first {mib} MiB; longer)\n"
                ));
            }
            None => stat.push_str(&format!(" {path}\n")),
        }
    }
    (stat, lines)
}

/// Lines counted in an untracked file.
#[derive(Debug, PartialEq, Eq)]
enum Counted {
    Whole(usize),
    /// In its first [`MAX_UNTRACKED_BYTES`]; the file is longer.
    Head(usize),
}

/// The newlines of the regular file at `path`, read through a bounded reader; `None` for
/// anything else. The implementer chose what is there: a link is not followed (to a FIFO it
/// would hang the gate, to `/dev/zero` exhaust memory), a FIFO or device is not opened for
/// reading, and what was opened is checked again.
fn count_lines(path: &Path) -> Option<Counted> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    if !std::fs::symlink_metadata(path).ok()?.is_file() {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut reader = file.take(MAX_UNTRACKED_BYTES + 1);
    let mut buf = vec![0u8; 64 * 1024];
    let (mut read, mut lines) = (0u64, 0usize);
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        // Only the first MAX_UNTRACKED_BYTES count; one byte past them says "longer".
        let room = usize::try_from(MAX_UNTRACKED_BYTES.saturating_sub(read)).unwrap_or(n);
        lines += buf[..n.min(room)].iter().filter(|c| **c == b'\n').count();
        read += n as u64;
    }
    Some(if read > MAX_UNTRACKED_BYTES {
        Counted::Head(lines)
    } else {
        Counted::Whole(lines)
    })
}

/// A git command's standard output in `cwd` (empty when it fails). cadre's own hardened git
/// (`cadre_tools::git`): it runs none of the programs the repository's configuration names (a
/// writing child could have put one there), and does not run when those cannot be checked.
async fn git(cwd: &Path, args: &[&str]) -> String {
    match cadre_tools::git::own_git(cwd, args, &[], None).await {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => String::new(),
    }
}

fn note(h: &TaskHandle, text: String) {
    h.data().record.diagnostics.push(text);
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn untracked_files_are_counted_from_regular_files_only_and_within_a_bound() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::write(cwd.join("small.rs"), "a\nb\nc\n").unwrap();
        // 3 MiB of lines: only the first MiB is read.
        let line = "x".repeat(1023) + "\n";
        std::fs::write(cwd.join("large.txt"), line.repeat(3 * 1024)).unwrap();
        // A FIFO nobody writes to (opening it for reading would wait for ever), a link to a
        // device that never ends, a link to a FIFO and a link to a regular file: none is read.
        let made = std::process::Command::new("mkfifo")
            .arg(cwd.join("fifo"))
            .status()
            .unwrap();
        assert!(made.success());
        std::os::unix::fs::symlink("/dev/zero", cwd.join("zero")).unwrap();
        std::os::unix::fs::symlink("fifo", cwd.join("to-fifo")).unwrap();
        std::os::unix::fs::symlink("small.rs", cwd.join("to-small")).unwrap();

        assert_eq!(count_lines(&cwd.join("small.rs")), Some(Counted::Whole(3)));
        assert_eq!(
            count_lines(&cwd.join("large.txt")),
            Some(Counted::Head(1024))
        );
        for name in ["fifo", "zero", "to-fifo", "to-small", "missing"] {
            assert_eq!(count_lines(&cwd.join(name)), None, "{name}");
        }
        // A file of exactly the bound is whole.
        std::fs::write(cwd.join("exact.txt"), line.repeat(1024)).unwrap();
        assert_eq!(
            count_lines(&cwd.join("exact.txt")),
            Some(Counted::Whole(1024))
        );

        let paths: Vec<String> = ["small.rs", "large.txt", "fifo", "zero"]
            .map(String::from)
            .to_vec();
        let (stat, lines) = untracked_stat(cwd, &paths);
        assert_eq!(lines, 3 + 1024);
        assert_eq!(
            stat,
            "Untracked files (new, not in the diff above):\n small.rs (3 lines)\n \
             large.txt (1024 lines in its first 1 MiB; longer)\n fifo\n zero\n"
        );
    }
}
