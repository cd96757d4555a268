//! Pi's global `settings.json` (`<Pi agent dir>/settings.json`), read when CADRE_HOME has no
//! settings file of its own, so a Pi user's default model carries over.
//!
//! Only the keys whose meaning cadre shares are taken ([`SHARED_KEYS`]); every other key is
//! Pi's business and ignored without a word. The file belongs to another program, so nothing
//! in it stops cadre: a file that cannot be read or parsed, or a shared key with a value cadre
//! cannot use, is left out with a note (Pi itself carries on past a broken settings file).

use std::path::{Path, PathBuf};

use cadre_llm::registry::{Env, pi_agent_dir};
use cadre_protocol::ThinkingLevel;
use serde_json::{Map, Value};

use super::read_optional;

/// The keys of Pi's settings that cadre reads, with the same meaning.
pub const SHARED_KEYS: &[&str] = &["defaultProvider", "defaultModel", "defaultThinkingLevel"];

/// What was taken from Pi's settings file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PiSettings {
    /// The file, when it exists.
    pub path: Option<PathBuf>,
    /// Its shared keys with usable values.
    pub doc: Map<String, Value>,
    /// What was left out and why, one sentence each.
    pub notes: Vec<String>,
}

/// Pi's settings file according to `env`.
pub fn pi_settings_path(env: &dyn Env) -> Option<PathBuf> {
    pi_agent_dir(env).map(|dir| dir.join("settings.json"))
}

/// Read the shared keys of Pi's settings file; never an error.
pub fn read_pi_settings(env: &dyn Env) -> PiSettings {
    match pi_settings_path(env) {
        Some(path) => read_from(&path),
        None => PiSettings::default(),
    }
}

fn read_from(path: &Path) -> PiSettings {
    let mut out = PiSettings::default();
    let text = match read_optional(path) {
        Ok(Some(text)) => text,
        Ok(None) => return out,
        Err(e) => {
            out.notes.push(format!("{e}; Pi's settings are not used"));
            return out;
        }
    };
    out.path = Some(path.to_path_buf());
    let doc = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(doc)) => doc,
        Ok(_) => {
            out.notes.push(format!(
                "{}: expected a JSON object; Pi's settings are not used",
                path.display()
            ));
            return out;
        }
        Err(e) => {
            out.notes.push(format!(
                "{}: invalid JSON ({e}); Pi's settings are not used",
                path.display()
            ));
            return out;
        }
    };
    for key in SHARED_KEYS {
        let Some(value) = doc.get(*key).filter(|v| !v.is_null()) else {
            continue;
        };
        let usable = match (*key, value.as_str()) {
            ("defaultThinkingLevel", Some(level)) => ThinkingLevel::parse(level).is_some(),
            (_, Some(s)) => !s.trim().is_empty(),
            (_, None) => false,
        };
        if usable {
            out.doc.insert((*key).to_string(), value.clone());
        } else {
            out.notes.push(format!(
                "{}: {key} {value} is not usable; it is ignored",
                path.display()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use cadre_llm::registry::MapEnv;
    use serde_json::json;

    use super::*;

    fn env_for(dir: &Path) -> MapEnv {
        MapEnv::new().with("PI_CODING_AGENT_DIR", dir.to_str().unwrap())
    }

    #[test]
    fn shared_keys_are_taken_and_the_rest_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("settings.json"),
            r#"{"defaultProvider":"anthropic","defaultModel":"claude-sonnet-4-5",
                "defaultThinkingLevel":"high","theme":"light","compaction":{"enabled":false},
                "shellEnv":{"allow":["X"]}}"#,
        )
        .unwrap();
        let pi = read_pi_settings(&env_for(tmp.path()));
        assert_eq!(pi.path, Some(tmp.path().join("settings.json")));
        assert_eq!(
            Value::Object(pi.doc),
            json!({"defaultProvider":"anthropic","defaultModel":"claude-sonnet-4-5",
                   "defaultThinkingLevel":"high"})
        );
        assert!(pi.notes.is_empty(), "{:?}", pi.notes);
    }

    #[test]
    fn unusable_values_and_broken_files_are_notes() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("settings.json");
        std::fs::write(
            &path,
            r#"{"defaultModel":"gpt-5","defaultThinkingLevel":"extreme","defaultProvider":7}"#,
        )
        .unwrap();
        let pi = read_pi_settings(&env_for(tmp.path()));
        assert_eq!(Value::Object(pi.doc), json!({"defaultModel":"gpt-5"}));
        let notes = pi.notes.join("\n");
        assert!(
            notes.contains("defaultThinkingLevel \"extreme\""),
            "{notes}"
        );
        assert!(notes.contains("defaultProvider 7"), "{notes}");

        std::fs::write(&path, "{ nope").unwrap();
        let pi = read_pi_settings(&env_for(tmp.path()));
        assert!(pi.doc.is_empty());
        assert!(pi.notes[0].contains("invalid JSON"), "{:?}", pi.notes);

        std::fs::write(&path, "[]").unwrap();
        assert!(read_pi_settings(&env_for(tmp.path())).notes[0].contains("JSON object"));

        let none = read_pi_settings(&env_for(&tmp.path().join("missing")));
        assert_eq!(none, PiSettings::default());
        assert_eq!(read_pi_settings(&MapEnv::new()), PiSettings::default());
    }
}
