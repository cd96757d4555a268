//! The Landlock ruleset of the sandbox: read and execute everywhere, write only beneath the
//! given directories and into `/dev/null`.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    PathFdError, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError, RulesetStatus, Scope,
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
    #[error(
        "the writable directory {path} cannot be opened without following a symbolic link \
         ({source}); a sandbox rule is never made through a link"
    )]
    Link {
        path: PathBuf,
        #[source]
        source: std::io::Error,
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

/// The kernel's `struct open_how` (libc's is non-exhaustive, so it cannot be built here).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// Open a writable directory for its rule without following any symbolic link on the way
/// (`openat2` with `RESOLVE_NO_SYMLINKS`): a link planted in a repository — `.cadre/plans ->
/// /` — must not turn a rule for the plans directory into a rule for the whole disk. Callers
/// pass canonical paths, so a legitimate path has no link to follow. Where the kernel has no
/// `openat2` (before 5.6), the path must equal its canonical form and is opened with
/// `O_NOFOLLOW`.
#[allow(unsafe_code)]
fn open_no_links(path: &Path) -> Result<std::os::fd::OwnedFd, RestrictError> {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;

    let link_error = |source: std::io::Error| RestrictError::Link {
        path: path.to_path_buf(),
        source,
    };
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| link_error(std::io::Error::other(e)))?;
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
    let how = OpenHow {
        flags: flags as u64,
        mode: 0,
        resolve: libc::RESOLVE_NO_SYMLINKS,
    };
    // SAFETY: openat2 reads a NUL-terminated path and an `open_how` of the size passed; both
    // live across the call. It returns a new descriptor or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c_path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd >= 0 {
        let fd = i32::try_from(fd).map_err(|e| link_error(std::io::Error::other(e)))?;
        // SAFETY: `fd` is a descriptor openat2 just returned, owned by nobody else.
        return Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) });
    }
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() != Some(libc::ENOSYS) {
        return Err(link_error(error));
    }
    let canonical = std::fs::canonicalize(path).map_err(link_error)?;
    if canonical != path {
        return Err(link_error(std::io::Error::other(format!(
            "it resolves to {}",
            canonical.display()
        ))));
    }
    // SAFETY: as above, with a plain open of a NUL-terminated path.
    let fd = unsafe { libc::open(c_path.as_ptr(), flags | libc::O_NOFOLLOW) };
    if fd < 0 {
        return Err(link_error(std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// From this ABI on, the sandbox is also scoped: no signals to processes outside it (cadre
/// itself included) and no connections to abstract Unix sockets created outside it.
pub(super) const SCOPE_ABI: i32 = 6;

/// From this ABI on, TCP `bind` and `connect` can be refused: a sandbox without network gets
/// both refused here too, beside the system-call filter's refusal of `socket()`.
const NET_ABI: i32 = 4;

/// Restrict the calling thread (and everything it later executes) for good. `kernel_abi` is
/// the probed Landlock ABI: it decides (deterministically, per kernel) whether the scopes are
/// added; everything requested is then required in full.
///
/// Must run while the process has a single thread: Landlock before ABI 8 restricts only the
/// calling thread.
pub fn restrict_self(
    writable: &[PathBuf],
    network: bool,
    kernel_abi: i32,
) -> Result<(), RestrictError> {
    let read: BitFlags<AccessFs> = AccessFs::from_read(ABI_USED);
    let all: BitFlags<AccessFs> = AccessFs::from_all(ABI_USED);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)?;
    if kernel_abi >= SCOPE_ABI {
        ruleset = ruleset.scope(Scope::from_all(ABI::V6))?;
    }
    if !network && kernel_abi >= NET_ABI {
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI::V4))?;
    }
    let mut ruleset = ruleset
        .create()?
        .no_new_privs(true)
        .add_rule(PathBeneath::new(open(Path::new("/"))?, read))?;
    for dir in writable {
        ruleset = ruleset.add_rule(PathBeneath::new(open_no_links(dir)?, all))?;
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

/// Scope the calling thread (and what it executes) without any filesystem or network rule: no
/// signals to, ptrace of or `/proc` access to processes outside, no abstract Unix sockets made
/// outside. Needs ABI ≥ [`SCOPE_ABI`]; sets `no_new_privs`.
pub fn scope_self() -> Result<(), RestrictError> {
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .scope(Scope::from_all(ABI::V6))?
        .create()?
        .no_new_privs(true)
        .restrict_self()?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(RestrictError::NotFullyEnforced(status.ruleset));
    }
    if !status.no_new_privs {
        return Err(RestrictError::NoNewPrivs);
    }
    Ok(())
}
