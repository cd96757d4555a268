//! `cadre fake-server`: the scripted model as a standalone process, so benchmarks can measure a
//! `cadre` run without counting the server's own work.

use std::process::ExitCode;

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
        other => bail!("unknown scenario {other:?} (use read-once or echo)"),
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
