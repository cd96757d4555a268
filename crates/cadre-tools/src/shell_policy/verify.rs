//! The verifiers of V4 that the `verify` policy adds, and the options each may not carry.
//!
//! A verifier runs the project's own code by design (its tests, build scripts, lint plugins);
//! the kernel sandbox contains that code. What this module refuses are the ways a command
//! line would add something of its own on top: a program or module it names (`go test -exec`,
//! `pytest -p`, `--require`, `--config` files that can list plugins), a file it writes
//! (`-o`, `--output-file`, reports, profiles), a server or the network. Where a tool's
//! option surface is too large to deny piece by piece (npm's hundreds of config keys, node,
//! maven, gradle, dotnet) the options before the tool's `--` are an allowlist instead.
//! Build caches the tool needs to run at all (`cargo --target-dir`) are left alone: the
//! sandbox confines their writes to the scratch directory.

use super::lex::Word;
use super::options::{Options, Style, Why, inside_project};

/// Flags that make a check rewrite files (V4), plus rubocop's and prettier's spellings and
/// the common snapshot and golden-file updaters.
fn mutating_flag(tool: &str, word: &str) -> bool {
    let name = word.split_once('=').map_or(word, |(n, _)| n);
    if matches!(
        name,
        "--fix"
            | "--write"
            | "-u"
            | "--update"
            | "--updateSnapshot"
            | "--update-snapshots"
            | "--snapshot-update"
            | "--test-update-snapshots"
            | "--update-goldens"
            | "--force-regen"
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

/// Whether `words` is a recognised verifier the policy allows: `Ok(false)` when it is no
/// verifier at all, `Err` with the reason when it is one with a refused option.
pub(super) fn check(words: &[Word]) -> Result<bool, String> {
    let words = match words.first() {
        Some(w) if w.text == "npx" => &words[1..],
        _ => words,
    };
    let Some(tool) = words.first().map(|w| w.text.as_str()) else {
        return Ok(false);
    };
    let args: Vec<&str> = words[1..].iter().map(|w| w.text.as_str()).collect();
    if !recognised(tool, &args) {
        // An unknown option's value reads as a goal (`mvn -s evil.xml test`): name the option
        // rather than call a check-like build unrecognised.
        if matches!(tool, "mvn" | "gradle")
            && args.iter().any(|a| SCRIPTS.contains(a) || *a == "verify")
        {
            options(tool, &args)?;
        }
        if tool == "make" && args.iter().any(|a| MAKE_TARGETS.contains(a)) {
            return Err(
                "make takes only the targets test, check, lint and build and the options -k, \
                 -s and -jN under the verify policy: `-f`, `-C`, `-I`, `-e` and `VAR=value` \
                 could choose another makefile, shell or compiler"
                    .into(),
            );
        }
        return Ok(false);
    }
    if let Some(flag) = args.iter().find(|a| mutating_flag(tool, a)) {
        return Err(format!(
            "`{flag}` makes the check change files; run it without that flag"
        ));
    }
    if let Some(w) = words[1..].iter().find(|w| w.may_be_option) {
        return Err(format!(
            "the unquoted pattern `{}` could expand to a file name that `{tool}` would take as \
             an option; start it with `./` or a directory (`src/*.rs`), or quote it",
            w.text
        ));
    }
    options(tool, &args)?;
    Ok(true)
}

const SCRIPTS: &[&str] = &["test", "check", "lint", "typecheck", "build"];

fn recognised(tool: &str, args: &[&str]) -> bool {
    let first = args.first().copied();
    let has = |flag: &str| args.contains(&flag);
    match tool {
        "npm" | "pnpm" | "yarn" | "bun" => match first {
            Some("run") => args.get(1).is_some_and(|s| SCRIPTS.contains(s)),
            Some(s) => SCRIPTS.contains(&s),
            None => false,
        },
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
                Some("test" | "check" | "clippy" | "build") => true,
                Some("nextest") => matches!(rest.get(1).copied(), Some("run" | "r")),
                Some("fmt") => rest.contains(&"--check"),
                _ => false,
            }
        }
        "go" => matches!(first, Some("test" | "vet" | "build")),
        "make" => make_targets(args),
        "mvn" => build_goals(args, MVN_VALUES, |g| {
            matches!(
                g,
                "validate" | "compile" | "test-compile" | "test" | "verify" | "package"
            )
        }),
        "gradle" => build_goals(args, GRADLE_VALUES, |task| {
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

const MAKE_TARGETS: &[&str] = &["test", "check", "lint", "build"];

/// `make` with only check-like targets and harmless options: no `-f`, `-C`, `-I`, `-e` or
/// `VAR=value` (which could set `SHELL` or a compiler), so the project's own Makefile runs.
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
        if MAKE_TARGETS.contains(a) {
            targets += 1;
        } else {
            return false;
        }
    }
    targets > 0
}

/// Maven goals / Gradle tasks: every word that is neither an option nor an option's value
/// must be a check-like goal.
fn build_goals(args: &[&str], with_value: &[&str], goal_ok: impl Fn(&str) -> bool) -> bool {
    let mut goals = 0;
    let mut iter = args.iter().peekable();
    while let Some(a) = iter.next() {
        if a.starts_with('-') {
            if with_value.contains(a) && iter.peek().is_some_and(|n| !looks_like_option(n)) {
                iter.next();
            }
            continue;
        }
        if !goal_ok(a) {
            return false;
        }
        goals += 1;
    }
    goals > 0
}

// ---------------------------------------------------------------------------------------------
// Options per tool

fn options(tool: &str, args: &[&str]) -> Result<(), String> {
    match tool {
        "npm" | "pnpm" | "yarn" | "bun" => package_manager(tool, args),
        "node" => node(args),
        "python" | "python3" => {
            let rest = args.get(2..).unwrap_or(&[]);
            match args.get(1).copied() {
                Some("pytest") => PYTEST.check(rest),
                Some("mypy") => MYPY.check(rest),
                Some("ruff") => RUFF.check(rest),
                Some("unittest") => unittest(rest),
                _ => Ok(()),
            }
        }
        "pytest" => PYTEST.check(args),
        "mypy" => MYPY.check(args),
        "ruff" => RUFF.check(args),
        "cargo" => cargo(args),
        "go" => go(args),
        "mvn" => maven(args),
        "gradle" => gradle(args),
        "tsc" => tsc(args),
        "eslint" => ESLINT.check(args),
        "vitest" => VITEST.check(args),
        "jest" => JEST.check(args),
        "rubocop" => RUBOCOP.check(args),
        "dotnet" => dotnet(args),
        "flutter" => FLUTTER_TEST.check(args),
        "dart" => DART_TEST.check(args),
        "prettier" => PRETTIER.check(args),
        // make: `make_targets` already allows only harmless options.
        _ => Ok(()),
    }
}

/// An option outside a tool's allowlist.
fn not_allowed(tool: &str, option: &str, allowed: &str) -> String {
    format!(
        "`{option}` is not among the options the verify policy allows for {tool} ({allowed}); \
         options beyond these can load other configurations, name programs or write files"
    )
}

/// A word a command may read as an option rather than as the previous option's value.
fn looks_like_option(word: &str) -> bool {
    word.starts_with('-') && word != "-"
}

/// Check `args` against an allowlist of flags and of options with a value (as the next word
/// or after `=`). Positional words pass. With `ends_at_dashdash`, a `--` ends the options
/// (npm's script arguments follow it); otherwise `--` is refused like any other option.
///
/// The value after an option is skipped only when it cannot be read as an option: a parser
/// may refuse a value that starts with `-` and read it as the next option (Maven's
/// commons-cli does), so such a word is checked too. A `--` right after an option with a
/// value may be that value, so it ends nothing and the words after it are still checked as
/// options.
fn allowlist(
    tool: &str,
    args: &[&str],
    flags: &[&str],
    values: &[&str],
    shown: &str,
    ends_at_dashdash: bool,
) -> Result<(), String> {
    let mut iter = args.iter().copied().peekable();
    while let Some(a) = iter.next() {
        if a == "--" && ends_at_dashdash {
            return Ok(());
        }
        if !looks_like_option(a) {
            continue;
        }
        if flags.contains(&a) {
            continue;
        }
        if values.contains(&a) {
            if iter
                .peek()
                .is_some_and(|n| *n == "--" || !looks_like_option(n))
            {
                iter.next();
            }
            continue;
        }
        if let Some((name, _)) = a.split_once('=')
            && (values.contains(&name) || flags.contains(&name))
        {
            continue;
        }
        return Err(not_allowed(tool, a, shown));
    }
    Ok(())
}

/// npm, pnpm, yarn and bun. npm reads every `--name` before `--` as one of its hundreds of
/// config keys, by unique prefix (`--script-shell`, `--node-options`, `--userconfig` all
/// run or load programs), so before `--` only a few options pass; the script's own arguments
/// go after `--`, where only the mutating flags are refused.
fn package_manager(tool: &str, args: &[&str]) -> Result<(), String> {
    let (flags, values, shown): (&[&str], &[&str], &str) = match tool {
        "npm" => (
            &["-s", "--silent", "--if-present", "--workspaces", "--ws"],
            &["-w", "--workspace"],
            "-s, --silent, --if-present, --workspaces, --workspace NAME",
        ),
        "pnpm" => (
            &[
                "-s",
                "--silent",
                "--if-present",
                "-r",
                "--recursive",
                "--parallel",
                "--stream",
            ],
            &["--filter", "-F"],
            "-s, --silent, --if-present, -r, --recursive, --parallel, --stream, --filter X",
        ),
        "yarn" => (&["-s", "--silent"], &[], "-s, --silent"),
        // `bun test` is bun's own runner; these are its harmless options.
        _ => (
            &["--silent", "--only", "--todo", "--coverage", "--bail"],
            &["--timeout", "-t", "--test-name-pattern", "--rerun-each"],
            "--silent, --only, --todo, --coverage, --bail, --timeout N, -t PATTERN, \
             --rerun-each N",
        ),
    };
    let script = match args {
        ["run", name, ..] => format!("run {name}"),
        [name, ..] => (*name).to_string(),
        [] => String::new(),
    };
    let what = format!("`{tool} {script}`");
    allowlist(&what, args, flags, values, shown, true)
        .map_err(|e| format!("{e}; give the script's own arguments after `--`"))
}

/// `node --test`: node's option surface (`--require`, `--import`, `--loader`, `--eval`,
/// `--env-file`, `--openssl-config`, `--inspect`, reporters by path, `--*-prof`, …) is
/// large, so only the test runner's own options pass.
fn node(args: &[&str]) -> Result<(), String> {
    const FLAGS: &[&str] = &[
        "--test",
        "--test-only",
        "--test-force-exit",
        "--experimental-test-coverage",
        "--no-warnings",
        "--enable-source-maps",
        "--experimental-strip-types",
    ];
    const VALUES: &[&str] = &[
        "--test-name-pattern",
        "--test-skip-pattern",
        "--test-concurrency",
        "--test-timeout",
        "--test-shard",
    ];
    const REPORTERS: &[&str] = &["spec", "tap", "dot", "junit", "lcov"];
    let mut rest = Vec::new();
    let mut iter = args.iter().copied();
    while let Some(a) = iter.next() {
        let reporter = match a.split_once('=') {
            Some(("--test-reporter", v)) => Some(v),
            None if a == "--test-reporter" => Some(iter.next().unwrap_or("")),
            _ => None,
        };
        match reporter {
            Some(r) if REPORTERS.contains(&r) => {}
            Some(r) => {
                return Err(format!(
                    "node's `--test-reporter` may name only a built-in reporter ({}), not \
                     `{r}`: another one is a module it would load",
                    REPORTERS.join(", ")
                ));
            }
            None => rest.push(a),
        }
    }
    allowlist(
        "`node --test`",
        &rest,
        FLAGS,
        VALUES,
        "--test-only, --test-name-pattern, --test-skip-pattern, --test-concurrency, \
         --test-timeout, --test-shard, --test-reporter spec|tap|dot|junit|lcov, \
         --experimental-test-coverage, and test files",
        false,
    )
}

/// pytest (argparse: long options by prefix, `--co` and `--pdb` excepted; short options
/// cluster). Before argparse runs, pytest's plugin pre-scan (`consider_preparse`) loads the
/// plugin of every `-p NAME` and `-pNAME` word, after `--` and as another option's value
/// too (`pytest -k -- -p evil`), so `--` ends nothing here.
const PYTEST: Options = Options {
    long: &[
        ("--config-file", Why::Config),
        ("--inifile", Why::Config),
        ("--override-ini", Why::Config),
        ("--rootdir", Why::Inside),
        ("--pdbcls", Why::Runs),
        ("--pyargs", Why::Runs),
        ("--junitxml", Why::Writes),
        ("--junit-xml", Why::Writes),
        ("--resultlog", Why::Writes),
        ("--result-log", Why::Writes),
        ("--report-log", Why::Writes),
        ("--basetemp", Why::Writes),
        ("--debug", Why::Writes),
        ("--html", Why::Writes),
        ("--json-report-file", Why::Writes),
        ("--alluredir", Why::Writes),
        ("--pastebin", Why::Serves),
    ],
    short: &[
        ('c', Why::Config),
        ('o', Why::Config),
        ('p', Why::DisableOnly),
    ],
    short_values: "kmcoprWn",
    exact_ok: &["--co", "--pdb"],
    stop_at_dashdash: false,
    ..Options::new("pytest", Style::Prefix)
};

/// mypy (argparse): a config file can list plugins; `--python-executable` runs one.
const MYPY: Options = Options {
    long: &[
        ("--config-file", Why::Config),
        ("--python-executable", Why::Runs),
        ("--install-types", Why::Runs),
        ("--cache-dir", Why::DevNull),
        ("--junit-xml", Why::Writes),
        ("--any-exprs-report", Why::Writes),
        ("--cobertura-xml-report", Why::Writes),
        ("--html-report", Why::Writes),
        ("--linecount-report", Why::Writes),
        ("--linecoverage-report", Why::Writes),
        ("--lineprecision-report", Why::Writes),
        ("--memory-xml-report", Why::Writes),
        ("--txt-report", Why::Writes),
        ("--xml-report", Why::Writes),
        ("--xslt-html-report", Why::Writes),
        ("--xslt-txt-report", Why::Writes),
    ],
    ..Options::new("mypy", Style::Prefix)
};

/// ruff check / ruff format --check (clap).
const RUFF: Options = Options {
    long: &[
        ("--output-file", Why::Writes),
        ("--cache-dir", Why::Writes),
        ("--add-noqa", Why::Writes),
        ("--fix-only", Why::Writes),
        ("--watch", Why::Serves),
    ],
    short: &[('o', Why::Writes), ('w', Why::Serves)],
    short_values: "o",
    ..Options::new("ruff", Style::Exact)
};

/// `python -m unittest discover -s DIR -t DIR`: the start and top directories stay inside.
fn unittest(args: &[&str]) -> Result<(), String> {
    const DISCOVER: Options = Options {
        long: &[
            ("--start-directory", Why::Inside),
            ("--top-level-directory", Why::Inside),
        ],
        short: &[('s', Why::Inside), ('t', Why::Inside)],
        short_values: "spt",
        ..Options::new("unittest discover", Style::Prefix)
    };
    let Some((&"discover", rest)) = args.split_first() else {
        return Ok(());
    };
    DISCOVER.check(rest)?;
    // `discover [START [PATTERN [TOP]]]`: the positional forms of `-s` and `-t` stay inside
    // too (a pattern is a relative name anyway); `-k`'s test-name pattern is skipped.
    let mut iter = rest.iter().copied();
    while let Some(w) = iter.next() {
        if w == "-k" {
            iter.next();
        } else if !looks_like_option(w) && w != "--" && !inside_project(w) {
            return Err(format!(
                "`python -m unittest discover`'s start and top-level directories must be \
                 relative paths inside the project (no leading `/` or `~`, no `..`), not `{w}`"
            ));
        }
    }
    Ok(())
}

/// cargo's own options (before `--`), for every allowed subcommand.
const CARGO: Options = Options {
    long: &[
        // `--config 'build.rustc-wrapper="…"'` or `target.*.runner` name programs.
        ("--config", Why::Config),
        ("--manifest-path", Why::Inside),
        // A custom target is a JSON file that names a linker.
        ("--target", Why::Builtin),
        ("--artifact-dir", Why::Writes),
        ("--out-dir", Why::Writes),
        ("--lockfile-path", Why::Writes),
        // cargo-nextest.
        ("--config-file", Why::Config),
        ("--tool-config-file", Why::Config),
        ("--archive-file", Why::Runs),
        ("--binaries-metadata", Why::Runs),
        ("--cargo-metadata", Why::Runs),
        ("--workspace-remap", Why::Runs),
        ("--extract-to", Why::Writes),
    ],
    // `-Z` unlocks unstable features (config includes, `-C`, script runners).
    short: &[('Z', Why::Runs), ('C', Why::Inside)],
    short_values: "pjFZC",
    // A `--` after any other option without its value (`--features --`) may be that value,
    // so the words after it are read as cargo's options too.
    flags: &[
        "--release",
        "--workspace",
        "--all",
        "--all-targets",
        "--all-features",
        "--no-default-features",
        "--lib",
        "--bins",
        "--tests",
        "--benches",
        "--examples",
        "--doc",
        "--no-run",
        "--no-fail-fast",
        "--locked",
        "--offline",
        "--frozen",
        "--quiet",
        "--verbose",
        "--keep-going",
        "--ignore-rust-version",
        "--check",
        "--no-deps",
        "--no-capture",
        "--nocapture",
    ],
    short_flags: "qvr",
    ..Options::new("cargo", Style::Exact)
};

fn cargo(args: &[&str]) -> Result<(), String> {
    let mut rest = args;
    while let Some((first, tail)) = rest.split_first()
        && let Some(toolchain) = first.strip_prefix('+')
    {
        // rustup takes a path as a toolchain too: `+/tmp/x` would run `/tmp/x/bin/cargo`.
        if toolchain.is_empty()
            || !toolchain
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            return Err(format!(
                "cargo's `{first}` must name an installed toolchain (`+stable`, \
                 `+nightly`, `+1.85`), not a path"
            ));
        }
        rest = tail;
    }
    const LIBTEST: Options = Options {
        long: &[("--logfile", Why::Writes)],
        ..Options::new("the test harness", Style::Exact)
    };
    const RUSTFMT: Options = Options {
        long: &[
            ("--emit", Why::Writes),
            ("--backup", Why::Writes),
            ("--write-mode", Why::Writes),
        ],
        ..Options::new("rustfmt", Style::Exact)
    };
    // cargo's options run to the first `--` that cannot be an option's value; what follows
    // each `--` before it may be the test harness's (or clippy's, rustfmt's) arguments.
    CARGO.check(rest)?;
    for end in CARGO.possible_ends(rest) {
        let after = &rest[end + 1..];
        match rest.first().copied() {
            Some("clippy") => clippy_levels(after)?,
            Some("test" | "nextest") => LIBTEST.check(after)?,
            Some("fmt") => RUSTFMT.check(after)?,
            _ => {}
        }
    }
    Ok(())
}

/// After `cargo clippy --`, clippy-driver takes rustc's options (`-C linker=…`, `-Z …`,
/// `-L`, `--extern`); only lint levels pass.
fn clippy_levels(args: &[&str]) -> Result<(), String> {
    let mut iter = args.iter();
    while let Some(&a) = iter.next() {
        if matches!(
            a,
            "-D" | "-W"
                | "-A"
                | "-F"
                | "--deny"
                | "--warn"
                | "--allow"
                | "--forbid"
                | "--cap-lints"
        ) {
            // rustc takes any next word as the lint; one that looks like an option is no lint.
            match iter.next() {
                Some(lint) if !lint.starts_with('-') => continue,
                Some(other) => {
                    return Err(format!(
                        "after `cargo clippy --`, `{a}` needs a lint name, not `{other}`"
                    ));
                }
                None => {
                    return Err(format!(
                        "after `cargo clippy --`, `{a}` needs a lint name (`{a} warnings`)"
                    ));
                }
            }
        }
        let attached = ["-D", "-W", "-A", "-F"]
            .iter()
            .any(|p| a.len() > 2 && a.starts_with(p))
            || [
                "--deny=",
                "--warn=",
                "--allow=",
                "--forbid=",
                "--cap-lints=",
            ]
            .iter()
            .any(|p| a.starts_with(p));
        if !attached {
            return Err(format!(
                "after `cargo clippy --` only lint levels are allowed (-D, -W, -A, -F, \
                 --cap-lints), not `{a}`: clippy passes other options to the compiler"
            ));
        }
    }
    Ok(())
}

/// A Go flag's name and value without its one or two dashes.
fn go_flag(word: &str) -> Option<&str> {
    word.strip_prefix("--").or_else(|| word.strip_prefix('-'))
}

/// go test|vet|build. Go's flags take one or two dashes and `=`; the test binary's flags are
/// also spelled `-test.NAME`.
fn go(args: &[&str]) -> Result<(), String> {
    const GO: Options = Options {
        long: &[
            ("-o", Why::Writes),
            ("-pkgdir", Why::Writes),
            ("-coverprofile", Why::Writes),
            ("-cpuprofile", Why::Writes),
            ("-memprofile", Why::Writes),
            ("-blockprofile", Why::Writes),
            ("-mutexprofile", Why::Writes),
            ("-trace", Why::Writes),
            ("-outputdir", Why::Writes),
            ("-fuzzcachedir", Why::Writes),
            ("-gocoverdir", Why::Writes),
            // The test binary's `-test.testlogfile`.
            ("-testlogfile", Why::Writes),
            ("-C", Why::Inside),
            ("-exec", Why::Runs),
            ("-toolexec", Why::Runs),
            ("-vettool", Why::Runs),
            ("-overlay", Why::Runs),
            ("-modfile", Why::Config),
            // `-ldflags=-extld=PROG` and friends name the external linker or assembler.
            ("-ldflags", Why::Runs),
            ("-gcflags", Why::Runs),
            ("-asmflags", Why::Runs),
            ("-gccgoflags", Why::Runs),
        ],
        single_dash_long: true,
        stop_at_dashdash: false,
        ..Options::new("go", Style::Exact)
    };
    let words: Vec<String> = args
        .iter()
        .map(
            |a| match a.strip_prefix("--").or_else(|| a.strip_prefix('-')) {
                Some(name) if name.starts_with("test.") => format!("-{}", &name[5..]),
                _ => (*a).to_string(),
            },
        )
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    GO.check(&words)?;
    // `go test -c` writes the test binary; `go vet -c=N` is only context lines.
    if args.first() == Some(&"test")
        && let Some(w) = words
            .iter()
            .find(|w| go_flag(w).is_some_and(|f| f == "c" || f.starts_with("c=")))
    {
        return Err(format!(
            "go's `{w}` writes the test binary to a file; run the tests instead"
        ));
    }
    let mod_mode = words
        .iter()
        .enumerate()
        .find_map(|(i, w)| match go_flag(w) {
            Some("mod") => words.get(i + 1).copied(),
            Some(f) => f.strip_prefix("mod="),
            None => None,
        });
    if mod_mode == Some("mod") {
        return Err(
            "go's `-mod=mod` may rewrite go.mod and go.sum; use `-mod=readonly` or \
             `-mod=vendor`"
                .into(),
        );
    }
    Ok(())
}

const MVN_FLAGS: &[&str] = &[
    "-q",
    "--quiet",
    "-e",
    "--errors",
    "-X",
    "--debug",
    "-B",
    "--batch-mode",
    "-N",
    "--non-recursive",
    "-o",
    "--offline",
    "-ntp",
    "--no-transfer-progress",
    "-fae",
    "--fail-at-end",
    "-ff",
    "--fail-fast",
    "-am",
    "--also-make",
    "-amd",
    "--also-make-dependents",
    "-nsu",
    "--no-snapshot-updates",
    "-U",
    "-V",
    "--show-version",
];
const MVN_VALUES: &[&str] = &[
    "-T",
    "--threads",
    "-pl",
    "--projects",
    "-P",
    "--activate-profiles",
    "-rf",
    "--resume-from",
    "-D",
];
/// System properties that select or skip tests; others (`-DargLine=-javaagent:…`,
/// `-Dmaven.ext.class.path=…`, `-Dmaven.repo.local=…`) load code or move files.
const MVN_PROPERTIES: &[&str] = &[
    "test",
    "it.test",
    "skipTests",
    "skipITs",
    "maven.test.skip",
    "failIfNoTests",
    "surefire.failIfNoSpecifiedTests",
    "groups",
    "excludedGroups",
];

/// Maven: settings files (`-s`, `-gs`), another POM (`-f`), a log file (`-l`), toolchains
/// and most properties could bring in other programs or write files, so options are an
/// allowlist.
fn maven(args: &[&str]) -> Result<(), String> {
    let shown = "-q -e -X -B -N -o -ntp -fae -ff -am -amd -nsu -U -V, -T N, -pl X, -P X, \
                 -rf X, -D for test, it.test, skipTests, skipITs, maven.test.skip, \
                 failIfNoTests, surefire.failIfNoSpecifiedTests, groups, excludedGroups";
    let mut iter = args.iter().copied().peekable();
    while let Some(a) = iter.next() {
        let property = match a.strip_prefix("-D") {
            Some("") => Some(iter.next().unwrap_or("")),
            Some(p) => Some(p),
            None => None,
        };
        if let Some(p) = property {
            let key = p.split_once('=').map_or(p, |(k, _)| k);
            if !MVN_PROPERTIES.contains(&key) {
                return Err(not_allowed("mvn", &format!("-D{key}"), shown));
            }
            continue;
        }
        if !a.starts_with('-') || MVN_FLAGS.contains(&a) {
            continue;
        }
        if MVN_VALUES.contains(&a) {
            // commons-cli reads a value that looks like an option as the next option.
            if iter.peek().is_some_and(|n| !looks_like_option(n)) {
                iter.next();
            }
            continue;
        }
        return Err(not_allowed("mvn", a, shown));
    }
    Ok(())
}

const GRADLE_FLAGS: &[&str] = &[
    "-q",
    "--quiet",
    "-i",
    "--info",
    "-d",
    "--debug",
    "-w",
    "--warn",
    "-s",
    "--stacktrace",
    "-S",
    "--full-stacktrace",
    "--continue",
    "--offline",
    "--parallel",
    "--no-parallel",
    "--daemon",
    "--no-daemon",
    "--build-cache",
    "--no-build-cache",
    "--configuration-cache",
    "--no-configuration-cache",
    "--rerun-tasks",
    "--rerun",
    "-m",
    "--dry-run",
    "--no-scan",
];
const GRADLE_VALUES: &[&str] = &[
    "-x",
    "--exclude-task",
    "--tests",
    "--console",
    "--warning-mode",
    "--max-workers",
];

/// Gradle: init scripts (`-I`), other build or settings files, another project or user home
/// (which holds init scripts), included builds, `-D`/`-P` properties (`org.gradle.java.home`
/// picks the JVM), build scans (network) and lock or verification writes are all options, so
/// options are an allowlist.
fn gradle(args: &[&str]) -> Result<(), String> {
    allowlist(
        "gradle",
        args,
        GRADLE_FLAGS,
        GRADLE_VALUES,
        "-q -i -d -w -s -S -m --continue --offline --parallel --no-daemon --build-cache \
         --configuration-cache --rerun-tasks --rerun --dry-run, -x TASK, --tests FILTER, \
         --console MODE, --warning-mode MODE, --max-workers N",
        false,
    )
}

/// tsc --noEmit: options that emit or write anyway, by TypeScript's case-insensitive names.
fn tsc(args: &[&str]) -> Result<(), String> {
    const TSC: Options = Options {
        long: &[
            ("--build", Why::Writes),
            ("--init", Why::Writes),
            ("--incremental", Why::Writes),
            ("--tsBuildInfoFile", Why::Writes),
            ("--outDir", Why::Writes),
            ("--outFile", Why::Writes),
            ("--out", Why::Writes),
            ("--declarationDir", Why::Writes),
            ("--generateTrace", Why::Writes),
            ("--generateCpuProfile", Why::Writes),
            ("--watch", Why::Serves),
        ],
        short: &[('b', Why::Writes), ('i', Why::Writes), ('w', Why::Serves)],
        short_values: "ptm",
        // tsc has no `--`: it reports it as an unknown option and reads on.
        stop_at_dashdash: false,
        ..Options::new("tsc", Style::Folded)
    };
    TSC.check(args)?;
    // A boolean option takes `true`/`false` as its next word: `--noEmit false` emits.
    for (i, a) in args.iter().enumerate() {
        let switched_off = match a.split_once('=') {
            Some((n, v)) => n.eq_ignore_ascii_case("--noEmit") && v.eq_ignore_ascii_case("false"),
            None => {
                a.eq_ignore_ascii_case("--noEmit")
                    && args
                        .get(i + 1)
                        .is_some_and(|v| v.eq_ignore_ascii_case("false"))
            }
        };
        if switched_off {
            return Err("`--noEmit false` turns --noEmit off, so tsc would write files".into());
        }
    }
    Ok(())
}

/// eslint: a config file, rules directory, plugin or parser is code; a formatter by path too.
const ESLINT: Options = Options {
    long: &[
        ("--output-file", Why::Writes),
        ("--config", Why::Config),
        ("--rulesdir", Why::Runs),
        ("--plugin", Why::Runs),
        ("--parser", Why::Runs),
        ("--resolve-plugins-relative-to", Why::Runs),
        ("--format", Why::Builtin),
        ("--cache", Why::Writes),
        ("--cache-location", Why::Writes),
        ("--cache-file", Why::Writes),
        ("--init", Why::Writes),
        ("--inspect-config", Why::Serves),
        ("--mcp", Why::Serves),
    ],
    short: &[('o', Why::Writes), ('c', Why::Config), ('f', Why::Builtin)],
    short_values: "ocf",
    // `--rule` is its own option, not a prefix of `--rulesdir`.
    exact_ok: &["--rule"],
    ..Options::new("eslint", Style::Prefix)
};

/// vitest (cac: kebab and camel case alike, dotted sub-options).
const VITEST: Options = Options {
    long: &[
        ("--config", Why::Config),
        ("--workspace", Why::Config),
        ("--outputFile", Why::Writes),
        ("--cacheDir", Why::Writes),
        ("--cache.dir", Why::Writes),
        ("--coverage.reportsDirectory", Why::Writes),
        ("--attachmentsDir", Why::Writes),
        ("--root", Why::Inside),
        ("--dir", Why::Inside),
        ("--reporter", Why::Builtin),
        ("--environment", Why::Builtin),
        ("--pool", Why::Builtin),
        ("--setupFiles", Why::Runs),
        ("--globalSetup", Why::Runs),
        ("--api", Why::Serves),
        ("--ui", Why::Serves),
        ("--open", Why::Serves),
        ("--inspect", Why::Serves),
        ("--inspectBrk", Why::Serves),
        ("--watch", Why::Serves),
    ],
    short: &[('c', Why::Config), ('r', Why::Inside), ('w', Why::Serves)],
    short_values: "cr",
    ..Options::new("vitest", Style::Folded)
};

/// jest (yargs: kebab and camel case alike): most of its configuration is also an option,
/// and many options name modules it loads.
const JEST: Options = Options {
    long: &[
        ("--config", Why::Config),
        ("--preset", Why::Config),
        ("--projects", Why::Config),
        ("--outputFile", Why::Writes),
        ("--cacheDirectory", Why::Writes),
        ("--coverageDirectory", Why::Writes),
        ("--init", Why::Writes),
        ("--rootDir", Why::Inside),
        ("--roots", Why::Inside),
        ("--reporters", Why::Builtin),
        ("--testEnvironment", Why::Builtin),
        ("--setupFiles", Why::Runs),
        ("--setupFilesAfterEnv", Why::Runs),
        ("--testRunner", Why::Runs),
        ("--runner", Why::Runs),
        ("--globalSetup", Why::Runs),
        ("--globalTeardown", Why::Runs),
        ("--resolver", Why::Runs),
        ("--testResultsProcessor", Why::Runs),
        ("--testSequencer", Why::Runs),
        ("--watchPlugins", Why::Runs),
        ("--snapshotResolver", Why::Runs),
        ("--transform", Why::Runs),
        ("--filter", Why::Runs),
        ("--modulePaths", Why::Runs),
        ("--moduleDirectories", Why::Runs),
        ("--haste", Why::Runs),
        ("--watch", Why::Serves),
        ("--watchAll", Why::Serves),
    ],
    short: &[('c', Why::Config)],
    short_values: "ctw",
    ..Options::new("jest", Style::Folded)
};

/// rubocop (Ruby's OptionParser: long options by prefix, `--cache` itself excepted).
const RUBOCOP: Options = Options {
    long: &[
        ("--require", Why::Runs),
        ("--plugin", Why::Runs),
        ("--config", Why::Config),
        ("--out", Why::Writes),
        ("--cache-root", Why::Writes),
        ("--auto-gen-config", Why::Writes),
        ("--regenerate-todo", Why::Writes),
        ("--disable-uncorrectable", Why::Writes),
        ("--init", Why::Writes),
        ("--auto-correct", Why::Writes),
        ("--auto-correct-all", Why::Writes),
        ("--autocorrect", Why::Writes),
        ("--autocorrect-all", Why::Writes),
        ("--fix-layout", Why::Writes),
        ("--server", Why::Serves),
        ("--start-server", Why::Serves),
        ("--restart-server", Why::Serves),
    ],
    short: &[
        ('r', Why::Runs),
        ('c', Why::Config),
        ('o', Why::Writes),
        ('x', Why::Writes),
    ],
    short_values: "rcofs",
    exact_ok: &["--cache"],
    ..Options::new("rubocop", Style::Prefix)
};

/// dotnet test|build: MSBuild switches (`-p:`, `/p:`, `-logger:`, `-bl`), run settings
/// (`-s`) and adapter paths load code or write files, so options are an allowlist and
/// nothing may follow `--` (run-settings overrides).
fn dotnet(args: &[&str]) -> Result<(), String> {
    const FLAGS: &[&str] = &[
        "--no-build",
        "--no-restore",
        "--nologo",
        "--no-dependencies",
        "-t",
        "--list-tests",
    ];
    const VALUES: &[&str] = &[
        "-c",
        "--configuration",
        "-f",
        "--framework",
        "-v",
        "--verbosity",
        "--filter",
        "--runtime",
        "--arch",
        "--os",
    ];
    let shown = "--no-build --no-restore --nologo --no-dependencies --list-tests, -c CONFIG, \
                 -f FRAMEWORK, -v LEVEL, --filter EXPR, --runtime RID, --arch ARCH, --os OS";
    if args.contains(&"--") {
        return Err(
            "dotnet's arguments after `--` override run settings (adapter and collector \
             paths); run it without them"
                .into(),
        );
    }
    let own = args.get(1..).unwrap_or(&[]);
    allowlist("dotnet", own, FLAGS, VALUES, shown, false)?;
    match own.iter().find(|a| a.starts_with('/')) {
        Some(a) => Err(format!(
            "`{a}`: dotnet reads a word starting with `/` as an MSBuild switch; name the \
             project by a relative path"
        )),
        None => Ok(()),
    }
}

/// flutter test (its `--coverage` writes the default `coverage/`, left to the sandbox like
/// other build outputs; a named path is refused).
const FLUTTER_TEST: Options = Options {
    long: &[
        ("--file-reporter", Why::Writes),
        ("--coverage-path", Why::Writes),
        ("--local-engine", Why::Runs),
        ("--local-engine-src-path", Why::Runs),
        ("--local-engine-host", Why::Runs),
    ],
    ..Options::new("flutter test", Style::Exact)
};

/// dart test (its `--coverage` names the directory it writes).
const DART_TEST: Options = Options {
    long: &[
        ("--file-reporter", Why::Writes),
        ("--coverage", Why::Writes),
        ("--precompiled", Why::Runs),
    ],
    ..Options::new("dart test", Style::Exact)
};

/// prettier --check: plugins and JS configuration files are code.
const PRETTIER: Options = Options {
    long: &[
        ("--plugin", Why::Runs),
        ("--plugin-search-dir", Why::Runs),
        ("--config", Why::Config),
        ("--cache", Why::Writes),
        ("--cache-location", Why::Writes),
    ],
    ..Options::new("prettier", Style::Prefix)
};
