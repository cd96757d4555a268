//! Resolving the paths the model names.
//!
//! Relative paths resolve against the tool's working directory, `~` against `$HOME`, absolute
//! paths stay. The result is normalised lexically (`.` and `..` removed, symlinks untouched) so
//! two spellings of one file serialise as the same mutation target.

use std::path::{Component, Path, PathBuf};

/// Unicode spaces models sometimes put where a plain space belongs.
fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Resolve `raw` against `cwd`.
pub fn resolve(raw: &str, cwd: &Path) -> PathBuf {
    let cleaned: String = raw
        .trim()
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    // Models copy `@file` mentions from the prompt verbatim.
    let cleaned = cleaned.strip_prefix('@').unwrap_or(&cleaned);
    let expanded = if cleaned == "~" {
        home_dir().unwrap_or_else(|| PathBuf::from("~"))
    } else if let Some(rest) = cleaned.strip_prefix("~/") {
        match home_dir() {
            Some(home) => home.join(rest),
            None => PathBuf::from(cleaned),
        }
    } else {
        PathBuf::from(cleaned)
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    };
    normalize(&joined)
}

/// Remove `.` components and fold `..` into its parent, without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                // `/..` stays `/`; a relative path keeps leading `..`.
                if !out.pop() && !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// `path` relative to `base` with `/` separators, or the full path when it is not below `base`.
pub fn relative_label(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        // A backslash separates components only on Windows; elsewhere it is part of a name,
        // and turning it into `/` would show a file `src\secret.rs` as `src/secret.rs`.
        Ok(rel) if !rel.as_os_str().is_empty() && cfg!(windows) => {
            rel.to_string_lossy().replace('\\', "/")
        }
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
        _ => path.to_string_lossy().into_owned(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_absolute() {
        let cwd = Path::new("/work/proj");
        assert_eq!(
            resolve("src/a.rs", cwd),
            PathBuf::from("/work/proj/src/a.rs")
        );
        assert_eq!(resolve("/etc/hosts", cwd), PathBuf::from("/etc/hosts"));
        assert_eq!(resolve("./a/../b", cwd), PathBuf::from("/work/proj/b"));
        assert_eq!(resolve("../x", cwd), PathBuf::from("/work/x"));
        assert_eq!(resolve(".", cwd), PathBuf::from("/work/proj"));
        assert_eq!(resolve("/../..", cwd), PathBuf::from("/"));
        assert_eq!(
            resolve("@src/a.rs", cwd),
            PathBuf::from("/work/proj/src/a.rs")
        );
        assert_eq!(resolve("a\u{00A0}b", cwd), PathBuf::from("/work/proj/a b"));
    }

    #[test]
    fn tilde_expands_to_home() {
        let Some(home) = home_dir() else { return };
        let cwd = Path::new("/w");
        assert_eq!(resolve("~", cwd), normalize(&home));
        assert_eq!(resolve("~/x", cwd), normalize(&home.join("x")));
        // `~user` is not expanded.
        assert_eq!(resolve("~bob/x", cwd), PathBuf::from("/w/~bob/x"));
    }

    #[test]
    fn normalize_relative() {
        assert_eq!(normalize(Path::new("../a/./b/..")), PathBuf::from("../a"));
        assert_eq!(normalize(Path::new("a/..")), PathBuf::from("."));
    }

    #[test]
    fn labels() {
        let base = Path::new("/r");
        assert_eq!(relative_label(Path::new("/r/a/b"), base), "a/b");
        assert_eq!(relative_label(Path::new("/x/y"), base), "/x/y");
        assert_eq!(relative_label(Path::new("/r"), base), "/r");
        #[cfg(unix)]
        assert_eq!(relative_label(Path::new("/r/a\\b"), base), "a\\b");
    }
}
