//! A writing child's boundary: where its commands may write, and which files inside that stay
//! read-only because they carry policy or name programs.
//!
//! A writing child edits the project; it must not edit what decides what runs next or with
//! which rights: cadre's home (settings that start MCP servers with the key, `trust.json`,
//! other tasks' records), the user's dotfiles, other projects — and, inside the project, git's
//! configuration and hooks (which the user's next `git status` runs outside every sandbox),
//! and the host settings a trusted project loads (`.cadre/`, `.pi/`, `.claude/`, `.mcp.json`).
//!
//! Two layers enforce it in `__sandbox-exec --writer`:
//! - Landlock: writes, creations, removals and renames only beneath [`WriterBoundary::writable`]
//!   (the project or worktree, the task's temporary directory, and git's common directory for
//!   a worktree, whose objects and refs a commit writes); device nodes nowhere.
//! - A private mount namespace in which each existing [`WriterBoundary::protected`] path is
//!   bind-mounted read-only over itself (a user namespace first where the process is not
//!   root; where the kernel allows neither, this layer is missing and the bash tool's check
//!   after every call is what remains — see [`ProtectedState`]).
//!
//! A protected name that does not exist yet cannot be mounted over; the bash tool notices one
//! created by a command and moves it out of the project ([`ProtectedState::undo_creations`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Names at a project's root that carry policy or name programs: kept read-only for writers.
pub const PROTECTED_AT_ROOT: [&str; 4] = [".cadre", ".pi", ".claude", ".mcp.json"];
/// Entries of a git directory that name programs or policy (hooks, configuration, attributes
/// and excludes): kept read-only; objects, refs and the index stay writable, so commits work.
/// `commondir` would point git at another directory's configuration; `modules` holds the
/// submodules' git directories, each with a configuration and hooks of its own.
pub const PROTECTED_IN_GIT_DIR: [&str; 6] = [
    "config",
    "config.worktree",
    "hooks",
    "info",
    "commondir",
    "modules",
];
/// What each linked worktree's administrative directory (`<git dir>/worktrees/<name>/`) may
/// not gain: its own configuration, or a pointer to another common directory.
const PROTECTED_IN_WORKTREE_ADMIN: [&str; 2] = ["config.worktree", "commondir"];
/// Most linked worktrees whose administrative files are protected.
const MAX_WORKTREES: usize = 256;

/// The option of `__sandbox-exec --writer` that names a path kept read-only.
pub const PROTECT_ARG: &str = "--ro";
/// The option that names a directory the command may write beneath.
pub const WRITABLE_ARG: &str = "--rw";
/// The option that names a writable directory made a mount point of its own, so it cannot be
/// renamed away and replaced (a `.git` moved aside and rebuilt with a configuration of the
/// command's choosing).
pub const PIN_ARG: &str = "--pin";

/// Where a writing child's commands may write, and what inside stays read-only. An empty
/// `writable` means the whole filesystem but the kernel's (the containment of earlier
/// versions, kept for callers that give no boundary).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriterBoundary {
    /// The project (or worktree) root, canonical: whose files a call's receipt compares.
    pub root: Option<PathBuf>,
    /// Canonical directories the command may write beneath.
    pub writable: Vec<PathBuf>,
    /// Canonical paths (existing or not) that stay read-only; existing ones are mounted
    /// read-only, missing ones are watched for by the bash tool.
    pub protected: Vec<PathBuf>,
    /// Writable directories that hold protected paths (a `.git` directory): bind-mounted over
    /// themselves, writable, so that they cannot be renamed away.
    pub pinned: Vec<PathBuf>,
    /// Paths kept read-only wherever they lie (cadre's home): protected, but too large to keep
    /// copies of.
    pub read_only: Vec<PathBuf>,
    /// The task's private temporary directory (its `TMPDIR`), only named: the bash tool
    /// creates it before the first command. Writable, and writable even beneath a protected
    /// path (cadre's home holds it).
    pub scratch: Option<PathBuf>,
}

impl WriterBoundary {
    /// The boundary of a writing child working in `root` (the project, or its worktree):
    /// `root`, its `scratch`, the `extra` directories and, for a worktree, the repository's
    /// common git directory writable;
    /// the protected names at `root`, in its git directory and in the common one, read-only.
    /// `read_only` (cadre's home) stays read-only wherever it lies — a home under the temporary
    /// directory, or a project that contains it, would otherwise be writable. Paths are
    /// canonicalised; a writable one that does not exist is left out.
    pub fn for_project(
        root: &Path,
        scratch: Option<PathBuf>,
        extra: &[PathBuf],
        read_only: &[PathBuf],
    ) -> WriterBoundary {
        let root = real(root);
        let mut writable = vec![root.clone()];
        let mut protected: Vec<PathBuf> = PROTECTED_AT_ROOT.iter().map(|n| root.join(n)).collect();
        let dot_git = root.join(".git");
        protected.push(dot_git.clone());
        let (git_dirs, common) = git_dirs(&dot_git);
        for dir in &git_dirs {
            protected.extend(PROTECTED_IN_GIT_DIR.iter().map(|n| dir.join(n)));
            protected.extend(hooks_paths(&dir.join("config"), &root));
            protected.extend(worktree_admin_files(dir));
        }
        // A git directory outside the project is writable only in cadre's own worktree layout,
        // where the worktree lies inside the repository's common directory: a `.git` file that
        // names any other place (`gitdir: /`, `gitdir: $HOME`) makes nothing writable.
        if let Some(common) = common.filter(|c| root.starts_with(c)) {
            for dir in &git_dirs {
                if dir.starts_with(&common) && !dir.starts_with(&root) {
                    writable.push(dir.clone());
                }
            }
        }
        // The `.git` entry itself is protected only when it is a file (a worktree's pointer
        // to its git directory); a `.git` directory holds objects and refs a commit writes.
        let mut pinned = Vec::new();
        if dot_git.is_dir() {
            protected.retain(|p| p != &dot_git);
            pinned.push(real(&dot_git));
        }
        for dir in extra {
            let dir = real(dir);
            if dir.is_dir() && !writable.iter().any(|w| dir.starts_with(w)) {
                writable.push(dir);
            }
        }
        writable.sort();
        writable.dedup();
        // A protected name that is a link protects where it leads, too, whether that exists
        // yet or not (`write` resolves links; a dangling `.mcp.json -> cfg.json` takes effect
        // once `cfg.json` is written).
        let targets: Vec<PathBuf> = protected.iter().filter_map(|p| link_target(p)).collect();
        protected.extend(targets);
        // Only what the command could write needs keeping read-only.
        protected.retain(|p| writable.iter().any(|w| p.starts_with(w)));
        let mut kept = Vec::new();
        for path in read_only {
            let path = real(path);
            if writable.iter().any(|w| path.starts_with(w)) {
                protected.push(path.clone());
                kept.push(path);
            }
        }
        protected.sort();
        protected.dedup();
        WriterBoundary {
            root: Some(root),
            writable,
            protected,
            pinned,
            read_only: kept,
            scratch,
        }
    }

    /// The `--rw`/`--ro` options that hand this boundary to `__sandbox-exec --writer`.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut out = Vec::new();
        for dir in &self.writable {
            out.push(OsString::from(WRITABLE_ARG));
            out.push(dir.as_os_str().to_owned());
        }
        for path in &self.protected {
            out.push(OsString::from(PROTECT_ARG));
            out.push(path.as_os_str().to_owned());
        }
        for path in &self.pinned {
            out.push(OsString::from(PIN_ARG));
            out.push(path.as_os_str().to_owned());
        }
        if let Some(scratch) = &self.scratch {
            for option in [WRITABLE_ARG, PIN_ARG] {
                out.push(OsString::from(option));
                out.push(scratch.as_os_str().to_owned());
            }
        }
        for path in crate::hidden::hidden() {
            out.push(OsString::from(super::exec::HIDE_ARG));
            out.push(path.into_os_string());
        }
        out
    }

    /// Whether a write to `path` (resolved as far as it exists) is inside the boundary: beneath
    /// a writable directory and not at or beneath a protected path. For the dispatch check of
    /// `write` and `edit`, which run in cadre's own process.
    pub fn allows_write(&self, path: &Path) -> Result<(), String> {
        let target = real_prefix(path);
        let in_scratch = self.scratch.as_ref().is_some_and(|s| target.starts_with(s));
        if in_scratch {
            return Ok(());
        }
        if !self.writable.is_empty() && !self.writable.iter().any(|w| target.starts_with(w)) {
            return Err(format!(
                "{} is outside this task's writable directories ({})",
                path.display(),
                self.writable
                    .iter()
                    .map(|w| w.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        // By name as well as by where it leads: a link made since the boundary was drawn
        // (`.claude -> cfg`) is judged by the protected name it stands at.
        let named = lexical(path);
        if let Some(p) = self
            .protected
            .iter()
            .find(|p| target.starts_with(p) || named.starts_with(p))
        {
            return Err(format!(
                "{} is read-only to a subagent: {} carries git's or a host's configuration",
                path.display(),
                p.display()
            ));
        }
        Ok(())
    }
}

/// The git directories of a `.git` entry — itself when a directory; for a worktree's `.git`
/// file, the directory it points to and that directory's common directory — and the common
/// directory (the `.git` directory itself, or the worktree's).
fn git_dirs(dot_git: &Path) -> (Vec<PathBuf>, Option<PathBuf>) {
    let Ok(meta) = std::fs::symlink_metadata(dot_git) else {
        return (Vec::new(), None);
    };
    if meta.is_dir() {
        let dir = real(dot_git);
        return (vec![dir.clone()], Some(dir));
    }
    if !meta.is_file() || meta.len() > 4096 {
        return (Vec::new(), None);
    }
    let Ok(text) = std::fs::read_to_string(dot_git) else {
        return (Vec::new(), None);
    };
    let Some(pointed) = text.trim().strip_prefix("gitdir:").map(str::trim) else {
        return (Vec::new(), None);
    };
    let base = dot_git.parent().unwrap_or(Path::new("/"));
    let gitdir = real(&base.join(pointed));
    let mut dirs = vec![gitdir.clone()];
    let common = std::fs::read_to_string(gitdir.join("commondir"))
        .ok()
        .map(|c| real(&gitdir.join(c.trim())))
        .filter(|c| c.is_dir());
    if let Some(common) = &common {
        dirs.push(common.clone());
    }
    (dirs, common)
}

/// The administrative files of each linked worktree of the git directory `dir`.
fn worktree_admin_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir.join("worktrees")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .take(MAX_WORKTREES)
        .flat_map(|e| {
            let admin = e.path();
            PROTECTED_IN_WORKTREE_ADMIN.map(|n| admin.join(n))
        })
        .collect()
}

/// Where a link at `path` leads (relative targets from the link's directory), with the part
/// that exists resolved; `None` when `path` is no link.
fn link_target(path: &Path) -> Option<PathBuf> {
    let target = std::fs::read_link(path).ok()?;
    let joined = match path.parent() {
        Some(parent) if target.is_relative() => parent.join(target),
        _ => target,
    };
    Some(real_prefix(&lexical(&joined)))
}

/// `path` with `.` and `..` resolved by name, without touching the file system.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The hook directories a git configuration file names (`core.hooksPath`, e.g. `.husky`):
/// git runs what is there as it runs `.git/hooks`. Read conservatively — every `hooksPath`
/// line of the file, in any section — relative paths taken from the project root.
fn hooks_paths(config: &Path, root: &Path) -> Vec<PathBuf> {
    let Ok(meta) = std::fs::metadata(config) else {
        return Vec::new();
    };
    if !meta.is_file() || meta.len() > 1 << 20 {
        return Vec::new();
    }
    let Ok(text) = std::fs::read_to_string(config) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            let (key, value) = line.split_once('=')?;
            if !key.trim().eq_ignore_ascii_case("hookspath") {
                return None;
            }
            let value = value.trim().trim_matches('"');
            let path = match value.strip_prefix("~/") {
                Some(rest) => PathBuf::from(std::env::var_os("HOME")?).join(rest),
                None => root.join(value),
            };
            (!value.is_empty()).then(|| real(&path))
        })
        .collect()
}

/// The canonical path, or the path as given when it does not exist.
fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The path with its longest existing ancestor canonicalised (links in it followed) and the
/// rest appended: where a write to a path that does not exist yet would land.
fn real_prefix(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut current = path.to_path_buf();
    loop {
        if let Ok(canonical) = std::fs::canonicalize(&current) {
            let mut out = canonical;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (current.file_name(), current.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_owned());
                current = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// What the protected paths were before a command: which existed. After the command, a
/// protected path that appeared is moved out of the project (the kernel layer cannot mount
/// over a name that does not exist yet).
///
/// It also keeps the contents of the existing policy files inside the project (git's
/// configuration and hooks, the hosts' settings; not cadre's home), within [`SNAPSHOT_FILES`]
/// files of at most [`SNAPSHOT_FILE_BYTES`]: where the kernel allows no mount namespace, those
/// files are writable to the command, and after it they are put back
/// ([`ProtectedState::restore_changed`]).
#[derive(Debug, Clone, Default)]
pub struct ProtectedState {
    existed: Vec<(PathBuf, bool)>,
    /// Regular files beneath existing protected paths, with their contents.
    saved: Vec<(PathBuf, Vec<u8>)>,
    /// The protected directories walked for `saved`, to find files added to them.
    dirs: Vec<PathBuf>,
}

/// Most files of policy paths whose contents are kept before a command.
pub const SNAPSHOT_FILES: usize = 512;
/// Largest file whose contents are kept.
pub const SNAPSHOT_FILE_BYTES: u64 = 1 << 20;
/// Deepest directory level walked beneath a protected directory.
const SNAPSHOT_DEPTH: usize = 4;

impl ProtectedState {
    pub fn capture(boundary: &WriterBoundary) -> ProtectedState {
        let mut state = ProtectedState {
            existed: boundary
                .protected
                .iter()
                .map(|p| (p.clone(), present(p)))
                .collect(),
            ..ProtectedState::default()
        };
        let policy = boundary
            .protected
            .iter()
            .filter(|p| !boundary.read_only.iter().any(|h| p.starts_with(h)));
        for path in policy {
            state.save(path, 0);
        }
        state
    }

    fn save(&mut self, path: &Path, depth: usize) {
        if self.saved.len() >= SNAPSHOT_FILES {
            return;
        }
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return;
        };
        if meta.is_file() && meta.len() <= SNAPSHOT_FILE_BYTES {
            if let Ok(bytes) = std::fs::read(path) {
                self.saved.push((path.to_path_buf(), bytes));
            }
        } else if meta.is_dir() && depth < SNAPSHOT_DEPTH {
            self.dirs.push(path.to_path_buf());
            let Ok(entries) = std::fs::read_dir(path) else {
                return;
            };
            for entry in entries.flatten() {
                self.save(&entry.path(), depth + 1);
            }
        }
    }

    /// Put back every saved policy file the command changed or removed, and move out the files
    /// it added to a protected directory; returns what was done. With the read-only mounts in
    /// place this finds nothing; without them it is what keeps git's configuration and hooks.
    pub fn restore_changed(&self, quarantine: &Path) -> Vec<String> {
        let mut notes = Vec::new();
        for (path, bytes) in &self.saved {
            let same = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
                && std::fs::read(path).is_ok_and(|now| now == *bytes);
            if same {
                continue;
            }
            let _ = remove_any(path);
            let restored = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(path, bytes));
            notes.push(match restored {
                Ok(()) => format!(
                    "{} is read-only to a subagent; the command's change was undone",
                    path.display()
                ),
                Err(e) => format!(
                    "{} is read-only to a subagent; the command changed it and it could not be \
                     put back: {e}",
                    path.display()
                ),
            });
        }
        for dir in &self.dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let known = self.saved.iter().any(|(p, _)| *p == path) || self.dirs.contains(&path);
                if !known && std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_dir()) {
                    notes.extend(move_out(&path, quarantine, "added"));
                }
            }
        }
        notes
    }

    /// Move every protected path that did not exist before and does now into `quarantine`
    /// (created as needed); returns what was moved where (or could not be, with why).
    pub fn undo_creations(&self, quarantine: &Path) -> Vec<String> {
        let mut notes = Vec::new();
        for (path, existed) in &self.existed {
            if *existed || !present(path) {
                continue;
            }
            // The entry itself, never where it leads: a link the command made to a file
            // elsewhere (`.mcp.json -> ~/.cadre/auth.json`) is moved, its target left alone.
            // (The target of a committed link is a protected path of its own.)
            notes.extend(move_out(path, quarantine, "created"));
        }
        notes
    }
}

/// Whether a protected path is there: the entry itself (a link counts as there, wherever it
/// leads).
fn present(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// Move `path` into `quarantine` (or remove it where it cannot be moved); a note saying so.
fn move_out(path: &Path, quarantine: &Path, how: &str) -> Option<String> {
    let name = path
        .to_string_lossy()
        .trim_start_matches('/')
        .replace('/', "%");
    let target = quarantine.join(format!("{}-{name}", uuid::Uuid::now_v7().simple()));
    let moved = std::fs::create_dir_all(quarantine)
        .and_then(|()| std::fs::rename(path, &target))
        .or_else(|_| remove_any(path));
    Some(match moved {
        Ok(()) if target.exists() => format!(
            "{} was {how} by the command and is read-only to a subagent; it was moved to {}",
            path.display(),
            target.display()
        ),
        Ok(()) => format!(
            "{} was {how} by the command and is read-only to a subagent; it was removed",
            path.display()
        ),
        Err(e) => format!(
            "{} was {how} by the command and is read-only to a subagent, but could not be \
             removed: {e}",
            path.display()
        ),
    })
}

fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path).or_else(|e| {
            // A directory the command made unwritable (`chmod 555`) is its own, so its modes
            // may be opened up again to remove it.
            if e.kind() != std::io::ErrorKind::PermissionDenied {
                return Err(e);
            }
            open_up(path, 0);
            std::fs::remove_dir_all(path)
        }),
        Ok(_) => std::fs::remove_file(path),
        Err(e) => Err(e),
    }
}

/// Make the directories beneath `dir` (not following links) writable and searchable by
/// their owner, so what they hold can be removed; bounded in depth.
fn open_up(dir: &Path, depth: usize) {
    use std::os::unix::fs::PermissionsExt;
    if depth > 64 {
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let mode = meta.permissions().mode() | 0o700;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            open_up(&entry.path(), depth + 1);
        }
    }
}

/// Mount each existing path of `protected` read-only over itself in a new, private mount
/// namespace (after a new user namespace where a plain one is not allowed). Must run while the
/// process is single-threaded, before capabilities are dropped. `Ok(false)`: the kernel
/// allows no namespace here, nothing was changed.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(super) fn mount_read_only(protected: &[PathBuf], pinned: &[PathBuf]) -> std::io::Result<bool> {
    use std::ffi::CString;
    use std::io::Error;
    use std::os::unix::ffi::OsStrExt;

    let exists =
        |p: &&PathBuf| std::fs::symlink_metadata(p).is_ok_and(|m| !m.file_type().is_symlink());
    let existing: Vec<&PathBuf> = protected.iter().filter(exists).collect();
    let pinned: Vec<&PathBuf> = pinned.iter().filter(exists).collect();
    // Pins only keep protected paths in place: without any, nothing needs a namespace.
    if existing.is_empty() {
        return Ok(true);
    }
    // SAFETY: getuid/getgid only read this process's credentials.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    // SAFETY: unshare changes only this (single-threaded) process's namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
        let first = Error::last_os_error();
        if first.raw_os_error() != Some(libc::EPERM) {
            return Err(first);
        }
        // SAFETY: as above.
        if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
            let e = Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EPERM) | Some(libc::EINVAL) | Some(libc::ENOSPC) => Ok(false),
                _ => Err(e),
            };
        }
        // The same ids inside as outside: files keep their owners as the command sees them.
        std::fs::write("/proc/self/setgroups", "deny")?;
        std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
        std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    }
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|e| Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let root = c(Path::new("/"))?;
    // SAFETY: mount with NUL-terminated strings that live across the call; changes only this
    // process's (new) mount namespace: nothing propagates back to the user's.
    if unsafe {
        libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    } != 0
    {
        return Err(Error::last_os_error());
    }
    let bind = |p: &CString| {
        // SAFETY: as above; a bind mount of the path over itself.
        if unsafe {
            libc::mount(
                p.as_ptr(),
                p.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            )
        } != 0
        {
            return Err(Error::last_os_error());
        }
        Ok(())
    };
    // Pins first where they hold protected paths (`.git`): the read-only mounts then stand on
    // them. A pin beneath a protected path (the scratch directory in cadre's home) comes after
    // the read-only mount above it, as a writable mount of its own.
    let (under, over): (Vec<&PathBuf>, Vec<&PathBuf>) = pinned
        .into_iter()
        .partition(|pin| existing.iter().any(|p| pin.starts_with(p) && *pin != *p));
    for path in over {
        bind(&c(path)?)?;
    }
    for path in existing {
        let p = c(path)?;
        bind(&p)?;
        // A remount in a user namespace must keep the flags the outer mount locked.
        // SAFETY: statvfs writes into a zeroed struct of its own type.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `p` is NUL-terminated and `st` is a valid out-pointer.
        if unsafe { libc::statvfs(p.as_ptr(), &mut st) } != 0 {
            return Err(Error::last_os_error());
        }
        let mut flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY;
        for (st_flag, ms_flag) in [
            (libc::ST_NOSUID, libc::MS_NOSUID),
            (libc::ST_NODEV, libc::MS_NODEV),
            (libc::ST_NOEXEC, libc::MS_NOEXEC),
            (libc::ST_NOATIME, libc::MS_NOATIME),
            (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
            (libc::ST_RELATIME, libc::MS_RELATIME),
        ] {
            if st.f_flag & st_flag != 0 {
                flags |= ms_flag;
            }
        }
        // SAFETY: as above; makes the bind mount read-only.
        if unsafe {
            libc::mount(
                std::ptr::null(),
                p.as_ptr(),
                std::ptr::null(),
                flags,
                std::ptr::null(),
            )
        } != 0
        {
            return Err(Error::last_os_error());
        }
    }
    for path in under {
        bind(&c(path)?)?;
    }
    Ok(true)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn a_project_s_policy_files_are_protected_and_its_tree_writable() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        let temp = tmp.path().join("tmp");
        std::fs::create_dir_all(&temp).unwrap();
        let home = temp.join("cadre-home");
        std::fs::create_dir_all(&home).unwrap();
        let b = WriterBoundary::for_project(
            &root,
            None,
            std::slice::from_ref(&temp),
            std::slice::from_ref(&home),
        );
        assert!(b.protected.contains(&real(&home)), "{b:?}");
        assert!(b.allows_write(&home.join("settings.json")).is_err());
        let root = real(&root);
        assert_eq!(b.writable, vec![root.clone(), real(&temp)]);
        for name in [
            ".cadre",
            ".mcp.json",
            ".git/config",
            ".git/hooks",
            ".git/info",
        ] {
            assert!(b.protected.contains(&root.join(name)), "{name}: {b:?}");
        }
        assert!(!b.protected.contains(&root.join(".git")));
        assert!(b.allows_write(&root.join("src/new.rs")).is_ok());
        assert!(b.allows_write(&root.join(".git/objects/ab")).is_ok());
        assert!(b.allows_write(&root.join(".git/hooks/pre-commit")).is_err());
        assert!(b.allows_write(&root.join(".mcp.json")).is_err());
        assert!(b.allows_write(&root.join(".claude/settings.json")).is_err());
        assert!(b.allows_write(&tmp.path().join("elsewhere/x")).is_err());
        // A link inside the project that leads out is judged by where it leads.
        std::os::unix::fs::symlink(tmp.path(), root.join("out")).unwrap();
        assert!(b.allows_write(&root.join("out/secret")).is_err());
    }

    #[test]
    fn hook_directories_the_configuration_names_and_linked_policy_files_are_protected() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join(".husky")).unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\thooksPath = .husky\n\tbare = false\n",
        )
        .unwrap();
        let b = WriterBoundary::for_project(&root, None, &[], &[]);
        let root = real(&root);
        assert!(b.protected.contains(&root.join(".husky")), "{b:?}");
        assert!(b.allows_write(&root.join(".husky/pre-commit")).is_err());
        // A committed link whose target the command creates: the target is moved out.
        std::os::unix::fs::symlink(".husky", root.join(".claude")).unwrap();
        let b2 = WriterBoundary::for_project(&root, None, &[], &[]);
        assert!(b2.allows_write(&root.join(".claude/x")).is_err());
        // A committed dangling link: its target is protected before it exists, and the
        // target the command creates is moved out.
        std::os::unix::fs::symlink("cfg.json", root.join(".mcp.json")).unwrap();
        let b3 = WriterBoundary::for_project(&root, None, &[], &[]);
        assert!(b3.allows_write(&root.join("cfg.json")).is_err(), "{b3:?}");
        let before = ProtectedState::capture(&b3);
        std::fs::write(root.join("cfg.json"), "{}").unwrap();
        let notes = before.undo_creations(&tmp.path().join("q"));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(!root.join("cfg.json").exists());
    }

    /// A protected name the command makes as a link to a file elsewhere: the link is moved
    /// out, and the file it leads to stays where it is, untouched.
    #[test]
    fn a_link_made_at_a_protected_name_is_moved_never_its_target() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        let victim = tmp.path().join("auth.json");
        std::fs::write(&victim, "key").unwrap();
        let b = WriterBoundary::for_project(&root, None, &[], &[]);
        let before = ProtectedState::capture(&b);
        std::os::unix::fs::symlink(&victim, root.join(".mcp.json")).unwrap();
        let notes = before.undo_creations(&tmp.path().join("q"));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "key");
        assert!(std::fs::symlink_metadata(root.join(".mcp.json")).is_err());
        // `write` through a link made since the boundary was drawn is judged by its name.
        std::os::unix::fs::symlink("cfg", root.join(".claude")).unwrap();
        assert!(b.allows_write(&root.join(".claude/settings.json")).is_err());
    }

    /// A `.git` file that names a directory outside the project makes nothing writable; cadre's
    /// own layout (the worktree inside the common directory) makes the common directory so.
    #[test]
    fn only_cadre_s_worktree_layout_makes_a_git_dir_outside_writable() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join(".git"), "gitdir: /\n").unwrap();
        let b = WriterBoundary::for_project(&root, None, &[], &[]);
        assert_eq!(b.writable, vec![real(&root)], "{b:?}");
        std::fs::write(
            root.join(".git"),
            format!("gitdir: {}\n", tmp.path().display()),
        )
        .unwrap();
        let b = WriterBoundary::for_project(&root, None, &[], &[]);
        assert_eq!(b.writable, vec![real(&root)], "{b:?}");
    }

    /// A directory the command made at a protected name and then made unwritable is still
    /// moved out or removed.
    #[test]
    fn an_unwritable_directory_at_a_protected_name_is_still_removed() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        let b = WriterBoundary::for_project(&root, None, &[], &[]);
        let before = ProtectedState::capture(&b);
        let claude = root.join(".claude");
        std::fs::create_dir_all(claude.join("inner")).unwrap();
        std::fs::write(claude.join("inner/settings.json"), "{}").unwrap();
        std::fs::set_permissions(claude.join("inner"), std::fs::Permissions::from_mode(0o555))
            .unwrap();
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o555)).unwrap();
        // Across devices a move fails and the directory is removed instead.
        assert!(remove_any(&claude).is_ok());
        assert!(std::fs::symlink_metadata(&claude).is_err());
        let _ = before;
    }

    /// Where no read-only mount could be made, the policy files a command changed, removed or
    /// added to are put back after it.
    #[test]
    fn without_mounts_changed_policy_files_are_put_back() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
        let b = WriterBoundary::for_project(&root, None, &[], &[]);
        let before = ProtectedState::capture(&b);
        let root = real(&root);
        std::fs::write(root.join(".git/config"), "[core]\n\tfsmonitor = evil\n").unwrap();
        std::fs::remove_file(root.join(".git/hooks/pre-commit.sample")).unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit"), "evil").unwrap();
        let notes = before.restore_changed(&tmp.path().join("q"));
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config")).unwrap(),
            "[core]\n\tbare = false\n"
        );
        assert!(root.join(".git/hooks/pre-commit.sample").exists());
        assert!(!root.join(".git/hooks/pre-commit").exists());
        assert!(before.restore_changed(&tmp.path().join("q")).is_empty());
    }

    #[test]
    fn a_worktree_s_git_dirs_are_found_through_its_git_file() {
        let tmp = tempfile::tempdir().unwrap();
        let main_git = tmp.path().join("main/.git");
        let wt_git = main_git.join("worktrees/w1");
        std::fs::create_dir_all(&wt_git).unwrap();
        std::fs::write(wt_git.join("commondir"), "../..\n").unwrap();
        // cadre's layout: the worktree lies inside the common directory.
        let wt = main_git.join("cadre-worktrees/w1");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", wt_git.display())).unwrap();
        let b = WriterBoundary::for_project(&wt, None, &[], &[]);
        assert!(b.writable.contains(&real(&main_git)), "{b:?}");
        assert!(b.protected.contains(&real(&main_git).join("config")));
        assert!(b.protected.contains(&real(&wt_git).join("config.worktree")));
        assert!(b.protected.contains(&real(&wt).join(".git")));
        assert!(
            b.protected
                .contains(&real(&main_git).join("worktrees/w1/commondir"))
        );
        assert!(b.protected.contains(&real(&main_git).join("commondir")));
    }

    #[test]
    fn protected_names_a_command_created_are_moved_out() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        let b = WriterBoundary::for_project(&root, None, &[], &[]);
        let before = ProtectedState::capture(&b);
        std::fs::write(root.join(".mcp.json"), "{}").unwrap();
        std::fs::write(root.join(".claude/settings.json"), "{}").unwrap();
        let q = tmp.path().join("quarantine");
        let notes = before.undo_creations(&q);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(!root.join(".mcp.json").exists());
        assert_eq!(std::fs::read_dir(&q).unwrap().count(), 1);
        // An existing protected directory is the kernel layer's to keep read-only.
        assert!(root.join(".claude/settings.json").exists());
    }

    #[test]
    fn the_boundary_goes_to_sandbox_exec_as_options() {
        let b = WriterBoundary {
            root: None,
            writable: vec![PathBuf::from("/p")],
            protected: vec![PathBuf::from("/p/.git/config")],
            pinned: vec![PathBuf::from("/p/.git")],
            read_only: vec![],
            scratch: None,
        };
        // The process's hidden paths follow as `--hide` options (other tests hide some).
        assert_eq!(
            b.to_args()[..6],
            ["--rw", "/p", "--ro", "/p/.git/config", "--pin", "/p/.git"].map(OsString::from)
        );
    }
}
