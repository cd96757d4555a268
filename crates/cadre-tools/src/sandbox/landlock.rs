//! The Landlock ruleset of the sandbox: read and execute everywhere, write only beneath the
//! given directories and into `/dev/null`.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, PathFdError,
    Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError, RulesetStatus, Scope,
};

/// The rights are those of ABI 3 (see `MIN_LANDLOCK_ABI`), required in full: a kernel that
/// cannot enforce one of them makes the restriction fail instead of silently weakening it.
/// Newer rights are left unhandled on purpose: device ioctls (ABI 5) are not writes, and
/// handling them would break terminal and pipe handling in the shell.
const ABI_USED: ABI = ABI::V3;

#[derive(Debug, thiserror::Error)]
pub enum RestrictError {
    #[error("cannot open {path} for a sandbox rule: {source}")]
    Path {
        path: PathBuf,
        #[source]
        source: PathFdError,
    },
    #[error("Landlock refused the restriction: {0}")]
    Ruleset(#[from] RulesetError),
    #[error("Landlock enforced the restriction only partly ({0:?})")]
    NotFullyEnforced(RulesetStatus),
    #[error("no_new_privs could not be set")]
    NoNewPrivs,
}

fn open(path: &Path) -> Result<PathFd, RestrictError> {
    PathFd::new(path).map_err(|source| RestrictError::Path {
        path: path.to_path_buf(),
        source,
    })
}

/// From this ABI on, the sandbox is also scoped: no signals to processes outside it (cadre
/// itself included) and no connections to abstract Unix sockets created outside it.
const SCOPE_ABI: i32 = 6;

/// Restrict the calling thread (and everything it later executes) for good. `kernel_abi` is
/// the probed Landlock ABI: it decides (deterministically, per kernel) whether the scopes are
/// added; everything requested is then required in full.
///
/// Must run while the process has a single thread: Landlock before ABI 8 restricts only the
/// calling thread.
pub fn restrict_self(writable: &[PathBuf], kernel_abi: i32) -> Result<(), RestrictError> {
    let read: BitFlags<AccessFs> = AccessFs::from_read(ABI_USED);
    let all: BitFlags<AccessFs> = AccessFs::from_all(ABI_USED);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)?;
    if kernel_abi >= SCOPE_ABI {
        ruleset = ruleset.scope(Scope::from_all(ABI::V6))?;
    }
    let mut ruleset = ruleset
        .create()?
        .no_new_privs(true)
        .add_rule(PathBeneath::new(open(Path::new("/"))?, read))?;
    for dir in writable {
        ruleset = ruleset.add_rule(PathBeneath::new(open(dir)?, all))?;
    }
    // `2>/dev/null` is everyday shell; writing there changes nothing.
    let dev_null = Path::new("/dev/null");
    if dev_null.exists() {
        let rights = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
        ruleset = ruleset.add_rule(PathBeneath::new(open(dev_null)?, rights))?;
    }
    let status = ruleset.restrict_self()?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(RestrictError::NotFullyEnforced(status.ruleset));
    }
    if !status.no_new_privs {
        return Err(RestrictError::NoNewPrivs);
    }
    Ok(())
}
