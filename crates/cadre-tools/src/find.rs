//! `find{pattern, path?, limit?}`: find files by glob.
//!
//! A pattern without `/` matches file names at any depth (`*.rs`); a pattern with `/` matches
//! the path relative to the search directory (`src/**/*.rs`), like fd and .gitignore. The walk
//! is parallel and respects .gitignore; hidden entries are skipped unless the pattern itself
//! names a hidden component (`.github/**`), and `.git` is never listed. Results are relative
//! paths, sorted, directories with a trailing `/`.

use std::collections::BinaryHeap;
use std::io;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use cadre_protocol::ToolSpec;
use futures_util::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkState;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::args::{ArgError, Args};
use crate::listing::{Notice, listing_output, walker, with_notices};
use crate::registry::{Tool, ToolContext, ToolOutput};
use crate::truncate::DEFAULT_MAX_BYTES;
use crate::unsearched::Unsearched;
use crate::{blocking, names, paths};

pub const DEFAULT_FIND_LIMIT: u64 = 1000;

#[derive(Debug, Clone, Copy, Default)]
pub struct FindTool;

impl Tool for FindTool {
    fn name(&self) -> &str {
        "find"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "find".into(),
            description: format!(
                "Search for files by glob pattern. Returns matching file paths relative to the \
                 search directory. Respects .gitignore. Output is truncated to \
                 {DEFAULT_FIND_LIMIT} results or {}KB (whichever is hit first).",
                DEFAULT_MAX_BYTES / 1024
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'"},
                    "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
                    "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"}
                },
                "required": ["pattern"]
            }),
        }
    }

    fn execute<'a>(&'a self, args: Value, ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let parsed = (|| {
                let args = Args::parse(args)?;
                Ok::<_, ArgError>((
                    args.required_str("pattern")?,
                    args.path_or_cwd()?,
                    args.limit("limit", DEFAULT_FIND_LIMIT)?,
                ))
            })();
            let (pattern, raw, limit) = match parsed {
                Ok(p) => p,
                Err(e) => return e.into_output("find"),
            };
            let root = paths::resolve(&raw, &ctx.cwd);
            if crate::hidden::is_hidden(&root) {
                return ToolOutput::error(crate::hidden::refusal(&raw));
            }
            let cancel = ctx.cancel.clone();
            blocking(move || find(&pattern, &raw, &root, limit, &cancel)).await
        })
    }
}

/// How a pattern is matched.
#[derive(Debug)]
struct PathGlob {
    matcher: GlobMatcher,
    /// Match the whole relative path (pattern has a `/`) rather than the file name.
    full_path: bool,
    /// The pattern names a hidden component, so hidden entries must be walked.
    wants_hidden: bool,
}

fn compile(pattern: &str) -> Result<PathGlob, String> {
    let trimmed = pattern.trim();
    let trimmed = trimmed.strip_prefix("./").unwrap_or(trimmed);
    let trimmed = trimmed.trim_start_matches('/');
    if trimmed.is_empty() {
        return Err("Invalid glob: the pattern is empty".to_string());
    }
    let full_path = trimmed.contains('/');
    let matcher = GlobBuilder::new(trimmed)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("Invalid glob {pattern:?}: {e}"))?
        .compile_matcher();
    let wants_hidden = names_hidden(trimmed);
    Ok(PathGlob {
        matcher,
        full_path,
        wants_hidden,
    })
}

/// True when a glob names a hidden component (`.github/**`, `**/.env*`): the walk must then
/// include hidden entries, or the pattern could never match.
pub(crate) fn names_hidden(glob: &str) -> bool {
    glob.trim_start_matches('!')
        .split('/')
        .any(|c| c.starts_with('.') && c != "." && c != "..")
}

fn find(
    pattern: &str,
    raw: &str,
    root: &Path,
    limit: usize,
    cancel: &CancellationToken,
) -> ToolOutput {
    match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return ToolOutput::error(format!("Not a directory: {raw}")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return ToolOutput::error(format!("Path not found: {raw}"));
        }
        Err(e) => return ToolOutput::error(format!("Cannot search {raw}: {e}")),
    }
    let glob = match compile(pattern) {
        Ok(g) => g,
        Err(msg) => return ToolOutput::error(msg),
    };
    let walk = walker(root, glob.wants_hidden);

    // The smallest paths, as a max-heap so the largest is evicted first. No more than fit in
    // the output are kept (each takes at least two bytes, "x\n"), whatever the limit.
    let keep = limit.min(DEFAULT_MAX_BYTES / 2 + 1);
    let best: Mutex<BinaryHeap<String>> = Mutex::new(BinaryHeap::new());
    let found = AtomicUsize::new(0);
    let quoted = AtomicBool::new(false);
    let unsearched = Mutex::new(Unsearched::default());
    walk.build_parallel().run(|| {
        let best = &best;
        let found = &found;
        let quoted = &quoted;
        let unsearched = &unsearched;
        let glob = &glob;
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            // A directory the walk cannot read is said in the result, never silently skipped.
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    lock(unsearched).walk_error(&err, root);
                    return WalkState::Continue;
                }
            };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            let rel = paths::relative_label(entry.path(), root);
            let hit = if glob.full_path {
                glob.matcher.is_match(&rel)
            } else {
                glob.matcher.is_match(entry.file_name())
            };
            if !hit {
                return WalkState::Continue;
            }
            found.fetch_add(1, Ordering::Relaxed);
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            // The pattern matched the name itself; the output shows it quoted if need be.
            if names::is_quoted(&rel) {
                quoted.store(true, Ordering::Relaxed);
            }
            let rel = names::shown(&rel);
            let shown = if is_dir {
                format!("{rel}/")
            } else {
                rel.into_owned()
            };
            let mut heap = lock(best);
            if heap.len() < keep {
                heap.push(shown);
            } else if heap.peek().is_some_and(|top| &shown < top) {
                heap.pop();
                heap.push(shown);
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return ToolOutput::error("Operation aborted");
    }
    let results = best
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_sorted_vec();
    let unsearched = unsearched.into_inner().unwrap_or_else(|p| p.into_inner());
    if results.is_empty() {
        return with_notices(
            "No files found matching pattern".to_string(),
            unsearched.notice(),
        );
    }
    let total = found.load(Ordering::Relaxed);
    let limit_notice = (total >= limit).then(|| {
        Notice::limit(
            limit,
            "results",
            ", or refine pattern",
            "resultLimitReached",
        )
    });
    let quoted_notice = quoted.load(Ordering::Relaxed).then(names::quoted_notice);
    listing_output(
        &results,
        limit_notice,
        [quoted_notice, unsearched.notice()].into_iter().flatten(),
    )
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panicking walker thread leaves nothing half-updated that matters here.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn name_and_path_patterns() {
        let g = compile("*.rs").unwrap();
        assert!(!g.full_path);
        assert!(g.matcher.is_match("main.rs"));
        let g = compile("src/**/*.rs").unwrap();
        assert!(g.full_path);
        assert!(g.matcher.is_match("src/main.rs"));
        assert!(g.matcher.is_match("src/a/b/main.rs"));
        assert!(!g.matcher.is_match("tests/main.rs"));
        let g = compile("**/*.json").unwrap();
        assert!(g.matcher.is_match("a.json"));
        assert!(g.matcher.is_match("x/y/a.json"));
        let g = compile("src/*.rs").unwrap();
        assert!(!g.matcher.is_match("src/a/b.rs"));
        let g = compile("./src/*.rs").unwrap();
        assert!(g.matcher.is_match("src/b.rs"));
    }

    #[test]
    fn hidden_is_walked_only_when_named() {
        assert!(!compile("*.rs").unwrap().wants_hidden);
        assert!(compile(".github/**/*.yml").unwrap().wants_hidden);
        assert!(compile("**/.env*").unwrap().wants_hidden);
        assert!(!compile("../x/*.rs").unwrap().wants_hidden);
    }

    #[test]
    fn bad_patterns() {
        assert!(compile("").is_err());
        assert!(compile("a[").unwrap_err().contains("Invalid glob"));
    }
}
