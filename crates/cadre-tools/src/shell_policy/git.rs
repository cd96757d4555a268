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

/// Formats that check signatures, which runs `gpg.program`: pretty formats' `%G…`
/// placeholders (`%G?`, `%GS`, `%GK`, …) with or without a `+`, `-` or space modifier
/// (`%+G?`), and ref-filter's `%(signature…)` atoms (`git branch --format`). Every word is
/// read, past `--` too: git's parse-options takes `--` as an option's value
/// (`git log --decorate-refs -- --format=%G?`), and the value of any abbreviation of
/// `--format` or `--pretty` is read as a format.
fn check_formats(words: &[&str]) -> Result<(), String> {
    let is_format_option = |name: &str| {
        name.strip_prefix("--").is_some_and(|bare| {
            bare.len() >= 2 && ("format".starts_with(bare) || "pretty".starts_with(bare))
        })
    };
    for (i, w) in words.iter().enumerate() {
        let value = match w.split_once('=') {
            Some((name, v)) if is_format_option(name) => Some(v),
            // parse-options builtins (`git branch`) take the value as the next word too.
            None if is_format_option(w) => words.get(i + 1).copied(),
            _ => None,
        };
        if let Some(placeholder) = value.and_then(gpg_placeholder) {
            return Err(format!(
                "git's `{placeholder}` format placeholder checks signatures by running gpg; use \
                 a format without `%G…` or `%(signature…)`"
            ));
        }
    }
    Ok(())
}

/// The first placeholder in `format` that checks a signature. `%%` is a literal `%`; `%x47`
/// is an escape that adds the byte `G` to the output, which git does not read again, so it
/// is not a placeholder (`--format=%x25G?` prints `%G?`).
fn gpg_placeholder(format: &str) -> Option<String> {
    let mut rest = format;
    while let Some(at) = rest.find('%') {
        let after = &rest[at + 1..];
        if let Some(literal) = after.strip_prefix('%') {
            rest = literal;
            continue;
        }
        // One modifier is git's syntax; more are read the same way, failing closed.
        let name = after.trim_start_matches(['+', '-', ' ']);
        if name.starts_with('G') {
            let end = at + 1 + (after.len() - name.len()) + 1;
            let end = rest[end..]
                .chars()
                .next()
                .map_or(end, |c| end + c.len_utf8());
            return Some(rest[at..end].to_string());
        }
        if let Some(atom) = after.strip_prefix('(') {
            // `%(*signature)` reads the signature of the object a tag points to.
            let name = atom.trim_start_matches(['*', '^']);
            if name.to_ascii_lowercase().starts_with("signature") {
                let end = after.find(')').map_or(after.len(), |e| e + 1);
                return Some(format!("%{}", &after[..end]));
            }
        }
        rest = after;
    }
    None
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
    let refuse = |t: &str| {
        Err(format!(
            "`git branch` is allowed only in its listing forms; `{t}` could create, delete, \
             rename or configure a branch"
        ))
    };
    // Read the words the way parse-options does: an option's value is the next word
    // whatever it looks like (`git branch --sort -l new` sorts by `-l` and creates `new`),
    // and only a `--` that is not a value ends the options.
    let mut listing = false;
    let mut names = Vec::new();
    let mut options_done = false;
    let mut iter = args.iter();
    while let Some(w) = iter.next() {
        let t = w.text.as_str();
        if options_done || !t.starts_with('-') || t == "-" {
            names.push(t);
            continue;
        }
        if t == "--" {
            options_done = true;
            continue;
        }
        if FLAGS.contains(&t) {
            listing |= t == "-l" || t == "--list";
            continue;
        }
        let name = t.split_once('=').map(|(n, _)| n);
        if let Some(name) = name
            && (WITH_VALUE.contains(&name) || EQUALS_FLAGS.contains(&name))
        {
            continue;
        }
        if WITH_VALUE.contains(&t) {
            // `--contains`, `--merged`, … default to HEAD only as the last word.
            iter.next();
            continue;
        }
        if let Some(cluster) = t.strip_prefix('-')
            && !cluster.is_empty()
            && !cluster.starts_with('-')
            && cluster.chars().all(|c| "arlviq".contains(c))
        {
            listing |= cluster.contains('l');
            continue;
        }
        return refuse(t);
    }
    match names.first() {
        Some(name) if !listing => refuse(name),
        _ => Ok(()),
    }
}
