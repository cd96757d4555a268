//! Print and JSON modes: one prompt, run to completion, output, exit code.

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use cadre_core::agent::RunOutcome;
use cadre_core::session::iso_timestamp;
use cadre_host::{Host, HostContext, HostEvent, HostOptions, SessionChoice, signal_name};
use cadre_protocol::{ContentBlock, SESSION_VERSION, SessionHeader, UserContent};
use tokio::sync::mpsc;

use crate::args::{Mode, RunArgs};
use crate::render;

pub async fn run(args: RunArgs) -> Result<ExitCode> {
    // Flags that contradict each other are reported before anything else can fail.
    check_session_flags(&args)?;
    if args.mode == Mode::Rpc {
        return crate::rpc::run(args).await;
    }
    if args.list_models.is_none() && interactive_wanted(&args) {
        return crate::interactive::run(args).await;
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let ctx = load_context(&args, &cwd)?;
    if let Some(search) = &args.list_models {
        crate::model_list::print(&ctx.registry, search);
        return Ok(ExitCode::SUCCESS);
    }
    if args.resume {
        bail!(
            "--resume lists sessions to continue in the interactive mode (`cadre -r` at a terminal); here use --continue or --session <path|id>"
        );
    }
    let (first, rest) = read_prompts(&args, &cwd)?;
    let started = Host::start(ctx, host_options(&args)).await?;
    for warning in &started.warnings {
        errln!("cadre: {warning}");
    }
    if args.mode == Mode::Json {
        match &started.header {
            Some(header) => render::print_json_line(header),
            None => render::print_json_line(&unsaved_header(&cwd)),
        };
    }
    let host = started.host;
    let tasks = host.tasks();
    let printer = tokio::spawn(print_events(started.events, args.mode));
    let (interrupted, signals) = cadre_host::interrupt_on_signal(host.interrupt_handle());
    let outcome = run_prompts(&host, first, rest).await;
    signals.abort();
    // Nothing may outlive the parent: live children are stopped and recorded (L6).
    let closed = host.shutdown().await;
    drop(host);
    // The printer ends once every event sender (the agent's, the mirror's) is gone.
    let _ = printer.await;
    let outcome = outcome
        .map_err(|e| anyhow!(e))?
        .ok_or_else(|| anyhow!("the prompt did not run"))?;
    let session_path = closed.map_err(|e| anyhow!(e))?;
    let signal = match interrupted.load(Ordering::SeqCst) {
        0 => None,
        n => Some(n),
    };
    // The closing line: what the session spent of its budget, on stderr so the answer on
    // stdout stays the answer.
    if let Some(line) = tasks.budget().as_ref().and_then(budget_line) {
        errln!("cadre: {line}");
    }
    finish(args.mode, &outcome, session_path.as_deref(), signal)
}

/// `spent $0.41 of $0.50 (list prices), subagents included`.
fn budget_line(state: &cadre_protocol::BudgetState) -> Option<String> {
    let spent = cadre_core::budget::text::spent_of_cap(state.spent, state.cap)?;
    let estimated = if state.estimated {
        ", partly estimated"
    } else {
        ""
    };
    Some(format!(
        "budget: spent {spent} in this session, subagents included (list prices{estimated})"
    ))
}

/// Whether this run is the interactive mode: `cadre` (or `cadre -c`, `-r`, `--model …`) at a
/// terminal, without `-p`, a prompt or piped input.
fn interactive_wanted(args: &RunArgs) -> bool {
    args.mode == Mode::Text
        && !args.print
        && args.messages.is_empty()
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
}

/// Run the prompts one after the other, each settled (its tasks reported and answered) before
/// the next; a failed or aborted one ends the run. Returns the last outcome.
async fn run_prompts(
    host: &Host,
    first: UserContent,
    rest: Vec<String>,
) -> Result<Option<RunOutcome>, cadre_host::HostError> {
    host.prompt(first, None)?;
    let mut outcome = host.settle().await?;
    for prompt in rest {
        if outcome.as_ref().is_none_or(|o| o.error.is_some()) {
            break;
        }
        host.prompt(UserContent::Text(prompt), None)?;
        outcome = host.settle().await?;
    }
    Ok(outcome)
}

/// The host context of a run in `cwd`, with its notes said on stderr.
pub(crate) fn load_context(args: &RunArgs, cwd: &Path) -> Result<Arc<HostContext>> {
    let ctx = HostContext::load(cwd, args.trust, runtime_key(args))?;
    for note in &ctx.notes {
        errln!("cadre: {note}");
    }
    Ok(Arc::new(ctx))
}

/// `--api-key` with the model it is for (`pi_compat::prepare_run` checked that one is given).
pub(crate) fn runtime_key(args: &RunArgs) -> Option<cadre_host::RuntimeKey> {
    Some(cadre_host::RuntimeKey {
        model: args.model.clone()?,
        key: args.api_key.as_ref()?.expose().to_string(),
    })
}

/// The host options of a print or JSON run.
pub(crate) fn host_options(args: &RunArgs) -> HostOptions {
    let session = if args.no_session {
        SessionChoice::None
    } else if let Some(arg) = &args.session {
        SessionChoice::Named(arg.to_string_lossy().into_owned())
    } else if args.continue_latest {
        SessionChoice::Continue
    } else {
        SessionChoice::New
    };
    HostOptions {
        model: args.model.clone(),
        thinking: args.thinking.clone(),
        tools: args.tools.clone(),
        system_prompt: args.system_prompt.clone(),
        append_system_prompt: args.append_system_prompt.clone(),
        session,
        session_dir: args.session_dir.clone(),
        trust: args.trust,
        plan: args.plan,
        budget: args.budget(),
        background_by_default: false,
        stream_updates: args.mode == Mode::Json,
        ..HostOptions::default()
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

async fn print_events(mut rx: mpsc::UnboundedReceiver<HostEvent>, mode: Mode) {
    // The live task tree (I4) is for a person at a terminal, never in JSON mode.
    let mut live = (mode == Mode::Text && crate::live::enabled()).then(crate::live::LiveView::new);
    let mut ticks = tokio::time::interval(crate::live::LiveView::tick_every());
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let event = tokio::select! {
            event = rx.recv() => event,
            // Only while a frame is up: a run without tasks is not woken ten times a second.
            _ = ticks.tick(), if live.as_ref().is_some_and(crate::live::LiveView::is_drawn) => {
                if let Some(live) = live.as_mut() {
                    live.tick(std::time::Instant::now());
                }
                continue;
            }
        };
        let Some(event) = event else { break };
        // Text mode prints only the final answer; Pi's JSON stream has no task events.
        let event = match event {
            HostEvent::Agent(event) => event,
            HostEvent::Task(event) => {
                if let Some(live) = live.as_mut() {
                    live.on_event(&event);
                }
                continue;
            }
        };
        if mode == Mode::Json && !render::print_json_line(&event) {
            // stdout is gone (e.g. piped into `head`): keep draining so the agent never blocks.
            while rx.recv().await.is_some() {}
            return;
        }
    }
    // The run is over: whatever is still drawn goes before the answer and the notes.
    if let Some(live) = live.as_mut() {
        live.clear();
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

/// The prompts of the run, as Pi builds them: piped stdin, the `@file` arguments and the first
/// message make the first prompt; every further message is a prompt of its own.
fn read_prompts(args: &RunArgs, cwd: &Path) -> Result<(UserContent, Vec<String>)> {
    let (files, messages) = cadre_core::input::split_file_args(&args.messages);
    let stdin = std::io::stdin();
    let piped = if stdin.is_terminal() {
        None
    } else {
        Some(read_piped_stdin(!messages.is_empty() || !files.is_empty())?)
    };
    let home = cadre_llm::registry::home_dir(&cadre_llm::registry::ProcessEnv);
    let input = cadre_core::input::initial_input(
        &messages,
        &files,
        piped.as_deref(),
        cwd,
        home.as_deref(),
    )?;
    let first = input.first.filter(|blocks| {
        blocks.iter().any(|b| match b {
            ContentBlock::Text { text } => !text.trim().is_empty(),
            _ => true,
        })
    });
    let Some(first) = first else {
        if !args.print && stdin.is_terminal() {
            bail!(
                "the interactive mode needs a terminal on stdout too; run `cadre -p \"your prompt\"` to print the answer"
            );
        }
        bail!("no prompt given: pass it as an argument (`cadre -p \"…\"`) or on stdin");
    };
    Ok((UserContent::Blocks(first), input.rest))
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
