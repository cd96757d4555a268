//! cadre's sandbox (S2, S8): the kernel layers (capabilities, Landlock, the system-call
//! filter), the writer's boundary, the process supervisor, the descriptors and the files no
//! command may read — everything a re-executed cadre does before it becomes the command.
//! [`reexec_main`] is the one entry point a binary routes its hidden first arguments to.
//!
//! The read-only sandbox (S2).
//!
//! A read-only role's bash command runs as
//! `<cadre> __sandbox-exec --rw <scratch> [--rw <dir>]… -- bash -c <command>`: the re-executed
//! cadre binary restricts itself with Landlock — the whole filesystem readable and executable,
//! writable only beneath the listed directories (and `/dev/null`) — sets `no_new_privs`, and then
//! replaces itself with bash. Every process the command starts inherits the restriction; root
//! cannot lift it either. The restriction is applied before any thread exists (the hidden entry
//! point runs before the CLI starts its runtime), so it covers the whole process.
//!
//! Where Landlock is missing, too old, or cannot be fully enforced, the command is not run at
//! all: [`landlock_status`] says so up front (for `cadre doctor` and the bash tool), and the
//! re-executed process refuses to exec if the kernel enforces less than asked.
//!
//! The layers, in the order `__sandbox-exec` applies them (see `docs/security.md`):
//! 1. every capability dropped ([`caps`]: root's too, bounding set included);
//! 2. Landlock (ABI ≥ 3): no opening for writing, truncating, creating, removing, renaming or
//!    linking outside the writable directories, whose rules are opened without following any
//!    link; from ABI 4 no TCP bind/connect without the network, from ABI 6 no signals to
//!    processes outside the sandbox and no connections to abstract Unix sockets made outside it;
//! 3. a system-call filter ([`seccomp`]): no metadata changes (modes, owners, times, xattrs,
//!    inode flags, device nodes), nothing done to another process by pid (limits, priority,
//!    affinity, scheduling, ptrace), no namespaces, io_uring, keyrings, BPF or terminal input
//!    injection, and no sockets unless the role has the network.
//!
//! Side effects through a daemon reached some other way than a socket (a shared file the
//! daemon watches, say) are not covered: nothing the command can write reaches it.

#[cfg(target_os = "linux")]
mod caps;
mod exec;
pub mod fds;
pub mod hidden;
#[cfg(target_os = "linux")]
mod landlock;
mod mechanisms;
#[cfg(target_os = "linux")]
pub mod seccomp;
mod status;
pub mod supervise;
pub mod writer;

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

pub use exec::{
    EXEC_ARG, ExecArgs, ExecArgsError, HIDE_ARG, SANDBOX_FAILURE_EXIT, WRITER_ARG, exec_main,
    sandbox_args,
};
pub use mechanisms::{Mechanism, mechanisms};
pub use status::{MIN_LANDLOCK_ABI, SandboxStatus, landlock_status};
pub use writer::{ProtectedState, WriterBoundary};

/// Removes a task's scratch directory when the last bash tool that uses it is dropped (the
/// task's run ended), so scratch files do not pile up in `CADRE_HOME` (bounded disk, S8).
#[derive(Debug)]
pub struct ScratchCleanup {
    dir: PathBuf,
}

impl ScratchCleanup {
    pub fn new(dir: PathBuf) -> Self {
        ScratchCleanup { dir }
    }
}

impl Drop for ScratchCleanup {
    fn drop(&mut self) {
        // Never through a link: `remove_dir_all` does not follow links inside the tree, and
        // the directory itself must be a real one.
        if std::fs::symlink_metadata(&self.dir).is_ok_and(|m| m.is_dir())
            && std::fs::remove_dir_all(&self.dir).is_err()
        {
            // std holds a descriptor per level: a tree deeper than the descriptor limit (a
            // child can make one on purpose) fails. `rm -rf` walks any depth, never follows a
            // link and stays on this file system.
            let _ = std::process::Command::new("rm")
                .args(["-rf", "--one-file-system", "--"])
                .arg(&self.dir)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

/// Create a fresh private scratch directory (`scratch-<uuid>`, mode 0700) under `parent`,
/// creating `parent` if needed.
pub fn create_scratch_dir(parent: &Path) -> io::Result<PathBuf> {
    let dir = scratch_dir_path(parent);
    ensure_scratch_dir(&dir)?;
    Ok(dir)
}

/// Name a fresh private scratch directory under `parent` without creating it: the sandboxed
/// bash creates it on its first command ([`ensure_scratch_dir`]), so a task that never runs
/// bash costs no directory (most read-only children only read, SPEC P1).
pub fn scratch_dir_path(parent: &Path) -> PathBuf {
    parent.join(format!("scratch-{}", uuid::Uuid::new_v4().simple()))
}

/// Make sure the scratch directory `dir` exists: create it with mode 0700 (and its parent if
/// needed), or accept it when it is already a directory, e.g. made by an earlier or
/// concurrent command of the same task.
pub fn ensure_scratch_dir(dir: &Path) -> io::Result<()> {
    let create = || std::fs::DirBuilder::new().mode(0o700).create(dir);
    let made = match create() {
        // Only the first scratch directory under its parent pays for creating the parent.
        Err(e) if e.kind() == io::ErrorKind::NotFound => match dir.parent() {
            Some(parent) => {
                std::fs::create_dir_all(parent)?;
                create()
            }
            None => Err(e),
        },
        made => made,
    };
    match made {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if std::fs::symlink_metadata(dir)?.is_dir() {
                Ok(())
            } else {
                Err(e)
            }
        }
        made => made,
    }
}

/// Route a process started with one of the sandbox's hidden first arguments
/// ([`EXEC_ARG`]: become the sandboxed command; [`supervise::SUPERVISE_ARG`]: supervise one)
/// to its entry point. `None`: `first` is no such argument. Must run before the process starts
/// any thread.
pub fn reexec_main(
    first: &std::ffi::OsStr,
    rest: impl IntoIterator<Item = std::ffi::OsString>,
) -> Option<std::process::ExitCode> {
    if first == EXEC_ARG {
        Some(exec_main(rest))
    } else if first == supervise::SUPERVISE_ARG {
        Some(supervise::supervise_main(rest))
    } else {
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn scratch_dirs_are_private_and_distinct() {
        let root = tempfile::tempdir().unwrap();
        let parent = root.path().join("a/b");
        let one = create_scratch_dir(&parent).unwrap();
        let two = create_scratch_dir(&parent).unwrap();
        assert_ne!(one, two);
        for dir in [&one, &two] {
            assert!(dir.starts_with(&parent));
            let mode = std::fs::metadata(dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }

    #[test]
    fn a_named_scratch_dir_is_created_on_demand_once() {
        let root = tempfile::tempdir().unwrap();
        let dir = scratch_dir_path(&root.path().join("a/b"));
        assert!(!dir.exists());
        ensure_scratch_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::write(dir.join("kept"), "x").unwrap();
        ensure_scratch_dir(&dir).unwrap();
        assert!(dir.join("kept").exists());
    }

    #[test]
    fn ensuring_a_scratch_dir_refuses_a_file_or_a_symlink_in_its_place() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(ensure_scratch_dir(&file).is_err());
        assert!(ensure_scratch_dir(&file.join("under")).is_err());
        let link = root.path().join("link");
        std::os::unix::fs::symlink(root.path(), &link).unwrap();
        assert!(ensure_scratch_dir(&link).is_err());
    }

    #[test]
    fn a_scratch_cleanup_removes_its_directory_and_nothing_through_a_link() {
        let root = tempfile::tempdir().unwrap();
        let dir = create_scratch_dir(&root.path().join("s")).unwrap();
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join("a/b/f"), "x").unwrap();
        let outside = root.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("kept"), "x").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
        drop(ScratchCleanup::new(dir.clone()));
        assert!(!dir.exists());
        assert!(outside.join("kept").exists());
        let link = root.path().join("link-dir");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        drop(ScratchCleanup::new(link));
        assert!(outside.join("kept").exists());
        drop(ScratchCleanup::new(root.path().join("never-made")));
    }

    #[test]
    fn scratch_dir_fails_under_a_file() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(create_scratch_dir(&file).is_err());
    }
}
