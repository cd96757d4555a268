//! Worktree isolation (SPEC O11): a child runs in its own `git worktree` that starts out looking
//! exactly like the parent's working tree, and its changes are reported and applied back as a
//! patch.
//!
//! **Where.** `<git-common-dir>/cadre-worktrees/<id8>` — inside the repository's `.git`
//! directory, which git never lists as untracked, so the main tree stays clean without touching
//! `.gitignore`. The branch is `cadre-<id8>` (see [`short_id`]).
//!
//! **Snapshots.** The state of a working tree — tracked files as they are on disk plus untracked,
//! non-ignored files — is captured as a git tree object by `git add -A` + `git write-tree` into a
//! *temporary copy* of the index (`GIT_INDEX_FILE`), so the real index and the user's staging are
//! never touched and no commit (identity, signing, hooks) is needed.
//!
//! **Replay.** The parent's snapshot is diffed against `HEAD` (`git diff-tree --binary`, plumbing,
//! so user diff settings cannot change the format) and applied in the new worktree with `git
//! apply --binary`: one patch carries modified, deleted, staged-new and untracked files, binaries
//! and modes alike. The worktree's own snapshot after the replay is the **baseline**; it is pinned
//! by the ref `refs/cadre/baselines/<id8>` so `git gc` never prunes it while the worktree exists.
//!
//! **Changes.** The child's changes are exactly `baseline → snapshot at the end`: whatever the
//! child edited, created or deleted (ignored files such as build output excluded), whether it
//! committed or not. No changes → the worktree, its branch and the ref are removed; changes → all
//! are kept and reported with a diff stat, and [`apply`] replays the same diff onto the main tree.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use cadre_protocol::WorktreeInfo;

/// The directory under the git common dir that holds cadre's worktrees.
pub const WORKTREES_DIR: &str = "cadre-worktrees";
const BASELINE_REF_PREFIX: &str = "refs/cadre/baselines/";
/// Diff stat width: wide enough that ordinary paths are not elided.
const STAT_WIDTH: &str = "--stat=200,160";

#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error(
        "{} is not inside a git repository; worktree isolation needs one (use isolation \"none\" or run inside a repository)",
        .path.display()
    )]
    NotARepo { path: PathBuf },
    #[error(
        "the repository at {} has no commits yet; worktree isolation starts from HEAD, so commit first",
        .repo.display()
    )]
    NoCommits { repo: PathBuf },
    #[error("{} is not inside the repository at {}", .cwd.display(), .repo.display())]
    OutsideRepo { cwd: PathBuf, repo: PathBuf },
    #[error("a worktree already exists at {}", .path.display())]
    AlreadyExists { path: PathBuf },
    #[error("task id {id:?} has no letters or digits to name a worktree branch with")]
    InvalidTaskId { id: String },
    #[error("a branch named {branch} already exists; cadre will not reuse or delete it")]
    BranchExists { branch: String },
    #[error("the worktree at {} no longer exists", .path.display())]
    Missing { path: PathBuf },
    #[error("the worktree record has no baseline tree, so its changes cannot be computed")]
    NoBaseline,
    #[error("the worktree at {} does not belong to the repository at {}", .worktree.display(), .repo.display())]
    OtherRepo { worktree: PathBuf, repo: PathBuf },
    #[error(
        "the worktree's changes do not apply cleanly to {}; nothing was changed:\n{details}",
        .repo.display()
    )]
    Conflict { repo: PathBuf, details: String },
    #[error("cannot run git: {source}")]
    Spawn {
        #[source]
        source: std::io::Error,
    },
    #[error("git {command} failed: {stderr}")]
    Git { command: String, stderr: String },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What became of a worktree when its task ended.
#[derive(Debug, Clone, PartialEq)]
pub enum WorktreeOutcome {
    /// No changes: the worktree directory, its branch and its baseline ref are gone.
    Removed,
    /// Changes were made: everything is kept. `info.kept` is true and `info.diff_stat` is set.
    Kept(WorktreeInfo),
}

/// A live worktree a child runs in.
#[derive(Debug, Clone)]
pub struct Worktree {
    repo_root: PathBuf,
    path: PathBuf,
    branch: String,
    id8: String,
    base: String,
    baseline: String,
    cwd: PathBuf,
}

/// The 8-character id used in worktree and branch names: the *last* eight hex digits of the task
/// id. Task ids are UUID v7, whose leading digits are a millisecond clock that tasks started
/// within about a minute share; the trailing digits are random, so parallel tasks do not collide.
pub fn short_id(task_id: &str) -> String {
    let hex: Vec<char> = task_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    hex[hex.len().saturating_sub(8)..].iter().collect()
}

/// Held while this process changes a repository's worktree list (`git worktree add`/`remove`):
/// git does not make those safe against each other.
static WORKTREE_ADMIN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl Worktree {
    /// Create the worktree for task `task_id` from the repository containing `cwd`: `git worktree
    /// add -b cadre-<id8>` of `HEAD`, then replay the parent's uncommitted changes (tracked and
    /// untracked) into it. The child's cwd ([`Worktree::cwd`]) keeps `cwd`'s position relative to
    /// the repository root.
    pub async fn create(cwd: &Path, task_id: &str) -> Result<Worktree, WorktreeError> {
        let repo_root = toplevel(cwd).await?;
        let cwd_abs = canonical(cwd)?;
        let relative = cwd_abs
            .strip_prefix(&repo_root)
            .map_err(|_| WorktreeError::OutsideRepo {
                cwd: cwd_abs.clone(),
                repo: repo_root.clone(),
            })?
            .to_path_buf();
        let base =
            match git_text(&repo_root, ["rev-parse", "--verify", "-q", "HEAD^{commit}"]).await {
                Ok(b) if !b.is_empty() => b,
                _ => return Err(WorktreeError::NoCommits { repo: repo_root }),
            };
        let id8 = short_id(task_id);
        if id8.is_empty() {
            return Err(WorktreeError::InvalidTaskId {
                id: task_id.to_string(),
            });
        }
        let path = common_dir(&repo_root).await?.join(WORKTREES_DIR).join(&id8);
        if path.exists() {
            return Err(WorktreeError::AlreadyExists { path });
        }
        let branch = format!("cadre-{id8}");
        // Checked up front so a failed `worktree add` below can delete the branch knowing it made it.
        let branch_ref = format!("refs/heads/{branch}");
        if git_out(
            &repo_root,
            ["rev-parse", "--verify", "-q", &branch_ref],
            None,
        )
        .await
        .is_ok()
        {
            return Err(WorktreeError::BranchExists { branch });
        }
        // Snapshot the parent before anything else so the child sees the state at launch.
        let parent_tree = snapshot_tree(&repo_root).await?;

        // Concurrent `git worktree add`s in one repository race on `.git/worktrees` ("failed to
        // read .git/worktrees/<id>/commondir"), so a fan-out's adds take turns.
        let admin = WORKTREE_ADMIN.lock().await;
        let added = git_out(
            &repo_root,
            [
                OsStr::new("worktree"),
                OsStr::new("add"),
                OsStr::new("--quiet"),
                OsStr::new("-b"),
                OsStr::new(&branch),
                path.as_os_str(),
                OsStr::new(&base),
            ],
            None,
        )
        .await;
        drop(admin);
        let mut worktree = Worktree {
            cwd: path.join(&relative),
            repo_root,
            path,
            branch,
            id8,
            base,
            baseline: String::new(),
        };
        if let Err(e) = added {
            // `-b` may have created the branch before the checkout failed.
            worktree.remove().await;
            return Err(e);
        }
        match worktree.replay(&parent_tree).await {
            Ok(baseline) => {
                worktree.baseline = baseline;
                // A cwd that holds nothing git tracks (an empty or all-ignored directory) has no
                // counterpart in the worktree yet; the child still starts at the same place.
                if let Err(source) = tokio::fs::create_dir_all(&worktree.cwd).await {
                    worktree.remove().await;
                    return Err(WorktreeError::Io {
                        path: worktree.cwd.clone(),
                        source,
                    });
                }
                Ok(worktree)
            }
            Err(e) => {
                worktree.remove().await;
                Err(e)
            }
        }
    }

    /// Re-open a kept worktree from its record (to continue a task in it, or to discard it with
    /// [`Worktree::remove`]). Its [`Worktree::cwd`] is the worktree root; a continued task keeps
    /// the cwd its record holds, which already points inside the worktree.
    pub async fn open(info: &WorktreeInfo) -> Result<Worktree, WorktreeError> {
        let path = PathBuf::from(&info.path);
        if !path.is_dir() {
            return Err(WorktreeError::Missing { path });
        }
        let baseline = info
            .baseline_tree
            .clone()
            .ok_or(WorktreeError::NoBaseline)?;
        let common = common_dir(&path).await?;
        let repo_root = main_worktree_root(&common).await?;
        let id8 = info
            .branch
            .strip_prefix("cadre-")
            .unwrap_or(&info.branch)
            .to_string();
        Ok(Worktree {
            cwd: path.clone(),
            repo_root,
            path,
            branch: info.branch.clone(),
            id8,
            base: info.base.clone(),
            baseline,
        })
    }

    /// Apply the parent's snapshot onto the fresh checkout and pin the resulting baseline.
    async fn replay(&self, parent_tree: &str) -> Result<String, WorktreeError> {
        let base_tree = git_text(
            &self.path,
            ["rev-parse", &format!("{}^{{tree}}", self.base)],
        )
        .await?;
        if base_tree != parent_tree {
            let patch = diff_patch(&self.path, &base_tree, parent_tree).await?;
            if !patch.is_empty() {
                git_out(
                    &self.path,
                    ["apply", "--binary", "--whitespace=nowarn", "-"],
                    Some(patch),
                )
                .await?;
            }
        }
        let baseline = snapshot_tree(&self.path).await?;
        git_out(
            &self.repo_root,
            ["update-ref", &self.baseline_ref(), &baseline],
            None,
        )
        .await?;
        Ok(baseline)
    }

    /// The main working tree's root.
    pub fn repo_root(&self) -> &Path {
        &self.repo_root
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// Where the child runs: the parent's cwd mapped into the worktree.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The record's view of this worktree while it is live (not yet kept).
    pub fn info(&self) -> WorktreeInfo {
        WorktreeInfo {
            path: self.path.to_string_lossy().into_owned(),
            branch: self.branch.clone(),
            base: self.base.clone(),
            baseline_tree: Some(self.baseline.clone()),
            kept: false,
            diff_stat: None,
        }
    }

    /// The child's changes so far as a diff stat; empty when there are none.
    pub async fn diff_stat(&self) -> Result<String, WorktreeError> {
        let now = snapshot_tree(&self.path).await?;
        if now == self.baseline {
            return Ok(String::new());
        }
        stat(&self.path, &self.baseline, &now).await
    }

    /// End of the task: remove the worktree when the child changed nothing, keep it otherwise.
    pub async fn finish(self) -> Result<WorktreeOutcome, WorktreeError> {
        if !self.path.is_dir() {
            self.remove().await;
            return Ok(WorktreeOutcome::Removed);
        }
        let now = snapshot_tree(&self.path).await?;
        if now == self.baseline {
            self.remove().await;
            return Ok(WorktreeOutcome::Removed);
        }
        let diff_stat = stat(&self.path, &self.baseline, &now).await?;
        let mut info = self.info();
        info.kept = true;
        info.diff_stat = Some(diff_stat);
        Ok(WorktreeOutcome::Kept(info))
    }

    /// Remove the worktree, its branch and its baseline ref. Best effort: each step runs even if an
    /// earlier one failed, so a half-created worktree is cleaned up as far as possible.
    pub async fn remove(&self) {
        let _admin = WORKTREE_ADMIN.lock().await;
        let _ = git_out(
            &self.repo_root,
            [
                OsStr::new("worktree"),
                OsStr::new("remove"),
                OsStr::new("--force"),
                self.path.as_os_str(),
            ],
            None,
        )
        .await;
        if self.path.exists() {
            // git refused (e.g. a locked worktree or a checkout that never completed).
            let _ = tokio::fs::remove_dir_all(&self.path).await;
        }
        let _ = git_out(&self.repo_root, ["worktree", "prune"], None).await;
        let _ = git_out(
            &self.repo_root,
            ["branch", "-D", "--quiet", &self.branch],
            None,
        )
        .await;
        let _ = git_out(
            &self.repo_root,
            ["update-ref", "-d", &self.baseline_ref()],
            None,
        )
        .await;
    }

    fn baseline_ref(&self) -> String {
        format!("{BASELINE_REF_PREFIX}{}", self.id8)
    }
}

/// Apply a kept worktree's changes to the main tree of the repository containing `repo_root`
/// (`cadre task apply`). Checked with `git apply --check` first: on a conflict nothing changes and
/// the error says why. Returns the diff stat of what was applied (empty when there was nothing).
pub async fn apply(repo_root: &Path, info: &WorktreeInfo) -> Result<String, WorktreeError> {
    let repo = toplevel(repo_root).await?;
    let path = PathBuf::from(&info.path);
    if !path.is_dir() {
        return Err(WorktreeError::Missing { path });
    }
    let baseline = info
        .baseline_tree
        .as_deref()
        .ok_or(WorktreeError::NoBaseline)?;
    if common_dir(&repo).await? != common_dir(&path).await? {
        return Err(WorktreeError::OtherRepo {
            worktree: path,
            repo,
        });
    }
    let now = snapshot_tree(&path).await?;
    if now == baseline {
        return Ok(String::new());
    }
    let patch = diff_patch(&repo, baseline, &now).await?;
    let check = run_git(
        &repo,
        ["apply", "--check", "--binary", "--whitespace=nowarn", "-"],
        &[],
        Some(patch.clone()),
    )
    .await?;
    if !check.status.success() {
        return Err(WorktreeError::Conflict {
            repo,
            details: String::from_utf8_lossy(&check.stderr).trim().to_string(),
        });
    }
    git_out(
        &repo,
        ["apply", "--binary", "--whitespace=nowarn", "-"],
        Some(patch),
    )
    .await?;
    stat(&repo, baseline, &now).await
}

/// The root of the working tree containing `dir`, canonical.
async fn toplevel(dir: &Path) -> Result<PathBuf, WorktreeError> {
    let not_a_repo = || WorktreeError::NotARepo {
        path: dir.to_path_buf(),
    };
    if !dir.is_dir() {
        return Err(not_a_repo());
    }
    match git_text(dir, ["rev-parse", "--show-toplevel"]).await {
        Ok(top) if !top.is_empty() => canonical(Path::new(&top)),
        Ok(_) | Err(WorktreeError::Git { .. }) => Err(not_a_repo()),
        Err(e) => Err(e),
    }
}

/// The repository's common git directory (shared by all its worktrees), canonical.
async fn common_dir(dir: &Path) -> Result<PathBuf, WorktreeError> {
    let common = git_text(
        dir,
        ["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )
    .await?;
    canonical(Path::new(&common))
}

/// The main working tree of the repository whose common dir is `common`.
async fn main_worktree_root(common: &Path) -> Result<PathBuf, WorktreeError> {
    // `git worktree list --porcelain` lists the main worktree first.
    let list = git_text(common, ["worktree", "list", "--porcelain"]).await?;
    let first = list
        .lines()
        .find_map(|l| l.strip_prefix("worktree "))
        .ok_or_else(|| WorktreeError::Git {
            command: "worktree list".into(),
            stderr: "no main worktree listed".into(),
        })?;
    canonical(Path::new(first))
}

/// The working tree at `dir` (tracked files as on disk plus untracked, non-ignored ones) as a tree
/// object, built in a temporary copy of the index so the real one is untouched.
async fn snapshot_tree(dir: &Path) -> Result<String, WorktreeError> {
    let index = PathBuf::from(
        git_text(
            dir,
            ["rev-parse", "--path-format=absolute", "--git-path", "index"],
        )
        .await?,
    );
    let mut tmp_name = index.as_os_str().to_owned();
    tmp_name.push(format!(".cadre-{}", uuid::Uuid::new_v4().simple()));
    let tmp = TempFile(PathBuf::from(tmp_name));
    if index.exists() {
        // Starting from the real index keeps its stat cache, so unchanged files are not rehashed.
        copy_index(&index, &tmp.0)
            .await
            .map_err(|source| WorktreeError::Io {
                path: index.clone(),
                source,
            })?;
    }
    let env = [("GIT_INDEX_FILE", tmp.0.as_os_str())];
    let added = run_git(dir, ["add", "-A", "--", "."], &env, None).await?;
    check("add -A", &added)?;
    let tree = run_git(dir, ["write-tree"], &env, None).await?;
    check("write-tree", &tree)?;
    Ok(String::from_utf8_lossy(&tree.stdout).trim().to_string())
}

/// Copy the index at `from` to `to` with its modification time. Git trusts an entry whose size
/// and mtime match the file unless the index is not older than the file ("racily clean"), then it
/// compares contents. A copy stamped with the time of copying would hide a file rewritten to the
/// same size within the checkout's timestamp granularity: the copy looks newer than the change, so
/// the change would be lost.
async fn copy_index(from: &Path, to: &Path) -> std::io::Result<()> {
    let (from, to) = (from.to_path_buf(), to.to_path_buf());
    tokio::task::spawn_blocking(move || {
        let modified = std::fs::metadata(&from)?.modified()?;
        std::fs::copy(&from, &to)?;
        std::fs::File::options()
            .write(true)
            .open(&to)?
            .set_modified(modified)
    })
    .await
    .map_err(std::io::Error::other)?
}

/// A binary patch from tree `from` to tree `to`. Plumbing, so `diff.*` settings cannot change it.
async fn diff_patch(dir: &Path, from: &str, to: &str) -> Result<Vec<u8>, WorktreeError> {
    git_out(
        dir,
        [
            "diff-tree",
            "-r",
            "-p",
            "--binary",
            "--full-index",
            "--no-renames",
            "--no-color",
            from,
            to,
        ],
        None,
    )
    .await
}

async fn stat(dir: &Path, from: &str, to: &str) -> Result<String, WorktreeError> {
    let out = git_text(
        dir,
        [
            "diff",
            STAT_WIDTH,
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            from,
            to,
        ],
    )
    .await?;
    Ok(out)
}

fn canonical(path: &Path) -> Result<PathBuf, WorktreeError> {
    std::fs::canonicalize(path).map_err(|source| WorktreeError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Removes its file when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let mut lock = self.0.as_os_str().to_owned();
        lock.push(".lock");
        let _ = std::fs::remove_file(PathBuf::from(lock));
    }
}

async fn git_text<I, S>(dir: &Path, args: I) -> Result<String, WorktreeError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let out = git_out(dir, args, None).await?;
    Ok(String::from_utf8_lossy(&out).trim_end().to_string())
}

/// Run git and return its stdout, or its stderr as an error when it fails.
async fn git_out<I, S>(
    dir: &Path,
    args: I,
    stdin: Option<Vec<u8>>,
) -> Result<Vec<u8>, WorktreeError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<S> = args.into_iter().collect();
    let output = run_git(dir, &args, &[], stdin).await?;
    let command = describe(&args);
    check(&command, &output)?;
    Ok(output.stdout)
}

fn check(command: &str, output: &std::process::Output) -> Result<(), WorktreeError> {
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    Err(WorktreeError::Git {
        command: command.to_string(),
        stderr: if stderr.is_empty() {
            format!("exited with {}", output.status)
        } else {
            stderr
        },
    })
}

/// The subcommand and its plain arguments, for error messages.
fn describe<S: AsRef<OsStr>>(args: &[S]) -> String {
    let words: Vec<String> = args
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    // Skip leading `-c key=value` pairs.
    let mut rest = words.as_slice();
    while rest.first().is_some_and(|w| w == "-c") && rest.len() >= 2 {
        rest = &rest[2..];
    }
    rest.iter().take(2).cloned().collect::<Vec<_>>().join(" ")
}

/// Run cadre's own hardened git in `dir` (`cadre_tools::git::own_git`) with `extra_env`,
/// feeding `stdin`.
async fn run_git<I, S>(
    dir: &Path,
    args: I,
    extra_env: &[(&str, &OsStr)],
    stdin: Option<Vec<u8>>,
) -> Result<std::process::Output, WorktreeError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    cadre_tools::git::own_git(dir, args, extra_env, stdin)
        .await
        .map_err(|e| WorktreeError::Spawn {
            source: std::io::Error::other(e.to_string()),
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn short_id_takes_the_random_tail_of_a_v7_id() {
        assert_eq!(short_id("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"), "2e3f4a5b");
        assert_eq!(short_id("ABC"), "abc");
        assert_eq!(short_id("../x/y"), "xy");
        assert_eq!(short_id(""), "");
        // Ids made in the same instant differ in their short ids.
        let a = short_id(&uuid::Uuid::now_v7().to_string());
        let b = short_id(&uuid::Uuid::now_v7().to_string());
        assert_ne!(a, b);
    }

    #[test]
    fn describe_names_the_subcommand() {
        assert_eq!(
            describe(&["-c", "core.hooksPath=/dev/null", "worktree", "add", "-b"]),
            "worktree add"
        );
        assert_eq!(describe(&["apply"]), "apply");
        let empty: [&str; 0] = [];
        assert_eq!(describe(&empty), "");
    }
}
