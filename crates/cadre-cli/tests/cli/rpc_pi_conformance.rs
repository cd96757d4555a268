//! `cadre --mode rpc` against `pi --mode rpc` (Pi 0.73.1): the same commands on the same script,
//! every response and event compared by shape (keys and JSON types, recursively) and in order.
//! Intended differences are listed in [`ALLOW`] with their reasons (docs/pi-compat.md).

use cadre_testkit::{FakeServer, Match, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, Wire};
use crate::pi_conformance::{ALLOW as JSON_ALLOW, pi_agent_dir};
use crate::pi_shapes::{Allow, Rule as Cmp, assert_same_shape, pi_binary};
use crate::rpc::RpcClient;

/// Differences on top of `--mode json`'s that are meant.
const ALLOW: &[Allow] = &[
    Allow {
        event: "response",
        path: "code",
        rule: Cmp::Ignore,
        reason: "cadre adds a stable error code next to Pi's `error` text (docs/rpc.md), for clients to branch on",
    },
    Allow {
        event: "response",
        path: "id",
        rule: Cmp::Ignore,
        reason: "cadre echoes the id of an unknown command too, so a client waiting on it is answered; Pi drops it",
    },
    Allow {
        event: "response",
        path: "data.model.headers",
        rule: Cmp::Ignore,
        reason: "Pi puts a model's configured request headers in its Model object; cadre never shows header values (they may carry credentials)",
    },
    Allow {
        event: "response",
        path: "data.models[].headers",
        rule: Cmp::Ignore,
        reason: "as data.model.headers",
    },
    Allow {
        event: "response",
        path: "data.model.compat",
        rule: Cmp::Ignore,
        reason: "Pi's resolved OpenAI-compatibility switches are internal to its client",
    },
    Allow {
        event: "response",
        path: "data.models[].compat",
        rule: Cmp::Ignore,
        reason: "as data.model.compat",
    },
    Allow {
        event: "response",
        path: "data.contextUsage",
        rule: Cmp::Opaque,
        reason: "tokens and percent are null in Pi until its own estimate exists; cadre gives the last usage",
    },
    Allow {
        event: "response",
        path: "data.messages",
        rule: Cmp::Subset,
        reason: "the same messages; the list is compared element by element by the json conformance tests",
    },
];

fn pi_rpc(pi: &std::path::Path, fixture: &Fixture) -> RpcClient {
    let dir = pi_agent_dir(fixture);
    // Compaction keeps almost nothing verbatim, so a short conversation has something to
    // summarise (cadre's side: `keep_little`).
    let settings = json!({"retry": {"baseDelayMs": 10, "provider": {"maxRetries": 0}},
                          "compaction": {"keepRecentTokens": 1}});
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
    let mut cmd = std::process::Command::new(pi);
    cmd.args(["--mode", "rpc", "--model", Wire::Anthropic.model()])
        .current_dir(&fixture.project)
        .env_clear()
        .env("HOME", &fixture.user_home)
        .env("PI_CODING_AGENT_DIR", dir)
        .env("PI_OFFLINE", "1")
        .env("PI_TELEMETRY", "0");
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    RpcClient::spawn(cmd)
}

fn keep_little(fixture: &Fixture) {
    std::fs::write(
        fixture.home.join("settings.json"),
        json!({"compaction": {"keepRecentTokens": 1}}).to_string(),
    )
    .unwrap();
}

fn script(server: &FakeServer) {
    server.script(
        Rule::new(Match::SystemContains(
            "context summarization assistant".into(),
        ))
        .reply(Reply::text("## Goal\nSay hello.")),
    );
    server.script(Rule::new(Match::last_user("HELLO")).reply(Reply::text("Hi there.")));
    server.script(Rule::always().reply(Reply::text("Something else.")));
}

/// The commands of one conversation and every line they produced, in order, with the
/// session-dependent values that differ between runs left as they are.
fn conversation(mut rpc: RpcClient) -> Vec<Value> {
    let state = rpc.call("s0", json!({"type": "get_state"}));
    let first_file = state["data"]["sessionFile"].clone();
    rpc.call("p1", json!({"type": "prompt", "message": "HELLO"}));
    rpc.wait_event("agent_end");
    rpc.call("m", json!({"type": "get_messages"}));
    rpc.call("l", json!({"type": "get_last_assistant_text"}));
    rpc.call("st", json!({"type": "get_session_stats"}));
    let points = rpc.call("fm", json!({"type": "get_fork_messages"}));
    let entry = points["data"]["messages"][0]["entryId"].clone();
    rpc.call(
        "n",
        json!({"type": "set_session_name", "name": "conformance"}),
    );
    rpc.call(
        "sm",
        json!({"type": "set_steering_mode", "mode": "one-at-a-time"}),
    );
    rpc.call("fu", json!({"type": "set_follow_up_mode", "mode": "all"}));
    rpc.call("av", json!({"type": "get_available_models"}));
    rpc.call(
        "mo",
        json!({"type": "set_model", "provider": "fake", "modelId": "m1"}),
    );
    rpc.call("th", json!({"type": "set_thinking_level", "level": "off"}));
    rpc.call("s1", json!({"type": "get_state"}));
    rpc.call("gc", json!({"type": "get_commands"}));
    rpc.call("sh", json!({"type": "bash", "command": "echo from-bash"}));
    rpc.call("sha", json!({"type": "abort_bash"}));
    rpc.call(
        "co",
        json!({"type": "compact", "customInstructions": "keep it short"}),
    );
    rpc.call(
        "ac",
        json!({"type": "set_auto_compaction", "enabled": false}),
    );
    rpc.call("ct", json!({"type": "cycle_thinking_level"}));
    rpc.call("cm", json!({"type": "cycle_model"}));
    rpc.call("ar", json!({"type": "set_auto_retry", "enabled": false}));
    rpc.call("ab", json!({"type": "abort_retry"}));
    rpc.call(
        "x",
        json!({"type": "export_html", "outputPath": "export.html"}),
    );
    rpc.call("cl", json!({"type": "clone"}));
    rpc.call("fk", json!({"type": "fork", "entryId": entry}));
    rpc.call("nw", json!({"type": "new_session"}));
    rpc.call(
        "sw",
        json!({"type": "switch_session", "sessionPath": first_file}),
    );
    rpc.call("s2", json!({"type": "get_state"}));
    rpc.call("a", json!({"type": "abort"}));
    // Pi answers an unknown command without its id; cadre echoes it (see ALLOW).
    rpc.send(json!({"id": "u", "type": "no_such_command"}));
    rpc.wait_for("the unknown command's error", |v| {
        v["command"] == "no_such_command"
    });
    rpc.call(
        "e",
        json!({"type": "set_model", "provider": "no", "modelId": "pe"}),
    );
    let lines = rpc.seen.clone();
    rpc.finish();
    lines
}

#[test]
fn rpc_responses_and_events_have_pis_shapes() {
    let Some(pi) = pi_binary() else {
        return;
    };
    let pi_lines = {
        let f = Fixture::new();
        script(&f.server);
        conversation(pi_rpc(&pi, &f))
    };
    let cadre_lines = {
        let f = Fixture::new();
        script(&f.server);
        keep_little(&f);
        conversation(RpcClient::start(&f, &[]))
    };
    let allow: Vec<Allow> = JSON_ALLOW.iter().chain(ALLOW).copied().collect();
    assert_same_shape(&pi_lines, &cadre_lines, &allow);
}
