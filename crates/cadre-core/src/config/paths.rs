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

    /// Create the home directory and its sessions, tasks, agents and skills directories.
    pub fn ensure_dirs(&self) -> Result<(), ConfigError> {
        for dir in [
            self.root.clone(),
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
