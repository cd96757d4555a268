//! The `cadre` binary: parses arguments, runs one mode, turns errors into one clear line.

/// `println!` that never panics: a closed stdout (`cadre … | head`) ends the output, not the
/// process.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `eprintln!` that never panics on a closed stderr.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

mod acp;
mod args;
mod argv;
mod commands;
mod demo;
mod demo_script;
mod fake_server;
mod harden;
mod interactive;
mod key_file;
mod live;
mod mcp;
mod model_list;
mod pi_compat;
mod render;
mod rpc;
mod run;
mod task_board;
mod tool;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

/// See the `mimalloc` entry in Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // The hidden re-exec entry points, handled before any parsing or thread: the sandbox of
    // read-only roles' bash (S2), and the supervisor that ends a bash command when cadre dies.
    // Both are reserved first arguments that no subcommand or option uses, and both insist on
    // their exact argument shape, so a stray `cadre __supervise` fails with a message.
    if let Some(first) = std::env::args_os().nth(1)
        && let Some(code) = cadre_sandbox::reexec_main(&first, std::env::args_os().skip(2))
    {
        return code;
    }
    // Before any thread or child exists (S5, S8): see `harden`.
    harden::process_start();
    // Every bash command of this process (the root's, every child's, `cadre tool bash`) runs
    // under this binary's supervisor. Without a path to re-execute, commands run directly.
    if let Ok(exe) = cadre_tools::supervise::current_exe_for_reexec() {
        cadre_tools::supervise::set_process_supervisor(exe);
    }
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let argv = match pi_compat::normalize_args(raw.clone()) {
        Ok(argv) => argv,
        Err(hint) => {
            errln!("cadre: error: {hint}");
            return ExitCode::from(2);
        }
    };
    let mut cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    // `--api-key-file`: the key read now, then used exactly as `--api-key` would be.
    if let Err(e) = key_file::resolve(&mut cli) {
        errln!("cadre: error: {}", one_line(&e));
        return ExitCode::from(2);
    }
    // Pi's run flags, checked and folded into the ones the run reads, before anything starts.
    if cli.command.is_none()
        && let Err(e) = pi_compat::prepare_run(&mut cli.run, &raw)
    {
        errln!("cadre: error: {}", one_line(&e));
        return ExitCode::from(2);
    }
    // Parsed: the key's bytes can leave the process's command line (S5).
    // (A key read from `--api-key-file` was never there.)
    let (api_key, from_file) = match &cli.command {
        Some(Command::Mcp(args)) => (&args.serve.api_key, &args.serve.api_key_file),
        Some(Command::Acp(args)) => (&args.serve.api_key, &args.serve.api_key_file),
        _ => (&cli.run.api_key, &cli.run.api_key_file),
    };
    if let (Some(key), None) = (api_key, from_file) {
        argv::hide_in_cmdline(key.expose());
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            errln!("cadre: error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Some(Command::Demo(args)) => demo::run(args).await,
            Some(Command::FakeServer(args)) => fake_server::run(args).await,
            Some(Command::Tool(args)) => tool::run(args).await,
            Some(Command::BenchTui(a)) => interactive::bench::run(&interactive::bench::BenchArgs {
                tasks: a.tasks,
                cols: a.cols,
                rows: a.rows,
                seconds: a.seconds,
                rate: a.rate,
            })
            .map(|()| std::process::ExitCode::SUCCESS),
            Some(Command::Agents(args)) => commands::agents::run(&args),
            Some(Command::Doctor(args)) => commands::doctor::run(&args),
            Some(Command::Tasks(args)) => commands::tasks::run(&args),
            Some(Command::Task(args)) => commands::task::run(args).await,
            Some(Command::Trace(args)) => commands::trace::run(&args),
            Some(Command::Trust(args)) => commands::trust::run(&args),
            Some(Command::Mcp(args)) => mcp::run(args).await,
            Some(Command::Acp(args)) => acp::run(args).await,
            // `--export SESSION [OUTPUT]`: Pi's shape, the output in the prompt's place.
            None => match cli.run.export.take() {
                Some(session) => commands::trace::export(
                    &session,
                    cli.run.messages.first().map(String::as_str),
                    cli.run.session_dir.as_deref(),
                ),
                None => run::run(cli.run).await,
            },
        }
    });
    // MCP servers a session did not get to stop (a task still held them) end with cadre.
    cadre_mcp::stop_all();
    match result {
        Ok(code) => code,
        Err(e) => {
            errln!("cadre: error: {}", one_line(&e));
            ExitCode::FAILURE
        }
    }
}

/// `--help` and `--version` print as clap renders them; a usage error becomes one
/// `cadre: error:` line like every other failure (clap's own spans several lines), and a Pi
/// flag cadre does not have says so instead of clap's advice.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::UnknownArgument
        && let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg)
        && let Some(hint) = pi_compat::unsupported_flag_hint(arg)
    {
        errln!("cadre: error: {hint}");
        return ExitCode::from(2);
    }
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        // A command given nothing shows its help (on stderr), which is not one line.
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            return ExitCode::from(2);
        }
        _ => {}
    }
    errln!("cadre: error: {}", usage_line(&e.render().to_string()));
    ExitCode::from(2)
}

/// clap's rendered error on one line: the message and its tips, without the usage block and
/// the "try --help" footer. A line that continues the one before (the list after "were not
/// provided:", the "[possible values: …]" of an invalid value) is joined with a space, other
/// lines (tips) with "; ".
fn usage_line(rendered: &str) -> String {
    let mut out = String::new();
    let mut in_usage = false;
    for line in rendered.lines().map(str::trim) {
        if line.is_empty() {
            in_usage = false;
            continue;
        }
        if line.starts_with("Usage:") {
            in_usage = true;
        }
        if in_usage || line.starts_with("For more information") {
            continue;
        }
        let part = line.strip_prefix("error:").map(str::trim).unwrap_or(line);
        if !out.is_empty() {
            let continues = out.ends_with(':') || part.starts_with('[');
            out.push_str(if continues { " " } else { "; " });
        }
        out.push_str(part);
    }
    out
}

/// The error and its causes on one line: "what failed: why".
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn rendered(args: &[&str]) -> String {
        let e = Cli::try_parse_from(args).unwrap_err();
        usage_line(&e.render().to_string())
    }

    #[test]
    fn usage_errors_fit_on_one_line() {
        let line = rendered(&["cadre", "--mode", "nope"]);
        assert!(!line.contains('\n'), "{line}");
        assert!(
            line.starts_with("invalid value 'nope' for '--mode"),
            "{line}"
        );
        assert!(line.contains("text, json, rpc"), "{line}");
        assert!(!line.contains("Usage"), "{line}");

        let line = rendered(&["cadre", "--frobnicate"]);
        assert!(
            line.starts_with("unexpected argument '--frobnicate'"),
            "{line}"
        );
        assert!(!line.contains("For more information"), "{line}");

        let line = rendered(&["cadre", "--model"]);
        assert!(line.contains("--model"), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }

    #[test]
    fn usage_line_keeps_plain_messages() {
        assert_eq!(usage_line("error: boom\n"), "boom");
        assert_eq!(
            usage_line(
                "error: a\n\n  tip: b\n\nUsage: cadre [X]\n       cadre y\n\nFor more information, try '--help'.\n"
            ),
            "a; tip: b"
        );
        assert_eq!(usage_line(""), "");
    }

    #[test]
    fn usage_line_joins_continuations_with_a_space() {
        let line = rendered(&["cadre", "task", "show"]);
        assert_eq!(
            line,
            "the following required arguments were not provided: <TARGET>"
        );
        let line = rendered(&["cadre", "--mode", "xml"]);
        assert!(
            line.ends_with("'--mode <MODE>' [possible values: text, json, rpc]"),
            "{line}"
        );
        let line = rendered(&["cadre", "--frobnicate"]);
        assert!(line.contains("found; tip: "), "{line}");
    }
}
