//! `cadre task show|output|stop|apply|budget <target>` (SPEC I2, O5, O11, O12, L1).
//!
//! A target resolves by exact id → unique id prefix → unique name, first among this project's
//! tasks and then among all; an ambiguous or unknown target lists the candidates and picks none.
//!
//! Stopping a task owned by a live process cannot reach into that process: it leaves a stop
//! request (a file named by the task id in the root session's
//! [`cadre_core::orchestrator::store::STOP_REQUESTS_DIR`]), which the owner polls. A task whose
//! owner is gone is marked stopped here directly.
//!
//! `cadre task budget` changes only an ended task's record: a running task's budget lives in its
//! owner's ledger, which a record change could not reach, and the owner's next save would undo
//! it. The new cap takes effect when `SendMessage` continues the task.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result, anyhow, bail};
use cadre_core::budget::text::{receipt_line, tokens as token_count, usd};
use cadre_core::config::atomic_write;
use cadre_core::orchestrator::store::{Listing, TaskStore, pid_is_alive, timestamp};
use cadre_core::orchestrator::target::{TargetCandidate, TargetError, resolve_target};
use cadre_protocol::{Limits, Spend, TaskPhase, TaskRecord, TaskStatus, TerminationKind};
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
    /// Set an ended task's own cost or token cap, e.g. raise the one that stopped it.
    ///
    /// A cap counts everything the task and its subtasks spent, its earlier runs included: a
    /// task stopped at $0.50 that is given --max-cost-usd 1 has $0.50 more to spend. The new
    /// cap applies when SendMessage continues the task, within what its parent and its session
    /// have left (a session's own cap comes from the --max-cost-usd and --max-tokens flags or
    /// the `budgets` settings of the run that continues it). A running task's cap cannot be
    /// changed: wait for it to end, or stop it with `cadre task stop`, then set it.
    #[command(group(
        clap::ArgGroup::new("cap")
            .required(true)
            .multiple(true)
            .args(["max_cost_usd", "max_tokens"])
    ))]
    Budget {
        /// Task id, unique id prefix or name.
        target: String,
        /// The task's cost cap in US dollars at list prices (above what it has spent).
        #[arg(long, value_name = "USD", value_parser = crate::args::parse_usd)]
        max_cost_usd: Option<f64>,
        /// The task's token cap: fresh input, cache writes and output (above what it has spent).
        #[arg(long, value_name = "N", value_parser = crate::args::parse_tokens)]
        max_tokens: Option<u64>,
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
        TaskCommand::Budget {
            target,
            max_cost_usd,
            max_tokens,
        } => {
            let listing = recover_and_list(&store)?;
            let record = find(&listing, &place.root, &target)?;
            let caps = Limits {
                max_cost_usd,
                max_tokens,
            };
            print_out(&set_budget(&store, record, caps)?);
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
    if let Some(line) = r.budget.as_ref().and_then(budget_line) {
        field("budget", &line);
    }
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
    if let Some(max) = b.max_cost_usd {
        parts.push(format!("own cost cap {}", usd(max)));
    }
    if let Some(max) = b.max_tokens {
        parts.push(format!("own token cap {}", token_count(max)));
    }
    parts.push(format!(
        "warnings at turn {} then every {}",
        r.warnings.warning_turns, r.warnings.warning_interval_turns
    ));
    parts.join(", ")
}

/// The budget in force in its last run and what was spent of it: `$0.41 of $0.50 — stopped by
/// its cost budget`, with what its running subtasks still reserve.
fn budget_line(state: &cadre_protocol::BudgetState) -> Option<String> {
    let line = receipt_line(state)?;
    let mut line = line.trim_start_matches("Budget: ").to_string();
    if !state.reserved.is_zero() {
        let _ = write!(
            line,
            " ({} reserved for its running subtasks)",
            spent_text(state.reserved, state.cap)
        );
    }
    Some(line)
}

/// An amount on the meters `cap` caps: `$0.41`, `41,230 tokens`, or both.
fn spent_text(spent: Spend, cap: Limits) -> String {
    let mut parts = Vec::new();
    if cap.max_cost_usd.is_some() {
        parts.push(usd(spent.cost_usd));
    }
    if cap.max_tokens.is_some() {
        parts.push(format!("{} tokens", token_count(spent.tokens)));
    }
    parts.join(" and ")
}

/// `cadre task budget`: set an ended task's own caps in its record (atomically, as every record
/// write is). A running task is refused: its owner holds its budget and writes its record.
fn set_budget(store: &TaskStore, record: &TaskRecord, caps: Limits) -> Result<String> {
    // The newest record: the task may have been continued since it was listed.
    let mut record = store.load(&record.root_session_id, &record.id)?;
    let id = record.id.clone();
    if record.status == TaskStatus::Running {
        let owner = record
            .owner_pid
            .map_or(String::new(), |pid| format!(" in process {pid}"));
        bail!(
            "task {id} is running{owner}; its budget can be changed only once it has ended. \
             Wait for it to end, or stop it with `cadre task stop {id}`, then set the cap; \
             `SendMessage` then continues it under the new cap"
        );
    }
    if record.one_shot {
        bail!(
            "task {id} ({}) is one-shot: it cannot be continued, so a new cap would never apply; \
             launch a new task instead",
            record.agent
        );
    }
    // What it spent in all its runs, subtasks included; what the record knows otherwise.
    let spent = record
        .budget
        .map(|b| b.spent)
        .unwrap_or_else(|| Spend::of_usage(&record.usage.tokens));
    if let Some(cap) = caps.max_cost_usd
        && cap <= spent.cost_usd
    {
        bail!(
            "--max-cost-usd {} is not above what task {id} has already spent ({}): its cap counts \
             its earlier runs, so a continuation could make no request. Give more than {}",
            usd(cap),
            usd(spent.cost_usd),
            usd(spent.cost_usd)
        );
    }
    if let Some(cap) = caps.max_tokens
        && cap <= spent.tokens
    {
        bail!(
            "--max-tokens {} is not above what task {id} has already spent ({} tokens): its cap \
             counts its earlier runs, so a continuation could make no request. Give more than {}",
            token_count(cap),
            token_count(spent.tokens),
            token_count(spent.tokens)
        );
    }
    let before = record.budgets.limits();
    let mut out = String::new();
    if let Some(cap) = caps.max_cost_usd {
        record.budgets.max_cost_usd = Some(cap);
        let was = before.max_cost_usd.map_or("none".to_string(), usd);
        let _ = writeln!(
            out,
            "task {id}: cost cap {was} → {} (spent so far {})",
            usd(cap),
            usd(spent.cost_usd)
        );
    }
    if let Some(cap) = caps.max_tokens {
        record.budgets.max_tokens = Some(cap);
        let was = before.max_tokens.map_or("none".to_string(), token_count);
        let _ = writeln!(
            out,
            "task {id}: token cap {was} → {} (spent so far {})",
            token_count(cap),
            token_count(spent.tokens)
        );
    }
    store.save(&mut record)?;
    let _ = writeln!(
        out,
        "`SendMessage` to it continues it under the new cap, within what its parent and its \
         session have left."
    );
    Ok(out)
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

    fn budget_stopped(id: &str) -> TaskRecord {
        let mut r = record(id, Some("probe"), "/p", "2026-01-01T00:00:01Z");
        r.status = TaskStatus::Partial;
        r.phase = TaskPhase::Terminal;
        r.termination = Some(TerminationKind::CostBudget);
        r.budgets.max_cost_usd = Some(0.5);
        r.budget = Some(cadre_protocol::BudgetState {
            cap: Limits {
                max_cost_usd: Some(0.5),
                max_tokens: None,
            },
            spent: Spend {
                tokens: 41_230,
                cost_usd: 0.51,
            },
            exhausted: Some(cadre_protocol::Meter::Cost),
            ..Default::default()
        });
        r
    }

    #[test]
    fn budget_raises_an_ended_tasks_own_caps_in_its_record() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TaskStore::new(tmp.path());
        let mut r = budget_stopped("t3");
        store.create(&mut r).unwrap();
        let caps = Limits {
            max_cost_usd: Some(1.0),
            max_tokens: Some(200_000),
        };
        let msg = set_budget(&store, &r, caps).unwrap();
        assert!(
            msg.contains("task t3: cost cap $0.50 → $1.00 (spent so far $0.51)"),
            "{msg}"
        );
        assert!(
            msg.contains("task t3: token cap none → 200,000 (spent so far 41,230)"),
            "{msg}"
        );
        assert!(msg.contains("`SendMessage` to it continues it"), "{msg}");
        let saved = store.load("root", "t3").unwrap();
        assert_eq!(saved.budgets.limits(), caps);
        // The rest of the record is as it was: the last run's budget, its end.
        assert_eq!(saved.budget, r.budget);
        assert_eq!(saved.status, TaskStatus::Partial);
        // `task show` names the own caps and the last run's budget.
        let shown = show(&saved, Path::new("/o/output.md"), SystemTime::now());
        assert!(
            shown.contains("own cost cap $1.00, own token cap 200,000"),
            "{shown}"
        );
        assert!(
            shown.contains("budget:       $0.51 of $0.50 — stopped by its cost budget"),
            "{shown}"
        );
    }

    #[test]
    fn budget_refuses_a_running_task_a_one_shot_task_and_a_cap_already_spent() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TaskStore::new(tmp.path());
        let cost = |usd: f64| Limits {
            max_cost_usd: Some(usd),
            max_tokens: None,
        };
        let mut running = record("t4", None, "/p", "");
        cadre_core::orchestrator::store::claim_ownership(&mut running);
        store.create(&mut running).unwrap();
        let err = set_budget(&store, &running, cost(1.0))
            .unwrap_err()
            .to_string();
        assert!(err.contains("task t4 is running in process"), "{err}");
        assert!(err.contains("`cadre task stop t4`"), "{err}");
        assert_eq!(store.load("root", "t4").unwrap().budgets.max_cost_usd, None);

        let mut spent = budget_stopped("t5");
        store.create(&mut spent).unwrap();
        let err = set_budget(&store, &spent, cost(0.5))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "--max-cost-usd $0.50 is not above what task t5 has already spent ($0.51)"
            ),
            "{err}"
        );
        let tokens = Limits {
            max_cost_usd: None,
            max_tokens: Some(40_000),
        };
        let err = set_budget(&store, &spent, tokens).unwrap_err().to_string();
        assert!(err.contains("(41,230 tokens)"), "{err}");
        assert_eq!(
            store.load("root", "t5").unwrap().budgets.max_cost_usd,
            Some(0.5)
        );

        let mut once = budget_stopped("t6");
        once.one_shot = true;
        store.create(&mut once).unwrap();
        let err = set_budget(&store, &once, cost(2.0))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is one-shot"), "{err}");
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
