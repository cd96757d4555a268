//! The Landlock ruleset of the sandbox: read and execute everywhere, write only beneath the
//! given directories and into `/dev/null`.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    PathFdError, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetError,
    RulesetStatus, Scope,
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
    #[error("cannot list {path} for the sandbox's rules: {source}")]
    List {
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

/// The devices a command may read: the data sources and sinks every shell and runtime uses.
/// Everything else in `/dev` is out of reach — terminals above all (an open for reading alone
/// takes another session's keystrokes; `TCSETS` on it changes the user's terminal), but also
/// raw disks, `/dev/mem`, `/dev/kmsg` and the like — and leaving them out costs a handful of
/// rules instead of one per device.
const READABLE_DEVICES: [&str; 7] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/shm",
    "/dev/mqueue",
];

/// Rules granting `rights(entry)` beneath each entry of `dir` (its files get the file part of
/// those rights), except the entries `skip` names and beneath the `hidden` paths. Links get
/// no rule of their own — their targets are reached through their own entries — nor do
/// entries that cannot be opened.
fn add_entries(
    mut ruleset: RulesetCreated,
    dir: &Path,
    rights: impl Fn(&Path) -> BitFlags<AccessFs>,
    skip: impl Fn(&Path) -> bool,
    hidden: &[PathBuf],
) -> Result<RulesetCreated, RestrictError> {
    let entries = std::fs::read_dir(dir).map_err(|source| RestrictError::List {
        path: dir.to_path_buf(),
        source,
    })?;
    for entry in entries.flatten() {
        let path = entry.path();
        if skip(&path) {
            continue;
        }
        let access = rights(&path);
        ruleset = grant_except(ruleset, &path, access, hidden)?;
    }
    Ok(ruleset)
}

/// Most entries of one directory granted one by one on the way to a hidden path; a larger
/// directory is refused (the sandbox fails closed rather than grant it whole).
const MAX_ENTRIES_PER_DIR: usize = 20_000;

/// A rule granting `rights` beneath `path` — or, when a `hidden` path lies beneath it, only
/// listing on `path` itself and the same, entry by entry, for what it holds, so the hidden
/// path gets no right at all (a Landlock rule cannot exclude what lies below it). A link gets
/// no rule; a file gets the file part of `rights`; the hidden path itself gets nothing.
fn grant_except(
    mut ruleset: RulesetCreated,
    path: &Path,
    rights: BitFlags<AccessFs>,
    hidden: &[PathBuf],
) -> Result<RulesetCreated, RestrictError> {
    if hidden.iter().any(|h| h == path) {
        return Ok(ruleset);
    }
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(ruleset);
    };
    if meta.file_type().is_symlink() {
        return Ok(ruleset);
    }
    let holds_hidden = meta.is_dir() && hidden.iter().any(|h| h.starts_with(path));
    if !holds_hidden {
        let Ok(fd) = PathFd::new(path) else {
            return Ok(ruleset);
        };
        let mut access = rights;
        if !meta.is_dir() {
            access &= AccessFs::from_file(ABI_USED);
        }
        if !access.is_empty() {
            ruleset = ruleset.add_rule(PathBeneath::new(fd, access))?;
        }
        return Ok(ruleset);
    }
    let list = rights & AccessFs::ReadDir;
    if !list.is_empty() {
        ruleset = ruleset.add_rule(PathBeneath::new(open(path)?, list))?;
    }
    let entries = std::fs::read_dir(path).map_err(|source| RestrictError::List {
        path: path.to_path_buf(),
        source,
    })?;
    for (n, entry) in entries.flatten().enumerate() {
        if n >= MAX_ENTRIES_PER_DIR {
            return Err(RestrictError::List {
                path: path.to_path_buf(),
                source: std::io::Error::other(format!(
                    "more than {MAX_ENTRIES_PER_DIR} entries on the way to a hidden path"
                )),
            });
        }
        ruleset = grant_except(ruleset, &entry.path(), rights, hidden)?;
    }
    Ok(ruleset)
}

/// Read and execute everywhere but in `/dev`: `/` itself may be listed and traversed, its
/// entries other than `/dev` get `top(entry)`, and in `/dev` only [`READABLE_DEVICES`] are
/// readable. Granted entry by entry because a Landlock rule cannot exclude what lies below it.
fn read_all_but_devices(
    ruleset: RulesetCreated,
    read: BitFlags<AccessFs>,
    top: impl Fn(&Path) -> BitFlags<AccessFs>,
    hidden: &[PathBuf],
) -> Result<RulesetCreated, RestrictError> {
    let traverse = AccessFs::ReadDir | AccessFs::Execute;
    let dev = Path::new("/dev");
    let mut ruleset = ruleset.add_rule(PathBeneath::new(open(Path::new("/"))?, traverse))?;
    ruleset = add_entries(ruleset, Path::new("/"), top, |p| p == dev, hidden)?;
    if !dev.is_dir() {
        return Ok(ruleset);
    }
    ruleset = ruleset.add_rule(PathBeneath::new(open(dev)?, traverse))?;
    for device in READABLE_DEVICES {
        let path = Path::new(device);
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        let rights = if meta.is_dir() {
            read
        } else {
            read & AccessFs::from_file(ABI_USED)
        };
        ruleset = ruleset.add_rule(PathBeneath::new(open(path)?, rights))?;
    }
    Ok(ruleset)
}

/// Devices a writing child's commands may write: the data sinks and sources every shell uses.
const WRITER_DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Restrict a writing child's command (ABI ≥ 3). With `writable` empty it keeps every file the
/// user may write but `/proc`, `/sys` and `/dev`; otherwise it may write only beneath
/// `writable` (opened without following links, as the read-only sandbox's directories are).
/// Everything stays readable but the devices outside a short list; `/dev/shm` and the data
/// devices stay writable; no device node may be made anywhere. With ABI ≥ 6 it is also
/// scoped. Sets `no_new_privs`.
pub fn restrict_writer(
    kernel_abi: i32,
    writable: &[PathBuf],
    hidden: &[PathBuf],
) -> Result<(), RestrictError> {
    let read: BitFlags<AccessFs> = AccessFs::from_read(ABI_USED);
    let all: BitFlags<AccessFs> = AccessFs::from_all(ABI_USED);
    // A device node made in the project would open the device it names (`/dev/kvm`, a tty).
    let files = all & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let ruleset = base_ruleset(kernel_abi)?;
    let kernel = |p: &Path| p == Path::new("/proc") || p == Path::new("/sys");
    let ruleset = ruleset.create()?.no_new_privs(true);
    let top = |p: &Path| {
        if kernel(p) || !writable.is_empty() {
            read
        } else {
            files
        }
    };
    let mut ruleset = read_all_but_devices(ruleset, read, top, hidden)?;
    for dir in writable {
        ruleset = grant_writable(ruleset, dir, files, hidden)?;
    }
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        ruleset = ruleset.add_rule(PathBeneath::new(open(shm)?, files))?;
    }
    for device in WRITER_DEVICES {
        let path = Path::new(device);
        if path.exists() {
            let rights = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
            ruleset = ruleset.add_rule(PathBeneath::new(open(path)?, rights))?;
        }
    }
    enforce(ruleset)
}

/// A writable directory's rule, opened without following links; one that holds a hidden path
/// (a project that contains cadre's home) is granted entry by entry around it.
fn grant_writable(
    ruleset: RulesetCreated,
    dir: &Path,
    rights: BitFlags<AccessFs>,
    hidden: &[PathBuf],
) -> Result<RulesetCreated, RestrictError> {
    let fd = open_no_links(dir)?;
    if hidden.iter().any(|h| h.starts_with(dir)) {
        drop(fd);
        return grant_except(ruleset, dir, rights, hidden);
    }
    Ok(ruleset.add_rule(PathBeneath::new(fd, rights))?)
}

/// Every filesystem right handled (required in full), and from [`SCOPE_ABI`] the scopes.
fn base_ruleset(kernel_abi: i32) -> Result<Ruleset, RestrictError> {
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI_USED))?;
    if kernel_abi >= SCOPE_ABI {
        ruleset = ruleset.scope(Scope::from_all(ABI::V6))?;
    }
    Ok(ruleset)
}

/// Restrict the calling thread for good, or fail if the kernel enforces less than asked.
fn enforce(ruleset: RulesetCreated) -> Result<(), RestrictError> {
    let status = ruleset.restrict_self()?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(RestrictError::NotFullyEnforced(status.ruleset));
    }
    if !status.no_new_privs {
        return Err(RestrictError::NoNewPrivs);
    }
    Ok(())
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
    hidden: &[PathBuf],
) -> Result<(), RestrictError> {
    let read: BitFlags<AccessFs> = AccessFs::from_read(ABI_USED);
    let all: BitFlags<AccessFs> = AccessFs::from_all(ABI_USED);
    let mut ruleset = base_ruleset(kernel_abi)?;
    if !network && kernel_abi >= NET_ABI {
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI::V4))?;
    }
    let ruleset = ruleset.create()?.no_new_privs(true);
    // Everything readable but the devices outside a short list (see `read_all_but_devices`).
    let mut ruleset = read_all_but_devices(ruleset, read, |_| read, hidden)?;
    for dir in writable {
        ruleset = grant_writable(ruleset, dir, all, hidden)?;
    }
    // `2>/dev/null` is everyday shell; writing there changes nothing.
    let dev_null = Path::new("/dev/null");
    if dev_null.exists() {
        let rights = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
        ruleset = ruleset.add_rule(PathBeneath::new(open(dev_null)?, rights))?;
    }
    enforce(ruleset)
}
