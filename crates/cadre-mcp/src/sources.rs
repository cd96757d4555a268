//! Where server configurations come from, in increasing precedence: `mcpServers` in
//! `CADRE_HOME/settings.json`, the project's `.mcp.json` (Claude Code's file), and `mcpServers`
//! in the project's `.cadre/settings.json`. A later source's server replaces an earlier one of
//! the same name. Project files count only in a trusted project: an untrusted project's
//! `.mcp.json` is ignored with a note saying how to trust it (its `.cadre/settings.json` is
//! not read at all, as for every other setting).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{McpServerConfig, parse_mcp_json, parse_servers};
use crate::expand::expand_config;
use crate::names::check_server_name;

/// The files to read.
#[derive(Debug, Clone)]
pub struct SourceFiles {
    /// `CADRE_HOME/settings.json`.
    pub user_settings: PathBuf,
    /// The project's `.mcp.json`.
    pub project_mcp_json: PathBuf,
    /// The project's `.cadre/settings.json`.
    pub project_settings: PathBuf,
    pub trusted: bool,
}

/// A server and the file it came from (`None`: the front end added it).
#[derive(Debug, Clone)]
pub struct ConfiguredServer {
    pub config: McpServerConfig,
    pub source: Option<PathBuf>,
}

/// The configured servers, ready to start.
#[derive(Debug, Clone, Default)]
pub struct Configured {
    pub servers: Vec<ConfiguredServer>,
    /// Lines for the person running cadre (`note: …`, `warning: …`).
    pub notes: Vec<String>,
    /// The project's `.mcp.json`, when it exists and was ignored because the project is not
    /// trusted.
    pub ignored_untrusted: Option<PathBuf>,
}

impl Configured {
    /// Read every source. `lookup` reads an environment variable for `${VAR}`.
    pub fn load(files: &SourceFiles, lookup: &dyn Fn(&str) -> Option<String>) -> Configured {
        let mut out = Configured::default();
        out.read(&files.user_settings, FileKind::Settings, lookup);
        if files.trusted {
            out.read(&files.project_mcp_json, FileKind::McpJson, lookup);
            out.read(&files.project_settings, FileKind::Settings, lookup);
        } else if files.project_mcp_json.exists() {
            out.note(format!(
                "note: {} is ignored: the project is not trusted (`cadre trust` trusts it, \
                 --trust for one run)",
                files.project_mcp_json.display()
            ));
            out.ignored_untrusted = Some(files.project_mcp_json.clone());
        }
        out
    }

    /// Add servers a front end names (an editor's), over configured ones of the same name.
    /// Their values are used as given: `${VAR}` is the configuration files' syntax.
    pub fn add(&mut self, servers: &[McpServerConfig]) {
        for config in servers {
            self.insert(config, None, None);
        }
    }

    /// Keep a note, fit for a terminal (one line, bounded, without registered secrets).
    fn note(&mut self, text: String) {
        self.notes.push(crate::shown::message(&text));
    }

    /// The configurations to start.
    pub fn configs(&self) -> Vec<McpServerConfig> {
        self.servers.iter().map(|s| s.config.clone()).collect()
    }

    fn read(&mut self, path: &Path, kind: FileKind, lookup: &dyn Fn(&str) -> Option<String>) {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                self.notes
                    .push(format!("warning: cannot read {}: {e}", path.display()));
                return;
            }
        };
        let parsed = match kind {
            FileKind::McpJson => parse_mcp_json(&text),
            FileKind::Settings => settings_servers(&text),
        };
        let (servers, problems) = match parsed {
            Ok(found) => found,
            Err(why) => {
                self.note(format!(
                    "warning: the MCP servers of {} are ignored: {why}",
                    path.display()
                ));
                return;
            }
        };
        for problem in problems {
            self.note(format!(
                "warning: MCP server {problem} (in {})",
                path.display()
            ));
        }
        for config in &servers {
            self.insert(config, Some(path), Some(lookup));
        }
    }

    fn insert(
        &mut self,
        config: &McpServerConfig,
        source: Option<&Path>,
        lookup: Option<Lookup<'_>>,
    ) {
        let from = source
            .map(|p| format!(" (in {})", p.display()))
            .unwrap_or_default();
        if let Err(why) = check_server_name(&config.name) {
            self.note(format!(
                "warning: MCP server {:?}{from} is ignored: {why}",
                config.name
            ));
            return;
        }
        let expanded = match lookup {
            Some(lookup) => expand_config(config, lookup),
            None => Ok(config.clone()),
        };
        let config = match expanded.and_then(|c| c.transport.check().map(|()| c)) {
            Ok(config) => config,
            Err(why) => {
                self.note(format!(
                    "warning: MCP server `{}`{from} is ignored: {why}",
                    config.name
                ));
                return;
            }
        };
        self.servers.retain(|s| s.config.name != config.name);
        self.servers.push(ConfiguredServer {
            config,
            source: source.map(Path::to_path_buf),
        });
    }
}

/// Reads a variable for `${VAR}`.
type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

enum FileKind {
    Settings,
    McpJson,
}

/// The `mcpServers` of a settings file's text.
fn settings_servers(text: &str) -> Result<(Vec<McpServerConfig>, Vec<String>), String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    match value.get("mcpServers") {
        None | Some(Value::Null) => Ok((Vec::new(), Vec::new())),
        Some(Value::Object(map)) => Ok(parse_servers(map)),
        Some(_) => Err("`mcpServers` must be an object".into()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::config::McpTransport;

    fn files(dir: &Path, trusted: bool) -> SourceFiles {
        SourceFiles {
            user_settings: dir.join("home/settings.json"),
            project_mcp_json: dir.join("p/.mcp.json"),
            project_settings: dir.join("p/.cadre/settings.json"),
            trusted,
        }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "t".to_string())
    }

    fn command_of(c: &Configured, name: &str) -> String {
        let s = c.servers.iter().find(|s| s.config.name == name).unwrap();
        match &s.config.transport {
            McpTransport::Stdio { command, .. } => command.clone(),
            McpTransport::Http { url, .. } => url.clone(),
        }
    }

    #[test]
    fn sources_layer_and_trust_decides_project_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path(), true);
        write(
            &f.user_settings,
            r#"{"mcpServers": {"a": {"command": "user-a"}, "b": {"command": "user-b"}}}"#,
        );
        write(
            &f.project_mcp_json,
            r#"{"mcpServers": {"b": {"command": "mcp-json-b"}, "c": {"url": "https://h/${TOKEN}"}}}"#,
        );
        write(
            &f.project_settings,
            r#"{"mcpServers": {"c": {"command": "project-c"}}}"#,
        );
        let c = Configured::load(&f, &env);
        assert!(c.notes.is_empty(), "{:?}", c.notes);
        assert_eq!(command_of(&c, "a"), "user-a");
        assert_eq!(command_of(&c, "b"), "mcp-json-b");
        assert_eq!(command_of(&c, "c"), "project-c");
        assert_eq!(
            c.servers
                .iter()
                .find(|s| s.config.name == "b")
                .unwrap()
                .source
                .as_deref(),
            Some(f.project_mcp_json.as_path())
        );

        let c = Configured::load(&files(dir.path(), false), &env);
        assert_eq!(c.servers.len(), 2);
        assert_eq!(command_of(&c, "b"), "user-b");
        assert_eq!(
            c.ignored_untrusted.as_deref(),
            Some(f.project_mcp_json.as_path())
        );
        assert!(
            c.notes[0].contains("is ignored: the project is not trusted (`cadre trust`"),
            "{:?}",
            c.notes
        );

        let mut c = Configured::load(&f, &env);
        c.add(&[McpServerConfig {
            name: "a".into(),
            transport: McpTransport::Stdio {
                command: "editor-a".into(),
                args: vec![],
                env: Default::default(),
                cwd: None,
            },
        }]);
        assert_eq!(command_of(&c, "a"), "editor-a");
        assert!(
            c.servers
                .iter()
                .find(|s| s.config.name == "a")
                .unwrap()
                .source
                .is_none()
        );
    }

    #[test]
    fn bad_names_entries_and_variables_are_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path(), true);
        write(
            &f.user_settings,
            r#"{"mcpServers": {"ok": {"command": "x"}, "bad name": {"command": "x"},
               "a__b": {"command": "x"}, "v": {"command": "${MISSING}"}, "e": {},
               "a_": {"command": "x"}, "u": {"url": "${SCHEME:-ftp}://h/mcp"}}}"#,
        );
        write(&f.project_mcp_json, "{not json");
        write(&f.project_settings, r#"{"mcpServers": 1}"#);
        let c = Configured::load(&f, &env);
        assert_eq!(c.configs().len(), 1);
        let notes = c.notes.join("\n");
        for want in [
            "MCP server \"bad name\" (in ",
            "may hold only letters",
            "cannot contain `__`",
            "MCP server \"a_\" (in ",
            "cannot start or end with `_`",
            "MCP server `u` (in ",
            "scheme is \"ftp\"",
            "MCP server `v` (in ",
            "missing environment variable(s) MISSING",
            "\"e\": a stdio server needs a `command`",
            ".mcp.json are ignored: not valid JSON",
            "`mcpServers` must be an object",
        ] {
            assert!(notes.contains(want), "{want} in {notes}");
        }
    }
}
