//! `ls{path?, limit?}`: list one directory.
//!
//! Entries are sorted alphabetically ignoring case, directories get a trailing `/` (a symlink to
//! a directory counts as one), dotfiles are included.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use cadre_protocol::ToolSpec;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use crate::args::{ArgError, Args};
use crate::listing::{Notice, listing_output, with_notices};
use crate::registry::{Tool, ToolContext, ToolOutput};
use crate::truncate::DEFAULT_MAX_BYTES;
use crate::{blocking, names, paths};

pub const DEFAULT_LS_LIMIT: u64 = 500;

#[derive(Debug, Clone, Copy, Default)]
pub struct LsTool;

impl Tool for LsTool {
    fn name(&self) -> &str {
        "ls"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "ls".into(),
            description: format!(
                "List directory contents. Returns entries sorted alphabetically, with '/' suffix \
                 for directories. Includes dotfiles. Output is truncated to {DEFAULT_LS_LIMIT} \
                 entries or {}KB (whichever is hit first).",
                DEFAULT_MAX_BYTES / 1024
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory to list (default: current directory)"},
                    "limit": {"type": "number", "description": "Maximum number of entries to return (default: 500)"}
                }
            }),
        }
    }

    fn execute<'a>(&'a self, args: Value, ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let parsed = (|| {
                let args = Args::parse(args)?;
                Ok::<_, ArgError>((args.path_or_cwd()?, args.limit("limit", DEFAULT_LS_LIMIT)?))
            })();
            let (raw, limit) = match parsed {
                Ok(p) => p,
                Err(e) => return e.into_output("ls"),
            };
            let dir = paths::resolve(&raw, &ctx.cwd);
            blocking(move || list(&raw, &dir, limit)).await
        })
    }
}

/// Sort key: case-insensitive first, then the exact name so the order is total.
fn sort_entries<T>(entries: &mut [(String, T)]) {
    entries.sort_by(|(a, _), (b, _)| {
        a.to_lowercase()
            .cmp(&b.to_lowercase())
            .then_with(|| a.cmp(b))
    });
}

fn list(raw: &str, dir: &Path, limit: usize) -> ToolOutput {
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return ToolOutput::error(format!("Not a directory: {raw}")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return ToolOutput::error(format!("Path not found: {raw}"));
        }
        Err(e) => return ToolOutput::error(format!("Cannot read directory {raw}: {e}")),
    }
    let reader = match fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(format!("Cannot read directory {raw}: {e}")),
    };
    // Each name with its real path: a name that is not UTF-8 prints lossily but is still
    // looked up as itself.
    let mut entries: Vec<(String, PathBuf)> = Vec::new();
    let mut unreadable: Option<(usize, io::Error)> = None;
    for entry in reader {
        match entry {
            Ok(e) => entries.push((e.file_name().to_string_lossy().into_owned(), e.path())),
            Err(e) => match &mut unreadable {
                Some((count, _)) => *count += 1,
                None => unreadable = Some((1, e)),
            },
        }
    }
    sort_entries(&mut entries);
    let limit_reached = entries.len() > limit;
    let mut quoted = false;
    let results: Vec<String> = entries
        .into_iter()
        .take(limit)
        .map(|(name, path)| {
            quoted |= names::is_quoted(&name);
            let name = names::shown(&name);
            // `metadata` follows symlinks, so a link to a directory is shown as one.
            let is_dir = fs::metadata(path).is_ok_and(|m| m.is_dir());
            if is_dir {
                format!("{name}/")
            } else {
                name.into_owned()
            }
        })
        .collect();
    let unreadable_notice = unreadable.map(|(count, first)| Notice {
        text: format!("{count} entries could not be read ({first})"),
        key: "unreadableEntries",
        value: json!(count),
    });
    if results.is_empty() {
        return with_notices("(empty directory)".to_string(), unreadable_notice);
    }
    let limit_notice =
        limit_reached.then(|| Notice::limit(limit, "entries", "", "entryLimitReached"));
    let quoted_notice = quoted.then(names::quoted_notice);
    listing_output(
        &results,
        limit_notice,
        [quoted_notice, unreadable_notice].into_iter().flatten(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn sorting_ignores_case_but_is_total() {
        let mut v: Vec<(String, ())> = ["b", "A", "a", ".z", "B", "c"]
            .iter()
            .map(|s| (s.to_string(), ()))
            .collect();
        sort_entries(&mut v);
        let sorted: Vec<&str> = v.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(sorted, [".z", "A", "a", "B", "b", "c"]);
    }
}
