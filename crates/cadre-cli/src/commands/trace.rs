//! `cadre trace [SESSION] [-o FILE]` (SPEC I5) and `cadre --export SESSION [OUTPUT]` (Pi's
//! flag): a root session's run, or one conversation, as a self-contained HTML page. The pages
//! are built by the host (`cadre_host::trace`, `cadre_host::export`); this finds the session
//! and writes the file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use cadre_core::session::{SessionArg, latest_session, load_session, resolve_session_arg};
use cadre_host::HostContext;

use super::print_out;

#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// The root session: a session file, or the start of a session id. Default: this
    /// project's newest session.
    #[arg(value_name = "SESSION")]
    pub session: Option<String>,
    /// Where the page goes (`-` for stdout). Default: cadre-trace-<session-id>.html here.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Directory the sessions are stored in, as a run's --session-dir.
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,
}

pub fn run(args: &TraceArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let ctx = HostContext::load(&cwd, false, None)?;
    let dir = ctx.session_dir(args.session_dir.as_deref());
    let session = match &args.session {
        Some(arg) => existing_session(&ctx, arg, &dir)?,
        None => latest_session(&dir).with_context(|| {
            format!(
                "no session in {} to trace; name one: cadre trace SESSION",
                dir.display()
            )
        })?,
    };
    let trace = cadre_host::trace::render_trace(&session, &ctx.home.tasks_dir())?;
    let default = PathBuf::from(format!("cadre-trace-{}.html", file_safe(&trace.session_id)));
    write_out(args.output.as_deref().unwrap_or(&default), &trace.page)
}

/// `cadre --export SESSION [OUTPUT]`: one session as HTML, Pi's default name
/// (`cadre-session-<file stem>.html`) when no output is given.
pub fn export(
    session: &Path,
    output: Option<&str>,
    session_dir: Option<&Path>,
) -> Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let ctx = HostContext::load(&cwd, false, None)?;
    let dir = ctx.session_dir(session_dir);
    let path = existing_session(&ctx, &session.to_string_lossy(), &dir)?;
    let size = std::fs::metadata(&path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if size > cadre_host::trace::SESSION_BYTES {
        bail!(
            "{} is {size} bytes, more than the {} an export reads",
            path.display(),
            cadre_host::trace::SESSION_BYTES
        );
    }
    let loaded = load_session(&path).map_err(anyhow::Error::from)?;
    let stem = path
        .file_stem()
        .map_or_else(|| "session".into(), |s| s.to_string_lossy().into_owned());
    let title = format!("cadre session {}", loaded.session_id());
    let page = cadre_host::export::render(&title, &loaded.messages());
    let default = PathBuf::from(format!("cadre-session-{stem}.html"));
    let out = output.map_or(default, PathBuf::from);
    write_out(&out, &page)
}

/// The file `arg` names (a path, or an id prefix by `--session`'s rules); it must exist.
fn existing_session(ctx: &HostContext, arg: &str, dir: &Path) -> Result<PathBuf> {
    match resolve_session_arg(arg, &ctx.cwd, dir, &ctx.home.sessions_dir())? {
        SessionArg::Existing(path) => Ok(ctx.cwd.join(path)),
        SessionArg::New(path) => bail!("{}: no such session file", path.display()),
    }
}

/// An id as part of a file name: only what is safe in one.
fn file_safe(id: &str) -> String {
    let safe: String = id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(64)
        .collect();
    if safe.is_empty() {
        "session".into()
    } else {
        safe
    }
}

fn write_out(path: &Path, page: &str) -> Result<ExitCode> {
    if path == Path::new("-") {
        // A page on stdout is raw HTML, not a report: written as is.
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(page.as_bytes());
        let _ = out.flush();
        return Ok(ExitCode::SUCCESS);
    }
    cadre_host::export::write_page(path, page)?;
    print_out(&format!("Exported to: {}\n", path.display()));
    Ok(ExitCode::SUCCESS)
}
