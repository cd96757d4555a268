//! `cadre tasks`: this project's tasks, newest first (SPEC I2, O12). Orphan recovery (O13) runs
//! first, so a task whose process died is listed as `failed/orphaned`, never as `running`.
//!
//! Only a page is read (SPEC P4): task directories are listed by name, newest first (ids are
//! UUID v7), and records are read from the newest down until the page is full, so the cost follows
//! the page, not the number of past tasks.

use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Result;
use cadre_core::orchestrator::store::{Listing, StoreProblem, TaskStore, pid_is_alive};
use cadre_protocol::TaskRecord;

use super::format::{age, clip, cost_cell, status, table, tokens_cell, unique_prefixes};
use super::{Place, print_err, print_out};

/// Shortest id prefix shown: long enough to read as an id.
pub const MIN_ID_CHARS: usize = 8;
/// Tasks shown without `--limit`.
pub const DEFAULT_LIMIT: usize = 20;

#[derive(Debug, clap::Args)]
pub struct TasksArgs {
    /// List the tasks of every project, not just this one.
    #[arg(long)]
    pub all: bool,
    /// Show at most this many tasks, the newest; 0 shows every one.
    #[arg(long, short = 'n', value_name = "N", default_value_t = DEFAULT_LIMIT)]
    pub limit: usize,
}

pub fn run(args: &TasksArgs) -> Result<ExitCode> {
    let place = Place::from_env()?;
    let store = TaskStore::new(place.home.tasks_dir());
    let mut problems = recover(&store);
    let refs = store.task_refs()?;
    problems.extend(refs.problems);
    let limit = (args.limit > 0).then_some(args.limit);
    let page = store.read_page(&refs.refs, limit, |r| {
        args.all || in_project(r, &place.root)
    });
    problems.extend(page.problems);
    // Prefixes unique among every task's id, so each works as a `cadre task` target.
    let all_ids: Vec<&str> = refs.refs.iter().map(|r| r.id.as_str()).collect();
    let prefixes: HashMap<&str, String> = all_ids
        .iter()
        .copied()
        .zip(unique_prefixes(&all_ids, MIN_ID_CHARS))
        .collect();
    let mut shown: Vec<(&TaskRecord, &str)> = page
        .records
        .iter()
        .map(|r| {
            let id = prefixes
                .get(r.id.as_str())
                .map_or(r.id.as_str(), String::as_str);
            (r, id)
        })
        .collect();
    newest_first(&mut shown, |(r, _)| r);

    if shown.is_empty() {
        let scope = if args.all {
            "No tasks yet.".to_string()
        } else {
            format!(
                "No tasks in {} yet (`cadre tasks --all` lists every project's).",
                place.root.display()
            )
        };
        print_out(&format!("{scope}\n"));
    } else {
        let now = SystemTime::now();
        let rows: Vec<Vec<String>> = shown
            .iter()
            .map(|(r, id)| row(r, id, now, args.all))
            .collect();
        let mut header = vec![
            "ID", "NAME", "AGENT", "STATUS", "AGE", "TURNS", "TOKENS", "COST", "PREVIEW",
        ];
        if args.all {
            header.insert(8, "CWD");
        }
        print_out(&table(&header, &rows));
    }
    if page.more {
        print_err(&format!(
            "cadre: note: showing the newest {}; `--limit N` shows more, `--limit 0` every one\n",
            shown.len()
        ));
    }
    // Recovery and the page may both have met the same unreadable record.
    let mut unique: Vec<StoreProblem> = Vec::with_capacity(problems.len());
    for problem in problems {
        if !unique.contains(&problem) {
            unique.push(problem);
        }
    }
    report_problems(&unique);
    Ok(ExitCode::SUCCESS)
}

fn row(r: &TaskRecord, id: &str, now: SystemTime, with_cwd: bool) -> Vec<String> {
    let tokens_used = match r.usage.tokens.total_tokens {
        0 => r.usage.tokens.input + r.usage.tokens.output,
        n => n,
    };
    let mut cells = vec![
        id.to_string(),
        r.name.clone().unwrap_or_else(|| "-".into()),
        r.agent.clone(),
        status(r),
        age(&r.created_at, now),
        r.usage.turns.to_string(),
        tokens_cell(r.budget.as_ref(), tokens_used),
        cost_cell(r.budget.as_ref(), r.usage.tokens.cost.total),
        clip(
            if r.preview.is_empty() {
                &r.description
            } else {
                &r.preview
            },
            60,
        ),
    ];
    if with_cwd {
        cells.insert(8, r.cwd.clone());
    }
    cells
}

/// Mark dead owners' `running` records failed (O13), then list every readable record. What could
/// not be read is in the listing's problems; recovery's own problems are added there.
pub fn recover_and_list(store: &TaskStore) -> Result<Listing> {
    let problems = recover(store);
    let mut listing = store.list_all()?;
    for problem in problems {
        if !listing.problems.contains(&problem) {
            listing.problems.push(problem);
        }
    }
    Ok(listing)
}

/// Mark dead owners' `running` records failed (O13), saying which on stderr; what recovery could
/// not read is returned.
fn recover(store: &TaskStore) -> Vec<StoreProblem> {
    let recovery = store.recover_orphans(pid_is_alive);
    if !recovery.recovered.is_empty() {
        let ids: Vec<&str> = recovery.recovered.iter().map(|r| r.id.as_str()).collect();
        print_err(&format!(
            "cadre: note: {} task(s) marked failed/orphaned: their process is gone ({})\n",
            ids.len(),
            ids.join(", ")
        ));
    }
    recovery.problems
}

/// Whether a task ran inside the project (its cwd is the root or below it; a worktree child's cwd
/// is under the repository's `.git`, so it counts too).
pub fn in_project(record: &TaskRecord, root: &Path) -> bool {
    !record.cwd.is_empty() && Path::new(&record.cwd).starts_with(root)
}

/// Newest first: by creation time, then by id (UUID v7 ids sort in creation order).
pub fn newest_first<T>(items: &mut [T], record: impl Fn(&T) -> &TaskRecord) {
    items.sort_by(|a, b| {
        let (a, b) = (record(a), record(b));
        b.created_at
            .cmp(&a.created_at)
            .then_with(|| b.id.cmp(&a.id))
    });
}

pub fn report_problems(problems: &[StoreProblem]) {
    for problem in problems {
        print_err(&format!(
            "cadre: warning: skipped {}\n",
            problem_text(problem)
        ));
    }
}

/// A skipped record as a reader wants it: the store's message usually names the file already,
/// and the task directory in front of it would only say the same path twice.
pub fn problem_text(problem: &StoreProblem) -> String {
    if problem
        .message
        .contains(&problem.path.display().to_string())
    {
        problem.message.clone()
    } else {
        problem.to_string()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn project_membership_is_by_path_component() {
        let mut r = TaskRecord {
            cwd: "/p/proj/sub".into(),
            ..TaskRecord::default()
        };
        assert!(in_project(&r, Path::new("/p/proj")));
        r.cwd = "/p/proj".into();
        assert!(in_project(&r, Path::new("/p/proj")));
        r.cwd = "/p/project2".into();
        assert!(!in_project(&r, Path::new("/p/proj")));
        r.cwd = String::new();
        assert!(!in_project(&r, Path::new("/")));
    }

    #[test]
    fn newest_first_orders_by_time_then_id() {
        let rec = |id: &str, at: &str| TaskRecord {
            id: id.into(),
            created_at: at.into(),
            ..TaskRecord::default()
        };
        let mut v = vec![
            rec("a", "2026-01-01T00:00:00.000Z"),
            rec("c", "2026-01-02T00:00:00.000Z"),
            rec("b", "2026-01-02T00:00:00.000Z"),
        ];
        newest_first(&mut v, |r| r);
        let ids: Vec<&str> = v.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["c", "b", "a"]);
    }

    #[test]
    fn rows_fall_back_to_the_description_and_input_plus_output() {
        let mut r = TaskRecord {
            agent: "Explore".into(),
            description: "find callers".into(),
            ..TaskRecord::default()
        };
        r.usage.tokens.input = 1_000;
        r.usage.tokens.output = 500;
        let cells = row(&r, "0192abcd", SystemTime::now(), false);
        assert_eq!(cells[0], "0192abcd");
        assert_eq!(cells[1], "-");
        assert_eq!(cells[6], "1.5k");
        assert_eq!(cells[8], "find callers");
        assert_eq!(row(&r, "x", SystemTime::now(), true).len(), 10);
    }
}
