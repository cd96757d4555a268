//! `cadre tasks`: this project's tasks, newest first (SPEC I2, O12). Orphan recovery (O13) runs
//! first, so a task whose process died is listed as `failed/orphaned`, never as `running`.
//!
//! Only a page is read (SPEC P4): the tasks are named by the store's index (with root session
//! directories it does not know listed by name, so tasks older versions wrote are listed too),
//! sorted newest first (ids are UUID v7), and records are read from the newest down until the page
//! is full, so the cost follows the page, not the number of past tasks. Statuses come from the
//! records, never from the index.

use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Result;
use cadre_core::orchestrator::store::{Listing, StoreProblem, TaskStore, pid_is_alive};
use cadre_protocol::TaskRecord;

use super::format::{age, clip, common_prefix, cost_cell, status, table, tokens_cell};
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
    /// Look in every task directory, not only the task index, and add what the index lacks (tasks
    /// an older cadre wrote after this one indexed their root session).
    #[arg(long)]
    pub rescan: bool,
}

pub fn run(args: &TasksArgs) -> Result<ExitCode> {
    let place = Place::from_env()?;
    let store = TaskStore::new(place.home.tasks_dir());
    let mut problems = recover(&store);
    let refs = store.task_refs_with(args.rescan)?;
    problems.extend(refs.problems);
    let limit = (args.limit > 0).then_some(args.limit);
    let page = store.read_page(&refs.refs, limit, |r| {
        args.all || in_project(r, &place.root)
    });
    problems.extend(page.problems);
    // Prefixes unique among every task's id, so each works as a `cadre task` target. The refs
    // are sorted by id, newest first: a shown id's neighbours there are all it must differ from.
    let all_ids: Vec<&str> = refs.refs.iter().map(|r| r.id.as_str()).collect();
    let mut shown: Vec<(&TaskRecord, String)> = page
        .records
        .iter()
        .map(|r| (r, unique_prefix_in_sorted(&all_ids, &r.id, MIN_ID_CHARS)))
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

/// The shortest prefix of `id`, at least `min` characters, that no other id of `desc` (every id,
/// sorted descending; `id` among them) starts with: one character past what it shares with its
/// neighbours. The same as [`super::format::unique_prefixes`] gives `id`, without a prefix for
/// every id.
fn unique_prefix_in_sorted(desc: &[&str], id: &str, min: usize) -> String {
    let at = desc.partition_point(|x| *x > id);
    let mut shared = 0;
    if at > 0 {
        shared = common_prefix(id, desc[at - 1]);
    }
    // `desc[at]` is `id` itself; a second equal id (the same id under two roots) shares it all.
    if let Some(next) = desc.get(at + 1) {
        shared = shared.max(common_prefix(id, next));
    }
    id.chars().take((shared + 1).max(min)).collect()
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
    fn a_prefix_from_the_sorted_ids_is_the_one_every_prefix_gives() {
        use super::super::format::unique_prefixes;
        let mut ids = vec![
            "0192aaaa-bbbb-7000-8000-000000000001",
            "0192aaaa-bbbb-7000-8000-000000000002",
            "0193cccc-0000-7000-8000-000000000000",
            "0193cccc-0000-7000-8000-000000000000",
            "0194dddd",
            "ab",
        ];
        ids.sort_unstable_by(|a, b| b.cmp(a));
        let all = unique_prefixes(&ids, MIN_ID_CHARS);
        for (id, want) in ids.iter().zip(&all) {
            assert_eq!(
                &unique_prefix_in_sorted(&ids, id, MIN_ID_CHARS),
                want,
                "{id}"
            );
        }
        assert_eq!(unique_prefix_in_sorted(&["x"], "x", MIN_ID_CHARS), "x");
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
