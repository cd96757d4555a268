//! Worktree isolation against real git repositories (SPEC O11).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cadre_core::orchestrator::worktree::{Worktree, WorktreeError, WorktreeOutcome, apply};

const GUARD: Duration = Duration::from_secs(60);

async fn guarded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, f).await.expect("hang guard")
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository with a committed `a.txt`, `gone.txt`, `sub/b.txt`, `bin.dat` and a `.gitignore`
/// for `*.log`.
fn repo() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("repo");
    fs::create_dir_all(root.join("sub")).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["config", "user.name", "Test"]);
    git(&root, &["config", "user.email", "test@example.invalid"]);
    git(&root, &["config", "commit.gpgsign", "false"]);
    fs::write(root.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    fs::write(root.join("gone.txt"), "to be deleted\n").unwrap();
    fs::write(root.join("sub/b.txt"), "bee\n").unwrap();
    fs::write(root.join("bin.dat"), [0u8, 1, 2, 255, 0, 7]).unwrap();
    fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "initial"]);
    (tmp, root)
}

/// Dirty the parent: a modified, a deleted and a staged-new tracked file, an untracked text and
/// binary file, and an ignored one.
fn dirty(root: &Path) {
    fs::write(root.join("a.txt"), "one\nTWO (parent)\nthree\n").unwrap();
    fs::remove_file(root.join("gone.txt")).unwrap();
    fs::write(root.join("staged.txt"), "staged\n").unwrap();
    git(root, &["add", "staged.txt"]);
    fs::write(root.join("sub/untracked.txt"), "untracked\n").unwrap();
    fs::write(root.join("sub/blob.bin"), [0u8, 159, 146, 150, 0]).unwrap();
    fs::write(root.join("debug.log"), "ignored\n").unwrap();
}

fn status(root: &Path) -> String {
    git(root, &["status", "--porcelain", "--untracked-files=all"])
}

fn cadre_branches(root: &Path) -> String {
    git(root, &["branch", "--list", "cadre-*"])
}

fn task_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

#[tokio::test]
async fn the_child_sees_the_parents_uncommitted_state_at_the_same_relative_cwd() {
    let (_tmp, root) = repo();
    dirty(&root);
    let before = status(&root);
    let wt = guarded(Worktree::create(&root.join("sub"), &task_id()))
        .await
        .unwrap();
    let path = wt.path().to_path_buf();
    assert_eq!(wt.cwd(), path.join("sub"));
    assert!(wt.branch().starts_with("cadre-") && wt.branch().len() == 14);
    assert!(path.starts_with(root.join(".git")));

    assert_eq!(
        fs::read_to_string(path.join("a.txt")).unwrap(),
        "one\nTWO (parent)\nthree\n"
    );
    assert!(!path.join("gone.txt").exists());
    assert_eq!(
        fs::read_to_string(path.join("staged.txt")).unwrap(),
        "staged\n"
    );
    assert_eq!(
        fs::read_to_string(path.join("sub/untracked.txt")).unwrap(),
        "untracked\n"
    );
    assert_eq!(
        fs::read(path.join("sub/blob.bin")).unwrap(),
        [0u8, 159, 146, 150, 0]
    );
    assert!(
        !path.join("debug.log").exists(),
        "ignored files stay behind"
    );
    assert_eq!(
        git(&path, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        wt.branch()
    );

    // The main tree, its index and its untracked list are exactly as before.
    assert_eq!(status(&root), before);
    let info = wt.info();
    assert!(!info.kept);
    assert!(info.baseline_tree.is_some());
    assert_eq!(info.base, git(&root, &["rev-parse", "HEAD"]).trim());
    assert_eq!(guarded(wt.diff_stat()).await.unwrap(), "");
    assert_eq!(
        guarded(wt.finish()).await.unwrap(),
        WorktreeOutcome::Removed
    );
}

#[tokio::test]
async fn a_child_that_changes_nothing_leaves_no_trace() {
    let (_tmp, root) = repo();
    dirty(&root);
    let before = status(&root);
    let wt = guarded(Worktree::create(&root, &task_id())).await.unwrap();
    let path = wt.path().to_path_buf();
    // Ignored output (a build) is not a change.
    fs::write(path.join("build.log"), "noise\n").unwrap();
    assert_eq!(
        guarded(wt.finish()).await.unwrap(),
        WorktreeOutcome::Removed
    );
    assert!(!path.exists());
    assert_eq!(cadre_branches(&root), "");
    assert_eq!(git(&root, &["for-each-ref", "refs/cadre"]), "");
    assert!(!git(&root, &["worktree", "list"]).contains("cadre-worktrees"));
    assert_eq!(status(&root), before);
}

#[tokio::test]
async fn changes_are_kept_reported_and_applied_to_the_main_tree() {
    let (_tmp, root) = repo();
    dirty(&root);
    let wt = guarded(Worktree::create(&root, &task_id())).await.unwrap();
    let path = wt.path().to_path_buf();
    fs::write(
        path.join("a.txt"),
        "one\nTWO (parent)\nthree\nfour (child)\n",
    )
    .unwrap();
    fs::write(path.join("sub/new.txt"), "new from child\n").unwrap();
    let WorktreeOutcome::Kept(info) = guarded(wt.finish()).await.unwrap() else {
        panic!("changes must keep the worktree");
    };
    assert!(info.kept);
    let stat = info.diff_stat.clone().unwrap();
    assert!(stat.contains("a.txt"), "{stat}");
    assert!(stat.contains("sub/new.txt"), "{stat}");
    assert!(
        !stat.contains("staged.txt"),
        "the parent's changes are not the child's: {stat}"
    );
    assert!(path.is_dir());
    assert!(cadre_branches(&root).contains(&info.branch));

    // The record round-trips through JSON before a later `cadre task apply`.
    let info: cadre_protocol::WorktreeInfo =
        serde_json::from_value(serde_json::to_value(&info).unwrap()).unwrap();
    let applied = guarded(apply(&root.join("sub"), &info)).await.unwrap();
    assert!(
        applied.contains("a.txt") && applied.contains("sub/new.txt"),
        "{applied}"
    );
    assert_eq!(
        fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\nTWO (parent)\nthree\nfour (child)\n"
    );
    assert_eq!(
        fs::read_to_string(root.join("sub/new.txt")).unwrap(),
        "new from child\n"
    );
    // The parent's own uncommitted work is untouched.
    assert_eq!(
        fs::read_to_string(root.join("sub/untracked.txt")).unwrap(),
        "untracked\n"
    );
    assert!(git(&root, &["diff", "--cached", "--name-only"]).contains("staged.txt"));
}

#[tokio::test]
async fn committed_deleted_and_binary_changes_count_too() {
    let (_tmp, root) = repo();
    let wt = guarded(Worktree::create(&root, &task_id())).await.unwrap();
    let path = wt.path().to_path_buf();
    fs::remove_file(path.join("sub/b.txt")).unwrap();
    fs::write(path.join("bin.dat"), [9u8, 0, 9]).unwrap();
    git(&path, &["add", "-A"]);
    git(&path, &["commit", "-q", "-m", "child commit"]);
    let WorktreeOutcome::Kept(info) = guarded(wt.finish()).await.unwrap() else {
        panic!("a committed change is still a change");
    };
    let stat = info.diff_stat.clone().unwrap();
    assert!(
        stat.contains("sub/b.txt") && stat.contains("bin.dat"),
        "{stat}"
    );
    guarded(apply(&root, &info)).await.unwrap();
    assert!(!root.join("sub/b.txt").exists());
    assert_eq!(fs::read(root.join("bin.dat")).unwrap(), [9u8, 0, 9]);
}

#[tokio::test]
async fn a_conflicting_main_tree_is_left_unchanged() {
    let (_tmp, root) = repo();
    let wt = guarded(Worktree::create(&root, &task_id())).await.unwrap();
    let path = wt.path().to_path_buf();
    fs::write(path.join("a.txt"), "one\ntwo (child)\nthree\n").unwrap();
    fs::write(path.join("added.txt"), "child file\n").unwrap();
    let WorktreeOutcome::Kept(info) = guarded(wt.finish()).await.unwrap() else {
        panic!("expected kept");
    };
    // Meanwhile the parent rewrote the same line.
    fs::write(root.join("a.txt"), "one\ntwo (parent)\nthree\n").unwrap();
    let before = status(&root);
    let err = guarded(apply(&root, &info)).await.unwrap_err();
    assert!(matches!(err, WorktreeError::Conflict { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("nothing was changed") && message.contains("a.txt"),
        "{message}"
    );
    assert_eq!(
        fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\ntwo (parent)\nthree\n"
    );
    assert!(!root.join("added.txt").exists(), "no partial apply");
    assert_eq!(status(&root), before);
}

#[tokio::test]
async fn a_kept_worktree_can_be_reopened_and_finished_again() {
    let (_tmp, root) = repo();
    let wt = guarded(Worktree::create(&root, &task_id())).await.unwrap();
    fs::write(wt.path().join("x.txt"), "x\n").unwrap();
    let WorktreeOutcome::Kept(info) = guarded(wt.finish()).await.unwrap() else {
        panic!("expected kept");
    };
    let again = guarded(Worktree::open(&info)).await.unwrap();
    assert_eq!(again.repo_root(), root);
    // The continuation reverts its change: nothing is left, so it is removed.
    fs::remove_file(again.path().join("x.txt")).unwrap();
    let path = again.path().to_path_buf();
    assert_eq!(
        guarded(again.finish()).await.unwrap(),
        WorktreeOutcome::Removed
    );
    assert!(!path.exists());
    assert_eq!(cadre_branches(&root), "");
    assert!(matches!(
        guarded(Worktree::open(&info)).await,
        Err(WorktreeError::Missing { .. })
    ));
    assert!(matches!(
        guarded(apply(&root, &info)).await,
        Err(WorktreeError::Missing { .. })
    ));
}

#[tokio::test]
async fn parallel_children_get_separate_worktrees() {
    let (_tmp, root) = repo();
    let (id_a, id_b) = (task_id(), task_id());
    let (a, b) = guarded(async {
        tokio::join!(
            Worktree::create(&root, &id_a),
            Worktree::create(&root, &id_b)
        )
    })
    .await;
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_ne!(a.path(), b.path());
    assert_ne!(a.branch(), b.branch());
    guarded(a.finish()).await.unwrap();
    guarded(b.finish()).await.unwrap();
    assert_eq!(cadre_branches(&root), "");
}

#[tokio::test]
async fn outside_a_repository_the_error_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let err = guarded(Worktree::create(tmp.path(), &task_id()))
        .await
        .unwrap_err();
    assert!(matches!(err, WorktreeError::NotARepo { .. }), "{err}");
    assert!(
        err.to_string().contains("not inside a git repository"),
        "{err}"
    );
    let missing = tmp.path().join("missing");
    assert!(matches!(
        guarded(Worktree::create(&missing, &task_id())).await,
        Err(WorktreeError::NotARepo { .. })
    ));
    let info = cadre_protocol::WorktreeInfo::default();
    assert!(matches!(
        guarded(apply(tmp.path(), &info)).await,
        Err(WorktreeError::NotARepo { .. })
    ));
}

#[tokio::test]
async fn a_repository_without_commits_is_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    git(tmp.path(), &["init", "-q"]);
    let err = guarded(Worktree::create(tmp.path(), &task_id()))
        .await
        .unwrap_err();
    assert!(matches!(err, WorktreeError::NoCommits { .. }), "{err}");
}

#[tokio::test]
async fn an_existing_branch_of_the_same_name_is_never_reused_or_deleted() {
    let (_tmp, root) = repo();
    let id = task_id();
    let branch = format!(
        "cadre-{}",
        cadre_core::orchestrator::worktree::short_id(&id)
    );
    git(&root, &["branch", &branch]);
    let err = guarded(Worktree::create(&root, &id)).await.unwrap_err();
    assert!(matches!(err, WorktreeError::BranchExists { .. }), "{err}");
    assert!(cadre_branches(&root).contains(&branch));
    assert!(matches!(
        guarded(Worktree::create(&root, "--")).await,
        Err(WorktreeError::InvalidTaskId { .. })
    ));
}

#[tokio::test]
async fn a_cwd_git_does_not_track_still_exists_in_the_worktree() {
    let (_tmp, root) = repo();
    let cwd = root.join("out/deep");
    fs::create_dir_all(&cwd).unwrap();
    fs::write(cwd.join("x.log"), "ignored\n").unwrap();
    let wt = guarded(Worktree::create(&cwd, &task_id())).await.unwrap();
    assert_eq!(wt.cwd(), wt.path().join("out/deep"));
    assert!(wt.cwd().is_dir());
    // An empty directory is not a change.
    assert_eq!(
        guarded(wt.finish()).await.unwrap(),
        WorktreeOutcome::Removed
    );
}

#[tokio::test]
async fn an_untracked_nested_repository_does_not_break_creation() {
    let (_tmp, root) = repo();
    let nested = root.join("vendor/lib");
    fs::create_dir_all(&nested).unwrap();
    git(&nested, &["init", "-q"]);
    git(&nested, &["config", "user.name", "Test"]);
    git(&nested, &["config", "user.email", "test@example.invalid"]);
    git(&nested, &["config", "commit.gpgsign", "false"]);
    fs::write(nested.join("n.txt"), "n\n").unwrap();
    git(&nested, &["add", "-A"]);
    git(&nested, &["commit", "-q", "-m", "n"]);
    let wt = guarded(Worktree::create(&root, &task_id())).await.unwrap();
    assert_eq!(
        guarded(wt.finish()).await.unwrap(),
        WorktreeOutcome::Removed
    );
}

/// Sets `path`'s modification time.
fn set_mtime(path: &Path, time: std::time::SystemTime) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(time)
        .unwrap();
}

/// Git trusts a file whose size and mtime match its index entry unless the index itself is not
/// older than the file ("racily clean", then it compares contents). A child that rewrites a file
/// to the same size within the checkout's timestamp granularity leaves size and mtime as they
/// were, so only that rule catches the change; it must hold for the snapshot's copy of the index
/// too, however late the copy is made.
#[tokio::test]
async fn a_same_size_change_within_the_checkouts_timestamp_is_still_a_change() {
    let (_tmp, root) = repo();
    // ctime is beyond a test's control; git compares it only when it trusts it.
    git(&root, &["config", "core.trustctime", "false"]);
    let wt = guarded(Worktree::create(&root, &task_id())).await.unwrap();
    let file = wt.path().join("a.txt");
    let checked_out = fs::metadata(&file).unwrap().modified().unwrap();
    let index = git(
        wt.path(),
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    );
    // The index written in the same instant as the file, as a fast checkout does.
    set_mtime(Path::new(index.trim()), checked_out);
    // The snapshot happens in a later second than the checkout.
    let second =
        |t: std::time::SystemTime| t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let deadline = std::time::Instant::now() + GUARD;
    while second(std::time::SystemTime::now()) <= second(checked_out) {
        assert!(
            std::time::Instant::now() < deadline,
            "the clock stands still"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = fs::read_to_string(&file).unwrap();
    let after = before.replace("three", "THREE");
    assert_eq!(before.len(), after.len());
    fs::write(&file, &after).unwrap();
    set_mtime(&file, checked_out);

    let WorktreeOutcome::Kept(info) = guarded(wt.finish()).await.unwrap() else {
        panic!("the rewritten a.txt is a change");
    };
    let stat = info.diff_stat.clone().unwrap();
    assert!(stat.contains("a.txt"), "{stat}");
    guarded(apply(&root, &info)).await.unwrap();
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), after);
}

/// cadre's own git runs outside every sandbox: the programs a repository's configuration
/// names — fsmonitor, a clean filter on `git add`, hooks — must not run, whether the repository
/// arrived with them or a writing child put them there.
#[tokio::test]
async fn cadre_s_own_git_runs_no_program_the_repository_configures() {
    let (tmp, root) = repo();
    // Dirty first: the test's own git would run the planted programs.
    dirty(&root);
    let marker = tmp.path().join("payload-ran");
    let payload = format!("sh -c 'echo ran >> {}; cat'", marker.display());
    git(&root, &["config", "core.fsmonitor", &payload]);
    git(&root, &["config", "filter.Evil.clean", &payload]);
    git(&root, &["config", "filter.Evil.process", &payload]);
    fs::write(root.join(".git/info/attributes"), "* filter=Evil\n").unwrap();
    let hooks = root.join(".git/hooks");
    fs::create_dir_all(&hooks).unwrap();
    for hook in [
        "post-checkout",
        "post-index-change",
        "reference-transaction",
    ] {
        let path = hooks.join(hook);
        fs::write(&path, format!("#!/bin/sh\n{payload}\n")).unwrap();
        Command::new("chmod")
            .arg("755")
            .arg(&path)
            .status()
            .unwrap();
    }
    let wt = guarded(Worktree::create(&root, &task_id())).await.unwrap();
    fs::write(wt.path().join("a.txt"), "changed by the child\n").unwrap();
    let _ = guarded(wt.finish()).await.unwrap();
    assert!(
        !marker.exists(),
        "a configured program ran: {:?}",
        fs::read_to_string(&marker)
    );
    // Control: the user's own git in the same repository runs it.
    let _ = Command::new("git")
        .arg("-C")
        .arg(&root)
        .args(["status"])
        .output()
        .unwrap();
    assert!(marker.exists(), "the control did not run the payload");
}
