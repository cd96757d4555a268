//! `git` under `inspect` and `verify`: the project's own repository, read-only subcommands,
//! and no option that runs a program or writes a file.
//!
//! A repository can commit a directory that looks like a bare git directory (`HEAD`,
//! `objects/`, `refs/`, and a `config` with `core.fsmonitor = sh payload.sh`, `core.worktree`,
//! `diff.external`, …). git runs those programs as soon as it is pointed at that directory, so
//! every way of choosing a repository, a configuration or git's own program directory is
//! refused: the global options other than a short list, and (in the caller) `cd`,
//! assignments (`GIT_DIR=…`) and `env`. git then finds the project's repository from the
//! working directory, like the user's own git.

use super::lex::Word;
use super::options::{Options, Style, Why};

pub(super) const SUBCOMMANDS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "branch",
];

/// Global options that choose nothing: no pager, no optional index writes, literal pathspecs.
const GLOBAL_OK: &[&str] = &[
    "-P",
    "--no-pager",
    "--no-optional-locks",
    "--literal-pathspecs",
];

/// Options refused in every allowed subcommand. git's parse-options takes unique prefixes of
/// long options (`--outp` for `--output` in the builtins that use it), so prefixes are refused
/// too; `--text` is the one exact name among them.
const SUBCOMMAND_OPTIONS: Options = Options {
    long: &[
        ("--output", Why::Writes),
        // Both run a program named by configuration (`diff.external`, `diff.<driver>.textconv`).
        ("--ext-diff", Why::Runs),
        ("--textconv", Why::Runs),
        // Runs `gpg.program` to check signatures.
        ("--show-signature", Why::Runs),
    ],
    exact_ok: &["--text"],
    ..Options::new("git", Style::Prefix)
};

/// Why a global option is refused, in words the model can act on.
fn global_refusal(option: &str) -> String {
    let name = option.split_once('=').map_or(option, |(n, _)| n);
    // `-Cdir` and `-ckey=value` are not git's spelling, but name what they mean.
    let name = match name.get(..2) {
        Some(short @ ("-C" | "-c" | "-p")) => short,
        _ => name,
    };
    let why = match name {
        "-C" => {
            "would run git on another directory, whose repository and configuration (a \
             repository can commit one) can make git run programs; git runs in the project \
             directory only — name a path after `--` instead (`git log -- sub`)"
        }
        "--git-dir" | "--work-tree" | "--bare" | "--namespace" => {
            "would choose another repository, whose configuration can make git run programs; \
             git uses the project's repository only"
        }
        "-c" | "--config-env" => {
            "would set configuration, which can name programs (a pager, an external diff, \
             fsmonitor); git runs with the project's configuration only"
        }
        "--exec-path" => "would make git run its helper programs from another directory",
        "-p" | "--paginate" => "would start a pager; output is returned without one",
        "--attr-source" => {
            "would read attributes that can attach diff and filter programs to files"
        }
        _ => "is not among the allowed global options",
    };
    format!(
        "git's global option `{name}` {why} (allowed before the subcommand: {})",
        GLOBAL_OK.join(", ")
    )
}

pub(super) fn check(args: &[Word]) -> Result<(), String> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if !t.starts_with('-') {
            break;
        }
        if !GLOBAL_OK.contains(&t) {
            return Err(global_refusal(t));
        }
        i += 1;
    }
    let Some(sub) = args.get(i) else {
        return Err(format!(
            "git needs one of the subcommands {}",
            SUBCOMMANDS.join(", ")
        ));
    };
    if sub.expands || !SUBCOMMANDS.contains(&sub.text.as_str()) {
        return Err(format!(
            "`git {}` is not an inspection command (allowed: {})",
            sub.text,
            SUBCOMMANDS.join(", ")
        ));
    }
    let rest = &args[i + 1..];
    let words: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    SUBCOMMAND_OPTIONS.check(&words)?;
    check_formats(&words)?;
    if sub.text == "branch" {
        return check_branch(rest);
    }
    Ok(())
}

/// `%G…` placeholders (`%G?`, `%GS`, `%GK`, …) verify signatures with `gpg.program`.
fn check_formats(words: &[&str]) -> Result<(), String> {
    let mut iter = words.iter().copied().peekable();
    while let Some(w) = iter.next() {
        if w == "--" {
            break;
        }
        let value = match w.split_once('=') {
            Some(("--format" | "--pretty", v)) => Some(v),
            // parse-options builtins (`git branch`) take the value as the next word too.
            None if w == "--format" => iter.peek().copied(),
            _ => None,
        };
        if value.is_some_and(|v| v.contains("%G")) {
            return Err(
                "git's `%G…` format placeholders check signatures by running gpg; use a \
                 format without them"
                    .into(),
            );
        }
    }
    Ok(())
}

fn check_branch(args: &[Word]) -> Result<(), String> {
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
