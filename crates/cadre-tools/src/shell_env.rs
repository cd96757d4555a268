//! The environment bash commands run with (S5, S8): without credentials, and for the `inspect`
//! policy with a git that runs no program a repository could name.
//!
//! Every bash command — the root's and every child's — starts from cadre's environment minus
//! the variables that hold credentials: those whose names say so (`*KEY*`, `*TOKEN*`,
//! `*SECRET*`, `*PASSWORD*`, `*PASSWD*`, `*CREDENTIAL*`, `*PRIVATE*`, any case) and those whose
//! value is a provider key cadre resolved, whatever their name. A settings allowlist passes
//! named variables on anyway (a user's `GITHUB_TOKEN` for `gh`). So `env`, `cat
//! /proc/self/environ` or a repository's test script cannot show the model a key, and the key
//! never reaches a session file through a tool result.

use std::ffi::{OsStr, OsString};
use std::sync::OnceLock;

use tokio::process::Command;

/// Name parts that mark a variable as a credential wherever they stand (matched in upper case).
const SECRET_NAME_PARTS: [&str; 10] = [
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "PRIVATE",
    "COOKIE",
    "WEBHOOK",
];

/// Words that mark a credential only as a whole `_`-separated word: `PAT` in `GITHUB_PAT` but
/// not in `PATH`, `PASS` in `SMTP_PASS` but not in `PASSIVE`.
const SECRET_NAME_WORDS: [&str; 12] = [
    "PAT", "AUTH", "PASS", "PWD", "JWT", "DSN", "SESSION", "CONN", "CONNSTR", "APIKEY", "HEADERS",
    "HOOK",
];

/// Names that hold no credential although a word above says so: the working directory, the
/// ssh agent's socket (the agent never hands out keys; commands without the network cannot
/// reach it), and the desktop session's bookkeeping.
fn is_known_harmless(upper: &str) -> bool {
    matches!(upper, "PWD" | "OLDPWD" | "SSH_AUTH_SOCK")
        || upper.starts_with("XDG_")
        || upper.starts_with("DBUS_")
}

/// Secret values shorter than this are not matched by value: too likely to be a common word.
const MIN_SECRET_VALUE: usize = 8;

/// Which variables a command's environment leaves out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellEnv {
    removed: Vec<OsString>,
    /// Allowed credentials that are no longer in cadre's own environment (cadre takes them
    /// out at start), set for each command.
    restored: Vec<(OsString, OsString)>,
}

/// Whether a variable's name marks it as a credential.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if is_known_harmless(&upper) {
        return false;
    }
    SECRET_NAME_PARTS.iter().any(|part| upper.contains(part))
        || upper
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| SECRET_NAME_WORDS.contains(&word))
}

/// Markers inside a value that mean it carries a credential, whatever the variable is called:
/// connection strings, query-string passwords, key files pasted into a variable.
const SECRET_VALUE_MARKERS: [&str; 8] = [
    "password=",
    "passwd=",
    "pwd=",
    "accountkey=",
    "sharedaccesskey=",
    "\"private_key\"",
    "-----begin",
    "authorization=",
];

/// Whether a value carries a credential by its shape: a URL with a password, or one of
/// [`SECRET_VALUE_MARKERS`] (any case).
pub fn is_secret_value(value: &str) -> bool {
    if is_url_with_password(value) {
        return true;
    }
    let lower = value.to_ascii_lowercase();
    SECRET_VALUE_MARKERS.iter().any(|m| lower.contains(m))
}

/// Whether a variable holds a credential, by its name or by its value's shape.
pub fn is_credential(name: &str, value: &str) -> bool {
    is_secret_name(name) || is_secret_value(value)
}

/// Whether a value is a URL with a password in it (`postgres://user:pw@host/db`,
/// `https://user:pw@proxy`), whatever the variable is called.
pub fn is_url_with_password(value: &str) -> bool {
    let Some((_, rest)) = value.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority.rsplit_once('@').is_some_and(|(userinfo, _)| {
        userinfo
            .split_once(':')
            .is_some_and(|(_, pw)| !pw.is_empty())
    })
}

impl ShellEnv {
    /// The variables of `vars` to leave out: credential names not in `allow`, and any
    /// variable whose value contains one of `secrets` (also when allowed: a key cadre
    /// resolved for a provider is never passed on).
    pub fn scrubbed(
        vars: impl IntoIterator<Item = (OsString, OsString)>,
        allow: &[String],
        secrets: &[String],
    ) -> ShellEnv {
        let secrets: Vec<&str> = secrets
            .iter()
            .map(String::as_str)
            .filter(|s| s.len() >= MIN_SECRET_VALUE)
            .collect();
        let removed = vars
            .into_iter()
            .filter(|(name, value)| {
                let by_name = name
                    .to_str()
                    .is_none_or(|n| is_secret_name(n) && !allow.iter().any(|a| a == n));
                let value = value.to_string_lossy();
                by_name || is_secret_value(&value) || secrets.iter().any(|s| value.contains(s))
            })
            .map(|(name, _)| name)
            .collect();
        ShellEnv {
            removed,
            restored: Vec::new(),
        }
    }

    /// Also pass these variables, held outside the environment, to every command: those of
    /// `vars` that `allow` names, unless they hold one of `secrets`.
    pub fn restoring(
        mut self,
        vars: impl IntoIterator<Item = (String, String)>,
        allow: &[String],
        secrets: &[String],
    ) -> ShellEnv {
        self.restored = vars
            .into_iter()
            .filter(|(name, value)| {
                allow.iter().any(|a| a == name)
                    && !secrets
                        .iter()
                        .any(|s| s.len() >= MIN_SECRET_VALUE && value.contains(s.as_str()))
            })
            .map(|(n, v)| (OsString::from(n), OsString::from(v)))
            .collect();
        self
    }

    /// The variables left out, in the order of the environment they came from.
    pub fn removed(&self) -> &[OsString] {
        &self.removed
    }

    /// Leave the variables out of `cmd`'s environment.
    pub fn apply(&self, cmd: &mut Command) {
        for name in &self.removed {
            cmd.env_remove(name);
        }
        for (name, value) in &self.restored {
            cmd.env(name, value);
        }
    }
}

/// `path` without its relative and empty entries (an empty entry means the working directory):
/// with `PATH=node_modules/.bin:…`, a repository's committed `node_modules/.bin/git` or `bash`
/// would run in place of the real one. `None` when nothing is dropped.
pub fn absolute_path_only(path: &OsStr) -> Option<OsString> {
    let entries: Vec<std::path::PathBuf> = std::env::split_paths(path).collect();
    let kept: Vec<&std::path::PathBuf> = entries.iter().filter(|p| p.is_absolute()).collect();
    if kept.len() == entries.len() {
        return None;
    }
    std::env::join_paths(kept).ok()
}

static PROCESS_SHELL_ENV: OnceLock<ShellEnv> = OnceLock::new();

/// Declare how this process's bash commands are scrubbed (settings allowlist, resolved keys).
/// Only the first call counts; without one, [`process_shell_env`] scrubs by name alone.
pub fn set_process_shell_env(env: ShellEnv) {
    let _ = PROCESS_SHELL_ENV.set(env);
}

/// The scrubbing of this process's bash commands.
pub fn process_shell_env() -> &'static ShellEnv {
    PROCESS_SHELL_ENV.get_or_init(|| ShellEnv::scrubbed(std::env::vars_os(), &[], &[]))
}

/// The empty tree: git's attributes read from it are none, so no repository-committed
/// `.gitattributes` attaches a diff, textconv or filter driver (git ≥ 2.42; older gits ignore
/// the variable).
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Configuration given to git on its command-line level, above every file it reads.
const GIT_OVERRIDES: [(&str, &str); 7] = [
    // fsmonitor is a program git runs on `status`; hooks are programs too.
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    // A bare-looking directory a repository commits (HEAD, objects/, refs/, config) is never
    // discovered as a repository, so its config is never read.
    ("safe.bareRepository", "explicit"),
    ("protocol.allow", "never"),
    ("credential.helper", ""),
    // `git log` would run gpg on every signed commit.
    ("log.showSignature", "false"),
];

/// Whether a configuration key (lower case, as `git config --name-only` prints it) names a
/// program git may run, or a pager.
fn runs_a_program(key: &str) -> bool {
    const EXACT: [&str; 10] = [
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
    ];
    const SUFFIXES: [(&str, &[&str]); 5] = [
        ("diff.", &[".textconv", ".command"]),
        ("merge.", &[".driver"]),
        ("filter.", &[".clean", ".smudge", ".process"]),
        ("credential.", &[".helper"]),
        ("gpg.", &[".program"]),
    ];
    EXACT.contains(&key)
        || key.starts_with("pager.")
        || key.starts_with("alias.")
        || key == "credential.helper"
        || SUFFIXES.iter().any(|(prefix, ends)| {
            key.starts_with(prefix) && ends.iter().any(|end| key.ends_with(end))
        })
}

/// The value that neutralises a program-valued key: pagers off, everything else empty — git
/// then fails to run "" (a diff through a repository's own driver fails closed) instead of
/// running what the repository's configuration names.
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
const CONFIG_LIST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// The listing is read up to this; a larger one is refused rather than checked in part.
const CONFIG_LIST_CAP: usize = 4 << 20;

/// Which configuration a listing covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigScope {
    /// What git reads besides system and global files: the repository's `.git/config`, its
    /// worktree config and what they include (the `inspect` policy's git has no other).
    AllButUser,
    /// The repository's own files only: cadre's own git keeps the user's configuration.
    RepositoryOnly,
}

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

/// Overrides for every program-valued key in the configuration git would read in `cwd`
/// (`scope`): a repository that arrived with its `.git` (an archive, a copied checkout), or
/// whose `.git/config` a writing child changed, can name any program there; git's
/// command-line level, where these go, wins over all of it. Fails closed: a listing that
/// fails, times out or is too large is an error, never "nothing to override".
pub async fn program_overrides(
    cwd: &std::path::Path,
    scope: ConfigScope,
) -> Result<Vec<(String, &'static str)>, String> {
    let mut cmd = Command::new("git");
    cmd.args(["config", "--list", "--name-only", "--null", "--includes"]);
    if scope == ConfigScope::RepositoryOnly {
        cmd.arg("--local");
    }
    cmd.current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    match scope {
        ConfigScope::AllButUser => {
            harden_for_inspect(&mut cmd, std::env::vars_os().map(|(name, _)| name), &[])
        }
        ConfigScope::RepositoryOnly => apply_git_overrides(&mut cmd, &[]),
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("git cannot be started: {e}"))?;
    let output = match tokio::time::timeout(CONFIG_LIST_TIMEOUT, child.wait_with_output()).await {
        Ok(Ok(out)) if out.status.success() => out.stdout,
        // `--local` outside a repository: there is no repository configuration to fear (and a
        // broken one stops git itself).
        Ok(Ok(_)) if scope == ConfigScope::RepositoryOnly => return Ok(Vec::new()),
        Ok(Ok(out)) => return Err(format!("`git config --list` failed ({})", out.status)),
        Ok(Err(e)) => return Err(format!("`git config --list` failed: {e}")),
        Err(_) => {
            return Err(format!(
                "`git config --list` took more than {} s",
                CONFIG_LIST_TIMEOUT.as_secs()
            ));
        }
    };
    if output.len() > CONFIG_LIST_CAP {
        return Err("the repository's git configuration is too large to check".into());
    }
    let mut keys: Vec<String> = Vec::new();
    for raw in output.split(|&b| b == 0).filter(|k| !k.is_empty()) {
        let key = String::from_utf8_lossy(raw);
        let Some((section, sub, name)) = split_key(key.trim()) else {
            continue;
        };
        let lower = match sub {
            Some(sub) => format!("{section}.{}.{name}", sub.to_ascii_lowercase()),
            None => format!("{section}.{name}"),
        };
        if runs_a_program(&lower) {
            keys.push(match sub {
                Some(sub) => format!("{section}.{sub}.{name}"),
                None => lower,
            });
        }
    }
    keys.sort();
    keys.dedup();
    Ok(keys
        .into_iter()
        .map(|k| {
            let v = neutral_value(&k.to_ascii_lowercase());
            (k, v)
        })
        .collect())
}

/// The overrides of every git cadre runs itself (worktree snapshots, the review's diff
/// statistics): programs git would run on its own (fsmonitor, hooks, a pager) off, and the
/// repository's program-valued keys ([`program_overrides`]) given as `local`. The user's own
/// configuration is otherwise kept.
pub fn apply_git_overrides(cmd: &mut Command, local: &[(String, &'static str)]) {
    const OWN: [(&str, &str); 4] = [
        ("core.fsmonitor", "false"),
        ("core.hooksPath", "/dev/null"),
        ("core.pager", "cat"),
        ("log.showSignature", "false"),
    ];
    set_config_overrides(
        cmd,
        OWN.iter()
            .map(|(k, v)| (*k, *v))
            .chain(local.iter().map(|(k, v)| (k.as_str(), *v))),
    );
    cmd.env("GIT_PAGER", "cat").env("GIT_TERMINAL_PROMPT", "0");
}

fn set_config_overrides<'a>(
    cmd: &mut Command,
    overrides: impl Iterator<Item = (&'a str, &'a str)>,
) {
    let mut count = 0;
    for (i, (key, value)) in overrides.enumerate() {
        cmd.env(format!("GIT_CONFIG_KEY_{i}"), key);
        cmd.env(format!("GIT_CONFIG_VALUE_{i}"), value);
        count = i + 1;
    }
    cmd.env("GIT_CONFIG_COUNT", count.to_string());
}

/// Harden git for the `inspect` policy: no system or global configuration, git variables of
/// cadre's own environment removed (a `GIT_DIR` there must not choose the repository), the
/// program-running settings overridden — the fixed ones and `local` ones found in the
/// repository's own configuration ([`program_overrides`]) — no pager, no prompts, no
/// optional index writes, and ripgrep without a configuration file. The policy refuses the
/// options that would choose another repository (`-C`, `--git-dir`, `--work-tree`, `-c`) and
/// environment assignments.
pub fn harden_for_inspect(
    cmd: &mut Command,
    inherited: impl IntoIterator<Item = OsString>,
    local: &[(String, &'static str)],
) {
    for name in inherited {
        if name.to_str().is_none_or(|n| n.starts_with("GIT_")) {
            cmd.env_remove(&name);
        }
    }
    cmd.env_remove("RIPGREP_CONFIG_PATH");
    let set: [(&str, &OsStr); 6] = [
        ("GIT_CONFIG_NOSYSTEM", "1".as_ref()),
        ("GIT_CONFIG_GLOBAL", "/dev/null".as_ref()),
        ("GIT_ATTR_SOURCE", EMPTY_TREE.as_ref()),
        ("GIT_PAGER", "cat".as_ref()),
        ("GIT_TERMINAL_PROMPT", "0".as_ref()),
        ("GIT_OPTIONAL_LOCKS", "0".as_ref()),
    ];
    for (name, value) in set {
        cmd.env(name, value);
    }
    cmd.env("PAGER", "cat");
    set_config_overrides(
        cmd,
        GIT_OVERRIDES
            .iter()
            .map(|(k, v)| (*k, *v))
            .chain(local.iter().map(|(k, v)| (k.as_str(), *v))),
    );
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

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(n, v)| (OsString::from(n), OsString::from(v)))
            .collect()
    }

    #[test]
    fn credentials_are_removed_by_name_in_any_case() {
        let env = ShellEnv::scrubbed(
            vars(&[
                ("ANTHROPIC_API_KEY", "sk-ant-1"),
                ("github_token", "x"),
                ("DB_PASSWORD", "x"),
                ("AWS_SECRET_ACCESS_KEY", "x"),
                ("GOOGLE_APPLICATION_CREDENTIALS", "/k.json"),
                ("SSH_PRIVATE", "x"),
                ("PATH", "/usr/bin"),
                ("HOME", "/root"),
                ("SSH_AUTH_SOCK", "/tmp/agent"),
            ]),
            &[],
            &[],
        );
        let removed: Vec<_> = env.removed().iter().map(|n| n.to_str().unwrap()).collect();
        assert_eq!(
            removed,
            [
                "ANTHROPIC_API_KEY",
                "github_token",
                "DB_PASSWORD",
                "AWS_SECRET_ACCESS_KEY",
                "GOOGLE_APPLICATION_CREDENTIALS",
                "SSH_PRIVATE"
            ]
        );
    }

    #[test]
    fn credential_words_count_only_as_whole_words() {
        for name in [
            "GITHUB_PAT",
            "AZURE_DEVOPS_EXT_PAT",
            "CONSUL_HTTP_AUTH",
            "BASIC_AUTH",
            "SMTP_PASS",
            "MYSQL_PWD",
            "CI_JOB_JWT",
            "SENTRY_DSN",
            "BW_SESSION",
            "SESSION_COOKIE",
            "SLACK_WEBHOOK_URL",
            "GPG_PASSPHRASE",
            "NPM_CONFIG__AUTH",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "PATH",
            "PWD",
            "OLDPWD",
            "SSH_AUTH_SOCK",
            "XDG_SESSION_ID",
            "PASSIVE_MODE",
            "HOME",
            "DBUS_SESSION_BUS_ADDRESS",
            "AUTHOR_NAME",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn values_shaped_like_credentials_are_credentials() {
        for value in [
            "postgresql://h/app?password=x",
            "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=k==",
            "{\"type\": \"service_account\", \"private_key\": \"x\"}",
            "-----BEGIN OPENSSH PRIVATE KEY-----",
        ] {
            assert!(is_secret_value(value), "{value}");
        }
        for value in ["/usr/bin", "en_US.UTF-8", "https://example.com/?q=password"] {
            assert!(!is_secret_value(value), "{value}");
        }
    }

    #[test]
    fn urls_with_passwords_are_credentials_by_value() {
        assert!(is_url_with_password("postgres://app:s3cret@db:5432/x"));
        assert!(is_url_with_password("https://u:p@proxy.example:8080"));
        assert!(!is_url_with_password("https://example.com/a@b"));
        assert!(!is_url_with_password("https://user@host/x"));
        assert!(!is_url_with_password("/usr/bin"));
        let env = ShellEnv::scrubbed(
            vars(&[("DATABASE_URL", "postgres://a:b@h/d"), ("HOME", "/root")]),
            &[],
            &[],
        );
        assert_eq!(env.removed(), [OsString::from("DATABASE_URL")]);
    }

    #[test]
    fn the_allowlist_passes_names_but_never_a_resolved_key() {
        let env = ShellEnv::scrubbed(
            vars(&[
                ("GITHUB_TOKEN", "ghp_abc"),
                ("OPENAI_API_KEY", "sk-live-123456"),
                ("MY_PROXY_SETTING", "https://u:sk-live-123456@proxy"),
                ("SHORT", "abc"),
            ]),
            &["GITHUB_TOKEN".into(), "OPENAI_API_KEY".into()],
            &["sk-live-123456".into(), "abc".into()],
        );
        let removed: Vec<_> = env.removed().iter().map(|n| n.to_str().unwrap()).collect();
        assert_eq!(removed, ["OPENAI_API_KEY", "MY_PROXY_SETTING"]);
    }

    #[test]
    fn allowed_credentials_held_outside_the_environment_are_passed_back() {
        let env = ShellEnv::scrubbed(vars(&[]), &[], &[]).restoring(
            [
                ("GITHUB_TOKEN".to_string(), "ghp_1".to_string()),
                ("OTHER_TOKEN".to_string(), "x".to_string()),
                ("ALIAS_KEY".to_string(), "sk-live-123456".to_string()),
            ],
            &["GITHUB_TOKEN".into(), "ALIAS_KEY".into()],
            &["sk-live-123456".into()],
        );
        assert_eq!(
            env.restored,
            [(OsString::from("GITHUB_TOKEN"), OsString::from("ghp_1"))]
        );
    }

    #[test]
    fn relative_and_empty_path_entries_are_dropped() {
        let clean = absolute_path_only(OsStr::new("node_modules/.bin:/usr/bin::.:/bin")).unwrap();
        assert_eq!(clean, OsString::from("/usr/bin:/bin"));
        assert_eq!(absolute_path_only(OsStr::new("/usr/bin:/bin")), None);
    }

    #[test]
    fn a_name_that_is_not_unicode_is_removed() {
        use std::os::unix::ffi::OsStringExt;
        let odd = OsString::from_vec(vec![b'K', 0xff]);
        let env = ShellEnv::scrubbed([(odd.clone(), OsString::from("v"))], &[], &[]);
        assert_eq!(env.removed(), [odd]);
    }

    #[test]
    fn inspect_git_gets_overrides_and_loses_inherited_git_variables() {
        let mut cmd = Command::new("git");
        harden_for_inspect(
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
        assert_eq!(get("GIT_CONFIG_COUNT"), Some(Some("8".into())));
        assert_eq!(
            get("GIT_CONFIG_KEY_7"),
            Some(Some("diff.evil.textconv".into()))
        );
        assert_eq!(get("GIT_CONFIG_KEY_0"), Some(Some("core.fsmonitor".into())));
        assert_eq!(get("GIT_CONFIG_VALUE_3"), Some(Some("explicit".into())));
    }
}
