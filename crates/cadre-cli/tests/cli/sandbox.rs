//! S2 end to end: a read-only role's bash runs through the real cadre binary's `__sandbox-exec`
//! re-exec under Landlock. Every attempt to change the tree fails and leaves it byte-for-byte
//! unchanged; the same commands without the sandbox do change it, which proves the sandbox and
//! not a broken shell. Where the kernel has no usable Landlock, the refusal path is asserted
//! instead (and the test says which path ran).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cadre_protocol::ContentBlock;
use cadre_tools::sandbox::{SandboxConfig, SandboxStatus, create_scratch_dir, landlock_status};
use cadre_tools::shell_policy::ShellPolicy;
use cadre_tools::{BashTool, Tool, ToolContext, ToolOutput};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::harness::have;

const CADRE: &str = env!("CARGO_BIN_EXE_cadre");

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Dir,
    File(Vec<u8>),
    Link(PathBuf),
    Other,
}

/// Every name, file content and link target under `root`, except beneath `skip`.
fn snapshot(root: &Path, skip: &[&Path]) -> BTreeMap<PathBuf, Entry> {
    fn walk(dir: &Path, skip: &[&Path], out: &mut BTreeMap<PathBuf, Entry>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if skip.contains(&path.as_path()) {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let kind = if meta.is_symlink() {
                Entry::Link(std::fs::read_link(&path).unwrap())
            } else if meta.is_dir() {
                walk(&path, skip, out);
                Entry::Dir
            } else if meta.is_file() {
                Entry::File(std::fs::read(&path).unwrap())
            } else {
                Entry::Other
            };
            out.insert(path, kind);
        }
    }
    let mut out = BTreeMap::new();
    walk(root, skip, &mut out);
    out
}

fn git(repo: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A temp root holding a git repository with a committed file that has an uncommitted edit
/// (so `git commit -am` has something to commit), a private scratch dir and an artifacts dir.
pub(crate) struct Tree {
    pub(crate) root: tempfile::TempDir,
    pub(crate) repo: PathBuf,
    pub(crate) scratch: PathBuf,
    pub(crate) artifacts: PathBuf,
}

impl Tree {
    pub(crate) fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let repo = root.path().join("repo");
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        std::fs::write(repo.join("f"), "original\n").unwrap();
        std::fs::write(repo.join("sub/g"), "nested\n").unwrap();
        if have("git") {
            git(&repo, &["init", "-q"]);
            git(&repo, &["config", "user.name", "T"]);
            git(&repo, &["config", "user.email", "t@example.invalid"]);
            git(&repo, &["add", "-A"]);
            git(&repo, &["commit", "-qm", "init"]);
        }
        std::fs::write(repo.join("f"), "original\nedited\n").unwrap();
        let scratch = create_scratch_dir(&root.path().join("scratches")).unwrap();
        let artifacts = root.path().join("artifacts");
        Tree {
            root,
            repo,
            scratch,
            artifacts,
        }
    }

    /// Everything but the scratch dir and the tool's own artifacts.
    fn snapshot(&self) -> BTreeMap<PathBuf, Entry> {
        snapshot(self.root.path(), &[&self.scratch, &self.artifacts])
    }

    pub(crate) fn sandboxed(&self, policy: ShellPolicy, extra_writable: Vec<PathBuf>) -> BashTool {
        BashTool::sandboxed(SandboxConfig {
            exe: PathBuf::from(CADRE),
            scratch_dir: self.scratch.clone(),
            extra_writable,
            policy,
            network: false,
        })
    }

    pub(crate) async fn run(&self, tool: &BashTool, command: &str) -> ToolOutput {
        self.run_with(tool, json!({ "command": command })).await
    }

    pub(crate) async fn run_with(&self, tool: &BashTool, args: serde_json::Value) -> ToolOutput {
        let ctx = ToolContext {
            cwd: self.repo.clone(),
            cancel: CancellationToken::new(),
            updates: None,
            artifacts_dir: self.artifacts.clone(),
        };
        tokio::time::timeout(Duration::from_secs(30), tool.execute(args, ctx))
            .await
            .expect("bash call hung")
    }
}

pub(crate) fn text(out: &ToolOutput) -> String {
    out.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The ways a read-only child could try to change the tree (issue 4's list and more).
/// `true`: the attack also changes the tree without the sandbox (used for the control run).
fn attacks() -> Vec<(String, bool)> {
    let copy_source = if Path::new("/etc/hostname").is_file() {
        "/etc/hostname"
    } else {
        "/etc/passwd"
    };
    let mut list: Vec<(String, bool)> = [
        "echo x > f",
        "echo x >> f",
        "echo x | tee f",
        "rm f",
        "rm -rf sub",
        "mv f g",
        "ln -s f l && echo x > l",
        "ln f hardlink",
        "echo x > /proc/self/cwd/f",
        "touch newfile",
        "mkdir d",
        "mkfifo fifo",
        "truncate -s 0 f",
        "sed -i s/original/changed/ f",
        "dd if=/dev/zero of=f bs=1 count=1 conv=notrunc status=none",
    ]
    .iter()
    .map(|c| (c.to_string(), true))
    .collect();
    list.push((format!("cp {copy_source} f"), true));
    // Re-entering the sandbox entry point cannot widen what the outer sandbox allows.
    list.push((
        format!("'{CADRE}' __sandbox-exec --rw . -- bash -c 'echo x > f'"),
        true,
    ));
    // Climbing out of the scratch dir.
    list.push(("echo x > \"$TMPDIR/../escaped\"".into(), false));
    if have("git") {
        list.push(("git commit -qam x".into(), true));
        list.push(("git tag v1".into(), true));
    }
    if have("python3") {
        list.push((r#"python3 -c 'open("f","w").write("x")'"#.into(), true));
    } else {
        println!("python3 missing: its attack is skipped");
    }
    list
}

#[tokio::test]
async fn read_only_bash_cannot_change_the_tree() {
    let tree = Tree::new();
    let tool = tree.sandboxed(ShellPolicy::Unrestricted, vec![]);
    let before = tree.snapshot();
    let status = landlock_status();
    println!("sandbox path: {status}");
    let attacks = attacks();
    for (command, _) in &attacks {
        let out = tree.run(&tool, command).await;
        assert!(out.is_error, "{command:?} succeeded: {}", text(&out));
        assert_eq!(tree.snapshot(), before, "{command:?} changed the tree");
        if let SandboxStatus::Unavailable { reason } = &status {
            assert_eq!(
                out.details.as_ref().unwrap()["blocked"],
                "sandbox-unavailable"
            );
            assert!(text(&out).contains(reason.as_str()), "{}", text(&out));
        }
    }
    println!("{} attempts, all failed, tree unchanged", attacks.len());
}

#[tokio::test]
async fn the_same_commands_change_the_tree_without_the_sandbox() {
    let mut changed = 0;
    for (command, changes_unsandboxed) in attacks() {
        if !changes_unsandboxed {
            continue;
        }
        let tree = Tree::new();
        let before = tree.snapshot();
        let out = tree.run(&BashTool::new(), &command).await;
        assert_ne!(
            tree.snapshot(),
            before,
            "{command:?} did not change the tree even unsandboxed: {}",
            text(&out)
        );
        changed += 1;
    }
    println!("{changed} commands changed an unsandboxed tree");
}

#[tokio::test]
async fn sandboxed_bash_reads_and_writes_its_scratch_dir() {
    let tree = Tree::new();
    let plans = tree.repo.join(".cadre/plans");
    std::fs::create_dir_all(&plans).unwrap();
    let tool = tree.sandboxed(ShellPolicy::Unrestricted, vec![plans.clone()]);
    let SandboxStatus::Enforced { abi } = landlock_status() else {
        let out = tree.run(&tool, "cat f").await;
        assert!(out.is_error);
        assert!(text(&out).contains("kernel sandbox"), "{}", text(&out));
        println!("sandbox path: refusal (no usable Landlock)");
        return;
    };
    println!("sandbox path: Landlock ABI {abi}");
    let ok = |out: &ToolOutput| {
        assert!(!out.is_error, "{}", text(out));
        text(out)
    };
    assert_eq!(
        ok(&tree.run(&tool, "cat f sub/g").await),
        "original\nedited\nnested\n"
    );
    assert_eq!(ok(&tree.run(&tool, "ls").await), "f\nsub\n");
    assert_eq!(
        ok(&tree.run(&tool, "echo \"$TMPDIR\"").await).trim(),
        tree.scratch.to_str().unwrap()
    );
    ok(&tree
        .run(
            &tool,
            "echo note > \"$TMPDIR/n\" && mkdir \"$TMPDIR/d\" && mv \"$TMPDIR/n\" \"$TMPDIR/d/m\"",
        )
        .await);
    assert_eq!(
        std::fs::read_to_string(tree.scratch.join("d/m")).unwrap(),
        "note\n"
    );
    ok(&tree.run(&tool, "echo plan > .cadre/plans/p.md").await);
    assert_eq!(
        std::fs::read_to_string(plans.join("p.md")).unwrap(),
        "plan\n"
    );
    // Discarding output and duplicating streams still work.
    assert_eq!(
        ok(&tree
            .run(&tool, "ls missing 2>/dev/null; echo err >&2")
            .await),
        "err\n"
    );
    if have("git") {
        let out = ok(&tree
            .run(&tool, "git status --short && git log --oneline | wc -l")
            .await);
        assert!(out.contains(" M f"), "{out}");
    }
    // Still nothing outside the writable dirs.
    let out = tree.run(&tool, "echo x > f").await;
    assert!(text(&out).contains("Permission denied"), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(tree.repo.join("f")).unwrap(),
        "original\nedited\n"
    );
}

#[tokio::test]
async fn sandboxed_commands_still_time_out_and_policies_apply_first() {
    let tree = Tree::new();
    let tool = tree.sandboxed(ShellPolicy::Inspect, vec![]);
    let out = tree.run(&tool, "echo x > f").await;
    assert!(
        text(&out).starts_with("Command not run: the `inspect` shell policy refuses"),
        "{}",
        text(&out)
    );
    if !landlock_status().is_enforced() {
        println!("sandbox path: refusal (no usable Landlock)");
        return;
    }
    let out = tree.run(&tool, "cat f | wc -l").await;
    assert_eq!(text(&out).trim(), "2");
    let unrestricted = tree.sandboxed(ShellPolicy::Unrestricted, vec![]);
    let out = tree
        .run_with(&unrestricted, json!({"command": "sleep 30", "timeout": 1}))
        .await;
    assert!(
        text(&out).contains("timed out after 1 seconds"),
        "{}",
        text(&out)
    );
}

/// The hidden entry point itself: bad arguments or an impossible rule stop before the command.
#[test]
fn the_entry_point_fails_closed() {
    let tree = Tree::new();
    let file = tree.repo.join("f");
    let run = |args: &[&str]| {
        Command::new(CADRE)
            .args(args)
            .current_dir(&tree.repo)
            .output()
            .unwrap()
    };
    let write = "echo x > f";
    let cases: [(&[&str], &str); 4] = [
        (&["__sandbox-exec"], "no program to run"),
        (&["__sandbox-exec", "--rw"], "`--rw` needs a directory"),
        (
            &["__sandbox-exec", "bash", "-c", write],
            "unexpected argument `bash`",
        ),
        (
            &["__sandbox-exec", "--rw", "f", "--", "bash", "-c", write],
            "is not an existing directory",
        ),
    ];
    for (args, why) in cases {
        let out = run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {stderr}");
        assert!(stderr.contains(why), "{args:?}: {stderr}");
        assert!(
            stderr.contains("the command was not run"),
            "{args:?}: {stderr}"
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "original\nedited\n"
        );
    }
    // A program that does not exist: the sandbox is set up, exec fails like a shell would.
    let out = run(&["__sandbox-exec", "--", "/nonexistent/program"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if landlock_status().is_enforced() {
        assert_eq!(out.status.code(), Some(127), "{stderr}");
        assert!(
            stderr.contains("cannot run /nonexistent/program"),
            "{stderr}"
        );
    } else {
        assert_eq!(out.status.code(), Some(125), "{stderr}");
    }
}

/// From Landlock ABI 6 the sandbox is scoped: no signals to processes outside it (here the
/// test process, bash's parent), while the same signal works unsandboxed.
#[tokio::test]
async fn sandboxed_commands_cannot_signal_cadre() {
    let tree = Tree::new();
    let probe = "kill -0 $PPID";
    let out = tree.run(&BashTool::new(), probe).await;
    assert!(!out.is_error, "{}", text(&out));
    match landlock_status() {
        SandboxStatus::Enforced { abi } if abi >= 6 => {
            let tool = tree.sandboxed(ShellPolicy::Unrestricted, vec![]);
            let out = tree.run(&tool, probe).await;
            assert!(out.is_error, "{}", text(&out));
            assert!(
                text(&out).contains("Operation not permitted"),
                "{}",
                text(&out)
            );
        }
        other => println!("signal scoping not checked: {other}"),
    }
}
