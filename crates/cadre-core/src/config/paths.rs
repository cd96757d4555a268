//! Where cadre keeps its files: the user directory (`CADRE_HOME`, default `~/.cadre`) and the
//! project (the nearest git root, else the working directory) with its `.cadre/` directory.

use std::path::{Path, PathBuf};

use cadre_llm::registry::{Env, ProcessEnv, home_dir};

use super::ConfigError;

/// The user directory and the well-known paths inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CadreHome {
    root: PathBuf,
}

impl CadreHome {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        CadreHome { root: root.into() }
    }

    /// `$CADRE_HOME`, else `~/.cadre`, from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_env_with(&ProcessEnv)
    }

    /// As [`CadreHome::from_env`], reading variables from `env`.
    pub fn from_env_with(env: &dyn Env) -> Result<Self, ConfigError> {
        if let Some(dir) = env.var("CADRE_HOME") {
            return Ok(Self::new(dir));
        }
        home_dir(env)
            .map(|h| Self::new(h.join(".cadre")))
            .ok_or(ConfigError::NoHome)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    pub fn tasks_dir(&self) -> PathBuf {
        self.root.join("tasks")
    }

    pub fn agents_dir(&self) -> PathBuf {
        self.root.join("agents")
    }

    pub fn skills_dir(&self) -> PathBuf {
        self.root.join("skills")
    }

    pub fn models_json(&self) -> PathBuf {
        self.root.join("models.json")
    }

    pub fn settings_json(&self) -> PathBuf {
        self.root.join("settings.json")
    }

    pub fn trust_json(&self) -> PathBuf {
        self.root.join("trust.json")
    }

    /// Make the home directory private to its user, at start, before anything is written in
    /// it: it holds sessions, task outputs and logs with whatever the agents read (a `.env`,
    /// a key), and every local user can otherwise list and read them. A missing home is
    /// created `0700` (its missing parents as usual); an existing one that this user owns and
    /// that others may enter or read is changed to `0700`, and the returned note says so. A
    /// home owned by someone else, or that is not a directory, is left as it is: what is
    /// written in it later fails with its own error.
    pub fn ensure_private(&self) -> Result<Option<String>, ConfigError> {
        let meta = match std::fs::metadata(&self.root) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match create_private_dir(&self.root) {
                    Ok(()) => return Ok(None),
                    // Made meanwhile by another process: judged as any existing home.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        std::fs::metadata(&self.root).map_err(|source| ConfigError::Io {
                            path: self.root.clone(),
                            source,
                        })?
                    }
                    Err(source) => {
                        return Err(ConfigError::Write {
                            path: self.root.clone(),
                            source,
                        });
                    }
                }
            }
            Err(_) => return Ok(None),
        };
        Ok(tighten(&self.root, &meta))
    }

    /// Create the home directory (private, as [`CadreHome::ensure_private`]) and its sessions,
    /// tasks, agents and skills directories.
    pub fn ensure_dirs(&self) -> Result<(), ConfigError> {
        self.ensure_private()?;
        for dir in [
            self.sessions_dir(),
            self.tasks_dir(),
            self.agents_dir(),
            self.skills_dir(),
        ] {
            std::fs::create_dir_all(&dir).map_err(|source| ConfigError::Write {
                path: dir.clone(),
                source,
            })?;
        }
        Ok(())
    }
}

/// `dir` created with mode 0700 (less the umask), its missing parents as `create_dir_all`
/// makes them.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(parent) = dir.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::DirBuilder::new().mode(0o700).create(dir)
}

/// An existing home this user owns made 0700 when others have any access to it; a note on
/// what was done, or on why it could not be.
fn tighten(root: &Path, meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let mode = meta.mode() & 0o7777;
    if !meta.is_dir() || mode & 0o077 == 0 || meta.uid() != effective_uid() {
        return None;
    }
    let shown = root.display();
    Some(
        match std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700)) {
            Ok(()) => format!(
                "note: {shown} (CADRE_HOME) was open to other users (mode {mode:04o}); it is now \
                 0700, since its sessions and task outputs hold what the agents read"
            ),
            Err(e) => format!(
                "warning: {shown} (CADRE_HOME) is open to other users (mode {mode:04o}) and \
                 could not be made 0700: {e}"
            ),
        },
    )
}

#[allow(unsafe_code)]
fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The project root: the nearest ancestor of `cwd` (itself included) holding `.git` — a
/// directory, or a file as in worktrees and submodules — else `cwd`.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// The project's cadre directory, `<root>/.cadre`.
pub fn project_config_dir(project_root: &Path) -> PathBuf {
    project_root.join(".cadre")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use cadre_llm::registry::MapEnv;

    use super::*;

    #[test]
    fn cadre_home_from_env_prefers_cadre_home() {
        let env = MapEnv::new().with("CADRE_HOME", "/c").with("HOME", "/h");
        assert_eq!(
            CadreHome::from_env_with(&env).unwrap().root(),
            Path::new("/c")
        );
        let env = MapEnv::new().with("HOME", "/h");
        let home = CadreHome::from_env_with(&env).unwrap();
        assert_eq!(home.root(), Path::new("/h/.cadre"));
        assert_eq!(home.sessions_dir(), Path::new("/h/.cadre/sessions"));
        assert_eq!(home.tasks_dir(), Path::new("/h/.cadre/tasks"));
        assert_eq!(home.agents_dir(), Path::new("/h/.cadre/agents"));
        assert_eq!(home.skills_dir(), Path::new("/h/.cadre/skills"));
        assert_eq!(home.models_json(), Path::new("/h/.cadre/models.json"));
        assert_eq!(home.settings_json(), Path::new("/h/.cadre/settings.json"));
        assert_eq!(home.trust_json(), Path::new("/h/.cadre/trust.json"));
        assert!(matches!(
            CadreHome::from_env_with(&MapEnv::new()),
            Err(ConfigError::NoHome)
        ));
    }

    fn mode_of(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_new_home_is_private_and_an_open_one_is_made_private() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        // Created 0700 whatever the umask would give a plain directory (0755 with 022).
        let home = CadreHome::new(tmp.path().join("parent/home"));
        assert_eq!(home.ensure_private().unwrap(), None);
        assert_eq!(mode_of(home.root()), 0o700);
        // An existing 0755 home, as earlier versions made it, is tightened with a note.
        let old = CadreHome::new(tmp.path().join("old"));
        std::fs::create_dir(old.root()).unwrap();
        std::fs::set_permissions(old.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let note = old.ensure_private().unwrap().unwrap();
        assert!(
            note.starts_with("note: ") && note.contains("0755"),
            "{note}"
        );
        assert_eq!(mode_of(old.root()), 0o700);
        // Once private, nothing more is said.
        assert_eq!(old.ensure_private().unwrap(), None);
        // ensure_dirs makes a private home too.
        let laid = CadreHome::new(tmp.path().join("laid"));
        laid.ensure_dirs().unwrap();
        assert_eq!(mode_of(laid.root()), 0o700);
    }

    #[test]
    fn ensure_dirs_creates_the_layout() {
        let tmp = tempfile::tempdir().unwrap();
        let home = CadreHome::new(tmp.path().join("home"));
        home.ensure_dirs().unwrap();
        home.ensure_dirs().unwrap(); // idempotent
        for d in [
            home.sessions_dir(),
            home.tasks_dir(),
            home.agents_dir(),
            home.skills_dir(),
        ] {
            assert!(d.is_dir(), "{}", d.display());
        }
    }

    #[test]
    fn project_root_finds_git_dir_or_file() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let deep = repo.join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        // No .git anywhere under the temp dir: cwd itself (assuming the temp dir is not in git).
        let outside = tmp.path().join("plain");
        std::fs::create_dir_all(&outside).unwrap();
        if project_root(&outside) != outside {
            // The temp dir lives inside a git checkout; the rest still holds.
            assert!(project_root(&outside).join(".git").exists());
        }

        std::fs::create_dir_all(repo.join(".git")).unwrap();
        assert_eq!(project_root(&deep), repo);
        assert_eq!(project_root(&repo), repo);

        // A worktree/submodule has a `.git` file; the nearest one wins.
        let sub = repo.join("a");
        std::fs::write(sub.join(".git"), "gitdir: ../.git/modules/a\n").unwrap();
        assert_eq!(project_root(&deep), sub);
        assert_eq!(project_config_dir(&sub), sub.join(".cadre"));
    }
}
