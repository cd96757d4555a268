//! `cadre fake-server`: the scripted model as a standalone process, so benchmarks can measure a
//! `cadre` run without counting the server's own work.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use cadre_testkit::{FakeServer, Match, Reply, Rule};
use serde_json::json;

use crate::args::FakeServerArgs;

pub async fn run(args: FakeServerArgs) -> Result<ExitCode> {
    let server = FakeServer::start()
        .await
        .context("cannot start the fake server")?;
    match args.scenario.as_str() {
        "read-once" => {
            server.script(
                Rule::new(Match::AssistantTurns(0)).reply(Reply::new().tool_call(
                    "call_read",
                    "read",
                    json!({"path": "README.md"}),
                )),
            );
            server.script(Rule::new(Match::AssistantTurns(1)).reply(Reply::text(
                "README.md says hello from the benchmark project.",
            )));
        }
        "echo" => server.script(Rule::new(Match::Always).reply(Reply::text("ok"))),
        "delegate" => script_delegate(&server),
        other if other.starts_with("fanout-") => {
            let n: usize = other["fanout-".len()..]
                .parse()
                .map_err(|_| anyhow::anyhow!("fanout-N needs a number, not {other:?}"))?;
            script_fanout(&server, n);
        }
        other if other.starts_with("live-") => {
            let n: usize = other["live-".len()..]
                .parse()
                .map_err(|_| anyhow::anyhow!("live-N needs a number, not {other:?}"))?;
            script_live(&server, n);
        }
        other => {
            bail!("unknown scenario {other:?} (use read-once, echo, delegate, fanout-N or live-N)")
        }
    }
    let port = server.addr().port();
    if let Some(path) = &args.port_file {
        cadre_core::config::atomic_write(path, port.to_string().as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    errln!(
        "fake server: openai {} · anthropic {} · Ctrl-C to stop",
        server.openai_base_url(),
        server.anthropic_base_url()
    );
    // Serve until interrupted; requests are not kept, so a long benchmark does not grow memory.
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => server.clear_requests(),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A child's conversation starts with this marker, so routing never confuses it with the parent.
const CHILD_MARK: &str = "[bench child]";

/// A child's request (its conversation starts with [`CHILD_MARK`]).
fn is_child() -> Match {
    Match::first_user(CHILD_MARK)
}

/// A child's request after `turns` model turns.
fn child(turns: usize) -> Match {
    is_child().and(Match::AssistantTurns(turns))
}

/// The parent's request after `turns` model turns.
fn parent(turns: usize) -> Match {
    (!is_child()).and(Match::AssistantTurns(turns))
}

/// One Explore child that reads README.md, then the parent answers.
fn script_delegate(server: &FakeServer) {
    server.script(Rule::new(parent(0)).reply(Reply::new().tool_call(
        "call_agent",
        "Agent",
        json!({"subagent_type": "Explore", "description": "Read the readme",
               "prompt": format!("{CHILD_MARK} Read README.md and report what it says.")}),
    )));
    server.script(Rule::new(parent(1)).reply(Reply::text("The child read the README.")));
    script_child(server);
}

/// The parent launches `n` children (in `Agent` calls of up to 8 tasks each, all in its first
/// turn); each child makes two model turns and one `read`.
fn script_fanout(server: &FakeServer, n: usize) {
    server.script(Rule::new(parent(0)).reply(launch_reply(n)));
    server.script(Rule::new(parent(1)).reply(Reply::text(format!("{n} children reported."))));
    script_child(server);
}

/// Turns each `live-N` child makes before its final answer.
const LIVE_TURNS: usize = 20;
/// How long the model "thinks" before each child turn: the children stay live for about
/// `LIVE_TURNS` seconds, each sending one turn event a second.
const LIVE_LATENCY: Duration = Duration::from_secs(1);

/// For the interactive mode's live-panel benchmark: the parent launches `n` children as
/// `fanout-N` does (in the interactive mode they run in the background); each child makes
/// `LIVE_TURNS` slow turns with one `read` each, then answers. The parent answers its later
/// turns (the launch's result, the children's completion notices) with short text.
fn script_live(server: &FakeServer, n: usize) {
    server.script(Rule::new(parent(0)).reply(launch_reply(n)));
    server.script(Rule::new(parent(1)).reply(Reply::text(format!("{n} children launched."))));
    // The first matching rule answers: the last child turn before the catch-all for the others.
    server.script(
        Rule::new(child(LIVE_TURNS))
            .reply(Reply::text("README.md says hello.").latency(LIVE_LATENCY)),
    );
    server.script(
        Rule::new(is_child()).reply(
            Reply::new()
                .tool_call("call_child_read", "read", json!({"path": "README.md"}))
                .latency(LIVE_LATENCY),
        ),
    );
    server.script(Rule::new(!is_child()).reply(Reply::text("Noted.")));
}

/// One parent turn that launches `n` Explore children in `Agent` calls of up to 8 tasks each.
fn launch_reply(n: usize) -> Reply {
    let mut reply = Reply::new();
    let mut launched = 0;
    let mut call = 0;
    while launched < n {
        let batch = (n - launched).min(8);
        let tasks: Vec<serde_json::Value> = (0..batch)
            .map(|i| {
                json!({"subagent_type": "Explore", "description": format!("Child {}", launched + i),
                       "prompt": format!("{CHILD_MARK} #{} Read README.md and report.", launched + i)})
            })
            .collect();
        reply = reply.tool_call(format!("call_fan_{call}"), "Agent", json!({"tasks": tasks}));
        launched += batch;
        call += 1;
    }
    reply
}

fn script_child(server: &FakeServer) {
    server.script(Rule::new(child(0)).reply(Reply::new().tool_call(
        "call_child_read",
        "read",
        json!({"path": "README.md"}),
    )));
    server.script(Rule::new(child(1)).reply(Reply::text("README.md says hello.")));
}
