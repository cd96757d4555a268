//! Provider faults through the binary: each ends in a retry and the answer, or in one clear
//! error line and a non-zero exit — never a hang, a panic or an empty "success".

use cadre_testkit::{Fault, Match, Reply, Rule};

use crate::harness::{Fixture, HANG_GUARD, Output, Running, Wire, assert_valid_session};
use crate::json_mode::parse_json_run;

const PROMPT: &str = "ROUTE-FAULT: say something";
const ANSWER: &str = "Recovered: the answer arrived after the fault.";
/// Long enough to stream as several events, so faults "after N events" land mid-message.
const PARTIAL: &str = "This reply starts streaming normally, goes on for a while in several \
pieces, and is then interrupted before it could finish properly.";

/// The first request fails with `first`, every later one answers.
fn script_fault_then_answer(fixture: &Fixture, first: Reply) {
    fixture.server.script(
        Rule::new(Match::first_user("ROUTE-FAULT"))
            .reply(first)
            .reply(Reply::text(ANSWER)),
    );
}

fn run(fixture: &Fixture, wire: Wire, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut all = vec!["-p", "--model", wire.model()];
    all.extend_from_slice(args);
    let mut cmd = fixture.command(&all);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Running::spawn(cmd, None).wait(HANG_GUARD)
}

/// A fault on the first attempt, then the answer on stdout and exit 0.
fn assert_recovers(first: Reply, env: &[(&str, &str)]) {
    for wire in Wire::BOTH {
        let fixture = Fixture::new();
        script_fault_then_answer(&fixture, first.clone());
        let out = run(&fixture, wire, env, &[PROMPT]);
        out.assert_success();
        assert_eq!(out.stdout, format!("{ANSWER}\n"), "{wire:?}");
        assert_eq!(fixture.server.requests().len(), 2, "{wire:?}: one retry");
        let session = assert_valid_session(&fixture.only_session());
        let texts: Vec<&str> = session
            .iter()
            .filter(|e| e["type"] == "message")
            .filter_map(|e| e["message"]["content"][0]["text"].as_str())
            .collect();
        assert_eq!(texts.last(), Some(&ANSWER), "{wire:?}: {texts:?}");
        assert!(
            !texts.iter().any(|t| t.contains("interrupted before")),
            "{wire:?}: the broken attempt's text is not kept: {texts:?}"
        );
    }
}

#[test]
fn rate_limit_with_retry_after_then_success_reports_auto_retry() {
    for wire in Wire::BOTH {
        let fixture = Fixture::new();
        script_fault_then_answer(&fixture, Reply::failing(Fault::rate_limited("1")));
        let out = run(&fixture, wire, &[], &["--mode", "json", PROMPT]);
        out.assert_success();
        let events = parse_json_run(&out.stdout);
        let retry = events
            .iter()
            .find(|e| e["type"] == "auto_retry_start")
            .unwrap_or_else(|| panic!("{wire:?}: no auto_retry_start in {}", out.stdout));
        assert_eq!(retry["attempt"], 1, "{wire:?}");
        // The server's retry-after (1 s) governs the wait, not the 10 ms base delay.
        assert_eq!(retry["delayMs"], 1000, "{wire:?}: {retry}");
        assert!(retry["errorMessage"].is_string());
        let end = events
            .iter()
            .position(|e| e["type"] == "auto_retry_end")
            .unwrap_or_else(|| panic!("{wire:?}: no auto_retry_end"));
        let start = events
            .iter()
            .position(|e| e["type"] == "auto_retry_start")
            .unwrap();
        assert!(start < end, "{wire:?}");
        assert_eq!(events[end]["success"], true, "{wire:?}: {}", events[end]);
        let answer = events
            .iter()
            .rev()
            .find(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
            .unwrap();
        assert_eq!(answer["message"]["content"][0]["text"], ANSWER, "{wire:?}");
        assert_eq!(fixture.server.requests().len(), 2);
    }
}

#[test]
fn server_error_500_then_success() {
    assert_recovers(Reply::failing(Fault::status(500)), &[]);
}

#[test]
fn overloaded_503_then_success() {
    assert_recovers(Reply::failing(Fault::status(503)), &[]);
}

#[test]
fn stream_cut_mid_message_then_success() {
    assert_recovers(
        Reply::text(PARTIAL).fault(Fault::CutAfter { events: 4 }),
        &[],
    );
}

#[test]
fn malformed_sse_then_success() {
    assert_recovers(
        Reply::text(PARTIAL).fault(Fault::MalformedAfter { events: 4 }),
        &[],
    );
}

#[test]
fn in_stream_error_event_then_success() {
    assert_recovers(
        Reply::text(PARTIAL).fault(Fault::ErrorEvent { events: 4 }),
        &[],
    );
}

#[test]
fn silent_stream_times_out_then_success() {
    assert_recovers(
        Reply::text(PARTIAL).fault(Fault::SilentAfter { events: 3 }),
        &[("CADRE_IDLE_TIMEOUT_MS", "300")],
    );
}

#[test]
fn stream_never_terminated_fails_clearly() {
    for wire in Wire::BOTH {
        let fixture = Fixture::new();
        fixture.server.script(
            Rule::new(Match::first_user("ROUTE-FAULT"))
                .reply(Reply::text(PARTIAL).fault(Fault::NoTerminal)),
        );
        let out = run(&fixture, wire, &[], &[PROMPT]);
        let line = out.assert_one_line_error();
        assert!(
            line.to_lowercase().contains("terminal") || line.to_lowercase().contains("ended"),
            "{wire:?}: the reason is named: {line}"
        );
        assert!(
            fixture.server.requests().len() > 1,
            "{wire:?}: an unterminated stream is retried"
        );
        let entries = assert_valid_session(&fixture.only_session());
        // The failure is recorded as Pi records it: an assistant message with stopReason error.
        let last = &entries.last().unwrap()["message"];
        assert_eq!(last["stopReason"], "error", "{wire:?}: {last}");
        assert!(
            last["errorMessage"]
                .as_str()
                .unwrap()
                .contains("terminal event"),
            "{wire:?}: {last}"
        );
    }
}

#[test]
fn context_overflow_fails_at_once() {
    for wire in Wire::BOTH {
        let fixture = Fixture::new();
        fixture.server.script(
            Rule::new(Match::first_user("ROUTE-FAULT"))
                .reply(Reply::failing(Fault::ContextOverflow)),
        );
        let out = run(&fixture, wire, &[], &[PROMPT]);
        out.assert_one_line_error();
        assert_eq!(fixture.server.requests().len(), 1, "{wire:?}: not retried");
    }
}

#[test]
fn json_mode_reports_a_final_failure_in_events_and_on_stderr() {
    for wire in Wire::BOTH {
        let fixture = Fixture::new();
        fixture.server.script(
            Rule::new(Match::first_user("ROUTE-FAULT"))
                .reply(Reply::text(PARTIAL).fault(Fault::NoTerminal)),
        );
        let out = run(&fixture, wire, &[], &["--mode", "json", PROMPT]);
        assert!(out.code.is_some_and(|c| c != 0), "{wire:?}: {out:#?}");
        assert!(!out.stderr.contains("panicked"));
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{wire:?}: {out:#?}");
        assert!(lines[0].starts_with("cadre: error: "), "{wire:?}: {out:#?}");

        let events = parse_json_run(&out.stdout);
        // Pi reports a retry that failed for good after the run's end.
        let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
        assert_eq!(
            kinds[kinds.len() - 2..],
            ["agent_end", "auto_retry_end"],
            "{wire:?}"
        );
        let retries = events
            .iter()
            .filter(|e| e["type"] == "auto_retry_start")
            .count();
        assert_eq!(
            retries, 3,
            "{wire:?}: three retries after the first attempt"
        );
        let end = events
            .iter()
            .rev()
            .find(|e| e["type"] == "auto_retry_end")
            .unwrap_or_else(|| panic!("{wire:?}: no auto_retry_end"));
        assert_eq!(end["success"], false, "{wire:?}: {end}");
        assert!(end["finalError"].is_string(), "{wire:?}: {end}");
        let last = events
            .iter()
            .rev()
            .find(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
            .unwrap();
        assert_eq!(last["message"]["stopReason"], "error", "{wire:?}: {last}");
    }
}

/// A retry after part of a reply had streamed must close the abandoned message before the next
/// `message_start`: as in Pi, the failed message ends, then its turn and run, and the retry
/// runs as a new run after `auto_retry_start`.
#[test]
fn json_events_stay_well_formed_across_a_mid_stream_retry() {
    for wire in Wire::BOTH {
        let fixture = Fixture::new();
        script_fault_then_answer(
            &fixture,
            Reply::text(PARTIAL).fault(Fault::CutAfter { events: 4 }),
        );
        let out = run(&fixture, wire, &[], &["--mode", "json", PROMPT]);
        out.assert_success();
        parse_json_run(&out.stdout);
    }
}
