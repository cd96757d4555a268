//! `cadre tool NAME JSON`: run one built-in tool in the current directory and print its result.

use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use cadre_tools::ToolContext;
use tokio_util::sync::CancellationToken;

use crate::args::ToolArgs;

pub async fn run(args: ToolArgs) -> Result<ExitCode> {
    // The same files are out of reach here as in a session: cadre's key files.
    let home = cadre_core::config::CadreHome::from_env().context("cannot locate CADRE_HOME")?;
    cadre_host::hide_key_files(&home);
    let mut tools = cadre_tools::builtin_tools();
    if args.writer {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let scratch = std::env::temp_dir().join(format!("cadre-tool-{}", std::process::id()));
        let boundary =
            cadre_tools::sandbox::WriterBoundary::for_project(&cwd, Some(scratch), &[], &[]);
        let bash = cadre_tools::BashTool::new()
            .contained()
            .within(boundary)
            .with_reaping()
            .removing_scratch();
        tools.register(std::sync::Arc::new(bash));
    }
    let tool = tools.get(&args.name).ok_or_else(|| {
        anyhow!(
            "unknown tool {:?}; available: {}",
            args.name,
            cadre_tools::BUILTIN_TOOL_NAMES.join(", ")
        )
    })?;
    let json: serde_json::Value =
        serde_json::from_str(&args.args).context("the arguments are not valid JSON")?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let ctx = ToolContext {
        cwd,
        cancel: CancellationToken::new(),
        updates: None,
        artifacts_dir: std::env::temp_dir(),
    };
    let output = tool.execute(json, ctx).await;
    outln!("{}", cadre_protocol::join_text(&output.content));
    Ok(if output.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
