//! What every root session of a `cadre mcp` process is built from: the host context (home,
//! trust, settings, models) and the root session options, from `ServeArgs`.

use std::sync::Arc;

use anyhow::{Context, Result};
use cadre_host::{HostContext, HostOptions, SessionChoice};

use crate::args::{Mode, RunArgs, ServeArgs};

pub struct Setup {
    pub ctx: Arc<HostContext>,
    pub options: HostOptions,
}

impl Setup {
    /// Check the flags as `-p` checks them, load the context of the current directory (the
    /// project) and describe the root sessions.
    pub fn load(serve: &ServeArgs) -> Result<Setup> {
        let mut args = run_args(serve);
        crate::pi_compat::check_run_args(&args)?;
        args.model = crate::pi_compat::model_name(&args);
        args.provider = None;
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let ctx = crate::run::load_context(&args, &cwd)?;
        let mut options = crate::run::host_options(&args);
        options.session = SessionChoice::New;
        // The client is the parent: a call runs in the foreground unless it asks for the
        // background, and a finished background task is not answered by a run of the model.
        options.background_by_default = false;
        options.stream_updates = false;
        options.client_is_parent = true;
        // The root session is built while the handshake is answered; a model that cannot be
        // used is an error now, before anything is served, as for `-p`.
        ctx.pick_model(options.model.as_deref())?;
        Ok(Setup { ctx, options })
    }
}

/// The run flags `cadre mcp` shares with `-p`, as `-p` would have them.
fn run_args(serve: &ServeArgs) -> RunArgs {
    RunArgs {
        print: false,
        mode: Mode::Text,
        model: serve.model.clone(),
        provider: serve.provider.clone(),
        api_key: serve.api_key.clone(),
        api_key_file: serve.api_key_file.clone(),
        thinking: serve.thinking.clone(),
        tools: None,
        no_tools: false,
        no_context_files: false,
        system_prompt: None,
        append_system_prompt: Vec::new(),
        session: None,
        session_dir: serve.session_dir.clone(),
        export: None,
        continue_latest: false,
        resume: false,
        no_session: false,
        trust: serve.trust,
        plan: serve.plan,
        max_cost_usd: serve.max_cost_usd,
        max_tokens: serve.max_tokens,
        list_models: None,
        messages: Vec::new(),
    }
}
