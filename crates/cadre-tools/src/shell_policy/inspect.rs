//! The inspection commands and their per-command option checks.

use super::git;
use super::lex::Word;
use super::options::{Options, Style, Why};

pub(super) const INSPECT_COMMANDS: &[&str] = &[
    "pwd", "ls", "cat", "head", "tail", "wc", "cut", "stat", "du", "grep", "rg", "uniq", "sort",
    "find", "git",
];

/// Commands with no option that writes or runs anything: glob patterns may expand freely.
const GLOB_SAFE: &[&str] = &[
    "pwd", "ls", "cat", "head", "tail", "wc", "cut", "stat", "du", "grep",
];

pub(super) fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((var, _)) => {
            let mut chars = var.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

pub(super) fn check_inspect(name: &str, args: &[Word]) -> Result<(), String> {
    if !GLOB_SAFE.contains(&name) {
        // uniq counts its operands (a second one is its output file), so no pattern at all.
        let risky = |w: &&Word| {
            if name == "uniq" {
                w.expands
            } else {
                w.may_be_option
            }
        };
        if let Some(w) = args.iter().find(risky) {
            return Err(format!(
                "the unquoted pattern `{}` could expand to a file name that `{name}` would take \
                 as an option or an output file; quote it{}",
                w.text,
                if name == "uniq" {
                    ""
                } else {
                    " or start it with `./`"
                }
            ));
        }
    }
    let words: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    match name {
        "find" => FIND.check(&words),
        "rg" => RG.check(&words),
        "sort" => SORT.check(&words),
        "uniq" => check_uniq(args),
        "git" => git::check(args),
        _ => Ok(()),
    }
}

/// find's actions that run commands, delete or write files. Its predicates are exact names
/// and `--` does not end its expression.
const FIND: Options = Options {
    long: &[
        ("-exec", Why::Runs),
        ("-execdir", Why::Runs),
        ("-ok", Why::Runs),
        ("-okdir", Why::Runs),
        ("-delete", Why::Writes),
        ("-fprint", Why::Writes),
        ("-fprint0", Why::Writes),
        ("-fprintf", Why::Writes),
        ("-fls", Why::Writes),
    ],
    single_dash_long: true,
    stop_at_dashdash: false,
    ..Options::new("find", Style::Exact)
};

/// ripgrep's options that run programs. `--pre-glob` only selects files for `--pre`; it is
/// refused with it so neither appears. (Matching by prefix costs nothing: ripgrep takes exact
/// names only.) lexopt takes any next word as a value, `--` too: `rg -e -- --pre=x` searches
/// for `--` and runs `x`.
const RG: Options = Options {
    long: &[
        ("--pre", Why::Runs),
        ("--pre-glob", Why::Runs),
        ("--hostname-bin", Why::Runs),
    ],
    // ripgrep's one-letter switches (`-A -B -C -d -E -e -f -g -j -M -m -r -t -T` take values).
    short_flags: "abcFhHiIlLnNopPqsSuUvVwxz0",
    ..Options::new("rg", Style::Prefix)
};

/// GNU sort: an output file, temporary files, a compressor. `-k -t -S -T -o -y` take values
/// (sort's getopt string is `-bcCdfghik:mMno:rRsS:t:T:uVy:z`), so `-to` is the field
/// separator `o`, while `-ro out` holds `-o`. Its long options with a required value
/// (`--random-source`, `--files0-from`, `--batch-size`, …) take `--` as that value, so a
/// `--` after one does not end the check.
const SORT: Options = Options {
    long: &[
        ("--output", Why::Writes),
        ("--temporary-directory", Why::Writes),
        ("--compress-program", Why::Runs),
    ],
    short: &[('o', Why::Writes), ('T', Why::Writes)],
    short_values: "ktSToy",
    short_flags: "bcCdfghiMmnrRsuVz",
    ..Options::new("sort", Style::Prefix)
};

fn check_uniq(args: &[Word]) -> Result<(), String> {
    const WITH_VALUE: &[&str] = &[
        "-f",
        "-s",
        "-w",
        "--skip-fields",
        "--skip-chars",
        "--check-chars",
    ];
    let mut operands = 0;
    let mut options_done = false;
    let mut iter = args.iter();
    while let Some(w) = iter.next() {
        let t = w.text.as_str();
        if !options_done && t == "--" {
            options_done = true;
        } else if !options_done && t.starts_with('-') && t != "-" {
            if WITH_VALUE.contains(&t) {
                iter.next();
            }
        } else {
            operands += 1;
        }
    }
    if operands > 1 {
        return Err("uniq's second file operand is an output file it would write".into());
    }
    Ok(())
}
