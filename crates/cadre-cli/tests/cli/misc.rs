//! `cadre demo`, `--version`, `--help`, `--list-models`.

use crate::harness::Fixture;

#[test]
fn demo_runs_on_both_wire_formats() {
    let fixture = Fixture::new();
    for wire in ["anthropic", "openai"] {
        let out = fixture.run(&["demo", "--wire", wire]);
        out.assert_success();
        assert!(out.stdout.contains("answer:"), "{wire}: {}", out.stdout);
        assert!(
            out.stdout.contains("KeyError"),
            "{wire}: the final answer is shown"
        );
        assert!(
            out.stdout.contains("every tool call answered: yes"),
            "{wire}: {}",
            out.stdout
        );
        // The orchestration really happened: two parallel Explore children, a background task
        // whose notification reached the parent, and a continued child.
        assert!(
            out.stdout.contains("2 tasks: 2 ok, 0 degraded"),
            "{wire}: {}",
            out.stdout
        );
        assert!(
            out.stdout
                .contains("⇐ task-notification: test-audit completed"),
            "{wire}: {}",
            out.stdout
        );
        assert!(
            out.stdout.contains("tasks (3 records"),
            "{wire}: {}",
            out.stdout
        );
        for line in [
            "conversion  Explore  completed  foreground",
            "currencies  research completed  foreground",
            "test-audit  Explore  completed  background",
        ] {
            assert!(
                out.stdout.contains(line),
                "{wire}: {line:?} in {}",
                out.stdout
            );
        }
        assert!(
            out.stdout
                .contains("currencies  research completed  foreground 4 turns"),
            "{wire}: SendMessage continued the finished task in its own session: {}",
            out.stdout
        );
    }
    // The demo keeps to its own temporary home.
    assert!(fixture.session_files().is_empty());
}

#[test]
fn version_and_help() {
    let fixture = Fixture::new();
    let out = fixture.run(&["--version"]);
    out.assert_success();
    assert_eq!(
        out.stdout.trim(),
        format!("cadre {}", env!("CARGO_PKG_VERSION"))
    );
    let out = fixture.run(&["--help"]);
    out.assert_success();
    for needle in [
        "-p",
        "--mode",
        "--model",
        "--session",
        "CADRE_IDLE_TIMEOUT_MS",
    ] {
        assert!(
            out.stdout.contains(needle),
            "--help lacks {needle}:\n{}",
            out.stdout
        );
    }
}

#[test]
fn list_models_shows_configured_models() {
    let fixture = Fixture::new();
    let out = fixture.run(&["--list-models"]);
    out.assert_success();
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("fake/m1 "))
        .unwrap_or_else(|| panic!("fake/m1 not listed:\n{}", out.stdout));
    assert!(
        line.contains("anthropic-messages") && line.ends_with("yes"),
        "{line}"
    );
    assert!(out.stdout.lines().any(|l| l.starts_with("fakeoai/m1 ")));
    // Built-in providers are listed, without credentials in this environment.
    let builtin = out
        .stdout
        .lines()
        .find(|l| l.starts_with("anthropic/"))
        .unwrap();
    assert!(builtin.ends_with("missing"), "{builtin}");
}

#[test]
fn a_closed_stdout_is_not_a_panic() {
    use crate::harness::{HANG_GUARD, Running, Wire};
    use cadre_testkit::{Match, Reply, Rule};

    let fixture = Fixture::new();
    fixture
        .server
        .script(Rule::new(Match::first_user("ROUTE-PIPE")).reply(Reply::text("answer")));
    let model = Wire::Anthropic.model();
    for args in [
        &["-p", "--model", model, "ROUTE-PIPE"][..],
        &["-p", "--mode", "json", "--model", model, "ROUTE-PIPE"],
        &["--list-models"],
        &["demo"],
        &["--help"],
    ] {
        let out = Running::spawn_with_stdout_closed(fixture.command(args)).wait(HANG_GUARD);
        assert!(!out.stderr.contains("panicked"), "{args:?}: {out:#?}");
        assert!(out.code.is_some_and(|c| c != 101), "{args:?}: {out:#?}");
    }
}
