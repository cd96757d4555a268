//! The verifiers of V4 that the `verify` policy adds.

use super::lex::Word;

/// Whether `words` is a recognised verifier the policy allows: `Ok(false)` when it is no
/// verifier at all, `Err` with the reason when it is one with a mutating flag.
pub(super) fn check(words: &[Word]) -> Result<bool, String> {
    match classify_verifier(words) {
        Verifier::Check => Ok(true),
        Verifier::Mutating(flag) => Err(format!(
            "`{flag}` makes the check change files; run it without that flag"
        )),
        Verifier::Unknown => Ok(false),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Verifier {
    Check,
    Mutating(String),
    Unknown,
}

/// Flags that make a check rewrite files (V4), plus rubocop's and prettier's spellings.
fn mutating_flag(tool: &str, word: &str) -> bool {
    let name = word.split_once('=').map_or(word, |(n, _)| n);
    if matches!(
        name,
        "--fix" | "--write" | "-u" | "--update" | "--updateSnapshot" | "--update-snapshots"
    ) {
        return true;
    }
    match tool {
        "rubocop" => matches!(
            name,
            "-a" | "-A"
                | "--auto-correct"
                | "--auto-correct-all"
                | "--autocorrect"
                | "--autocorrect-all"
        ),
        "prettier" => name == "-w",
        _ => false,
    }
}

fn classify_verifier(words: &[Word]) -> Verifier {
    let words = match words.first() {
        Some(w) if w.text == "npx" => &words[1..],
        _ => words,
    };
    let Some(tool) = words.first().map(|w| w.text.as_str()) else {
        return Verifier::Unknown;
    };
    let args: Vec<&str> = words[1..].iter().map(|w| w.text.as_str()).collect();
    if !recognised_verifier(tool, &args) {
        return Verifier::Unknown;
    }
    match args.iter().find(|a| mutating_flag(tool, a)) {
        Some(flag) => Verifier::Mutating((*flag).to_string()),
        None => Verifier::Check,
    }
}

fn recognised_verifier(tool: &str, args: &[&str]) -> bool {
    let first = args.first().copied();
    let has = |flag: &str| args.contains(&flag);
    match tool {
        "npm" | "pnpm" | "yarn" | "bun" => {
            const SCRIPTS: &[&str] = &["test", "check", "lint", "typecheck", "build"];
            match first {
                Some("run") => args.get(1).is_some_and(|s| SCRIPTS.contains(s)),
                Some(s) => SCRIPTS.contains(&s),
                None => false,
            }
        }
        "node" => first == Some("--test"),
        "python" | "python3" => {
            first == Some("-m")
                && match args.get(1).copied() {
                    Some("pytest" | "unittest" | "mypy") => true,
                    Some("ruff") => ruff_check(&args[2..]),
                    _ => false,
                }
        }
        "pytest" | "mypy" | "eslint" | "vitest" | "jest" | "rubocop" => true,
        "ruff" => ruff_check(args),
        "cargo" => {
            let rest: Vec<&str> = args
                .iter()
                .copied()
                .skip_while(|a| a.starts_with('+'))
                .collect();
            match rest.first().copied() {
                Some("test" | "check" | "clippy" | "build" | "nextest") => true,
                Some("fmt") => rest.contains(&"--check"),
                _ => false,
            }
        }
        "go" => matches!(first, Some("test" | "vet" | "build")),
        "make" => make_targets(args),
        "mvn" => build_goals(args, |g| {
            matches!(
                g,
                "validate" | "compile" | "test-compile" | "test" | "verify" | "package"
            )
        }),
        "gradle" => build_goals(args, |task| {
            let task = task.rsplit(':').next().unwrap_or(task);
            matches!(task, "test" | "check" | "build" | "assemble" | "lint")
        }),
        "tsc" => has("--noEmit"),
        "dotnet" => matches!(first, Some("test" | "build")),
        "flutter" | "dart" => first == Some("test"),
        "prettier" => has("--check") || has("-c"),
        _ => false,
    }
}

fn ruff_check(args: &[&str]) -> bool {
    match args.first().copied() {
        Some("check") => true,
        Some("format") => args.contains(&"--check"),
        _ => false,
    }
}

/// `make` with only check-like targets and harmless options.
fn make_targets(args: &[&str]) -> bool {
    let mut targets = 0;
    for a in args {
        let harmless_option = matches!(*a, "-k" | "-s" | "-j" | "--keep-going" | "--silent")
            || a.strip_prefix("-j")
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
            || a.strip_prefix("--jobs=")
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()));
        if harmless_option {
            continue;
        }
        if matches!(*a, "test" | "check" | "lint" | "build") {
            targets += 1;
        } else {
            return false;
        }
    }
    targets > 0
}

/// Maven goals / Gradle tasks: options pass, every other word must be a check-like goal.
fn build_goals(args: &[&str], goal_ok: impl Fn(&str) -> bool) -> bool {
    let mut goals = 0;
    for a in args {
        if a.starts_with('-') {
            continue;
        }
        if !goal_ok(a) {
            return false;
        }
        goals += 1;
    }
    goals > 0
}
