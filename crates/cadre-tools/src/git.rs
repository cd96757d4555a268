//! The one hardened git: every git cadre runs itself (worktree add, snapshot and remove, the
//! review's diff, apply) goes through [`own_git`], and the `inspect` policy's git gets the same
//! environment through [`harden_env`]. Nothing else in cadre spawns git.
//!
//! A repository names programs in its configuration — filters, textconv and diff drivers,
//! fsmonitor, hooks, pagers, credential helpers — and git runs them with the rights of whoever
//! runs git. cadre's own git runs outside every sandbox, so a program named by a repository
//! that arrived with its `.git`, or by a writing child that edited it, would run with cadre's
//! rights (as root: read the provider key out of cadre's memory). So git here reads no
//! configuration it does not need and runs none of the programs the rest names:
//!
//! - no system or global files (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`);
//! - the repository's own scopes — `.git/config`, `config.worktree` (read once
//!   `extensions.worktreeConfig` is on), and everything they include or `includeIf` — listed
//!   as git itself reads them (no `--local`, which misses the worktree scope), and every
//!   program-valued key overridden on git's command-line level, above all of them;
//! - besides, every file those include, whatever the include's condition, followed file by
//!   file: an `includeIf "onbranch:…"` or `"gitdir:…"` that does not hold when cadre lists the
//!   configuration can hold for a git cadre's git starts (the checkout in the new worktree of
//!   `git worktree add -b`), so its programs are overridden too;
//! - attributes from the empty tree (`GIT_ATTR_SOURCE`), `core.attributesFile` off: committed
//!   `.gitattributes` attach no filter, diff or textconv driver;
//! - hooks, fsmonitor, pagers, signing, submodule recursion, automatic gc and the network off;
//! - an environment built from nothing but `PATH`, `HOME`, the locale and `TMPDIR`: no
//!   credential and no `GIT_*` variable of cadre's own reaches it;
//! - a bound on how long it may run.
//!
//! When the configuration cannot be listed (git fails, takes too long, prints too much), git
//! does not run: an unchecked configuration is never run with.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// The empty tree: git's attributes read from it are none (git ≥ 2.42; older gits ignore the
/// variable, and the program-valued keys are overridden anyway).
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Configuration given to git on its command-line level, above every file it reads.
const FIXED_OVERRIDES: [(&str, &str); 16] = [
    // fsmonitor is a program git runs on `status`; hooks are programs too.
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    // A file of attributes named by the configuration could attach drivers too.
    ("core.attributesFile", "/dev/null"),
    // A bare-looking directory a repository commits (HEAD, objects/, refs/, config) is never
    // discovered as a repository, so its config is never read.
    ("safe.bareRepository", "explicit"),
    ("protocol.allow", "never"),
    ("credential.helper", ""),
    // `git log` would run gpg on every signed commit; a commit would sign.
    ("log.showSignature", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    // A submodule's git would read the submodule's own configuration, which is not listed.
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    // Automatic maintenance starts another git in the background.
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("core.untrackedCache", "false"),
];

/// Whether a configuration key (lower case, as `git config --name-only` prints it) names a
/// program git may run, or a pager.
fn runs_a_program(key: &str) -> bool {
    const EXACT: [&str; 12] = [
        "core.fsmonitor",
        "core.pager",
        "core.sshcommand",
        "core.askpass",
        "core.editor",
        "core.gitproxy",
        "core.alternaterefscommand",
        "diff.external",
        "sequence.editor",
        "gpg.program",
        "uploadpack.packobjectshook",
        "credential.helper",
    ];
    const SUFFIXES: [(&str, &[&str]); 9] = [
        ("diff.", &[".textconv", ".command"]),
        ("merge.", &[".driver"]),
        ("filter.", &[".clean", ".smudge", ".process"]),
        ("credential.", &[".helper"]),
        ("gpg.", &[".program"]),
        ("difftool.", &[".cmd", ".path"]),
        ("mergetool.", &[".cmd", ".path"]),
        ("trailer.", &[".command", ".cmd"]),
        ("remote.", &[".uploadpack", ".receivepack", ".vcs"]),
    ];
    EXACT.contains(&key)
        || key.starts_with("pager.")
        || key.starts_with("alias.")
        || SUFFIXES.iter().any(|(prefix, ends)| {
            key.starts_with(prefix) && ends.iter().any(|end| key.ends_with(end))
        })
}

/// The value that neutralises a program-valued key: pagers off, everything else empty — git
/// then runs nothing (an empty filter is no filter) or fails to run "" (a diff through a
/// repository's own driver fails closed) instead of running what the configuration names.
fn neutral_value(key: &str) -> &'static str {
    if key.starts_with("pager.") || key == "core.fsmonitor" {
        "false"
    } else if key == "core.pager" {
        "cat"
    } else {
        ""
    }
}

/// How long the listing of the repository's own configuration may take.
const CONFIG_LIST_TIMEOUT: Duration = Duration::from_secs(5);
/// The listing is read up to this; a larger one is refused rather than checked in part.
const CONFIG_LIST_CAP: usize = 4 << 20;
/// How long one of cadre's own git commands may take (a snapshot of a very large tree).
const OWN_GIT_TIMEOUT: Duration = Duration::from_secs(600);

/// An override of a repository's program-valued key: the key as git must be given it, and the
/// value that neutralises it.
pub type Override = (String, &'static str);

/// The key as git must be given it: section and name in lower case, a subsection exactly as
/// written (`diff.EVIL.textconv` is not `diff.evil.textconv`).
fn split_key(key: &str) -> Option<(String, Option<&str>, String)> {
    let (section, rest) = key.split_once('.')?;
    match rest.rsplit_once('.') {
        Some((sub, name)) => Some((
            section.to_ascii_lowercase(),
            Some(sub),
            name.to_ascii_lowercase(),
        )),
        None => Some((
            section.to_ascii_lowercase(),
            None,
            rest.to_ascii_lowercase(),
        )),
    }
}

/// The overrides of a `git config --list --show-scope --name-only --null` listing (scope and
/// key, each ended by NUL): every program-valued key of a file's scope. The command-line scope
/// is cadre's own overrides.
fn overrides_of_listing(listing: &[u8]) -> Vec<Override> {
    let mut keys: Vec<String> = Vec::new();
    let mut fields = listing.split(|&b| b == 0);
    while let (Some(scope), Some(raw)) = (fields.next(), fields.next()) {
        if scope != b"command" {
            keys.push(String::from_utf8_lossy(raw).into_owned());
        }
    }
    overrides_of_keys(keys.iter().map(String::as_str))
}

/// The overrides of the program-valued keys among `keys` (as a configuration listing prints
/// them), one per key.
fn overrides_of_keys<'a>(keys: impl IntoIterator<Item = &'a str>) -> Vec<Override> {
    let mut found: Vec<String> = Vec::new();
    for key in keys {
        let Some((section, sub, name)) = split_key(key.trim()) else {
            continue;
        };
        let lower = match sub {
            Some(sub) => format!("{section}.{}.{name}", sub.to_ascii_lowercase()),
            None => format!("{section}.{name}"),
        };
        if runs_a_program(&lower) {
            found.push(match sub {
                Some(sub) => format!("{section}.{sub}.{name}"),
                None => lower,
            });
        }
    }
    found.sort();
    found.dedup();
    found
        .into_iter()
        .map(|k| {
            let v = neutral_value(&k.to_ascii_lowercase());
            (k, v)
        })
        .collect()
}

/// Overrides for every program-valued key in the configuration git reads in `cwd` under
/// [`harden_env`], or could read there: the repository's `.git/config`, its worktree config and
/// everything they include, whatever the include's condition.
/// A repository that arrived with its `.git` (an archive, a copied checkout), or whose
/// configuration a child changed, can name any program there; git's command-line level, where
/// these go, wins over all of it. Outside a repository there is nothing to override. Fails
/// closed: a listing that fails otherwise, times out or is too large is an error.
///
/// The active listing (`--includes`) follows only the includes whose condition holds now; an
/// `includeIf "onbranch:…"`, `"gitdir:…"` or `"hasconfig:…"` can hold for a git that cadre's
/// git starts (the checkout of `git worktree add -b`, in a new worktree on a new branch). So
/// every include of every repository configuration file is also followed by hand, its
/// condition ignored ([`included_files`]), and every program-valued key found in any of them
/// is overridden too.
pub async fn program_overrides(cwd: &Path) -> Result<Vec<Override>, String> {
    let list = [
        "config",
        "--list",
        "--show-scope",
        "--name-only",
        "--null",
        "--includes",
    ]
    .map(OsStr::new);
    let dirs = [
        "rev-parse",
        "--path-format=absolute",
        "--absolute-git-dir",
        "--git-common-dir",
    ]
    .map(OsStr::new);
    // Independent: run side by side.
    let (listing, dirs) = tokio::join!(config_git(cwd, &list), config_git(cwd, &dirs));
    let listing = listing?;
    let mut overrides = overrides_of_listing(&listing);
    let Some(roots) = repository_config_files(dirs, &listing)? else {
        return Ok(overrides);
    };
    for (_, keys) in included_files(cwd, roots).await? {
        overrides.extend(overrides_of_keys(keys.iter().map(|(k, _)| k.as_str())));
    }
    overrides.sort();
    overrides.dedup();
    Ok(overrides)
}

/// Run a `git` that reads configuration in `cwd`, under the hardened environment, and return
/// its standard output; an error if it fails, takes too long or prints too much.
async fn config_git(cwd: &Path, args: &[&OsStr]) -> Result<Vec<u8>, String> {
    let what = args
        .iter()
        .take(2)
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let mut cmd = Command::new("git");
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    minimal_env(&mut cmd);
    harden_env(&mut cmd, std::iter::empty(), &[]);
    let child = cmd
        .spawn()
        .map_err(|e| format!("git cannot be started: {e}"))?;
    let output = match tokio::time::timeout(CONFIG_LIST_TIMEOUT, child.wait_with_output()).await {
        Ok(Ok(out)) if out.status.success() => out.stdout,
        Ok(Ok(out)) => {
            return Err(format!(
                "`git {what}` failed ({}): {}",
                out.status,
                first_line(&out.stderr)
            ));
        }
        Ok(Err(e)) => return Err(format!("`git {what}` failed: {e}")),
        Err(_) => {
            return Err(format!(
                "`git {what}` took more than {} s",
                CONFIG_LIST_TIMEOUT.as_secs()
            ));
        }
    };
    if output.len() > CONFIG_LIST_CAP {
        return Err("the repository's git configuration is too large to check".into());
    }
    Ok(output)
}

/// The repository configuration files git may read, from `dirs`, the output of `git rev-parse
/// --path-format=absolute --absolute-git-dir --git-common-dir` there: the common directory's
/// `config` and `config.worktree`, and the git directory's `config.worktree` (whether or not
/// `extensions.worktreeConfig` is on). `None` where git finds no repository — then `listing`,
/// the active configuration git read there, has no repository scope either; a repository whose
/// configuration was read but whose directories git cannot name is an error.
fn repository_config_files(
    dirs: Result<Vec<u8>, String>,
    listing: &[u8],
) -> Result<Option<Vec<PathBuf>>, String> {
    let dirs = match dirs {
        Ok(dirs) => dirs,
        Err(why) => {
            let read_a_repository = listing
                .split(|&b| b == 0)
                .step_by(2)
                .any(|scope| !scope.is_empty() && scope != b"command");
            return if read_a_repository {
                Err(why)
            } else {
                Ok(None)
            };
        }
    };
    let text = String::from_utf8(dirs)
        .map_err(|_| "git names its directories in a path that is not UTF-8".to_string())?;
    let mut lines = text.lines();
    let (Some(git_dir), Some(common_dir)) = (lines.next(), lines.next()) else {
        return Err("git did not name the repository's directories".into());
    };
    let (git_dir, common_dir) = (PathBuf::from(git_dir), PathBuf::from(common_dir));
    let mut files = vec![
        common_dir.join("config"),
        common_dir.join("config.worktree"),
    ];
    if git_dir != common_dir {
        files.push(git_dir.join("config.worktree"));
    }
    Ok(Some(files))
}

/// How deep includes are followed (git's own limit).
const MAX_INCLUDE_DEPTH: usize = 10;
/// How many configuration files are listed at most; a repository that includes more is refused.
const MAX_CONFIG_FILES: usize = 64;

/// One configuration file's entries: key (section and name lower case, subsection as written)
/// and value (`None` for a key written without `=`).
type ConfigEntries = Vec<(String, Option<String>)>;

/// Every configuration file reachable from `roots` through `include.path` and
/// `includeIf.<condition>.path`, whatever the condition, with its entries as written in that
/// file alone. Paths resolve as git resolves them: `~/` in `HOME`, a relative one against the
/// including file's directory; a file that does not exist is skipped, as git skips it.
/// Bounded: 10 levels deep, 64 files; a file seen before is not read again.
async fn included_files(
    cwd: &Path,
    roots: Vec<PathBuf>,
) -> Result<Vec<(PathBuf, ConfigEntries)>, String> {
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut total = 0;
    let mut files = Vec::new();
    let mut queue: std::collections::VecDeque<(PathBuf, usize)> =
        roots.into_iter().map(|p| (p, 0)).collect();
    while let Some((path, depth)) = queue.pop_front() {
        if !path.exists() {
            continue;
        }
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if seen.contains(&key) {
            continue;
        }
        if seen.len() >= MAX_CONFIG_FILES {
            return Err(format!(
                "the repository's git configuration includes more than {MAX_CONFIG_FILES} files"
            ));
        }
        seen.push(key);
        let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        let listed = config_git(
            cwd,
            &[
                "config".as_ref(),
                "--file".as_ref(),
                path.as_os_str(),
                "--list".as_ref(),
                "--null".as_ref(),
                "--no-includes".as_ref(),
            ],
        )
        .await?;
        total += listed.len();
        if total > CONFIG_LIST_CAP {
            return Err("the repository's git configuration is too large to check".into());
        }
        let entries = entries_of_file_listing(&listed);
        for value in include_paths(&entries) {
            if depth + 1 > MAX_INCLUDE_DEPTH {
                return Err(format!(
                    "the repository's git configuration includes deeper than                      {MAX_INCLUDE_DEPTH} levels"
                ));
            }
            queue.push_back((resolve_include(&dir, value)?, depth + 1));
        }
        files.push((path, entries));
    }
    Ok(files)
}

/// The entries of a `git config --file F --list --null` listing: key, a newline and the value,
/// each ended by NUL; a key without a value has no newline.
fn entries_of_file_listing(listing: &[u8]) -> ConfigEntries {
    listing
        .split(|&b| b == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let text = String::from_utf8_lossy(entry);
            match text.split_once('\n') {
                Some((key, value)) => (key.to_string(), Some(value.to_string())),
                None => (text.into_owned(), None),
            }
        })
        .collect()
}

/// The values of a file's `include.path` and `includeIf.<condition>.path` entries.
fn include_paths(entries: &ConfigEntries) -> impl Iterator<Item = &str> {
    entries.iter().filter_map(|(key, value)| {
        let (section, sub, name) = split_key(key)?;
        let include = match sub {
            None => section == "include",
            Some(_) => section == "includeif",
        };
        (include && name == "path")
            .then_some(value.as_deref())
            .flatten()
    })
}

/// Where git finds the file an include names from a file in `dir`: `~/…` in `HOME`, a
/// relative path against `dir`. `~user/…` is refused rather than looked up.
fn resolve_include(dir: &Path, value: &str) -> Result<PathBuf, String> {
    let path = if value == "~" || value.starts_with("~/") {
        let home = std::env::var_os("HOME")
            .ok_or_else(|| format!("the include `{value}` names HOME, which is not set"))?;
        PathBuf::from(home).join(value.trim_start_matches('~').trim_start_matches('/'))
    } else if value.starts_with('~') {
        return Err(format!(
            "the include `{value}` names another user's home, which is not looked up"
        ));
    } else {
        dir.join(value)
    };
    Ok(path)
}

fn first_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().next().unwrap_or("").trim();
    line.chars().take(200).collect()
}

/// The environment of cadre's own git, built from nothing: the search path, home, locale and
/// temporary directory. No credential, no `GIT_*` variable, nothing else of cadre's.
fn minimal_env(cmd: &mut Command) {
    cmd.env_clear();
    for name in ["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"] {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
}

/// Harden a command that runs git (cadre's own, or the `inspect` policy's bash): no system or
/// global configuration, `inherited` variables that start with `GIT_` removed (a `GIT_DIR`
/// there must not choose the repository), attributes from the empty tree, the
/// [`FIXED_OVERRIDES`] and `local` ones found in the repository's own configuration
/// ([`program_overrides`]), no pager, no prompts, no optional index writes, and ripgrep
/// without a configuration file. The `inspect` policy refuses the options that would choose
/// another repository (`-C`, `--git-dir`, `--work-tree`, `-c`) and environment assignments.
pub fn harden_env(
    cmd: &mut Command,
    inherited: impl IntoIterator<Item = OsString>,
    local: &[Override],
) {
    for name in inherited {
        if name.to_str().is_none_or(|n| n.starts_with("GIT_")) {
            cmd.env_remove(&name);
        }
    }
    cmd.env_remove("RIPGREP_CONFIG_PATH");
    let set: [(&str, &OsStr); 7] = [
        ("GIT_CONFIG_NOSYSTEM", "1".as_ref()),
        ("GIT_CONFIG_GLOBAL", "/dev/null".as_ref()),
        ("GIT_ATTR_SOURCE", EMPTY_TREE.as_ref()),
        ("GIT_PAGER", "cat".as_ref()),
        ("GIT_TERMINAL_PROMPT", "0".as_ref()),
        ("GIT_OPTIONAL_LOCKS", "0".as_ref()),
        ("PAGER", "cat".as_ref()),
    ];
    for (name, value) in set {
        cmd.env(name, value);
    }
    let overrides = FIXED_OVERRIDES
        .iter()
        .map(|(k, v)| (*k, *v))
        .chain(local.iter().map(|(k, v)| (k.as_str(), *v)));
    let mut count = 0;
    for (i, (key, value)) in overrides.enumerate() {
        cmd.env(format!("GIT_CONFIG_KEY_{i}"), key);
        cmd.env(format!("GIT_CONFIG_VALUE_{i}"), value);
        count = i + 1;
    }
    cmd.env("GIT_CONFIG_COUNT", count.to_string());
}

/// Why one of cadre's own git commands did not give an answer.
#[derive(Debug, thiserror::Error)]
pub enum OwnGitError {
    #[error("the repository's git configuration could not be checked: {0}")]
    Unchecked(String),
    #[error("git could not be run: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("git took more than {} s", OWN_GIT_TIMEOUT.as_secs())]
    TimedOut,
}

/// Run one of cadre's own git commands in `dir`: hardened as the module says, with
/// `extra_env` (only `GIT_INDEX_FILE` and the like, set by cadre) and `stdin` fed from a task
/// of its own (a large patch cannot deadlock against a full stdout pipe). Returns git's output
/// whatever its status; callers judge it.
pub async fn own_git<I, S>(
    dir: &Path,
    args: I,
    extra_env: &[(&str, &OsStr)],
    stdin: Option<Vec<u8>>,
) -> Result<Output, OwnGitError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let local = program_overrides(dir)
        .await
        .map_err(OwnGitError::Unchecked)?;
    let args: Vec<S> = args.into_iter().collect();
    let mut cmd = Command::new("git");
    minimal_env(&mut cmd);
    harden_env(&mut cmd, std::iter::empty(), &local);
    if args.first().is_some_and(|a| a.as_ref() == "apply") {
        // `git apply` with an attribute source dereferences a repository it has not set up
        // (git 2.47 dies of SIGSEGV). It reads attributes only for end-of-line conversion, and
        // the program-valued keys are overridden, so no filter can run without it.
        cmd.env_remove("GIT_ATTR_SOURCE");
    }
    cmd.arg("-C").arg(dir).args(&args);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(OwnGitError::Spawn)?;
    let feeder = match (stdin, child.stdin.take()) {
        (Some(bytes), Some(mut pipe)) => Some(tokio::spawn(async move {
            // A write error means git exited early; its status and stderr tell why.
            let _ = pipe.write_all(&bytes).await;
        })),
        _ => None,
    };
    let output = match tokio::time::timeout(OWN_GIT_TIMEOUT, child.wait_with_output()).await {
        Ok(result) => result.map_err(OwnGitError::Spawn)?,
        Err(_) => return Err(OwnGitError::TimedOut),
    };
    if let Some(feeder) = feeder {
        let _ = feeder.await;
    }
    Ok(output)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn subsections_keep_their_case() {
        assert_eq!(
            split_key("Diff.EVIL.TextConv"),
            Some(("diff".into(), Some("EVIL"), "textconv".into()))
        );
        assert_eq!(
            split_key("core.fsmonitor"),
            Some(("core".into(), None, "fsmonitor".into()))
        );
        assert_eq!(
            split_key("remote.a.b.url"),
            Some(("remote".into(), Some("a.b"), "url".into()))
        );
        assert_eq!(split_key("nodot"), None);
    }

    #[test]
    fn program_valued_keys_are_recognised() {
        for key in [
            "core.fsmonitor",
            "core.pager",
            "core.sshcommand",
            "diff.external",
            "diff.evil.textconv",
            "diff.evil.command",
            "filter.lfs.process",
            "filter.x.clean",
            "merge.ours.driver",
            "pager.log",
            "alias.st",
            "credential.https://x.helper",
            "gpg.ssh.program",
            "uploadpack.packobjectshook",
            "trailer.sign.command",
            "remote.origin.uploadpack",
            "difftool.x.cmd",
        ] {
            assert!(runs_a_program(key), "{key}");
        }
        for key in [
            "core.bare",
            "user.name",
            "diff.renames",
            "filter.x.required",
            "remote.origin.url",
        ] {
            assert!(!runs_a_program(key), "{key}");
        }
        assert_eq!(neutral_value("pager.log"), "false");
        assert_eq!(neutral_value("core.pager"), "cat");
        assert_eq!(neutral_value("diff.evil.textconv"), "");
    }

    #[test]
    fn a_listing_gives_one_override_per_program_key() {
        let listing = b"local\0core.bare\0worktree\0Filter.EVIL.clean\0local\0filter.EVIL.clean\0\
            local\0user.name\0command\0core.pager\0local\0core.fsmonitor\0";
        assert_eq!(
            overrides_of_listing(listing),
            [
                ("core.fsmonitor".to_string(), "false"),
                ("filter.EVIL.clean".to_string(), "")
            ]
        );
    }

    #[test]
    fn the_environment_drops_inherited_git_variables_and_overrides_programs() {
        let mut cmd = Command::new("git");
        harden_env(
            &mut cmd,
            [OsString::from("GIT_DIR"), OsString::from("HOME")],
            &[("diff.evil.textconv".into(), "")],
        );
        let envs: Vec<(String, Option<String>)> = cmd
            .as_std()
            .get_envs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        let get = |name: &str| envs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        assert_eq!(get("GIT_DIR"), Some(None), "removed");
        assert_eq!(get("HOME"), None, "untouched");
        assert_eq!(get("GIT_CONFIG_NOSYSTEM"), Some(Some("1".into())));
        assert_eq!(get("GIT_ATTR_SOURCE"), Some(Some(EMPTY_TREE.into())));
        let n = FIXED_OVERRIDES.len();
        assert_eq!(get("GIT_CONFIG_COUNT"), Some(Some((n + 1).to_string())));
        assert_eq!(
            get(&format!("GIT_CONFIG_KEY_{n}")),
            Some(Some("diff.evil.textconv".into()))
        );
        assert_eq!(get("GIT_CONFIG_KEY_0"), Some(Some("core.fsmonitor".into())));
    }

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    /// A repository whose worktree-scoped configuration (read once `extensions.worktreeConfig`
    /// is on; `git config --list --local` does not show it) names a clean filter that every
    /// file takes, and which writes a marker when it runs.
    fn repo_with_worktree_filter() -> (tempfile::TempDir, std::path::PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        std::fs::write(dir.join("a.txt"), "one\n").unwrap();
        git(dir, &["add", "a.txt"]);
        git(dir, &["commit", "-qm", "one"]);
        let marker = dir.join("ran");
        git(dir, &["config", "extensions.worktreeConfig", "true"]);
        git(
            dir,
            &[
                "config",
                "--worktree",
                "filter.evil.clean",
                &format!("touch {}; cat", marker.display()),
            ],
        );
        std::fs::write(dir.join(".gitattributes"), "* filter=evil\n").unwrap();
        std::fs::write(dir.join(".git/info/attributes"), "* filter=evil\n").unwrap();
        std::fs::write(dir.join("a.txt"), "two\n").unwrap();
        (tmp, marker)
    }

    #[tokio::test]
    async fn the_worktree_scope_is_listed_and_its_filter_never_runs() {
        let (tmp, marker) = repo_with_worktree_filter();
        let overrides = program_overrides(tmp.path()).await.unwrap();
        assert!(
            overrides.contains(&("filter.evil.clean".to_string(), "")),
            "{overrides:?}"
        );
        let index = tmp.path().join(".git/index.cadre-test");
        let env = [("GIT_INDEX_FILE", index.as_os_str())];
        let out = own_git(tmp.path(), ["add", "-A", "--", "."], &env, None)
            .await
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(!marker.exists(), "the repository's filter ran");
        // Control: git as a user runs it, so the test would see the attack.
        git(tmp.path(), &["add", "-A", "--", "."]);
        assert!(marker.exists(), "control: the filter should run unhardened");
    }

    /// A repository on `main` whose `.git/config` includes, on a condition that does not hold
    /// in it now, a file naming a smudge filter that every file takes and that writes a marker.
    fn repo_with_conditional_filter(condition: &str) -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("a.txt"), "one\n").unwrap();
        git(dir, &["add", "a.txt"]);
        git(dir, &["commit", "-qm", "one"]);
        let marker = dir.join("ran");
        std::fs::write(
            dir.join(".git/evil.cfg"),
            format!(
                "[filter \"x\"]\n\tsmudge = \"touch {}; cat\"\n",
                marker.display()
            ),
        )
        .unwrap();
        let mut config = std::fs::read_to_string(dir.join(".git/config")).unwrap();
        config.push_str(&format!("[includeIf \"{condition}\"]\n\tpath = evil.cfg\n"));
        std::fs::write(dir.join(".git/config"), config).unwrap();
        std::fs::write(dir.join(".git/info/attributes"), "* filter=x\n").unwrap();
        (tmp, marker)
    }

    /// `git worktree add -b cadre-x` through cadre's own git: the checkout in the new worktree
    /// is on `cadre-x` (and in `.git/worktrees/…`), where the include holds.
    async fn own_worktree_add_runs_no_filter(condition: &str) {
        let (tmp, marker) = repo_with_conditional_filter(condition);
        let overrides = program_overrides(tmp.path()).await.unwrap();
        assert!(
            overrides.contains(&("filter.x.smudge".to_string(), "")),
            "{overrides:?}"
        );
        let wt = tmp.path().join("wt");
        let out = own_git(
            tmp.path(),
            [
                "worktree".as_ref(),
                "add".as_ref(),
                "-b".as_ref(),
                "cadre-x".as_ref(),
                wt.as_os_str(),
                "HEAD".as_ref(),
            ],
            &[],
            None,
        )
        .await
        .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(wt.join("a.txt").exists());
        assert!(!marker.exists(), "the conditionally included filter ran");
        // Control: a plain git in a worktree on that branch runs it, so the test sees the attack.
        git(
            tmp.path(),
            &["worktree", "add", "-b", "cadre-y", "wt2", "HEAD"],
        );
        assert!(marker.exists(), "control: the include should hold there");
    }

    #[tokio::test]
    async fn an_include_on_the_new_branch_names_no_program_cadre_s_worktree_runs() {
        own_worktree_add_runs_no_filter("onbranch:cadre-*").await;
    }

    #[tokio::test]
    async fn an_include_on_a_linked_worktree_s_gitdir_names_no_program_cadre_s_worktree_runs() {
        own_worktree_add_runs_no_filter("gitdir:**/worktrees/**").await;
    }

    #[tokio::test]
    async fn includes_are_followed_whatever_their_condition_and_bounded() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        let git_dir = dir.join(".git");
        // A chain: config -> a.cfg (relative) -> sub/b.cfg (relative to a.cfg's directory)
        // -> ../a.cfg (a cycle), and a missing file, which git skips.
        std::fs::create_dir(git_dir.join("sub")).unwrap();
        let mut config = std::fs::read_to_string(git_dir.join("config")).unwrap();
        config.push_str(
            "[include]\n\tpath = a.cfg\n[includeIf \"hasconfig:remote.*.url:x\"]\n\
             \tpath = missing.cfg\n",
        );
        std::fs::write(git_dir.join("config"), config).unwrap();
        std::fs::write(
            git_dir.join("a.cfg"),
            "[diff \"A\"]\n\ttextconv = a\n[includeIf \"gitdir:/nowhere/\"]\n\tpath = sub/b.cfg\n",
        )
        .unwrap();
        std::fs::write(
            git_dir.join("sub/b.cfg"),
            "[core]\n\tfsmonitor = b\n[include]\n\tpath = ../a.cfg\n",
        )
        .unwrap();
        let overrides = program_overrides(dir).await.unwrap();
        assert_eq!(
            overrides,
            [
                ("core.fsmonitor".to_string(), "false"),
                ("diff.A.textconv".to_string(), "")
            ]
        );
        // A file that cannot be listed is an error, not a file passed over.
        std::fs::write(git_dir.join("missing.cfg"), "[broken\n").unwrap();
        assert!(program_overrides(dir).await.is_err());
        std::fs::remove_file(git_dir.join("missing.cfg")).unwrap();
        // A chain deeper than git's own limit is refused.
        for i in 0..12 {
            std::fs::write(
                git_dir.join(format!("d{i}.cfg")),
                format!("[include]\n\tpath = d{}.cfg\n", i + 1),
            )
            .unwrap();
        }
        std::fs::write(git_dir.join("d12.cfg"), "[user]\n\tname = x\n").unwrap();
        let mut config = std::fs::read_to_string(git_dir.join("config")).unwrap();
        config.push_str("[includeIf \"onbranch:nope\"]\n\tpath = d0.cfg\n");
        std::fs::write(git_dir.join("config"), config).unwrap();
        assert!(program_overrides(dir).await.is_err());
    }

    #[test]
    fn include_paths_resolve_as_git_resolves_them() {
        let dir = Path::new("/r/.git");
        assert_eq!(
            resolve_include(dir, "x.cfg").unwrap(),
            Path::new("/r/.git/x.cfg")
        );
        assert_eq!(resolve_include(dir, "/abs").unwrap(), Path::new("/abs"));
        if let Some(home) = std::env::var_os("HOME") {
            assert_eq!(
                resolve_include(dir, "~/h.cfg").unwrap(),
                Path::new(&home).join("h.cfg")
            );
        }
        assert!(resolve_include(dir, "~root/x").is_err());
        let entries = entries_of_file_listing(
            b"include.path\na\0includeif.onbranch:x.path\nb\0includeif.x.y.z\nc\0x.flag\0",
        );
        assert_eq!(include_paths(&entries).collect::<Vec<_>>(), ["a", "b"]);
    }

    #[tokio::test]
    async fn outside_a_repository_there_is_nothing_to_override() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(program_overrides(tmp.path()).await.unwrap(), []);
    }
}
