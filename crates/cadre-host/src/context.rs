//! What every root session of one process shares: the home, the project and its trust, the
//! settings, the model registry and the provider client. Loaded once, before any session.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use cadre_core::config::{CadreHome, Settings, TrustStore, load_settings, project_root};
use cadre_core::roles::ProjectTrust;
use cadre_core::session::{
    SESSION_DIR_VAR, SessionArg, SessionDirSources, resolve_session_arg, session_dir,
};
use cadre_llm::registry::{Env, ProcessEnv};
use cadre_llm::{HttpProvider, Model, ModelRegistry, Provider, RetryControl, RetryPolicy};
use cadre_protocol::ThinkingLevel;
use cadre_tools::shell_env::ShellEnv;

use crate::options::SessionChoice;

/// Overrides the delay before the first retry (doubled for each further one).
pub const RETRY_BASE_VAR: &str = "CADRE_RETRY_BASE_MS";
/// Overrides how long a silent stream is waited on before it is abandoned and retried.
pub const IDLE_TIMEOUT_VAR: &str = "CADRE_IDLE_TIMEOUT_MS";

/// Models tried, in order, when neither `--model` nor settings name one.
const DEFAULT_MODELS: &[&str] = &[
    "anthropic/claude-sonnet-4-5",
    "openai/gpt-5",
    "openrouter/anthropic/claude-sonnet-4.5",
];

/// The process-wide part of a host.
pub struct HostContext {
    pub home: CadreHome,
    pub cwd: PathBuf,
    pub project_root: PathBuf,
    pub trust: ProjectTrust,
    pub settings: Settings,
    pub registry: Arc<ModelRegistry>,
    pub provider: Arc<dyn Provider>,
    /// The provider's retry switches (RPC `set_auto_retry`, `abort_retry`).
    pub retry: Arc<RetryControl>,
    /// The configured MCP servers (SPEC I7), started by each root session.
    pub mcp: cadre_mcp::Configured,
    /// What the person should be told about the files read (`note: …`): Pi's settings keys
    /// left out, stored OAuth entries skipped.
    pub notes: Vec<String>,
    /// The environment this context's bash commands start from (S5, S8): set by
    /// [`HostContext::install_shell_env`] for its session's model and settings. Per context —
    /// an ACP client's second session with other settings gets its own.
    shell_env: std::sync::Mutex<Option<Arc<ShellEnv>>>,
}

/// `--api-key` for this run: the key of `model`'s provider, over every other source. Cloned
/// (never printed: no `Debug`) by a front end that loads the context again, so a reload keeps it.
#[derive(Clone)]
pub struct RuntimeKey {
    /// The model name it came with (`provider/id`, or an id the registry resolves).
    pub model: String,
    pub key: String,
}

impl HostContext {
    /// Load everything for a run in `cwd`; `trust_flag` is `--trust`.
    pub fn load(cwd: &Path, trust_flag: bool, key: Option<RuntimeKey>) -> Result<HostContext> {
        let home = CadreHome::from_env().context("cannot locate CADRE_HOME")?;
        HostContext::load_in(home, cwd, trust_flag, key)
    }

    /// [`HostContext::load`] with an explicit home (the demo's own).
    pub fn load_in(
        home: CadreHome,
        cwd: &Path,
        trust_flag: bool,
        key: Option<RuntimeKey>,
    ) -> Result<HostContext> {
        // Private before anything is written in it (sessions, task outputs, logs).
        let private = match home.ensure_private() {
            Ok(note) => note,
            Err(e) => Some(format!("warning: {e}")),
        };
        hide_key_files(&home);
        let root = project_root(cwd);
        let trust = match TrustStore::load(&home) {
            Ok(store) => ProjectTrust::from_store(&store, &root, trust_flag),
            Err(_) if trust_flag => ProjectTrust::Trusted,
            Err(e) => ProjectTrust::Untrusted {
                reason: format!("the trust store cannot be read ({e})"),
            },
        };
        let trusted = matches!(trust, ProjectTrust::Trusted);
        let loaded = load_settings(&home, Some(&root), trusted)?;
        let mut notes: Vec<String> = private.into_iter().collect();
        notes.extend(loaded.notes.iter().map(|n| format!("note: {n}")));
        let settings = loaded.settings;
        let mcp = crate::mcp::configured(&home, &root, trusted);
        let mut registry = ModelRegistry::load(home.root(), &ProcessEnv)?;
        notes.extend(registry.auth_notes().iter().map(|n| format!("note: {n}")));
        // Every stored key is a secret of this process, not only the one in use: a tool can
        // read the file it came from (S5).
        cadre_protocol::redact::set_secrets(registry.stored_secrets());
        if let Some(key) = key {
            let provider = registry.provider_of(&key.model)?;
            cadre_protocol::redact::set_secrets([key.key.clone()]);
            registry.set_runtime_api_key(&provider, key.key);
        }
        let policy = retry_policy(&ProcessEnv, &settings)?;
        let provider = HttpProvider::new(policy);
        let retry = provider.retry_control();
        Ok(HostContext {
            home,
            cwd: cwd.to_path_buf(),
            project_root: root,
            trust,
            settings,
            registry: Arc::new(registry),
            provider: Arc::new(provider),
            retry,
            mcp,
            notes,
            shell_env: std::sync::Mutex::new(None),
        })
    }

    /// `flag` (`--model`), else the settings' default, else the first built-in default with
    /// credentials.
    pub fn pick_model(&self, flag: Option<&str>) -> Result<Model> {
        pick_model(
            &self.registry,
            flag,
            self.settings.default_model_name(),
            &self.home,
        )
    }

    /// `flag` (`--thinking`), else the settings' default level.
    pub fn pick_thinking(&self, flag: Option<&str>) -> Result<ThinkingLevel> {
        match flag {
            Some(s) => parse_thinking(s),
            None => Ok(self.settings.default_thinking_level.unwrap_or_default()),
        }
    }

    /// Register `model`'s key as a secret of this process (S5): redacted wherever it appears.
    pub fn register_secret(model: &Model) {
        cadre_protocol::redact::set_secrets(model.api_key.iter().cloned());
    }

    /// Every bash command of this context's sessions runs without credentials: not by a
    /// credential-like name, and not `model`'s key under any name (S5, S8), with this
    /// context's `shellEnv.allow`.
    pub fn install_shell_env(&self, model: &Model) -> Result<()> {
        let allow = self.settings.shell_env_allow().map_err(|e| anyhow!(e))?;
        let secrets: Vec<String> = model.api_key.iter().cloned().collect();
        Self::register_secret(model);
        let hidden = cadre_llm::registry::hidden_credentials().iter().cloned();
        let env = ShellEnv::scrubbed(std::env::vars_os(), &allow, &secrets)
            .restoring(hidden, &allow, &secrets);
        *self
            .shell_env
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(env));
        Ok(())
    }

    /// The environment bash commands of this context start from ([`Self::install_shell_env`];
    /// before it, the process's environment scrubbed by name).
    pub fn shell_env(&self) -> Arc<ShellEnv> {
        let installed = self
            .shell_env
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        installed.unwrap_or_else(|| Arc::new(cadre_tools::shell_env::process_shell_env().clone()))
    }
}

impl HostContext {
    /// The directory this run's sessions are stored in and looked up from: `flag`
    /// (`--session-dir`), else `CADRE_SESSION_DIR`, else the settings' `sessionDir`, else
    /// `CADRE_HOME/sessions/--<cwd>--` (Pi's order).
    pub fn session_dir(&self, flag: Option<&Path>) -> PathBuf {
        let env = std::env::var(SESSION_DIR_VAR).ok();
        let user_home = cadre_llm::registry::home_dir(&ProcessEnv);
        session_dir(
            &SessionDirSources {
                flag,
                env: env.as_deref(),
                settings: self.settings.session_dir(),
                user_home: user_home.as_deref(),
            },
            self.home.root(),
            &self.cwd,
        )
    }

    /// `choice` with a `--session` argument resolved to its file (an id prefix by Pi's rules);
    /// an id that matches no session, or several, is an error and nothing is created.
    pub fn resolve_session(&self, choice: &SessionChoice, dir: &Path) -> Result<SessionChoice> {
        let SessionChoice::Named(arg) = choice else {
            return Ok(choice.clone());
        };
        let (SessionArg::Existing(path) | SessionArg::New(path)) =
            resolve_session_arg(arg, &self.cwd, dir, &self.home.sessions_dir())?;
        Ok(SessionChoice::Path(path))
    }
}

/// A thinking level by name, or an error listing the names.
pub fn parse_thinking(s: &str) -> Result<ThinkingLevel> {
    ThinkingLevel::parse(s).ok_or_else(|| {
        anyhow!("unknown thinking level {s:?} (use off, minimal, low, medium, high, xhigh or max)")
    })
}

/// `--model`, else the settings' default, else the first built-in default with credentials.
pub fn pick_model(
    registry: &ModelRegistry,
    flag: Option<&str>,
    from_settings: Option<String>,
    home: &CadreHome,
) -> Result<Model> {
    if let Some(name) = flag.map(str::to_string).or(from_settings) {
        return Ok(registry.resolve(&name)?);
    }
    for name in DEFAULT_MODELS {
        if let Ok(model) = registry.resolve(name) {
            return Ok(model);
        }
    }
    bail!("{}", no_default_model(registry, home))
}

/// Most models named in the "no model configured" error.
const READY_MODELS_SHOWN: usize = 5;

/// Why no model was picked and what would fix it. Models that could be called (a models.json
/// provider with a key) are named, since `--model` with one of them is the quickest fix; the
/// last built-in default's own error (about OpenRouter's key) would only mislead.
fn no_default_model(registry: &ModelRegistry, home: &CadreHome) -> String {
    let ready: Vec<String> = registry
        .list()
        .into_iter()
        .filter(|m| m.has_credentials && m.unsupported.is_none())
        .map(|m| m.full_name)
        .collect();
    if ready.is_empty() {
        return format!(
            "no model configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY, \
             or add a provider to {} and pass --model provider/id (`cadre --list-models` shows \
             the known models)",
            home.models_json().display()
        );
    }
    let mut shown = ready
        .iter()
        .take(READY_MODELS_SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ready.len() > READY_MODELS_SHOWN {
        shown.push_str(", …");
    }
    format!(
        "no model configured: pass --model provider/id (with credentials: {shown}), set \
         defaultProvider and defaultModel in {}, or set ANTHROPIC_API_KEY, OPENAI_API_KEY or \
         OPENROUTER_API_KEY",
        home.settings_json().display()
    )
}

/// Pi's retry defaults with the request deadlines of settings' `requestTimeouts`, and the base
/// delay and the idle deadline overridable from the environment (`CADRE_RETRY_BASE_MS`,
/// `CADRE_IDLE_TIMEOUT_MS`, which win over the settings): slow links and local models want a
/// longer idle timeout, tests and benchmarks a shorter one. A server's `retry-after` still
/// governs its own waits.
pub fn retry_policy(env: &dyn Env, settings: &Settings) -> Result<RetryPolicy> {
    let mut policy = RetryPolicy::default();
    policy.timeouts = settings
        .request_timeouts(policy.timeouts)
        .map_err(|e| anyhow!(e))?;
    if let Some(ms) = env_millis(env, RETRY_BASE_VAR)? {
        policy.base_delay = ms;
    }
    if let Some(ms) = env_millis(env, IDLE_TIMEOUT_VAR)? {
        if ms.is_zero() {
            bail!("{IDLE_TIMEOUT_VAR} must be more than 0");
        }
        policy.timeouts.idle = ms;
    }
    Ok(policy)
}

/// A duration in whole milliseconds from `name`; unset or blank is `None`.
fn env_millis(env: &dyn Env, name: &str) -> Result<Option<Duration>> {
    let Some(raw) = env.var(name).filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    raw.trim()
        .parse::<u64>()
        .map(|ms| Some(Duration::from_millis(ms)))
        .map_err(|_| anyhow!("{name} must be a whole number of milliseconds, not {raw:?}"))
}

/// The files that hold credentials cadre uses — its own and Pi's `auth.json` and
/// `models.json`, the MCP HTTP server's tokens, the MCP servers' logs — are read by no tool and
/// no sandboxed command of this process (`cadre_tools::hidden`).
pub fn hide_key_files(home: &CadreHome) {
    let root = home.root();
    let mut paths = vec![
        root.join("auth.json"),
        root.join("models.json"),
        root.join("mcp-http"),
        root.join("logs"),
    ];
    if let Some(pi) = cadre_llm::registry::pi_agent_dir(&ProcessEnv) {
        paths.push(pi.join("auth.json"));
        paths.push(pi.join("models.json"));
    }
    cadre_tools::hidden::hide(paths);
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_llm::registry::MapEnv;

    #[test]
    fn retry_policy_defaults_without_overrides() {
        assert_eq!(
            retry_policy(&MapEnv::new(), &Settings::default()).unwrap(),
            RetryPolicy::default()
        );
        let blank = MapEnv::new().with(RETRY_BASE_VAR, " ");
        assert_eq!(
            retry_policy(&blank, &Settings::default()).unwrap(),
            RetryPolicy::default()
        );
    }

    #[test]
    fn retry_policy_takes_overrides_in_milliseconds() {
        let env = MapEnv::new()
            .with(RETRY_BASE_VAR, "5")
            .with(IDLE_TIMEOUT_VAR, " 250 ");
        let policy = retry_policy(&env, &Settings::default()).unwrap();
        assert_eq!(policy.base_delay, Duration::from_millis(5));
        assert_eq!(policy.timeouts.idle, Duration::from_millis(250));
        assert_eq!(policy.max_attempts, RetryPolicy::default().max_attempts);
        let zero_base = MapEnv::new().with(RETRY_BASE_VAR, "0");
        assert_eq!(
            retry_policy(&zero_base, &Settings::default())
                .unwrap()
                .base_delay,
            Duration::ZERO
        );
    }

    #[test]
    fn retry_policy_takes_request_timeouts_from_settings_under_the_environment() {
        let mut settings = Settings::default();
        settings.raw.insert(
            "requestTimeouts".into(),
            serde_json::json!({"firstContentMs": 300000, "idleMs": 90000, "totalMs": 600000}),
        );
        let policy = retry_policy(&MapEnv::new(), &settings).unwrap();
        assert_eq!(policy.timeouts.first_content, Duration::from_secs(300));
        assert_eq!(policy.timeouts.idle, Duration::from_secs(90));
        assert_eq!(policy.timeouts.total, Duration::from_secs(600));
        let env = MapEnv::new().with(IDLE_TIMEOUT_VAR, "250");
        let policy = retry_policy(&env, &settings).unwrap();
        assert_eq!(policy.timeouts.idle, Duration::from_millis(250));
        assert_eq!(policy.timeouts.total, Duration::from_secs(600));
        settings
            .raw
            .insert("requestTimeouts".into(), serde_json::json!({"idleMs": 0}));
        let err = retry_policy(&MapEnv::new(), &settings).unwrap_err();
        assert!(err.to_string().contains("requestTimeouts.idleMs"), "{err}");
    }

    #[test]
    fn retry_policy_rejects_bad_values_naming_the_variable() {
        for (name, value) in [
            (RETRY_BASE_VAR, "fast"),
            (RETRY_BASE_VAR, "-1"),
            (RETRY_BASE_VAR, "1.5"),
            (IDLE_TIMEOUT_VAR, "0"),
            (IDLE_TIMEOUT_VAR, "99999999999999999999999"),
        ] {
            let err =
                retry_policy(&MapEnv::new().with(name, value), &Settings::default()).unwrap_err();
            assert!(err.to_string().contains(name), "{name}={value}: {err}");
        }
    }
}
