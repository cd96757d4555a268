//! The directories a read-only child may write (S2, S7): its scratch directory inside
//! `CADRE_HOME` and, with `allowPlanFiles`, the project's `.cadre/plans/`.
//!
//! A repository is hostile: it can commit `.cadre/plans -> /` or `.cadre -> ~`. So every such
//! path is resolved component by component without following links, must lie where it
//! belongs, and is handed to the sandbox in canonical form (which opens it again without
//! following links, closing the race with a writer that swaps in a link afterwards). In an
//! untrusted project cadre creates nothing: an existing real plans directory is used, a
//! missing one is simply not offered.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Under CADRE_HOME: the parent of read-only tasks' private scratch directories.
pub(crate) const SCRATCH_DIR: &str = "scratch";
/// Under the project root: where a role with `allowPlanFiles` may write.
pub(crate) const PLANS_DIR: [&str; 2] = [".cadre", "plans"];

/// The canonical parent of scratch directories: `<CADRE_HOME>/scratch`, created if needed,
/// a real directory (not a link) inside the canonical home.
pub(crate) fn scratch_parent(cadre_home: &Path) -> Result<PathBuf, String> {
    let home = std::fs::canonicalize(cadre_home)
        .or_else(|_| {
            std::fs::create_dir_all(cadre_home)?;
            std::fs::canonicalize(cadre_home)
        })
        .map_err(|e| format!("CADRE_HOME {} cannot be opened: {e}", cadre_home.display()))?;
    descend(&home, &[SCRATCH_DIR], true)?
        .ok_or_else(|| format!("{} cannot be created", home.join(SCRATCH_DIR).display()))
}

/// The canonical plans directory of the project at `root`: `None` when it does not exist and
/// may not be created (an untrusted project); an error when a link or a file stands in its
/// way.
pub(crate) fn plans_dir(root: &Path, trusted: bool) -> Result<Option<PathBuf>, String> {
    let root = std::fs::canonicalize(root)
        .map_err(|e| format!("the project root {} cannot be opened: {e}", root.display()))?;
    descend(&root, &PLANS_DIR, trusted)
}

/// Walk `parts` below the canonical directory `base`, never following a link; create missing
/// directories (mode 0700 for the last) when `create`, else answer `None`.
fn descend(base: &Path, parts: &[&str], create: bool) -> Result<Option<PathBuf>, String> {
    let mut dir = base.to_path_buf();
    for part in parts {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "{} is a symbolic link; a sandbox's writable directory must be a real \
                     directory inside {}",
                    dir.display(),
                    base.display()
                ));
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(format!("{} is not a directory", dir.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !create {
                    return Ok(None);
                }
                // `create`, not `create_all`: an existing entry (a link planted meanwhile)
                // fails instead of being followed.
                match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        let meta = std::fs::symlink_metadata(&dir).map_err(|e| e.to_string())?;
                        if !meta.is_dir() {
                            return Err(format!("{} appeared as a non-directory", dir.display()));
                        }
                    }
                    Err(e) => return Err(format!("{} cannot be created: {e}", dir.display())),
                }
            }
            Err(e) => return Err(format!("{} cannot be read: {e}", dir.display())),
        }
    }
    Ok(Some(dir))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn a_trusted_project_gets_its_plans_directory_created_inside_it() {
        let tmp = tempfile::tempdir().unwrap();
        let plans = plans_dir(tmp.path(), true).unwrap().unwrap();
        assert_eq!(
            plans,
            std::fs::canonicalize(tmp.path())
                .unwrap()
                .join(".cadre/plans")
        );
        assert!(plans.is_dir());
    }

    #[test]
    fn an_untrusted_project_gets_nothing_created() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(plans_dir(tmp.path(), false).unwrap(), None);
        assert!(!tmp.path().join(".cadre").exists());
        std::fs::create_dir_all(tmp.path().join(".cadre/plans")).unwrap();
        assert!(plans_dir(tmp.path(), false).unwrap().is_some());
    }

    #[test]
    fn a_planted_link_anywhere_on_the_way_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join(".cadre")).unwrap();
        symlink("/", tmp.path().join(".cadre/plans")).unwrap();
        for trusted in [true, false] {
            let err = plans_dir(tmp.path(), trusted).unwrap_err();
            assert!(err.contains("symbolic link"), "{err}");
        }
        let other = tempfile::tempdir().unwrap();
        symlink(outside.path(), other.path().join(".cadre")).unwrap();
        assert!(plans_dir(other.path(), true).is_err());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn scratch_lives_in_a_real_directory_inside_the_home() {
        let home = tempfile::tempdir().unwrap();
        let parent = scratch_parent(home.path()).unwrap();
        assert!(parent.starts_with(std::fs::canonicalize(home.path()).unwrap()));
        let linked = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), linked.path().join(SCRATCH_DIR)).unwrap();
        assert!(scratch_parent(linked.path()).is_err());
    }
}
