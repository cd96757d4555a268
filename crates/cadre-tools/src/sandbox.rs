//! How a role's bash is sandboxed: the configuration the bash tool keeps (with its shell
//! policy), over `cadre-sandbox`, whose items are re-exported here.

use std::io;
use std::path::PathBuf;

pub use cadre_sandbox::*;

use crate::shell_policy::ShellPolicy;

/// How a read-only role's bash runs: which binary re-executes into the sandbox, where it may
/// write, and which shell policy is checked before anything runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    /// The cadre binary (normally `std::env::current_exe()`), which handles [`EXEC_ARG`].
    pub exe: PathBuf,
    /// The task's private scratch directory (see [`create_scratch_dir`]); also the command's
    /// `TMPDIR`. It may be only named ([`scratch_dir_path`]): bash creates it before its first
    /// sandboxed command.
    pub scratch_dir: PathBuf,
    /// Further writable directories, e.g. `.cadre/plans/` for a role with `allowPlanFiles`.
    /// Each must exist.
    pub extra_writable: Vec<PathBuf>,
    pub policy: ShellPolicy,
    /// Whether the command may use the network (the `research` role); otherwise it cannot
    /// create a socket.
    pub network: bool,
}

impl SandboxConfig {
    /// A configuration that re-executes the running binary (which must be cadre, or another
    /// binary that routes [`EXEC_ARG`] to [`exec_main`]).
    pub fn for_current_exe(
        scratch_dir: PathBuf,
        extra_writable: Vec<PathBuf>,
        policy: ShellPolicy,
    ) -> io::Result<Self> {
        Ok(SandboxConfig {
            exe: std::env::current_exe()?,
            scratch_dir,
            extra_writable,
            policy,
            network: false,
        })
    }

    /// The directories the sandboxed command may write beneath: scratch first.
    pub fn writable_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.scratch_dir.clone()];
        dirs.extend(self.extra_writable.iter().cloned());
        dirs
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn current_exe_config() {
        let config =
            SandboxConfig::for_current_exe("/s".into(), vec![], ShellPolicy::Verify).unwrap();
        assert_eq!(config.exe, std::env::current_exe().unwrap());
        assert_eq!(config.policy, ShellPolicy::Verify);
    }

    #[test]
    fn writable_dirs_list_scratch_first() {
        let config = SandboxConfig {
            exe: "/bin/cadre".into(),
            scratch_dir: "/s".into(),
            extra_writable: vec!["/p".into()],
            policy: ShellPolicy::Inspect,
            network: false,
        };
        assert_eq!(
            config.writable_dirs(),
            [PathBuf::from("/s"), PathBuf::from("/p")]
        );
    }
}
