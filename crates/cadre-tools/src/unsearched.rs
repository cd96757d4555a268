//! The paths a search could not look into, so that an answer like "No matches found" never
//! hides them.
//!
//! The walk of `grep` and `find` reports a directory it cannot read as an error entry, and a
//! file grep cannot open fails its search. Both used to be dropped, so a tree too deep to open
//! by path (beyond PATH_MAX, ENAMETOOLONG), an unreadable directory or too many open files gave
//! a confident, wrong "No matches found". Each such path is counted now and the result says so,
//! with the first few of them and why.

use std::io;
use std::path::Path;

use serde_json::json;

use crate::listing::Notice;
use crate::names::shown;
use crate::paths;
use crate::truncate::{head_on_char_boundary, tail_on_char_boundary};

/// How many of the paths are named in the result.
const EXAMPLES: usize = 3;
/// A named path longer than this is shown as its start and end.
const MAX_PATH_CHARS: usize = 160;

/// The paths one search could not look into.
#[derive(Debug, Default)]
pub(crate) struct Unsearched {
    count: usize,
    /// The first paths in path order, each with the reason.
    examples: Vec<(String, String)>,
}

impl Unsearched {
    /// A walk error (a directory that could not be read, a symlink loop, …).
    pub fn walk_error(&mut self, err: &ignore::Error, root: &Path) {
        let (path, reason) = describe(err);
        let label = match path {
            Some(p) => paths::relative_label(p, root),
            None => String::from("(unknown path)"),
        };
        self.add(label, reason);
    }

    /// A file or directory that could not be opened or read.
    pub fn io_error(&mut self, path: &Path, err: &io::Error, root: &Path) {
        self.add(paths::relative_label(path, root), err.to_string());
    }

    fn add(&mut self, label: String, reason: String) {
        self.count += 1;
        let at = self.examples.partition_point(|(l, _)| *l <= label);
        if at < EXAMPLES {
            self.examples.insert(at, (label, reason));
            self.examples.truncate(EXAMPLES);
        }
    }

    /// The notice for the result, if anything could not be searched.
    pub fn notice(&self) -> Option<Notice> {
        if self.count == 0 {
            return None;
        }
        let named: Vec<String> = self
            .examples
            .iter()
            .map(|(label, reason)| format!("{}: {reason}", short(&shown(label))))
            .collect();
        let more = self.count - self.examples.len();
        let mut text = format!(
            "{} {} could not be searched, so results may be missing: {}",
            self.count,
            if self.count == 1 { "path" } else { "paths" },
            named.join("; ")
        );
        if more > 0 {
            text.push_str(&format!("; and {more} more"));
        }
        Some(Notice {
            text,
            key: "unsearched",
            value: json!({
                "count": self.count,
                "paths": self.examples.iter().map(|(l, r)| json!({"path": l, "error": r})).collect::<Vec<_>>(),
            }),
        })
    }
}

/// The path an error is about and what went wrong, without the path repeated in the reason.
fn describe(err: &ignore::Error) -> (Option<&Path>, String) {
    match err {
        ignore::Error::WithPath { path, err } => {
            let (inner, reason) = describe(err);
            (inner.or(Some(path.as_path())), reason)
        }
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            describe(err)
        }
        ignore::Error::Partial(errs) => match errs.first() {
            Some(first) => describe(first),
            None => (None, err.to_string()),
        },
        ignore::Error::Loop { child, .. } => (
            Some(child.as_path()),
            "symbolic link loop (not followed)".to_string(),
        ),
        ignore::Error::Io(e) => (None, e.to_string()),
        other => (None, other.to_string()),
    }
}

/// A long path as its start and end, with its length: a path beyond PATH_MAX is thousands of
/// characters, and its two ends are what tell it apart.
fn short(label: &str) -> String {
    let chars = label.chars().count();
    if chars <= MAX_PATH_CHARS {
        return label.to_string();
    }
    let head = head_on_char_boundary(label, MAX_PATH_CHARS / 2);
    let tail = tail_on_char_boundary(label, MAX_PATH_CHARS / 2);
    format!("{head}…{tail} ({chars} characters)")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn nothing_unsearched_says_nothing() {
        assert!(Unsearched::default().notice().is_none());
    }

    #[test]
    fn names_the_first_paths_in_order_and_counts_the_rest() {
        let root = Path::new("/r");
        let mut u = Unsearched::default();
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        for name in ["e", "b", "d", "a", "c"] {
            u.io_error(&root.join(name), &denied, root);
        }
        let n = u.notice().unwrap();
        assert!(
            n.text
                .starts_with("5 paths could not be searched, so results may be missing: a: "),
            "{}",
            n.text
        );
        assert!(n.text.contains("; b: ") && n.text.contains("; c: "));
        assert!(n.text.ends_with("; and 2 more"), "{}", n.text);
        assert_eq!(n.value["count"], 5);
        assert_eq!(n.value["paths"][0]["path"], "a");
    }

    #[test]
    fn walk_errors_name_their_path_once() {
        let root = Path::new("/r");
        let err = ignore::Error::WithDepth {
            depth: 3,
            err: Box::new(ignore::Error::WithPath {
                path: PathBuf::from("/r/x/y"),
                err: Box::new(ignore::Error::Io(io::Error::from_raw_os_error(
                    libc::ENAMETOOLONG,
                ))),
            }),
        };
        let mut u = Unsearched::default();
        u.walk_error(&err, root);
        let text = u.notice().unwrap().text;
        assert!(text.starts_with("1 path could not be searched"), "{text}");
        assert!(
            text.ends_with(": x/y: File name too long (os error 36)"),
            "{text}"
        );
    }

    #[test]
    fn long_and_hostile_paths_are_shortened_and_quoted() {
        let root = Path::new("/r");
        let deep = "dd/".repeat(2000) + "f\nfake line";
        let mut u = Unsearched::default();
        u.io_error(
            &root.join(&deep),
            &io::Error::from(io::ErrorKind::NotFound),
            root,
        );
        let text = u.notice().unwrap().text;
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("…"), "{text}");
        assert!(text.contains("characters)"), "{text}");
        assert!(text.len() < 400, "{}", text.len());
    }
}
