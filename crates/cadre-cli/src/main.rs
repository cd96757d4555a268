//! The `cadre` binary: parses arguments, runs one mode, turns errors into one clear line.

mod args;
mod demo;
mod demo_script;
mod fake_server;
mod render;
mod run;
mod tool;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cadre: error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Some(Command::Demo(args)) => demo::run(args).await,
            Some(Command::FakeServer(args)) => fake_server::run(args).await,
            Some(Command::Tool(args)) => tool::run(args).await,
            None => run::run(cli.run).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("cadre: error: {}", one_line(&e));
            ExitCode::FAILURE
        }
    }
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
