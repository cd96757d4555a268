//! Which projects are trusted (T4): `$CADRE_HOME/trust.json`.
//!
//! Format: `{"version": 1, "trusted": ["/abs/path", ...]}`. Paths are stored canonical.
//!
//! Trust attaches to a repository: a project is trusted when an entry names its root (the nearest
//! directory holding `.git`, [`super::project_root`]) or, for a directory in no repository, the
//! directory or one above it. A repository nested inside a trusted one, or inside a trusted
//! directory, is a project of its own, with its own `.mcp.json` and settings that may run
//! commands: it is trusted only through its own entry. A subdirectory of a trusted repository
//! without a `.git` of its own is part of it and is trusted with it.
//!
//! A malformed file is an error, not "nothing trusted", so that a typo is noticed rather than
//! silently disabling project configuration. `--trust` for one run is the caller's flag and never
//! touches this store.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::fsutil::atomic_write;
use super::paths::CadreHome;
use super::{ConfigError, read_optional};

const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct TrustFile {
    #[serde(default = "version")]
    version: u32,
    #[serde(default)]
    trusted: Vec<PathBuf>,
}

fn version() -> u32 {
    VERSION
}

/// The trusted project directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustStore {
    path: PathBuf,
    trusted: BTreeSet<PathBuf>,
}

impl TrustStore {
    /// Load `$CADRE_HOME/trust.json` (an absent file trusts nothing).
    pub fn load(home: &CadreHome) -> Result<TrustStore, ConfigError> {
        Self::load_from(&home.trust_json())
    }

    pub fn load_from(path: &Path) -> Result<TrustStore, ConfigError> {
        let trusted = read_entries(path)?;
        Ok(TrustStore {
            path: path.to_path_buf(),
            trusted,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The trusted directories, sorted.
    pub fn entries(&self) -> impl Iterator<Item = &Path> {
        self.trusted.iter().map(PathBuf::as_path)
    }

    /// Whether `project_root` is trusted.
    pub fn is_trusted(&self, project_root: &Path) -> bool {
        self.trusted_by(project_root).is_some()
    }

    /// The entry that makes `project_root` trusted, for `cadre doctor`: the directory itself,
    /// or one above it up to the nearest repository root (a directory holding `.git`, file or
    /// directory), never one beyond: a repository is trusted only through its own entry or one
    /// inside it, so a repository nested in a trusted one is not. A path below the root (a
    /// subdirectory without `.git`) is trusted as its root is.
    pub fn trusted_by(&self, project_root: &Path) -> Option<&Path> {
        let root = normalize(project_root);
        for dir in root.ancestors() {
            if let Some(entry) = self.trusted.get(dir) {
                return Some(entry);
            }
            if is_repository_root(dir) {
                return None;
            }
        }
        None
    }

    /// An entry above `project_root` that would trust it were the project not a repository
    /// of its own: the nearest trusted directory beyond its repository boundary, for saying
    /// why a nested repository is not trusted. `None` when the project is trusted or no entry
    /// lies above it.
    pub fn beyond_repository(&self, project_root: &Path) -> Option<&Path> {
        if self.trusted_by(project_root).is_some() {
            return None;
        }
        let root = normalize(project_root);
        root.ancestors()
            .find_map(|dir| self.trusted.get(dir))
            .map(PathBuf::as_path)
    }

    /// Record `dir` as trusted and save. The file is re-read first so entries written by another
    /// process meanwhile are kept. Returns the canonical path recorded.
    pub fn trust(&mut self, dir: &Path) -> Result<PathBuf, ConfigError> {
        let canonical = dir.canonicalize().map_err(|source| ConfigError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        self.trusted = read_entries(&self.path)?;
        self.trusted.insert(canonical.clone());
        self.save()?;
        Ok(canonical)
    }

    /// Remove `dir` from the store and save; `false` when it was not recorded.
    pub fn revoke(&mut self, dir: &Path) -> Result<bool, ConfigError> {
        let key = normalize(dir);
        self.trusted = read_entries(&self.path)?;
        let removed = self.trusted.remove(&key);
        if removed {
            self.save()?;
        }
        Ok(removed)
    }

    fn save(&self) -> Result<(), ConfigError> {
        let file = TrustFile {
            version: VERSION,
            trusted: self.trusted.iter().cloned().collect(),
        };
        let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| ConfigError::Invalid {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        bytes.push(b'\n');
        atomic_write(&self.path, &bytes).map_err(|source| ConfigError::Write {
            path: self.path.clone(),
            source,
        })
    }
}

fn read_entries(path: &Path) -> Result<BTreeSet<PathBuf>, ConfigError> {
    let Some(text) = read_optional(path)? else {
        return Ok(BTreeSet::new());
    };
    let file: TrustFile =
        serde_json::from_str(&text).map_err(|e| ConfigError::parse(path.to_path_buf(), &e))?;
    Ok(file.trusted.into_iter().collect())
}

/// Whether `dir` holds `.git` (a directory, or a file as in worktrees and submodules; a link
/// counts too), as [`super::project_root`] decides.
fn is_repository_root(dir: &Path) -> bool {
    dir.join(".git").symlink_metadata().is_ok()
}

/// Canonical form when the path exists (resolving symlinks), else the path as given.
fn normalize(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

// Tests cover T4: the trust store.
#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn setup() -> (tempfile::TempDir, CadreHome, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let home = CadreHome::new(tmp.path().join("home"));
        let proj = tmp.path().join("work/proj");
        std::fs::create_dir_all(proj.join("sub")).unwrap();
        (tmp, home, proj)
    }

    #[test]
    fn absent_file_trusts_nothing() {
        let (_tmp, home, proj) = setup();
        let store = TrustStore::load(&home).unwrap();
        assert!(!store.is_trusted(&proj));
        assert_eq!(store.entries().count(), 0);
        assert!(!home.trust_json().exists());
    }

    #[test]
    fn trust_round_trips_through_the_file() {
        let (_tmp, home, proj) = setup();
        let mut store = TrustStore::load(&home).unwrap();
        let recorded = store.trust(&proj).unwrap();
        assert_eq!(recorded, proj.canonicalize().unwrap());
        assert!(store.is_trusted(&proj));

        let reloaded = TrustStore::load(&home).unwrap();
        assert_eq!(reloaded, store);
        assert!(reloaded.is_trusted(&proj));
        // Trust covers directories below the trusted one, not beside or above it.
        assert!(reloaded.is_trusted(&proj.join("sub")));
        assert_eq!(
            reloaded.trusted_by(&proj.join("sub")),
            Some(recorded.as_path())
        );
        assert!(!reloaded.is_trusted(proj.parent().unwrap()));
        assert!(!reloaded.is_trusted(&proj.with_file_name("other")));

        let text = std::fs::read_to_string(home.trust_json()).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["version"], 1);
        assert_eq!(doc["trusted"][0], recorded.to_str().unwrap());
    }

    #[test]
    fn a_repository_nested_in_a_trusted_one_is_trusted_only_through_its_own_entry() {
        let (tmp, home, _) = setup();
        let outer = tmp.path().join("outer");
        let inner = outer.join("vendor/inner");
        let plain = outer.join("src/deep");
        std::fs::create_dir_all(outer.join(".git")).unwrap();
        std::fs::create_dir_all(inner.join("src")).unwrap();
        std::fs::create_dir_all(&plain).unwrap();
        // A `.git` file (a worktree or submodule) makes a repository too.
        std::fs::write(inner.join(".git"), "gitdir: /elsewhere\n").unwrap();
        let mut store = TrustStore::load(&home).unwrap();
        let outer_entry = store.trust(&outer).unwrap();

        // The trusted repository, and its plain subdirectories, are trusted.
        assert_eq!(store.trusted_by(&outer), Some(outer_entry.as_path()));
        assert_eq!(store.trusted_by(&plain), Some(outer_entry.as_path()));
        assert_eq!(
            store.trusted_by(&outer.join("vendor")),
            Some(outer_entry.as_path())
        );
        // The nested repository and what lies in it are not, and the entry that would have
        // covered it is named.
        assert!(!store.is_trusted(&inner));
        assert!(!store.is_trusted(&inner.join("src")));
        assert_eq!(store.beyond_repository(&inner), Some(outer_entry.as_path()));
        assert_eq!(store.beyond_repository(&outer), None);

        // Trusted on its own, it is, through its own entry.
        let inner_entry = store.trust(&inner).unwrap();
        assert_eq!(store.trusted_by(&inner), Some(inner_entry.as_path()));
        assert_eq!(
            store.trusted_by(&inner.join("src")),
            Some(inner_entry.as_path())
        );
        assert_eq!(store.beyond_repository(&inner), None);
        // Revoking the outer one leaves the inner one trusted, and the other way round.
        assert!(store.revoke(&outer).unwrap());
        assert!(store.is_trusted(&inner) && !store.is_trusted(&outer));
    }

    #[test]
    fn a_repository_below_a_trusted_plain_directory_is_not_trusted_through_it() {
        let (tmp, home, _) = setup();
        let work = tmp.path().join("work");
        let repo = work.join("repo");
        let notes = work.join("notes/2024");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&notes).unwrap();
        let mut store = TrustStore::load(&home).unwrap();
        let entry = store.trust(&work).unwrap();
        // Directories in no repository are trusted through the directory above them ...
        assert_eq!(store.trusted_by(&notes), Some(entry.as_path()));
        // ... a repository is not.
        assert!(!store.is_trusted(&repo));
        assert_eq!(store.beyond_repository(&repo), Some(entry.as_path()));
    }

    #[test]
    fn trust_keeps_entries_written_by_others_and_is_idempotent() {
        let (tmp, home, proj) = setup();
        let other = tmp.path().join("elsewhere");
        std::fs::create_dir_all(&other).unwrap();
        let mut a = TrustStore::load(&home).unwrap();
        let mut b = TrustStore::load(&home).unwrap();
        a.trust(&proj).unwrap();
        b.trust(&other).unwrap();
        b.trust(&other).unwrap();
        let store = TrustStore::load(&home).unwrap();
        assert_eq!(store.entries().count(), 2);
        assert!(store.is_trusted(&proj) && store.is_trusted(&other));
    }

    #[test]
    fn relative_and_symlinked_paths_are_canonicalized() {
        let (tmp, home, proj) = setup();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&proj, &link).unwrap();
        let mut store = TrustStore::load(&home).unwrap();
        store.trust(&link).unwrap();
        assert!(store.is_trusted(&proj));
        assert!(store.is_trusted(&link.join("sub")));
        assert!(store.revoke(&link).unwrap());
        assert!(!store.is_trusted(&proj));
        assert!(!store.revoke(&proj).unwrap());
        assert!(!TrustStore::load(&home).unwrap().is_trusted(&proj));
    }

    #[test]
    fn trusting_a_missing_directory_fails() {
        let (tmp, home, _) = setup();
        let mut store = TrustStore::load(&home).unwrap();
        let err = store.trust(&tmp.path().join("nope")).unwrap_err();
        assert!(err.to_string().contains("nope"));
        assert!(!home.trust_json().exists());
    }

    #[test]
    fn malformed_file_is_an_error_with_its_path() {
        let (_tmp, home, proj) = setup();
        std::fs::create_dir_all(home.root()).unwrap();
        std::fs::write(home.trust_json(), "{\"trusted\": \"/x\"}").unwrap();
        let err = TrustStore::load(&home).unwrap_err();
        assert!(err.to_string().contains("trust.json"), "{err}");
        let mut store = TrustStore {
            path: home.trust_json(),
            trusted: BTreeSet::new(),
        };
        // A write never replaces a file it could not read.
        assert!(store.trust(&proj).is_err());
        assert_eq!(
            std::fs::read_to_string(home.trust_json()).unwrap(),
            "{\"trusted\": \"/x\"}"
        );
    }
}
