//! Settings through the binary: the global default model, project settings only when trusted,
//! and malformed files named in one line.

use cadre_testkit::{Match, Reply, Rule, WireApi};
use serde_json::json;

use crate::harness::Fixture;

fn answer_anything(fixture: &Fixture) {
    fixture
        .server
        .script(Rule::new(Match::first_user("ROUTE-SETTINGS")).reply(Reply::text("ok")));
}

fn write_json(path: &std::path::Path, value: serde_json::Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, value.to_string()).unwrap();
}

#[test]
fn default_model_comes_from_settings_and_trusted_project_settings() {
    let fixture = Fixture::new();
    answer_anything(&fixture);
    write_json(
        &fixture.home.join("settings.json"),
        json!({"defaultProvider": "fake", "defaultModel": "m1"}),
    );
    write_json(
        &fixture.project.join(".cadre/settings.json"),
        json!({"defaultProvider": "fakeoai", "defaultModel": "m1"}),
    );

    // Untrusted: the project file contributes nothing; the global default (Anthropic) is used.
    let out = fixture.run(&["-p", "ROUTE-SETTINGS"]);
    out.assert_success();
    assert_eq!(out.stdout, "ok\n");
    assert_eq!(fixture.last_request().api, WireApi::Anthropic);

    // Trusted for this run: the project's default (OpenAI format) wins.
    let out = fixture.run(&["-p", "--trust", "ROUTE-SETTINGS"]);
    out.assert_success();
    assert_eq!(fixture.last_request().api, WireApi::OpenAi);

    // --model beats both.
    let out = fixture.run(&["-p", "--trust", "--model", "fake/m1", "ROUTE-SETTINGS"]);
    out.assert_success();
    assert_eq!(fixture.last_request().api, WireApi::Anthropic);
}

#[test]
fn malformed_settings_are_named_in_one_line() {
    let fixture = Fixture::new();
    let path = fixture.home.join("settings.json");
    std::fs::write(&path, "{ \"defaultModel\": ").unwrap();
    let out = fixture.run(&["-p", "--model", "fake/m1", "hi"]);
    let line = out.assert_one_line_error();
    assert!(
        line.contains(&path.to_string_lossy().into_owned()),
        "{line}"
    );
    assert!(fixture.server.requests().is_empty());
}

#[test]
fn an_untrusted_project_file_is_not_even_parsed() {
    let fixture = Fixture::new();
    answer_anything(&fixture);
    let project_settings = fixture.project.join(".cadre/settings.json");
    std::fs::create_dir_all(project_settings.parent().unwrap()).unwrap();
    std::fs::write(&project_settings, "not json at all").unwrap();
    let out = fixture.run(&["-p", "--model", "fake/m1", "ROUTE-SETTINGS"]);
    out.assert_success();
    // Trusted, the broken file is reported.
    let out = fixture.run(&["-p", "--trust", "--model", "fake/m1", "ROUTE-SETTINGS"]);
    let line = out.assert_one_line_error();
    assert!(line.contains(".cadre/settings.json"), "{line}");
}

#[test]
fn pi_models_json_is_used_when_cadre_home_has_none() {
    let fixture = Fixture::new();
    answer_anything(&fixture);
    let models = fixture.models_json();
    std::fs::remove_file(fixture.models_path()).unwrap();
    write_json(
        &fixture.user_home.join(".pi/agent/models.json"),
        models.clone(),
    );

    let out = fixture.run(&["--list-models"]);
    out.assert_success();
    assert!(
        out.stdout.lines().any(|l| l.starts_with("fake/m1 ")),
        "{}",
        out.stdout
    );
    let out = fixture.run(&["-p", "--model", "fakeoai/m1", "ROUTE-SETTINGS"]);
    out.assert_success();
    assert_eq!(out.stdout, "ok\n");

    // PI_CODING_AGENT_DIR points elsewhere: that one is read instead of ~/.pi/agent.
    let pi_dir = fixture.user_home.join("pi-elsewhere");
    let mut only_anthropic = models;
    only_anthropic["providers"]
        .as_object_mut()
        .unwrap()
        .remove("fakeoai");
    write_json(&pi_dir.join("models.json"), only_anthropic);
    let mut cmd = fixture.command(&["--list-models"]);
    cmd.env("PI_CODING_AGENT_DIR", &pi_dir);
    let out = crate::harness::Running::spawn(cmd, None).wait(crate::harness::HANG_GUARD);
    out.assert_success();
    assert!(out.stdout.lines().any(|l| l.starts_with("fake/m1 ")));
    assert!(!out.stdout.lines().any(|l| l.starts_with("fakeoai/m1 ")));
    assert!(
        !pi_dir.join("sessions").exists() && !fixture.user_home.join(".pi/agent/sessions").exists(),
        "Pi's directory is only read"
    );
}
