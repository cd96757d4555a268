//! `cadre demo`: a real agent run against the built-in scripted model.
//!
//! Everything but the model is real: the provider client speaks HTTP to a fake server on
//! loopback, the tools read and run things in a temporary copy of a sample project, and the
//! run is saved as a Pi-format session file.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use cadre_core::config::CadreHome;
use cadre_host::{Host, HostContext, HostEvent, HostOptions};
use cadre_protocol::UserContent;
use cadre_testkit::FakeServer;

use crate::args::{DemoArgs, Wire};
use crate::demo_script::{DEMO_PROMPT, install};
use crate::render;

/// The sample project, embedded so the demo works from any directory.
const SAMPLE_PROJECT: &[(&str, &str)] = &[
    (
        "README.md",
        include_str!("../demo/sample-project/README.md"),
    ),
    (
        ".gitignore",
        include_str!("../demo/sample-project/.gitignore"),
    ),
    (
        "ledger.txt",
        include_str!("../demo/sample-project/ledger.txt"),
    ),
    (
        "src/ledger.py",
        include_str!("../demo/sample-project/src/ledger.py"),
    ),
    (
        "src/convert.py",
        include_str!("../demo/sample-project/src/convert.py"),
    ),
    (
        "src/report.py",
        include_str!("../demo/sample-project/src/report.py"),
    ),
    (
        "tests/test_report.py",
        include_str!("../demo/sample-project/tests/test_report.py"),
    ),
];

pub async fn run(args: DemoArgs) -> Result<ExitCode> {
    // Registered first: Ctrl-C's default action would end the process without removing the
    // demo directory.
    let mut signals = cadre_host::Signals::new().ok();
    let server = FakeServer::start()
        .await
        .context("cannot start the scripted model server")?;
    install(&server);

    let dir = tempfile::Builder::new()
        .prefix("cadre-demo-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let project = dir.path().join("ledger");
    write_sample_project(&project)?;
    let home = CadreHome::new(dir.path().join("cadre-home"));

    let (api, base_url, wire_name) = match args.wire {
        Wire::Anthropic => (
            "anthropic-messages",
            server.anthropic_base_url(),
            "Anthropic Messages",
        ),
        Wire::Openai => (
            "openai-completions",
            server.openai_base_url(),
            "OpenAI Chat Completions",
        ),
    };
    // The scripted model is an ordinary provider in the demo's own models.json, so children
    // resolve it through the registry like any real model.
    std::fs::create_dir_all(home.root()).context("cannot create the demo CADRE_HOME")?;
    let models = serde_json::json!({"providers": {"demo": {
        "baseUrl": base_url, "api": api, "apiKey": "demo-key",
        "models": [{"id": "scripted", "name": "scripted demo model", "contextWindow": 200000,
                    "maxTokens": 8192,
                    "cost": {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}}]}}});
    std::fs::write(home.models_json(), models.to_string()).context("cannot write models.json")?;
    let ctx = Arc::new(HostContext::load_in(home, &project, true, None)?);
    let started = Host::start(
        ctx,
        HostOptions {
            model: Some("demo/scripted".into()),
            thinking: Some("off".into()),
            stream_updates: args.json,
            ..HostOptions::default()
        },
    )
    .await
    .context("cannot start the demo session")?;
    let host = started.host;
    let mut rx = started.events;

    if !args.json {
        outln!("cadre demo: a real orchestration run against a scripted model");
        outln!(
            "  model    scripted: a built-in fake server at {base_url} speaking the {wire_name} wire format."
        );
        outln!(
            "           Its replies are fixed in advance; no API key, nothing leaves this machine."
        );
        outln!(
            "  runtime  real: the parent and its subagents are real cadre agents with real tools"
        );
        outln!(
            "           (read, grep, find, ls, bash …) working in {}",
            project.display()
        );
        outln!(
            "           (a fresh copy of a small sample project); task records are written to disk."
        );
        outln!();
        outln!("you: {DEMO_PROMPT}");
    }
    let json = args.json;
    let printer = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            let HostEvent::Agent(event) = event else {
                continue;
            };
            if json {
                render::print_json_line(&event);
            } else if let Some(line) = render::transcript_line(&event) {
                outln!("{line}");
            }
        }
    });
    let interrupted = async {
        match signals.as_mut() {
            Some(signals) => signals.next().await,
            None => std::future::pending().await,
        }
    };
    let settled = async {
        host.prompt(UserContent::Text(DEMO_PROMPT.to_string()), None)?;
        host.settle().await
    };
    let outcome = tokio::select! {
        outcome = settled => outcome,
        Some(signal) = interrupted => {
            host.interrupt();
            let _ = host.shutdown().await;
            let fate = if args.keep {
                format!("kept at {}", dir.keep().display())
            } else {
                drop(dir);
                "removed".to_string()
            };
            errln!(
                "cadre: error: interrupted by {}; the demo was stopped and its directory {fate}",
                cadre_host::signal_name(signal)
            );
            return Ok(ExitCode::from(u8::try_from(128 + signal).unwrap_or(1)));
        }
    };
    let mut usage = cadre_protocol::Usage::default();
    for message in host.messages() {
        if let cadre_protocol::Message::Assistant(a) = message {
            usage.add(&a.usage);
        }
    }
    let tasks = host.tasks();
    let closed = host.shutdown().await;
    drop(host);
    let _ = printer.await;
    let outcome = outcome
        .map_err(|e| anyhow::anyhow!(e))?
        .ok_or_else(|| anyhow::anyhow!("the demo prompt did not run"))?;
    let session_path = closed
        .map_err(|e| anyhow::anyhow!(e))?
        .context("the demo session has no file")?;

    let answered = server.check_tool_calls_answered();
    let requests = server.requests().len();
    if !json {
        outln!();
        match &outcome.final_message {
            Some(message) => outln!("answer:\n{}\n", message.text().trim_end()),
            None => outln!("(no answer)"),
        }
        print_tasks(&tasks);
        outln!(
            "{requests} model requests · every tool call answered: {} · parent {} tokens in, {} out",
            if answered.is_ok() { "yes" } else { "NO" },
            usage.input,
            usage.output
        );
    }
    if args.keep {
        let kept = dir.keep();
        if json {
            // stdout is the event stream; where the directory is still has to be said.
            errln!("cadre: note: demo directory kept: {}", kept.display());
        } else {
            outln!("session  {} (Pi session format v3)", session_path.display());
            outln!("kept     {}", kept.display());
            outln!(
                "         try: CADRE_HOME={} cadre tasks --all",
                kept.join("cadre-home").display()
            );
        }
    } else if !json {
        outln!(
            "The runs were saved as Pi session files with task records; the demo directory is \
             removed on exit (pass --keep to look around)."
        );
    }
    if let Some(error) = &outcome.error {
        anyhow::bail!("the demo run failed: {error}");
    }
    if let Err(e) = answered {
        anyhow::bail!("a tool call went unanswered: {e}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The task records of this run, as `cadre tasks` would show them.
fn print_tasks(tasks: &cadre_host::SessionTasks) {
    let mut records = tasks.records();
    records.sort_by(|a, b| a.created_at.cmp(&b.created_at));
    outln!(
        "tasks ({} records in {}):",
        records.len(),
        tasks.store_dir().display()
    );
    for r in &records {
        let name = r.name.as_deref().unwrap_or("-");
        let mode = if r.background {
            "background"
        } else {
            "foreground"
        };
        outln!(
            "  {:<11} {:<8} {:<10} {:<10} {} turns, {} tool calls · {}",
            name,
            r.agent,
            r.status.as_str(),
            mode,
            r.usage.turns,
            r.usage.tool_calls_executed,
            render::clip(&r.preview, 60)
        );
    }
    outln!();
}

fn write_sample_project(root: &Path) -> Result<()> {
    for (rel, content) in SAMPLE_PROJECT {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, content)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
