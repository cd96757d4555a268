//! Verification evidence (SPEC V4): which bash commands count as checks, and whether the checks
//! run after the last file change all passed.
//!
//! # What counts as a check
//!
//! A simple command is a check when its executable is a recognised verifier (see
//! [`classify_command`]'s table) and it carries no mutating flag (`--fix`, `--write`, `-u`,
//! `--update`, `--updateSnapshot`, `--update-snapshots`, and rubocop's `-a`/`-A`/autocorrect).
//! Formatters count only in check mode (`cargo fmt --check`, `rustfmt --check`,
//! `prettier --check|--list-different`, `black --check`, `ruff format --check`,
//! `dotnet format --verify-no-changes`, `dart format --set-exit-if-changed`). `gofmt` never
//! counts: it exits 0 whether or not files need formatting, so its status proves nothing.
//! `tsc` counts only with `--noEmit`.
//!
//! Leading `NAME=value` assignments and the wrappers `env`, `timeout`, `time`, `nice`,
//! `command`, `exec`, `nohup`, `stdbuf`, `bundle exec`, `npx`, `bunx`, `pnpm exec|dlx`,
//! `yarn exec|dlx`, `npm exec`, `uv|poetry|pipenv|pdm|hatch run`, `uvx` are looked through
//! (and `yarn|pnpm|bun <binary>`, which run a package binary when no script has that name); the executable is compared by its base name
//! (`./gradlew`, `/usr/bin/python3`).
//!
//! # Command lines
//!
//! What matters is whether a verifier's failure reaches the command's exit status, because the
//! exit status is all the evidence there is. A verifier inside a longer command line counts only
//! when it does:
//!
//! - in the **last statement** (after the last `;` or newline), any pipeline of an `&&` chain
//!   counts (`cd dir && cargo test`: a failure short-circuits to the end);
//! - in an earlier statement it counts only under `set -e` (or `set -o errexit`) and only as
//!   the last pipeline of its `&&` chain (bash ignores errexit for the others);
//! - inside a pipeline only the last command's status survives, so `cargo test | tail` counts
//!   only after `set -o pipefail` (earlier in the same command line);
//! - a statement with `||` never counts (`cargo test || true` masks the failure), nor one sent
//!   to the background with `&`, nor anything after `!`, nor `bash -c '…'`, `xargs`, `eval`;
//! - subshells, groups, heredocs and control keywords (`if`, `for`, `while`, …) are not
//!   followed: the whole line is [`CommandClass::Other`].
//!
//! A line with a check whose status is lost earns no credit at all, even if another check in
//! it does reach the exit status (`cargo test; cargo clippy`): its record would otherwise
//! read as if every check in it passed.
//!
//! A line with **any** mutating segment (a verifier with a mutating flag, a formatter that
//! writes, a verifier script named like `lint:fix`) earns no credit at all, even if it also
//! runs a check: the check may have run before the rewrite.
//!
//! The exit code alone decides: output markers such as `FAIL` are not parsed (they give false
//! alarms on lines like `0 failed`).

use std::collections::HashMap;

use serde_json::Value;

use super::receipt::parse_bash_status;
use super::shell::{self, Connector};

/// The tools whose successful calls change files.
pub const MUTATING_TOOLS: [&str; 2] = ["edit", "write"];
/// The tool whose commands may be checks.
pub const BASH_TOOL: &str = "bash";
/// Longest output tail kept per check, in bytes.
const TAIL_BYTES: usize = 2000;

/// What a check verifies; for display only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckKind {
    Test,
    Lint,
    Typecheck,
    Build,
    FormatCheck,
}

impl CheckKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckKind::Test => "test",
            CheckKind::Lint => "lint",
            CheckKind::Typecheck => "typecheck",
            CheckKind::Build => "build",
            CheckKind::FormatCheck => "format check",
        }
    }
}

/// The class of one bash command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandClass {
    /// A check whose failure reaches the exit status. `normalized` identifies repeated runs:
    /// the line without assignments, redirections, wrappers and `set` statements, one space
    /// between words.
    Verifier { kind: CheckKind, normalized: String },
    /// A formatter: in check mode it is a check like a verifier; otherwise it earns no credit.
    Formatter {
        check_mode: bool,
        normalized: String,
    },
    /// Anything else, including lines with a mutating segment and lines not followed.
    Other,
}

impl CommandClass {
    /// The key repeated runs share, when this line is a check.
    pub fn check_key(&self) -> Option<&str> {
        match self {
            CommandClass::Verifier { normalized, .. } => Some(normalized),
            CommandClass::Formatter {
                check_mode: true,
                normalized,
            } => Some(normalized),
            _ => None,
        }
    }

    pub fn kind(&self) -> Option<CheckKind> {
        match self {
            CommandClass::Verifier { kind, .. } => Some(*kind),
            CommandClass::Formatter {
                check_mode: true, ..
            } => Some(CheckKind::FormatCheck),
            _ => None,
        }
    }
}

/// One simple command, classified on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Simple {
    Verifier(CheckKind),
    Formatter {
        check: bool,
        writes: bool,
    },
    /// A verifier carrying a mutating flag, or a known rewriting command.
    Mutating,
    Neutral,
    /// A shell construct whose effect on the status this module does not follow.
    Opaque,
}

/// Classify a bash command line (see the module docs for the rules).
pub fn classify_command(command: &str) -> CommandClass {
    let Ok(statements) = shell::parse(command) else {
        return CommandClass::Other;
    };
    let mut pipefail = false;
    let mut errexit = false;
    let mut counting: Vec<CheckKind> = Vec::new();
    let mut mutating = false;
    let mut formatter_without_check = false;
    // A check whose status the line loses.
    let mut masked = false;
    let mut normalized_statements: Vec<String> = Vec::new();
    let last_statement = statements.len().saturating_sub(1);

    for (si, stmt) in statements.iter().enumerate() {
        let has_or = stmt
            .pipelines
            .iter()
            .any(|(c, _)| *c == Some(Connector::Or));
        let last_pipeline = stmt.pipelines.len().saturating_sub(1);
        let mut norm_pipelines: Vec<String> = Vec::new();
        for (pi, (connector, pipeline)) in stmt.pipelines.iter().enumerate() {
            let last_command = pipeline.commands.len().saturating_sub(1);
            let mut norm_commands: Vec<String> = Vec::new();
            for (ci, words) in pipeline.commands.iter().enumerate() {
                let core = strip_prefixes(words);
                if core.first().map(String::as_str) == Some("set") {
                    apply_set(&core[1..], &mut pipefail, &mut errexit);
                    continue;
                }
                let simple = classify_simple(&core);
                let propagates = !stmt.background
                    && !has_or
                    && (ci == last_command || pipefail)
                    && (si == last_statement || (errexit && pi == last_pipeline));
                match simple {
                    Simple::Opaque => return CommandClass::Other,
                    Simple::Mutating => mutating = true,
                    Simple::Formatter { writes: true, .. } => {
                        mutating = true;
                        formatter_without_check = true;
                    }
                    Simple::Formatter { check: false, .. } => formatter_without_check = true,
                    Simple::Formatter { check: true, .. } if propagates => {
                        counting.push(CheckKind::FormatCheck)
                    }
                    Simple::Verifier(kind) if propagates => counting.push(kind),
                    Simple::Verifier(_) | Simple::Formatter { check: true, .. } => masked = true,
                    _ => {}
                }
                if !core.is_empty() {
                    norm_commands.push(core.join(" "));
                }
            }
            if norm_commands.is_empty() {
                continue;
            }
            let joined = norm_commands.join(" | ");
            match (connector, norm_pipelines.is_empty()) {
                (Some(Connector::Or), false) => norm_pipelines.push(format!("|| {joined}")),
                (_, false) => norm_pipelines.push(format!("&& {joined}")),
                (_, true) => norm_pipelines.push(joined),
            }
        }
        if !norm_pipelines.is_empty() {
            let mut s = norm_pipelines.join(" ");
            if stmt.background {
                s.push_str(" &");
            }
            normalized_statements.push(s);
        }
    }

    let normalized = normalized_statements.join("; ");
    if mutating {
        return if formatter_without_check {
            CommandClass::Formatter {
                check_mode: false,
                normalized,
            }
        } else {
            CommandClass::Other
        };
    }
    if masked {
        // Crediting the line would present a check whose result nobody saw as passed.
        return CommandClass::Other;
    }
    if let Some(kind) = counting
        .iter()
        .rev()
        .find(|k| **k != CheckKind::FormatCheck)
    {
        return CommandClass::Verifier {
            kind: *kind,
            normalized,
        };
    }
    if !counting.is_empty() {
        return CommandClass::Formatter {
            check_mode: true,
            normalized,
        };
    }
    if formatter_without_check {
        return CommandClass::Formatter {
            check_mode: false,
            normalized,
        };
    }
    CommandClass::Other
}

/// `set -e`, `set -o pipefail`, `set -euo pipefail`, `set +e`, … (other options are ignored).
fn apply_set(args: &[String], pipefail: &mut bool, errexit: &mut bool) {
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        let (on, flags) = match arg.strip_prefix('-') {
            Some(f) => (true, f),
            None => match arg.strip_prefix('+') {
                Some(f) => (false, f),
                None => break,
            },
        };
        for flag in flags.chars() {
            match flag {
                'e' => *errexit = on,
                'o' => {
                    i += 1;
                    match args.get(i).map(String::as_str) {
                        Some("pipefail") => *pipefail = on,
                        Some("errexit") => *errexit = on,
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
}

fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Skip options of a wrapper: flags, and the value of those in `with_value`.
fn skip_options(words: &[String], mut i: usize, with_value: &[&str]) -> usize {
    while let Some(w) = words.get(i) {
        if w == "--" {
            return i + 1;
        }
        if !w.starts_with('-') || w == "-" {
            break;
        }
        i += if with_value.contains(&w.as_str()) {
            2
        } else {
            1
        };
    }
    i
}

/// The words of the command that actually runs, past assignments and wrappers.
fn strip_prefixes(words: &[String]) -> Vec<String> {
    // A variable that changes how a verifier runs (`MAKEFLAGS=n`, `PYTEST_ADDOPTS=--co`,
    // `GOFLAGS=-run=^$`) can turn it into a run that checks nothing: such a line is no check.
    if words
        .iter()
        .take_while(|w| is_assignment(w) || *w == "env")
        .any(|w| is_assignment(w) && changes_a_runner(w))
    {
        return Vec::new();
    }
    let mut i = 0;
    loop {
        while words.get(i).is_some_and(|w| is_assignment(w)) {
            i += 1;
        }
        let Some(first) = words.get(i) else {
            return Vec::new();
        };
        let next = words.get(i + 1).map(String::as_str);
        i = match basename(first) {
            "env" => {
                let mut j = skip_options(words, i + 1, &["-u", "--unset", "-C", "--chdir"]);
                while words.get(j).is_some_and(|w| is_assignment(w)) {
                    j += 1;
                }
                j
            }
            "timeout" => {
                // Options, then the duration, then the command.
                skip_options(words, i + 1, &["-s", "--signal", "-k", "--kill-after"]) + 1
            }
            "time" => skip_options(words, i + 1, &[]),
            "nice" => skip_options(words, i + 1, &["-n", "--adjustment"]),
            "nohup" | "exec" => i + 1,
            "command" if matches!(next, Some("-v" | "-V")) => return Vec::new(),
            "command" => skip_options(words, i + 1, &[]),
            "stdbuf" => skip_options(words, i + 1, &["-i", "-o", "-e"]),
            "bundle" if next == Some("exec") => i + 2,
            "npx" | "bunx" => {
                if words[i + 1..].iter().any(|w| w == "-c" || w == "--call") {
                    return vec!["npx".into(), "-c".into()]; // runs a string: opaque
                }
                skip_options(words, i + 1, &["-p", "--package"])
            }
            "pnpm" | "yarn" if matches!(next, Some("exec" | "dlx")) => {
                skip_options(words, i + 2, &[])
            }
            "npm" if next == Some("exec") => skip_options(words, i + 2, &["-p", "--package"]),
            // Python project runners: `uv run pytest`, `poetry run mypy .`, `uvx ruff check`.
            "uv" | "poetry" | "pipenv" | "pdm" | "hatch" if next == Some("run") => skip_options(
                words,
                i + 2,
                &[
                    "--with",
                    "--python",
                    "-p",
                    "--package",
                    "--extra",
                    "--group",
                    "-e",
                    "--env",
                ],
            ),
            "uvx" => skip_options(words, i + 1, &["--with", "--from", "--python", "-p"]),
            _ => return words[i..].to_vec(),
        };
    }
}

const MUTATING_FLAGS: [&str; 6] = [
    "--fix",
    "--write",
    "-u",
    "--update",
    "--updateSnapshot",
    "--update-snapshots",
];

fn is_mutating_flag(arg: &str) -> bool {
    let name = arg.split_once('=').map_or(arg, |(n, _)| n);
    MUTATING_FLAGS.contains(&name)
}

fn has_flag(args: &[String], flags: &[&str]) -> bool {
    args.iter().any(|a| {
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        flags.contains(&name)
    })
}

/// Positional arguments, skipping options and the values of `with_value` options.
fn positionals<'w>(args: &'w [String], with_value: &[&str]) -> Vec<&'w str> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            break;
        }
        if a.starts_with('-') && a != "-" {
            i += if with_value.contains(&a.as_str()) {
                2
            } else {
                1
            };
            continue;
        }
        out.push(a.as_str());
        i += 1;
    }
    out
}

/// A verifier, unless a mutating flag makes it a rewrite.
fn verifier(kind: CheckKind, args: &[String]) -> Simple {
    if args.iter().any(|a| is_mutating_flag(a)) {
        Simple::Mutating
    } else if args.iter().any(|a| runs_nothing(a)) {
        Simple::Neutral
    } else {
        Simple::Verifier(kind)
    }
}

/// Whether an assignment `NAME=value` sets a variable a test runner or build tool reads its
/// options from.
fn changes_a_runner(assignment: &str) -> bool {
    let name = assignment
        .split_once('=')
        .map_or(assignment, |(n, _)| n)
        .to_ascii_uppercase();
    name.ends_with("FLAGS")
        || name.ends_with("OPTS")
        || name.ends_with("OPTIONS")
        || name.ends_with("ARGS")
        || name == "PYTEST_PLUGINS"
}

/// Flags that make a verifier print what it would do, list its tests, or describe itself
/// instead of checking anything (`--dry-run`, `pytest --collect-only`, `cargo test -- --list`,
/// `--help`, `--version`): such a run passes whatever the code does, so it is no check.
fn runs_nothing(arg: &str) -> bool {
    const FLAGS: [&str; 15] = [
        "--dry-run",
        "--dryrun",
        "--collect-only",
        "--co",
        "--list",
        "--list-tests",
        "--listTests",
        "--help",
        "-h",
        "--version",
        "-V",
        "--no-run",
        "--showConfig",
        "--print-config",
        "--explain",
    ];
    FLAGS.contains(&arg) || arg.starts_with("--dry-run=")
}

fn classify_simple(words: &[String]) -> Simple {
    let Some(first) = words.first() else {
        return Simple::Neutral;
    };
    let args = &words[1..];
    let exe = basename(first);
    match exe {
        "if" | "then" | "else" | "elif" | "fi" | "for" | "while" | "until" | "do" | "done"
        | "case" | "esac" | "select" | "function" | "{" | "}" | "[[" | "!" | "eval" | "xargs"
        | "bash" | "sh" | "zsh" | "dash" | "source" | "." => Simple::Opaque,
        "npx" if args.first().is_some_and(|a| a == "-c") => Simple::Opaque,
        "npm" | "pnpm" | "yarn" | "bun" => package_manager(exe, args),
        "node" => {
            // `--test` among node's own options (before the script).
            let own = args.iter().take_while(|a| a.starts_with('-'));
            if own.clone().any(|a| a == "--test") {
                verifier(CheckKind::Test, args)
            } else {
                Simple::Neutral
            }
        }
        "pytest" | "py.test" => verifier(CheckKind::Test, args),
        "mypy" => verifier(CheckKind::Typecheck, args),
        "ruff" => ruff(args),
        "cargo" => cargo(args),
        "go" => match positionals(args, &["-C"]).first().copied() {
            Some("test") => verifier(CheckKind::Test, args),
            Some("vet") => verifier(CheckKind::Lint, args),
            Some("build") => verifier(CheckKind::Build, args),
            Some("fmt") => Simple::Formatter {
                check: false,
                writes: true,
            },
            _ => Simple::Neutral,
        },
        "mvn" | "mvnw" => maven(args),
        "gradle" | "gradlew" => gradle(args),
        "make" | "gmake" => make(args),
        "tsc" | "vue-tsc" => {
            if has_flag(args, &["--noEmit"]) {
                verifier(CheckKind::Typecheck, args)
            } else {
                Simple::Neutral
            }
        }
        "eslint" => verifier(CheckKind::Lint, args),
        "vitest" | "jest" => verifier(CheckKind::Test, args),
        "rubocop" => {
            if has_flag(
                args,
                &[
                    "-a",
                    "-A",
                    "--auto-correct",
                    "--autocorrect",
                    "--auto-correct-all",
                    "--autocorrect-all",
                    "-x",
                    "--fix-layout",
                ],
            ) {
                Simple::Mutating
            } else {
                verifier(CheckKind::Lint, args)
            }
        }
        "dotnet" => match positionals(args, &[]).first().copied() {
            Some("test") => verifier(CheckKind::Test, args),
            Some("build") => verifier(CheckKind::Build, args),
            Some("format") => formatter(has_flag(args, &["--verify-no-changes"]), true),
            _ => Simple::Neutral,
        },
        "flutter" | "dart" => match positionals(args, &[]).first().copied() {
            Some("test") => verifier(CheckKind::Test, args),
            Some("format") if exe == "dart" => {
                formatter(has_flag(args, &["--set-exit-if-changed"]), true)
            }
            _ => Simple::Neutral,
        },
        "prettier" => {
            let check = has_flag(args, &["--check", "-c", "--list-different", "-l"]);
            let writes = has_flag(args, &["--write", "-w"]);
            Simple::Formatter {
                check: check && !writes,
                writes,
            }
        }
        "black" => formatter(has_flag(args, &["--check"]), true),
        "rustfmt" => formatter(has_flag(args, &["--check"]), true),
        "gofmt" => Simple::Formatter {
            check: false,
            writes: has_flag(args, &["-w"]),
        },
        _ if is_python(exe) => python(args),
        _ => Simple::Neutral,
    }
}

/// A formatter that writes files unless in check mode.
fn formatter(check: bool, writes_otherwise: bool) -> Simple {
    Simple::Formatter {
        check,
        writes: !check && writes_otherwise,
    }
}

fn is_python(exe: &str) -> bool {
    let Some(rest) = exe.strip_prefix("python") else {
        return false;
    };
    rest.is_empty()
        || rest == "3"
        || rest
            .strip_prefix("3.")
            .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()))
}

/// `python [interpreter flags] -m pytest|unittest|mypy|ruff …`. Interpreter flags (`-u`
/// unbuffered, `-B`, `-X opt`) are not the module's flags.
fn python(args: &[String]) -> Simple {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "-m" {
            let Some(module) = args.get(i + 1) else {
                return Simple::Neutral;
            };
            let rest = &args[i + 2..];
            return match module.as_str() {
                "pytest" | "unittest" => verifier(CheckKind::Test, rest),
                "mypy" => verifier(CheckKind::Typecheck, rest),
                "ruff" => ruff(rest),
                "black" => formatter(has_flag(rest, &["--check"]), true),
                _ => Simple::Neutral,
            };
        }
        if !a.starts_with('-') {
            return Simple::Neutral; // a script
        }
        i += if matches!(a.as_str(), "-X" | "-W") {
            2
        } else {
            1
        };
    }
    Simple::Neutral
}

fn ruff(args: &[String]) -> Simple {
    match positionals(args, &["--config"]).first().copied() {
        Some("check") => verifier(CheckKind::Lint, args),
        Some("format") => formatter(has_flag(args, &["--check"]), true),
        _ => Simple::Neutral,
    }
}

/// A package-manager script name: `test`, `test:unit`, `lint`, `typecheck`, `build:prod`, …
/// A script whose name says it rewrites (`lint:fix`, `format`) is mutating.
fn script(name: &str, args: &[String]) -> Simple {
    let parts: Vec<&str> = name.split([':', '-', '_']).collect();
    if parts
        .iter()
        .any(|p| matches!(*p, "fix" | "format" | "fmt" | "write" | "update"))
    {
        return Simple::Mutating;
    }
    let kind = match parts.first().copied() {
        Some("test" | "tests" | "t" | "tst") => CheckKind::Test,
        Some("lint") => CheckKind::Lint,
        Some("check" | "typecheck" | "types") => CheckKind::Typecheck,
        Some("type") if parts.get(1) == Some(&"check") => CheckKind::Typecheck,
        Some("build") => CheckKind::Build,
        _ => return Simple::Neutral,
    };
    verifier(kind, args)
}

/// `npm|pnpm|yarn|bun test|check|lint|typecheck|build`, `… run <script>`, `bun x …`.
fn package_manager(exe: &str, args: &[String]) -> Simple {
    const WITH_VALUE: [&str; 8] = [
        "--prefix",
        "-C",
        "--dir",
        "--cwd",
        "--filter",
        "-F",
        "--workspace",
        "-w",
    ];
    let pos = positionals(args, &WITH_VALUE);
    let Some(sub) = pos.first().copied() else {
        return Simple::Neutral;
    };
    match sub {
        "run" | "run-script" => match pos.get(1) {
            Some(name) => script(name, args),
            None => Simple::Neutral,
        },
        "x" if exe == "bun" => {
            let at = args.iter().position(|a| a == "x").map_or(0, |p| p + 1);
            classify_simple(&args[at..])
        }
        // Package-manager commands that share a name with a script would be misread below.
        "install" | "i" | "ci" | "add" | "remove" | "update" | "upgrade" => Simple::Neutral,
        _ => match script(sub, args) {
            // yarn, pnpm and bun run a package binary by name too: `pnpm vitest`, `yarn tsc
            // --noEmit`. npm does not.
            Simple::Neutral if exe != "npm" => {
                let at = args.iter().position(|a| a == sub).unwrap_or(0);
                classify_simple(&args[at..])
            }
            other => other,
        },
    }
}

fn cargo(args: &[String]) -> Simple {
    let args: &[String] = match args.first() {
        Some(a) if a.starts_with('+') => &args[1..], // toolchain
        _ => args,
    };
    let pos = positionals(
        args,
        &["-C", "--config", "-Z", "--color", "--manifest-path"],
    );
    match pos.first().copied() {
        Some("test" | "t") => verifier(CheckKind::Test, args),
        Some("check" | "c") => verifier(CheckKind::Typecheck, args),
        Some("clippy") => verifier(CheckKind::Lint, args),
        Some("build" | "b") => verifier(CheckKind::Build, args),
        Some("nextest") if matches!(pos.get(1).copied(), Some("run" | "r")) => {
            verifier(CheckKind::Test, args)
        }
        // `--check` may come before or after `--` (`cargo fmt -- --check`).
        Some("fmt") => formatter(args.iter().any(|a| a == "--check"), true),
        _ => Simple::Neutral,
    }
}

fn maven(args: &[String]) -> Simple {
    let goals = positionals(args, &["-pl", "-f", "-P", "-T", "-s", "-rf", "-b", "-l"]);
    if goals
        .iter()
        .any(|g| g.ends_with(":apply") || g.ends_with(":format") || g.starts_with("versions:"))
    {
        return Simple::Mutating;
    }
    let kind = goals.iter().rev().find_map(|g| match *g {
        "test" | "verify" | "integration-test" | "install" => Some(CheckKind::Test),
        "compile" | "test-compile" | "package" => Some(CheckKind::Build),
        g if g.ends_with(":check") => Some(CheckKind::Lint),
        _ => None,
    });
    kind.map_or(Simple::Neutral, |k| verifier(k, args))
}

fn gradle(args: &[String]) -> Simple {
    let tasks = positionals(
        args,
        &["-p", "-x", "--exclude-task", "-b", "-c", "-D", "-P"],
    );
    let names: Vec<&str> = tasks
        .iter()
        .map(|t| t.rsplit(':').next().unwrap_or(t))
        .collect();
    if names
        .iter()
        .any(|n| n.ends_with("Apply") || n.ends_with("Format"))
    {
        return Simple::Mutating;
    }
    let kind = names.iter().rev().find_map(|n| match *n {
        "test" | "check" | "connectedCheck" => Some(CheckKind::Test),
        "build" | "assemble" | "compileJava" | "compileKotlin" => Some(CheckKind::Build),
        "lint" => Some(CheckKind::Lint),
        _ => None,
    });
    kind.map_or(Simple::Neutral, |k| verifier(k, args))
}

/// `make [options] target…`: every target must be a check target.
fn make(args: &[String]) -> Simple {
    // make's own forms that run no recipe: print them (`-n`), ask whether they are up to date
    // (`-q`), touch the targets (`-t`), print the database (`-p`).
    // `-i` ignores every error, so the run exits 0 whatever fails. GNU make takes any
    // unambiguous prefix of a long option (`--just`, `--dry`).
    const NO_RECIPES: [&str; 5] = ["-n", "-q", "-t", "-p", "-i"];
    const NO_RECIPES_LONG: [&str; 7] = [
        "just-print",
        "dry-run",
        "recon",
        "question",
        "touch",
        "print-data-base",
        "ignore-errors",
    ];
    let long_no_recipe = |a: &str| {
        a.strip_prefix("--")
            .map(|o| o.split('=').next().unwrap_or(o))
            .is_some_and(|o| o.len() >= 2 && NO_RECIPES_LONG.iter().any(|l| l.starts_with(o)))
    };
    // `-kn`: a cluster of flags that take no value.
    let short_cluster_has = |a: &str, c: char| {
        a.len() > 2
            && a.starts_with('-')
            && !a.starts_with("--")
            && a[1..].chars().all(|f| "nqtpksSiBeErRwv".contains(f))
            && a[1..].contains(c)
    };
    if args.iter().any(|a| {
        NO_RECIPES.contains(&a.as_str())
            || long_no_recipe(a)
            || ['n', 'q', 't', 'p', 'i']
                .iter()
                .any(|&c| short_cluster_has(a, c))
    }) {
        return Simple::Neutral;
    }
    let mut targets = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        if matches!(a.as_str(), "-C" | "-f" | "-I" | "-o" | "-W" | "--file") {
            i += 1;
        } else if a == "-j" || a == "-l" {
            if args.get(i).is_some_and(|n| n.parse::<u32>().is_ok()) {
                i += 1;
            }
        } else if !a.starts_with('-') && !a.contains('=') {
            targets.push(a.as_str());
        }
    }
    let mut kind = None;
    for t in &targets {
        kind = Some(match *t {
            "test" | "tests" | "check" => CheckKind::Test,
            "lint" => CheckKind::Lint,
            "typecheck" => CheckKind::Typecheck,
            "build" => CheckKind::Build,
            _ => return Simple::Neutral,
        });
    }
    kind.map_or(Simple::Neutral, |k| verifier(k, args))
}

/// One finished tool call, as the evidence and the receipt see it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolEvent {
    pub tool: String,
    pub args: Value,
    pub is_error: bool,
    /// The exit code of a bash command, when it exited (0 for a successful call).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub aborted: bool,
    /// The end of the tool's output, for summaries.
    pub output_tail: String,
    /// Files the call changed as far as the caller knows beyond `edit`/`write` arguments
    /// (e.g. bash writes seen by the sandbox). Non-empty makes the call a mutation.
    pub mutated_files: Vec<String>,
}

impl ToolEvent {
    /// An event from a tool result: for bash the exit code, timeout and abort are read from
    /// the result text (see [`parse_bash_status`]).
    pub fn from_result(
        tool: &str,
        args: Value,
        is_error: bool,
        result_text: &str,
        mutated_files: Vec<String>,
    ) -> ToolEvent {
        let mut event = ToolEvent {
            tool: tool.to_string(),
            args,
            is_error,
            output_tail: tail(result_text, TAIL_BYTES).to_string(),
            mutated_files,
            ..ToolEvent::default()
        };
        if tool == BASH_TOOL {
            let status = parse_bash_status(is_error, result_text);
            event.exit_code = status.exit_code;
            event.timed_out = status.timed_out;
            event.aborted = status.aborted;
        }
        event
    }

    /// The command of a bash call.
    pub fn command(&self) -> Option<&str> {
        if self.tool == BASH_TOOL {
            self.args.get("command").and_then(Value::as_str)
        } else {
            None
        }
    }

    /// The path an `edit`/`write` call changed, when it succeeded.
    pub fn edited_path(&self) -> Option<&str> {
        if MUTATING_TOOLS.contains(&self.tool.as_str()) && !self.is_error {
            self.args.get("path").and_then(Value::as_str)
        } else {
            None
        }
    }

    /// Whether the call changed files: a successful `edit`/`write`, or any call the caller
    /// saw change files.
    pub fn is_mutation(&self) -> bool {
        (MUTATING_TOOLS.contains(&self.tool.as_str()) && !self.is_error)
            || !self.mutated_files.is_empty()
    }

    /// Whether a command ended with exit 0, without timeout or abort.
    pub fn succeeded(&self) -> bool {
        !self.is_error && self.exit_code == Some(0) && !self.timed_out && !self.aborted
    }
}

/// The end of `text`, at most `max` bytes, cut on a character boundary.
fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// The latest run of one check.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRecord {
    pub command: String,
    pub normalized: String,
    pub kind: CheckKind,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub aborted: bool,
    pub is_error: bool,
    pub output_tail: String,
}

impl CheckRecord {
    pub fn passed(&self) -> bool {
        !self.is_error && self.exit_code == Some(0) && !self.timed_out && !self.aborted
    }

    /// `exit 0`, `exit 101`, `timed out`, `aborted`, `no exit code`.
    pub fn outcome(&self) -> String {
        outcome_text(self.exit_code, self.timed_out, self.aborted)
    }
}

pub(crate) fn outcome_text(exit_code: Option<i32>, timed_out: bool, aborted: bool) -> String {
    if timed_out {
        "timed out".to_string()
    } else if aborted {
        "aborted".to_string()
    } else {
        match exit_code {
            Some(code) => format!("exit {code}"),
            None => "no exit code".to_string(),
        }
    }
}

/// The checks of one run, fed tool events in order.
///
/// A mutation discards the checks before it (they verified files that have changed since). A
/// bash call that both ran a check and changed files is a mutation only: the files may have
/// changed after the check, so a later check must confirm them.
#[derive(Debug, Clone, Default)]
pub struct EvidenceLog {
    /// Checks since the last mutation, latest run of each, in the order of those runs.
    checks: Vec<CheckRecord>,
    by_key: HashMap<String, usize>,
    mutations: usize,
    /// Check runs discarded by a later mutation.
    stale_runs: usize,
}

impl EvidenceLog {
    pub fn new() -> EvidenceLog {
        EvidenceLog::default()
    }

    pub fn record(&mut self, event: &ToolEvent) {
        if event.is_mutation() {
            self.mutations += 1;
            self.stale_runs += self.checks.len();
            self.checks.clear();
            self.by_key.clear();
            return;
        }
        let Some(command) = event.command() else {
            return;
        };
        let class = classify_command(command);
        let (Some(key), Some(kind)) = (class.check_key(), class.kind()) else {
            return;
        };
        let record = CheckRecord {
            command: command.to_string(),
            normalized: key.to_string(),
            kind,
            exit_code: event.exit_code,
            timed_out: event.timed_out,
            aborted: event.aborted,
            is_error: event.is_error,
            output_tail: tail(&event.output_tail, TAIL_BYTES).to_string(),
        };
        // Latest run wins; it moves to the end so the order is the order of the kept runs.
        if let Some(at) = self.by_key.remove(key) {
            self.checks.remove(at);
            for i in self.by_key.values_mut() {
                if *i > at {
                    *i -= 1;
                }
            }
        }
        self.by_key.insert(key.to_string(), self.checks.len());
        self.checks.push(record);
    }

    /// The kept checks (after the last mutation, latest run of each).
    pub fn checks(&self) -> &[CheckRecord] {
        &self.checks
    }

    /// At least one kept check, and every kept check passed.
    pub fn has_successful_check(&self) -> bool {
        !self.checks.is_empty() && self.checks.iter().all(CheckRecord::passed)
    }

    /// Whether any file changed.
    pub fn mutated(&self) -> bool {
        self.mutations > 0
    }

    /// Check runs that a later file change made stale.
    pub fn stale_runs(&self) -> usize {
        self.stale_runs
    }

    /// A Markdown summary for a review packet.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        if self.checks.is_empty() {
            out.push_str("No verification check ran after the last file change.\n");
        } else {
            out.push_str("Checks after the last file change (latest run of each):\n");
            for c in &self.checks {
                let mark = if c.passed() { "passed" } else { "FAILED" };
                out.push_str(&format!(
                    "- `{}` ({}): {}, {}\n",
                    one_line(&c.command),
                    c.kind.as_str(),
                    c.outcome(),
                    mark
                ));
            }
        }
        if self.stale_runs > 0 {
            out.push_str(&format!(
                "Check runs before the last file change (not counted): {}\n",
                self.stale_runs
            ));
        }
        out.push_str(&format!(
            "Successful check: {}\n",
            if self.has_successful_check() {
                "yes"
            } else {
                "no"
            }
        ));
        out
    }
}

/// A command on one line, backticks swapped so it cannot close a Markdown code span.
pub(crate) fn one_line(command: &str) -> String {
    command
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('`', "'")
}

#[cfg(test)]
#[path = "evidence_tests.rs"]
mod tests;
