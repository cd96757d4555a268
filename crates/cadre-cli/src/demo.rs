//! `cadre demo`: a real agent run against the built-in scripted model.
//!
//! Everything but the model is real: the provider client speaks HTTP to a fake server on
//! loopback, the tools read and run things in a temporary copy of a sample project, and the
//! run is saved as a Pi-format session file.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use cadre_core::agent::{Agent, AgentConfig};
use cadre_core::session::{SessionWriter, session_dir_for_cwd};
use cadre_llm::{Api, Compat, HttpProvider, Model, ModelCost, Provider, RetryPolicy};
use cadre_protocol::{AgentEvent, ThinkingLevel};
use cadre_testkit::FakeServer;
use tokio::sync::mpsc;

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
    let home = dir.path().join("cadre-home");

    let (api, base_url, wire_name) = match args.wire {
        Wire::Anthropic => (
            Api::AnthropicMessages,
            server.anthropic_base_url(),
            "Anthropic Messages",
        ),
        Wire::Openai => (
            Api::OpenAiCompletions,
            server.openai_base_url(),
            "OpenAI Chat Completions",
        ),
    };
    let model = scripted_model(api, base_url.clone());
    let tools = cadre_tools::builtin_tools();
    let session = SessionWriter::create(&session_dir_for_cwd(&home, &project), &project, None)
        .await
        .context("cannot create the demo session file")?;
    let session_path = session.path().to_path_buf();

    let (tx, mut rx) = mpsc::unbounded_channel::<AgentEvent>();
    let system_prompt =
        cadre_core::prompt::build_system_prompt(&cadre_core::prompt::SystemPromptInput {
            cwd: &project,
            date: &cadre_core::prompt::today(std::time::SystemTime::now()),
            tools: &tools.specs(),
            context_files: &[],
            custom: None,
            append: &[],
        });
    let provider: Arc<dyn Provider> = Arc::new(HttpProvider::new(RetryPolicy::default()));
    let mut agent = Agent::new(
        AgentConfig {
            provider,
            model,
            thinking: ThinkingLevel::Off,
            system_prompt,
            tools,
            cwd: project.clone(),
            artifacts_dir: home.join("artifacts"),
            events: Some(tx),
        },
        Vec::new(),
        Some(session),
    );

    if !args.json {
        outln!("cadre demo: a real agent run against a scripted model");
        outln!(
            "  model    scripted: a built-in fake server at {base_url} speaking the {wire_name} wire format."
        );
        outln!(
            "           Its replies are fixed in advance; no API key, nothing leaves this machine."
        );
        outln!(
            "  tools    real: {} working in {}",
            cadre_tools::BUILTIN_TOOL_NAMES.join(", "),
            project.display()
        );
        outln!("           (a fresh copy of a small sample project)");
        outln!();
        outln!("you: {DEMO_PROMPT}");
    }
    let json = args.json;
    let printer = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            if json {
                render::print_json_line(&event);
            } else if let Some(line) = render::transcript_line(&event) {
                outln!("{line}");
            }
        }
    });
    let outcome = agent.prompt(DEMO_PROMPT).await;
    let usage = agent.usage();
    let closed = agent.close().await;
    let _ = printer.await;
    let outcome = outcome?;
    closed?;

    let answered = server.check_tool_calls_answered();
    let tool_calls: usize = server
        .requests()
        .last()
        .map(|r| r.tool_call_ids().len())
        .unwrap_or(0);
    if !json {
        outln!();
        match &outcome.final_message {
            Some(message) => outln!("answer:\n{}\n", message.text().trim_end()),
            None => outln!("(no answer)"),
        }
        outln!(
            "{} model turns · {tool_calls} tool calls, every one answered: {} · {} tokens in, {} out",
            outcome.turns,
            if answered.is_ok() { "yes" } else { "NO" },
            usage.input,
            usage.output
        );
    }
    if args.keep {
        let kept = dir.keep();
        if !json {
            outln!("session  {} (Pi session format v3)", session_path.display());
            outln!("kept     {}", kept.display());
        }
    } else if !json {
        outln!(
            "The run was saved as a Pi session file; the demo directory is removed on exit \
             (pass --keep to look around)."
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

/// The model entry for the scripted server; prices are illustrative so cost accounting shows.
fn scripted_model(api: Api, base_url: String) -> Model {
    Model {
        provider: "demo".into(),
        id: "scripted".into(),
        name: "scripted demo model".into(),
        api,
        base_url,
        api_key: Some("demo-key".into()),
        headers: BTreeMap::new(),
        reasoning: false,
        thinking_level_map: BTreeMap::new(),
        context_window: 200_000,
        max_tokens: 8_192,
        cost: ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        },
        compat: Compat::default(),
    }
}
