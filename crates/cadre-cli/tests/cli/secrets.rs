//! S5: an API key never reaches session files, task records, task output, notifications, events
//! or the terminal — not through a successful delegation, and not through a provider error that
//! echoes it back.

use cadre_testkit::{Fault, Match, Reply, Rule};
use serde_json::json;

use crate::harness::Fixture;

/// A key no other text could contain.
const CANARY: &str = "sk-cadre-S5-canary-7c1f29";
const CHILD: &str = "[secret child]";

/// Every file under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Checks every file cadre wrote under CADRE_HOME; at least `min_files` must exist.
fn assert_no_canary_in_home(f: &Fixture, min_files: usize) {
    let files = files_under(&f.home);
    let mut checked = 0;
    for path in files {
        // models.json is where the user put the key; everything cadre wrote must be clean.
        if path == f.models_path() {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        checked += 1;
        assert!(
            !String::from_utf8_lossy(&bytes).contains(CANARY),
            "the API key leaked into {}",
            path.display()
        );
    }
    assert!(checked >= min_files, "only {checked} files were written");
}

fn models(f: &Fixture) -> serde_json::Value {
    json!({"providers": {"fake": {
        "baseUrl": f.server.anthropic_base_url(),
        "api": "anthropic-messages",
        "apiKey": CANARY,
        "models": [{"id": "m1"}]
    }}})
}

#[test]
fn a_delegating_run_writes_the_key_nowhere() {
    let f = Fixture::new();
    f.write_models(&models(&f));
    let s = &f.server;
    let child = Match::first_user(CHILD);
    s.script(Rule::new((!child.clone()).and(Match::AssistantTurns(0))).reply(Reply::tool_call(
        "call_agent",
        "Agent",
        json!({"subagent_type": "Explore", "description": "Read notes", "run_in_background": true,
               "prompt": format!("{CHILD} Read notes.txt.")}),
    )));
    s.script(Rule::new(!child.clone()).reply(Reply::text("done")));
    s.script(
        Rule::new(child.clone().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_read",
            "read",
            json!({"path": "notes.txt"}),
        )),
    );
    s.script(Rule::new(child).reply(Reply::text("alpha line")));

    let out = f.run(&["--mode", "json", "--model", "fake/m1", "delegate"]);
    out.assert_success();
    // The key did go to the provider, where it belongs …
    assert!(
        s.requests()
            .iter()
            .all(|r| r.header("x-api-key") == Some(CANARY)),
        "every request authenticates"
    );
    // … and nowhere else.
    assert!(!out.stdout.contains(CANARY), "events on stdout");
    assert!(!out.stderr.contains(CANARY), "stderr");
    // The root and child sessions, task.json and output.md at least.
    assert_no_canary_in_home(&f, 4);
}

#[test]
fn a_provider_error_that_echoes_the_key_does_not_leak_it() {
    let f = Fixture::new();
    f.write_models(&models(&f));
    // A misbehaving proxy that puts the key into its error body.
    f.server.script(Rule::new(Match::Always).reply(Reply::new().fault(Fault::Status {
        status: 401,
        retry_after: None,
        body: Some(format!(
            "{{\"type\":\"error\",\"error\":{{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key {CANARY}\"}}}}"
        )),
    })));
    let out = f.run(&["-p", "--model", "fake/m1", "hello"]);
    assert!(!out.success(), "a 401 fails the run");
    assert!(!out.stdout.contains(CANARY), "stdout: {}", out.stdout);
    assert!(!out.stderr.contains(CANARY), "stderr: {}", out.stderr);
    // The session file records the failed reply; its error text must be redacted too.
    assert_no_canary_in_home(&f, 1);
}

/// A proxy that echoes the key into an answer, and a child that reads a file holding it: the
/// text is kept and shown with the key redacted — on stdout (streamed events included), in
/// the session files, the task record and output, and in what the next request sends.
#[test]
fn a_key_echoed_in_an_answer_or_read_from_a_file_is_redacted() {
    let f = Fixture::new();
    f.write_models(&models(&f));
    std::fs::write(
        f.project.join(".env"),
        format!("ANTHROPIC_API_KEY={CANARY}\n"),
    )
    .unwrap();
    let s = &f.server;
    let child = Match::first_user(CHILD);
    s.script(
        Rule::new((!child.clone()).and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_agent",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Read env",
               "prompt": format!("{CHILD} Read .env.")}),
        )),
    );
    s.script(Rule::new(!child.clone()).reply(Reply::text(format!("the key is {CANARY}"))));
    s.script(
        Rule::new(child.clone().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_read",
            "read",
            json!({"path": ".env"}),
        )),
    );
    s.script(Rule::new(child).reply(Reply::text(format!("found {CANARY} in .env"))));

    for mode in [&["--mode", "json"][..], &["-p"][..]] {
        let mut args = mode.to_vec();
        args.extend(["--model", "fake/m1", "delegate"]);
        let out = f.run(&args);
        out.assert_success();
        assert!(!out.stdout.contains(CANARY), "stdout: {}", out.stdout);
        assert!(!out.stderr.contains(CANARY), "stderr: {}", out.stderr);
        assert!(out.stdout.contains("[redacted]"), "stdout: {}", out.stdout);
    }
    // The model never saw the file's key either: the tool result it got was redacted.
    for r in s.requests() {
        let body = r.body.to_string();
        assert!(
            !body.contains(CANARY),
            "a request carried the key in its body"
        );
    }
    assert_no_canary_in_home(&f, 4);
}
