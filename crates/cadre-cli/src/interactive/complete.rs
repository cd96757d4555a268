//! `@file` completion: the project's files whose paths match what follows the `@`.
//!
//! The walk is ripgrep's (`.gitignore` respected, hidden files and `.git` skipped, links not
//! followed) and bounded in depth and in entries read, so a huge or hostile tree costs a
//! Tab press a bounded amount. Names that could not be typed back (control characters, not
//! UTF-8) are not offered.

use std::path::Path;

/// How deep the walk goes below the project directory.
const MAX_DEPTH: usize = 12;
/// The most directory entries read for one completion.
const MAX_ENTRIES: usize = 20_000;

/// Up to `limit` relative paths under `root` matching `partial`, best first: paths that start
/// with it, then those whose file name starts with it, then those that contain it (all
/// case-insensitive); shorter paths first within each group. Directories end in `/`.
pub fn candidates(root: &Path, partial: &str, limit: usize) -> Vec<String> {
    let needle = partial.to_lowercase();
    let mut found: Vec<(u8, String)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    // The walk starts in the directory part of what was typed (`src/ma` → `src/`), and that
    // directory's own entries come first: a depth-first walk cut off by the entry bound in a
    // huge subtree would otherwise miss the files right next to the person.
    let base = partial.rfind('/').map_or("", |i| &partial[..=i]);
    let start = root.join(base);
    // Links are not followed, also not the one typed: a directory part that is a link, or
    // that leads out of the project, walks from the project instead.
    let inside = |dir: &Path| {
        let (Ok(dir), Ok(top)) = (dir.canonicalize(), root.canonicalize()) else {
            return false;
        };
        dir.starts_with(top)
    };
    let is_plain_dir =
        std::fs::symlink_metadata(start.components().as_path()).is_ok_and(|m| m.is_dir());
    let start = if base.is_empty()
        || base.split('/').any(|p| p == "..")
        || !is_plain_dir
        || !inside(&start)
    {
        root.to_path_buf()
    } else {
        start
    };
    let walk = |depth: usize| {
        ignore::WalkBuilder::new(&start)
            .max_depth(Some(depth))
            .follow_links(false)
            .require_git(false)
            .build()
    };
    for entry in walk(1).chain(walk(MAX_DEPTH)).take(MAX_ENTRIES) {
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(rel) = rel.to_str() else { continue };
        if rel.chars().any(cadre_protocol::display::is_unshowable) {
            continue;
        }
        if !seen.insert(rel.to_string()) {
            continue;
        }
        let lower = rel.to_lowercase();
        let name = lower.rsplit('/').next().unwrap_or(&lower);
        let rank = if lower.starts_with(&needle) {
            0
        } else if name.starts_with(&needle) {
            1
        } else if lower.contains(&needle) {
            2
        } else {
            continue;
        };
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        let shown = if is_dir {
            format!("{rel}/")
        } else {
            rel.to_string()
        };
        found.push((rank, shown));
    }
    found.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| a.1.len().cmp(&b.1.len()))
            .then_with(|| a.1.cmp(&b.1))
    });
    found.into_iter().take(limit).map(|(_, p)| p).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn matches_rank_prefixes_first_and_respect_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::write(root.join("src/main.rs"), "").unwrap();
        std::fs::write(root.join("src/deep/main_helper.rs"), "").unwrap();
        std::fs::write(root.join("domain.txt"), "").unwrap();
        std::fs::write(root.join(".gitignore"), "ignored.rs\n").unwrap();
        std::fs::write(root.join("ignored.rs"), "").unwrap();
        std::fs::write(root.join(".hidden_main"), "").unwrap();
        let got = candidates(root, "main", 10);
        assert_eq!(
            got,
            ["src/main.rs", "src/deep/main_helper.rs", "domain.txt"]
        );
        assert_eq!(
            candidates(root, "src/d", 10),
            ["src/deep/", "src/deep/main_helper.rs"]
        );
        assert!(candidates(root, "ignored", 10).is_empty());
    }

    #[test]
    fn names_with_control_characters_are_not_offered() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("evil\x1b[2Jname"), "").unwrap();
        std::fs::write(dir.path().join("evil\u{202e}gnp.exe"), "").unwrap();
        std::fs::write(dir.path().join("evil_ok"), "").unwrap();
        assert_eq!(candidates(dir.path(), "evil", 10), ["evil_ok"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_typed_link_to_a_directory_is_not_followed() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.json"), "").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("lnk")).unwrap();
        assert!(candidates(dir.path(), "lnk/sec", 10).is_empty());
    }

    #[test]
    fn a_file_next_to_a_huge_subtree_is_still_found() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("aaa_big");
        std::fs::create_dir(&big).unwrap();
        for i in 0..(MAX_ENTRIES + 100) {
            std::fs::write(big.join(format!("f{i}")), "").unwrap();
        }
        std::fs::write(dir.path().join("zz_target.md"), "").unwrap();
        assert_eq!(candidates(dir.path(), "zz_", 10), ["zz_target.md"]);
        // Typing a directory walks from it.
        std::fs::create_dir(dir.path().join("zz_src")).unwrap();
        std::fs::write(dir.path().join("zz_src/needle.rs"), "").unwrap();
        assert_eq!(
            candidates(dir.path(), "zz_src/need", 10),
            ["zz_src/needle.rs"]
        );
    }
}
