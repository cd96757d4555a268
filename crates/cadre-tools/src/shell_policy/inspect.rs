//! The inspection commands and their per-command option checks.

use super::lex::Word;

pub(super) const INSPECT_COMMANDS: &[&str] = &[
    "pwd", "ls", "cat", "head", "tail", "wc", "cut", "stat", "du", "grep", "rg", "uniq", "sort",
    "find", "git",
];

/// Commands with no option that writes or runs anything: glob patterns may expand freely.
const GLOB_SAFE: &[&str] = &[
    "pwd", "ls", "cat", "head", "tail", "wc", "cut", "stat", "du", "grep",
];

const GIT_SUBCOMMANDS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "branch",
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

/// A GNU-style long option (`--name` or `--name=value`) that abbreviates or equals `full`.
fn abbreviates(word: &str, full: &str) -> bool {
    let name = word.split_once('=').map_or(word, |(n, _)| n);
    name.len() > 2 && name.starts_with("--") && full.starts_with(name)
}

pub(super) fn check_inspect(name: &str, args: &[Word]) -> Result<(), String> {
    if !GLOB_SAFE.contains(&name)
        && let Some(w) = args.iter().find(|w| w.expands)
    {
        return Err(format!(
            "the unquoted pattern `{}` would expand to file names, which `{name}` could take as \
             options; quote it",
            w.text
        ));
    }
    match name {
        "find" => check_find(args),
        "rg" => check_rg(args),
        "sort" => check_sort(args),
        "uniq" => check_uniq(args),
        "git" => check_git(args),
        _ => Ok(()),
    }
}

fn check_find(args: &[Word]) -> Result<(), String> {
    const REFUSED: &[&str] = &[
        "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
    ];
    match args.iter().find(|w| REFUSED.contains(&w.text.as_str())) {
        Some(w) => Err(format!("find's `{}` runs commands or writes files", w.text)),
        None => Ok(()),
    }
}

fn check_rg(args: &[Word]) -> Result<(), String> {
    for w in args {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        let name = t.split_once('=').map_or(t, |(n, _)| n);
        if name == "--pre" || name == "--hostname-bin" {
            return Err(format!("rg's `{name}` runs another program"));
        }
    }
    Ok(())
}

fn check_sort(args: &[Word]) -> Result<(), String> {
    for w in args {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        for long in ["--output", "--temporary-directory", "--compress-program"] {
            if abbreviates(t, long) {
                return Err(format!("sort's `{long}` writes files or runs a program"));
            }
        }
        if let Some(cluster) = t.strip_prefix('-')
            && !cluster.starts_with('-')
            && (cluster.contains('o') || cluster.contains('T'))
        {
            return Err(format!(
                "sort's `{t}` holds `-o` (output file) or `-T` (temporary files); a field \
                 separator `o` must be a separate argument (`-t o`)"
            ));
        }
    }
    Ok(())
}

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

fn check_git(args: &[Word]) -> Result<(), String> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        match w.text.as_str() {
            "-C" => {
                if args.get(i + 1).is_none() {
                    return Err("git's `-C` needs a directory".into());
                }
                i += 2;
            }
            "-P" | "--no-pager" | "--no-optional-locks" => i += 1,
            t if t.starts_with('-') => {
                return Err(format!(
                    "git's global option `{t}` is not allowed (only -C, -P, --no-pager, \
                     --no-optional-locks)"
                ));
            }
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else {
        return Err(
            "git needs one of the subcommands status, log, diff, show, rev-parse, \
                    ls-files, branch"
                .into(),
        );
    };
    let sub = sub.text.as_str();
    if !GIT_SUBCOMMANDS.contains(&sub) {
        return Err(format!(
            "`git {sub}` is not an inspection command (allowed: {})",
            GIT_SUBCOMMANDS.join(", ")
        ));
    }
    let rest = &args[i + 1..];
    for w in rest {
        if w.text == "--" {
            break;
        }
        if abbreviates(&w.text, "--output") {
            return Err(format!("git's `{}` writes the output to a file", w.text));
        }
    }
    if sub == "branch" {
        return check_git_branch(rest);
    }
    Ok(())
}

fn check_git_branch(args: &[Word]) -> Result<(), String> {
    const FLAGS: &[&str] = &[
        "-a",
        "--all",
        "-r",
        "--remotes",
        "-l",
        "--list",
        "-v",
        "-vv",
        "--verbose",
        "--show-current",
        "-i",
        "--ignore-case",
        "-q",
        "--quiet",
        "--color",
        "--no-color",
        "--column",
        "--no-column",
        "--abbrev",
        "--no-abbrev",
        "--omit-empty",
    ];
    const WITH_VALUE: &[&str] = &[
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
        "--sort",
        "--format",
    ];
    const EQUALS_FLAGS: &[&str] = &["--color", "--column", "--abbrev"];
    let listing = args.iter().any(|w| {
        w.text == "--list"
            || w.text == "-l"
            || (w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('l'))
    });
    let refuse = |t: &str| {
        Err(format!(
            "`git branch` is allowed only in its listing forms; `{t}` could create, delete, \
             rename or configure a branch"
        ))
    };
    let mut iter = args.iter().peekable();
    let mut options_done = false;
    while let Some(w) = iter.next() {
        let t = w.text.as_str();
        if !options_done && t == "--" {
            options_done = true;
            continue;
        }
        if options_done || !t.starts_with('-') {
            if !listing {
                return refuse(t);
            }
            continue;
        }
        if FLAGS.contains(&t) {
            continue;
        }
        let name = t.split_once('=').map(|(n, _)| n);
        if let Some(name) = name
            && (WITH_VALUE.contains(&name) || EQUALS_FLAGS.contains(&name))
        {
            continue;
        }
        if WITH_VALUE.contains(&t) {
            // The value is optional for --contains/--merged (default HEAD).
            if iter.peek().is_some_and(|n| !n.text.starts_with('-')) {
                iter.next();
            }
            continue;
        }
        if let Some(cluster) = t.strip_prefix('-')
            && !cluster.is_empty()
            && !cluster.starts_with('-')
            && cluster.chars().all(|c| "arlviq".contains(c))
        {
            continue;
        }
        return refuse(t);
    }
    Ok(())
}
