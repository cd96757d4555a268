//! Stored API keys in Pi's `auth.json` format: `$CADRE_HOME/auth.json`, else Pi's own
//! (`<Pi agent dir>/auth.json`), read only, never written.
//!
//! The file maps a provider name to a credential: `{"type": "api_key", "key": "…"}` or an OAuth
//! entry (`{"type": "oauth", "access": …, "refresh": …, "expires": …}`). Only API keys are
//! usable: OAuth tokens need Pi's login flows to refresh, so those entries are skipped with a
//! note. A key is resolved like every configured value (`!command`, an environment variable's
//! name, or a literal), and is the last resort for its provider: a configured `apiKey` and the
//! provider's environment variable come first.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::env::Env;
use super::error::RegistryError;
use super::{pi_agent_dir, read_if_exists};

/// Which `auth.json` was read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AuthFile {
    /// Neither cadre nor Pi has one.
    #[default]
    None,
    /// `$CADRE_HOME/auth.json`.
    Cadre(PathBuf),
    /// Pi's file, used read-only because cadre has none.
    Pi(PathBuf),
}

impl AuthFile {
    pub fn path(&self) -> Option<&Path> {
        match self {
            AuthFile::None => None,
            AuthFile::Cadre(p) | AuthFile::Pi(p) => Some(p),
        }
    }
}

/// The usable API keys of an `auth.json`, unresolved, and what was left out.
#[derive(Clone, Default)]
pub(crate) struct AuthStore {
    pub file: AuthFile,
    /// Provider name → configured key (`!command`, variable name or literal).
    keys: BTreeMap<String, String>,
    /// Things the user should know: OAuth entries skipped, an unreadable Pi file.
    pub notes: Vec<String>,
}

impl std::fmt::Debug for AuthStore {
    // The keys are credentials: show the providers only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthStore")
            .field("file", &self.file)
            .field("providers", &self.keys.keys().collect::<Vec<_>>())
            .field("notes", &self.notes)
            .finish()
    }
}

impl AuthStore {
    /// `$CADRE_HOME/auth.json`, else Pi's. A broken file of cadre's is an error; a broken file of
    /// Pi's is skipped with a note, as Pi itself carries on without it.
    pub fn load(cadre_home: &Path, env: &dyn Env) -> Result<AuthStore, RegistryError> {
        let cadre_path = cadre_home.join("auth.json");
        if let Some(text) = read_if_exists(&cadre_path)? {
            return parse(&text, AuthFile::Cadre(cadre_path.clone())).map_err(|message| {
                RegistryError::Invalid {
                    path: cadre_path,
                    message,
                }
            });
        }
        let Some(pi_path) = pi_agent_dir(env).map(|d| d.join("auth.json")) else {
            return Ok(AuthStore::default());
        };
        let text = match read_if_exists(&pi_path) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(AuthStore::default()),
            Err(e) => {
                return Ok(AuthStore {
                    notes: vec![format!("{e}; its stored keys are not used")],
                    ..AuthStore::default()
                });
            }
        };
        Ok(
            parse(&text, AuthFile::Pi(pi_path.clone())).unwrap_or_else(|message| AuthStore {
                notes: vec![format!(
                    "{}: {message}; its stored keys are not used",
                    pi_path.display()
                )],
                ..AuthStore::default()
            }),
        )
    }

    /// The configured key of `provider`, if the file has an API key for it.
    pub fn key(&self, provider: &str) -> Option<&str> {
        self.keys.get(provider).map(String::as_str)
    }

    /// Every configured key, for the environment snapshot and for redaction.
    pub fn raw_keys(&self) -> impl Iterator<Item = &str> {
        self.keys.values().map(String::as_str)
    }
}

/// Parse an `auth.json` text. `Err` is a message without the path.
fn parse(text: &str, file: AuthFile) -> Result<AuthStore, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let Value::Object(entries) = doc else {
        return Err("expected a JSON object of provider credentials".to_string());
    };
    let mut store = AuthStore {
        file,
        ..AuthStore::default()
    };
    let mut oauth = Vec::new();
    for (provider, entry) in entries {
        let kind = entry.get("type").and_then(Value::as_str);
        match (kind, entry.get("key").and_then(Value::as_str)) {
            (Some("api_key"), Some(key)) if !key.trim().is_empty() => {
                store.keys.insert(provider, key.trim().to_string());
            }
            (Some("api_key"), _) => store.notes.push(format!(
                "auth.json: the API key of `{provider}` is empty or not a string; skipped"
            )),
            (Some("oauth"), _) => oauth.push(provider),
            (other, _) => store.notes.push(format!(
                "auth.json: `{provider}` has an unknown credential type {}; skipped",
                other.map_or("(none)".to_string(), |t| format!("`{t}`"))
            )),
        }
    }
    if !oauth.is_empty() {
        store.notes.push(format!(
            "auth.json: OAuth logins are not supported, only API keys ({} skipped)",
            oauth.join(", ")
        ));
    }
    Ok(store)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::registry::env::MapEnv;

    const PI_AUTH: &str = r#"{
      "anthropic": { "type": "api_key", "key": "sk-ant-stored-0123456789" },
      "openai": { "type": "api_key", "key": "  OPENAI_FROM_VAR  " },
      "github-copilot": { "type": "oauth", "refresh": "r", "access": "a", "expires": 1 },
      "weird": { "type": "token", "key": "x" },
      "blank": { "type": "api_key", "key": "" }
    }"#;

    #[test]
    fn api_keys_are_kept_and_the_rest_is_noted() {
        let store = parse(PI_AUTH, AuthFile::Pi("/pi/auth.json".into())).unwrap();
        assert_eq!(store.key("anthropic"), Some("sk-ant-stored-0123456789"));
        assert_eq!(store.key("openai"), Some("OPENAI_FROM_VAR"));
        assert_eq!(store.key("github-copilot"), None);
        assert_eq!(store.key("weird"), None);
        assert_eq!(store.key("blank"), None);
        let notes = store.notes.join("\n");
        assert!(notes.contains("OAuth logins are not supported"), "{notes}");
        assert!(notes.contains("github-copilot"), "{notes}");
        assert!(notes.contains("unknown credential type `token`"), "{notes}");
        assert!(notes.contains("`blank` is empty"), "{notes}");
        // Debug never shows a key.
        assert!(!format!("{store:?}").contains("sk-ant-stored"));
    }

    #[test]
    fn cadre_file_wins_and_a_broken_one_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("cadre");
        let pi = tmp.path().join("pi");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&pi).unwrap();
        std::fs::write(pi.join("auth.json"), PI_AUTH).unwrap();
        let env = MapEnv::new().with("PI_CODING_AGENT_DIR", pi.to_str().unwrap());

        let store = AuthStore::load(&home, &env).unwrap();
        assert_eq!(store.file, AuthFile::Pi(pi.join("auth.json")));
        assert_eq!(store.key("anthropic"), Some("sk-ant-stored-0123456789"));

        std::fs::write(
            home.join("auth.json"),
            r#"{"openai":{"type":"api_key","key":"sk-cadre-own-key"}}"#,
        )
        .unwrap();
        let store = AuthStore::load(&home, &env).unwrap();
        assert_eq!(store.file, AuthFile::Cadre(home.join("auth.json")));
        assert_eq!(store.key("openai"), Some("sk-cadre-own-key"));
        assert_eq!(store.key("anthropic"), None);

        std::fs::write(home.join("auth.json"), "[1]").unwrap();
        let err = AuthStore::load(&home, &env).unwrap_err().to_string();
        assert!(
            err.contains("auth.json") && err.contains("expected a JSON object"),
            "{err}"
        );
    }

    #[test]
    fn a_broken_pi_file_is_a_note_not_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("auth.json"), "{ nope").unwrap();
        let env = MapEnv::new().with("PI_CODING_AGENT_DIR", tmp.path().to_str().unwrap());
        let store = AuthStore::load(&tmp.path().join("none"), &env).unwrap();
        assert_eq!(store.file, AuthFile::None);
        assert_eq!(store.raw_keys().count(), 0);
        assert!(store.notes[0].contains("invalid JSON"), "{:?}", store.notes);

        let empty = AuthStore::load(&tmp.path().join("none"), &MapEnv::new()).unwrap();
        assert_eq!(empty.file, AuthFile::None);
        assert!(empty.notes.is_empty());
    }
}
