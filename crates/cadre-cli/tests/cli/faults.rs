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

/// A model that does not stop talking: 64 MiB of text, far past the 16 MiB one message may
/// hold.
const FLOOD: usize = 64 * 1024 * 1024;

/// Events before the flood, so it lands inside the reply's open text block.
fn flood_after(wire: Wire) -> usize {
    match wire {
        Wire::OpenAi => 1,
        Wire::Anthropic => 3,
    }
}

/// The highest peak resident size (`VmHWM`, KiB) the process `pid` reached while it ran,
/// sampled until it is gone.
fn sample_peak_kib(pid: u32) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut peak = 0;
        while let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            // A process that exited but was not reaped yet has no memory lines.
            let Some(kib) = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            else {
                break;
            };
            peak = peak.max(kib);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        peak
    })
}

#[test]
fn a_reply_that_never_stops_ends_the_run_at_the_message_limit_with_bounded_memory() {
    for wire in Wire::BOTH {
        let fixture = Fixture::new();
        fixture
            .server
            .script(
                Rule::new(Match::first_user("ROUTE-FAULT")).reply(Reply::text(PARTIAL).fault(
                    Fault::TextFloodAfter {
                        events: flood_after(wire),
                        bytes: FLOOD,
                    },
                )),
            );
        let cmd = fixture.command(&["-p", "--model", wire.model(), PROMPT]);
        let running = Running::spawn(cmd, None);
        let peak = sample_peak_kib(running.pid());
        let out = running.wait(HANG_GUARD);
        let peak_mib = peak.join().unwrap() / 1024;
        let line = out.assert_one_line_error();
        assert!(
            line.contains("the model's message exceeded 16 MiB"),
            "{wire:?}: {line}"
        );
        assert_eq!(
            fixture.server.requests().len(),
            1,
            "{wire:?}: a retry would stream the flood again"
        );
        let session = fixture.only_session();
        let size = std::fs::metadata(&session).unwrap().len();
        assert!(size < 1024 * 1024, "{wire:?}: session file of {size} bytes");
        let entries = assert_valid_session(&session);
        let last = &entries.last().unwrap()["message"];
        assert_eq!(last["stopReason"], "error", "{wire:?}");
        assert!(
            last["errorMessage"]
                .as_str()
                .unwrap()
                .contains("exceeded 16 MiB"),
            "{wire:?}: {last}"
        );
        assert_eq!(last["content"], serde_json::json!([]), "{wire:?}");
        // The limit held in the decoder and in the agent's partial message (with their
        // strings' spare capacity) over what a run takes anyway: about 90 MiB. Without the
        // limit the whole flood is held several times over (above 600 MiB).
        assert!(peak_mib < 200, "{wire:?}: peak RSS {peak_mib} MiB");
    }
}

/// A child whose model floods fails as `provider_error` with the limit's message, once, and
/// what it leaves (record, session) is small; the parent gets the failure and answers.
#[test]
fn a_child_whose_reply_never_stops_fails_as_a_provider_error_and_leaves_small_files() {
    let fixture = Fixture::new();
    let s = &fixture.server;
    s.script(
        Rule::new(Match::first_user("[child]")).reply(Reply::text(PARTIAL).fault(
            Fault::TextFloodAfter {
                events: flood_after(Wire::Anthropic),
                bytes: FLOOD,
            },
        )),
    );
    s.script(Rule::new(Match::AssistantTurns(0)).reply(Reply::tool_call(
        "call_flood",
        "Agent",
        serde_json::json!({"subagent_type": "Explore", "description": "Flooded",
                   "prompt": "[child] Say something."}),
    )));
    s.script(Rule::always().reply(Reply::text("The child failed.")));
    let out = fixture.run_print(Wire::Anthropic, &[PROMPT]);
    out.assert_success();
    assert_eq!(out.stdout.trim_end(), "The child failed.");
    let child_requests = s
        .requests()
        .iter()
        .filter(|r| r.first_user_text().is_some_and(|t| t.contains("[child]")))
        .count();
    assert_eq!(child_requests, 1, "not retried");

    let records = crate::orchestration::task_records(&fixture);
    assert_eq!(records.len(), 1, "{records:#?}");
    let record = &records[0];
    assert_eq!(record["status"], "failed", "{record:#}");
    assert_eq!(record["termination"], "provider_error", "{record:#}");
    let error = record["error"].as_str().unwrap();
    assert!(
        error.contains("the model's message exceeded 16 MiB"),
        "{error}"
    );
    assert!(
        record.to_string().len() < 64 * 1024,
        "the record stays small"
    );
    let session = std::path::PathBuf::from(record["sessionFile"].as_str().unwrap());
    let size = std::fs::metadata(&session).unwrap().len();
    assert!(size < 1024 * 1024, "child session file of {size} bytes");
    // The parent was told, with the reason.
    let result = crate::harness::tool_result_text(&fixture.last_request());
    assert!(result.contains("exceeded 16 MiB"), "{result}");
}
