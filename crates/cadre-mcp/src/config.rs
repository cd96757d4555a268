//! MCP server configuration: Claude Code's `mcpServers` shape (`.mcp.json` and settings).
//!
//! An entry is either a child process (`{"command", "args", "env"}`, `"type": "stdio"`
//! optional) or a streamable HTTP endpoint (`{"type": "http", "url", "headers"}`). Entries
//! are parsed one by one so that a bad entry costs only itself.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One MCP server: its name (the `<server>` of `mcp__<server>__<tool>`) and how to reach it.
#[derive(Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    pub name: String,
    pub transport: McpTransport,
}

/// How an MCP server is reached.
#[derive(Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking MCP on its stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the child's environment (which otherwise holds no credentials).
        env: BTreeMap<String, String>,
        /// The child's working directory; `None`: the project directory.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        /// Sent with every request (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

impl McpTransport {
    /// `stdio` or `http`, as `cadre doctor` shows it.
    pub fn kind(&self) -> &'static str {
        match self {
            McpTransport::Stdio { .. } => "stdio",
            McpTransport::Http { .. } => "http",
        }
    }

    /// What it runs or where it connects, without argument, environment or header values
    /// (they may hold secrets); of a URL only `scheme://host[:port]`, since its path, query
    /// and user info can hold an expanded `${TOKEN}`.
    pub fn target(&self) -> String {
        match self {
            McpTransport::Stdio { command, .. } => command.clone(),
            McpTransport::Http { url, .. } => url_without_secrets(url),
        }
    }
}

/// A URL's scheme, host and port: no user info, path, query or fragment.
pub fn url_without_secrets(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
            let host = authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}")
        }
        None => "(not a URL)".to_string(),
    }
}

/// Why `url` cannot be an HTTP server's endpoint, if it cannot: only `http` and `https`.
fn check_url(url: &str) -> Result<(), String> {
    let scheme = url.split_once("://").map(|(scheme, _)| scheme);
    match scheme {
        Some(s) if s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https") => Ok(()),
        Some(s) if s.len() <= 16 && s.chars().all(|c| c.is_ascii_alphanumeric()) => Err(format!(
            "the url's scheme is {s:?}; an http server needs an http:// or https:// URL"
        )),
        _ => Err("the url is not an http:// or https:// URL".into()),
    }
}

impl McpTransport {
    /// Why this transport cannot be used, if it cannot (for configurations not parsed from
    /// an entry, or whose variables were expanded since).
    pub fn check(&self) -> Result<(), String> {
        match self {
            McpTransport::Http { url, .. } => check_url(url),
            McpTransport::Stdio { env, .. } => env.keys().try_for_each(|k| check_env_key(k)),
        }
    }
}

/// Why `key` cannot be an environment variable's name, if it cannot.
fn check_env_key(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("an `env` key is empty".into());
    }
    if key.contains(['=', '\0']) {
        return Err(format!(
            "the `env` key {:?} holds `=` or NUL, which no variable name can",
            crate::shown::server_text(key)
        ));
    }
    Ok(())
}

// Environment values, arguments and headers can carry tokens: Debug shows their keys only.
impl fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", &format_args!("[{} argument(s)]", args.len()))
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            McpTransport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &url_without_secrets(url))
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

impl fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .finish()
    }
}

/// A `mcpServers` entry as written (Claude Code's shape).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Entry {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<String, String>,
    /// Claude Code's OAuth settings for HTTP servers; accepted so that such a file parses,
    /// and unused (cadre sends only the configured headers).
    #[serde(default, skip_serializing)]
    #[allow(dead_code)]
    oauth: Option<Value>,
    /// Fields other clients add (`disabled`, `timeout`, …): ignored, with a note, so that a
    /// file shared with them still works and a misspelt field is still pointed out.
    #[serde(flatten, skip_serializing)]
    extra: BTreeMap<String, Value>,
}

impl McpTransport {
    /// The transport of one entry's JSON value.
    pub fn from_entry(value: &Value) -> Result<McpTransport, String> {
        Self::from_entry_noting(value).map(|(transport, _)| transport)
    }

    /// [`McpTransport::from_entry`], with the fields it ignored.
    pub fn from_entry_noting(value: &Value) -> Result<(McpTransport, Vec<String>), String> {
        let entry: Entry = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
        let ignored: Vec<String> = entry.extra.keys().cloned().collect();
        let unknown = if ignored.is_empty() {
            String::new()
        } else {
            format!(" (unknown field(s) {} too)", quoted(&ignored))
        };
        Self::from_parsed(entry)
            .map(|t| (t, ignored))
            .map_err(|why| format!("{why}{unknown}"))
    }

    fn from_parsed(entry: Entry) -> Result<McpTransport, String> {
        let kind =
            entry
                .kind
                .as_deref()
                .unwrap_or(if entry.url.is_some() { "http" } else { "stdio" });
        match kind {
            "stdio" => {
                if entry.url.is_some() || !entry.headers.is_empty() {
                    return Err("a stdio server takes no `url` or `headers`".into());
                }
                let command = entry
                    .command
                    .filter(|c| !c.trim().is_empty())
                    .ok_or("a stdio server needs a `command`")?;
                for key in entry.env.keys() {
                    check_env_key(key)?;
                }
                if entry
                    .env
                    .values()
                    .chain(&entry.args)
                    .any(|v| v.contains('\0'))
                    || command.contains('\0')
                {
                    return Err("a `command`, argument or `env` value holds NUL".into());
                }
                Ok(McpTransport::Stdio {
                    command,
                    args: entry.args,
                    env: entry.env,
                    cwd: entry.cwd,
                })
            }
            "http" | "streamable-http" => {
                if entry.command.is_some() || !entry.args.is_empty() || !entry.env.is_empty() {
                    return Err("an http server takes no `command`, `args` or `env`".into());
                }
                let url = entry
                    .url
                    .filter(|u| !u.trim().is_empty())
                    .ok_or("an http server needs a `url`")?;
                // A URL made of variables is checked once they are expanded.
                if !url.contains("${") {
                    check_url(&url)?;
                }
                Ok(McpTransport::Http {
                    url,
                    headers: entry.headers,
                })
            }
            "sse" => Err(
                "the legacy SSE transport is not supported; use the server's streamable HTTP \
                 endpoint with \"type\": \"http\""
                    .into(),
            ),
            other => Err(format!(
                "unknown server type {other:?} (expected \"stdio\" or \"http\")"
            )),
        }
    }

    /// The entry's JSON value (Claude Code's shape).
    pub fn to_entry(&self) -> Value {
        let entry = match self.clone() {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => Entry {
                command: Some(command),
                args,
                env,
                cwd,
                ..Entry::default()
            },
            McpTransport::Http { url, headers } => Entry {
                kind: Some("http".into()),
                url: Some(url),
                headers,
                ..Entry::default()
            },
        };
        serde_json::to_value(entry).unwrap_or(Value::Null)
    }
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The servers of one `mcpServers` object, and a message for each entry that could not be
/// used (`"<name>": <why>; it is ignored`) or had fields that were ignored. Names are not
/// checked here (see `names`).
pub fn parse_servers(map: &serde_json::Map<String, Value>) -> (Vec<McpServerConfig>, Vec<String>) {
    let mut servers = Vec::new();
    let mut problems = Vec::new();
    for (name, value) in map {
        match McpTransport::from_entry_noting(value) {
            Ok((transport, ignored)) => {
                if !ignored.is_empty() {
                    problems.push(format!(
                        "{name:?}: unknown field(s) {} ignored",
                        quoted(&ignored)
                    ));
                }
                servers.push(McpServerConfig {
                    name: name.clone(),
                    transport,
                });
            }
            Err(why) => problems.push(format!("{name:?}: {why}; it is ignored")),
        }
    }
    (servers, problems)
}

/// The servers of a `.mcp.json` file's text (`{"mcpServers": {...}}`), with the messages of
/// [`parse_servers`]; a file that is not such an object is an error.
pub fn parse_mcp_json(text: &str) -> Result<(Vec<McpServerConfig>, Vec<String>), String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(top) = value else {
        return Err("expected an object with `mcpServers`".into());
    };
    match top.get("mcpServers") {
        None => Ok((Vec::new(), Vec::new())),
        Some(Value::Object(map)) => Ok(parse_servers(map)),
        Some(_) => Err("`mcpServers` must be an object".into()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_code_shapes_parse() {
        let text = r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "server"], "env": {"K": "v"}},
            "typed": {"type": "stdio", "command": "x"},
            "web": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer t"}},
            "bare": {"url": "http://127.0.0.1:1/mcp"}
        }}"#;
        let (servers, problems) = parse_mcp_json(text).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        // In the file's order, as Claude Code lists them.
        assert_eq!(names, ["fs", "typed", "web", "bare"]);
        assert_eq!(servers[3].transport.kind(), "http");
        let McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } = &servers[0].transport
        else {
            panic!("{:?}", servers[0]);
        };
        assert_eq!(
            (command.as_str(), args.len(), env["K"].as_str(), cwd),
            ("npx", 2, "v", &None)
        );
        let McpTransport::Http { url, headers } = &servers[2].transport else {
            panic!("{:?}", servers[2]);
        };
        assert_eq!(
            (url.as_str(), headers["Authorization"].as_str()),
            ("https://h/mcp", "Bearer t")
        );
    }

    #[test]
    fn bad_entries_cost_only_themselves() {
        let text = r#"{"mcpServers": {
            "ok": {"command": "x"},
            "none": {},
            "sse": {"type": "sse", "url": "http://h/sse"},
            "odd": {"type": "ws", "url": "ws://h"},
            "mixed": {"command": "x", "url": "http://h"},
            "typo": {"comand": "x"},
            "num": 3,
            "extra": {"command": "x", "disabled": false, "timeout": 5}
        }}"#;
        let (servers, problems) = parse_mcp_json(text).unwrap();
        assert_eq!(servers.len(), 2);
        assert_eq!(problems.len(), 7, "{problems:?}");
        let all = problems.join("\n");
        assert!(
            all.contains("\"none\": a stdio server needs a `command`"),
            "{all}"
        );
        assert!(
            all.contains("\"sse\": the legacy SSE transport is not supported"),
            "{all}"
        );
        assert!(all.contains("unknown server type \"ws\""), "{all}");
        assert!(
            all.contains("\"typo\": a stdio server needs a `command` (unknown field(s) `comand` too); it is ignored"),
            "{all}"
        );
        assert!(
            all.contains("\"extra\": unknown field(s) `disabled`, `timeout` ignored"),
            "{all}"
        );
        assert!(all.contains("\"num\": invalid type"), "{all}");
        assert!(parse_mcp_json("[]").is_err());
        assert!(parse_mcp_json(r#"{"mcpServers": []}"#).is_err());
        assert!(
            parse_mcp_json("{")
                .unwrap_err()
                .starts_with("not valid JSON")
        );
        assert_eq!(parse_mcp_json("{}").unwrap().0.len(), 0);
    }

    #[test]
    fn urls_need_http_and_env_keys_must_be_names() {
        for (entry, why) in [
            (json!({"url": "file:///etc/passwd"}), "scheme is \"file\""),
            (
                json!({"type": "http", "url": "ws://h/mcp"}),
                "scheme is \"ws\"",
            ),
            (json!({"url": "h/mcp"}), "not an http:// or https:// URL"),
            (
                json!({"command": "x", "env": {"": "v"}}),
                "`env` key is empty",
            ),
            (
                json!({"command": "x", "env": {"A=B": "v"}}),
                "holds `=` or NUL",
            ),
            (
                json!({"command": "x", "env": {"A\0": "v"}}),
                "holds `=` or NUL",
            ),
            (json!({"command": "x", "args": ["a\0"]}), "holds NUL"),
        ] {
            let err = McpTransport::from_entry(&entry).unwrap_err();
            assert!(err.contains(why), "{entry}: {err}");
        }
        assert!(McpTransport::from_entry(&json!({"url": "HTTPS://h/mcp"})).is_ok());
    }

    #[test]
    fn entries_round_trip_and_debug_hides_values() {
        for value in [
            json!({"command": "c", "args": ["a"], "env": {"TOKEN": "secret"}}),
            json!({"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "secret"}}),
        ] {
            let transport = McpTransport::from_entry(&value).unwrap();
            assert_eq!(transport.to_entry(), value);
            let debug = format!("{transport:?}");
            assert!(!debug.contains("secret"), "{debug}");
        }
        assert_eq!(
            url_without_secrets("https://u:p@h:1/m/secret?k=secret#f"),
            "https://h:1"
        );
        assert_eq!(url_without_secrets("https://h?k=s"), "https://h");
        let http = McpTransport::from_entry(&json!({"url": "https://h/t0ken/mcp?k=v"})).unwrap();
        assert_eq!(http.target(), "https://h");
    }
}
