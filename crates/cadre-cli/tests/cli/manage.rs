//! Management commands (SPEC I2): `cadre agents`, `cadre doctor`, `cadre tasks`, `cadre task
//! show|output|stop|apply`, `cadre trust`. Task records are fabricated with the real `TaskStore`;
//! the apply test makes a real git repository and worktree.

use std::path::{Path, PathBuf};
use std::process::Command;

use std::time::{Duration, SystemTime};

use cadre_core::orchestrator::store::{TaskStore, new_task_id, process_start_time, timestamp};
use cadre_core::orchestrator::worktree::{Worktree, WorktreeOutcome};
use cadre_protocol::{TaskPhase, TaskRecord, TaskStatus, TerminationKind};
use serde_json::Value;

use crate::harness::{Fixture, Output};

const ROOT: &str = "0192root-0000-7000-8000-000000000000";
/// Two ids that share their first nine characters (UUID v7 ids made in the same minute do), so
/// `0192aaaa` names both and `0192aaaa-b` / `0192aaaa-c` one each.
const ID_A: &str = "0192aaaa-bbbb-7000-8000-00000000000a";
const ID_B: &str = "0192aaaa-cccc-7000-8000-00000000000b";
const ID_C: &str = "0193cccc-0000-7000-8000-00000000000c";

fn store(f: &Fixture) -> TaskStore {
    TaskStore::new(f.home.join("tasks"))
}

/// A finished task record in `cwd`.
fn record(id: &str, name: &str, cwd: &Path) -> TaskRecord {
    let mut r = TaskRecord {
        id: id.into(),
        name: Some(name.into()),
        agent: "Explore".into(),
        description: "look around".into(),
        prompt: "Find where euros are converted.".into(),
        cwd: cwd.to_string_lossy().into_owned(),
        root_session_id: ROOT.into(),
        status: TaskStatus::Completed,
        phase: TaskPhase::Terminal,
        termination: Some(TerminationKind::Normal),
        model: "fake/m1".into(),
        preview: format!("{name} found it"),
        ..TaskRecord::default()
    };
    r.usage.turns = 3;
    r.usage.tokens.total_tokens = 12_345;
    r.usage.tokens.cost.total = 0.0123;
    r
}

fn create(f: &Fixture, mut r: TaskRecord) -> TaskRecord {
    store(f).create(&mut r).expect("create the task record");
    r
}

/// A pid no process has any more: a child that has exited and been reaped. The recorded start
/// time cannot match a later process that reuses the pid.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("spawn true");
    let pid = child.id();
    child.wait().expect("wait for true");
    pid
}

fn running(mut r: TaskRecord, owner: Option<(u32, Option<u64>)>) -> TaskRecord {
    r.status = TaskStatus::Running;
    r.phase = TaskPhase::Working;
    r.termination = None;
    r.owner_pid = owner.map(|o| o.0);
    r.owner_start_time = owner.and_then(|o| o.1);
    r
}

/// `r` running under this test process, which is alive.
fn running_here(r: TaskRecord) -> TaskRecord {
    let me = std::process::id();
    running(r, Some((me, process_start_time(me))))
}

/// `r` running under a process that has exited: an orphan.
fn orphaned(r: TaskRecord) -> TaskRecord {
    running(r, Some((dead_pid(), Some(1))))
}

fn load(f: &Fixture, id: &str) -> TaskRecord {
    store(f).load(ROOT, id).expect("load the record")
}

/// A failure whose first stderr line is `cadre: error:`; returns all of stderr.
fn assert_error(out: &Output) -> &str {
    assert!(
        out.code.is_some_and(|c| c != 0),
        "expected failure: {out:#?}"
    );
    assert!(out.stdout.is_empty(), "{out:#?}");
    assert!(!out.stderr.contains("panicked"), "{out:#?}");
    assert!(out.stderr.starts_with("cadre: error: "), "{out:#?}");
    &out.stderr
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn role(name: &str, description: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: {description}\ntools: read, grep\nmodel: fake/m1\n---\nBe brief.\n"
    )
}

// ---------------------------------------------------------------------------------------------
// cadre agents

#[test]
fn agents_lists_builtins_user_roles_and_project_roles_only_when_trusted() {
    let f = Fixture::new();
    write(
        &f.home.join("agents/helper.md"),
        &role("helper", "a user helper"),
    );
    write(
        &f.project.join(".cadre/agents/code.md"),
        &role("code", "project code"),
    );

    let out = f.run(&["agents"]);
    out.assert_success();
    let text = &out.stdout;
    for builtin in [
        "general-purpose (general)",
        "Explore (explore, explorer)",
        "Plan (plan)",
        "research",
        "code (implementer)",
        "review (reviewer)",
        "verification",
        "advisor",
    ] {
        assert!(text.contains(builtin), "missing {builtin}:\n{text}");
    }
    let helper = text
        .lines()
        .find(|l| l.starts_with("helper "))
        .unwrap_or_else(|| panic!("no helper row:\n{text}"));
    assert!(helper.contains("user"), "{helper}");
    assert!(helper.contains("fake/m1"), "the locked model: {helper}");
    assert!(helper.contains("read, grep"), "{helper}");
    assert!(
        helper.contains("~/") || helper.contains("agents/helper.md"),
        "{helper}"
    );
    // Untrusted: the project's code.md is not loaded, and the report says why and what to do.
    let code = text.lines().find(|l| l.starts_with("code ")).unwrap();
    assert!(code.contains("built-in"), "{code}");
    assert!(text.contains("not trusted"), "{text}");
    assert!(text.contains("cadre trust"), "{text}");
    assert!(
        text.contains("ignored"),
        "the skipped directory is named:\n{text}"
    );

    // `--trust` for one run loads it without recording anything.
    let out = f.run(&["agents", "--trust"]);
    out.assert_success();
    assert!(
        out.stdout
            .contains("project .cadre/agents/code.md overrides built-in code"),
        "{}",
        out.stdout
    );
    assert!(!f.home.join("trust.json").exists());

    f.run(&["trust"]).assert_success();
    let out = f.run(&["agents"]);
    out.assert_success();
    let text = &out.stdout;
    let code = text.lines().find(|l| l.starts_with("code ")).unwrap();
    assert!(code.contains("project"), "{code}");
    assert!(code.contains(".cadre/agents/code.md"), "{code}");
    assert!(
        text.contains("project .cadre/agents/code.md overrides built-in code"),
        "{text}"
    );
    assert!(text.contains("trusted; its agents are loaded"), "{text}");
}

#[test]
fn agents_reports_a_malformed_project_role_and_blocks_its_name() {
    let f = Fixture::new();
    write(
        &f.project.join(".cadre/agents/review.md"),
        "---\nname: review\ndescription: broken\nshellPolicy: yolo\n---\n",
    );
    f.run(&["trust"]).assert_success();
    let out = f.run(&["agents"]);
    out.assert_success();
    let text = &out.stdout;
    // No fallback to the built-in review: the name is unavailable, with file and reason.
    assert!(
        !text.lines().any(|l| l.starts_with("review ")),
        "review must not be listed as available:\n{text}"
    );
    let blocked = text
        .lines()
        .find(|l| l.contains("review — project .cadre/agents/review.md"))
        .unwrap_or_else(|| panic!("no blocked line:\n{text}"));
    assert!(
        blocked.contains("yolo") || blocked.contains("shellPolicy"),
        "{blocked}"
    );
    assert!(text.contains("Blocked names"), "{text}");
    assert!(text.contains("Explore (explore, explorer)"), "{text}");

    // doctor names it as an error too, and exits 1.
    let out = f.run(&["doctor"]);
    assert_eq!(out.code, Some(1), "{out:#?}");
    assert!(
        out.stdout
            .lines()
            .any(|l| l.contains("error:") && l.contains("`review`") && l.contains("review.md")),
        "{}",
        out.stdout
    );
}

// ---------------------------------------------------------------------------------------------
// cadre doctor

#[test]
fn doctor_reports_credentials_by_variable_trust_sandbox_and_settings() {
    let f = Fixture::new();
    write(
        &f.home.join("settings.json"),
        r#"{"subagents": {"maxAgentDepth": 0, "frobnicate": true}}"#,
    );
    write(&f.project.join(".cadre/settings.json"), "{}");
    let mut cmd = f.command(&["doctor"]);
    cmd.env("OPENAI_API_KEY", "sk-very-secret");
    let out = crate::harness::Running::spawn(cmd, None).wait(crate::harness::HANG_GUARD);
    // The settings error makes doctor exit 1.
    assert_eq!(out.code, Some(1), "{out:#?}");
    let text = &out.stdout;
    assert!(text.contains(&f.home.display().to_string()), "{text}");
    assert!(
        text.contains(&f.models_path().display().to_string()),
        "the models.json in use:\n{text}"
    );
    // Credentials are named by variable; no key is ever printed.
    assert!(text.contains("$ANTHROPIC_API_KEY is not set"), "{text}");
    assert!(text.contains("$OPENAI_API_KEY is set"), "{text}");
    assert!(!text.contains("sk-very-secret"), "{text}");
    assert!(!text.contains("test-key"), "{text}");
    assert!(text.contains("fake (models.json"), "{text}");
    // Trust, and the skipped project settings.
    assert!(text.contains("not trusted"), "{text}");
    assert!(
        text.contains(".cadre/settings.json (not read: the project is not trusted)"),
        "{text}"
    );
    // The sandbox line says what happens to read-only roles' bash either way.
    // It agrees with the kernel probe that decides it for a run.
    let sandbox = text
        .lines()
        .find(|l| l.contains("Landlock ") && l.contains("read-only roles' bash"))
        .unwrap_or_else(|| panic!("no sandbox line:\n{text}"));
    match cadre_tools::sandbox::landlock_status() {
        cadre_tools::sandbox::SandboxStatus::Enforced { abi } => assert!(
            sandbox.contains(&format!(
                "Landlock ABI {abi}: read-only roles' bash runs sandboxed"
            )),
            "{sandbox}"
        ),
        cadre_tools::sandbox::SandboxStatus::Unavailable { reason } => assert!(
            sandbox.contains(&format!("Landlock unavailable ({reason})"))
                && sandbox.contains("read-only roles' bash is refused"),
            "{sandbox}"
        ),
    }
    // Settings problems are marked.
    assert!(
        text.lines()
            .any(|l| l.contains("error:") && l.contains("maxAgentDepth")),
        "{text}"
    );
    assert!(text.contains("Tasks"), "{text}");
    let summary = text.lines().last().unwrap();
    assert!(summary.contains("error"), "{summary}");

    // Trusted: the project settings are read and doctor says so.
    f.run(&["trust"]).assert_success();
    let out = f.run(&["doctor"]);
    assert_eq!(out.code, Some(1), "{out:#?}");
    assert!(
        out.stdout
            .contains(&format!("project {}: trusted", f.project.display())),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(".cadre/settings.json (read)"),
        "{}",
        out.stdout
    );
}

#[test]
fn doctor_counts_running_and_orphaned_tasks_without_changing_them() {
    let f = Fixture::new();
    create(&f, running_here(record(ID_A, "live", &f.project)));
    create(&f, orphaned(record(ID_C, "dead", &f.project)));
    let out = f.run(&["doctor"]);
    out.assert_success();
    assert!(
        out.stdout.contains("2 tasks in this project"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("1 running"), "{}", out.stdout);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.contains("warning:") && l.contains("1 task left running")),
        "{}",
        out.stdout
    );
    assert_eq!(
        load(&f, ID_C).status,
        TaskStatus::Running,
        "doctor only reports"
    );
}

#[test]
fn doctor_warns_of_running_tasks_without_a_live_marker() {
    let f = Fixture::new();
    create(&f, running_here(record(ID_A, "marked", &f.project)));
    // Any start scans once and stamps the tasks directory; then a record without a marker (as a
    // cadre without markers writes it) is not seen by recovery, which doctor says.
    f.run(&["tasks"]).assert_success();
    let unmarked = running_here(record(ID_C, "unmarked", &f.project));
    let path = f.home.join("tasks").join(ROOT).join(ID_C).join("task.json");
    write(&path, &serde_json::to_string(&unmarked).unwrap());
    let out = f.run(&["doctor"]);
    out.assert_success();
    let warning = out
        .stdout
        .lines()
        .find(|l| l.contains("without a live marker"))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(warning.contains("1 task running"), "{warning}");
    assert!(warning.contains(".scanned-v1"), "{warning}");
}

// ---------------------------------------------------------------------------------------------
// cadre tasks

#[test]
fn tasks_lists_this_projects_tasks_and_recovers_orphans_first() {
    let f = Fixture::new();
    let out = f.run(&["tasks"]);
    out.assert_success();
    assert!(out.stdout.starts_with("No tasks in"), "{}", out.stdout);

    let mut alpha = record(ID_A, "alpha", &f.project.join("src"));
    alpha.created_at = timestamp(SystemTime::now() - Duration::from_secs(180));
    create(&f, alpha);
    create(&f, orphaned(record(ID_B, "beta", &f.project)));
    create(&f, record(ID_C, "gamma", Path::new("/somewhere/else")));

    let out = f.run(&["tasks"]);
    out.assert_success();
    let text = &out.stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("ID "), "{text}");
    assert_eq!(
        lines.len(),
        3,
        "header + two tasks of this project:\n{text}"
    );
    // Newest first; ids just long enough to tell the two apart, so they work as targets.
    assert!(lines[1].starts_with("0192aaaa-c "), "{text}");
    assert!(lines[2].starts_with("0192aaaa-b "), "{text}");
    let beta = lines[1];
    assert!(beta.contains("failed/orphaned"), "{beta}");
    assert!(
        !text.contains("running"),
        "no dead task shows running:\n{text}"
    );
    let alpha = lines[2];
    for cell in [
        "alpha",
        "Explore",
        "completed",
        "3m ago",
        "12.3k",
        "$0.01",
        "alpha found it",
    ] {
        assert!(alpha.contains(cell), "{cell} missing: {alpha}");
    }
    assert!(!text.contains("gamma"), "{text}");
    assert!(out.stderr.contains("orphaned"), "{}", out.stderr);

    // The record on disk was updated (O13), not just the listing.
    let beta = load(&f, ID_B);
    assert_eq!(beta.status, TaskStatus::Failed);
    assert_eq!(beta.error.as_deref(), Some("orphaned"));
    assert_eq!(beta.phase, TaskPhase::Terminal);

    let out = f.run(&["tasks", "--all"]);
    out.assert_success();
    assert!(out.stdout.contains("gamma"), "{}", out.stdout);
    assert!(out.stdout.contains("/somewhere/else"), "{}", out.stdout);
    assert!(
        out.stdout.lines().any(|l| l.starts_with("0193cccc ")),
        "{}",
        out.stdout
    );
}

#[test]
fn tasks_reports_an_unreadable_record_and_lists_the_rest() {
    let f = Fixture::new();
    create(&f, record(ID_A, "alpha", &f.project));
    let bad = f.home.join("tasks").join(ROOT).join("0199ffff-bad");
    write(&bad.join("task.json"), "{ not json");
    let out = f.run(&["tasks"]);
    out.assert_success();
    assert!(out.stdout.contains("alpha"), "{}", out.stdout);
    assert!(out.stderr.contains("cadre: warning:"), "{}", out.stderr);
    assert!(out.stderr.contains("0199ffff-bad"), "{}", out.stderr);
}

/// The NAME cell of each listed task, top down.
fn listed_names(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(1).unwrap_or_default().to_string())
        .collect()
}

#[test]
fn tasks_shows_the_newest_page_filtering_before_the_limit() {
    let f = Fixture::new();
    // Thirty tasks made in order, every sixth elsewhere: p0 … p28 here, e5 … e29 elsewhere.
    for i in 0..30 {
        let (name, cwd) = if i % 6 == 5 {
            (format!("e{i}"), PathBuf::from("/somewhere/else"))
        } else {
            (format!("p{i}"), f.project.clone())
        };
        let mut r = record(&new_task_id(), &name, &cwd);
        r.root_session_id = ROOT.into();
        create(&f, r);
    }
    let here: Vec<String> = (0..30)
        .rev()
        .filter(|i| i % 6 != 5)
        .map(|i| format!("p{i}"))
        .collect();

    let out = f.run(&["tasks"]);
    out.assert_success();
    assert_eq!(listed_names(&out.stdout), here[..20], "{}", out.stdout);
    assert!(
        out.stderr
            .contains("showing the newest 20; `--limit N` shows more"),
        "{}",
        out.stderr
    );

    let out = f.run(&["tasks", "--limit", "3"]);
    out.assert_success();
    assert_eq!(listed_names(&out.stdout), here[..3], "{}", out.stdout);

    let out = f.run(&["tasks", "--limit", "0"]);
    out.assert_success();
    assert_eq!(listed_names(&out.stdout), here, "{}", out.stdout);
    assert!(!out.stderr.contains("showing the newest"), "{}", out.stderr);

    // Exactly a page's worth: no note.
    let out = f.run(&["tasks", "-n", "25"]);
    out.assert_success();
    assert_eq!(listed_names(&out.stdout).len(), 25);
    assert!(!out.stderr.contains("showing the newest"), "{}", out.stderr);

    let out = f.run(&["tasks", "--all", "-n", "2"]);
    out.assert_success();
    assert_eq!(listed_names(&out.stdout), ["e29", "p28"], "{}", out.stdout);

    let out = f.run(&["tasks", "--limit", "x"]);
    assert_ne!(out.code, Some(0), "{out:#?}");
}

#[test]
fn tasks_lists_tasks_older_versions_wrote_beside_indexed_ones() {
    let f = Fixture::new();
    // Written as a version without the task index left them: a directory and a record, no index.
    let old_root = "0191root-0000-7000-8000-000000000000";
    let old = |name: &str| {
        let mut r = record(&new_task_id(), name, &f.project);
        r.root_session_id = old_root.into();
        let dir = f.home.join("tasks").join(old_root).join(&r.id);
        std::fs::create_dir_all(&dir).expect("mkdir");
        write(
            &dir.join("task.json"),
            &serde_json::to_string_pretty(&r).expect("json"),
        );
        r
    };
    old("old1");
    old("old2");
    // This version adds tasks: one continuing the old root session, one under a new root.
    let mut r = record(&new_task_id(), "new-in-old", &f.project);
    r.root_session_id = old_root.into();
    create(&f, r);
    create(&f, record(&new_task_id(), "new", &f.project));
    let index = f.home.join("tasks").join(".index-v1");
    assert!(index.exists(), "this version indexes the tasks it creates");

    let all = ["new", "new-in-old", "old2", "old1"];
    let out = f.run(&["tasks"]);
    out.assert_success();
    assert_eq!(listed_names(&out.stdout), all, "{}", out.stdout);
    // The listing added the old root's tasks to the index; the next one reads them from it.
    let text = std::fs::read_to_string(&index).expect("index");
    assert!(text.contains(&format!("+{old_root}\n")), "{text}");
    let out = f.run(&["tasks"]);
    out.assert_success();
    assert_eq!(listed_names(&out.stdout), all, "{}", out.stdout);

    // An older version adding a task to a root the index already knows is not in the index, so
    // a plain listing misses it; `--rescan` finds it.
    old("late");
    let out = f.run(&["tasks"]);
    assert!(!listed_names(&out.stdout).contains(&"late".to_string()));
    let out = f.run(&["tasks", "--rescan"]);
    out.assert_success();
    assert!(listed_names(&out.stdout).contains(&"late".to_string()));
    // ... and indexes it.
    let out = f.run(&["tasks"]);
    assert_eq!(listed_names(&out.stdout).len(), 5, "{}", out.stdout);
}

// ---------------------------------------------------------------------------------------------
// cadre task show | output | stop

#[test]
fn task_show_and_output_by_prefix_and_name() {
    let f = Fixture::new();
    create(&f, record(ID_A, "alpha", &f.project));
    create(&f, record(ID_B, "beta", &f.project));
    store(&f)
        .write_output(ROOT, ID_A, "# Result\nConversion is in src/lib.rs.\n")
        .unwrap();

    let out = f.run(&["task", "show", "alpha"]);
    out.assert_success();
    for want in [
        &format!("task:         {ID_A}"),
        "name:         alpha",
        "agent:        Explore",
        "status:       completed",
        "model:        fake/m1",
        "Find where euros are converted.",
    ] {
        assert!(out.stdout.contains(want), "missing {want}:\n{}", out.stdout);
    }

    // A unique prefix (longer than the shared part) picks one task; --json is the raw record.
    let out = f.run(&["task", "show", "--json", "0192aaaa-c"]);
    out.assert_success();
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["id"], ID_B);
    assert_eq!(json["name"], "beta");
    let out = f.run(&["task", "show", ID_A]);
    out.assert_success();
    assert!(out.stdout.contains("name:         alpha"), "{}", out.stdout);

    let out = f.run(&["task", "output", "0192aaaa-b"]);
    out.assert_success();
    assert_eq!(out.stdout, "# Result\nConversion is in src/lib.rs.\n");
    let out = f.run(&["task", "output", "beta"]);
    out.assert_success();
    assert!(out.stdout.is_empty());
    assert!(out.stderr.contains("has no output"), "{}", out.stderr);
}

#[test]
fn an_ambiguous_or_unknown_target_lists_candidates_and_picks_none() {
    let f = Fixture::new();
    create(&f, record(ID_A, "alpha", &f.project));
    create(&f, record(ID_B, "beta", &f.project));
    let out = f.run(&["task", "show", "0192aaaa"]);
    let err = assert_error(&out);
    assert!(err.contains("ambiguous"), "{err}");
    // Each candidate with the id prefix that names it alone.
    assert!(
        err.contains("0192aaaa-b ") && err.contains("0192aaaa-c "),
        "{err}"
    );
    assert!(err.contains("alpha") && err.contains("beta"), "{err}");

    let out = f.run(&["task", "stop", "nope"]);
    let err = assert_error(&out);
    assert!(err.contains("no task matches `nope`"), "{err}");
    assert!(err.contains("alpha"), "recent tasks are listed: {err}");
}

#[test]
fn task_stop_asks_a_live_owner_and_stops_a_dead_owners_task() {
    let f = Fixture::new();
    create(&f, running_here(record(ID_A, "live", &f.project)));
    create(&f, orphaned(record(ID_B, "dead", &f.project)));
    create(&f, record(ID_C, "done", &f.project));

    // Live owner: a stop request it polls for; the record is its to change.
    let out = f.run(&["task", "stop", "live"]);
    out.assert_success();
    assert!(out.stdout.contains("stop requested"), "{}", out.stdout);
    let request = store(&f).stop_request_path(ROOT, ID_A).unwrap();
    assert!(
        request.is_file(),
        "no stop request at {}",
        request.display()
    );
    assert_eq!(load(&f, ID_A).status, TaskStatus::Running);

    // Dead owner, by unique prefix: stopped here, as a manual stop.
    let out = f.run(&["task", "stop", "0192aaaa-c"]);
    out.assert_success();
    assert!(out.stdout.contains("stopped"), "{}", out.stdout);
    let dead = load(&f, ID_B);
    assert_eq!(dead.status, TaskStatus::Stopped);
    assert_eq!(dead.termination, Some(TerminationKind::ManualStop));
    assert_eq!(dead.phase, TaskPhase::Terminal);
    assert!(dead.ended_at.is_some());

    // A finished task: nothing to do, said plainly.
    let out = f.run(&["task", "stop", "done"]);
    out.assert_success();
    assert!(out.stdout.contains("already ended"), "{}", out.stdout);
    assert_eq!(load(&f, ID_C).status, TaskStatus::Completed);
}

// ---------------------------------------------------------------------------------------------
// cadre task apply

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=cadre test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A kept worktree of the fixture's project (made a repository) with `src/lib.rs` changed.
fn kept_worktree(f: &Fixture, task_id: &str) -> cadre_protocol::WorktreeInfo {
    git(&f.project, &["init", "-q"]);
    git(&f.project, &["add", "-A"]);
    git(&f.project, &["commit", "-q", "-m", "start"]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let wt = Worktree::create(&f.project, task_id).await.unwrap();
        std::fs::write(
            wt.path().join("src/lib.rs"),
            "pub fn to_eur(cents: i64) -> i64 {\n    cents * 93 / 100\n}\n",
        )
        .unwrap();
        std::fs::write(wt.path().join("CHANGES.md"), "rate updated\n").unwrap();
        match wt.finish().await.unwrap() {
            WorktreeOutcome::Kept(info) => info,
            WorktreeOutcome::Removed => panic!("a changed worktree must be kept"),
        }
    })
}

#[test]
fn task_apply_applies_a_kept_worktree_and_refuses_a_second_time() {
    let f = Fixture::new();
    let info = kept_worktree(&f, ID_A);
    assert!(info.kept);
    let mut r = record(ID_A, "rate", &f.project);
    r.worktree = Some(info.clone());
    create(&f, r);
    create(&f, record(ID_B, "plain", &f.project));

    let out = f.run(&["task", "apply", "rate"]);
    out.assert_success();
    assert!(out.stdout.contains("applied"), "{}", out.stdout);
    assert!(out.stdout.contains("src/lib.rs"), "{}", out.stdout);
    assert!(out.stdout.contains("CHANGES.md"), "{}", out.stdout);
    assert!(out.stdout.contains(&info.branch), "{}", out.stdout);
    let lib = std::fs::read_to_string(f.project.join("src/lib.rs")).unwrap();
    assert!(lib.contains("cents * 93 / 100"), "{lib}");
    assert_eq!(
        std::fs::read_to_string(f.project.join("CHANGES.md")).unwrap(),
        "rate updated\n"
    );

    // Applying again conflicts with what is now there: a clear error, nothing changed.
    let out = f.run(&["task", "apply", "rate"]);
    let err = assert_error(&out);
    assert!(err.contains("do not apply cleanly"), "{err}");
    let again = std::fs::read_to_string(f.project.join("src/lib.rs")).unwrap();
    assert_eq!(again, lib);

    // A task without a worktree has nothing to apply.
    let out = f.run(&["task", "apply", "plain"]);
    let err = assert_error(&out);
    assert!(err.contains("did not run in a worktree"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// cadre trust

#[test]
fn trust_records_lists_and_revokes() {
    let f = Fixture::new();
    let out = f.run(&["trust", "--list"]);
    out.assert_success();
    assert!(
        out.stdout.starts_with("No trusted projects"),
        "{}",
        out.stdout
    );

    let out = f.run(&["trust"]);
    out.assert_success();
    assert!(
        out.stdout.contains(&f.project.display().to_string()),
        "{}",
        out.stdout
    );
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(f.home.join("trust.json")).unwrap()).unwrap();
    assert_eq!(doc["trusted"][0], f.project.to_str().unwrap());

    let other: PathBuf = f.user_home.join("other");
    std::fs::create_dir_all(&other).unwrap();
    f.run(&["trust", other.to_str().unwrap()]).assert_success();
    let out = f.run(&["trust", "--list"]);
    out.assert_success();
    assert_eq!(out.stdout.lines().count(), 2, "{}", out.stdout);

    let out = f.run(&["trust", "--revoke", "."]);
    out.assert_success();
    assert!(out.stdout.contains("no longer trusted"), "{}", out.stdout);
    let out = f.run(&["trust", "--list"]);
    assert!(
        !out.stdout.contains(&format!("{}\n", f.project.display())),
        "{}",
        out.stdout
    );

    let out = f.run(&["trust", "--revoke", "."]);
    let err = out.assert_one_line_error();
    assert!(err.contains("is not in the trust list"), "{err}");

    let out = f.run(&["trust", "does/not/exist"]);
    out.assert_one_line_error();
    let out = f.run(&["trust", "--list", "--revoke", "."]);
    out.assert_one_line_error();
}

#[test]
fn doctor_names_pis_models_file_when_cadre_has_none() {
    let f = Fixture::new();
    let pi = f.user_home.join(".pi/agent/models.json");
    write(&pi, &f.models_json().to_string());
    std::fs::remove_file(f.models_path()).unwrap();
    let out = f.run(&["doctor"]);
    out.assert_success();
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("models.json:"))
        .unwrap_or_else(|| panic!("no models.json line:\n{}", out.stdout));
    assert!(line.contains(&pi.display().to_string()), "{line}");
    assert!(line.contains("Pi's, read-only"), "{line}");
}

#[test]
fn a_malformed_trust_file_is_reported_and_trusts_nothing() {
    let f = Fixture::new();
    write(&f.home.join("trust.json"), "{\"trusted\": \"oops\"}");
    write(
        &f.project.join(".cadre/agents/helper.md"),
        &role("helper", "project helper"),
    );

    let out = f.run(&["agents"]);
    out.assert_success();
    assert!(
        !out.stdout.lines().any(|l| l.starts_with("helper ")),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("trust.json"), "{}", out.stdout);

    let out = f.run(&["doctor"]);
    assert_eq!(out.code, Some(1), "{out:#?}");
    assert!(
        out.stdout
            .lines()
            .any(|l| l.contains("error:") && l.contains("trust.json")),
        "{}",
        out.stdout
    );

    // Recording trust never overwrites a file it cannot read.
    let err = f.run(&["trust"]).assert_one_line_error().to_string();
    assert!(err.contains("trust.json"), "{err}");
    assert_eq!(
        std::fs::read_to_string(f.home.join("trust.json")).unwrap(),
        "{\"trusted\": \"oops\"}"
    );
}
