//! `cadre acp` against a hostile editor, model or repository: what it must refuse, and that
//! it still ends when the editor stops cooperating.

use std::path::Path;

use serde_json::{Value, json};

use crate::acp::{Raw, error_code, initialize};
use crate::harness::Fixture;

/// `session/new` in `cwd`; the new session's id.
fn new_session(raw: &mut Raw, id: i64, cwd: &Path) -> String {
    raw.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "session/new",
                "params": {"cwd": cwd, "mcpServers": []}})
        .to_string(),
    );
    let lines = raw.until_response(id);
    lines.last().unwrap()["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session: {lines:#?}"))
        .to_string()
}

/// `session/load` of `session` in `cwd`; its answer.
fn load(raw: &mut Raw, id: i64, session: &str, cwd: &Path) -> Value {
    raw.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "session/load",
                "params": {"sessionId": session, "cwd": cwd, "mcpServers": []}})
        .to_string(),
    );
    raw.until_response(id).pop().unwrap()
}

fn message(answer: &Value) -> &str {
    answer["error"]["message"].as_str().unwrap_or("")
}

#[test]
fn session_load_takes_only_the_whole_id_of_this_directorys_sessions() {
    let fixture = Fixture::new();
    // A repository's files whose names pass for session ids.
    let empty = fixture.project.join("victim");
    std::fs::write(&empty, "").unwrap();
    std::fs::write(fixture.project.join("LICENSE"), "MIT\n").unwrap();
    let other = fixture.project.parent().unwrap().join("other-project");
    std::fs::create_dir_all(&other).unwrap();

    let mut raw = Raw::start(&fixture);
    initialize(&mut raw, json!({}));
    let session = new_session(&mut raw, 2, &fixture.project);

    for (id, name) in [(3, "victim"), (4, "LICENSE")] {
        let answer = load(&mut raw, id, name, &fixture.project);
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert!(
            message(&answer).contains("no session with the id"),
            "{answer}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&empty).unwrap(),
        "",
        "a load never writes a repository's file"
    );
    assert_eq!(
        std::fs::read_to_string(fixture.project.join("LICENSE")).unwrap(),
        "MIT\n"
    );

    // A prefix is not the id.
    let answer = load(&mut raw, 5, &session[..8], &fixture.project);
    assert!(
        message(&answer).contains("no session with the id"),
        "{answer}"
    );
    // The session itself is open, so it is refused as open (not as missing).
    let answer = load(&mut raw, 7, &session, &fixture.project);
    assert!(message(&answer).contains("already open"), "{answer}");
    assert_eq!(error_code(&[answer]), -32602);
    raw.finish();

    // In a new connection the whole id loads.
    let mut raw = Raw::start(&fixture);
    initialize(&mut raw, json!({}));
    // Another directory's load does not reach this directory's sessions.
    let answer = load(&mut raw, 2, &session, &other);
    assert!(
        message(&answer).contains("no session with the id"),
        "{answer}"
    );
    let answer = load(&mut raw, 3, &session, &fixture.project);
    assert!(answer["result"].is_object(), "{answer}");
    raw.finish();
    assert_eq!(
        fixture.session_files().len(),
        1,
        "{:?}",
        fixture.session_files()
    );
}
