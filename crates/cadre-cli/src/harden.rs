//! What cadre does to its own process before anything else runs (S5, S8).
//!
//! - Credentials leave the environment: the variables whose names mark credentials, those
//!   holding a URL with a password, and those `models.json` takes keys and headers from
//!   whatever their names, are kept for cadre's own
//!   lookups, overwritten in the environment block (what `/proc/<cadre>/environ` shows) and
//!   removed, so no process cadre starts inherits them.
//! - Descriptors cadre inherited beyond stdio are marked close-on-exec: no command writes
//!   through them past the sandbox.
//! - `PATH` loses relative and empty entries: a repository's `node_modules/.bin/git` never
//!   runs as `git`.
//! - The process is not dumpable: other processes of the same user (not root) cannot read its
//!   memory or `/proc` files. The kernel resets this for the programs cadre executes.

/// Harden the process. Must run first in `main`, while the process has one thread.
pub fn process_start() {
    let referenced: Vec<String> = cadre_core::config::CadreHome::from_env()
        .ok()
        .and_then(|home| {
            cadre_llm::ModelRegistry::load(home.root(), &cadre_llm::registry::ProcessEnv).ok()
        })
        .map(|registry| registry.referenced_env_names())
        .unwrap_or_default();
    let is_credential = |name: &str, value: &str| {
        cadre_tools::shell_env::is_credential(name, value) || referenced.iter().any(|r| r == name)
    };
    cadre_tools::fds::close_inherited_on_exec();
    let clean_path =
        std::env::var_os("PATH").and_then(|path| cadre_tools::shell_env::absolute_path_only(&path));
    // SAFETY: called first in `main`: no runtime, no other thread, and nothing holds a pointer
    // into the environment, which is what changing it requires.
    #[allow(unsafe_code)]
    unsafe {
        cadre_llm::registry::hide_credentials(is_credential);
        if let Some(path) = clean_path {
            std::env::set_var("PATH", path);
        }
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}
