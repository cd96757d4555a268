//! `cadre task show|output|stop|apply <target>` (SPEC I2, O5, O11, O12).
//!
//! A target resolves by exact id → unique id prefix → unique name, first among this project's
//! tasks and then among all; an ambiguous or unknown target lists the candidates and picks none.
//!
//! Stopping a task owned by a live process cannot reach into that process: it leaves a stop
//! request (a file named by the task id in the root session's
//! [`cadre_core::orchestrator::store::STOP_REQUESTS_DIR`]), which the owner polls. A task whose
//! owner is gone is marked stopped here directly.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result, anyhow, bail};
use cadre_core::config::atomic_write;
use cadre_core::orchestrator::store::{Listing, TaskStore, pid_is_alive, timestamp};
use cadre_core::orchestrator::target::{TargetCandidate, TargetError, resolve_target};
use cadre_protocol::{TaskPhase, TaskRecord, TaskStatus, TerminationKind};
use cadre_tools::shell_policy::CommandAllowlist;

use super::format::{age, cost, status, table, tokens, unique_prefixes};
use super::tasks::{MIN_ID_CHARS, in_project, recover_and_list, report_problems};
use super::{Place, print_err, print_out};

#[derive(Debug, clap::Args)]
pub struct TaskArgs {
    #[command(subcommand)]
    pub command: TaskCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum TaskCommand {
    /// Show a task's record.
    Show {
        /// Task id, unique id prefix or name.
        target: String,
        /// Print the raw task.json.
        #[arg(long)]
        json: bool,
    },
    /// Print a task's whole output (output.md).
    Output {
        /// Task id, unique id prefix or name.
        target: String,
    },
    /// Stop a running task (its partial output is kept).
    Stop {
        /// Task id, unique id prefix or name.
        target: String,
    },
    /// Apply the changes a task left in its kept worktree to the main working tree.
    Apply {
        /// Task id, unique id prefix or name.
        target: String,
    },
}

pub async fn run(args: TaskArgs) -> Result<ExitCode> {
    let place = Place::from_env()?;
    let store = TaskStore::new(place.home.tasks_dir());
    match args.command {
        TaskCommand::Show { target, json } => {
            let listing = recover_and_list(&store)?;
            let record = find(&listing, &place.root, &target)?;
            if json {
                let path = store.record_path(&record.root_session_id, &record.id)?;
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                print_out(&with_newline(text));
            } else {
                let output = store.output_path(&record.root_session_id, &record.id)?;
                print_out(&show(record, &output, SystemTime::now()));
            }
        }
        TaskCommand::Output { target } => {
            let listing = recover_and_list(&store)?;
            let record = find(&listing, &place.root, &target)?;
            let text = store.read_output(&record.root_session_id, &record.id)?;
            if text.is_empty() {
                // "Yet" only while it runs: an ended task will never have any.
                let when = if record.status.is_terminal() {
                    ""
                } else {
                    " yet"
                };
                print_err(&format!(
                    "cadre: task {} ({}) has no output{when}\n",
                    record.id,
                    status(record)
                ));
            } else {
                print_out(&with_newline(text));
            }
        }
        TaskCommand::Stop { target } => {
            // No recovery first: a task whose process died is stopped on request, not orphaned.
            let listing = store.list_all()?;
            report_problems(&listing.problems);
            let record = find(&listing, &place.root, &target)?.clone();
            print_out(&stop(&store, record, STOP_CONFIRM_WAIT)?);
        }
        TaskCommand::Apply { target } => {
            let listing = recover_and_list(&store)?;
            let record = find(&listing, &place.root, &target)?;
            print_out(&apply(record).await?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Resolve `query` among this project's tasks, then among every task (O5).
fn find<'a>(listing: &'a Listing, root: &Path, query: &str) -> Result<&'a TaskRecord> {
    // An empty target (`cadre task show ""`, an unset shell variable) matches nothing useful.
    if query.trim().is_empty() {
        bail!(
            "the task target is empty: give a task id, id prefix or name (`cadre tasks` lists them)"
        );
    }
    let local: Vec<&TaskRecord> = listing
        .records
        .iter()
        .filter(|r| in_project(r, root))
        .collect();
    let everywhere: Vec<&TaskRecord> = listing.records.iter().collect();
    let first = pick(&local, query);
    let result = match first {
        Err(TargetError::Unknown { .. }) => pick(&everywhere, query),
        other => other,
    };
    let prefixes = unique_prefixes(
        &everywhere.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        MIN_ID_CHARS,
    );
    match result {
        Ok(id) => listing
            .records
            .iter()
            .find(|r| r.id == id)
            .ok_or_else(|| anyhow!("task {id} vanished while resolving")),
        Err(TargetError::Ambiguous { query, candidates }) => Err(anyhow!(
            "task target `{query}` is ambiguous; use a longer id prefix or the full id. Candidates:\n{}",
            candidate_table(&candidates, listing, &prefixes)
        )),
        Err(TargetError::Unknown { query, candidates }) if candidates.is_empty() => {
            Err(anyhow!("no task matches `{query}`: there are no tasks yet"))
        }
        Err(TargetError::Unknown { query, candidates }) => Err(anyhow!(
            "no task matches `{query}`. Recent tasks:\n{}",
            candidate_table(&candidates, listing, &prefixes)
        )),
    }
}

fn pick(records: &[&TaskRecord], query: &str) -> Result<String, TargetError> {
    let candidates: Vec<TargetCandidate> = records
        .iter()
        .map(|r| TargetCandidate {
            id: r.id.clone(),
            name: r.name.clone(),
            status: r.status,
            created_at: r.created_at.clone(),
        })
        .collect();
    resolve_target(query, &candidates).map(|c| c.id.clone())
}

/// The candidates as indented table rows: the id to type, name, agent, status, age.
fn candidate_table(
    candidates: &[TargetCandidate],
    listing: &Listing,
    prefixes: &[String],
) -> String {
    let now = SystemTime::now();
    let rows: Vec<Vec<String>> = candidates
        .iter()
        .filter_map(|c| {
            let i = listing.records.iter().position(|r| r.id == c.id)?;
            let r = &listing.records[i];
            Some(vec![
                format!(
                    "  {}",
                    prefixes.get(i).map_or(r.id.as_str(), String::as_str)
                ),
                r.name.clone().unwrap_or_else(|| "-".into()),
                r.agent.clone(),
                status(r),
                age(&r.created_at, now),
            ])
        })
        .collect();
    let mut text = table(&["  ID", "NAME", "AGENT", "STATUS", "AGE"], &rows);
    text.truncate(text.trim_end().len());
    text
}

/// The record in readable form.
pub(crate) fn show(r: &TaskRecord, output_path: &Path, now: SystemTime) -> String {
    let mut out = String::new();
    let mut field = |label: &str, value: &str| {
        let _ = writeln!(out, "{:<14}{value}", format!("{label}:"));
    };
    field("task", &r.id);
    if let Some(name) = &r.name {
        field("name", name);
    }
    field("agent", &r.agent);
    if !r.description.is_empty() {
        field("description", &r.description);
    }
    let mut state = format!("{} (phase {})", status(r), phase(r.phase));
    if r.status == TaskStatus::Running
        && let Some(pid) = r.owner_pid
    {
        let _ = write!(state, ", owned by process {pid}");
    }
    field("status", &state);
    if let Some(error) = &r.error {
        field("error", error);
    }
    let mut model = r.model.clone();
    if let Some(fallback) = &r.fallback_model {
        let _ = write!(model, " (fallback {fallback})");
    }
    field("model", &model);
    if !r.effective_thinking.is_empty() {
        let mut thinking = r.effective_thinking.clone();
        if r.requested_thinking != r.effective_thinking && !r.requested_thinking.is_empty() {
            thinking = format!("{} → {}", r.requested_thinking, r.effective_thinking);
        }
        if let Some(why) = &r.thinking_clamp_reason {
            let _ = write!(thinking, " ({why})");
        }
        field("thinking", &thinking);
    }
    field("cwd", &r.cwd);
    let mut kind = vec![if r.background {
        "background"
    } else {
        "foreground"
    }];
    if r.forked {
        kind.push("forked");
    }
    if r.one_shot {
        kind.push("one-shot");
    }
    field("kind", &format!("{}, depth {}", kind.join(", "), r.depth));
    if let Some(parent) = &r.parent_task_id {
        field("parent task", parent);
    }
    field("root session", &r.root_session_id);
    let mut tools = if r.tools.is_empty() {
        "none".to_string()
    } else {
        r.tools.join(", ")
    };
    if r.readonly {
        tools.push_str(" (read-only)");
    }
    if !r.shell_policy.is_empty() {
        let _ = write!(tools, "; shell {}", r.shell_policy);
    }
    // As the task's bash reads them: `*` is no allowlist, unreadable patterns allow nothing.
    match CommandAllowlist::parse(&r.bash_allow) {
        Ok(list) if list.allows_all() => {}
        Ok(_) => {
            let _ = write!(tools, "; bash only {}", r.bash_allow.join(", "));
        }
        Err(_) => tools.push_str("; bash refused (its command patterns cannot be read)"),
    }
    field("tools", &tools);
    field("budgets", &budgets(r));
    field("usage", &usage(r));
    field(
        "created",
        &format!("{} ({})", r.created_at, age(&r.created_at, now)),
    );
    if let Some(at) = &r.started_at {
        field("started", at);
    }
    if let Some(at) = &r.ended_at {
        field("ended", at);
    }
    if let Some(session) = &r.session_file {
        field("session", session);
    }
    let output = if r.output_file.is_empty() {
        output_path.display().to_string()
    } else {
        r.output_file.clone()
    };
    field("output", &output);
    if let Some(wt) = &r.worktree {
        let state = if wt.kept {
            "kept: `cadre task apply` applies its changes"
        } else {
            "not kept"
        };
        field(
            "worktree",
            &format!("{} (branch {}, {state})", wt.path, wt.branch),
        );
        if let Some(stat) = wt.diff_stat.as_deref().filter(|s| !s.trim().is_empty()) {
            for line in stat.lines() {
                let _ = writeln!(out, "{:14}{line}", "");
            }
        }
    }
    if !r.diagnostics.is_empty() {
        let _ = writeln!(out, "diagnostics:");
        for d in &r.diagnostics {
            let _ = writeln!(out, "  - {d}");
        }
    }
    if !r.preview.is_empty() {
        let _ = writeln!(out, "{:<14}{}", "preview:", r.preview);
    }
    if !r.prompt.is_empty() {
        let _ = writeln!(out, "prompt:");
        for line in r.prompt.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

fn phase(p: TaskPhase) -> &'static str {
    match p {
        TaskPhase::Starting => "starting",
        TaskPhase::Working => "working",
        TaskPhase::FinalHandoff => "final handoff",
        TaskPhase::Terminal => "terminal",
    }
}

fn budgets(r: &TaskRecord) -> String {
    let b = &r.budgets;
    let mut parts = Vec::new();
    if let Some(max) = b.max_turns {
        parts.push(format!("{max} turns (+{} grace)", b.grace_turns));
    }
    if let Some(max) = b.max_tool_calls {
        parts.push(format!("{max} tool calls"));
    }
    if let Some(soft) = b.soft_tool_calls {
        parts.push(format!("soft {soft} tool calls"));
    }
    if let Some(ms) = b.timeout_ms {
        parts.push(format!("timeout {}s", ms / 1000));
    }
    parts.push(format!(
        "warnings at turn {} then every {}",
        r.warnings.warning_turns, r.warnings.warning_interval_turns
    ));
    parts.join(", ")
}

fn usage(r: &TaskRecord) -> String {
    let u = &r.usage;
    let t = &u.tokens;
    format!(
        "{} turns; {} tokens ({} in, {} out, {} cache read, {} cache write); cost {}; tool calls {} requested, {} executed, {} blocked",
        u.turns,
        tokens(t.total_tokens.max(t.input + t.output)),
        tokens(t.input),
        tokens(t.output),
        tokens(t.cache_read),
        tokens(t.cache_write),
        cost(t.cost.total),
        u.tool_calls_requested,
        u.tool_calls_executed,
        u.tool_calls_blocked
    )
}

/// Stop one task: a request to a live owner, waiting up to `confirm` for it to take effect, or a
/// direct transition when the owner is gone.
fn stop(store: &TaskStore, record: TaskRecord, confirm: std::time::Duration) -> Result<String> {
    let id = record.id.clone();
    if record.status.is_terminal() {
        return Ok(format!(
            "task {id} already ended: {}; nothing to stop\n",
            status(&record)
        ));
    }
    let owner = record
        .owner_pid
        .filter(|&pid| pid_is_alive(pid, record.owner_start_time));
    if let Some(pid) = owner {
        let request = format!(
            "{{\"requestedAt\":\"{}\",\"requestedBy\":{}}}\n",
            timestamp(SystemTime::now()),
            std::process::id()
        );
        let path = store.stop_request_path(&record.root_session_id, &id)?;
        atomic_write(&path, request.as_bytes())
            .with_context(|| format!("cannot write the stop request {}", path.display()))?;
        // The owner polls for the request several times a second; say what became of it
        // rather than leave the user to find out from `cadre tasks`.
        if let Some(ended) = wait_until_ended(store, &record, confirm) {
            return Ok(match ended.status {
                TaskStatus::Stopped => format!("task {id} stopped; its partial output is kept\n"),
                _ => format!(
                    "task {id} ended before it could be stopped: {}\n",
                    status(&ended)
                ),
            });
        }
        return Ok(format!(
            "stop requested for task {id}: its process ({pid}) has not stopped it yet; it does so at its next check and keeps its partial output\n"
        ));
    }
    // Nobody runs it: record the stop ourselves. Re-read first so the newest record is changed.
    let mut record = store.load(&record.root_session_id, &id)?;
    if record.status.is_terminal() {
        return Ok(format!(
            "task {id} already ended: {}; nothing to stop\n",
            status(&record)
        ));
    }
    let why = match record.owner_pid {
        Some(pid) => format!("stopped by `cadre task stop`; its process {pid} was gone"),
        None => "stopped by `cadre task stop`; no owning process was recorded".to_string(),
    };
    record.status = TaskStatus::Stopped;
    record.phase = TaskPhase::Terminal;
    record.termination = Some(TerminationKind::ManualStop);
    record.ended_at = Some(timestamp(SystemTime::now()));
    record.owner_pid = None;
    record.owner_start_time = None;
    record.diagnostics.push(why.clone());
    store.save(&mut record)?;
    Ok(format!("task {id} stopped ({why})\n"))
}

/// How long `cadre task stop` waits to confirm that the owning process stopped the task.
const STOP_CONFIRM_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The task's record once it has ended, polled until `wait` has passed; `None` if it still runs.
fn wait_until_ended(
    store: &TaskStore,
    record: &TaskRecord,
    wait: std::time::Duration,
) -> Option<TaskRecord> {
    let deadline = std::time::Instant::now() + wait;
    loop {
        if let Ok(now) = store.load(&record.root_session_id, &record.id)
            && now.status.is_terminal()
        {
            return Some(now);
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Apply a kept worktree's changes to the main working tree (O11).
async fn apply(r: &TaskRecord) -> Result<String> {
    cadre_host::apply_task(r).await
}

fn with_newline(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn record(id: &str, name: Option<&str>, cwd: &str, at: &str) -> TaskRecord {
        TaskRecord {
            id: id.into(),
            name: name.map(str::to_string),
            cwd: cwd.into(),
            agent: "Explore".into(),
            root_session_id: "root".into(),
            created_at: at.into(),
            ..TaskRecord::default()
        }
    }

    fn listing() -> Listing {
        Listing {
            records: vec![
                record(
                    "0192aaaa-0001",
                    Some("alpha"),
                    "/p/one",
                    "2026-01-01T00:00:01Z",
                ),
                record(
                    "0192aaaa-0002",
                    Some("beta"),
                    "/p/one",
                    "2026-01-01T00:00:02Z",
                ),
                record(
                    "0192bbbb-0003",
                    Some("beta"),
                    "/p/two",
                    "2026-01-01T00:00:03Z",
                ),
                record(
                    "0193cccc-0004",
                    Some("gamma"),
                    "/p/two",
                    "2026-01-01T00:00:04Z",
                ),
            ],
            problems: Vec::new(),
        }
    }

    #[test]
    fn targets_resolve_in_the_project_first_then_everywhere() {
        let l = listing();
        let root = Path::new("/p/one");
        assert_eq!(find(&l, root, "0192aaaa-0001").unwrap().id, "0192aaaa-0001");
        assert_eq!(find(&l, root, "0192aaaa-0002").unwrap().id, "0192aaaa-0002");
        // "beta" names one task here and another elsewhere: this project's wins.
        assert_eq!(find(&l, root, "beta").unwrap().id, "0192aaaa-0002");
        // Only elsewhere: found there.
        assert_eq!(find(&l, root, "gamma").unwrap().id, "0193cccc-0004");
        assert_eq!(find(&l, root, "0193").unwrap().id, "0193cccc-0004");
        let err = find(&l, root, "0192aaaa").unwrap_err().to_string();
        assert!(err.contains("ambiguous"), "{err}");
        assert!(
            err.contains("0192aaaa-0001") && err.contains("0192aaaa-0002"),
            "{err}"
        );
        let err = find(&l, root, "nope").unwrap_err().to_string();
        assert!(err.contains("no task matches `nope`"), "{err}");
        assert!(err.contains("Recent tasks"), "{err}");
        let empty = Listing::default();
        let err = find(&empty, root, "x").unwrap_err().to_string();
        assert!(err.contains("there are no tasks yet"), "{err}");
    }

    #[test]
    fn show_prints_the_main_fields() {
        let mut r = record(
            "0192aaaa-0001",
            Some("alpha"),
            "/p/one",
            "2026-01-01T00:00:01Z",
        );
        r.status = TaskStatus::Failed;
        r.error = Some("orphaned".into());
        r.prompt = "line one\nline two".into();
        r.diagnostics = vec!["owner process 7 is gone".into()];
        let out = show(&r, Path::new("/o/output.md"), SystemTime::now());
        for want in [
            "task:         0192aaaa-0001",
            "name:         alpha",
            "status:       failed/orphaned (phase starting)",
            "error:        orphaned",
            "output:       /o/output.md",
            "  - owner process 7 is gone",
            "prompt:\n  line one\n  line two\n",
        ] {
            assert!(out.contains(want), "missing {want:?} in:\n{out}");
        }
    }

    #[test]
    fn show_names_the_command_patterns_next_to_the_shell_policy() {
        let mut r = record("0192aaaa-0002", None, "/p/one", "2026-01-01T00:00:01Z");
        r.tools = vec!["read".into(), "bash".into()];
        r.shell_policy = "unrestricted".into();
        r.bash_allow = vec!["git status:*".into(), "npm test".into()];
        let out = show(&r, Path::new("/o/output.md"), SystemTime::now());
        let want = "tools:        read, bash; shell unrestricted; bash only git status:*, npm test";
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
        r.bash_allow = vec!["*".into()];
        let out = show(&r, Path::new("/o/output.md"), SystemTime::now());
        assert!(!out.contains("bash only"), "{out}");
        r.bash_allow = vec!["git diff; rm".into()];
        let out = show(&r, Path::new("/o/output.md"), SystemTime::now());
        assert!(
            out.contains("; bash refused (its command patterns cannot be read)"),
            "{out}"
        );
    }

    #[test]
    fn stop_marks_a_dead_owners_task_and_leaves_finished_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TaskStore::new(tmp.path());
        let mut r = record("t1", Some("x"), "/p", "");
        r.owner_pid = Some(0); // never alive
        store.create(&mut r).unwrap();
        let msg = stop(&store, r.clone(), std::time::Duration::ZERO).unwrap();
        assert!(msg.contains("stopped"), "{msg}");
        let saved = store.load("root", "t1").unwrap();
        assert_eq!(saved.status, TaskStatus::Stopped);
        assert_eq!(saved.termination, Some(TerminationKind::ManualStop));
        assert_eq!(saved.phase, TaskPhase::Terminal);
        assert!(saved.ended_at.is_some());
        let msg = stop(&store, saved, std::time::Duration::ZERO).unwrap();
        assert!(msg.contains("already ended"), "{msg}");
    }

    #[test]
    fn stop_asks_a_live_owner() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TaskStore::new(tmp.path());
        let mut r = record("t2", None, "/p", "");
        cadre_core::orchestrator::store::claim_ownership(&mut r);
        store.create(&mut r).unwrap();
        let msg = stop(&store, r, std::time::Duration::ZERO).unwrap();
        assert!(msg.contains("stop requested"), "{msg}");
        let request = store.stop_request_path("root", "t2").unwrap();
        let text = std::fs::read_to_string(request).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(v["requestedAt"].is_string());
        // The record itself is the owner's to change.
        assert_eq!(
            store.load("root", "t2").unwrap().status,
            TaskStatus::Running
        );
    }
}
