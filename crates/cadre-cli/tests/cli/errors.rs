//! Bad input gets one clear `cadre: error:` line and a non-zero exit, never a panic.

use crate::harness::{Fixture, HANG_GUARD, Running, Wire};

#[test]
fn unknown_model_lists_the_known_ones() {
    let fixture = Fixture::new();
    let out = fixture.run(&["-p", "--model", "nope/x", "hi"]);
    let line = out.assert_one_line_error();
    assert!(line.contains("nope/x"), "{line}");
    assert!(
        line.contains("fake/m1") && line.contains("fakeoai/m1"),
        "{line}"
    );
    assert!(fixture.server.requests().is_empty());
}

#[test]
fn missing_api_key_names_the_variable() {
    let fixture = Fixture::new();
    // The isolated environment has no ANTHROPIC_API_KEY.
    let out = fixture.run(&["-p", "--model", "anthropic/claude-sonnet-4-5", "hi"]);
    let line = out.assert_one_line_error();
    assert!(line.contains("ANTHROPIC_API_KEY"), "{line}");

    // No --model and no key anywhere: say which variables would do.
    let out = fixture.run(&["-p", "hi"]);
    let line = out.assert_one_line_error();
    assert!(
        line.contains("ANTHROPIC_API_KEY") && line.contains("--model"),
        "{line}"
    );
    assert!(
        fixture.session_files().is_empty(),
        "no session for a run that never started"
    );
}

#[test]
fn unknown_tool_name_lists_the_available_ones() {
    let fixture = Fixture::new();
    let out = fixture.run_print(Wire::Anthropic, &["--tools", "read,frobnicate", "hi"]);
    let line = out.assert_one_line_error();
    assert!(line.contains("frobnicate"), "{line}");
    assert!(line.contains("read") && line.contains("grep"), "{line}");
    assert!(fixture.server.requests().is_empty());
}

#[test]
fn bad_thinking_level_lists_the_levels() {
    let fixture = Fixture::new();
    let out = fixture.run_print(Wire::OpenAi, &["--thinking", "extreme", "hi"]);
    let line = out.assert_one_line_error();
    assert!(line.contains("extreme") && line.contains("xhigh"), "{line}");
}

#[test]
fn no_prompt_with_empty_stdin() {
    let fixture = Fixture::new();
    // stdin closed (null).
    let out = fixture.run_print(Wire::Anthropic, &[]);
    let line = out.assert_one_line_error();
    assert!(line.contains("prompt"), "{line}");
    // stdin open but only whitespace.
    let cmd = fixture.command(&["-p", "--model", Wire::Anthropic.model()]);
    let out = Running::spawn(cmd, Some("  \n\n")).wait(HANG_GUARD);
    let line = out.assert_one_line_error();
    assert!(line.contains("prompt"), "{line}");
    assert!(fixture.server.requests().is_empty());
}

#[test]
fn prompt_from_stdin_is_used() {
    use cadre_testkit::{Match, Reply, Rule};
    let fixture = Fixture::new();
    fixture.server.script(
        Rule::new(Match::first_user("from the argument").and(Match::first_user("ROUTE-STDIN")))
            .reply(Reply::text("got both")),
    );
    let cmd = fixture.command(&["-p", "--model", Wire::OpenAi.model(), "from the argument"]);
    let out = Running::spawn(cmd, Some("ROUTE-STDIN piped text\n")).wait(HANG_GUARD);
    out.assert_success();
    assert_eq!(out.stdout, "got both\n");
}

#[test]
fn malformed_models_json_names_the_file() {
    let fixture = Fixture::new();
    std::fs::write(fixture.models_path(), "{ \"providers\": { nope").unwrap();
    let out = fixture.run_print(Wire::Anthropic, &["hi"]);
    let line = out.assert_one_line_error();
    assert!(
        line.contains(&fixture.models_path().to_string_lossy().into_owned()),
        "{line}"
    );
    let out = fixture.run(&["--list-models"]);
    out.assert_one_line_error();
}

#[test]
fn conflicting_session_flags_are_refused() {
    let fixture = Fixture::new();
    for args in [
        ["--no-session", "--continue"],
        ["--no-session", "--session=x.jsonl"],
        ["--continue", "--session=x.jsonl"],
    ] {
        let mut all = vec!["-p", "--model", "fake/m1"];
        all.extend_from_slice(&args);
        all.push("hi");
        let out = fixture.run(&all);
        let line = out.assert_one_line_error();
        assert!(line.contains("cannot be combined"), "{args:?}: {line}");
    }
    assert!(fixture.server.requests().is_empty());
}

#[test]
fn bad_environment_overrides_name_the_variable() {
    let fixture = Fixture::new();
    let mut cmd = fixture.command(&["-p", "--model", "fake/m1", "hi"]);
    cmd.env("CADRE_IDLE_TIMEOUT_MS", "soon");
    let out = Running::spawn(cmd, None).wait(HANG_GUARD);
    let line = out.assert_one_line_error();
    assert!(line.contains("CADRE_IDLE_TIMEOUT_MS"), "{line}");
}

#[test]
fn usage_errors_are_one_line_too() {
    let fixture = Fixture::new();
    for args in [
        &["--mode", "yaml", "hi"][..],
        &["--frobnicate"],
        &["-p", "--model"],
        &["demo", "--wire", "smoke-signals"],
    ] {
        let out = fixture.run(args);
        let line = out.assert_one_line_error();
        assert!(!line.contains("Usage"), "{args:?}: {line}");
        assert_eq!(out.code, Some(2), "{args:?}: usage errors exit 2");
    }
    let line = fixture
        .run(&["--mode", "yaml", "hi"])
        .assert_one_line_error()
        .to_string();
    assert!(
        line.contains("yaml") && line.contains("text, json"),
        "{line}"
    );
}

#[test]
fn a_session_file_that_is_not_one_is_refused_by_name() {
    let fixture = Fixture::new();
    let path = fixture.user_home.join("notes.jsonl");
    std::fs::write(&path, "these are my notes\n").unwrap();
    let arg = path.to_string_lossy().into_owned();
    let out = fixture.run_print(Wire::Anthropic, &["--session", &arg, "hi"]);
    let line = out.assert_one_line_error();
    assert!(
        line.contains(&arg) && line.contains("not a session file"),
        "{line}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "these are my notes\n",
        "the file is left alone"
    );
    assert!(fixture.server.requests().is_empty());
}
