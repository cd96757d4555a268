//! Compacted sessions cross over between cadre and Pi (SPEC R10): a session cadre compacted is
//! continued by Pi, and one Pi compacted is continued by cadre. Either way the next request
//! carries the summary (in Pi's wrapper) and the kept turns, not the summarised ones.
//!
//! Pi is found by [`pi_binary`] (`CADRE_TEST_PI`, else the known paths; Pi 0.73.1 only).
//! Without it the tests skip with a note, except under `CI=true`, where a missing Pi fails
//! them. Pi runs with its own agent directory (`PI_CODING_AGENT_DIR`) and an empty HOME,
//! against the fixture's fake server.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use cadre_testkit::{Match, RecordedRequest, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, HANG_GUARD, Output, Running};
use crate::pi_shapes::pi_binary;

/// Pi's wrapper around a compaction summary when it is sent to the model.
const SUMMARY_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";

/// The model both programs use: the fake server's Anthropic side, with a context window.
const MODEL: &str = "fake/m1";

/// models.json for both programs: `fake/m1` with a 100 000-token window.
fn models(fixture: &Fixture) -> Value {
    json!({"providers": {"fake": {
        "baseUrl": fixture.server.anthropic_base_url(),
        "api": "anthropic-messages",
        "apiKey": "test-key",
        "models": [{"id": "m1", "contextWindow": 100000}]
    }}})
}

/// Pi's agent directory: the same models, no retries inside its HTTP client, and
/// `pi_settings` merged in.
fn pi_agent_dir(fixture: &Fixture, pi_settings: Value) -> PathBuf {
    let dir = fixture.user_home.join("pi-agent");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("models.json"), models(fixture).to_string()).unwrap();
    let mut settings = json!({"retry": {"baseDelayMs": 10, "provider": {"maxRetries": 0}}});
    if let (Some(base), Value::Object(more)) = (settings.as_object_mut(), pi_settings) {
        base.extend(more);
    }
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
    dir
}

fn pi_command(pi: &Path, fixture: &Fixture, agent_dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(pi);
    cmd.args(["--model", MODEL])
        .args(args)
        .current_dir(&fixture.project)
        .env_clear()
        .env("HOME", &fixture.user_home)
        .env("PI_CODING_AGENT_DIR", agent_dir)
        .env("PI_OFFLINE", "1")
        .env("PI_TELEMETRY", "0");
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    cmd
}

fn run_pi(pi: &Path, fixture: &Fixture, agent_dir: &Path, args: &[&str]) -> Output {
    let out = Running::spawn(pi_command(pi, fixture, agent_dir, args), None).wait(HANG_GUARD);
    assert!(out.success(), "pi {args:?}: {out:#?}");
    out
}

/// Pi's RPC `compact` on `session`: the `compaction_end` event it answers with.
fn pi_rpc_compact(pi: &Path, fixture: &Fixture, agent_dir: &Path, session: &Path) -> Value {
    let session = session.to_string_lossy();
    let mut cmd = pi_command(
        pi,
        fixture,
        agent_dir,
        &["--mode", "rpc", "--session", &session],
    );
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn pi --mode rpc");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    writeln!(stdin, "{}", json!({"id": "c1", "type": "compact"})).unwrap();
    stdin.flush().unwrap();
    let deadline = std::time::Instant::now() + HANG_GUARD;
    let end = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(line) = rx.recv_timeout(left) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pi --mode rpc sent no compaction_end within {HANG_GUARD:?}");
        };
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v["type"] == "compaction_end" {
            break v;
        }
    };
    // End of input ends an RPC session.
    drop(stdin);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pi --mode rpc did not exit after its input ended");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(status.success(), "pi --mode rpc exited with {status}");
    let _ = reader.join();
    end
}

fn cadre(fixture: &Fixture, session: &Path, prompt: &str) -> Output {
    let session = session.to_string_lossy();
    let out = fixture.run(&["--model", MODEL, "--session", &session, "-p", prompt]);
    out.assert_success();
    out
}

fn summarizer() -> Match {
    Match::system("context summarization assistant")
}

fn is_summarization(r: &RecordedRequest) -> bool {
    r.system_text().contains("context summarization assistant")
}

/// The request that answered the prompt starting with `tag`.
fn request_for(fixture: &Fixture, tag: &str) -> RecordedRequest {
    fixture
        .server
        .requests()
        .into_iter()
        .rfind(|r| !is_summarization(r) && r.last_user_text().is_some_and(|t| t.starts_with(tag)))
        .unwrap_or_else(|| panic!("no request for {tag}"))
}

fn compaction_entries(session: &Path) -> Vec<Value> {
    std::fs::read_to_string(session)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "compaction")
        .collect()
}

/// The id of the message entry whose user text starts with `tag`.
fn user_entry_id(session: &Path, tag: &str) -> String {
    std::fs::read_to_string(session)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| {
            v["type"] == "message" && v["message"]["role"] == "user" && {
                let c = &v["message"]["content"];
                let text = c
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| c[0]["text"].as_str().map(str::to_string))
                    .unwrap_or_default();
                text.starts_with(tag)
            }
        })
        .and_then(|v| v["id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no user entry {tag}"))
}

fn assert_carries_summary_not_dropped(request: &RecordedRequest, summary: &str, dropped: &str) {
    let first = request.first_user_text().unwrap_or_default();
    assert!(first.starts_with(SUMMARY_PREFIX), "{first:.200}");
    assert!(first.contains(summary), "{first:.300}");
    let all = request.all_text().join("\n");
    assert!(!all.contains(dropped), "the summarised turn was sent again");
}

#[test]
fn pi_continues_a_session_cadre_compacted() {
    let Some(pi) = pi_binary() else { return };
    let fixture = Fixture::new();
    fixture.write_models(&models(&fixture));
    let server = &fixture.server;
    server.script(Rule::new(summarizer()).reply(Reply::text("CADRE SUMMARY of the first turn")));
    // The first answer reports a nearly full window (100 000 - 16 384 is the threshold).
    server.script(
        Rule::new(Match::last_user("FIRST")).reply(Reply::text("first answer").usage(90_000, 10)),
    );
    server.script(Rule::new(Match::last_user("SECOND")).reply(Reply::text("second answer")));
    server.script(Rule::new(Match::last_user("THIRD")).reply(Reply::text("third answer")));

    let session = fixture.project.join("shared.jsonl");
    cadre(
        &fixture,
        &session,
        "FIRST dropped-marker: remember the blue door",
    );
    // Long enough (by Pi's chars / 4) to fill the 20 000 kept tokens on its own, so the cut
    // falls right before it and the first turn is summarised.
    let second = format!("SECOND {}", "the kept turn. ".repeat(5_500));
    cadre(&fixture, &session, &second);

    let entries = compaction_entries(&session);
    assert_eq!(entries.len(), 1, "cadre did not compact");
    assert_eq!(
        entries[0]["firstKeptEntryId"],
        user_entry_id(&session, "SECOND")
    );
    assert!(
        entries[0]["summary"]
            .as_str()
            .unwrap()
            .starts_with("CADRE SUMMARY")
    );
    assert_carries_summary_not_dropped(
        &request_for(&fixture, "SECOND"),
        "CADRE SUMMARY",
        "dropped-marker",
    );

    let agent_dir = pi_agent_dir(&fixture, json!({}));
    let session_arg = session.to_string_lossy().into_owned();
    run_pi(
        &pi,
        &fixture,
        &agent_dir,
        &["--session", &session_arg, "--mode", "json", "-p", "THIRD"],
    );
    let pis = request_for(&fixture, "THIRD");
    assert_carries_summary_not_dropped(&pis, "CADRE SUMMARY", "dropped-marker");
    // The kept turn is there, verbatim.
    assert!(
        pis.all_text()
            .iter()
            .any(|t| t.starts_with("SECOND the kept turn."))
    );
    assert!(pis.all_text().iter().any(|t| t == "second answer"));
}

#[test]
fn cadre_continues_a_session_pi_compacted() {
    let Some(pi) = pi_binary() else { return };
    let fixture = Fixture::new();
    fixture.write_models(&models(&fixture));
    let server = &fixture.server;
    server.script(Rule::new(summarizer()).reply(Reply::text("PI SUMMARY of the first turn")));
    server.script(Rule::new(Match::last_user("ONE")).reply(Reply::text("answer one")));
    server.script(Rule::new(Match::last_user("TWO")).reply(Reply::text("answer two")));
    server.script(Rule::new(Match::last_user("NEXT")).reply(Reply::text("answer next")));
    // Pi keeps about 50 tokens: the second turn, not the first.
    let agent_dir = pi_agent_dir(&fixture, json!({"compaction": {"keepRecentTokens": 50}}));
    let session = fixture.project.join("shared.jsonl");
    let session_arg = session.to_string_lossy().into_owned();
    let one = format!("ONE dropped-marker {}", "x".repeat(400));
    let two = format!("TWO kept {}", "y".repeat(400));
    for prompt in [&one, &two] {
        run_pi(
            &pi,
            &fixture,
            &agent_dir,
            &["--session", &session_arg, "--mode", "json", "-p", prompt],
        );
    }
    let end = pi_rpc_compact(&pi, &fixture, &agent_dir, &session);
    assert_eq!(end["aborted"], false, "{end}");
    assert!(
        end["result"]["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("PI SUMMARY")),
        "{end}"
    );
    let entries = compaction_entries(&session);
    assert_eq!(entries.len(), 1);
    assert_eq!(
        entries[0]["firstKeptEntryId"],
        user_entry_id(&session, "TWO")
    );

    cadre(&fixture, &session, "NEXT");
    let cadres = request_for(&fixture, "NEXT");
    assert_carries_summary_not_dropped(&cadres, "PI SUMMARY", "dropped-marker");
    let texts = cadres.all_text();
    assert!(texts.iter().any(|t| t.starts_with("TWO kept")), "{texts:?}");
    assert!(texts.iter().any(|t| t == "answer two"), "{texts:?}");
    // cadre appended to Pi's file in the same tree: its prompt's parent is Pi's compaction.
    let lines: Vec<Value> = std::fs::read_to_string(&session)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let next = lines
        .iter()
        .find(|v| {
            v["type"] == "message"
                && v["message"]["role"] == "user"
                && v["message"]["content"].to_string().contains("NEXT")
        })
        .unwrap();
    assert_eq!(next["parentId"], entries[0]["id"]);
}
