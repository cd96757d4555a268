//! The scripted model behind `cadre demo`: a fixed conversation about the sample project.
//!
//! Replies are routed by conversation content (the first user message and how many assistant
//! turns came before), so the script is deterministic whatever order requests arrive in.

use cadre_testkit::{FakeServer, Match, Reply, Rule};
use serde_json::json;

/// The user's prompt in the demo.
pub const DEMO_PROMPT: &str = "How are ledger amounts converted to EUR, and would any entry in \
ledger.txt break the conversion?";

/// A marker the script routes on, unique to the demo prompt.
const ROUTE: &str = "converted to EUR";

pub fn install(server: &FakeServer) {
    let turn = |n: usize| Match::FirstUserContains(ROUTE.into()).and(Match::AssistantTurns(n));
    server.script(
        Rule::new(turn(0)).reply(
            Reply::new()
                .text("I'll look at the project layout and search for the conversion code.")
                .tool_call("call_ls", "ls", json!({"path": "."}))
                .tool_call(
                    "call_grep",
                    "grep",
                    json!({"pattern": "to_eur|RATES", "path": "src"}),
                )
                .usage(1850, 96),
        ),
    );
    server.script(
        Rule::new(turn(1)).reply(
            Reply::new()
                .text("The conversion lives in src/convert.py. Reading it and the ledger.")
                .tool_call(
                    "call_read_convert",
                    "read",
                    json!({"path": "src/convert.py"}),
                )
                .tool_call("call_read_ledger", "read", json!({"path": "ledger.txt"}))
                .usage(2210, 88),
        ),
    );
    server.script(
        Rule::new(turn(2)).reply(
            Reply::new()
                .thinking("RATES has EUR, USD and GBP. Count the currencies the ledger uses.")
                .tool_call(
                    "call_bash",
                    "bash",
                    json!({"command": "awk 'NR > 1 { print $4 }' ledger.txt | sort | uniq -c"}),
                )
                .usage(2630, 74),
        ),
    );
    server.script(
        Rule::new(turn(3)).reply(
            Reply::text(
                "Amounts are parsed into integer cents by `parse_line` in src/ledger.py and \
converted by `to_eur` in src/convert.py, which multiplies by a fixed `RATES` table (EUR, USD, GBP) \
and rounds.\n\nYes, one entry breaks it: `2026-01-09 books 25.00 CHF`. CHF is not in `RATES`, so \
`to_eur` raises a bare `KeyError: 'CHF'` and `balances()` fails for the whole ledger. The TODO in \
src/convert.py already notes this. Either add a CHF rate or raise a clear \"unknown currency\" error \
naming the line.",
            )
            .usage(2870, 131),
        ),
    );
}
