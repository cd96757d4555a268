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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    struct Fixture {
        _tmp: tempfile::TempDir,
        home: PathBuf,
        cadre: CadreHome,
        root: PathBuf,
        cwd: PathBuf,
    }

    fn fixture() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        let cwd = root.join("sub");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        Fixture {
            home: tmp.path().join("home"),
            cadre: CadreHome::new(tmp.path().join("cadre")),
            root,
            cwd,
            _tmp: tmp,
        }
    }

    fn skill(dir: &Path, name: &str, body: &str) -> PathBuf {
        let path = dir.join(name).join("SKILL.md");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            format!("---\nname: {name}\ndescription: Skill {name}.\nlicense: MIT\n---\n\n{body}\n"),
        )
        .unwrap();
        path
    }

    impl Fixture {
        fn search(&self, trusted: bool) -> SkillSearch {
            SkillSearch::new(&self.cadre, Some(&self.home), &self.cwd, trusted)
        }
    }

    #[test]
    fn finds_a_user_skill() {
        let f = fixture();
        let path = skill(&f.cadre.skills_dir(), "review", "Check everything.");
        let s = f.search(true).load("review").unwrap();
        assert_eq!(s.name, "review");
        assert_eq!(s.description, "Skill review.");
        assert_eq!(s.path, path);
        assert_eq!(s.content, "Check everything.");
    }

    #[test]
    fn search_order_project_nearest_first_then_user() {
        let f = fixture();
        let expect = vec![
            f.cwd.join(".cadre/skills"),
            f.cwd.join(".pi/skills"),
            f.cwd.join(".claude/skills"),
            f.root.join(".cadre/skills"),
            f.root.join(".pi/skills"),
            f.root.join(".claude/skills"),
            f.cadre.skills_dir(),
            f.home.join(".pi/agent/skills"),
            f.home.join(".claude/skills"),
        ];
        assert_eq!(f.search(true).dirs, expect);
        // Untrusted: only the user directories.
        assert_eq!(f.search(false).dirs, expect[6..].to_vec());
        let no_home = SkillSearch::new(&f.cadre, None, &f.cwd, false);
        assert_eq!(no_home.dirs, vec![f.cadre.skills_dir()]);
    }

    #[test]
    fn project_skills_win_only_when_trusted() {
        let f = fixture();
        skill(&f.cadre.skills_dir(), "s", "user");
        skill(&f.root.join(".pi/skills"), "s", "project root");
        assert_eq!(f.search(true).load("s").unwrap().content, "project root");
        assert_eq!(f.search(false).load("s").unwrap().content, "user");
        skill(&f.cwd.join(".claude/skills"), "s", "project cwd");
        assert_eq!(f.search(true).load("s").unwrap().content, "project cwd");
        // Project-only skill is missing when untrusted.
        skill(&f.root.join(".cadre/skills"), "p", "x");
        assert!(f.search(true).load("p").is_ok());
        assert!(matches!(
            f.search(false).load("p"),
            Err(SkillError::Missing { .. })
        ));
    }

    #[test]
    fn pi_and_claude_user_skills_are_found() {
        let f = fixture();
        skill(&f.home.join(".pi/agent/skills"), "pi-skill", "pi");
        skill(&f.home.join(".claude/skills"), "cc-skill", "cc");
        let s = f.search(false);
        assert_eq!(s.load("pi-skill").unwrap().content, "pi");
        assert_eq!(s.load("cc-skill").unwrap().content, "cc");
    }

    #[test]
    fn missing_skill_names_the_searched_directories() {
        let f = fixture();
        match f.search(true).load("nope") {
            Err(SkillError::Missing { name, searched }) => {
                assert_eq!(name, "nope");
                assert_eq!(searched, f.search(true).dirs);
            }
            other => panic!("{other:?}"),
        }
        let e = f.search(false).load("nope").unwrap_err().to_string();
        assert!(e.starts_with("skill `nope` not found; searched: "), "{e}");
    }

    #[test]
    fn load_skills_keeps_order_and_fails_on_the_first_missing() {
        let f = fixture();
        skill(&f.cadre.skills_dir(), "a", "A");
        skill(&f.cadre.skills_dir(), "b", "B");
        let s = f.search(true);
        let loaded = load_skills(&["b".into(), "a".into()], &s).unwrap();
        assert_eq!(
            loaded.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["b", "a"]
        );
        assert!(load_skills(&[], &s).unwrap().is_empty());
        assert!(matches!(
            load_skills(&["a".into(), "zz".into(), "b".into()], &s),
            Err(SkillError::Missing { name, .. }) if name == "zz"
        ));
    }

    #[test]
    fn unsafe_names_never_touch_the_file_system() {
        let f = fixture();
        for name in ["../cadre", "a/b", ".", "..", "", ".hidden"] {
            assert!(
                matches!(f.search(true).load(name), Err(SkillError::BadName { .. })),
                "{name}"
            );
        }
    }

    #[test]
    fn invalid_skill_files() {
        let f = fixture();
        let dir = f.cadre.skills_dir();
        let write = |name: &str, text: &str| {
            let p = dir.join(name).join("SKILL.md");
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
        };
        write("nofront", "just instructions");
        write("mismatch", "---\nname: other\ndescription: d\n---\n");
        write("nodesc", "---\nname: nodesc\n---\n");
        write("noname", "---\ndescription: d\n---\n");
        write("badyaml", "---\nname: [\n---\n");
        write(
            "huge",
            &format!(
                "---\nname: huge\ndescription: d\n---\n{}",
                "x".repeat(MAX_SKILL_BYTES)
            ),
        );
        for (name, needle) in [
            ("nofront", "frontmatter"),
            ("mismatch", "must match its directory"),
            ("nodesc", "no `description`"),
            ("noname", "no `name`"),
            ("badyaml", "invalid YAML"),
            ("huge", "limit"),
        ] {
            match f.search(false).load(name) {
                Err(SkillError::Invalid { reason, path, .. }) => {
                    assert!(reason.contains(needle), "{name}: {reason}");
                    assert!(path.ends_with(format!("{name}/SKILL.md")));
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        // A directory without SKILL.md is not the skill; keep searching, then report missing.
        std::fs::create_dir_all(dir.join("empty")).unwrap();
        assert!(matches!(
            f.search(false).load("empty"),
            Err(SkillError::Missing { .. })
        ));
    }
}
