//! `edit{path, edits:[{oldText, newText}]}`: exact-text replacements in one file.
//!
//! Every `oldText` is matched against the ORIGINAL file (not after earlier edits), must occur
//! exactly once, and must not overlap another edit; the call is all-or-nothing. Matching happens
//! on LF-normalised text without a BOM, because the model never sends `\r` or an invisible BOM;
//! the file's line endings (of its first line break) and BOM are restored on write, like Pi.
//! An `oldText` not found verbatim is looked up once more forgiving trailing whitespace and
//! typographic quotes/dashes/spaces (`fuzzy`), still required to be unique.
//!
//! Memory stays near the file's size: the file is read once and normalised in place or not at
//! all, the edits are planned as byte ranges, the new content is streamed to the temporary file
//! rather than assembled, and the diff looks only at the lines around the changes. Files larger
//! than [`MAX_EDIT_FILE_BYTES`] are refused.

use std::borrow::Cow;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use cadre_protocol::ToolSpec;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use thiserror::Error;

use crate::args::{ArgError, Args, describe};
use crate::diff::{Replacement, replacement_diff};
use crate::fsutil::{atomic_write_with, looks_binary};
use crate::registry::{Tool, ToolContext, ToolOutput};
use crate::truncate::format_size;
use crate::write::target_path;
use crate::{blocking, fuzzy, paths};

/// Unchanged lines shown around each change in the diff.
const DIFF_CONTEXT: usize = 4;

/// The largest file the edit tool changes (128 MiB). The file is held in memory while it is
/// edited — up to about twice over when a fuzzy match needs a normalised copy — so a limit keeps
/// one call from taking gigabytes; a larger file is better changed with a streaming tool.
pub const MAX_EDIT_FILE_BYTES: u64 = 128 * 1024 * 1024;

#[derive(Debug, Clone, Copy, Default)]
pub struct EditTool;

/// One replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub old_text: String,
    pub new_text: String,
}

/// Why a set of edits cannot be applied. `index` is the position in `edits`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EditError {
    #[error("{} must not be empty.", label(*.index, *.total, "oldText"))]
    EmptyOldText { index: usize, total: usize },
    #[error(
        "Could not find {} in the file. The oldText must match exactly, including all whitespace and newlines.",
        label(*.index, *.total, "the text")
    )]
    NotFound { index: usize, total: usize },
    #[error(
        "Found {count} occurrences of {} in the file. Each oldText must be unique: include more surrounding context to make it unique.",
        label(*.index, *.total, "the text")
    )]
    Ambiguous {
        index: usize,
        total: usize,
        count: usize,
    },
    #[error(
        "edits[{first}] and edits[{second}] overlap in the file. Merge them into one edit or target disjoint regions."
    )]
    Overlap { first: usize, second: usize },
    #[error("No changes made: the replacement produced identical content.")]
    NoChange,
}

fn label(index: usize, total: usize, single: &str) -> String {
    if total == 1 {
        single.to_string()
    } else {
        format!("edits[{index}]")
    }
}

/// Non-overlapping occurrences of `needle` (as `str::matches` counts them), with the first
/// position.
fn occurrences(haystack: &str, needle: &str) -> (usize, Option<usize>) {
    let mut iter = haystack.match_indices(needle);
    let first = iter.next().map(|(i, _)| i);
    (usize::from(first.is_some()) + iter.count(), first)
}

/// `text` with `\r\n` and lone `\r` turned into `\n`, in one pass, borrowed when there is
/// nothing to change.
pub fn normalize_to_lf(text: &str) -> Cow<'_, str> {
    if !text.contains('\r') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\r') {
        out.push_str(&rest[..at]);
        out.push('\n');
        rest = &rest[at + 1..];
        rest = rest.strip_prefix('\n').unwrap_or(rest);
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The result of [`apply_edits`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub content: String,
    /// Edits found only after normalising whitespace, quotes and dashes (see `fuzzy`).
    pub fuzzy: Vec<usize>,
}

/// Where one edit applies in the original content.
struct Span<'e> {
    start: usize,
    end: usize,
    index: usize,
    new_text: Cow<'e, str>,
}

/// Where a set of edits applies: spans sorted by position, not overlapping, and changing the
/// content.
struct Plan<'e> {
    spans: Vec<Span<'e>>,
    /// Edits found only after normalising whitespace, quotes and dashes (see `fuzzy`).
    fuzzy: Vec<usize>,
}

impl Plan<'_> {
    /// The pieces of the new content, in order: unchanged stretches of `content` and the
    /// replacement texts.
    fn pieces<'a>(&'a self, content: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        let mut cursor = 0;
        self.spans
            .iter()
            .flat_map(move |span| {
                let before = &content[cursor..span.start];
                cursor = span.end;
                [before, span.new_text.as_ref()]
            })
            .chain(std::iter::once_with(move || {
                let last = self.spans.last().map_or(0, |s| s.end);
                &content[last..]
            }))
    }

    fn replacements(&self) -> Vec<Replacement<'_>> {
        self.spans
            .iter()
            .map(|s| Replacement {
                start: s.start,
                end: s.end,
                new_text: &s.new_text,
            })
            .collect()
    }
}

/// True when the pieces put together are exactly `content`, compared without assembling them.
fn same_as(mut pieces: impl Iterator<Item = impl AsRef<str>>, content: &str) -> bool {
    let content = content.as_bytes();
    let mut at = 0;
    let matches = pieces.all(|piece| {
        let piece = piece.as_ref().as_bytes();
        let fits = content.get(at..at + piece.len()) == Some(piece);
        at += piece.len();
        fits
    });
    matches && at == content.len()
}

/// Apply `edits` to LF-normalised `content`. Pure: the core of the edit tool.
pub fn apply_edits(content: &str, edits: &[Edit]) -> Result<Applied, EditError> {
    let plan = plan_edits(content, edits)?;
    let out: String = plan.pieces(content).collect();
    Ok(Applied {
        content: out,
        fuzzy: plan.fuzzy,
    })
}

/// Find where every edit applies in LF-normalised `content`, without building anything.
fn plan_edits<'e>(content: &str, edits: &'e [Edit]) -> Result<Plan<'e>, EditError> {
    let total = edits.len();
    let mut spans: Vec<Span<'e>> = Vec::with_capacity(total);
    let mut fuzzy_content: Option<String> = None;
    let mut fuzzy_used = Vec::new();
    for (index, edit) in edits.iter().enumerate() {
        let old = normalize_to_lf(&edit.old_text);
        if old.is_empty() {
            return Err(EditError::EmptyOldText { index, total });
        }
        let (start, end) = match occurrences(content, &old) {
            (1, Some(start)) => (start, start + old.len()),
            (0, _) | (_, None) => {
                // Not there verbatim: try again forgiving whitespace and typography.
                let haystack = fuzzy_content.get_or_insert_with(|| fuzzy::normalize(content));
                let needle = fuzzy::normalize(&old);
                if needle.is_empty() {
                    return Err(EditError::NotFound { index, total });
                }
                match occurrences(haystack, &needle) {
                    (1, Some(at)) => {
                        fuzzy_used.push(index);
                        fuzzy::original_range(content, at, at + needle.len())
                    }
                    (0, _) | (_, None) => return Err(EditError::NotFound { index, total }),
                    (count, _) => {
                        return Err(EditError::Ambiguous {
                            index,
                            total,
                            count,
                        });
                    }
                }
            }
            (count, _) => {
                return Err(EditError::Ambiguous {
                    index,
                    total,
                    count,
                });
            }
        };
        spans.push(Span {
            start,
            end,
            index,
            new_text: normalize_to_lf(&edit.new_text),
        });
    }
    // The normalised copy of the file is not needed past this point.
    drop(fuzzy_content);
    spans.sort_by_key(|s| s.start);
    for pair in spans.windows(2) {
        if pair[0].end > pair[1].start {
            return Err(EditError::Overlap {
                first: pair[0].index.min(pair[1].index),
                second: pair[0].index.max(pair[1].index),
            });
        }
    }
    let plan = Plan {
        spans,
        fuzzy: fuzzy_used,
    };
    if same_as(plan.pieces(content), content) {
        return Err(EditError::NoChange);
    }
    Ok(plan)
}

/// Parse the edits, accepting what models actually send: `edits` as an array or as a JSON
/// string holding one, and Pi's legacy top-level `oldText`/`newText` pair.
fn parse_edits(args: &Args) -> Result<Vec<Edit>, ArgError> {
    let mut edits = Vec::new();
    let list: Option<Vec<Value>> = match args.get("edits") {
        None => None,
        Some(Value::Array(items)) => Some(items.clone()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(items)) => Some(items),
            Ok(Value::Object(obj)) => Some(vec![Value::Object(obj)]),
            _ => {
                return Err(ArgError::wrong(
                    "edits",
                    "an array of {oldText, newText}",
                    &json!(text),
                ));
            }
        },
        Some(Value::Object(obj)) => Some(vec![Value::Object(obj.clone())]),
        Some(other) => {
            return Err(ArgError::wrong(
                "edits",
                "an array of {oldText, newText}",
                other,
            ));
        }
    };
    for (i, item) in list.iter().flatten().enumerate() {
        let Value::Object(obj) = item else {
            return Err(ArgError::wrong(
                &format!("edits[{i}]"),
                "an object {oldText, newText}",
                item,
            ));
        };
        let field = |name: &str| -> Result<String, ArgError> {
            match obj.get(name) {
                Some(Value::String(s)) => Ok(s.clone()),
                None | Some(Value::Null) => Err(ArgError::Missing {
                    name: format!("edits[{i}].{name}"),
                    expected: "a string",
                }),
                Some(other) => Err(ArgError::WrongType {
                    name: format!("edits[{i}].{name}"),
                    expected: "a string",
                    got: describe(other),
                }),
            }
        };
        edits.push(Edit {
            old_text: field("oldText")?,
            new_text: field("newText")?,
        });
    }
    if let Some(old_text) = args.optional_str("oldText")? {
        let new_text = args.optional_str("newText")?.ok_or(ArgError::Missing {
            name: "newText".into(),
            expected: "a string, next to oldText",
        })?;
        edits.push(Edit { old_text, new_text });
    }
    if edits.is_empty() {
        return Err(ArgError::Missing {
            name: "edits".into(),
            expected: "a non-empty array of {oldText, newText}",
        });
    }
    Ok(edits)
}

impl Tool for EditTool {
    fn name(&self) -> &str {
        "edit"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit".into(),
            description: "Edit a single file using exact text replacement. Every edits[].oldText \
                          must match a unique, non-overlapping region of the original file. If two \
                          changes affect the same block or nearby lines, merge them into one edit \
                          instead of emitting overlapping edits. Do not include large unchanged \
                          regions just to connect distant changes."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
                    "edits": {
                        "type": "array",
                        "description": "One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "oldText": {"type": "string", "description": "Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call."},
                                "newText": {"type": "string", "description": "Replacement text for this targeted edit."}
                            },
                            "required": ["oldText", "newText"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["path", "edits"]
            }),
        }
    }

    fn is_mutating(&self) -> bool {
        true
    }

    fn mutation_target(&self, args: &Value, cwd: &Path) -> Option<PathBuf> {
        target_path(args, cwd)
    }

    fn execute<'a>(&'a self, args: Value, ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let parsed = (|| {
                let args = Args::parse(args)?;
                Ok::<_, ArgError>((args.required_str("path")?, parse_edits(&args)?))
            })();
            let (raw, edits) = match parsed {
                Ok(p) => p,
                Err(e) => return e.into_output("edit"),
            };
            if ctx.cancel.is_cancelled() {
                return ToolOutput::error("Operation aborted");
            }
            let abs = paths::resolve(&raw, &ctx.cwd);
            blocking(move || edit_file(&raw, &abs, &edits)).await
        })
    }
}

fn edit_file(raw: &str, abs: &Path, edits: &[Edit]) -> ToolOutput {
    edit_file_within(raw, abs, edits, MAX_EDIT_FILE_BYTES)
}

fn too_large(raw: &str, size: u64, limit: u64) -> ToolOutput {
    ToolOutput::error(format!(
        "Cannot edit {raw}: it is {}, larger than the edit tool's limit of {} (the file is held \
         in memory while it is edited). Change it with a streaming tool in bash instead (sed, \
         awk, patch).",
        format_size(size),
        format_size(limit)
    ))
}

/// [`edit_file`] with the size limit as a parameter, so tests can lower it.
fn edit_file_within(raw: &str, abs: &Path, edits: &[Edit], limit: u64) -> ToolOutput {
    let size = match fs::metadata(abs) {
        Ok(meta) if meta.is_file() => meta.len(),
        Ok(meta) if meta.is_dir() => {
            return ToolOutput::error(format!("Cannot edit {raw}: it is a directory"));
        }
        Ok(_) => {
            return ToolOutput::error(format!("Cannot edit {raw}: it is not a regular file"));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return ToolOutput::error(format!("File not found: {raw}"));
        }
        Err(e) => return ToolOutput::error(format!("Cannot read {raw}: {e}")),
    };
    if size > limit {
        return too_large(raw, size, limit);
    }
    let mut bytes = Vec::new();
    // Read no more than the limit allows, whatever the file has grown to since its size was
    // taken.
    let read = fs::File::open(abs).and_then(|file| {
        bytes.reserve_exact(usize::try_from(size).unwrap_or(0));
        file.take(limit.saturating_add(1)).read_to_end(&mut bytes)
    });
    if let Err(e) = read {
        return ToolOutput::error(format!("Cannot read {raw}: {e}"));
    }
    if bytes.len() as u64 > limit {
        return too_large(raw, bytes.len() as u64, limit);
    }
    if looks_binary(&bytes) {
        return ToolOutput::error(format!("Cannot edit {raw}: it is a binary file"));
    }
    let Ok(mut content) = String::from_utf8(bytes) else {
        return ToolOutput::error(format!(
            "Cannot edit {raw}: it is not valid UTF-8 text, and editing it would corrupt it"
        ));
    };
    let bom = content.starts_with('\u{FEFF}');
    if bom {
        content.drain(..'\u{FEFF}'.len_utf8());
    }
    let crlf = uses_crlf(&content);
    // The one copy of a file with carriage returns; the original goes as soon as it is made.
    if let Cow::Owned(lf) = normalize_to_lf(&content) {
        content = lf;
    }
    let plan = match plan_edits(&content, edits) {
        Ok(plan) => plan,
        Err(e) => return ToolOutput::error(format!("{e} (file: {raw})")),
    };
    let written = atomic_write_with(abs, |out| {
        if bom {
            out.write_all("\u{FEFF}".as_bytes())?;
        }
        for piece in plan.pieces(&content) {
            write_restoring(out, piece, crlf)?;
        }
        Ok(())
    });
    if let Err(e) = written {
        return ToolOutput::error(format!("Cannot write {raw}: {e}"));
    }
    let diff = replacement_diff(&content, &plan.replacements(), DIFF_CONTEXT);
    ToolOutput::ok(format!(
        "Successfully replaced {} block(s) in {raw}.",
        edits.len()
    ))
    .with_details(json!({
        "diff": diff.diff,
        "firstChangedLine": diff.first_changed_line,
        "added": diff.added,
        "removed": diff.removed,
        "fuzzyMatchedEdits": plan.fuzzy,
    }))
}

/// Write LF-normalised `text`, with its line breaks as CRLF again when the file used them.
fn write_restoring(out: &mut dyn Write, text: &str, crlf: bool) -> io::Result<()> {
    if !crlf {
        return out.write_all(text.as_bytes());
    }
    let mut lines = text.split('\n');
    if let Some(first) = lines.next() {
        out.write_all(first.as_bytes())?;
    }
    for line in lines {
        out.write_all(b"\r\n")?;
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// A file uses CRLF when its first line break is `\r\n` (Pi's rule).
fn uses_crlf(content: &str) -> bool {
    match content.find('\n') {
        Some(i) => i > 0 && content.as_bytes()[i - 1] == b'\r',
        None => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn e(old: &str, new: &str) -> Edit {
        Edit {
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    #[test]
    fn applies_against_the_original() {
        // The second edit matches the original "b", not the text produced by the first.
        let out = apply_edits("a b c", &[e("a", "b"), e("c", "d")])
            .unwrap()
            .content;
        assert_eq!(out, "b b d");
        let out = apply_edits("x\ny\nz\n", &[e("z", "Z"), e("x", "X")])
            .unwrap()
            .content;
        assert_eq!(out, "X\ny\nZ\n");
    }

    #[test]
    fn errors_name_the_edit() {
        assert_eq!(
            apply_edits("abc", &[e("a", "1"), e("q", "2")]).unwrap_err(),
            EditError::NotFound { index: 1, total: 2 }
        );
        assert_eq!(
            apply_edits("aa", &[e("a", "1")]).unwrap_err(),
            EditError::Ambiguous {
                index: 0,
                total: 1,
                count: 2
            }
        );
        assert_eq!(
            apply_edits("abcdef", &[e("abc", "1"), e("cde", "2")]).unwrap_err(),
            EditError::Overlap {
                first: 0,
                second: 1
            }
        );
        assert_eq!(
            apply_edits("abcdef", &[e("cde", "1"), e("abc", "2")]).unwrap_err(),
            EditError::Overlap {
                first: 0,
                second: 1
            }
        );
        assert_eq!(
            apply_edits("abc", &[e("", "x")]).unwrap_err(),
            EditError::EmptyOldText { index: 0, total: 1 }
        );
        assert_eq!(
            apply_edits("abc", &[e("b", "b")]).unwrap_err(),
            EditError::NoChange
        );
    }

    #[test]
    fn adjacent_edits_do_not_overlap() {
        assert_eq!(
            apply_edits("abcdef", &[e("abc", "1"), e("def", "2")])
                .unwrap()
                .content,
            "12"
        );
    }

    #[test]
    fn messages_are_specific() {
        let msg = EditError::NotFound { index: 2, total: 3 }.to_string();
        assert!(msg.contains("edits[2]"), "{msg}");
        let msg = EditError::Ambiguous {
            index: 0,
            total: 1,
            count: 3,
        }
        .to_string();
        assert!(msg.starts_with("Found 3 occurrences of the text"), "{msg}");
        let msg = EditError::Overlap {
            first: 0,
            second: 1,
        }
        .to_string();
        assert!(msg.contains("edits[0] and edits[1] overlap"), "{msg}");
    }

    #[test]
    fn crlf_input_text_is_normalized() {
        let out = apply_edits("a\nb\n", &[e("a\r\nb", "x\r\ny")])
            .unwrap()
            .content;
        assert_eq!(out, "x\ny\n");
    }

    #[test]
    fn fuzzy_fallback_replaces_only_the_match() {
        let file = "say \u{201C}hi\u{201D}\nrest   \n";
        let out = apply_edits(file, &[e("say \"hi\"", "say 'yo'")]).unwrap();
        assert_eq!(out.content, "say 'yo'\nrest   \n");
        assert_eq!(out.fuzzy, vec![0]);
        // Trailing whitespace the model left out.
        let out = apply_edits("a  \nb\nc  \n", &[e("a\nb", "X")]).unwrap();
        assert_eq!(out.content, "X\nc  \n");
        // Trailing whitespace the model added.
        let out = apply_edits("a\nb\n", &[e("a   \nb", "X")]).unwrap();
        assert_eq!(out.content, "X\n");
        // Exact matches are not reported as fuzzy.
        assert!(apply_edits("abc", &[e("b", "B")]).unwrap().fuzzy.is_empty());
    }

    #[test]
    fn fuzzy_fallback_still_demands_uniqueness() {
        assert_eq!(
            apply_edits("it\u{2019}s\nit's\n", &[e("it\u{2018}s", "x")]).unwrap_err(),
            EditError::Ambiguous {
                index: 0,
                total: 1,
                count: 2
            }
        );
        assert_eq!(
            apply_edits("abc", &[e("   ", "x")]).unwrap_err(),
            EditError::NotFound { index: 0, total: 1 }
        );
    }

    #[test]
    fn line_endings_normalise_in_one_pass() {
        assert!(matches!(normalize_to_lf("a\nb"), Cow::Borrowed("a\nb")));
        assert_eq!(normalize_to_lf("a\r\nb\rc\n\r\r\n"), "a\nb\nc\n\n\n");
        assert_eq!(normalize_to_lf("\r"), "\n");
    }

    /// A file of `lines` numbered lines, about 24 bytes each.
    fn numbered_file(dir: &Path, lines: usize) -> (PathBuf, String) {
        let path = dir.join("big.txt");
        let content: String = (0..lines)
            .map(|i| format!("line {i:06} of the file\n"))
            .collect();
        fs::write(&path, &content).unwrap();
        (path, content)
    }

    #[test]
    fn a_large_file_is_edited_with_a_diff_of_the_changed_lines_only() {
        let dir = tempfile::tempdir().unwrap();
        let (path, content) = numbered_file(dir.path(), 200_000);
        assert!(content.len() > 4_000_000);
        let edits = [
            e("line 150000 of", "LINE 150000 of"),
            e("line 000005 of the file\n", ""),
        ];
        let out = edit_file_within("big.txt", &path, &edits, 8 << 20);
        assert!(!out.is_error, "{:?}", out.content);
        let expected = content
            .replacen("line 150000 of", "LINE 150000 of", 1)
            .replacen("line 000005 of the file\n", "", 1);
        assert_eq!(fs::read_to_string(&path).unwrap(), expected);
        let details = out.details.unwrap();
        let diff = details["diff"].as_str().unwrap();
        // Two hunks of context around one removed line and one changed line, and three `...`.
        assert_eq!(diff.lines().count(), 4 * DIFF_CONTEXT + 3 + 3, "{diff}");
        assert!(diff.contains("-     6 line 000005 of the file"), "{diff}");
        assert!(diff.contains("+150000 LINE 150000 of the file"), "{diff}");
        assert_eq!(
            (details["added"].as_u64(), details["removed"].as_u64()),
            (Some(1), Some(2))
        );
        assert_eq!(details["firstChangedLine"], 6);
    }

    #[test]
    fn a_file_over_the_limit_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (path, content) = numbered_file(dir.path(), 100_000);
        let out = edit_file_within("big.txt", &path, &[e("line 000001", "x")], 1 << 20);
        assert!(out.is_error);
        let text = cadre_protocol::join_text(&out.content);
        assert!(
            text.starts_with(
                "Cannot edit big.txt: it is 2.3MB, larger than the edit tool's limit of 1.0MB"
            ),
            "{text}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), content);
        // The tool's own limit is the documented one.
        let text = cadre_protocol::join_text(
            &too_large("f", MAX_EDIT_FILE_BYTES + 1, MAX_EDIT_FILE_BYTES).content,
        );
        assert!(text.contains("limit of 128.0MB"), "{text}");
    }

    #[test]
    fn bom_crlf_and_fuzzy_matches_survive_the_streamed_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.txt");
        fs::write(&path, "\u{FEFF}a\r\nsay \u{201C}hi\u{201D}  \r\nc\r\n").unwrap();
        let out = edit_file_within(
            "w.txt",
            &path,
            &[e("say \"hi\"", "say 'yo'\nagain")],
            1 << 20,
        );
        assert!(!out.is_error, "{:?}", out.content);
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "\u{FEFF}a\r\nsay 'yo'\r\nagain\r\nc\r\n"
        );
        let details = out.details.unwrap();
        assert_eq!(details["fuzzyMatchedEdits"], json!([0]));
        assert_eq!(
            details["diff"],
            " 1 a\n-2 say \u{201C}hi\u{201D}  \n+2 say 'yo'\n+3 again\n 3 c"
        );
    }

    #[test]
    fn detects_line_endings() {
        assert!(uses_crlf("a\r\nb"));
        assert!(!uses_crlf("a\nb\r\n"));
        assert!(!uses_crlf("abc"));
        assert!(!uses_crlf("\n"));
    }

    #[test]
    fn argument_shapes() {
        let args =
            Args::parse(json!({"path": "p", "edits": [{"oldText": "a", "newText": "b"}]})).unwrap();
        assert_eq!(parse_edits(&args).unwrap(), vec![e("a", "b")]);
        let args = Args::parse(
            json!({"path": "p", "edits": "[{\"oldText\": \"a\", \"newText\": \"b\"}]"}),
        )
        .unwrap();
        assert_eq!(parse_edits(&args).unwrap(), vec![e("a", "b")]);
        let args = Args::parse(json!({"path": "p", "oldText": "a", "newText": "b"})).unwrap();
        assert_eq!(parse_edits(&args).unwrap(), vec![e("a", "b")]);
        let args = Args::parse(json!({"path": "p", "edits": []})).unwrap();
        assert!(
            parse_edits(&args)
                .unwrap_err()
                .to_string()
                .contains("non-empty")
        );
        let args = Args::parse(json!({"path": "p", "edits": [{"oldText": "a"}]})).unwrap();
        assert_eq!(
            parse_edits(&args).unwrap_err().to_string(),
            "missing required argument `edits[0].newText` (a string)"
        );
        let args =
            Args::parse(json!({"path": "p", "edits": [{"oldText": 1, "newText": "b"}]})).unwrap();
        assert!(
            parse_edits(&args)
                .unwrap_err()
                .to_string()
                .contains("edits[0].oldText")
        );
        let args = Args::parse(json!({"path": "p", "edits": 5})).unwrap();
        assert!(parse_edits(&args).is_err());
        let args = Args::parse(json!({"path": "p", "edits": ["x"]})).unwrap();
        assert!(
            parse_edits(&args)
                .unwrap_err()
                .to_string()
                .contains("edits[0]")
        );
        let args = Args::parse(json!({"path": "p", "oldText": "a"})).unwrap();
        assert!(
            parse_edits(&args)
                .unwrap_err()
                .to_string()
                .contains("newText")
        );
    }
}
