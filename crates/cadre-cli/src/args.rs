//! Command-line arguments, in Pi's style.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// cadre — supervised subagents for coding agents.
///
/// Run a prompt: `cadre -p "explain src/main.rs"`. Try it without an API key: `cadre demo`.
#[derive(Debug, Parser)]
#[command(name = "cadre", version, disable_version_flag = true)]
#[command(args_conflicts_with_subcommands = true)]
#[command(after_help = AFTER_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Print the version (`-v` as in Pi; `-V` too).
    #[arg(short = 'v', long = "version", short_alias = 'V', action = clap::ArgAction::Version)]
    version: (),

    #[command(flatten)]
    pub run: RunArgs,
}

/// Subagents and the environment variables a run reads, shown at the end of `--help`.
const AFTER_HELP: &str = "Subagents:
  The agent delegates with the Agent, SendMessage, TaskOutput and TaskStop tools to roles
  (built-in, CADRE_HOME/agents/*.md, and .cadre/agents/*.md of a trusted project).
  `cadre agents` lists the roles, `cadre tasks` and `cadre task show|output|stop|apply|budget`
  the tasks (records in CADRE_HOME/tasks), `cadre trace` draws a run's tasks as one HTML page,
  `cadre trust` trusts a project, `cadre doctor` checks it all; `--plan` allows only planning
  roles. `--max-cost-usd` and `--max-tokens` cap a session's spend, subagents included.

Environment:
  CADRE_HOME             configuration, models.json, auth.json and sessions (default: ~/.cadre);
                         Pi's models.json, auth.json (API keys), settings.json and AGENTS.md
                         (in PI_CODING_AGENT_DIR, default ~/.pi/agent) stand in for missing ones
  CADRE_SESSION_DIR      where sessions are stored (overridden by --session-dir)
  ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY
                         credentials of the built-in providers
  CADRE_RETRY_BASE_MS    delay before the first retry of a failed model request (default 2000)
  CADRE_IDLE_TIMEOUT_MS  abandon and retry a model stream without content for this long (default 120000)";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Print the final answer.
    Text,
    /// Print one JSON event per line (Pi's event names).
    Json,
    /// Pi's RPC protocol: JSON commands on stdin, responses and events on stdout.
    Rpc,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Non-interactive: run the prompt, print the answer and exit.
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// Output mode.
    #[arg(long, value_enum, default_value = "text")]
    pub mode: Mode,

    /// Model as provider/model-id (e.g. anthropic/claude-sonnet-4-5), or a model id with
    /// --provider.
    #[arg(long)]
    pub model: Option<String>,

    /// Provider of --model (e.g. --provider openai --model gpt-5).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,

    /// API key for the provider of --model, for this run only (over the environment and stored
    /// keys). It is redacted from output and sessions and no command sees it.
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<Secret>,

    /// --api-key read from a file (one line): other processes can read a command line
    /// before cadre hides the key in it, but not a file only you can read.
    #[arg(long, value_name = "PATH", conflicts_with = "api_key")]
    pub api_key_file: Option<PathBuf>,

    /// Thinking level: off, minimal, low, medium, high, xhigh, max.
    #[arg(long)]
    pub thinking: Option<String>,

    /// Comma-separated tool names to enable (default: all of read,bash,edit,write,grep,find,ls
    /// and the subagent tools Agent,SendMessage,TaskOutput,TaskStop).
    #[arg(short = 't', long, value_delimiter = ',')]
    pub tools: Option<Vec<String>>,

    /// No tools (with --tools: only those). Pi's `-nt` works too.
    #[arg(long)]
    pub no_tools: bool,

    /// Do not load AGENTS.md / CLAUDE.md files. Pi's `-nc` works too.
    #[arg(long)]
    pub no_context_files: bool,

    /// Replace the base system prompt.
    #[arg(long)]
    pub system_prompt: Option<String>,

    /// Append text to the system prompt (repeatable).
    #[arg(long)]
    pub append_system_prompt: Vec<String>,

    /// Use this session file (created if missing, continued if present), or the session whose
    /// id starts with ID (this project's first, then any project's).
    #[arg(long, value_name = "PATH|ID")]
    pub session: Option<PathBuf>,

    /// Directory where this run's sessions are stored and looked up (--continue, ids), instead
    /// of CADRE_HOME/sessions/--<cwd>--.
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,

    /// Export a session (a file, or the start of its id) to HTML and exit; the first PROMPT
    /// is the output file (default cadre-session-<name>.html), as in Pi.
    #[arg(long, value_name = "SESSION")]
    pub export: Option<PathBuf>,

    /// Continue the latest session for this directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_latest: bool,

    /// Interactive mode: open with this project's recent sessions listed, to continue one
    /// (`/resume N`).
    #[arg(short = 'r', long)]
    pub resume: bool,

    /// Do not write a session file.
    #[arg(long)]
    pub no_session: bool,

    /// Trust this project for this run (loads its agents and .cadre/settings.json).
    #[arg(long)]
    pub trust: bool,

    /// Plan mode: subagents may only be planning roles (Explore, Plan, research, review,
    /// advisor), never in a worktree, and this run has no edit/write tools.
    #[arg(long)]
    pub plan: bool,

    /// Spend at most this many US dollars in this session, subagents included (list prices
    /// from the model table). Requests past it are refused; tasks end `partial`.
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    pub max_cost_usd: Option<f64>,

    /// Spend at most this many tokens in this session, subagents included (fresh input,
    /// cache writes and output; cache reads are not counted).
    #[arg(long, value_name = "N", value_parser = parse_tokens)]
    pub max_tokens: Option<u64>,

    /// List the known models and exit; with SEARCH, only those whose provider, id or name
    /// contains it (case-insensitive; several words must all match).
    #[arg(long, value_name = "SEARCH", num_args = 0..=1, default_missing_value = "")]
    pub list_models: Option<String>,

    /// The prompts, run one after the other as in Pi; `@FILE` includes a file in the first
    /// (text inlined, PNG/JPEG/GIF/WebP as images). Piped stdin comes before the first prompt,
    /// or is the prompt when none is given.
    #[arg(value_name = "PROMPT")]
    pub messages: Vec<String>,
}

/// A flag value that must not appear in `Debug` output (`--api-key`, `--api-key-file`'s key).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    /// The value itself, for the one place that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Secret(s.to_string()))
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a real agent against a built-in scripted model: no API key, no network.
    Demo(DemoArgs),
    /// Serve the scripted model on loopback (for benchmarks and manual testing).
    #[command(hide = true)]
    FakeServer(FakeServerArgs),
    /// Run one built-in tool in the current directory and print its result (for debugging and
    /// benchmarks), e.g. `cadre tool grep '{"pattern":"fn main"}'`.
    #[command(hide = true)]
    Tool(ToolArgs),
    /// Measure the interactive screen's frame times with many live tasks (scripts/bench).
    #[command(hide = true, name = "__bench-tui")]
    BenchTui(BenchTuiArgs),
    /// List the agent types: layer, file, tools, overrides, blocked names, trust.
    Agents(crate::commands::agents::AgentsArgs),
    /// Check configuration, credentials, trust, sandbox support, agent files and tasks.
    Doctor(crate::commands::doctor::DoctorArgs),
    /// List this project's subagent tasks, newest first.
    Tasks(crate::commands::tasks::TasksArgs),
    /// Show, print the output of, stop or apply one task.
    Task(crate::commands::task::TaskArgs),
    /// Write a root session's tasks and conversations as one self-contained HTML timeline.
    Trace(crate::commands::trace::TraceArgs),
    /// Trust a project so its agents, skills and settings load (`--list`, `--revoke PATH`).
    Trust(crate::commands::trust::TrustArgs),
    /// Serve cadre's subagents to an MCP client (Claude Code, Codex, Cursor) over stdio, or
    /// streamable HTTP with `--http ADDR`.
    Mcp(McpArgs),
    /// Serve cadre as an Agent Client Protocol agent over stdio (Zed, JetBrains, Neovim).
    Acp(AcpArgs),
}

/// The run flags the server front ends (`cadre mcp`, `cadre acp`) share with `-p`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Model as provider/model-id (e.g. anthropic/claude-sonnet-4-5), or a model id with
    /// --provider.
    #[arg(long)]
    pub model: Option<String>,

    /// Provider of --model.
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,

    /// API key for the provider of --model, for this process only. It is redacted from output
    /// and sessions and no command sees it.
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<Secret>,

    /// --api-key read from a file (one line): other processes can read a command line
    /// before cadre hides the key in it, but not a file only you can read.
    #[arg(long, value_name = "PATH", conflicts_with = "api_key")]
    pub api_key_file: Option<PathBuf>,

    /// Thinking level: off, minimal, low, medium, high, xhigh, max.
    #[arg(long)]
    pub thinking: Option<String>,

    /// Trust this project (loads its agents, .cadre/settings.json and .mcp.json).
    #[arg(long)]
    pub trust: bool,

    /// Plan mode: subagents may only be planning roles, and nothing gets edit/write tools.
    #[arg(long)]
    pub plan: bool,

    /// Directory where sessions are stored, instead of CADRE_HOME/sessions/--<cwd>--.
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,

    /// Spend at most this many US dollars in this session, subagents included (list prices
    /// from the model table). Requests past it are refused; tasks end `partial`.
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    pub max_cost_usd: Option<f64>,

    /// Spend at most this many tokens in this session, subagents included (fresh input,
    /// cache writes and output; cache reads are not counted).
    #[arg(long, value_name = "N", value_parser = parse_tokens)]
    pub max_tokens: Option<u64>,
}

pub(crate) fn parse_usd(s: &str) -> Result<f64, String> {
    match s.trim().trim_start_matches('$').parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!(
            "`{s}` is not a number of US dollars above 0 (e.g. 0.50)"
        )),
    }
}

pub(crate) fn parse_tokens(s: &str) -> Result<u64, String> {
    match s.trim().replace(['_', ','], "").parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "`{s}` is not a whole number of tokens above 0 (e.g. 200000)"
        )),
    }
}

impl RunArgs {
    /// `--max-cost-usd` and `--max-tokens` as the host takes them.
    pub fn budget(&self) -> cadre_core::budget::Limits {
        cadre_core::budget::Limits {
            max_cost_usd: self.max_cost_usd,
            max_tokens: self.max_tokens,
        }
    }
}

impl ServeArgs {
    /// `--max-cost-usd` and `--max-tokens` as the host takes them.
    pub fn budget(&self) -> cadre_core::budget::Limits {
        cadre_core::budget::Limits {
            max_cost_usd: self.max_cost_usd,
            max_tokens: self.max_tokens,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// Serve streamable HTTP on this address (e.g. 127.0.0.1:8765) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,

    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, clap::Args)]
pub struct AcpArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, clap::Args)]
pub struct ToolArgs {
    /// Run `bash` as a writing child's bash runs: contained within the current directory's
    /// project (its writer boundary, private TMPDIR and tree fingerprint), reaping its processes.
    #[arg(long)]
    pub writer: bool,
    /// Tool name (read, bash, edit, write, grep, find, ls).
    pub name: String,
    /// Arguments as a JSON object.
    #[arg(default_value = "{}")]
    pub args: String,
}

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Wire format the scripted model speaks.
    #[arg(long, value_enum, default_value = "anthropic")]
    pub wire: Wire,
    /// Keep the demo directory instead of deleting it.
    #[arg(long)]
    pub keep: bool,
    /// Print every event as JSON instead of the readable transcript.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Wire {
    Anthropic,
    Openai,
}

#[derive(Debug, clap::Args)]
pub struct BenchTuiArgs {
    /// Live tasks on the panel.
    #[arg(long, default_value_t = 100)]
    pub tasks: usize,
    #[arg(long, default_value_t = 200)]
    pub cols: u16,
    #[arg(long, default_value_t = 50)]
    pub rows: u16,
    /// How long to measure, in seconds.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Turn events per task per second.
    #[arg(long, default_value_t = 1.0)]
    pub rate: f64,
}

#[derive(Debug, clap::Args)]
pub struct FakeServerArgs {
    /// Scenario to serve: `read-once` (one read, then an answer) or `echo`.
    #[arg(long, default_value = "read-once")]
    pub scenario: String,
    /// Write the server's port to this file once listening.
    #[arg(long)]
    pub port_file: Option<PathBuf>,
}
