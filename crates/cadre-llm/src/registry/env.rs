//! Environment lookup, injectable so that tests never mutate the process environment.

use std::collections::BTreeMap;

/// A source of environment variables.
pub trait Env {
    /// The value of `name`, or `None` when it is unset. An empty value counts as unset: an
    /// exported-but-empty `OPENAI_API_KEY=` is a credential nobody meant to send.
    fn var(&self, name: &str) -> Option<String>;
}

/// The real process environment, including the credentials [`hide_credentials`] took out of
/// it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        // Configured values are probed as names too; a literal key may contain `=` (base64
        // padding), which the platform rejects as a variable name.
        if name.is_empty() || name.contains(['=', '\0']) {
            return None;
        }
        if let Some((_, value)) = hidden_credentials().iter().find(|(n, _)| n == name) {
            return Some(value.clone()).filter(|v| !v.is_empty());
        }
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

static HIDDEN: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();

/// The credential variables [`hide_credentials`] took out of the environment, with their values.
pub fn hidden_credentials() -> &'static [(String, String)] {
    HIDDEN.get().map(Vec::as_slice).unwrap_or(&[])
}

/// Take the variables that `is_credential(name, value)` matches out of this process's environment,
/// keeping them for [`ProcessEnv`] alone (S5, S8). Every process cadre starts inherits its
/// environment, and every process of the same user may read `/proc/<cadre>/environ` — the
/// environment block as it was at start, which `unsetenv` does not change. So the values are
/// overwritten in that block before the variables are removed.
///
/// # Safety
/// Must run while the process has a single thread and before anything holds a pointer into
/// the environment: it writes into the environment block and changes the environment.
#[allow(unsafe_code)]
pub unsafe fn hide_credentials(is_credential: impl Fn(&str, &str) -> bool) {
    // Names are matched as text; a value that is not UTF-8 is still hidden (and wiped), but
    // cannot be kept for lookups, which read text.
    let matched: Vec<(String, Option<String>)> = std::env::vars_os()
        .filter_map(|(n, v)| {
            let name = n.into_string().ok()?;
            is_credential(&name, &v.to_string_lossy()).then(|| (name, v.into_string().ok()))
        })
        .collect();
    let kept: Vec<(String, String)> = matched
        .iter()
        .filter_map(|(n, v)| Some((n.clone(), v.clone()?)))
        .collect();
    if matched.is_empty() || HIDDEN.set(kept).is_err() {
        return;
    }
    let found: Vec<(String, ())> = matched.into_iter().map(|(n, _)| (n, ())).collect();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: single-threaded (the caller's contract); `environ` is a NULL-terminated array of
    // pointers to NUL-terminated `NAME=VALUE` strings owned by the process, which may be
    // written; only bytes before each string's terminating NUL are overwritten.
    unsafe {
        let mut entry = libc::environ;
        while !entry.is_null() && !(*entry).is_null() {
            let text = std::ffi::CStr::from_ptr(*entry).to_bytes();
            if let Some(eq) = text.iter().position(|&b| b == b'=')
                && let Ok(name) = std::str::from_utf8(&text[..eq])
                && found.iter().any(|(n, _)| n == name)
            {
                let value = (*entry).add(eq + 1);
                std::ptr::write_bytes(value, b'x', text.len() - eq - 1);
            }
            entry = entry.add(1);
        }
    }
    for (name, _) in &found {
        // SAFETY: single-threaded (the caller's contract).
        unsafe { std::env::remove_var(name) };
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
