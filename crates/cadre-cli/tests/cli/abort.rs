//! SIGINT mid-run: the process exits promptly, the session history stays valid, and no child
//! process is left behind.

use std::path::Path;
use std::time::Duration;

use cadre_testkit::{Fault, Match, Reply, Rule};
use serde_json::json;

use crate::harness::{
    Fixture, HANG_GUARD, Running, Wire, assert_every_tool_call_answered, assert_valid_session,
    messages, wait_until,
};

/// Shorter than the 300 s sleep and the 60 s retry wait, so an abort that waited for either fails
/// the test, and as generous as any other hang guard, so a loaded machine does not.
const PROMPT_EXIT: Duration = HANG_GUARD;

/// Whether `pid` is gone (or only a zombie waiting to be reaped).
fn process_gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

fn spawn_print(fixture: &Fixture, wire: Wire, prompt: &str) -> Running {
    Running::spawn(
        fixture.command(&["-p", "--model", wire.model(), prompt]),
        None,
    )
}

#[test]
fn sigint_during_bash_kills_the_command_and_keeps_history_valid() {
    abort_during_bash("INT");
}

#[test]
fn sigterm_during_bash_aborts_like_sigint() {
    abort_during_bash("TERM");
}

fn abort_during_bash(signal: &str) {
    for wire in Wire::BOTH {
        let fixture = Fixture::new();
        // The shell records its pid, then becomes the sleep (exec), so the pid is the sleep's.
        let command = "echo $$ > sleep.pid && touch started && exec sleep 300";
        fixture.server.script(
            Rule::new(Match::first_user("ROUTE-ABORT").and(Match::assistant_turns(0))).reply(
                Reply::new().text("Running the long command.").tool_call(
                    "call_sleep",
                    "bash",
                    json!({"command": command}),
                ),
            ),
        );
        let running = spawn_print(&fixture, wire, "ROUTE-ABORT: run it");
        let started = fixture.project.join("started");
        wait_until("the bash command to start", || started.exists());
        let pid = std::fs::read_to_string(fixture.project.join("sleep.pid"))
            .unwrap()
            .trim()
            .to_string();
        assert!(!process_gone(&pid), "{wire:?}: sleep is running");

        running.signal(signal);
        let out = running.wait(PROMPT_EXIT);
        assert!(
            out.code.is_some_and(|c| c != 0),
            "{wire:?} {signal}: an aborted run exits non-zero on its own: {out:#?}"
        );
        assert!(!out.stderr.contains("panicked"), "{out:#?}");
        assert!(
            out.stdout.is_empty(),
            "{wire:?}: no answer printed: {out:#?}"
        );
        assert!(
            out.stderr.to_lowercase().contains("abort"),
            "{wire:?}: says why: {out:#?}"
        );
        wait_until("the sleep to be killed", || process_gone(&pid));

        let entries = assert_valid_session(&fixture.only_session());
        let msgs = messages(&entries);
        assert_every_tool_call_answered(&msgs);
        let result = msgs
            .iter()
            .find(|m| m["role"] == "toolResult" && m["toolCallId"] == "call_sleep")
            .unwrap_or_else(|| panic!("{wire:?}: no result for the bash call: {msgs:#?}"));
        assert_eq!(result["toolName"], "bash");
        assert_eq!(
            fixture.server.requests().len(),
            1,
            "{wire:?}: no turn after abort"
        );
    }
}

#[test]
fn sigint_while_the_stream_is_silent_exits_promptly() {
    for wire in Wire::BOTH {
        let fixture = Fixture::new();
        fixture.server.script(
            Rule::new(Match::first_user("ROUTE-SILENT")).reply(
                Reply::text("Starting an answer that will never finish")
                    .fault(Fault::SilentAfter { events: 3 }),
            ),
        );
        let running = spawn_print(&fixture, wire, "ROUTE-SILENT: talk");
        wait_until("the request", || !fixture.server.requests().is_empty());
        // Let the first events arrive so the abort lands while the stream is open but silent.
        std::thread::sleep(Duration::from_millis(200));

        running.signal("INT");
        let out = running.wait(PROMPT_EXIT);
        assert!(
            out.code.is_some_and(|c| c != 0),
            "{wire:?}: an aborted run exits non-zero on its own: {out:#?}"
        );
        assert!(!out.stderr.contains("panicked"), "{out:#?}");
        assert!(out.stdout.is_empty(), "{wire:?}: {out:#?}");
        assert_eq!(fixture.server.requests().len(), 1, "{wire:?}: not retried");
        let session = fixture.only_session();
        let entries = assert_valid_session(&session);
        assert_has_user_prompt(&session, &entries);
    }
}

fn assert_has_user_prompt(session: &Path, entries: &[serde_json::Value]) {
    let msgs = messages(entries);
    assert!(
        msgs.first().is_some_and(|m| m["role"] == "user"),
        "{}: the prompt is saved",
        session.display()
    );
}

#[test]
fn sigint_in_json_mode_closes_every_event() {
    for wire in Wire::BOTH {
        let fixture = Fixture::new();
        fixture
            .server
            .script(
                Rule::new(Match::first_user("ROUTE-ABORT-JSON")).reply(Reply::tool_call(
                    "call_sleep",
                    "bash",
                    json!({"command": "touch started && exec sleep 300"}),
                )),
            );
        let running = Running::spawn(
            fixture.command(&[
                "-p",
                "--mode",
                "json",
                "--model",
                wire.model(),
                "ROUTE-ABORT-JSON: go",
            ]),
            None,
        );
        let started = fixture.project.join("started");
        wait_until("the bash command to start", || started.exists());
        running.signal("INT");
        let out = running.wait(PROMPT_EXIT);
        assert!(out.code.is_some_and(|c| c != 0), "{wire:?}: {out:#?}");
        let events = crate::json_mode::parse_json_run(&out.stdout);
        let end = events
            .iter()
            .find(|e| e["type"] == "tool_execution_end")
            .unwrap_or_else(|| panic!("{wire:?}: the bash execution ends"));
        assert_eq!(end["toolCallId"], "call_sleep");
        assert_eq!(end["isError"], true, "{wire:?}: {end}");
        let turn_end = events.iter().find(|e| e["type"] == "turn_end").unwrap();
        assert_eq!(turn_end["toolResults"].as_array().unwrap().len(), 1);
    }
}

#[test]
fn sigint_during_a_retry_wait_exits_promptly() {
    let fixture = Fixture::new();
    // The server asks for 60 s (the most a retry waits), longer than the hang guard; the abort
    // must cut the wait short.
    fixture.server.script(
        Rule::new(Match::first_user("ROUTE-WAIT")).reply(Reply::failing(Fault::rate_limited("60"))),
    );
    let running = Running::spawn(
        fixture.command(&[
            "-p",
            "--mode",
            "json",
            "--model",
            Wire::OpenAi.model(),
            "ROUTE-WAIT: hi",
        ]),
        None,
    );
    wait_until("the rate-limited request", || {
        !fixture.server.requests().is_empty()
    });
    // Give the client a moment to read the 429 and start waiting.
    std::thread::sleep(Duration::from_millis(200));
    running.signal("INT");
    let out = running.wait(PROMPT_EXIT);
    assert!(out.code.is_some_and(|c| c != 0), "{out:#?}");
    assert!(!out.stderr.contains("panicked"), "{out:#?}");
    assert_eq!(
        fixture.server.requests().len(),
        1,
        "no retry after the abort"
    );
    // Whether the abort landed before or during the wait, the events are well formed.
    crate::json_mode::parse_json_run(&out.stdout);
    assert_valid_session(&fixture.only_session());
}
