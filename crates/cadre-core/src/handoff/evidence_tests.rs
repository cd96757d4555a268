#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;

use super::*;

/// What a line earns: a check of some kind, a formatter without credit, or nothing.
#[derive(Debug, PartialEq)]
enum Want {
    Check(CheckKind),
    FmtCheck,
    FmtNoCredit,
    Nothing,
}
use Want::*;

fn want_of(class: &CommandClass) -> Want {
    match class {
        CommandClass::Verifier { kind, .. } => Check(*kind),
        CommandClass::Formatter {
            check_mode: true, ..
        } => FmtCheck,
        CommandClass::Formatter {
            check_mode: false, ..
        } => FmtNoCredit,
        CommandClass::Other => Nothing,
    }
}

fn table(cases: &[(&str, Want)]) {
    let mut wrong = Vec::new();
    for (cmd, want) in cases {
        let got = want_of(&classify_command(cmd));
        if got != *want {
            wrong.push(format!("{cmd:?}: got {got:?}, want {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn every_recognised_verifier() {
    use CheckKind::*;
    table(&[
        // npm, pnpm, yarn, bun
        ("npm test", Check(Test)),
        ("npm t", Check(Test)),
        ("npm run test", Check(Test)),
        ("npm run-script test", Check(Test)),
        ("npm run test:unit", Check(Test)),
        ("npm run lint", Check(Lint)),
        ("npm run typecheck", Check(Typecheck)),
        ("npm run type-check", Check(Typecheck)),
        ("npm run check", Check(Typecheck)),
        ("npm run build", Check(Build)),
        ("npm --prefix web test", Check(Test)),
        ("npm -w pkg run test", Check(Test)),
        ("pnpm test", Check(Test)),
        ("pnpm -r test", Check(Test)),
        ("pnpm --filter app lint", Check(Lint)),
        ("pnpm typecheck", Check(Typecheck)),
        ("pnpm build", Check(Build)),
        ("yarn test", Check(Test)),
        ("yarn lint", Check(Lint)),
        ("yarn run build", Check(Build)),
        ("bun test", Check(Test)),
        ("bun run lint", Check(Lint)),
        ("bun check", Check(Typecheck)),
        // node
        ("node --test", Check(Test)),
        ("node --test test/", Check(Test)),
        ("node --experimental-vm-modules --test", Check(Test)),
        // python
        ("python -m pytest", Check(Test)),
        ("python3 -m pytest -x tests/", Check(Test)),
        ("python3.12 -m unittest discover", Check(Test)),
        ("python -u -m pytest", Check(Test)),
        ("python -X dev -m pytest", Check(Test)),
        ("python -m mypy src", Check(Typecheck)),
        ("python -m ruff check .", Check(Lint)),
        ("/usr/bin/python3 -m pytest", Check(Test)),
        ("pytest", Check(Test)),
        ("pytest -q tests/test_a.py", Check(Test)),
        ("py.test", Check(Test)),
        ("mypy .", Check(Typecheck)),
        ("ruff check .", Check(Lint)),
        // cargo
        ("cargo test", Check(Test)),
        ("cargo t", Check(Test)),
        ("cargo test -p cadre-core -- --nocapture", Check(Test)),
        ("cargo +nightly test", Check(Test)),
        ("cargo --locked test", Check(Test)),
        ("cargo check", Check(Typecheck)),
        ("cargo check --all-targets", Check(Typecheck)),
        ("cargo clippy --all-targets -- -D warnings", Check(Lint)),
        ("cargo build --release", Check(Build)),
        ("cargo nextest run", Check(Test)),
        // go
        ("go test ./...", Check(Test)),
        ("go vet ./...", Check(Lint)),
        ("go build ./...", Check(Build)),
        // jvm
        ("mvn test", Check(Test)),
        ("mvn -q verify", Check(Test)),
        ("mvn -pl core compile", Check(Build)),
        ("./mvnw test", Check(Test)),
        ("mvn spotless:check", Check(Lint)),
        ("gradle test", Check(Test)),
        ("./gradlew check", Check(Test)),
        ("./gradlew :app:test", Check(Test)),
        ("./gradlew build -x lint", Check(Build)),
        // make
        ("make test", Check(Test)),
        ("make -j4 test", Check(Test)),
        ("make -k -j 2 check", Check(Test)),
        ("make check", Check(Test)),
        ("make lint", Check(Lint)),
        ("make build", Check(Build)),
        ("make -C sub -j 4 test", Check(Test)),
        ("make -j8 lint test", Check(Test)),
        ("make V=1 test", Check(Test)),
        // typescript and js tools
        ("tsc --noEmit", Check(Typecheck)),
        ("tsc -p tsconfig.json --noEmit", Check(Typecheck)),
        ("eslint .", Check(Lint)),
        ("eslint --fix-dry-run .", Check(Lint)),
        ("vitest run", Check(Test)),
        ("jest", Check(Test)),
        ("jest --ci src", Check(Test)),
        ("node_modules/.bin/jest", Check(Test)),
        ("rubocop", Check(Lint)),
        ("bundle exec rubocop app", Check(Lint)),
        // dotnet, flutter, dart
        ("dotnet test", Check(Test)),
        ("dotnet build", Check(Build)),
        ("flutter test", Check(Test)),
        ("dart test", Check(Test)),
        // npx and friends
        ("npx jest", Check(Test)),
        ("npx vitest run", Check(Test)),
        ("npx tsc --noEmit", Check(Typecheck)),
        ("npx eslint src", Check(Lint)),
        ("npx -y eslint src", Check(Lint)),
        ("npx --no-install jest", Check(Test)),
        ("npx -p typescript tsc --noEmit", Check(Typecheck)),
        ("bunx vitest run", Check(Test)),
        ("pnpm exec jest", Check(Test)),
        ("yarn dlx eslint .", Check(Lint)),
        ("npm exec jest", Check(Test)),
        ("bun x jest", Check(Test)),
        ("pnpm vitest run", Check(Test)),
        ("yarn jest --ci", Check(Test)),
        ("yarn tsc --noEmit", Check(Typecheck)),
        ("pnpm eslint .", Check(Lint)),
        ("bun vitest", Check(Test)),
        ("uv run pytest", Check(Test)),
        ("uv run --with pytest-cov pytest -q", Check(Test)),
        ("poetry run mypy .", Check(Typecheck)),
        ("pipenv run python -m pytest", Check(Test)),
        ("uvx ruff check .", Check(Lint)),
    ]);
}

#[test]
fn not_verifiers() {
    table(&[
        ("ls -la", Nothing),
        ("git status", Nothing),
        ("echo cargo test", Nothing),
        ("cat Cargo.toml", Nothing),
        ("grep -r test src", Nothing),
        ("npm install", Nothing),
        ("npm ci", Nothing),
        ("yarn add jest", Nothing),
        ("npm run dev", Nothing),
        ("npm run start", Nothing),
        ("npm", Nothing),
        ("node script.js --test", Nothing),
        ("node test.js", Nothing),
        ("python script.py", Nothing),
        ("python -m http.server", Nothing),
        ("python -m pytest_plugin_x", Nothing),
        ("python -c 'import pytest'", Nothing),
        ("python", Nothing),
        ("python2 -m pytest", Nothing),
        ("pythonx -m pytest", Nothing),
        ("ruff", Nothing),
        ("ruff rule E501", Nothing),
        ("cargo run", Nothing),
        ("cargo doc", Nothing),
        ("cargo nextest list", Nothing),
        ("cargo", Nothing),
        ("go run .", Nothing),
        ("go mod tidy", Nothing),
        ("mvn clean", Nothing),
        ("mvn dependency:tree", Nothing),
        ("gradle dependencies", Nothing),
        ("make", Nothing),
        ("make install", Nothing),
        ("make install test", Nothing),
        // Forms that run no check: a dry run, a listing, help, a version.
        ("make -n test", Nothing),
        ("make --dry-run test", Nothing),
        ("make -kn check", Nothing),
        ("make -q test", Nothing),
        ("make -i test", Nothing),
        ("make --just test", Nothing),
        ("make --ignore test", Nothing),
        ("MAKEFLAGS=n make test", Nothing),
        ("env MAKEFLAGS=n make test", Nothing),
        ("PYTEST_ADDOPTS=--co pytest", Nothing),
        ("GOFLAGS=-run=^$ go test ./...", Nothing),
        ("pytest --collect-only", Nothing),
        ("pytest --co -q", Nothing),
        ("cargo test -- --list", Nothing),
        ("cargo test --no-run", Nothing),
        ("cargo test --help", Nothing),
        ("go test -h", Nothing),
        ("jest --listTests", Nothing),
        ("npx vitest --version", Nothing),
        ("mypy --version", Nothing),
        ("make -C test", Nothing),
        ("tsc", Nothing),
        ("tsc -p .", Nothing),
        ("dotnet run", Nothing),
        ("flutter run", Nothing),
        ("dart analyze", Nothing),
        ("npx create-react-app x", Nothing),
        ("npm jest", Nothing),
        ("yarn tsc", Nothing),
        ("pnpm dev", Nothing),
        ("uv sync", Nothing),
        ("uv run python app.py", Nothing),
        ("poetry install", Nothing),
        ("command -v cargo", Nothing),
        ("which pytest", Nothing),
        ("", Nothing),
        ("   ", Nothing),
        ("# cargo test", Nothing),
    ]);
}

#[test]
fn mutating_flags_earn_no_credit() {
    table(&[
        ("eslint --fix .", Nothing),
        ("eslint --fix=true .", Nothing),
        ("npx eslint --fix src", Nothing),
        ("ruff check --fix .", Nothing),
        ("python -m ruff check --fix", Nothing),
        ("cargo clippy --fix --allow-dirty", Nothing),
        ("jest -u", Nothing),
        ("jest --updateSnapshot", Nothing),
        ("vitest run --update", Nothing),
        ("npx vitest -u", Nothing),
        ("npm test -- -u", Nothing),
        ("yarn test --updateSnapshot", Nothing),
        ("pnpm lint --fix", Nothing),
        ("npx playwright test --update-snapshots", Nothing),
        ("rubocop -a", Nothing),
        ("rubocop -A", Nothing),
        ("rubocop --autocorrect-all", Nothing),
        ("npm run lint:fix", Nothing),
        ("npm run fix", Nothing),
        ("yarn format", Nothing),
        ("mvn spotless:apply", Nothing),
        ("./gradlew spotlessApply", Nothing),
        ("./gradlew ktlintFormat", Nothing),
        ("mvn versions:set -DnewVersion=2", Nothing),
        ("pytest --write", Nothing),
        ("pnpm eslint --fix .", Nothing),
        ("uv run ruff check --fix", Nothing),
        // A mutating segment spoils the whole line.
        ("eslint --fix . && npm test", Nothing),
        ("npm test && eslint --fix .", Nothing),
    ]);
}

#[test]
fn formatters_count_only_in_check_mode() {
    table(&[
        ("cargo fmt --check", FmtCheck),
        ("cargo fmt --all --check", FmtCheck),
        ("cargo fmt -- --check", FmtCheck),
        ("cargo fmt", FmtNoCredit),
        ("cargo fmt --all", FmtNoCredit),
        ("rustfmt --check src/lib.rs", FmtCheck),
        ("rustfmt src/lib.rs", FmtNoCredit),
        ("prettier --check .", FmtCheck),
        ("npx prettier --check .", FmtCheck),
        ("prettier -c .", FmtCheck),
        ("prettier --list-different .", FmtCheck),
        ("prettier --write .", FmtNoCredit),
        ("npx prettier --write .", FmtNoCredit),
        ("yarn prettier --check .", FmtCheck),
        ("uv run black --check .", FmtCheck),
        ("prettier --check --write .", FmtNoCredit),
        ("prettier src/a.ts", FmtNoCredit),
        ("black --check .", FmtCheck),
        ("black .", FmtNoCredit),
        ("python -m black --check .", FmtCheck),
        ("ruff format --check", FmtCheck),
        ("ruff format", FmtNoCredit),
        ("dotnet format --verify-no-changes", FmtCheck),
        ("dotnet format", FmtNoCredit),
        ("dart format --set-exit-if-changed .", FmtCheck),
        ("dart format .", FmtNoCredit),
        // gofmt exits 0 whether or not files need formatting.
        ("gofmt -l .", FmtNoCredit),
        ("gofmt -d .", FmtNoCredit),
        ("gofmt -w .", FmtNoCredit),
        ("go fmt ./...", FmtNoCredit),
        // A formatter check next to a verifier: the line is a verifier.
        ("cargo fmt --check && cargo clippy", Check(CheckKind::Lint)),
        ("cargo test && cargo fmt --check", Check(CheckKind::Test)),
        // A writing formatter spoils a line with a check.
        ("cargo fmt && cargo test", FmtNoCredit),
        ("cargo test && cargo fmt", FmtNoCredit),
    ]);
}

#[test]
fn prefixes_and_wrappers_are_looked_through() {
    use CheckKind::*;
    table(&[
        ("RUST_BACKTRACE=1 cargo test", Check(Test)),
        ("A=1 B=two cargo test", Check(Test)),
        ("CI=true npm test", Check(Test)),
        ("env RUST_LOG=debug cargo test", Check(Test)),
        ("env -u HOME cargo test", Check(Test)),
        ("timeout 600 cargo test", Check(Test)),
        ("timeout -k 5 10m cargo test", Check(Test)),
        ("timeout --signal=KILL 60 pytest", Check(Test)),
        ("time cargo build", Check(Build)),
        ("nice -n 10 cargo test", Check(Test)),
        ("nohup pytest", Check(Test)),
        ("exec cargo test", Check(Test)),
        ("command cargo test", Check(Test)),
        ("stdbuf -oL pytest", Check(Test)),
        ("A=1 timeout 60 env B=2 cargo test", Check(Test)),
        ("A=1", Nothing),
        ("timeout 60", Nothing),
    ]);
}

#[test]
fn chains_pipes_and_statements() {
    use CheckKind::*;
    table(&[
        // && chains: a failure reaches the end.
        ("cd crates/core && cargo test", Check(Test)),
        ("cd a && cargo build && cargo test", Check(Test)),
        ("cargo test && echo done", Check(Test)),
        ("cargo test && cargo clippy", Check(Lint)),
        // The last statement decides; earlier ones are lost without set -e.
        ("cd a; cargo test", Check(Test)),
        ("cargo test; echo done", Nothing),
        ("cargo test\necho done", Nothing),
        ("cargo test;", Check(Test)),
        // A lost check spoils the line even next to a counted one.
        ("cargo test; cargo clippy", Nothing),
        ("cargo test | tail; cargo clippy", Nothing),
        ("cargo fmt --check; cargo test", Nothing),
        ("cargo test || true; cargo clippy", Nothing),
        ("set -e; cargo test; cargo clippy", Check(Lint)),
        ("set -e; cargo test; echo done", Check(Test)),
        ("set -e\ncargo test\necho done", Check(Test)),
        ("set -o errexit; cargo test; echo done", Check(Test)),
        ("set -euo pipefail; cargo test; echo done", Check(Test)),
        ("set -e; set +e; cargo test; echo done", Nothing),
        // Under set -e only the last pipeline of an && chain stops the script.
        ("set -e; cargo test && echo ok; echo done", Nothing),
        ("set -e; echo start && cargo test; echo done", Check(Test)),
        // ||, background and negation mask the status.
        ("cargo test || true", Nothing),
        ("cargo test || echo failed", Nothing),
        ("cd a || exit 1 && cargo test", Nothing),
        ("cargo test &", Nothing),
        ("cargo test & wait", Nothing),
        ("! cargo test", Nothing),
        // Pipes: only the last command's status survives without pipefail.
        ("cargo test 2>&1 | tail -50", Nothing),
        ("cargo test | tee log", Nothing),
        ("cargo test |& tail", Nothing),
        ("set -o pipefail; cargo test 2>&1 | tail -50", Check(Test)),
        ("set -o pipefail && cargo test | tail", Check(Test)),
        ("set -euo pipefail; cargo test | tail", Check(Test)),
        ("set -eo pipefail; cd x && npm test | cat", Check(Test)),
        ("cargo test | tail; set -o pipefail", Nothing),
        (
            "set -o pipefail; set +o pipefail; cargo test | tail",
            Nothing,
        ),
        ("echo hi | cargo test", Check(Test)),
        // Redirections do not change the status.
        ("cargo test 2>&1", Check(Test)),
        ("cargo test > /tmp/log 2>&1", Check(Test)),
        ("cargo test &> /tmp/log", Check(Test)),
        // Shapes this module does not follow.
        ("(cd a && cargo test)", Nothing),
        ("{ cargo test; }", Nothing),
        ("if cargo test; then echo ok; fi", Nothing),
        ("for d in a b; do cargo test; done", Nothing),
        ("bash -c 'cargo test'", Nothing),
        ("sh -c \"cargo test\"", Nothing),
        ("eval cargo test", Nothing),
        ("echo . | xargs cargo test", Nothing),
        ("npx -c 'jest'", Nothing),
        ("cat <<EOF\ncargo test\nEOF", Nothing),
        ("cargo test 'unterminated", Nothing),
        ("cargo test; f() { :; }", Nothing),
    ]);
}

#[test]
fn normalized_form_identifies_repeated_runs() {
    let norm = |c: &str| classify_command(c).check_key().map(str::to_string);
    let same = [
        ("cargo test", "cargo test"),
        ("RUST_BACKTRACE=1 cargo test", "cargo test"),
        ("cargo   test  2>&1", "cargo test"),
        ("timeout 300 cargo test", "cargo test"),
        ("npx jest", "jest"),
        ("cargo test 'a b'", "cargo test a b"),
        ("cd x && cargo test", "cd x && cargo test"),
        (
            "set -o pipefail; cargo test 2>&1 | tail -5",
            "cargo test | tail -5",
        ),
        ("cargo fmt -- --check", "cargo fmt -- --check"),
    ];
    for (cmd, want) in same {
        assert_eq!(norm(cmd).as_deref(), Some(want), "{cmd:?}");
    }
    assert_ne!(norm("cd a && cargo test"), norm("cd b && cargo test"));
    assert_eq!(norm("ls"), None);
    assert_eq!(norm("cargo fmt"), None);
}

fn bash_event(cmd: &str, exit: Option<i32>) -> ToolEvent {
    ToolEvent {
        tool: "bash".into(),
        args: json!({ "command": cmd }),
        is_error: exit != Some(0),
        exit_code: exit,
        ..ToolEvent::default()
    }
}

fn edit_event(path: &str) -> ToolEvent {
    ToolEvent {
        tool: "edit".into(),
        args: json!({ "path": path }),
        ..ToolEvent::default()
    }
}

fn log_of(events: &[ToolEvent]) -> EvidenceLog {
    let mut log = EvidenceLog::new();
    for e in events {
        log.record(e);
    }
    log
}

#[test]
fn has_successful_check_table() {
    let timed_out = ToolEvent {
        timed_out: true,
        ..bash_event("cargo test", None)
    };
    let aborted = ToolEvent {
        aborted: true,
        ..bash_event("cargo test", None)
    };
    let cases: Vec<(&str, Vec<ToolEvent>, bool)> = vec![
        ("nothing ran", vec![], false),
        ("no check", vec![bash_event("ls", Some(0))], false),
        ("one passing", vec![bash_event("cargo test", Some(0))], true),
        (
            "one failing",
            vec![bash_event("cargo test", Some(101))],
            false,
        ),
        ("timed out", vec![timed_out.clone()], false),
        ("aborted", vec![aborted], false),
        ("no exit code", vec![bash_event("cargo test", None)], false),
        (
            "latest run wins: fail then pass",
            vec![
                bash_event("cargo test", Some(101)),
                bash_event("cargo test", Some(0)),
            ],
            true,
        ),
        (
            "latest run wins: pass then fail",
            vec![
                bash_event("cargo test", Some(0)),
                bash_event("cargo test", Some(101)),
            ],
            false,
        ),
        (
            "latest run wins: pass then timeout",
            vec![bash_event("cargo test", Some(0)), timed_out],
            false,
        ),
        (
            "one of two distinct checks fails",
            vec![
                bash_event("cargo test", Some(0)),
                bash_event("cargo clippy", Some(1)),
            ],
            false,
        ),
        (
            "both distinct checks pass",
            vec![
                bash_event("cargo test", Some(0)),
                bash_event("cargo clippy", Some(0)),
            ],
            true,
        ),
        (
            "prefix variants are one command",
            vec![
                bash_event("cargo test", Some(101)),
                bash_event("RUST_BACKTRACE=1 cargo test 2>&1", Some(0)),
            ],
            true,
        ),
        (
            "a failed narrower run stays",
            vec![
                bash_event("cargo test -p a", Some(101)),
                bash_event("cargo test", Some(0)),
            ],
            false,
        ),
        (
            "check before an edit is stale",
            vec![bash_event("cargo test", Some(0)), edit_event("a.rs")],
            false,
        ),
        (
            "check after the edit counts",
            vec![
                bash_event("cargo test", Some(101)),
                edit_event("a.rs"),
                bash_event("cargo test", Some(0)),
            ],
            true,
        ),
        (
            "a failed check before the edit is forgotten",
            vec![
                bash_event("cargo clippy", Some(1)),
                edit_event("a.rs"),
                bash_event("cargo test", Some(0)),
            ],
            true,
        ),
        (
            "formatter without --check is no check",
            vec![edit_event("a.rs"), bash_event("cargo fmt", Some(0))],
            false,
        ),
        (
            "formatter without --check is a mutation only if reported",
            vec![
                bash_event("cargo test", Some(0)),
                bash_event("cargo fmt", Some(0)),
            ],
            true,
        ),
        (
            "formatter in check mode counts",
            vec![edit_event("a.rs"), bash_event("cargo fmt --check", Some(0))],
            true,
        ),
        (
            "bash that changed files is a mutation",
            vec![
                bash_event("cargo test", Some(0)),
                ToolEvent {
                    mutated_files: vec!["a.rs".into()],
                    ..bash_event("sed -i s/a/b/ a.rs", Some(0))
                },
            ],
            false,
        ),
        (
            "a check that changed files is not credited",
            vec![ToolEvent {
                mutated_files: vec!["a.rs".into()],
                ..bash_event("cargo test", Some(0))
            }],
            false,
        ),
        (
            "failed edit is no mutation",
            vec![
                bash_event("cargo test", Some(0)),
                ToolEvent {
                    is_error: true,
                    ..edit_event("a.rs")
                },
            ],
            true,
        ),
        (
            "write is a mutation",
            vec![
                bash_event("cargo test", Some(0)),
                ToolEvent {
                    tool: "write".into(),
                    ..edit_event("b.rs")
                },
            ],
            false,
        ),
        (
            "a non-check bash call does not disturb the checks",
            vec![bash_event("cargo test", Some(0)), bash_event("ls", Some(2))],
            true,
        ),
        (
            "is_error with exit 0 is no pass",
            vec![ToolEvent {
                is_error: true,
                ..bash_event("cargo test", Some(0))
            }],
            false,
        ),
    ];
    for (name, events, want) in cases {
        assert_eq!(log_of(&events).has_successful_check(), want, "{name}");
    }
}

#[test]
fn kept_checks_are_latest_runs_in_order() {
    let log = log_of(&[
        bash_event("cargo test", Some(101)),
        bash_event("cargo clippy", Some(0)),
        bash_event("cargo test", Some(0)),
        bash_event("npm test", Some(1)),
        bash_event("cargo clippy", Some(0)),
    ]);
    let kept: Vec<(&str, Option<i32>)> = log
        .checks()
        .iter()
        .map(|c| (c.normalized.as_str(), c.exit_code))
        .collect();
    assert_eq!(
        kept,
        vec![
            ("cargo test", Some(0)),
            ("npm test", Some(1)),
            ("cargo clippy", Some(0))
        ]
    );
    assert!(!log.mutated());
    assert_eq!(log.stale_runs(), 0);

    let log = log_of(&[
        bash_event("cargo test", Some(0)),
        bash_event("cargo clippy", Some(0)),
        edit_event("a"),
        bash_event("cargo test", Some(0)),
    ]);
    assert!(log.mutated());
    assert_eq!(log.stale_runs(), 2);
    assert_eq!(log.checks().len(), 1);
}

#[test]
fn summary_names_checks_and_outcomes() {
    let log = log_of(&[
        bash_event("cargo test", Some(0)),
        edit_event("a"),
        bash_event("cargo test", Some(0)),
        bash_event("cargo   clippy -- `echo -D` warnings", Some(1)),
    ]);
    let s = log.summary();
    assert!(s.contains("- `cargo test` (test): exit 0, passed"), "{s}");
    assert!(
        s.contains("- `cargo clippy -- 'echo -D' warnings` (lint): exit 1, FAILED"),
        "{s}"
    );
    assert!(s.contains("not counted): 1"), "{s}");
    assert!(s.contains("Successful check: no"), "{s}");
    let empty = EvidenceLog::new().summary();
    assert!(empty.contains("No verification check ran"));
    assert!(empty.contains("Successful check: no"));
}

#[test]
fn events_from_bash_results() {
    let e = ToolEvent::from_result(
        "bash",
        json!({"command": "cargo test"}),
        true,
        "boom\n\nCommand exited with code 101",
        vec![],
    );
    assert_eq!(e.exit_code, Some(101));
    assert!(!e.succeeded());
    let e = ToolEvent::from_result("bash", json!({"command": "x"}), false, "ok", vec![]);
    assert_eq!(e.exit_code, Some(0));
    assert!(e.succeeded());
    let e = ToolEvent::from_result(
        "bash",
        json!({"command": "x"}),
        true,
        "Command timed out after 5 seconds",
        vec![],
    );
    assert!(e.timed_out && e.exit_code.is_none());
    let e = ToolEvent::from_result("read", json!({"path": "a"}), false, "text", vec![]);
    assert_eq!(e.exit_code, None);
    assert_eq!(e.command(), None);
    assert_eq!(e.edited_path(), None);
    let long = "é".repeat(5000);
    let e = ToolEvent::from_result("bash", json!({}), false, &long, vec![]);
    assert!(e.output_tail.len() <= 2000);
    assert_eq!(e.command(), None);
}
