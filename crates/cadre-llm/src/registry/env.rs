//! Environment lookup, injectable so that tests never mutate the process environment.

use std::collections::BTreeMap;

/// A source of environment variables.
pub trait Env {
    /// The value of `name`, or `None` when it is unset. An empty value counts as unset: an
    /// exported-but-empty `OPENAI_API_KEY=` is a credential nobody meant to send.
    fn var(&self, name: &str) -> Option<String>;
}

/// The real process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        // Configured values are probed as names too; a literal key may contain `=` (base64
        // padding), which the platform rejects as a variable name.
        if name.is_empty() || name.contains(['=', '\0']) {
            return None;
        }
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

/// A fixed set of variables, for tests and for callers that build an environment explicitly.
#[derive(Clone, Default)]
pub struct MapEnv(pub BTreeMap<String, String>);

impl MapEnv {
    pub fn new() -> Self {
        MapEnv(BTreeMap::new())
    }

    /// Builder-style insert.
    pub fn with(mut self, name: &str, value: &str) -> Self {
        self.0.insert(name.to_string(), value.to_string());
        self
    }
}

impl std::fmt::Debug for MapEnv {
    // Values may be credentials: show names only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl Env for MapEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).filter(|v| !v.is_empty()).cloned()
    }
}

impl<F> Env for F
where
    F: Fn(&str) -> Option<String>,
{
    fn var(&self, name: &str) -> Option<String> {
        self(name).filter(|v| !v.is_empty())
    }
}

/// The user's home directory according to `env` (`HOME`, then `USERPROFILE`).
pub fn home_dir(env: &dyn Env) -> Option<std::path::PathBuf> {
    env.var("HOME")
        .or_else(|| env.var("USERPROFILE"))
        .map(std::path::PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_env_treats_empty_as_unset_and_hides_values_in_debug() {
        let env = MapEnv::new().with("A", "secret").with("B", "");
        assert_eq!(env.var("A").as_deref(), Some("secret"));
        assert_eq!(env.var("B"), None);
        assert_eq!(env.var("C"), None);
        let dbg = format!("{env:?}");
        assert!(dbg.contains('A') && !dbg.contains("secret"));
    }

    #[test]
    fn process_env_ignores_impossible_names() {
        assert_eq!(ProcessEnv.var(""), None);
        assert_eq!(ProcessEnv.var("abc=="), None);
        assert_eq!(ProcessEnv.var("a\0b"), None);
        assert_eq!(ProcessEnv.var("CADRE_SURELY_UNSET_VARIABLE_1234"), None);
    }

    #[test]
    fn closures_are_envs() {
        let env = |name: &str| (name == "X").then(|| "1".to_string());
        assert_eq!(Env::var(&env, "X").as_deref(), Some("1"));
        assert_eq!(Env::var(&env, "Y"), None);
    }

    #[test]
    fn home_prefers_home_then_userprofile() {
        let env = MapEnv::new().with("USERPROFILE", "/u");
        assert_eq!(home_dir(&env), Some("/u".into()));
        let env = env.with("HOME", "/h");
        assert_eq!(home_dir(&env), Some("/h".into()));
        assert_eq!(home_dir(&MapEnv::new()), None);
    }
}
