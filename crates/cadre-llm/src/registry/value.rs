//! Pi's value resolution for `apiKey` and header values: `!command`, an env var name, or a literal.

use std::process::{Command, Stdio};

use super::env::Env;

/// How a configured value will be obtained. Never holds the resolved secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueSource {
    /// `!command`: run with `sh -c` each time the model is resolved.
    Command,
    /// The name of an environment variable; `set` tells whether it currently has a value.
    EnvVar { name: String, set: bool },
    /// Used as written.
    Literal,
}

/// The outcome of resolving one configured value.
#[derive(Clone, PartialEq, Eq)]
pub enum Resolved {
    Value(String),
    /// The value names an environment variable that is not set.
    UnsetEnv(String),
}

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resolved::Value(_) => f.write_str("Value(<redacted>)"),
            Resolved::UnsetEnv(name) => write!(f, "UnsetEnv({name})"),
        }
    }
}

/// True for strings shaped like an environment variable name (`MY_API_KEY`).
///
/// Pi sends an unset variable's name as a literal key, which can only earn a 401. cadre instead
/// reports the unset variable, so the user learns what to export. Real keys contain lower-case
/// letters or dashes, so they never match.
pub fn looks_like_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_uppercase() || c == '_' => {}
        _ => return false,
    }
    s.len() >= 2 && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Classify `raw` without running anything (Pi's availability check does not run commands).
pub fn classify(raw: &str, env: &dyn Env) -> ValueSource {
    if raw.starts_with('!') {
        ValueSource::Command
    } else if env.var(raw).is_some() {
        ValueSource::EnvVar {
            name: raw.to_string(),
            set: true,
        }
    } else if looks_like_env_name(raw) {
        ValueSource::EnvVar {
            name: raw.to_string(),
            set: false,
        }
    } else {
        ValueSource::Literal
    }
}

/// A `!command` that failed or printed nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandFailure(pub String);

/// Resolve `raw`: run a `!command`, read a set env var, report an unset env-like name, or return
/// the literal.
pub fn resolve(raw: &str, env: &dyn Env) -> Result<Resolved, CommandFailure> {
    if let Some(cmd) = raw.strip_prefix('!') {
        return run_command(cmd).map(Resolved::Value);
    }
    if let Some(v) = env.var(raw) {
        return Ok(Resolved::Value(v));
    }
    if looks_like_env_name(raw) {
        return Ok(Resolved::UnsetEnv(raw.to_string()));
    }
    Ok(Resolved::Value(raw.to_string()))
}

/// Run `cmd` with `sh -c`; its trimmed stdout is the value. The command's output is never put in
/// an error message (it may be the secret); stderr is, cut short, because it explains failures.
fn run_command(cmd: &str) -> Result<String, CommandFailure> {
    // The user's own command (`!pass show …`) gets the credential variables cadre hid.
    let output = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .envs(super::env::hidden_credentials().iter().cloned())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| CommandFailure(format!("cannot run `sh -c`: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stderr = stderr.trim();
        let mut msg = format!("command exited with {}", output.status);
        if !stderr.is_empty() {
            let cut: String = stderr.chars().take(200).collect();
            msg.push_str(": ");
            msg.push_str(&cut);
        }
        return Err(CommandFailure(msg));
    }
    let stdout = String::from_utf8(output.stdout)
        .map_err(|_| CommandFailure("command printed non-UTF-8 output".to_string()))?;
    let value = stdout.trim();
    if value.is_empty() {
        return Err(CommandFailure("command printed nothing".to_string()));
    }
    Ok(value.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::registry::env::MapEnv;

    #[test]
    fn env_name_shape() {
        for yes in ["MY_API_KEY", "OPENAI_API_KEY", "_X", "KEY2", "AB"] {
            assert!(looks_like_env_name(yes), "{yes}");
        }
        for no in [
            "", "A", "ollama", "sk-abc", "My_Key", "2KEY", "KEY-1", "sk_LIVE",
        ] {
            assert!(!looks_like_env_name(no), "{no}");
        }
    }

    #[test]
    fn classify_never_runs_commands() {
        let env = MapEnv::new().with("SET_KEY", "v");
        assert_eq!(classify("!exit 1", &env), ValueSource::Command);
        assert_eq!(
            classify("SET_KEY", &env),
            ValueSource::EnvVar {
                name: "SET_KEY".into(),
                set: true
            }
        );
        assert_eq!(
            classify("UNSET_KEY", &env),
            ValueSource::EnvVar {
                name: "UNSET_KEY".into(),
                set: false
            }
        );
        assert_eq!(classify("sk-literal", &env), ValueSource::Literal);
        // A lower-case name that happens to be set is still an env var (Pi's rule).
        let env = env.with("lower", "x");
        assert!(matches!(
            classify("lower", &env),
            ValueSource::EnvVar { set: true, .. }
        ));
    }

    #[test]
    fn resolves_literal_env_and_unset() {
        let env = MapEnv::new().with("MY_KEY", "from-env");
        assert_eq!(
            resolve("MY_KEY", &env).unwrap(),
            Resolved::Value("from-env".into())
        );
        assert_eq!(
            resolve("OTHER_KEY", &env).unwrap(),
            Resolved::UnsetEnv("OTHER_KEY".into())
        );
        assert_eq!(
            resolve("ollama", &env).unwrap(),
            Resolved::Value("ollama".into())
        );
    }

    #[test]
    fn runs_commands_and_trims_stdout() {
        let env = MapEnv::new();
        assert_eq!(
            resolve("!printf '  secret-1\\n\\n'", &env).unwrap(),
            Resolved::Value("secret-1".into())
        );
    }

    #[test]
    fn command_failures_are_reported_without_stdout() {
        let env = MapEnv::new();
        let err = resolve("!echo leaked-secret; echo oops >&2; exit 3", &env).unwrap_err();
        assert!(err.0.contains("oops"), "{}", err.0);
        assert!(err.0.contains('3'), "{}", err.0);
        assert!(!err.0.contains("leaked-secret"));
        let err = resolve("!true", &env).unwrap_err();
        assert!(err.0.contains("nothing"));
    }

    #[test]
    fn resolved_debug_is_redacted() {
        let dbg = format!("{:?}", Resolved::Value("sk-secret".into()));
        assert!(!dbg.contains("sk-secret"));
    }
}
