//! Management commands (SPEC I2): `cadre agents`, `cadre doctor`, `cadre tasks`, `cadre task …`,
//! `cadre trace` and `cadre trust`. Each reads the same configuration a run does, prints a report and exits;
//! none needs the network, and only `task apply` runs a process (git).

pub mod agents;
pub mod doctor;
pub mod format;
pub mod role_check;
pub mod task;
pub mod tasks;
pub mod trace;
pub mod trust;

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use cadre_core::config::{CadreHome, TrustStore, project_root};
use cadre_core::roles::ProjectTrust;

/// Where a command runs: cadre's home, the working directory and its project root.
pub struct Place {
    pub home: CadreHome,
    pub cwd: PathBuf,
    pub root: PathBuf,
}

impl Place {
    pub fn from_env() -> Result<Place> {
        let home = CadreHome::from_env().context("cannot locate CADRE_HOME")?;
        // Private before a command writes in it (trust.json, stop requests, MCP logs).
        match home.ensure_private() {
            Ok(Some(note)) => errln!("cadre: {note}"),
            Ok(None) => {}
            Err(e) => errln!("cadre: warning: {e}"),
        }
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let root = project_root(&cwd);
        Ok(Place { home, cwd, root })
    }

    /// The project's trust as a run would decide it (T4). A trust store that cannot be read trusts
    /// nothing, and the reason says so, so a typo in `trust.json` is noticed.
    pub fn trust(&self, flag: bool) -> ProjectTrust {
        if flag {
            return ProjectTrust::Trusted;
        }
        match TrustStore::load(&self.home) {
            Ok(store) => ProjectTrust::from_store(&store, &self.root, false),
            Err(e) => ProjectTrust::Untrusted {
                reason: format!("the trust store cannot be read ({e}); no project is trusted"),
            },
        }
    }
}

/// Write a whole report to stdout. A closed pipe (`cadre tasks | head`) ends the output quietly
/// instead of panicking as `print!` would.
pub fn print_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(terminal_safe(text).as_bytes());
    let _ = out.flush();
}

/// `text` without the characters a file could use to take over a terminal: control characters
/// other than newline and tab (escape sequences, carriage returns) and the bidirectional
/// overrides that make text read other than it is. The reports show names, keys, paths and
/// notes from role files, settings and task records, all of which a repository can write.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t') || cadre_protocol::display::is_bidi_control(c)
    };
    if text.chars().any(unsafe_char) {
        std::borrow::Cow::Owned(text.chars().filter(|c| !unsafe_char(*c)).collect())
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Write notes (`cadre: warning: …`) to stderr, never panicking.
pub fn print_err(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(terminal_safe(text).as_bytes());
    let _ = err.flush();
}

#[cfg(test)]
mod tests {
    #[test]
    fn reports_carry_no_terminal_controls() {
        let hostile = "name\u{1b}]0;owned\u{7}\u{1b}[2J \u{202e}txt.exe\r\nnext\tcol";
        assert_eq!(
            super::terminal_safe(hostile),
            "name]0;owned[2J txt.exe\nnext\tcol"
        );
        assert!(matches!(
            super::terminal_safe("plain\n"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
