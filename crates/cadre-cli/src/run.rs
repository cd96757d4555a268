//! Print and JSON modes: one prompt, run to completion, output, exit code.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use cadre_core::agent::{Agent, AgentConfig, AgentController, RunOutcome};
use cadre_core::config::{CadreHome, Settings, TrustStore, load_settings, project_root};
use cadre_core::orchestrator::manager::TaskManager;
use cadre_core::roles::ProjectTrust;
use cadre_core::session::{
    SessionWriter, iso_timestamp, latest_session, load_session, session_dir_for_cwd,
};
use cadre_llm::registry::ProcessEnv;
use cadre_llm::{HttpProvider, Model, ModelRegistry, Provider, RetryPolicy, resolve_thinking};
use cadre_protocol::{AgentEvent, Message, SESSION_VERSION, SessionHeader, ThinkingLevel};
use tokio::sync::mpsc;

use crate::args::{Mode, RunArgs};
use crate::orchestrate::{ORCHESTRATION_TOOLS, Orchestration, Setup};
use crate::render;

/// Overrides the delay before the first retry (doubled for each further one).
const RETRY_BASE_VAR: &str = "CADRE_RETRY_BASE_MS";
/// Overrides how long a silent stream is waited on before it is abandoned and retried.
const IDLE_TIMEOUT_VAR: &str = "CADRE_IDLE_TIMEOUT_MS";

/// Models tried, in order, when neither `--model` nor settings name one.
const DEFAULT_MODELS: &[&str] = &[
    "anthropic/claude-sonnet-4-5",
    "openai/gpt-5",
    "openrouter/anthropic/claude-sonnet-4.5",
];

pub async fn run(args: RunArgs) -> Result<ExitCode> {
    // Flags that contradict each other are reported before anything else can fail.
    check_session_flags(&args)?;
    let home = CadreHome::from_env().context("cannot locate CADRE_HOME")?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let root = project_root(&cwd);
    let trusted = args.trust
        || TrustStore::load(&home)
            .map(|t| t.is_trusted(&root))
            .unwrap_or(false);
    let settings = load_settings(&home, Some(&root), trusted)?.settings;
    let registry = ModelRegistry::load(home.root(), &ProcessEnv)?;

    if args.list_models {
        print_models(&registry);
        return Ok(ExitCode::SUCCESS);
    }

    let policy = retry_policy(&ProcessEnv, &settings)?;
    let prompt = read_prompt(&args)?;
    let model = pick_model(
        &registry,
        args.model.as_deref(),
        settings.default_model_name(),
        &home,
    )?;
    let requested = match args.thinking.as_deref() {
        Some(s) => ThinkingLevel::parse(s).ok_or_else(|| {
            anyhow!(
                "unknown thinking level {s:?} (use off, minimal, low, medium, high, xhigh or max)"
            )
        })?,
        None => settings.default_thinking_level.unwrap_or_default(),
    };
    // Bash commands never see a credential: not by a credential-like name, and not the key
    // resolved for this run's provider under any name (S5, S8).
    let allow = settings.shell_env_allow().map_err(|e| anyhow!(e))?;
    let secrets: Vec<String> = model.api_key.iter().cloned().collect();
    cadre_protocol::redact::set_secrets(secrets.iter().cloned());
    let hidden = cadre_llm::registry::hidden_credentials().iter().cloned();
    cadre_tools::shell_env::set_process_shell_env(
        cadre_tools::shell_env::ShellEnv::scrubbed(std::env::vars_os(), &allow, &secrets)
            .restoring(hidden, &allow, &secrets),
    );
    let thinking = resolve_thinking(&model, requested);
    if let Some(reason) = &thinking.clamp_reason {
        errln!(
            "cadre: note: thinking {} → {}: {reason}",
            thinking.requested,
            thinking.effective
        );
    }

    let (builtin_names, orchestration_names) = split_tool_names(args.tools.as_deref())?;
    if args.plan {
        refuse_write_tools(builtin_names.as_deref())?;
    }
    let mut tools = cadre_tools::builtin_tools();
    if let Some(names) = &builtin_names {
        // split_tool_names checked every name, so this keeps exactly the ones asked for.
        let _ = tools.retain_named(names);
    }

    let (session, history) = open_session(&args, &home, &cwd).await?;
    let artifacts_dir = home.root().join("artifacts");
    let provider: Arc<dyn Provider> = Arc::new(HttpProvider::new(policy));
    let registry = Arc::new(registry);
    let root_session_id = session
        .as_ref()
        .map(|s| s.session_id().to_string())
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
    let trust = match TrustStore::load(&home) {
        Ok(store) => ProjectTrust::from_store(&store, &root, args.trust),
        Err(_) if args.trust => ProjectTrust::Trusted,
        Err(e) => ProjectTrust::Untrusted {
            reason: format!("the trust store cannot be read ({e})"),
        },
    };
    let mut orchestration = Orchestration::new(Setup {
        home: &home,
        cwd: &cwd,
        trust,
        settings: settings.subagents.as_ref(),
        provider: provider.clone(),
        registry: registry.clone(),
        tools: tools.clone(),
        root_session_id,
        root_session_file: session.as_ref().map(|s| s.path().to_path_buf()),
        history: history.clone(),
        artifacts_dir: artifacts_dir.clone(),
    })?;
    // Plan mode (S6) is checked by the manager at every launch, before anything is created. The
    // manager keeps the full tool set so that a writing role is refused by plan mode, with a
    // message that says so, rather than by a missing tool; the root itself loses the tools that
    // write.
    orchestration.manager.set_plan_mode(args.plan);
    let tools = if args.plan {
        without_write_tools(tools)
    } else {
        tools
    };

    // The orchestration tools' descriptions come from the roster; the system prompt lists every
    // tool, and the tools keep the final prompt for forks.
    let mut active: Vec<String> = tools.names();
    active.extend(orchestration_names.iter().cloned());
    let mut with_orchestration = tools.clone();
    for tool in orchestration.tools(
        &model,
        thinking.effective,
        "",
        active.clone(),
        &orchestration_names,
    ) {
        with_orchestration.register(tool);
    }
    let mut append = args.append_system_prompt.clone();
    if !orchestration_names.is_empty()
        && let Some(policy) = orchestration.policy_prompt()
    {
        append.insert(0, policy);
    }
    let system_prompt = build_prompt(&cwd, home.root(), &with_orchestration, &args, &append);
    let mut all_tools = tools;
    for tool in orchestration.tools(
        &model,
        thinking.effective,
        &system_prompt,
        active,
        &orchestration_names,
    ) {
        all_tools.register(tool);
    }

    let (events_tx, events_rx) = match args.mode {
        Mode::Json => {
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(tx), Some(rx))
        }
        Mode::Text => (None, None),
    };
    if args.mode == Mode::Json {
        match &session {
            Some(session) => render::print_json_line(session.header()),
            None => render::print_json_line(&unsaved_header(&cwd)),
        };
    }
    // Forks branch from the parent's conversation, which is mirrored from its events.
    let events = if orchestration_names.is_empty() {
        events_tx
    } else {
        Some(orchestration.tap(events_tx))
    };
    let config = AgentConfig {
        provider,
        model,
        thinking: thinking.effective,
        system_prompt,
        tools: all_tools,
        cwd: cwd.clone(),
        artifacts_dir,
        events,
    };
    let mut agent = Agent::new(config, history, session);
    if args.mode == Mode::Text {
        // Text mode prints only the final answer and the fork mirror reads only message ends:
        // no one reads `message_update`, and each copies the reply so far (a reply that
        // launches N tasks would cost N² copies).
        agent.set_event_detail(cadre_core::agent::EventDetail::NoUpdates);
    }
    let printer = events_rx.map(|rx| tokio::spawn(print_events(rx)));

    // Registered before the run starts, so no signal slips through to the default handler.
    let signals = Signals::new().ok();
    let interrupted = Arc::new(AtomicI32::new(0));
    let on_interrupt = Arc::new(tokio::sync::Notify::new());
    let interrupt = tokio::spawn(abort_on_signal(
        signals,
        agent.controller(),
        orchestration.manager.clone(),
        interrupted.clone(),
        on_interrupt.clone(),
    ));
    let stop_requests = orchestration.watch_stop_requests();
    let outcome = orchestration
        .drive(&mut agent, prompt, on_interrupt.notified())
        .await;
    stop_requests.abort();
    interrupt.abort();
    // Nothing may outlive the parent: live children are stopped and recorded (L6).
    orchestration.manager.shutdown().await;
    let session_path = agent.session_path().map(Path::to_path_buf);
    let closed = agent.close().await;
    drop(orchestration);
    // The printer ends once every event sender (the agent's, the mirror's) is gone.
    if let Some(printer) = printer {
        let _ = printer.await;
    }
    let outcome = outcome?;
    closed?;
    let signal = match interrupted.load(Ordering::SeqCst) {
        0 => None,
        n => Some(n),
    };
    finish(args.mode, &outcome, session_path.as_deref(), signal)
}

/// Split `--tools` into built-in and orchestration tool names. Without `--tools`, every tool is
/// active. Unknown names are an error listing what exists.
fn split_tool_names(flag: Option<&[String]>) -> Result<(Option<Vec<String>>, Vec<String>)> {
    let Some(names) = flag else {
        return Ok((
            None,
            ORCHESTRATION_TOOLS.iter().map(|s| s.to_string()).collect(),
        ));
    };
    let mut builtin = Vec::new();
    let mut orchestration = Vec::new();
    let mut unknown = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if cadre_tools::BUILTIN_TOOL_NAMES.contains(&name) {
            builtin.push(name.to_string());
        } else if ORCHESTRATION_TOOLS.contains(&name) {
            orchestration.push(name.to_string());
        } else {
            unknown.push(name.to_string());
        }
    }
    if !unknown.is_empty() {
        bail!(
            "unknown tool(s) {}; available: {}, {}",
            unknown.join(", "),
            cadre_tools::BUILTIN_TOOL_NAMES.join(", "),
            ORCHESTRATION_TOOLS.join(", ")
        );
    }
    Ok((Some(builtin), orchestration))
}

/// Tools that change files, which plan mode (S6) keeps from the root as it keeps them from
/// children.
const WRITE_TOOLS: &[&str] = &["edit", "write"];

/// Under `--plan`, asking for a write tool explicitly is an error rather than silently ignored.
fn refuse_write_tools(builtin: Option<&[String]>) -> Result<()> {
    let asked: Vec<&str> = builtin
        .unwrap_or_default()
        .iter()
        .map(String::as_str)
        .filter(|n| WRITE_TOOLS.contains(n))
        .collect();
    if !asked.is_empty() {
        bail!(
            "--plan refuses write tools, but --tools asks for {}",
            asked.join(", ")
        );
    }
    Ok(())
}

/// `tools` without the write tools.
fn without_write_tools(mut tools: cadre_tools::ToolRegistry) -> cadre_tools::ToolRegistry {
    let keep: Vec<String> = tools
        .names()
        .into_iter()
        .filter(|n| !WRITE_TOOLS.contains(&n.as_str()))
        .collect();
    // Every name comes from the registry itself, so none is unknown.
    let _ = tools.retain_named(&keep);
    tools
}

/// Pi's retry defaults with the request deadlines of settings' `requestTimeouts`, and the base
/// delay and the idle deadline overridable from the environment (`CADRE_RETRY_BASE_MS`,
/// `CADRE_IDLE_TIMEOUT_MS`, which win over the settings): slow links and local models want a
/// longer idle timeout, tests and benchmarks a shorter one. A server's `retry-after` still
/// governs its own waits.
fn retry_policy(env: &dyn cadre_llm::registry::Env, settings: &Settings) -> Result<RetryPolicy> {
    let mut policy = RetryPolicy::default();
    policy.timeouts = settings
        .request_timeouts(policy.timeouts)
        .map_err(|e| anyhow!(e))?;
    if let Some(ms) = env_millis(env, RETRY_BASE_VAR)? {
        policy.base_delay = ms;
    }
    if let Some(ms) = env_millis(env, IDLE_TIMEOUT_VAR)? {
        if ms.is_zero() {
            bail!("{IDLE_TIMEOUT_VAR} must be more than 0");
        }
        policy.timeouts.idle = ms;
    }
    Ok(policy)
}

/// A duration in whole milliseconds from `name`; unset or blank is `None`.
fn env_millis(env: &dyn cadre_llm::registry::Env, name: &str) -> Result<Option<Duration>> {
    let Some(raw) = env.var(name).filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    raw.trim()
        .parse::<u64>()
        .map(|ms| Some(Duration::from_millis(ms)))
        .map_err(|_| anyhow!("{name} must be a whole number of milliseconds, not {raw:?}"))
}

/// The first SIGINT or SIGTERM aborts the run: tools are killed, every tool call gets a result and
/// the session is closed properly (a supervisor stopping a subagent sends SIGTERM). A second signal
/// exits at once, for when the abort itself is stuck. The first signal's number is stored in
/// `received`, so the run can say it was interrupted and exit as a shell expects (128 + signal).
async fn abort_on_signal(
    signals: Option<Signals>,
    controller: AgentController,
    manager: TaskManager,
    received: Arc<AtomicI32>,
    notify: Arc<tokio::sync::Notify>,
) {
    let Some(mut signals) = signals else {
        return;
    };
    let Some(signal) = signals.next().await else {
        return;
    };
    received.store(signal, Ordering::SeqCst);
    // Before anything stops: the tasks stopped below report, and those reports must not
    // reach the parent as a new turn.
    notify.notify_one();
    controller.abort();
    // Children stop with `parent_shutdown` (L6); the run then ends without waiting for them.
    tokio::spawn(async move { manager.shutdown().await });
    if let Some(again) = signals.next().await {
        errln!("cadre: error: interrupted again; exiting without waiting for the abort");
        std::process::exit(128 + again);
    }
}

const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

/// The signal's name for messages.
pub fn signal_name(signal: i32) -> String {
    match signal {
        SIGINT => "SIGINT".to_string(),
        SIGTERM => "SIGTERM".to_string(),
        n => format!("signal {n}"),
    }
}

/// SIGINT and SIGTERM as one stream (Ctrl-C only where there is no SIGTERM).
pub struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    pub fn new() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// Waits for the next signal and returns its number; `None` if signals can no longer be
    /// received.
    pub async fn next(&mut self) -> Option<i32> {
        #[cfg(unix)]
        {
            tokio::select! {
                got = self.interrupt.recv() => got.map(|()| SIGINT),
                got = self.terminate.recv() => got.map(|()| SIGTERM),
            }
        }
        #[cfg(not(unix))]
        tokio::signal::ctrl_c().await.ok().map(|()| SIGINT)
    }
}

/// Output the result and choose the exit code. `signal` is the signal that interrupted the run,
/// if one did: an interrupted run says so (not the provider client's "Request was aborted")
/// and exits 128 + the signal, as shells and supervisors expect.
fn finish(
    mode: Mode,
    outcome: &RunOutcome,
    session: Option<&Path>,
    signal: Option<i32>,
) -> Result<ExitCode> {
    let hint = session
        .map(|p| format!(" (session: {})", p.display()))
        .unwrap_or_default();
    // Interrupted: no answer either, even one given before the interrupt while background
    // tasks were still due to report; their reports were cut off.
    if let Some(signal) = signal {
        errln!(
            "cadre: error: interrupted by {}; the run was aborted{hint}",
            signal_name(signal)
        );
        return Ok(ExitCode::from(u8::try_from(128 + signal).unwrap_or(1)));
    }
    match &outcome.error {
        None => {
            let text = outcome.final_message.as_ref().map(|m| m.text());
            if let (Mode::Text, Some(text)) = (mode, text.filter(|t| !t.is_empty())) {
                outln!("{}", cadre_protocol::redact::redact_str(text.trim_end()));
            }
            Ok(ExitCode::SUCCESS)
        }
        // A failed or aborted run prints no answer: the partial text of a broken stream on stdout
        // would read as a (wrong) result to whatever consumes it.
        Some(error) => {
            errln!(
                "cadre: error: {}{hint}",
                error.lines().next().unwrap_or(error)
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

async fn print_events(mut rx: mpsc::UnboundedReceiver<AgentEvent>) {
    while let Some(event) = rx.recv().await {
        if !render::print_json_line(&event) {
            // stdout is gone (e.g. piped into `head`): keep draining so the agent never blocks.
            while rx.recv().await.is_some() {}
            return;
        }
    }
}

/// How long stdin may stay open and silent before cadre says that it is waiting for it.
const STDIN_NOTE_AFTER: Duration = Duration::from_secs(2);

/// All of piped stdin. A pipe that stays open and silent (a harness that never closes its
/// child's stdin, `cadre -p` inside a `while read` loop) blocks the run until it closes; after
/// [`STDIN_NOTE_AFTER`] a note says what cadre is waiting for and how not to.
fn read_piped_stdin(has_prompt: bool) -> Result<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut piped = String::new();
        let read = std::io::stdin().lock().read_to_string(&mut piped);
        let _ = tx.send(read.map(|_| piped));
    });
    let read = match rx.recv_timeout(STDIN_NOTE_AFTER) {
        Ok(read) => read,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            if has_prompt {
                errln!(
                    "cadre: note: waiting for stdin to close, because piped input is added to the prompt (run with </dev/null to do without)"
                );
            } else {
                errln!(
                    "cadre: note: waiting for the prompt on stdin until it closes (or pass the prompt as an argument)"
                );
            }
            rx.recv()
                .map_err(|_| anyhow!("cannot read the prompt from stdin"))?
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            bail!("cannot read the prompt from stdin")
        }
    };
    read.context("cannot read the prompt from stdin")
}

/// The prompt from the arguments, else from stdin when it is not a terminal.
fn read_prompt(args: &RunArgs) -> Result<String> {
    let mut prompt = args.messages.join(" ");
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let piped = read_piped_stdin(!prompt.trim().is_empty())?;
        if !piped.trim().is_empty() {
            if !prompt.is_empty() {
                prompt.push_str("\n\n");
            }
            prompt.push_str(piped.trim_end());
        }
    }
    if prompt.trim().is_empty() {
        if !args.print && stdin.is_terminal() {
            bail!(
                "interactive mode is not available yet; run `cadre -p \"your prompt\"` (or `cadre demo`)"
            );
        }
        bail!("no prompt given: pass it as an argument (`cadre -p \"…\"`) or on stdin");
    }
    Ok(prompt)
}

/// `--model`, else the settings' default, else the first built-in default with credentials.
pub fn pick_model(
    registry: &ModelRegistry,
    flag: Option<&str>,
    from_settings: Option<String>,
    home: &CadreHome,
) -> Result<Model> {
    if let Some(name) = flag.map(str::to_string).or(from_settings) {
        return Ok(registry.resolve(&name)?);
    }
    for name in DEFAULT_MODELS {
        if let Ok(model) = registry.resolve(name) {
            return Ok(model);
        }
    }
    bail!("{}", no_default_model(registry, home))
}

/// Most models named in the "no model configured" error.
const READY_MODELS_SHOWN: usize = 5;

/// Why no model was picked and what would fix it. Models that could be called (a models.json
/// provider with a key) are named, since `--model` with one of them is the quickest fix; the
/// last built-in default's own error (about OpenRouter's key) would only mislead.
fn no_default_model(registry: &ModelRegistry, home: &CadreHome) -> String {
    let ready: Vec<String> = registry
        .list()
        .into_iter()
        .filter(|m| m.has_credentials && m.unsupported.is_none())
        .map(|m| m.full_name)
        .collect();
    if ready.is_empty() {
        return format!(
            "no model configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY, \
             or add a provider to {} and pass --model provider/id (`cadre --list-models` shows \
             the known models)",
            home.models_json().display()
        );
    }
    let mut shown = ready
        .iter()
        .take(READY_MODELS_SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ready.len() > READY_MODELS_SHOWN {
        shown.push_str(", …");
    }
    format!(
        "no model configured: pass --model provider/id (with credentials: {shown}), set \
         defaultProvider and defaultModel in {}, or set ANTHROPIC_API_KEY, OPENAI_API_KEY or \
         OPENROUTER_API_KEY",
        home.settings_json().display()
    )
}

/// The header of a session that is not saved (`--no-session`). JSON output always starts with a
/// header, as Pi's does for its in-memory sessions, so consumers can rely on the first line.
fn unsaved_header(cwd: &Path) -> SessionHeader {
    SessionHeader {
        kind: "session".into(),
        version: SESSION_VERSION,
        id: uuid::Uuid::now_v7().to_string(),
        timestamp: iso_timestamp(std::time::SystemTime::now()),
        cwd: cwd.to_string_lossy().into_owned(),
        parent_session: None,
    }
}

/// `--no-session`, `--session` and `--continue` exclude each other.
fn check_session_flags(args: &RunArgs) -> Result<()> {
    if args.no_session && (args.session.is_some() || args.continue_latest) {
        bail!("--no-session cannot be combined with --session or --continue");
    }
    if args.session.is_some() && args.continue_latest {
        bail!("--session and --continue cannot be combined");
    }
    Ok(())
}

/// Open the session to write to and the history to continue from (the flags were checked by
/// [`check_session_flags`]).
async fn open_session(
    args: &RunArgs,
    home: &CadreHome,
    cwd: &Path,
) -> Result<(Option<SessionWriter>, Vec<Message>)> {
    if args.no_session {
        return Ok((None, Vec::new()));
    }
    let existing: Option<PathBuf> = match (&args.session, args.continue_latest) {
        (Some(path), _) => {
            // An empty file (e.g. made with mktemp by whoever runs us) starts a new session
            // there, as in Pi; a file with content that is not a session is refused below.
            let empty = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0);
            if path.exists() && !empty {
                Some(path.clone())
            } else {
                if empty {
                    std::fs::remove_file(path).with_context(|| {
                        format!("cannot replace the empty session file {}", path.display())
                    })?;
                }
                let writer = SessionWriter::create_at(path, cwd, None).await?;
                return Ok((Some(writer), Vec::new()));
            }
        }
        (None, true) => latest_session(&session_dir_for_cwd(home.root(), cwd)),
        (None, false) => None,
    };
    match existing {
        Some(path) => {
            let loaded = load_session(&path)?;
            for (line, reason) in &loaded.dropped_lines {
                errln!(
                    "cadre: warning: {}:{line}: skipped an unreadable line ({reason})",
                    path.display()
                );
            }
            let history = loaded.messages();
            let writer = SessionWriter::resume(&path, &loaded).await?;
            Ok((Some(writer), history))
        }
        None => {
            let dir = session_dir_for_cwd(home.root(), cwd);
            Ok((
                Some(SessionWriter::create(&dir, cwd, None).await?),
                Vec::new(),
            ))
        }
    }
}

fn build_prompt(
    cwd: &Path,
    home: &Path,
    tools: &cadre_tools::ToolRegistry,
    args: &RunArgs,
    append: &[String],
) -> String {
    let context_files = cadre_core::context::collect_context_files(cwd, home);
    let date = cadre_core::prompt::today(std::time::SystemTime::now());
    let specs = tools.specs();
    cadre_core::prompt::build_system_prompt(&cadre_core::prompt::SystemPromptInput {
        cwd,
        date: &date,
        tools: &specs,
        context_files: &context_files,
        custom: args.system_prompt.as_deref(),
        append,
    })
}

/// The known models, in the same table style as `cadre tasks` and `cadre agents`.
fn print_models(registry: &ModelRegistry) {
    let rows: Vec<Vec<String>> = registry
        .list()
        .into_iter()
        .map(|m| {
            let creds = match (&m.unsupported, m.has_credentials) {
                (Some(why), _) => format!("unsupported: {why}"),
                (None, true) => "yes".to_string(),
                (None, false) => "missing".to_string(),
            };
            vec![m.full_name, m.api, m.context_window.to_string(), creds]
        })
        .collect();
    crate::commands::print_out(&crate::commands::format::table(
        &["MODEL", "API", "CONTEXT", "CREDENTIALS"],
        &rows,
    ));
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_llm::registry::MapEnv;

    #[test]
    fn plan_mode_takes_the_write_tools_away() {
        let root = without_write_tools(cadre_tools::builtin_tools()).names();
        assert!(root.iter().any(|n| n == "read"), "{root:?}");
        assert!(root.iter().any(|n| n == "bash"), "{root:?}");
        assert!(
            !root.iter().any(|n| n == "edit" || n == "write"),
            "{root:?}"
        );
        assert_eq!(root.len(), cadre_tools::BUILTIN_TOOL_NAMES.len() - 2);

        assert!(refuse_write_tools(None).is_ok());
        assert!(refuse_write_tools(Some(&["read".into(), "grep".into()])).is_ok());
        let err = refuse_write_tools(Some(&["read".into(), "write".into(), "edit".into()]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--plan refuses write tools"), "{err}");
        assert!(err.ends_with("write, edit"), "{err}");
    }

    #[test]
    fn retry_policy_defaults_without_overrides() {
        assert_eq!(
            retry_policy(&MapEnv::new(), &Settings::default()).unwrap(),
            RetryPolicy::default()
        );
        let blank = MapEnv::new().with(RETRY_BASE_VAR, " ");
        assert_eq!(
            retry_policy(&blank, &Settings::default()).unwrap(),
            RetryPolicy::default()
        );
    }

    #[test]
    fn retry_policy_takes_overrides_in_milliseconds() {
        let env = MapEnv::new()
            .with(RETRY_BASE_VAR, "5")
            .with(IDLE_TIMEOUT_VAR, " 250 ");
        let policy = retry_policy(&env, &Settings::default()).unwrap();
        assert_eq!(policy.base_delay, Duration::from_millis(5));
        assert_eq!(policy.timeouts.idle, Duration::from_millis(250));
        assert_eq!(policy.max_attempts, RetryPolicy::default().max_attempts);
        let zero_base = MapEnv::new().with(RETRY_BASE_VAR, "0");
        assert_eq!(
            retry_policy(&zero_base, &Settings::default())
                .unwrap()
                .base_delay,
            Duration::ZERO
        );
    }

    #[test]
    fn retry_policy_takes_request_timeouts_from_settings_under_the_environment() {
        let mut settings = Settings::default();
        settings.raw.insert(
            "requestTimeouts".into(),
            serde_json::json!({"firstContentMs": 300000, "idleMs": 90000, "totalMs": 600000}),
        );
        let policy = retry_policy(&MapEnv::new(), &settings).unwrap();
        assert_eq!(policy.timeouts.first_content, Duration::from_secs(300));
        assert_eq!(policy.timeouts.idle, Duration::from_secs(90));
        assert_eq!(policy.timeouts.total, Duration::from_secs(600));
        let env = MapEnv::new().with(IDLE_TIMEOUT_VAR, "250");
        let policy = retry_policy(&env, &settings).unwrap();
        assert_eq!(policy.timeouts.idle, Duration::from_millis(250));
        assert_eq!(policy.timeouts.total, Duration::from_secs(600));
        settings
            .raw
            .insert("requestTimeouts".into(), serde_json::json!({"idleMs": 0}));
        let err = retry_policy(&MapEnv::new(), &settings).unwrap_err();
        assert!(err.to_string().contains("requestTimeouts.idleMs"), "{err}");
    }

    #[test]
    fn retry_policy_rejects_bad_values_naming_the_variable() {
        for (name, value) in [
            (RETRY_BASE_VAR, "fast"),
            (RETRY_BASE_VAR, "-1"),
            (RETRY_BASE_VAR, "1.5"),
            (IDLE_TIMEOUT_VAR, "0"),
            (IDLE_TIMEOUT_VAR, "99999999999999999999999"),
        ] {
            let err =
                retry_policy(&MapEnv::new().with(name, value), &Settings::default()).unwrap_err();
            assert!(err.to_string().contains(name), "{name}={value}: {err}");
        }
    }
}
