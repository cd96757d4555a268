//! The reviewer's answer (SPEC V5 step 3), read fail-closed: anything short of a clean PASS
//! backed by a successful check is not a PASS.
//!
//! # The contract
//!
//! ```text
//! VERDICT: PASS | NEEDS_FIX | UNCERTAIN
//! FINDINGS:
//! - <finding>            (or exactly `- NONE`)
//! ```
//!
//! # Tolerance (decided here)
//!
//! - A **verdict line** is any line whose first word, once Markdown decoration is removed, is
//!   `verdict` in any case, followed by a colon. Decoration is `*` and `` ` `` anywhere on the
//!   line, `_` around it, leading `#`/`>` and blanks, and `\_` escapes. So `**VERDICT: PASS**`,
//!   `**VERDICT:** PASS`, `## Verdict: pass` and `VERDICT: NEEDS\_FIX` are read as written.
//!   The value must be exactly `PASS`, `NEEDS_FIX` or `UNCERTAIN` (any case, `NEEDS FIX` and
//!   `NEEDS-FIX` accepted, a trailing `.` ignored); a verdict line with any other value
//!   (`VERDICT: PASS (mostly)`) is malformed and the answer is UNCERTAIN. A line that merely
//!   mentions the word (`The verdict below…`) is not a verdict line.
//! - Exactly one verdict line: none or more than one (even if they agree) is UNCERTAIN.
//! - The **findings block** starts at a line `FINDINGS:` (same decoration rules; items may
//!   follow on the same line) and runs to the end of the answer, the verdict line, or the first
//!   unindented non-item line after a blank line (closing prose is not a finding). Items are
//!   lines starting with `-`, `*`, `+`, `•` or `1.`; other lines continue the previous item.
//!   Exactly one block; none or several is UNCERTAIN.
//! - `NONE` is a block whose only item is `none` (any case, decoration and a trailing `.`
//!   ignored). A block with no items at all is UNCERTAIN.
//! - The exact reply `review packet digest mismatch` is its own UNCERTAIN reason.
//!
//! Then: PASS with findings other than NONE, NEEDS_FIX with NONE, or PASS without a
//! successful check (V4) are UNCERTAIN. NEEDS_FIX without a successful check stays NEEDS_FIX:
//! the fix round requires the implementer to run its checks anyway.

use std::fmt;

use super::packet::DIGEST_MISMATCH_REPLY;

/// The reviewer's verdict, after the fail-closed rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    NeedsFix {
        findings: Vec<String>,
    },
    Uncertain {
        reason: UncertainReason,
        findings: Vec<String>,
    },
}

impl Verdict {
    pub fn is_pass(&self) -> bool {
        *self == Verdict::Pass
    }

    /// `PASS`, `NEEDS_FIX` or `UNCERTAIN`.
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::NeedsFix { .. } => "NEEDS_FIX",
            Verdict::Uncertain { .. } => "UNCERTAIN",
        }
    }

    pub fn findings(&self) -> &[String] {
        match self {
            Verdict::Pass => &[],
            Verdict::NeedsFix { findings } | Verdict::Uncertain { findings, .. } => findings,
        }
    }
}

/// Why an answer was read as UNCERTAIN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UncertainReason {
    /// The reviewer itself said UNCERTAIN.
    Reviewer,
    MissingVerdict,
    DuplicateVerdict(usize),
    /// A verdict line whose value is not one of the three.
    MalformedVerdict(String),
    MissingFindings,
    DuplicateFindings(usize),
    EmptyFindings,
    PassWithFindings,
    NeedsFixWithoutFindings,
    NoSuccessfulCheck,
    DigestMismatch,
}

impl fmt::Display for UncertainReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UncertainReason::Reviewer => f.write_str("the reviewer was uncertain"),
            UncertainReason::MissingVerdict => f.write_str("the review has no VERDICT line"),
            UncertainReason::DuplicateVerdict(n) => {
                write!(
                    f,
                    "the review has {n} VERDICT lines; exactly one is required"
                )
            }
            UncertainReason::MalformedVerdict(line) => {
                write!(f, "the VERDICT line is malformed: {line}")
            }
            UncertainReason::MissingFindings => f.write_str("the review has no FINDINGS block"),
            UncertainReason::DuplicateFindings(n) => {
                write!(
                    f,
                    "the review has {n} FINDINGS blocks; exactly one is required"
                )
            }
            UncertainReason::EmptyFindings => f.write_str("the FINDINGS block is empty"),
            UncertainReason::PassWithFindings => {
                f.write_str("VERDICT: PASS came with findings other than `- NONE`")
            }
            UncertainReason::NeedsFixWithoutFindings => {
                f.write_str("VERDICT: NEEDS_FIX came with `- NONE` findings")
            }
            UncertainReason::NoSuccessfulCheck => f.write_str(
                "VERDICT: PASS without a successful verification check after the last file change",
            ),
            UncertainReason::DigestMismatch => {
                f.write_str("the reviewer reported a review packet digest mismatch")
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    Pass,
    NeedsFix,
    Uncertain,
}

/// Strip Markdown decoration from a line for header matching.
fn undecorate(line: &str) -> String {
    let s: String = line.replace("\\_", "_").replace(['*', '`'], "");
    let s = s.trim().trim_start_matches(['#', '>', ' ', '\t']).trim();
    s.trim_matches('_').trim().to_string()
}

/// `Some(rest)` when `line` is `<keyword>: rest` (keyword in any case).
fn header<'a>(line: &'a str, keyword: &str) -> Option<&'a str> {
    let head = line.get(..keyword.len())?;
    if !head.eq_ignore_ascii_case(keyword) {
        return None;
    }
    line[keyword.len()..].trim_start().strip_prefix(':')
}

fn parse_value(rest: &str) -> Option<Value> {
    let v = rest
        .trim()
        .trim_end_matches('.')
        .trim()
        .to_ascii_uppercase();
    match v.replace([' ', '-'], "_").as_str() {
        "PASS" => Some(Value::Pass),
        "NEEDS_FIX" => Some(Value::NeedsFix),
        "UNCERTAIN" => Some(Value::Uncertain),
        _ => None,
    }
}

/// An item marker at the start of `line`: the item's text.
fn item_text(line: &str) -> Option<&str> {
    let t = line.trim_start();
    for marker in ["- ", "* ", "+ ", "• "] {
        if let Some(rest) = t.strip_prefix(marker) {
            return Some(rest.trim());
        }
    }
    if matches!(t, "-" | "*" | "+" | "•") {
        return Some("");
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0
        && let Some(rest) = t[digits..]
            .strip_prefix(". ")
            .or(t[digits..].strip_prefix(") "))
    {
        return Some(rest.trim());
    }
    None
}

fn is_none_item(item: &str) -> bool {
    let s = undecorate(item);
    s.trim_end_matches('.').trim().eq_ignore_ascii_case("none")
}

/// Read a reviewer's answer. `has_successful_check` is the implementer's V4 evidence.
pub fn parse_verdict(text: &str, has_successful_check: bool) -> Verdict {
    if text.trim() == DIGEST_MISMATCH_REPLY {
        return uncertain(UncertainReason::DigestMismatch, Vec::new());
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut verdicts: Vec<Result<Value, String>> = Vec::new();
    let mut blocks: Vec<Vec<String>> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let clean = undecorate(lines[i]);
        if let Some(rest) = header(&clean, "verdict") {
            verdicts.push(parse_value(rest).ok_or_else(|| lines[i].trim().to_string()));
            i += 1;
        } else if let Some(rest) = header(&clean, "findings") {
            let (items, next) = read_block(&lines, i + 1, rest);
            blocks.push(items);
            i = next;
        } else {
            i += 1;
        }
    }

    let value = match verdicts.as_slice() {
        [] => return uncertain(UncertainReason::MissingVerdict, first_block(&blocks)),
        [Err(line)] => {
            return uncertain(
                UncertainReason::MalformedVerdict(line.clone()),
                first_block(&blocks),
            );
        }
        [Ok(v)] => *v,
        many => {
            return uncertain(
                UncertainReason::DuplicateVerdict(many.len()),
                first_block(&blocks),
            );
        }
    };
    let items = match blocks.as_slice() {
        [] => return uncertain(UncertainReason::MissingFindings, Vec::new()),
        [one] => one.clone(),
        many => {
            return uncertain(
                UncertainReason::DuplicateFindings(many.len()),
                many.concat(),
            );
        }
    };
    if items.is_empty() {
        return uncertain(UncertainReason::EmptyFindings, Vec::new());
    }
    let none = items.len() == 1 && is_none_item(&items[0]);
    let findings = if none { Vec::new() } else { items };
    match value {
        Value::Uncertain => uncertain(UncertainReason::Reviewer, findings),
        Value::NeedsFix if none => uncertain(UncertainReason::NeedsFixWithoutFindings, findings),
        Value::NeedsFix => Verdict::NeedsFix { findings },
        Value::Pass if !none => uncertain(UncertainReason::PassWithFindings, findings),
        Value::Pass if !has_successful_check => {
            uncertain(UncertainReason::NoSuccessfulCheck, findings)
        }
        Value::Pass => Verdict::Pass,
    }
}

fn uncertain(reason: UncertainReason, findings: Vec<String>) -> Verdict {
    Verdict::Uncertain { reason, findings }
}

fn first_block(blocks: &[Vec<String>]) -> Vec<String> {
    blocks
        .first()
        .map(|b| {
            if b.len() == 1 && is_none_item(&b[0]) {
                Vec::new()
            } else {
                b.clone()
            }
        })
        .unwrap_or_default()
}

/// A line without Markdown block-quote markers (`> `).
fn unquote(line: &str) -> &str {
    let mut l = line;
    while let Some(rest) = l.trim_start().strip_prefix('>') {
        l = rest.strip_prefix(' ').unwrap_or(rest);
    }
    l
}

/// The items of a findings block starting at `start`, with `inline` the text after
/// `FINDINGS:` on the header line; returns the items and the line after the block.
fn read_block(lines: &[&str], start: usize, inline: &str) -> (Vec<String>, usize) {
    let mut items: Vec<String> = Vec::new();
    let inline = inline.trim();
    if !inline.is_empty() {
        items.push(item_text(inline).unwrap_or(inline).to_string());
    }
    let mut blank_before = false;
    let mut i = start;
    while i < lines.len() {
        let line = unquote(lines[i]);
        let clean = undecorate(line);
        if header(&clean, "verdict").is_some() || header(&clean, "findings").is_some() {
            break;
        }
        if line.trim().is_empty() || line.trim() == "```" {
            blank_before = blank_before || line.trim().is_empty();
            i += 1;
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        if let Some(text) = item_text(line).filter(|_| !indented || items.is_empty()) {
            items.push(text.to_string());
        } else if blank_before && !indented {
            break; // closing prose after the block
        } else if let Some(last) = items.last_mut() {
            last.push(' ');
            last.push_str(line.trim());
        } else {
            items.push(line.trim().to_string());
        }
        blank_before = false;
        i += 1;
    }
    (items, i)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use UncertainReason as R;

    fn pass() -> Verdict {
        Verdict::Pass
    }
    fn fix(f: &[&str]) -> Verdict {
        Verdict::NeedsFix {
            findings: f.iter().map(|s| s.to_string()).collect(),
        }
    }
    fn unc(reason: UncertainReason, f: &[&str]) -> Verdict {
        Verdict::Uncertain {
            reason,
            findings: f.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn every_rule() {
        let cases: Vec<(&str, &str, bool, Verdict)> = vec![
            (
                "clean pass",
                "VERDICT: PASS\nFINDINGS:\n- NONE",
                true,
                pass(),
            ),
            (
                "pass without a successful check",
                "VERDICT: PASS\nFINDINGS:\n- NONE",
                false,
                unc(R::NoSuccessfulCheck, &[]),
            ),
            (
                "pass with findings",
                "VERDICT: PASS\nFINDINGS:\n- a.rs:3 off by one",
                true,
                unc(R::PassWithFindings, &["a.rs:3 off by one"]),
            ),
            (
                "pass with NONE and more",
                "VERDICT: PASS\nFINDINGS:\n- NONE\n- but a.rs is odd",
                true,
                unc(R::PassWithFindings, &["NONE", "but a.rs is odd"]),
            ),
            (
                "needs fix",
                "VERDICT: NEEDS_FIX\nFINDINGS:\n- a.rs:3 off by one\n- missing test",
                true,
                fix(&["a.rs:3 off by one", "missing test"]),
            ),
            (
                "needs fix without a check stays needs fix",
                "VERDICT: NEEDS_FIX\nFINDINGS:\n- x",
                false,
                fix(&["x"]),
            ),
            (
                "needs fix with NONE",
                "VERDICT: NEEDS_FIX\nFINDINGS:\n- NONE",
                true,
                unc(R::NeedsFixWithoutFindings, &[]),
            ),
            (
                "reviewer uncertain",
                "VERDICT: UNCERTAIN\nFINDINGS:\n- cannot build",
                true,
                unc(R::Reviewer, &["cannot build"]),
            ),
            (
                "reviewer uncertain with NONE",
                "VERDICT: UNCERTAIN\nFINDINGS:\n- NONE",
                true,
                unc(R::Reviewer, &[]),
            ),
            (
                "missing verdict",
                "FINDINGS:\n- NONE",
                true,
                unc(R::MissingVerdict, &[]),
            ),
            (
                "missing verdict keeps findings",
                "Looks bad.\nFINDINGS:\n- x",
                true,
                unc(R::MissingVerdict, &["x"]),
            ),
            (
                "duplicate verdict",
                "VERDICT: PASS\nVERDICT: PASS\nFINDINGS:\n- NONE",
                true,
                unc(R::DuplicateVerdict(2), &[]),
            ),
            (
                "conflicting verdicts",
                "VERDICT: NEEDS_FIX\nFINDINGS:\n- x\nVERDICT: PASS",
                true,
                unc(R::DuplicateVerdict(2), &["x"]),
            ),
            (
                "malformed verdict",
                "VERDICT: PASS (mostly)\nFINDINGS:\n- NONE",
                true,
                unc(R::MalformedVerdict("VERDICT: PASS (mostly)".into()), &[]),
            ),
            (
                "verdict with two values",
                "VERDICT: PASS|NEEDS_FIX|UNCERTAIN\nFINDINGS:\n- NONE",
                true,
                unc(
                    R::MalformedVerdict("VERDICT: PASS|NEEDS_FIX|UNCERTAIN".into()),
                    &[],
                ),
            ),
            (
                "empty verdict",
                "VERDICT:\nFINDINGS:\n- NONE",
                true,
                unc(R::MalformedVerdict("VERDICT:".into()), &[]),
            ),
            (
                "missing findings",
                "VERDICT: PASS",
                true,
                unc(R::MissingFindings, &[]),
            ),
            (
                "empty findings",
                "VERDICT: PASS\nFINDINGS:",
                true,
                unc(R::EmptyFindings, &[]),
            ),
            (
                "empty findings before closing prose",
                "VERDICT: PASS\nFINDINGS:\n\nAll good.",
                true,
                unc(R::EmptyFindings, &[]),
            ),
            (
                "duplicate findings",
                "VERDICT: PASS\nFINDINGS:\n- NONE\nFINDINGS:\n- NONE",
                true,
                unc(R::DuplicateFindings(2), &["NONE", "NONE"]),
            ),
            ("empty answer", "", true, unc(R::MissingVerdict, &[])),
            (
                "digest mismatch reply",
                "review packet digest mismatch\n",
                true,
                unc(R::DigestMismatch, &[]),
            ),
        ];
        for (name, text, ok, want) in cases {
            assert_eq!(parse_verdict(text, ok), want, "{name}");
        }
    }

    #[test]
    fn markdown_and_spelling_tolerance() {
        let passes = [
            "**VERDICT: PASS**\n**FINDINGS:**\n- NONE",
            "**VERDICT:** PASS\nFINDINGS:\n- NONE",
            "VERDICT: **PASS**\nFINDINGS:\n- **NONE**",
            "## VERDICT: PASS\n## FINDINGS\u{3a}\n- NONE",
            "`VERDICT: PASS`\n`FINDINGS:`\n- `NONE`",
            "  verdict : pass.\n  findings:\n  - none.",
            "Verdict: Pass\nFindings: NONE",
            "Verdict: Pass\nFindings: - NONE",
            "__VERDICT: PASS__\nFINDINGS:\n* None",
            "> VERDICT: PASS\n> FINDINGS:\n> - NONE",
            "```\nVERDICT: PASS\nFINDINGS:\n- NONE\n```",
            "I checked git diff and ran the tests.\n\nVERDICT: PASS\nFINDINGS:\n- NONE\n\nThe change is small and correct.",
            "VERDICT: PASS\r\nFINDINGS:\r\n- NONE\r\n",
        ];
        for text in passes {
            assert_eq!(parse_verdict(text, true), Verdict::Pass, "{text:?}");
        }
        let needs_fix = [
            "VERDICT: NEEDS_FIX\nFINDINGS:\n- x",
            "VERDICT: NEEDS\\_FIX\nFINDINGS:\n- x",
            "VERDICT: needs fix\nFINDINGS:\n- x",
            "VERDICT: Needs-Fix\nFINDINGS:\n1. x",
            "**VERDICT: NEEDS_FIX**\nFINDINGS:\n+ x",
        ];
        for text in needs_fix {
            assert_eq!(parse_verdict(text, true), fix(&["x"]), "{text:?}");
        }
        // Mentions of the word are not verdict lines.
        let text = "The verdict below is final.\nVERDICT: PASS\nFINDINGS:\n- NONE";
        assert_eq!(parse_verdict(text, true), Verdict::Pass);
        // A bullet verdict is not a verdict line: fail closed.
        assert_eq!(
            parse_verdict("- VERDICT: PASS\nFINDINGS:\n- NONE", true),
            unc(R::MissingVerdict, &[])
        );
    }

    #[test]
    fn findings_items_and_continuations() {
        let text = "VERDICT: NEEDS_FIX\nFINDINGS:\n- src/a.rs:10 the lock is\n  held across await\n- missing test for\nthe error path\n2. numbered item\n\n- after a blank line\n\nClosing remarks here.\nMore prose.";
        assert_eq!(
            parse_verdict(text, true),
            fix(&[
                "src/a.rs:10 the lock is held across await",
                "missing test for the error path",
                "numbered item",
                "after a blank line",
            ])
        );
        // Text before any item is an item.
        assert_eq!(
            parse_verdict("VERDICT: NEEDS_FIX\nFINDINGS:\nthe build fails", true),
            fix(&["the build fails"])
        );
        // Findings may come before the verdict; the verdict line ends the block.
        assert_eq!(
            parse_verdict("FINDINGS:\n- x\nVERDICT: NEEDS_FIX\nthanks", true),
            fix(&["x"])
        );
        // Inline finding on the header line.
        assert_eq!(
            parse_verdict("VERDICT: NEEDS_FIX\nFINDINGS: - the build fails", true),
            fix(&["the build fails"])
        );
        // NONE only counts alone and as a whole item.
        assert_eq!(
            parse_verdict("VERDICT: PASS\nFINDINGS:\n- NONE, but see below", true),
            unc(R::PassWithFindings, &["NONE, but see below"])
        );
    }

    #[test]
    fn accessors_and_messages() {
        assert!(pass().is_pass());
        assert_eq!(pass().label(), "PASS");
        assert_eq!(fix(&["x"]).label(), "NEEDS_FIX");
        assert_eq!(fix(&["x"]).findings(), ["x".to_string()]);
        assert_eq!(unc(R::Reviewer, &[]).label(), "UNCERTAIN");
        assert!(pass().findings().is_empty());
        for r in [
            R::Reviewer,
            R::MissingVerdict,
            R::DuplicateVerdict(2),
            R::MalformedVerdict("x".into()),
            R::MissingFindings,
            R::DuplicateFindings(2),
            R::EmptyFindings,
            R::PassWithFindings,
            R::NeedsFixWithoutFindings,
            R::NoSuccessfulCheck,
            R::DigestMismatch,
        ] {
            assert!(!r.to_string().is_empty());
        }
    }
}
