//! `grep{pattern, path?, glob?, ignoreCase?, literal?, context?, limit?}`: search file contents.
//!
//! Built on ripgrep's own crates: `ignore` walks the tree in parallel (respecting .gitignore,
//! .ignore and skipping hidden files, like rg), `grep-regex` + `grep-searcher` search each file
//! without per-line allocation (only matched and context lines are copied). Binary files are
//! skipped. Results are sorted by path, so the same search always gives the same answer; with a
//! match limit, the kept set is "the first `limit` matches in path order", maintained as files
//! finish, and files sorting after a full set are not searched at all.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::Mutex;

use cadre_protocol::ToolSpec;
use futures_util::future::BoxFuture;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::args::{ArgError, Args};
use crate::listing::{Notice, listing_output, walker, with_notices};
use crate::registry::{Tool, ToolContext, ToolOutput};
use crate::truncate::{DEFAULT_MAX_BYTES, GREP_MAX_LINE_CHARS, truncate_line};
use crate::unsearched::Unsearched;
use crate::{blocking, names, paths};

pub const DEFAULT_GREP_LIMIT: u64 = 100;
/// Context lines are clamped to this many on each side.
pub const MAX_CONTEXT: u64 = 1000;

#[derive(Debug, Clone, Copy, Default)]
pub struct GrepTool;

#[derive(Debug, Clone)]
struct GrepParams {
    pattern: String,
    raw_path: String,
    glob: Option<String>,
    ignore_case: bool,
    literal: bool,
    context: usize,
    limit: usize,
}

fn parse(args: Value) -> Result<GrepParams, ArgError> {
    let args = Args::parse(args)?;
    Ok(GrepParams {
        pattern: args.required_str("pattern")?,
        raw_path: args.path_or_cwd()?,
        glob: args.optional_str("glob")?.filter(|g| !g.trim().is_empty()),
        ignore_case: args.optional_bool("ignoreCase")?.unwrap_or(false),
        literal: args.optional_bool("literal")?.unwrap_or(false),
        // More context than this only fills the output; it would also make the searcher buffer
        // whole files.
        context: args.optional_u64("context")?.unwrap_or(0).min(MAX_CONTEXT) as usize,
        limit: args.limit("limit", DEFAULT_GREP_LIMIT)?,
    })
}

impl Tool for GrepTool {
    fn name(&self) -> &str {
        "grep"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".into(),
            description: format!(
                "Search file contents for a pattern. Returns matching lines with file paths and \
                 line numbers. Respects .gitignore. Output is truncated to {DEFAULT_GREP_LIMIT} \
                 matches or {}KB (whichever is hit first). Long lines are truncated to \
                 {GREP_MAX_LINE_CHARS} chars.",
                DEFAULT_MAX_BYTES / 1024
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
                    "path": {"type": "string", "description": "Directory or file to search (default: current directory)"},
                    "glob": {"type": "string", "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'"},
                    "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
                    "literal": {"type": "boolean", "description": "Treat pattern as literal string instead of regex (default: false)"},
                    "context": {"type": "number", "description": "Number of lines to show before and after each match (default: 0)"},
                    "limit": {"type": "number", "description": "Maximum number of matches to return (default: 100)"}
                },
                "required": ["pattern"]
            }),
        }
    }

    fn execute<'a>(&'a self, args: Value, ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let params = match parse(args) {
                Ok(p) => p,
                Err(e) => return e.into_output("grep"),
            };
            let root = paths::resolve(&params.raw_path, &ctx.cwd);
            if crate::hidden::is_hidden(&root) {
                return ToolOutput::error(crate::hidden::refusal(&params.raw_path));
            }
            let cancel = ctx.cancel.clone();
            blocking(move || grep(&params, &root, &cancel)).await
        })
    }
}

/// One line of output, already cut to the display length.
#[derive(Debug)]
struct HitLine {
    number: u64,
    is_match: bool,
    text: String,
    cut: bool,
}

#[derive(Debug, Default)]
struct FileHits {
    lines: Vec<HitLine>,
    matches: usize,
    /// Size of these lines once formatted (label, number, text).
    bytes: usize,
    /// The file's label is shown quoted (see `names`).
    quoted: bool,
}

/// What the output can show at most: the first `limit` matches and `max_bytes` of text, in path
/// order. Anything past either bound is never displayed, so it is never kept: memory stays
/// bounded however many files match.
struct Collected {
    files: BTreeMap<String, FileHits>,
    /// Matches and formatted bytes in `files`.
    total: usize,
    bytes: usize,
    /// Matches seen in every searched file, kept or not.
    found: usize,
    limit: usize,
    max_bytes: usize,
}

impl Collected {
    fn new(limit: usize, max_bytes: usize) -> Self {
        Collected {
            files: BTreeMap::new(),
            total: 0,
            bytes: 0,
            found: 0,
            limit,
            max_bytes,
        }
    }

    fn full(&self) -> bool {
        self.total >= self.limit || self.bytes >= self.max_bytes
    }

    /// True when `label` sorts after a set that already fills the output.
    fn can_skip(&self, label: &str) -> bool {
        self.full()
            && self
                .files
                .last_key_value()
                .is_some_and(|(last, _)| label > last.as_str())
    }

    fn insert(&mut self, label: String, hits: FileHits) {
        self.found += hits.matches;
        self.total += hits.matches;
        self.bytes += hits.bytes;
        self.files.insert(label, hits);
        // Drop trailing files the earlier ones make invisible.
        while let Some((_, last)) = self.files.last_key_value() {
            let before_total = self.total - last.matches;
            let before_bytes = self.bytes - last.bytes;
            if before_total >= self.limit || before_bytes >= self.max_bytes {
                self.total = before_total;
                self.bytes = before_bytes;
                self.files.pop_last();
            } else {
                break;
            }
        }
    }
}

/// Collects one file's matched and context lines.
struct HitSink<'c> {
    hits: FileHits,
    binary: bool,
    /// Length of the file's label, for the formatted size.
    label_len: usize,
    max_bytes: usize,
    cancel: &'c CancellationToken,
}

impl HitSink<'_> {
    /// Keep one line; false once this file alone fills the output.
    fn push(&mut self, number: Option<u64>, bytes: &[u8], is_match: bool) -> bool {
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let text = String::from_utf8_lossy(bytes);
        let (text, cut) = truncate_line(&text, GREP_MAX_LINE_CHARS);
        let number = number.unwrap_or(0);
        // "label:N: text\n"
        self.hits.bytes += self.label_len + decimal_len(number) + text.len() + 4;
        self.hits.lines.push(HitLine {
            number,
            is_match,
            text: text.into_owned(),
            cut,
        });
        self.hits.bytes < self.max_bytes && !self.cancel.is_cancelled()
    }
}

fn decimal_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

impl Sink for HitSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.hits.matches += 1;
        Ok(self.push(m.line_number(), m.bytes(), true))
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        Ok(self.push(c.line_number(), c.bytes(), false))
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

fn build_matcher(params: &GrepParams) -> Result<RegexMatcher, String> {
    RegexMatcherBuilder::new()
        .case_insensitive(params.ignore_case)
        .fixed_strings(params.literal)
        // Matches never span lines, as in rg without --multiline.
        .line_terminator(Some(b'\n'))
        .build(&params.pattern)
        .map_err(|e| {
            if params.literal {
                format!("Invalid pattern {:?}: {e}", params.pattern)
            } else {
                format!(
                    "Invalid regex pattern {:?}: {e}\nUse literal=true to search for the text as written.",
                    params.pattern
                )
            }
        })
}

fn grep(params: &GrepParams, root: &Path, cancel: &CancellationToken) -> ToolOutput {
    let raw = &params.raw_path;
    let is_dir = match std::fs::metadata(root) {
        Ok(m) => m.is_dir(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return ToolOutput::error(format!("Path not found: {raw}"));
        }
        Err(e) => return ToolOutput::error(format!("Cannot search {raw}: {e}")),
    };
    let matcher = match build_matcher(params) {
        Ok(m) => m,
        Err(msg) => return ToolOutput::error(msg),
    };
    let wants_hidden = params
        .glob
        .as_deref()
        .is_some_and(crate::find::names_hidden);
    let mut walk = walker(root, wants_hidden);
    if let Some(glob) = &params.glob {
        let overrides = OverrideBuilder::new(root).add(glob).and_then(|b| b.build());
        match overrides {
            Ok(o) => {
                walk.overrides(o);
            }
            Err(e) => return ToolOutput::error(format!("Invalid glob {glob:?}: {e}")),
        }
    }
    let mut searcher_builder = SearcherBuilder::new();
    searcher_builder
        .line_number(true)
        .before_context(params.context)
        .after_context(params.context)
        .max_matches(Some(params.limit as u64))
        .binary_detection(BinaryDetection::quit(0));

    let collected = Mutex::new(Collected::new(params.limit, DEFAULT_MAX_BYTES));
    let unsearched = Mutex::new(Unsearched::default());
    // Labels are what the output shows, so they are quoted here, before sorting and sizing.
    let label_for = |path: &Path| -> (String, bool) {
        let label = if is_dir {
            paths::relative_label(path, root)
        } else {
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.to_string_lossy().into_owned())
        };
        let quoted = names::is_quoted(&label);
        (names::shown(&label).into_owned(), quoted)
    };

    walk.build_parallel().run(|| {
        let mut searcher = searcher_builder.build();
        let matcher = matcher.clone();
        let collected = &collected;
        let unsearched = &unsearched;
        let label_for = &label_for;
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
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let (label, quoted) = label_for(entry.path());
            if lock(collected).can_skip(&label) {
                return WalkState::Continue;
            }
            let mut sink = HitSink {
                hits: FileHits {
                    quoted,
                    ..FileHits::default()
                },
                binary: false,
                label_len: label.len(),
                max_bytes: DEFAULT_MAX_BYTES,
                cancel,
            };
            // An unreadable file is skipped, as rg does, and counted, as rg warns about it.
            if let Err(err) = searcher.search_path(&matcher, entry.path(), &mut sink) {
                lock(unsearched).io_error(entry.path(), &err, root);
                return WalkState::Continue;
            }
            if sink.binary || sink.hits.matches == 0 {
                return WalkState::Continue;
            }
            lock(collected).insert(label, sink.hits);
            WalkState::Continue
        })
    });

    if cancel.is_cancelled() {
        return ToolOutput::error("Operation aborted");
    }
    let collected = collected.into_inner().unwrap_or_else(|p| p.into_inner());
    let unsearched = unsearched.into_inner().unwrap_or_else(|p| p.into_inner());
    render(params, collected, &unsearched)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panicking walker thread cannot leave `Collected` half-updated in a way that matters
    // here; keep going with what is there.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn render(params: &GrepParams, collected: Collected, unsearched: &Unsearched) -> ToolOutput {
    if collected.total == 0 {
        return with_notices("No matches found".to_string(), unsearched.notice());
    }
    let limit = params.limit;
    let mut out: Vec<String> = Vec::new();
    let mut shown = 0usize;
    let mut lines_cut = false;
    let mut quoted = false;
    'files: for (label, hits) in &collected.files {
        quoted |= hits.quoted;
        let mut last_match: Option<u64> = None;
        for line in &hits.lines {
            if line.is_match {
                if shown == limit {
                    break 'files;
                }
                shown += 1;
                last_match = Some(line.number);
            } else if shown == limit
                && last_match.is_none_or(|m| line.number > m + params.context as u64)
            {
                // Context belonging to matches past the limit.
                break 'files;
            }
            lines_cut |= line.cut;
            let sep = if line.is_match { ':' } else { '-' };
            out.push(format!("{label}{sep}{}{sep} {}", line.number, line.text));
        }
    }
    let limit_notice = (collected.found >= limit)
        .then(|| Notice::limit(limit, "matches", ", or refine pattern", "matchLimitReached"));
    let cut_notice = lines_cut.then(|| Notice {
        text: format!(
            "Some lines truncated to {GREP_MAX_LINE_CHARS} chars. Use read tool to see full lines"
        ),
        key: "linesTruncated",
        value: json!(true),
    });
    let quoted_notice = quoted.then(names::quoted_notice);
    listing_output(
        &out,
        limit_notice,
        [cut_notice, quoted_notice, unsearched.notice()]
            .into_iter()
            .flatten(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn hits(n: usize, bytes: usize) -> FileHits {
        FileHits {
            lines: (0..n)
                .map(|i| HitLine {
                    number: i as u64 + 1,
                    is_match: true,
                    text: String::new(),
                    cut: false,
                })
                .collect(),
            matches: n,
            bytes,
            quoted: false,
        }
    }

    fn keys(c: &Collected) -> Vec<String> {
        c.files.keys().cloned().collect()
    }

    #[test]
    fn collected_keeps_first_files_in_path_order() {
        let mut c = Collected::new(3, 1000);
        c.insert("m".into(), hits(2, 10));
        c.insert("z".into(), hits(2, 10));
        assert_eq!(c.total, 4);
        assert!(c.can_skip("zz"));
        assert!(!c.can_skip("a"));
        c.insert("a".into(), hits(2, 10));
        // a(2) + m(2) already reach 3: z is dropped.
        assert_eq!(keys(&c), ["a", "m"]);
        assert_eq!((c.total, c.bytes, c.found), (4, 20, 6));
        c.insert("b".into(), hits(5, 10));
        assert_eq!(keys(&c), ["a", "b"]);
        assert!(c.can_skip("c"));
    }

    #[test]
    fn collected_is_bounded_by_output_bytes() {
        let mut c = Collected::new(1_000_000, 100);
        c.insert("b".into(), hits(1, 60));
        c.insert("c".into(), hits(1, 60));
        assert_eq!(keys(&c), ["b", "c"]);
        assert!(c.can_skip("d"));
        c.insert("a".into(), hits(1, 60));
        // a + b already fill 100 bytes: c can never be shown.
        assert_eq!(keys(&c), ["a", "b"]);
        assert_eq!(c.bytes, 120);
    }

    #[test]
    fn decimal_lengths() {
        assert_eq!(decimal_len(0), 1);
        assert_eq!(decimal_len(9), 1);
        assert_eq!(decimal_len(10), 2);
        assert_eq!(decimal_len(123_456), 6);
    }
}
