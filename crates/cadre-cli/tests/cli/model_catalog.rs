//! Models as the binary sees them: `--list-models SEARCH`, entries with an `api` cadre has no
//! client for (refused before a session exists, the others still usable), and the thinking form
//! each Claude generation gets on the wire.

use cadre_testkit::{Fault, Match, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, Wire, assert_valid_session};

/// The fixture's providers plus Claude ids on the fake Anthropic endpoint and entries whose
/// `api` cadre does not speak (a whole provider, and one model of a usable provider).
fn models(fixture: &Fixture) -> Value {
    let mut models = fixture.models_json();
    let providers = models["providers"].as_object_mut().unwrap();
    providers.insert(
        "claude".into(),
        json!({
            "baseUrl": fixture.server.anthropic_base_url(),
            "api": "anthropic-messages",
            "apiKey": "test-key",
            "models": [
                {"id": "claude-opus-4-7", "reasoning": true, "maxTokens": 128000},
                {"id": "claude-sonnet-4-6", "reasoning": true, "maxTokens": 64000},
                {"id": "claude-sonnet-4-5", "reasoning": true, "maxTokens": 64000},
                {"id": "corp-opus", "reasoning": true, "maxTokens": 64000},
                {"id": "corp-adaptive", "reasoning": true, "maxTokens": 64000,
                 "compat": {"thinkingFormat": "anthropic-adaptive"},
                 "thinkingLevelMap": {"xhigh": "max"}}
            ]
        }),
    );
    providers.insert(
        "gemini".into(),
        json!({
            "baseUrl": "https://generativelanguage.example/v1beta",
            "api": "google-generative-ai",
            "apiKey": "test-key",
            "models": [{"id": "gemini-pro"}]
        }),
    );
    providers["fakeoai"]["models"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "on-bedrock", "api": "bedrock-converse-stream"}));
    models
}

fn fixture() -> Fixture {
    let fixture = Fixture::new();
    fixture.write_models(&models(&fixture));
    fixture
}

fn listed(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn list_models_search_filters_by_provider_id_or_name() {
    let fixture = fixture();
    let out = fixture.run(&["--list-models", "OPUS"]);
    out.assert_success();
    let names = listed(&out.stdout);
    assert!(
        names.contains(&"claude/claude-opus-4-7".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"anthropic/claude-opus-4-7".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"openrouter/anthropic/claude-opus-4.7".to_string()),
        "{names:?}"
    );
    assert!(names.iter().all(|n| n.contains("opus")), "{names:?}");
    assert_eq!(
        out.stdout.lines().next().unwrap().split_whitespace().next(),
        Some("MODEL")
    );

    // Several words must all match; the provider counts.
    let out = fixture.run(&["--list-models", "openrouter gpt-5.5"]);
    out.assert_success();
    assert_eq!(
        listed(&out.stdout),
        ["openrouter/openai/gpt-5.5", "openrouter/openai/gpt-5.5-pro"]
    );

    // The `=` form; a provider name matches all its models.
    let out = fixture.run(&["--list-models=fakeoai"]);
    out.assert_success();
    assert_eq!(listed(&out.stdout), ["fakeoai/m1", "fakeoai/on-bedrock"]);

    // No match: Pi's line, exit 0.
    let out = fixture.run(&["--list-models", "no-such-model"]);
    out.assert_success();
    assert_eq!(out.stdout, "No models matching \"no-such-model\"\n");

    // Without a search everything is listed.
    let out = fixture.run(&["--list-models"]);
    out.assert_success();
    assert!(listed(&out.stdout).len() > 80, "{}", out.stdout);
}

#[test]
fn an_entry_cadre_cannot_serve_is_listed_as_such_and_refused_before_a_session_exists() {
    let fixture = fixture();
    let out = fixture.run(&["--list-models", "gemini"]);
    out.assert_success();
    let row = out.stdout.lines().nth(1).unwrap();
    assert!(row.starts_with("gemini/gemini-pro "), "{row}");
    assert!(
        row.contains("unsupported: api `google-generative-ai`"),
        "{row}"
    );

    for model in ["gemini/gemini-pro", "fakeoai/on-bedrock"] {
        for mode in [&["-p"][..], &["--mode", "json"]] {
            let mut args = mode.to_vec();
            args.extend(["--model", model, "hello"]);
            let out = fixture.run(&args);
            let line = out.assert_one_line_error();
            assert!(line.contains(model), "{line}");
            assert!(line.contains("is not supported"), "{line}");
            for api in [
                "openai-completions",
                "anthropic-messages",
                "openai-responses",
            ] {
                assert!(line.contains(api), "{line}");
            }
            assert!(fixture.session_files().is_empty(), "{model} {mode:?}");
        }
    }
    assert!(fixture.server.requests().is_empty());

    // The rest of the file stays usable, the provider with the unservable model included.
    fixture
        .server
        .script(Rule::new(Match::Always).reply(Reply::text("still here")));
    for wire in Wire::BOTH {
        let out = fixture.run_print(wire, &["hello"]);
        out.assert_success();
        assert_eq!(out.stdout, "still here\n");
    }
}

/// Run `claude/<id>` at `level` and return the request body the server got and stderr.
fn run_claude(fixture: &Fixture, id: &str, level: &str) -> (Value, String) {
    let model = format!("claude/{id}");
    let out = fixture.run(&["-p", "--model", &model, "--thinking", level, "think"]);
    out.assert_success();
    (fixture.last_request().body, out.stderr)
}

#[test]
fn each_claude_generation_gets_its_thinking_form_on_the_wire() {
    let fixture = fixture();
    fixture
        .server
        .script(Rule::new(Match::Always).reply(Reply::text("ok")));

    let adaptive = json!({"type": "adaptive", "display": "summarized"});
    let (body, stderr) = run_claude(&fixture, "claude-opus-4-7", "xhigh");
    assert_eq!(body["thinking"], adaptive);
    assert_eq!(body["output_config"], json!({"effort": "xhigh"}));
    assert!(!stderr.contains("note: thinking"), "{stderr}");

    // Sonnet 4.6 has no xhigh effort: clamped, and the reason is said.
    let (body, stderr) = run_claude(&fixture, "claude-sonnet-4-6", "xhigh");
    assert_eq!(body["thinking"], adaptive);
    assert_eq!(body["output_config"], json!({"effort": "high"}));
    assert!(stderr.contains("note: thinking xhigh → high"), "{stderr}");
    assert!(stderr.contains("low, medium, high, max"), "{stderr}");
    let (body, _) = run_claude(&fixture, "claude-sonnet-4-6", "max");
    assert_eq!(body["output_config"], json!({"effort": "max"}));

    // Off: no thinking field at all for an adaptive model.
    let (body, _) = run_claude(&fixture, "claude-opus-4-7", "off");
    assert!(body.get("thinking").is_none(), "{body}");
    assert!(body.get("output_config").is_none(), "{body}");

    // 4.5 and earlier, and ids the table does not know: a token budget.
    for id in ["claude-sonnet-4-5", "corp-opus"] {
        let (body, _) = run_claude(&fixture, id, "medium");
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 8192}),
            "{id}"
        );
        assert!(body.get("output_config").is_none(), "{id}");
    }

    // models.json overrides: the compat switch picks the form, a string map value the effort.
    let (body, _) = run_claude(&fixture, "corp-adaptive", "xhigh");
    assert_eq!(body["thinking"], adaptive);
    assert_eq!(body["output_config"], json!({"effort": "max"}));

    // The session records the level that took effect.
    let sessions = fixture.session_files();
    let entries = assert_valid_session(&sessions[1]);
    assert!(
        entries
            .iter()
            .any(|e| e["type"] == "thinking_level_change" && e["thinkingLevel"] == "high"),
        "{entries:?}"
    );
}

#[test]
fn a_refused_thinking_form_is_reported_with_what_to_change() {
    let fixture = fixture();
    let body = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "\"thinking.type.enabled\" is not supported for this model. Use \
                    \"thinking.type.adaptive\" and \"output_config.effort\" to control thinking \
                    behavior."}});
    fixture.server.script(
        Rule::new(Match::Always).reply(Reply::failing(Fault::Status {
            status: 400,
            retry_after: None,
            body: Some(body.to_string()),
        })),
    );
    let out = fixture.run(&[
        "-p",
        "--model",
        "claude/corp-opus",
        "--thinking",
        "high",
        "x",
    ]);
    assert!(!out.success(), "{out:#?}");
    assert!(out.stderr.contains("HTTP 400"), "{}", out.stderr);
    assert!(
        out.stderr.contains("cadre sent budget thinking"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("\"compat\": {\"thinkingFormat\": \"anthropic-adaptive\"}"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("claude/corp-opus"), "{}", out.stderr);
    // Not retried: a bad request stays bad.
    assert_eq!(fixture.server.requests().len(), 1);
}

#[test]
fn rpc_set_model_to_an_unservable_entry_says_why() {
    use crate::harness::{HANG_GUARD, Running};
    let fixture = fixture();
    let input = [
        json!({"id": "1", "type": "set_model", "provider": "gemini", "modelId": "gemini-pro"}),
        json!({"id": "2", "type": "set_model", "provider": "no", "modelId": "pe"}),
    ]
    .map(|c| c.to_string())
    .join("\n")
        + "\n";
    let cmd = fixture.command(&["--mode", "rpc", "--no-session", "--model", "fake/m1"]);
    let out = Running::spawn(cmd, Some(&input)).wait(HANG_GUARD);
    let answers: Vec<Value> = out
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &Value| v["type"] == "response")
        .collect();
    let error = |id: &str| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer {id}: {out:#?}"))["error"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let e = error("1");
    assert!(
        e.starts_with("Model not found: gemini/gemini-pro (api `google-generative-ai`"),
        "{e}"
    );
    assert!(e.contains("openai-responses"), "{e}");
    // An unknown model keeps Pi's words as they are.
    assert_eq!(error("2"), "Model not found: no/pe");
    assert!(fixture.server.requests().is_empty());
}
