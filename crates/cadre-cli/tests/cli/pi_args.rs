//! Pi's command line: the flags cadre shares with Pi, hints for the ones it lacks and for Pi's
//! subcommand words, and `--session` with a session id.

use cadre_testkit::{Match, Reply, Rule};

use crate::harness::{Fixture, Wire, tool_result_text};

fn answer_anything(fixture: &Fixture) {
    fixture
        .server
        .script(Rule::always().reply(Reply::text("ok")));
}

/// A session file with only a header, as another run (or Pi) would leave it.
fn write_session(fixture: &Fixture, id: &str) -> std::path::PathBuf {
    let dir = fixture.session_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("2024-12-03T14-00-00-000Z_{id}.jsonl"));
    let header = serde_json::json!({"type": "session", "version": 3, "id": id,
        "timestamp": "2024-12-03T14:00:00.000Z", "cwd": fixture.project});
    std::fs::write(&path, format!("{header}\n")).unwrap();
    path
}

#[test]
fn pi_flags_cadre_lacks_get_a_hint_instead_of_clap_advice() {
    let fixture = Fixture::new();
    for (args, flag) in [
        (vec!["--fork", "s.jsonl", "-p", "x"], "--fork"),
        (vec!["--models", "a,b", "-p", "x"], "--models"),
        (vec!["-e", "ext.ts", "-p", "x"], "-e"),
        (vec!["-nbt", "-p", "x"], "-nbt"),
    ] {
        let out = fixture.run(&args);
        let line = out.assert_one_line_error();
        assert!(
            line.starts_with(&format!(
                "cadre: error: cadre does not support Pi's {flag} ("
            )),
            "{line}"
        );
        assert!(!line.contains("tip:"), "{line}");
        assert_eq!(out.code, Some(2), "{line}");
    }
    // An unknown flag that is not Pi's keeps clap's message.
    let line = fixture
        .run(&["--frobnicate"])
        .assert_one_line_error()
        .to_string();
    assert!(
        line.contains("unexpected argument '--frobnicate'"),
        "{line}"
    );
    assert!(fixture.server.requests().is_empty());
}

#[test]
fn subcommand_words_are_not_sent_as_prompts() {
    let fixture = Fixture::new();
    answer_anything(&fixture);
    for args in [
        vec!["install", "npm:@foo/bar"],
        vec!["-p", "--model", Wire::Anthropic.model(), "list"],
        vec!["update"],
        vec!["login"],
        vec!["plugin", "add", "server"],
    ] {
        let out = fixture.run(&args);
        let line = out.assert_one_line_error();
        assert!(line.contains("is not a command"), "{line}");
        assert!(line.contains("cadre -p -- \""), "{line}");
    }
    assert!(fixture.server.requests().is_empty());
    // Real subcommands are untouched; `cadre mcp` is the MCP server and takes no words.
    fixture.run(&["agents"]).assert_success();
    let out = fixture.run(&["mcp", "add", "server"]);
    let line = out.assert_one_line_error();
    assert!(line.contains("unexpected argument 'add'"), "{line}");
    // After `--` (or as a sentence) the words are a prompt.
    let out = fixture.run_print(Wire::Anthropic, &["--", "install ROUTE-PI"]);
    out.assert_success();
    let out = fixture.run_print(Wire::Anthropic, &["--", "install", "ROUTE-PI"]);
    out.assert_success();
    let out = fixture.run_print(
        Wire::Anthropic,
        &["init", "a", "cargo", "project", "ROUTE-PI"],
    );
    out.assert_success();
}

#[test]
fn version_answers_to_pis_short_flag() {
    let fixture = Fixture::new();
    for flag in ["-v", "-V", "--version"] {
        let out = fixture.run(&[flag]);
        out.assert_success();
        assert!(
            out.stdout.starts_with("cadre ") && out.stdout.contains(env!("CARGO_PKG_VERSION")),
            "{flag}: {}",
            out.stdout
        );
    }
}

#[test]
fn provider_and_model_no_tools_and_no_context_files() {
    let fixture = Fixture::new();
    answer_anything(&fixture);
    std::fs::write(fixture.project.join("AGENTS.md"), "CONTEXT-MARKER-5150\n").unwrap();

    let out = fixture.run(&[
        "-p",
        "--provider",
        "fake",
        "--model",
        "m1",
        "-nt",
        "ROUTE-PI",
    ]);
    out.assert_success();
    assert_eq!(out.stdout, "ok\n");
    let request = fixture.last_request();
    assert!(Wire::Anthropic.tool_names(&request).is_empty());
    assert!(request.system_text().contains("CONTEXT-MARKER-5150"));

    let out = fixture.run_print(
        Wire::OpenAi,
        &["--no-context-files", "--tools", "read", "ROUTE-PI"],
    );
    out.assert_success();
    let request = fixture.last_request();
    assert_eq!(Wire::OpenAi.tool_names(&request), ["read"]);
    let system = request.system_text();
    assert!(!system.contains("CONTEXT-MARKER-5150"), "{system}");

    // Flags that need --model say so before anything runs.
    let line = fixture
        .run(&["-p", "--provider", "fake", "ROUTE-PI"])
        .assert_one_line_error()
        .to_string();
    assert!(line.contains("--provider needs --model"), "{line}");
    let line = fixture
        .run(&["-p", "--api-key", "sk-test-0123456789", "ROUTE-PI"])
        .assert_one_line_error()
        .to_string();
    assert!(line.contains("--api-key needs --model"), "{line}");
    assert!(!line.contains("sk-test-0123456789"), "{line}");
    assert_eq!(fixture.server.requests().len(), 2);
}

#[test]
fn session_ids_resolve_by_prefix_and_never_create_junk() {
    let fixture = Fixture::new();
    write_session(&fixture, "0193aaaa-0000-7000-8000-000000000001");
    write_session(&fixture, "0193aabb-0000-7000-8000-000000000002");
    let before = fixture.session_files();

    // Ambiguous: both candidates named, nothing run.
    let out = fixture.run_print(Wire::Anthropic, &["--session", "0193aa", "ROUTE-PI"]);
    let line = out.assert_one_line_error();
    assert!(line.contains("is ambiguous"), "{line}");
    assert!(
        line.contains("0193aaaa-0000") && line.contains("0193aabb-0000"),
        "{line}"
    );

    // Unknown: an error, and no file named after it anywhere.
    let out = fixture.run_print(Wire::Anthropic, &["--session", "ffff1234", "ROUTE-PI"]);
    let line = out.assert_one_line_error();
    assert!(
        line.contains("no session found matching 'ffff1234'"),
        "{line}"
    );
    assert!(!fixture.project.join("ffff1234").exists());
    assert_eq!(fixture.session_files(), before);
    assert!(fixture.server.requests().is_empty());

    // A unique prefix continues that file.
    answer_anything(&fixture);
    let out = fixture.run_print(Wire::Anthropic, &["--session", "0193aabb", "ROUTE-PI"]);
    out.assert_success();
    assert_eq!(fixture.session_files(), before, "no new file");
    let text = std::fs::read_to_string(&before[1]).unwrap();
    assert!(text.contains("ROUTE-PI"), "{text}");
}

#[test]
fn a_session_of_another_project_is_named_not_continued() {
    let fixture = Fixture::new();
    let elsewhere = fixture.home.join("sessions").join("--elsewhere--");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let header = serde_json::json!({"type": "session", "version": 3, "id": "beef0001",
        "timestamp": "2024-12-03T14:00:00.000Z", "cwd": "/elsewhere"});
    let theirs = elsewhere.join("2024-12-03T14-00-00-000Z_beef0001.jsonl");
    std::fs::write(&theirs, format!("{header}\n")).unwrap();
    let out = fixture.run_print(Wire::Anthropic, &["--session", "beef", "ROUTE-PI"]);
    let line = out.assert_one_line_error();
    assert!(
        line.contains("belongs to another project (/elsewhere)"),
        "{line}"
    );
    assert!(
        line.contains(&theirs.to_string_lossy().into_owned()),
        "{line}"
    );
    assert!(fixture.server.requests().is_empty());
}

#[test]
fn the_api_key_leaves_the_command_line() {
    const KEY: &str = "sk-argv-canary-4d1b7e90";
    let fixture = Fixture::new();
    let turn = |n: usize| Match::first_user("ROUTE-ARGV").and(Match::assistant_turns(n));
    // Every ancestor's command line, as any process of the user could read them.
    let show = "p=$$; while [ \"$p\" -gt 1 ]; do tr '\\0' ' ' < /proc/$p/cmdline; echo; \
                p=$(awk '{print $4}' /proc/$p/stat); done";
    fixture
        .server
        .script(Rule::new(turn(0)).reply(Reply::new().tool_call(
            "call_ps",
            "bash",
            serde_json::json!({ "command": show }),
        )));
    fixture
        .server
        .script(Rule::new(turn(1)).reply(Reply::text("seen")));
    let out = fixture.run_print(Wire::Anthropic, &["--api-key", KEY, "ROUTE-ARGV"]);
    out.assert_success();
    let request = fixture.last_request();
    let seen = request.body["messages"].to_string();
    assert!(!seen.contains(KEY), "{seen}");
    let wiped = format!("--api-key {}", "x".repeat(KEY.len()));
    assert!(
        seen.contains(&wiped),
        "cadre's own command line is among them: {seen}"
    );
    // The key is what the provider was called with, over models.json's `apiKey`.
    let sent = request
        .headers
        .iter()
        .find(|(name, _)| name == "x-api-key")
        .map(|(_, v)| v.as_str());
    assert_eq!(sent, Some(KEY));
}

#[test]
fn the_api_key_file_is_used_as_the_api_key_is() {
    const KEY: &str = "sk-file-canary-7c2e19ab";
    let fixture = Fixture::new();
    let key_file = fixture.user_home.join("provider.key");
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    let turn = |n: usize| Match::first_user("ROUTE-KEYFILE").and(Match::assistant_turns(n));
    // A command that prints the file.
    let show = format!("cat {}", key_file.display());
    fixture
        .server
        .script(Rule::new(turn(0)).reply(Reply::new().tool_call(
            "call_cat",
            "bash",
            serde_json::json!({ "command": show }),
        )));
    fixture
        .server
        .script(Rule::new(turn(1)).reply(Reply::text("seen")));
    let path = key_file.to_string_lossy().into_owned();
    let out = fixture.run_print(Wire::Anthropic, &["--api-key-file", &path, "ROUTE-KEYFILE"]);
    out.assert_success();
    let request = fixture.last_request();
    // The provider was called with the file's key (its line end dropped), over models.json's.
    let sent = request
        .headers
        .iter()
        .find(|(name, _)| name == "x-api-key")
        .map(|(_, v)| v.as_str());
    assert_eq!(sent, Some(KEY));
    // It is a secret of the run like --api-key's: redacted where a tool shows it.
    let seen = tool_result_text(&request);
    assert!(!seen.contains(KEY), "{seen}");
    assert!(seen.contains("[redacted]"), "{seen}");
    let session = std::fs::read_to_string(fixture.only_session()).unwrap();
    assert!(!session.contains(KEY));
    assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));

    // Files that hold no key are refused before anything runs, each with a reason.
    let empty = fixture.user_home.join("empty.key");
    std::fs::write(&empty, "\n").unwrap();
    let fifo = fixture.user_home.join("fifo.key");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let missing = fixture.user_home.join("missing.key");
    let before = fixture.server.requests().len();
    for (file, reason) in [
        (&empty, "is empty"),
        (&fifo, "is not a regular file"),
        (&missing, "cannot read --api-key-file"),
    ] {
        let path = file.to_string_lossy().into_owned();
        let out = fixture.run_print(Wire::Anthropic, &["--api-key-file", &path, "ROUTE-KEYFILE"]);
        let line = out.assert_one_line_error();
        assert!(line.contains(reason), "{line}");
    }
    // Like --api-key, it is for the provider of --model.
    let line = fixture
        .run(&[
            "-p",
            "--api-key-file",
            &key_file.to_string_lossy(),
            "ROUTE-KEYFILE",
        ])
        .assert_one_line_error()
        .to_string();
    assert!(line.contains("--api-key-file needs --model"), "{line}");
    assert!(!line.contains(KEY), "{line}");
    // Not both.
    let out = fixture.run_print(
        Wire::Anthropic,
        &["--api-key", KEY, "--api-key-file", &path, "ROUTE-KEYFILE"],
    );
    assert_eq!(out.code, Some(2), "{out:#?}");
    assert_eq!(fixture.server.requests().len(), before);
}

#[test]
fn pis_settings_and_stored_keys_stand_in_for_missing_ones() {
    let fixture = Fixture::new();
    answer_anything(&fixture);
    // A provider without a key of its own, and Pi's files in Pi's default agent directory.
    let mut models = fixture.models_json();
    models["providers"]["fake"]
        .as_object_mut()
        .unwrap()
        .remove("apiKey");
    fixture.write_models(&models);
    let pi = fixture.user_home.join(".pi/agent");
    std::fs::create_dir_all(&pi).unwrap();
    std::fs::write(
        pi.join("settings.json"),
        r#"{"defaultProvider":"fake","defaultModel":"m1","theme":"dark"}"#,
    )
    .unwrap();
    std::fs::write(
        pi.join("auth.json"),
        r#"{"fake":{"type":"api_key","key":"sk-pi-stored-5e2a"},"x":{"type":"oauth","access":"a"}}"#,
    )
    .unwrap();

    // No --model: Pi's default model, called with Pi's stored key.
    let out = fixture.run(&["-p", "ROUTE-PI"]);
    out.assert_success();
    assert_eq!(out.stdout, "ok\n");
    let request = fixture.last_request();
    assert_eq!(request.header("x-api-key"), Some("sk-pi-stored-5e2a"));

    // doctor says where they came from.
    let out = fixture.run(&["doctor"]);
    assert!(
        out.stdout
            .contains("(Pi's, read-only: cadre has none of its own; only defaultProvider"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("OAuth logins are not supported"),
        "{}",
        out.stdout
    );

    // cadre's own settings file replaces Pi's; a run says once what it skipped in auth.json.
    std::fs::write(fixture.home.join("settings.json"), "{}").unwrap();
    let out = fixture.run(&["-p", "ROUTE-PI"]);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines,
        [
            "cadre: note: auth.json: OAuth logins are not supported, only API keys (x skipped)",
            lines.get(1).copied().unwrap_or_default(),
        ],
        "{}",
        out.stderr
    );
    assert!(
        lines[1].starts_with("cadre: error: no model configured"),
        "{}",
        out.stderr
    );
}
