//! `edit{path, edits:[{oldText, newText}]}`: exact-text replacements in one file.
//!
//! Every `oldText` is matched against the ORIGINAL file (not after earlier edits), must occur
//! exactly once, and must not overlap another edit; the call is all-or-nothing. Matching happens
//! on LF-normalised text without a BOM, because the model never sends `\r` or an invisible BOM;
//! the file's line endings (of its first line break) and BOM are restored on write, like Pi.
//! An `oldText` not found verbatim is looked up once more forgiving trailing whitespace and
//! typographic quotes/dashes/spaces (`fuzzy`), still required to be unique.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use cadre_protocol::ToolSpec;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use thiserror::Error;

use crate::args::{ArgError, Args, describe};
use crate::diff::line_diff;
use crate::fsutil::{atomic_write, looks_binary};
use crate::registry::{Tool, ToolContext, ToolOutput};
use crate::write::target_path;
use crate::{blocking, fuzzy, paths};

/// Unchanged lines shown around each change in the diff.
const DIFF_CONTEXT: usize = 4;

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

pub fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// The result of [`apply_edits`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub content: String,
    /// Edits found only after normalising whitespace, quotes and dashes (see `fuzzy`).
    pub fuzzy: Vec<usize>,
}

/// Where one edit applies in the original content.
struct Span {
    start: usize,
    end: usize,
    index: usize,
    new_text: String,
}

/// Apply `edits` to LF-normalised `content`. Pure: the core of the edit tool.
pub fn apply_edits(content: &str, edits: &[Edit]) -> Result<Applied, EditError> {
    let total = edits.len();
    let mut spans: Vec<Span> = Vec::with_capacity(total);
    let mut fuzzy_content: Option<fuzzy::Normalized> = None;
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
                let needle = fuzzy::normalize(&old).text;
                if needle.is_empty() {
                    return Err(EditError::NotFound { index, total });
                }
                match occurrences(&haystack.text, &needle) {
                    (1, Some(at)) => {
                        fuzzy_used.push(index);
                        haystack.original_range(at, at + needle.len())
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
    spans.sort_by_key(|s| s.start);
    for pair in spans.windows(2) {
        if pair[0].end > pair[1].start {
            return Err(EditError::Overlap {
                first: pair[0].index.min(pair[1].index),
                second: pair[0].index.max(pair[1].index),
            });
        }
    }
    let mut out = String::with_capacity(content.len());
    let mut cursor = 0;
    for span in &spans {
        out.push_str(&content[cursor..span.start]);
        out.push_str(&span.new_text);
        cursor = span.end;
    }
    out.push_str(&content[cursor..]);
    if out == content {
        return Err(EditError::NoChange);
    }
    Ok(Applied {
        content: out,
        fuzzy: fuzzy_used,
    })
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
    match fs::metadata(abs) {
        Ok(meta) if meta.is_file() => {}
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
    }
    let bytes = match fs::read(abs) {
        Ok(b) => b,
        Err(e) => return ToolOutput::error(format!("Cannot read {raw}: {e}")),
    };
    if looks_binary(&bytes) {
        return ToolOutput::error(format!("Cannot edit {raw}: it is a binary file"));
    }
    let Ok(raw_content) = String::from_utf8(bytes) else {
        return ToolOutput::error(format!(
            "Cannot edit {raw}: it is not valid UTF-8 text, and editing it would corrupt it"
        ));
    };
    let (bom, content) = match raw_content.strip_prefix('\u{FEFF}') {
        Some(rest) => ("\u{FEFF}", rest),
        None => ("", raw_content.as_str()),
    };
    let crlf = uses_crlf(content);
    let normalized = normalize_to_lf(content);
    let Applied {
        content: new_content,
        fuzzy,
    } = match apply_edits(&normalized, edits) {
        Ok(applied) => applied,
        Err(e) => return ToolOutput::error(format!("{e} (file: {raw})")),
    };
    let restored = if crlf {
        new_content.replace('\n', "\r\n")
    } else {
        new_content.clone()
    };
    let final_content = format!("{bom}{restored}");
    if let Err(e) = atomic_write(abs, final_content.as_bytes()) {
        return ToolOutput::error(format!("Cannot write {raw}: {e}"));
    }
    let diff = line_diff(&normalized, &new_content, DIFF_CONTEXT);
    ToolOutput::ok(format!(
        "Successfully replaced {} block(s) in {raw}.",
        edits.len()
    ))
    .with_details(json!({
        "diff": diff.diff,
        "firstChangedLine": diff.first_changed_line,
        "added": diff.added,
        "removed": diff.removed,
        "fuzzyMatchedEdits": fuzzy,
    }))
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
