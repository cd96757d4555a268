//! Skills a role preloads (SPEC T8): `<dir>/<name>/SKILL.md` in the Pi / agentskills format
//! (YAML frontmatter with `name` and `description`, then Markdown instructions).
//!
//! Search order, first match wins — the project before the user, as for roles, so a trusted
//! project can pin its own version of a skill:
//!
//! 1. project, only when trusted, from the working directory up to the project root (nearest
//!    first), in each directory `.cadre/skills`, `.pi/skills`, `.claude/skills`;
//! 2. user: `CADRE_HOME/skills`, `~/.pi/agent/skills`, `~/.claude/skills`.
//!
//! A skill that is named but not found, or whose `SKILL.md` is unusable, fails the launch
//! ([`SkillError`]) — a role never runs without the instructions it asked for.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_yaml_ng::Value;

use super::discover::project_dirs;
use super::parse::{is_valid_skill_name, parse_mapping, split_frontmatter};
use crate::config::CadreHome;

/// Largest `SKILL.md`, in bytes: it goes into a prompt whole.
pub const MAX_SKILL_BYTES: usize = 256 * 1024;

/// A loaded skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The `SKILL.md` file; its directory holds any files the instructions refer to.
    pub path: PathBuf,
    /// The instructions: the body after the frontmatter.
    pub content: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("skill `{name}` not found; searched: {}", list(searched))]
    Missing {
        name: String,
        searched: Vec<PathBuf>,
    },
    #[error("skill `{name}` is not a valid skill name")]
    BadName { name: String },
    #[error("skill `{name}` at {}: {reason}", path.display())]
    Invalid {
        name: String,
        path: PathBuf,
        reason: String,
    },
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The skill directories to search, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillSearch {
    pub dirs: Vec<PathBuf>,
}

impl SkillSearch {
    /// The standard search path. `home_dir` is the user's home (for `~/.pi`, `~/.claude`);
    /// project directories are included only when `trusted`.
    pub fn new(
        cadre_home: &CadreHome,
        home_dir: Option<&Path>,
        cwd: &Path,
        trusted: bool,
    ) -> SkillSearch {
        let mut dirs = Vec::new();
        if trusted {
            for dir in project_dirs(cwd).iter().rev() {
                dirs.push(dir.join(".cadre/skills"));
                dirs.push(dir.join(".pi/skills"));
                dirs.push(dir.join(".claude/skills"));
            }
        }
        dirs.push(cadre_home.skills_dir());
        if let Some(home) = home_dir {
            dirs.push(home.join(".pi/agent/skills"));
            dirs.push(home.join(".claude/skills"));
        }
        SkillSearch { dirs }
    }

    /// Find and load one skill.
    pub fn load(&self, name: &str) -> Result<Skill, SkillError> {
        // The name becomes a path component: never let it climb out of the skill directory.
        if !is_valid_skill_name(name) {
            return Err(SkillError::BadName {
                name: name.to_string(),
            });
        }
        for dir in &self.dirs {
            let path = dir.join(name).join("SKILL.md");
            match std::fs::metadata(&path) {
                Ok(m) if m.is_file() => return read_skill(name, &path),
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(SkillError::Invalid {
                        name: name.to_string(),
                        path,
                        reason: format!("cannot read: {e}"),
                    });
                }
            }
        }
        Err(SkillError::Missing {
            name: name.to_string(),
            searched: self.dirs.clone(),
        })
    }
}

/// Load every named skill, in order; the first missing or invalid one is the error.
pub fn load_skills(names: &[String], search: &SkillSearch) -> Result<Vec<Skill>, SkillError> {
    names.iter().map(|n| search.load(n)).collect()
}

fn read_skill(name: &str, path: &Path) -> Result<Skill, SkillError> {
    let invalid = |reason: String| SkillError::Invalid {
        name: name.to_string(),
        path: path.to_path_buf(),
        reason,
    };
    let file = std::fs::File::open(path).map_err(|e| invalid(format!("cannot read: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_SKILL_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| invalid(format!("cannot read: {e}")))?;
    if bytes.len() > MAX_SKILL_BYTES {
        return Err(invalid(format!(
            "larger than the {MAX_SKILL_BYTES}-byte limit"
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| invalid("not valid UTF-8".to_string()))?;
    let (yaml, body) = split_frontmatter(&text).map_err(|e| invalid(e.to_string()))?;
    let map = parse_mapping(yaml).map_err(|e| invalid(e.to_string()))?;
    // Other keys (license, allowed-tools, metadata, …) belong to the agentskills format and are
    // not instructions to cadre; only name and description are read.
    let field = |key: &str| {
        map.iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| match v {
                Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
                _ => None,
            })
    };
    let declared =
        field("name").ok_or_else(|| invalid("no `name` in the frontmatter".to_string()))?;
    if declared != name {
        return Err(invalid(format!(
            "declares name `{declared}`; it must match its directory `{name}`"
        )));
    }
    let description = field("description")
        .ok_or_else(|| invalid("no `description` in the frontmatter".to_string()))?;
    Ok(Skill {
        name: declared,
        description,
        path: path.to_path_buf(),
        content: body.trim().to_string(),
    })
}
