//! The model registry: built-in providers plus a Pi-compatible `models.json`, resolving
//! `provider/model-id` names to [`Model`]s with their credentials.
//!
//! File lookup: `$CADRE_HOME/models.json`; when that file does not exist, Pi's
//! (`$PI_CODING_AGENT_DIR/models.json`, else `~/.pi/agent/models.json`) is read, never written.
//!
//! Credentials (`apiKey` and header values) follow Pi's value resolution: `!command` runs with
//! `sh -c` when the model is resolved, a set environment variable's name gives its value, anything
//! else is a literal. Environment variables are read once, at load, from the injected [`Env`].
//!
//! Keyless providers: a provider whose base URL is loopback (`localhost`, `127.0.0.0/8`, `::1`)
//! may run without a key — local servers (Ollama, llama.cpp, vLLM) ignore it. A file-defined
//! provider with no `apiKey` but with `headers` is assumed to authenticate through its headers.
//! Every other provider without a key fails with [`RegistryError::MissingCredentials`].
//!
//! Key precedence for a provider: a key set for this run ([`ModelRegistry::set_runtime_api_key`],
//! `--api-key`), the configured `apiKey`, the provider's environment variable, then a key stored
//! in `auth.json` (see [`auth`]).

mod auth;
mod build;
mod builtin;
pub mod env;
mod error;
mod file;
pub mod value;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cadre_protocol::ThinkingLevel;

pub use auth::AuthFile;
pub use build::{DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS};
pub use env::{Env, MapEnv, ProcessEnv, hidden_credentials, hide_credentials, home_dir};
pub use error::RegistryError;
pub use value::ValueSource;

use crate::model::{Api, Compat, Model, ModelCost};
use auth::AuthStore;
use value::Resolved;

/// A model's wire format as configured: one cadre speaks, or one it does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiKind {
    Supported(Api),
    /// Named in the file but not spoken by cadre (e.g. `google-generative-ai`).
    Unsupported(String),
    /// Neither the model nor its provider sets `api`.
    Missing,
}

impl ApiKind {
    pub fn parse(s: &str) -> ApiKind {
        match Api::parse(s) {
            Some(api) => ApiKind::Supported(api),
            None => ApiKind::Unsupported(s.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            ApiKind::Supported(api) => api.as_str(),
            ApiKind::Unsupported(s) => s,
            ApiKind::Missing => "",
        }
    }
}

/// Where a model's definition comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelSource {
    /// Built into cadre (possibly adjusted by `modelOverrides`).
    BuiltIn,
    /// Defined in `models.json`.
    File,
}

/// Which `models.json` was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelsFile {
    /// No file: built-ins only.
    None,
    /// `$CADRE_HOME/models.json`.
    Cadre(PathBuf),
    /// Pi's file, used read-only because cadre has none.
    Pi(PathBuf),
}

impl ModelsFile {
    pub fn path(&self) -> Option<&Path> {
        match self {
            ModelsFile::None => None,
            ModelsFile::Cadre(p) | ModelsFile::Pi(p) => Some(p),
        }
    }
}

/// One entry of [`ModelRegistry::list`].
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// `provider/id`.
    pub full_name: String,
    pub provider: String,
    pub id: String,
    pub name: String,
    /// The configured API name (empty when none is set).
    pub api: String,
    pub reasoning: bool,
    pub context_window: u64,
    pub max_tokens: u64,
    /// Whether a credential is configured and present (commands are not run to find out).
    pub has_credentials: bool,
    pub source: ModelSource,
    /// Why the model cannot be called, if it cannot.
    pub unsupported: Option<String>,
}

/// Where a provider's key comes from, for `cadre doctor`. Never the key itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    EnvVar {
        name: String,
        set: bool,
    },
    Command,
    Literal,
    /// An API key stored in this `auth.json` (cadre's, else Pi's).
    Stored {
        path: PathBuf,
    },
    /// No key configured, and none needed (loopback server or header authentication).
    NotRequired,
    /// No key configured and one is needed.
    Missing,
}

/// One entry of [`ModelRegistry::providers_status`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderStatus {
    pub provider: String,
    pub builtin: bool,
    pub base_url: Option<String>,
    pub has_credentials: bool,
    pub key_source: KeySource,
    pub models: usize,
}

#[derive(Clone)]
pub(crate) struct ProviderDef {
    pub name: String,
    pub builtin: bool,
    pub base_url: Option<String>,
    /// Default API for models that do not set their own.
    pub api: ApiKind,
    /// Raw configured `apiKey` (unresolved).
    pub api_key: Option<String>,
    /// The standard variable of a built-in provider, used when `apiKey` is not configured.
    pub default_key_env: Option<String>,
    /// Raw header values (unresolved).
    pub headers: BTreeMap<String, String>,
    pub auth_header: bool,
    pub models: Vec<ModelDef>,
}

#[derive(Clone)]
pub(crate) struct ModelDef {
    pub id: String,
    pub name: String,
    pub api: ApiKind,
    pub base_url: Option<String>,
    pub reasoning: bool,
    /// Pi's `input` (`["text"]` or `["text", "image"]`).
    pub input: Vec<String>,
    pub thinking_level_map: BTreeMap<ThinkingLevel, Option<String>>,
    pub context_window: u64,
    pub max_tokens: u64,
    pub cost: ModelCost,
    pub compat: Compat,
    /// Raw header values (unresolved), applied over the provider's.
    pub headers: BTreeMap<String, String>,
    pub source: ModelSource,
}

/// Built-in and configured models, ready to resolve.
pub struct ModelRegistry {
    providers: Vec<ProviderDef>,
    file: ModelsFile,
    ignored_providers: Vec<String>,
    /// The environment variables the configuration refers to, read at load time.
    env: MapEnv,
    /// Keys stored in `auth.json`, the last resort for a provider.
    auth: AuthStore,
    /// Keys given for this run (`--api-key`), by provider: they win over everything.
    runtime_keys: BTreeMap<String, String>,
}

impl std::fmt::Debug for ModelRegistry {
    // The environment snapshot holds credentials; show only what is safe.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelRegistry")
            .field(
                "providers",
                &self.providers.iter().map(|p| &p.name).collect::<Vec<_>>(),
            )
            .field("file", &self.file)
            .field("auth", &self.auth)
            .field(
                "runtime_keys",
                &self.runtime_keys.keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl ModelRegistry {
    /// Load the built-ins merged with `$CADRE_HOME/models.json`, or Pi's file when cadre has none.
    /// The environment variables the configuration takes values from (`apiKey` and header
    /// values naming a variable): credentials whatever they are called.
    pub fn referenced_env_names(&self) -> Vec<String> {
        self.env.0.keys().cloned().collect()
    }

    /// Load the built-ins merged with `$CADRE_HOME/models.json` (or Pi's file when cadre has
    /// none), and the keys of `$CADRE_HOME/auth.json` (or Pi's).
    pub fn load(cadre_home: &Path, env: &dyn Env) -> Result<ModelRegistry, RegistryError> {
        let auth = AuthStore::load(cadre_home, env)?;
        Ok(Self::load_models(cadre_home, env)?.with_auth(auth, env))
    }

    fn load_models(cadre_home: &Path, env: &dyn Env) -> Result<ModelRegistry, RegistryError> {
        let cadre_path = cadre_home.join("models.json");
        if let Some(text) = read_if_exists(&cadre_path)? {
            return Self::from_json(&text, ModelsFile::Cadre(cadre_path), env);
        }
        if let Some(pi_path) = pi_models_path(env)
            && let Some(text) = read_if_exists(&pi_path)?
        {
            return Self::from_json(&text, ModelsFile::Pi(pi_path), env);
        }
        Ok(Self::builtin(env))
    }

    /// Use the keys of `auth`, taking the variables they name from `env` now, like every other
    /// configured value.
    fn with_auth(mut self, auth: AuthStore, env: &dyn Env) -> ModelRegistry {
        for raw in auth.raw_keys() {
            if !raw.starts_with('!')
                && let Some(v) = env.var(raw)
            {
                self.env.0.insert(raw.to_string(), v);
            }
        }
        self.auth = auth;
        self
    }

    /// The `auth.json` in use and whether it is cadre's or Pi's.
    pub fn auth_file(&self) -> &AuthFile {
        &self.auth.file
    }

    /// What the user should know about the `auth.json` in use (OAuth entries skipped, a Pi file
    /// that could not be read), one sentence each.
    pub fn auth_notes(&self) -> &[String] {
        &self.auth.notes
    }

    /// The keys stored in `auth.json` that are known without running anything (literals and
    /// set variables), to register as secrets: the file can be read by a tool, and a stored key
    /// must be redacted like the one in use.
    pub fn stored_secrets(&self) -> Vec<String> {
        self.auth
            .raw_keys()
            .filter(|raw| !raw.starts_with('!'))
            .filter_map(|raw| match value::resolve(raw, &self.env) {
                Ok(Resolved::Value(v)) => Some(v),
                _ => None,
            })
            .collect()
    }

    /// Use `key` for `provider` in this run, over every configured source (Pi's `--api-key`).
    /// The key is never written anywhere; the caller registers the resolved model's key as a
    /// secret as it does for every key.
    pub fn set_runtime_api_key(&mut self, provider: &str, key: String) {
        self.runtime_keys.insert(provider.to_string(), key);
    }

    /// Whether `provider` names a provider of the registry.
    pub fn has_provider(&self, provider: &str) -> bool {
        self.providers.iter().any(|p| p.name == provider)
    }

    /// The provider of the model `name` names (as [`ModelRegistry::resolve`] finds it), without
    /// resolving credentials: where a `--api-key` goes before the model can be resolved.
    pub fn provider_of(&self, name: &str) -> Result<String, RegistryError> {
        self.find(name).map(|(p, _)| p.name.clone())
    }

    /// The built-in providers only.
    pub fn builtin(env: &dyn Env) -> ModelRegistry {
        Self::assemble(builtin::providers(), ModelsFile::None, Vec::new(), env)
    }

    /// Parse `text` as the contents of `file` (whose path is used in error messages).
    pub fn from_json(
        text: &str,
        file: ModelsFile,
        env: &dyn Env,
    ) -> Result<ModelRegistry, RegistryError> {
        let path = file.path().map(Path::to_path_buf).unwrap_or_default();
        error::expect_object(&path, text)?;
        let raw: file::RawFile =
            serde_json::from_str(text).map_err(|e| error::parse_error(path.clone(), &e))?;
        let merged = build::merge(builtin::providers(), raw)
            .map_err(|message| RegistryError::Invalid { path, message })?;
        Ok(Self::assemble(merged.providers, file, merged.ignored, env))
    }

    fn assemble(
        providers: Vec<ProviderDef>,
        file: ModelsFile,
        ignored_providers: Vec<String>,
        env: &dyn Env,
    ) -> ModelRegistry {
        // Snapshot every variable a value could name, so resolution is deterministic afterwards.
        let mut snapshot = MapEnv::new();
        let mut note = |raw: &str| {
            if !raw.starts_with('!')
                && let Some(v) = env.var(raw)
            {
                snapshot.0.insert(raw.to_string(), v);
            }
        };
        for p in &providers {
            p.default_key_env.iter().for_each(|n| note(n));
            p.api_key.iter().for_each(|n| note(n));
            p.headers.values().for_each(|n| note(n));
            p.models
                .iter()
                .flat_map(|m| m.headers.values())
                .for_each(|n| note(n));
        }
        ModelRegistry {
            providers,
            file,
            ignored_providers,
            env: snapshot,
            auth: AuthStore::default(),
            runtime_keys: BTreeMap::new(),
        }
    }

    /// The `models.json` in use, if any.
    pub fn source_file(&self) -> Option<&Path> {
        self.file.path()
    }

    /// The `models.json` in use and whether it is cadre's or Pi's.
    pub fn models_file(&self) -> &ModelsFile {
        &self.file
    }

    /// Provider entries of the file that cadre could not attach to anything (overrides of Pi
    /// built-in providers cadre does not have).
    pub fn ignored_providers(&self) -> &[String] {
        &self.ignored_providers
    }

    /// Every model, in provider order.
    pub fn list(&self) -> Vec<ModelInfo> {
        let mut out = Vec::new();
        for p in &self.providers {
            for m in &p.models {
                out.push(self.info_of(p, m));
            }
        }
        out
    }

    /// The model `name` names, found as [`ModelRegistry::resolve`] finds it, without resolving
    /// credentials (no `!command` runs): what `cadre agents` and `cadre doctor` judge a role's
    /// model by.
    pub fn info(&self, name: &str) -> Result<ModelInfo, RegistryError> {
        self.find(name).map(|(p, m)| self.info_of(p, m))
    }

    fn info_of(&self, p: &ProviderDef, m: &ModelDef) -> ModelInfo {
        ModelInfo {
            full_name: format!("{}/{}", p.name, m.id),
            provider: p.name.clone(),
            id: m.id.clone(),
            name: m.name.clone(),
            api: m.api.as_str().to_string(),
            reasoning: m.reasoning,
            context_window: m.context_window,
            max_tokens: m.max_tokens,
            has_credentials: self.has_credentials(p, effective_base_url(p, m)),
            source: m.source,
            unsupported: unsupported_reason(p, m),
        }
    }

    /// Credential status of each provider, for `cadre doctor`.
    pub fn providers_status(&self) -> Vec<ProviderStatus> {
        self.providers
            .iter()
            .map(|p| {
                let base = p.base_url.as_deref();
                ProviderStatus {
                    provider: p.name.clone(),
                    builtin: p.builtin,
                    base_url: p.base_url.clone(),
                    has_credentials: self.has_credentials(p, base),
                    key_source: self.key_source(p, base),
                    models: p.models.len(),
                }
            })
            .collect()
    }

    /// Resolve `provider/model-id` (or a bare id, or a display `name`, that only one model has)
    /// to a callable model. `!command` credentials run now, synchronously: async callers should
    /// call this from a blocking context.
    pub fn resolve(&self, name: &str) -> Result<Model, RegistryError> {
        let (p, m) = self.find(name)?;
        let full_name = format!("{}/{}", p.name, m.id);
        if let Some(reason) = unsupported_reason(p, m) {
            return Err(RegistryError::Unsupported {
                name: full_name,
                reason,
            });
        }
        let (ApiKind::Supported(api), Some(base_url)) = (&m.api, effective_base_url(p, m)) else {
            // unsupported_reason covers both; kept as a typed fallback rather than a panic.
            return Err(RegistryError::Unsupported {
                name: full_name,
                reason: "incomplete definition".to_string(),
            });
        };
        let api_key = self.resolve_key(p, Some(base_url))?;
        let mut headers = BTreeMap::new();
        for (header, raw) in p.headers.iter().chain(m.headers.iter()) {
            match value::resolve(raw, &self.env) {
                Ok(Resolved::Value(v)) => {
                    headers.insert(header.clone(), v);
                }
                Ok(Resolved::UnsetEnv(var)) => {
                    return Err(RegistryError::MissingCredentials {
                        provider: p.name.clone(),
                        env_var: Some(var),
                    });
                }
                Err(e) => {
                    return Err(RegistryError::CredentialCommand {
                        provider: p.name.clone(),
                        what: format!("header `{header}`"),
                        message: e.0,
                    });
                }
            }
        }
        if p.auth_header
            && let Some(key) = &api_key
        {
            headers.insert("Authorization".to_string(), format!("Bearer {key}"));
        }
        Ok(Model {
            provider: p.name.clone(),
            id: m.id.clone(),
            name: m.name.clone(),
            api: *api,
            base_url: base_url.to_string(),
            api_key,
            headers,
            reasoning: m.reasoning,
            input: m.input.clone(),
            thinking_level_map: m.thinking_level_map.clone(),
            context_window: m.context_window,
            max_tokens: m.max_tokens,
            cost: m.cost,
            compat: m.compat.clone(),
        })
    }

    fn find(&self, name: &str) -> Result<(&ProviderDef, &ModelDef), RegistryError> {
        // The full name first: ids may contain `/` (OpenRouter's `openai/gpt-5`).
        for p in &self.providers {
            if let Some(id) = name
                .strip_prefix(p.name.as_str())
                .and_then(|r| r.strip_prefix('/'))
                && let Some(m) = p.models.iter().find(|m| m.id == id)
            {
                return Ok((p, m));
            }
        }
        let matches: Vec<(&ProviderDef, &ModelDef)> = self
            .providers
            .iter()
            .flat_map(|p| p.models.iter().map(move |m| (p, m)))
            .filter(|(_, m)| m.id == name)
            .collect();
        let matches = if matches.is_empty() {
            // Pi matches on the configured display name too.
            self.providers
                .iter()
                .flat_map(|p| p.models.iter().map(move |m| (p, m)))
                .filter(|(_, m)| m.name == name)
                .collect()
        } else {
            matches
        };
        match matches.as_slice() {
            [one] => Ok(*one),
            [] => Err(RegistryError::UnknownModel {
                name: name.to_string(),
                known: self.list().into_iter().map(|i| i.full_name).collect(),
            }),
            many => Err(RegistryError::AmbiguousModel {
                name: name.to_string(),
                candidates: many
                    .iter()
                    .map(|(p, m)| format!("{}/{}", p.name, m.id))
                    .collect(),
            }),
        }
    }

    fn resolve_key(
        &self,
        p: &ProviderDef,
        base_url: Option<&str>,
    ) -> Result<Option<String>, RegistryError> {
        if let Some(key) = self.runtime_keys.get(&p.name) {
            return Ok(Some(key.clone()));
        }
        match self.configured_key(p, base_url) {
            Ok(Some(key)) => Ok(Some(key)),
            // Nothing configured or the variable is unset: a stored key is the last resort.
            missing @ (Ok(None) | Err(RegistryError::MissingCredentials { .. })) => {
                match self.stored_key(p)? {
                    Some(key) => Ok(Some(key)),
                    None => missing,
                }
            }
            Err(e) => Err(e),
        }
    }

    /// The key `auth.json` stores for `p`, resolved; `None` when there is none or it names an
    /// unset variable.
    fn stored_key(&self, p: &ProviderDef) -> Result<Option<String>, RegistryError> {
        let Some(raw) = self.auth.key(&p.name) else {
            return Ok(None);
        };
        match value::resolve(raw, &self.env) {
            Ok(Resolved::Value(v)) => Ok(Some(v)),
            Ok(Resolved::UnsetEnv(_)) => Ok(None),
            Err(e) => Err(RegistryError::CredentialCommand {
                provider: p.name.clone(),
                what: "the key in auth.json".to_string(),
                message: e.0,
            }),
        }
    }

    /// The key from the configuration and the environment alone.
    fn configured_key(
        &self,
        p: &ProviderDef,
        base_url: Option<&str>,
    ) -> Result<Option<String>, RegistryError> {
        let keyless_ok = base_url.is_some_and(is_loopback_url);
        let missing = |env_var: Option<String>| RegistryError::MissingCredentials {
            provider: p.name.clone(),
            env_var,
        };
        if let Some(raw) = &p.api_key {
            return match value::resolve(raw, &self.env) {
                Ok(Resolved::Value(v)) => Ok(Some(v)),
                Ok(Resolved::UnsetEnv(_)) if keyless_ok => Ok(None),
                Ok(Resolved::UnsetEnv(var)) => Err(missing(Some(var))),
                Err(e) => Err(RegistryError::CredentialCommand {
                    provider: p.name.clone(),
                    what: "apiKey".to_string(),
                    message: e.0,
                }),
            };
        }
        if let Some(var) = &p.default_key_env {
            return match self.env.var(var) {
                Some(v) => Ok(Some(v)),
                None if keyless_ok => Ok(None),
                None => Err(missing(Some(var.clone()))),
            };
        }
        if keyless_ok || (!p.builtin && !p.headers.is_empty()) {
            Ok(None)
        } else {
            Err(missing(None))
        }
    }

    fn key_source(&self, p: &ProviderDef, base_url: Option<&str>) -> KeySource {
        let configured = self.configured_key_source(p, base_url);
        let unset = matches!(
            configured,
            KeySource::EnvVar { set: false, .. } | KeySource::Missing | KeySource::NotRequired
        );
        match (self.auth.key(&p.name), self.auth.file.path()) {
            (Some(raw), Some(path))
                if unset && value::classify(raw, &self.env) != unset_var(raw) =>
            {
                KeySource::Stored {
                    path: path.to_path_buf(),
                }
            }
            _ => configured,
        }
    }

    fn configured_key_source(&self, p: &ProviderDef, base_url: Option<&str>) -> KeySource {
        let keyless_ok = base_url.is_some_and(is_loopback_url);
        let raw = p.api_key.as_ref().or(p.default_key_env.as_ref());
        match raw.map(|r| value::classify(r, &self.env)) {
            Some(ValueSource::Command) => KeySource::Command,
            Some(ValueSource::Literal) => KeySource::Literal,
            Some(ValueSource::EnvVar { name, set }) => KeySource::EnvVar { name, set },
            None if keyless_ok || (!p.builtin && !p.headers.is_empty()) => KeySource::NotRequired,
            None => KeySource::Missing,
        }
    }

    fn has_credentials(&self, p: &ProviderDef, base_url: Option<&str>) -> bool {
        if self.runtime_keys.contains_key(&p.name) {
            return true;
        }
        let keyless_ok = base_url.is_some_and(is_loopback_url);
        match self.key_source(p, base_url) {
            KeySource::Command
            | KeySource::Literal
            | KeySource::Stored { .. }
            | KeySource::NotRequired => true,
            KeySource::EnvVar { set, .. } => set || keyless_ok,
            KeySource::Missing => false,
        }
    }
}

fn effective_base_url<'a>(p: &'a ProviderDef, m: &'a ModelDef) -> Option<&'a str> {
    m.base_url.as_deref().or(p.base_url.as_deref())
}

fn unsupported_reason(p: &ProviderDef, m: &ModelDef) -> Option<String> {
    match &m.api {
        ApiKind::Unsupported(api) => {
            return Some(format!(
                "api `{api}` is not supported (cadre speaks openai-completions, \
                 anthropic-messages and openai-responses)"
            ));
        }
        ApiKind::Missing => {
            return Some(format!(
                "no `api` set for provider `{}` or the model",
                p.name
            ));
        }
        ApiKind::Supported(_) => {}
    }
    if effective_base_url(p, m).is_none() {
        return Some(format!("no `baseUrl` set for provider `{}`", p.name));
    }
    None
}

/// Read `path`, or `None` when it does not exist.
fn read_if_exists(path: &Path) -> Result<Option<String>, RegistryError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(RegistryError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// How [`value::classify`] reports `raw` when it is an unset variable's name.
fn unset_var(raw: &str) -> ValueSource {
    ValueSource::EnvVar {
        name: raw.to_string(),
        set: false,
    }
}

/// Pi's agent directory, where its `models.json`, `auth.json`, `settings.json`, `AGENTS.md` and
/// sessions live: `$PI_CODING_AGENT_DIR` (a leading `~` or `~/` means the home directory, as Pi
/// expands it), else `~/.pi/agent`.
pub fn pi_agent_dir(env: &dyn Env) -> Option<PathBuf> {
    if let Some(dir) = env.var("PI_CODING_AGENT_DIR") {
        if dir == "~" {
            return home_dir(env);
        }
        if let Some(rest) = dir.strip_prefix("~/") {
            return home_dir(env).map(|h| h.join(rest));
        }
        return Some(PathBuf::from(dir));
    }
    home_dir(env).map(|h| h.join(".pi").join("agent"))
}

/// Pi's `models.json`: `<Pi agent dir>/models.json` (see [`pi_agent_dir`]).
pub fn pi_models_path(env: &dyn Env) -> Option<PathBuf> {
    pi_agent_dir(env).map(|d| d.join("models.json"))
}

/// True when `url`'s host is `localhost`, a `*.localhost` name or a loopback address.
pub fn is_loopback_url(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    let host = host.to_ascii_lowercase();
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}
