//! `cadre trust [PATH]`, `cadre trust --list`, `cadre trust --revoke PATH` (SPEC T4): the
//! projects whose own agents, skills and settings load. Recorded in `CADRE_HOME/trust.json`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use cadre_core::config::{TrustStore, project_root};

use super::{Place, print_out};

#[derive(Debug, clap::Args)]
pub struct TrustArgs {
    /// The directory to trust (default: the current project's root). Its subdirectories are
    /// trusted too, except repositories of their own (a `.git` inside it), which need their own
    /// `cadre trust`.
    #[arg(value_name = "PATH", conflicts_with_all = ["list", "revoke"])]
    pub path: Option<PathBuf>,
    /// List the trusted directories.
    #[arg(long, conflicts_with = "revoke")]
    pub list: bool,
    /// Stop trusting PATH.
    #[arg(long, value_name = "PATH")]
    pub revoke: Option<PathBuf>,
}

pub fn run(args: &TrustArgs) -> Result<ExitCode> {
    let place = Place::from_env()?;
    let mut store = TrustStore::load(&place.home)?;
    if args.list {
        print_out(&list(&store));
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(path) = &args.revoke {
        let path = absolute(&place.cwd, path);
        if !store.revoke(&path)? {
            bail!(
                "{} is not in the trust list ({}); see `cadre trust --list`",
                path.display(),
                store.path().display()
            );
        }
        let mut out = format!("no longer trusted: {}\n", path.display());
        if let Some(by) = store.trusted_by(&path) {
            out.push_str(&format!(
                "note: {} is still trusted through {}\n",
                path.display(),
                by.display()
            ));
        }
        print_out(&out);
        return Ok(ExitCode::SUCCESS);
    }
    let dir = match &args.path {
        Some(path) => absolute(&place.cwd, path),
        None => place.root.clone(),
    };
    if !dir.exists() {
        bail!("{} does not exist", dir.display());
    }
    if !dir.is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    // Trusting it again changes nothing; saying "trusted" again would read as if it had.
    if let Ok(canonical) = dir.canonicalize()
        && store.trusted_by(&canonical) == Some(canonical.as_path())
    {
        print_out(&format!(
            "already trusted: {} (`cadre trust --revoke {}` stops trusting it)\n",
            canonical.display(),
            canonical.display()
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let recorded = store
        .trust(&dir)
        .with_context(|| format!("cannot trust {}", dir.display()))?;
    let mut out = format!(
        "trusted: {}\nIts agents (.cadre/agents, .pi/agents, .claude/agents), skills, .cadre/settings.json and .mcp.json now load, and so do those of its subdirectories; a repository inside it (one with its own .git) is not trusted through it and needs its own `cadre trust`.\n",
        recorded.display()
    );
    // Trusting a subdirectory of a repository does not trust the repository itself.
    let root = project_root(&recorded);
    if root != recorded && !store.is_trusted(&root) {
        out.push_str(&format!(
            "note: {} is inside the project {}, which stays untrusted; run `cadre trust {}` to trust the project\n",
            recorded.display(),
            root.display(),
            root.display()
        ));
    }
    print_out(&out);
    Ok(ExitCode::SUCCESS)
}

fn list(store: &TrustStore) -> String {
    let entries: Vec<&Path> = store.entries().collect();
    if entries.is_empty() {
        return format!(
            "No trusted projects ({}). Trust one with `cadre trust [PATH]`.\n",
            store.path().display()
        );
    }
    let mut out = String::new();
    for entry in entries {
        let missing = if entry.exists() { "" } else { "  (missing)" };
        out.push_str(&format!("{}{missing}\n", entry.display()));
    }
    out
}

fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}
