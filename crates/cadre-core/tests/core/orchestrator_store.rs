//! The task store survives `kill -9` at any point (SPEC Z1, O13): a writer process is killed while
//! it rewrites records and outputs as fast as it can; afterwards every `task.json` parses, every
//! `output.md` is a whole version, every record that says `running` has its live marker, and
//! recovery leaves no task `running`.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use cadre_core::orchestrator::store::{
    ORPHANED, TaskStore, claim_ownership, new_task_id, pid_is_alive,
};
use cadre_protocol::{TaskPhase, TaskRecord, TaskStatus};

/// Set in the child process: the store directory the writer loop works in.
const WRITER_ENV: &str = "CADRE_TEST_STORE_WRITER_DIR";
/// Set in the child process: the store directory where tasks end and are reopened in a loop.
const REOPENER_ENV: &str = "CADRE_TEST_STORE_REOPENER_DIR";
const ROOT: &str = "root-session";
const TASKS: usize = 8;
/// Every output version ends with this line, so a torn write would show.
const END: &str = "END\n";

/// Not a test of its own: the body of the child process. A no-op unless `WRITER_ENV` is set.
#[test]
fn store_writer_child() {
    let Ok(dir) = std::env::var(WRITER_ENV) else {
        return;
    };
    let store = TaskStore::new(&dir);
    let mut records: Vec<TaskRecord> = (0..TASKS)
        .map(|_| {
            let mut r = TaskRecord {
                id: new_task_id(),
                root_session_id: ROOT.into(),
                agent: "general-purpose".into(),
                phase: TaskPhase::Working,
                ..TaskRecord::default()
            };
            claim_ownership(&mut r);
            store.create(&mut r).unwrap();
            r
        })
        .collect();
    fs::write(Path::new(&dir).join("ready"), b"").unwrap();
    for round in 0u64.. {
        for (i, r) in records.iter_mut().enumerate() {
            // Sizes vary so a torn file would be visible as truncated JSON.
            r.prompt = "p".repeat(((round as usize * 7919 + i * 104_729) % 64) * 1024);
            r.usage.turns = round as u32;
            store.save(r).unwrap();
            let text = format!(
                "round {round}\n{}\n{END}",
                "o".repeat(round as usize % 4096)
            );
            if round % 3 == 0 {
                store.write_output(ROOT, &r.id, &text).unwrap();
            } else {
                store.append_output(ROOT, &r.id, &text).unwrap();
            }
        }
    }
}

#[test]
fn kill_9_mid_write_leaves_every_record_and_output_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "orchestrator_store::store_writer_child",
            "--test-threads=1",
            "--quiet",
        ])
        .env(WRITER_ENV, &dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait (bounded, as a hang guard) until the writer is past setup and well into rewriting.
    let store = TaskStore::new(&dir);
    let mut busy = false;
    for _ in 0..3000 {
        if dir.join("ready").exists()
            && store
                .list_root(ROOT)
                .unwrap()
                .records
                .iter()
                .any(|r| r.usage.turns >= 20)
        {
            busy = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(busy, "the writer never got going");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(!pid_is_alive(pid, None));

    let listing = store.list_all().unwrap();
    assert!(listing.problems.is_empty(), "{:?}", listing.problems);
    assert_eq!(listing.records.len(), TASKS);
    for r in &listing.records {
        assert_eq!(r.status, TaskStatus::Running);
        assert!(store.is_marked_live(ROOT, &r.id), "{} has no marker", r.id);
        assert_eq!(r.owner_pid, Some(pid));
        let out = store.read_output(ROOT, &r.id).unwrap();
        assert!(out.is_empty() || out.ends_with(END), "torn output: {out:?}");
    }

    let recovery = store.recover_orphans(pid_is_alive);
    assert!(recovery.problems.is_empty(), "{:?}", recovery.problems);
    assert_eq!(recovery.recovered.len(), TASKS);
    let after = store.list_all().unwrap();
    assert_eq!(after.records.len(), TASKS);
    for r in &after.records {
        assert_eq!(r.status, TaskStatus::Failed);
        assert_eq!(r.phase, TaskPhase::Terminal);
        assert_eq!(r.error.as_deref(), Some(ORPHANED));
        assert!(r.ended_at.is_some());
    }
    // No temp file of the dead writer is left behind.
    for entry in walk(&dir) {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!name.ends_with(".tmp"), "left over: {}", entry.display());
    }
}

/// Not a test of its own: the body of the child process. A no-op unless `REOPENER_ENV` is set.
/// Each task ends and is reopened (a continuation) over and over, so the kill lands between a
/// marker and a record at some point.
#[test]
fn store_reopener_child() {
    let Ok(dir) = std::env::var(REOPENER_ENV) else {
        return;
    };
    let store = TaskStore::new(&dir);
    let mut records: Vec<TaskRecord> = (0..TASKS)
        .map(|_| {
            let mut r = TaskRecord {
                id: new_task_id(),
                root_session_id: ROOT.into(),
                agent: "general-purpose".into(),
                ..TaskRecord::default()
            };
            claim_ownership(&mut r);
            store.create(&mut r).unwrap();
            r
        })
        .collect();
    for round in 0u64.. {
        for r in records.iter_mut() {
            r.usage.turns = round as u32;
            r.status = if round % 2 == 0 {
                TaskStatus::Completed
            } else {
                TaskStatus::Running
            };
            store.save(r).unwrap();
        }
        if round == 40 {
            fs::write(Path::new(&dir).join("ready"), b"").unwrap();
        }
    }
}

#[test]
fn kill_9_while_tasks_end_and_reopen_leaves_no_running_record_unmarked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tasks");
    fs::create_dir_all(&dir).unwrap();
    let store = TaskStore::new(&dir);
    // The directory is past its one-time scan, so recovery finds running tasks by markers alone.
    store.recover_orphans(pid_is_alive);
    assert!(store.markers_complete());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "orchestrator_store::store_reopener_child",
            "--test-threads=1",
            "--quiet",
        ])
        .env(REOPENER_ENV, &dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut busy = false;
    for _ in 0..3000 {
        if dir.join("ready").exists() {
            busy = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(busy, "the writer never got going");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(!pid_is_alive(pid, None));

    let listing = store.list_all().unwrap();
    assert!(listing.problems.is_empty(), "{:?}", listing.problems);
    assert_eq!(listing.records.len(), TASKS);
    let running: Vec<&TaskRecord> = listing
        .records
        .iter()
        .filter(|r| r.status == TaskStatus::Running)
        .collect();
    for r in &running {
        assert!(store.is_marked_live(ROOT, &r.id), "{} has no marker", r.id);
    }
    let recovery = store.recover_orphans(pid_is_alive);
    assert!(recovery.problems.is_empty(), "{:?}", recovery.problems);
    assert_eq!(recovery.recovered.len(), running.len());
    for r in store.list_all().unwrap().records {
        assert_ne!(r.status, TaskStatus::Running, "{r:?}");
        assert!(
            !store.is_marked_live(ROOT, &r.id),
            "{} keeps a stale marker",
            r.id
        );
    }
}

#[test]
fn a_live_owner_keeps_its_tasks_running() {
    let tmp = tempfile::tempdir().unwrap();
    let store = TaskStore::new(tmp.path());
    let mut r = TaskRecord {
        id: new_task_id(),
        root_session_id: ROOT.into(),
        ..TaskRecord::default()
    };
    claim_ownership(&mut r);
    store.create(&mut r).unwrap();
    assert!(store.recover_orphans(pid_is_alive).recovered.is_empty());
    assert_eq!(store.load(ROOT, &r.id).unwrap().status, TaskStatus::Running);
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
