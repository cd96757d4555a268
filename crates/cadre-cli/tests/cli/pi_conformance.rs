//! `cadre --mode json` against `pi --mode json` (Pi 0.73.1) on the same scripted conversations:
//! every line must have Pi's shape (keys and JSON types, recursively) in Pi's order. Values
//! such as ids, timestamps, token counts and texts may differ. The intended differences are in
//! [`ALLOW`], each with its reason (docs/pi-compat.md has the same list).
//!
//! Each program gets its own fake server with the same script, so stateful scripts (a fault,
//! then an answer) play out the same for both. Pi runs with an agent directory of its own
//! (`PI_CODING_AGENT_DIR`) and an empty HOME, so the real `~/.pi` is never read.

use std::path::{Path, PathBuf};

use cadre_testkit::{FakeServer, Fault, Match, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, HANG_GUARD, Output, Running, Wire};
use crate::pi_shapes::{Allow, Rule as Cmp, assert_same_shape, json_lines, pi_binary};

/// The differences between cadre's and Pi's event streams that are meant.
pub const ALLOW: &[Allow] = &[
    Allow {
        event: "message_update",
        path: "**.content[].index",
        rule: Cmp::Ignore,
        reason: "Pi's Anthropic client keeps the wire index in a block while it streams; not part of Pi's content types",
    },
    Allow {
        event: "message_update",
        path: "**.content[].partialJson",
        rule: Cmp::Ignore,
        reason: "Pi's Anthropic client's buffer of streaming tool arguments; not part of Pi's ToolCall",
    },
    Allow {
        event: "message_update",
        path: "**.content[].partialArgs",
        rule: Cmp::Ignore,
        reason: "Pi's OpenAI client's buffer of streaming tool arguments; not part of Pi's ToolCall",
    },
    Allow {
        event: "message_update",
        path: "**.content[].streamIndex",
        rule: Cmp::Ignore,
        reason: "Pi's OpenAI client's wire index of a streaming tool call; not part of Pi's ToolCall",
    },
    Allow {
        event: "message_update",
        path: "message.content",
        rule: Cmp::Subset,
        reason: "Pi serialises the live message after its client may have read more of the stream, so its copy can be ahead of the event",
    },
    Allow {
        event: "message_update",
        path: "assistantMessageEvent.partial.content",
        rule: Cmp::Subset,
        reason: "as message.content",
    },
    Allow {
        event: "message_start",
        path: "message.content",
        rule: Cmp::Subset,
        reason: "as message_update's message.content",
    },
    Allow {
        event: "*",
        path: "**.arguments",
        rule: Cmp::Opaque,
        reason: "tool arguments are the model's data; Pi also parses them while they stream, cadre when the call ends",
    },
];

/// Prompts and scripted replies of one comparison.
struct Scenario {
    name: &'static str,
    prompts: &'static [&'static str],
    script: fn(&FakeServer, Wire),
}

fn text_answer(server: &FakeServer, _: Wire) {
    server.script(Rule::always().reply(Reply::text("Hello from the model.")));
}

fn tool_then_answer(server: &FakeServer, _: Wire) {
    server.script(Rule::new(Match::AssistantTurns(0)).reply(Reply::tool_call(
        "call_read_1",
        "read",
        json!({"path": "notes.txt"}),
    )));
    server.script(
        Rule::new(Match::AssistantTurns(1)).reply(Reply::text("The notes list three lines.")),
    );
}

fn thinking_then_text(server: &FakeServer, _: Wire) {
    server.script(Rule::always().reply(Reply::thinking("The user wants a greeting.").text("Hi.")));
}

/// Anthropic's overload (529) is retried by both; over OpenAI's wire a 500, as Pi retries a
/// 529 there only when the error text says "overloaded", and OpenAI's does not.
fn overloaded_then_answer(server: &FakeServer, wire: Wire) {
    let status = match wire {
        Wire::Anthropic => 529,
        Wire::OpenAi => 500,
    };
    server.script(
        Rule::always()
            .reply(Reply::failing(Fault::status(status)))
            .reply(Reply::text("Answered after a retry.")),
    );
}

const TEXT: Scenario = Scenario {
    name: "text",
    prompts: &["Say hello."],
    script: text_answer,
};
const TOOL: Scenario = Scenario {
    name: "tool",
    prompts: &["What is in notes.txt?"],
    script: tool_then_answer,
};
const THINKING: Scenario = Scenario {
    name: "thinking",
    prompts: &["Greet me."],
    script: thinking_then_text,
};
const RETRY: Scenario = Scenario {
    name: "retry",
    prompts: &["Say something."],
    script: overloaded_then_answer,
};

/// Pi's agent directory for `fixture`: the fixture's models.json, and retry settings that make
/// Pi's behaviour cadre's: no silent retries inside the HTTP client, short waits.
pub fn pi_agent_dir(fixture: &Fixture) -> PathBuf {
    let dir = fixture.user_home.join("pi-agent");
    std::fs::create_dir_all(&dir).expect("create the Pi agent dir");
    std::fs::write(dir.join("models.json"), fixture.models_json().to_string())
        .expect("write Pi's models.json");
    let settings = json!({"retry": {"baseDelayMs": 10, "provider": {"maxRetries": 0}}});
    std::fs::write(dir.join("settings.json"), settings.to_string())
        .expect("write Pi's settings.json");
    dir
}

/// Runs Pi in the fixture's project with only PATH from our environment.
pub fn run_pi(pi: &Path, fixture: &Fixture, args: &[&str]) -> Output {
    let mut cmd = std::process::Command::new(pi);
    cmd.args(args)
        .current_dir(&fixture.project)
        .env_clear()
        .env("HOME", &fixture.user_home)
        .env("PI_CODING_AGENT_DIR", pi_agent_dir(fixture))
        .env("PI_OFFLINE", "1")
        .env("PI_TELEMETRY", "0");
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    Running::spawn(cmd, None).wait(HANG_GUARD)
}

/// The JSON lines of one program's run of `scenario`, on a fresh fixture.
fn lines_of(scenario: &Scenario, wire: Wire, pi: Option<&Path>) -> Vec<Value> {
    let fixture = Fixture::new();
    (scenario.script)(&fixture.server, wire);
    let mut args = vec!["--mode", "json", "--no-session", "--model", wire.model()];
    args.extend_from_slice(scenario.prompts);
    let out = match pi {
        Some(pi) => run_pi(pi, &fixture, &args),
        None => fixture.run(&args),
    };
    assert!(!out.stderr.contains("panicked"), "{out:#?}");
    let lines = json_lines(&out.stdout);
    dump(
        scenario,
        wire,
        if pi.is_some() { "pi" } else { "cadre" },
        &out.stdout,
    );
    lines
}

/// With `CADRE_PI_DUMP=<dir>`, each run's stdout is kept there for reading.
fn dump(scenario: &Scenario, wire: Wire, who: &str, stdout: &str) {
    if let Some(dir) = std::env::var_os("CADRE_PI_DUMP") {
        let name = format!("{}-{wire:?}-{who}.jsonl", scenario.name);
        let _ = std::fs::write(Path::new(&dir).join(name), stdout);
    }
}

fn conforms(scenario: &Scenario) {
    let Some(pi) = pi_binary() else {
        return;
    };
    // Both wire formats run before any comparison, so a dump has all four streams.
    let runs: Vec<(Wire, Vec<Value>, Vec<Value>)> = Wire::BOTH
        .into_iter()
        .map(|wire| {
            (
                wire,
                lines_of(scenario, wire, Some(&pi)),
                lines_of(scenario, wire, None),
            )
        })
        .collect();
    for (wire, pi_lines, cadre_lines) in runs {
        assert!(
            pi_lines.len() > 2,
            "{wire:?}: Pi produced no events: {pi_lines:?}"
        );
        eprintln!("comparing {} over {wire:?}", scenario.name);
        assert_same_shape(&pi_lines, &cadre_lines, ALLOW);
    }
}

/// The session file of one program's run of `scenario` (header and entries), on a fresh
/// fixture: Pi's in a session directory of its own, cadre's in CADRE_HOME's.
fn session_of(scenario: &Scenario, wire: Wire, pi: Option<&Path>) -> Vec<Value> {
    let fixture = Fixture::new();
    (scenario.script)(&fixture.server, wire);
    let pi_dir = fixture.user_home.join("pi-sessions");
    let pi_dir_arg = pi_dir.to_string_lossy().into_owned();
    let mut args = vec!["--mode", "json", "--model", wire.model()];
    if pi.is_some() {
        args.extend(["--session-dir", pi_dir_arg.as_str()]);
    }
    args.extend_from_slice(scenario.prompts);
    let out = match pi {
        Some(pi) => run_pi(pi, &fixture, &args),
        None => fixture.run(&args),
    };
    assert!(!out.stderr.contains("panicked"), "{out:#?}");
    let files: Vec<PathBuf> = match pi {
        Some(_) => std::fs::read_dir(&pi_dir)
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default(),
        None => fixture.session_files(),
    };
    assert_eq!(files.len(), 1, "one session file: {files:?} {out:#?}");
    let text = std::fs::read_to_string(&files[0]).expect("read the session file");
    let who = if pi.is_some() { "pi" } else { "cadre" };
    dump(scenario, wire, &format!("{who}-session"), &text);
    json_lines(&text)
}

/// Session files: the same entries in the same order, each of Pi's shape.
#[test]
fn a_session_file_has_pis_entries() {
    let Some(pi) = pi_binary() else {
        return;
    };
    for wire in Wire::BOTH {
        let pi_lines = session_of(&TOOL, wire, Some(&pi));
        let cadre_lines = session_of(&TOOL, wire, None);
        eprintln!("comparing the session files over {wire:?}");
        assert_same_shape(&pi_lines, &cadre_lines, ALLOW);
    }
}

#[test]
fn every_allowance_says_why() {
    for allow in ALLOW {
        assert!(!allow.reason.trim().is_empty(), "{allow:?}");
    }
}

#[test]
fn a_text_answer_has_pis_events() {
    conforms(&TEXT);
}

#[test]
fn a_tool_call_and_its_result_have_pis_events() {
    conforms(&TOOL);
}

#[test]
fn thinking_has_pis_events() {
    conforms(&THINKING);
}

#[test]
fn a_retry_after_an_overload_has_pis_events() {
    conforms(&RETRY);
}
