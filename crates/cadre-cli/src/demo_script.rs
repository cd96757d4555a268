//! The scripted model behind `cadre demo`: a fixed delegation about the sample project.
//!
//! The parent fans out two `Explore` children in one `tasks` call, starts a background audit,
//! continues one finished child with `SendMessage`, and answers when the background task's
//! notification arrives. Replies are routed by conversation content — each child's prompt starts
//! with a marker, and turns are counted per conversation — so the script is deterministic however
//! the children interleave.

use cadre_testkit::{FakeServer, Match, Reply, Rule};
use serde_json::json;

/// The user's prompt in the demo.
pub const DEMO_PROMPT: &str = "How are ledger amounts converted to EUR, would any entry in \
ledger.txt break the conversion, and do the tests cover it?";

const CONVERSION: &str = "[demo: conversion]";
const CURRENCIES: &str = "[demo: currencies]";
const TESTS: &str = "[demo: tests]";
const FOLLOW_UP: &str = "[demo: follow-up]";
/// Words only the background audit's result contains: once they are in the parent's
/// conversation, its notification has arrived.
const AUDIT_FINDING: &str = "Nothing tests an unknown currency";

/// Turn `n` of the conversation whose first user message contains `marker`.
fn turn(marker: &str, n: usize) -> Match {
    Match::first_user(marker).and(Match::AssistantTurns(n))
}

/// Turn `n` of the parent (the conversation that is none of the children's).
fn parent(n: usize) -> Match {
    let child = Match::first_user(CONVERSION)
        .or(Match::first_user(CURRENCIES))
        .or(Match::first_user(TESTS));
    (!child).and(Match::AssistantTurns(n))
}

pub fn install(server: &FakeServer) {
    install_parent(server);
    install_children(server);
}

fn install_parent(server: &FakeServer) {
    // Whenever the background task's notification is in the parent's conversation, the parent
    // gives its final answer (first matching rule wins).
    server.script(
        Rule::new(parent(3).or(parent(4)).and(Match::any_text(AUDIT_FINDING))).reply(
            Reply::text(
                "Amounts are parsed into integer cents by `parse_line` (src/ledger.py) and converted \
by `to_eur` (src/convert.py), which multiplies by a fixed `RATES` table with EUR, USD and GBP.\n\n\
One entry breaks it: `2026-01-09 books 25.00 CHF`. CHF has no rate, so `to_eur` raises a bare \
`KeyError: 'CHF'` and `balances()` fails for the whole ledger.\n\n\
The tests do not cover it: tests/test_report.py checks only EUR and USD. Add a CHF rate or raise \
a clear \"unknown currency\" error, and add a test with an unknown currency.",
            )
            .usage(4100, 160),
        ),
    );
    server.script(
        Rule::new(parent(0)).reply(
            Reply::new()
                .text("Two independent questions: I'll explore both in parallel.")
                .tool_call(
                    "call_fanout",
                    "Agent",
                    json!({"tasks": [
                        {"subagent_type": "Explore", "name": "conversion",
                         "description": "Trace EUR conversion",
                         "prompt": format!("{CONVERSION} Find how ledger amounts are converted to EUR. Name the functions and files.")},
                        {"subagent_type": "research", "name": "currencies",
                         "description": "List ledger currencies",
                         "prompt": format!("{CURRENCIES} List the currencies used in ledger.txt and say which have a rate in src/convert.py.")}
                    ]}),
                )
                .usage(2100, 140),
        ),
    );
    server.script(
        Rule::new(parent(1)).reply(
            Reply::new()
                .text("CHF has no rate. While I check which entry, an audit of the tests can run in the background.")
                .tool_call(
                    "call_audit",
                    "Agent",
                    json!({"subagent_type": "Explore", "name": "test-audit",
                           "description": "Audit conversion tests", "run_in_background": true,
                           "prompt": format!("{TESTS} Do the tests cover currency conversion, including unknown currencies?")}),
                )
                .usage(2900, 110),
        ),
    );
    server.script(
        Rule::new(parent(2)).reply(
            Reply::new()
                .tool_call(
                    "call_follow_up",
                    "SendMessage",
                    json!({"to": "currencies",
                           "message": format!("{FOLLOW_UP} Which ledger entry uses the currency without a rate? Quote the line.")}),
                )
                .usage(3200, 60),
        ),
    );
    server
        .script(Rule::new(parent(3)).reply(
            Reply::text("Waiting for the background test audit to report.").usage(3500, 20),
        ));
}

fn install_children(server: &FakeServer) {
    server.script(
        Rule::new(turn(CONVERSION, 0)).reply(
            Reply::new()
                .tool_call(
                    "c_grep",
                    "grep",
                    json!({"pattern": "to_eur|RATES", "path": "src"}),
                )
                .usage(900, 40),
        ),
    );
    server.script(
        Rule::new(turn(CONVERSION, 1)).reply(
            Reply::new()
                .tool_call("c_read", "read", json!({"path": "src/convert.py"}))
                .usage(1200, 30),
        ),
    );
    server.script(
        Rule::new(turn(CONVERSION, 2)).reply(
            Reply::text(
                "`parse_line` in src/ledger.py turns amounts into integer cents; `to_eur` in \
src/convert.py multiplies by `RATES[currency]` (EUR 1.0, USD 0.92, GBP 1.17) and rounds. An \
unknown currency raises KeyError (see the TODO in convert.py).",
            )
            .usage(1500, 70),
        ),
    );
    server.script(
        Rule::new(turn(CURRENCIES, 0)).reply(
            Reply::new()
                .tool_call(
                    "u_bash",
                    "bash",
                    json!({"command": "awk 'NR > 1 { print $4 }' ledger.txt | sort | uniq -c"}),
                )
                .usage(900, 40),
        ),
    );
    server.script(
        Rule::new(turn(CURRENCIES, 1)).reply(
            Reply::text("ledger.txt uses EUR (2), USD (1) and CHF (1). RATES has EUR, USD and GBP: CHF has no rate.")
                .usage(1100, 40),
        ),
    );
    // The continuation from SendMessage: the child's third turn, in the same session.
    server.script(
        Rule::new(turn(CURRENCIES, 2).and(Match::last_user(FOLLOW_UP))).reply(
            Reply::new()
                .tool_call(
                    "u_grep",
                    "grep",
                    json!({"pattern": "CHF", "path": "ledger.txt"}),
                )
                .usage(1300, 30),
        ),
    );
    server.script(
        Rule::new(turn(CURRENCIES, 3)).reply(
            Reply::text("The entry is `2026-01-09   books     25.00  CHF` (ledger.txt, line 5).")
                .usage(1400, 30),
        ),
    );
    server.script(
        Rule::new(turn(TESTS, 0)).reply(
            Reply::new()
                .tool_call("t_find", "find", json!({"pattern": "tests/*.py"}))
                .usage(900, 30),
        ),
    );
    server.script(
        Rule::new(turn(TESTS, 1)).reply(
            Reply::new()
                .tool_call("t_read", "read", json!({"path": "tests/test_report.py"}))
                .usage(1000, 30),
        ),
    );
    server.script(
        Rule::new(turn(TESTS, 2)).reply(
            Reply::text(format!(
                "One test, tests/test_report.py::test_balances_convert_to_eur, covers EUR and \
USD. {AUDIT_FINDING}."
            ))
            .usage(1200, 40),
        ),
    );
}
