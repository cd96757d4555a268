//! `cadre acp`: cadre as an Agent Client Protocol agent (SPEC I6).

use std::process::ExitCode;

use crate::args::AcpArgs;

pub async fn run(_args: AcpArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("cadre acp is not built yet")
}
