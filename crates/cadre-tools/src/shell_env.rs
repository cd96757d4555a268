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

/// The scrubbing of a bash command given no environment of its session: cadre's
/// environment without the variables whose names mark credentials. A session's own
/// ([`crate::BashTool::with_shell_env`]: its settings' allowlist, its model's key) is passed
/// to its tools, never kept here.
pub fn process_shell_env() -> &'static ShellEnv {
    PROCESS_SHELL_ENV.get_or_init(|| ShellEnv::scrubbed(std::env::vars_os(), &[], &[]))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

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
}
