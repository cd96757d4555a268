//! `${VAR}` and `${VAR:-default}` in server configurations, as Claude Code expands them in
//! `command`, `args`, `env`, `url` and `headers`.
//!
//! A variable that is unset and has no default makes the server unusable (its configuration
//! would otherwise run with an empty token or path); the message names every missing one.

use std::collections::BTreeMap;

use crate::config::{McpServerConfig, McpTransport};

/// Expand one string. `lookup` reads a variable; missing ones are collected into `missing`.
pub fn expand_str(
    s: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    missing: &mut Vec<String>,
) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let inner = &rest[start + 2..start + 2 + len];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        if is_var_name(name) {
            match (lookup(name), default) {
                (Some(value), _) => out.push_str(&value),
                (None, Some(default)) => out.push_str(default),
                (None, None) => {
                    if !missing.iter().any(|m| m == name) {
                        missing.push(name.to_string());
                    }
                }
            }
        } else {
            // Not a variable reference (`${}` or `${a b}`): kept as written.
            out.push_str(&rest[start..start + 3 + len]);
        }
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    out
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn expand_map(
    map: &BTreeMap<String, String>,
    lookup: &dyn Fn(&str) -> Option<String>,
    missing: &mut Vec<String>,
) -> BTreeMap<String, String> {
    map.iter()
        .map(|(k, v)| (k.clone(), expand_str(v, lookup, missing)))
        .collect()
}

/// Where the scheme and host of a URL end (user info counts as past them).
fn authority_end(url: &str) -> usize {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return 0;
    };
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    match url[start..end].rfind('@') {
        Some(_) => start,
        None => end,
    }
}

/// The configuration with every variable expanded, or an error naming the missing ones.
pub fn expand_config(
    config: &McpServerConfig,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<McpServerConfig, String> {
    let mut missing = Vec::new();
    let transport = match &config.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => McpTransport::Stdio {
            command: expand_str(command, lookup, &mut missing),
            args: args
                .iter()
                .map(|a| expand_str(a, lookup, &mut missing))
                .collect(),
            env: expand_map(env, lookup, &mut missing),
            cwd: cwd.clone(),
        },
        McpTransport::Http { url, headers } => {
            // What a variable puts into a header or past the URL's host (a path segment, the
            // query, user info) is taken for a credential: it becomes a secret of this process,
            // redacted wherever it shows up (an error that quotes the URL, a warning).
            let used = std::cell::RefCell::new(Vec::new());
            let recording = |name: &str| {
                let value = lookup(name);
                if let Some(v) = &value {
                    used.borrow_mut().push(v.clone());
                }
                value
            };
            let split = authority_end(url);
            let host = expand_str(&url[..split], lookup, &mut missing);
            let rest = expand_str(&url[split..], &recording, &mut missing);
            let headers = expand_map(headers, &recording, &mut missing);
            cadre_protocol::redact::set_secrets(used.into_inner());
            McpTransport::Http {
                url: host + &rest,
                headers,
            }
        }
    };
    if !missing.is_empty() {
        return Err(format!(
            "missing environment variable(s) {} (set them, or write ${{VAR:-default}})",
            missing.join(", ")
        ));
    }
    Ok(McpServerConfig {
        name: config.name.clone(),
        transport,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "TOKEN" => Some("t0k".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn expand(s: &str) -> (String, Vec<String>) {
        let mut missing = Vec::new();
        let out = expand_str(s, &env, &mut missing);
        (out, missing)
    }

    #[test]
    fn variables_and_defaults_expand() {
        assert_eq!(expand("${HOME}/x").0, "/home/u/x");
        assert_eq!(expand("Bearer ${TOKEN}").0, "Bearer t0k");
        assert_eq!(expand("${NOPE:-fallback}").0, "fallback");
        assert_eq!(expand("${NOPE:-}").0, "");
        assert_eq!(expand("${HOME:-unused}").0, "/home/u");
        // A set but empty variable is used as it is (Claude Code's `:-` keeps it too).
        assert_eq!(expand("[${EMPTY:-d}]").0, "[]");
        assert_eq!(expand("${HOME}${TOKEN}").0, "/home/ut0k");
        assert_eq!(expand("${NOPE:-a:-b}").0, "a:-b");
    }

    #[test]
    fn other_text_is_kept() {
        for s in [
            "$HOME",
            "${",
            "${HOME",
            "${}",
            "${a b}",
            "a}b",
            "$${X:-y}",
            "é${NOPE:-ü}",
        ] {
            let (out, missing) = expand(s);
            assert!(missing.is_empty(), "{s}");
            let want = match s {
                "$${X:-y}" => "$y",
                "é${NOPE:-ü}" => "éü",
                other => other,
            };
            assert_eq!(out, want, "{s}");
        }
    }

    #[test]
    fn url_and_header_values_become_secrets() {
        let lookup = |name: &str| match name {
            "HOST" => Some("mcp.example.com".to_string()),
            "KEY" => Some("sk-url-key-0123456789".to_string()),
            "HDR" => Some("header-secret-0123".to_string()),
            _ => None,
        };
        let config = McpServerConfig {
            name: "s".into(),
            transport: McpTransport::Http {
                url: "https://${HOST}/mcp?api_key=${KEY}".into(),
                headers: [("Authorization".to_string(), "Bearer ${HDR}".to_string())].into(),
            },
        };
        let McpTransport::Http { url, .. } = expand_config(&config, &lookup).unwrap().transport
        else {
            panic!()
        };
        assert_eq!(
            url,
            "https://mcp.example.com/mcp?api_key=sk-url-key-0123456789"
        );
        let shown =
            cadre_protocol::redact::redact_str(&format!("{url} header-secret-0123")).into_owned();
        assert_eq!(
            shown,
            "https://mcp.example.com/mcp?api_key=[redacted] [redacted]"
        );
    }

    #[test]
    fn missing_variables_are_named_once() {
        let (_, missing) = expand("${A}/${B}/${A}");
        assert_eq!(missing, ["A", "B"]);
        let config = McpServerConfig {
            name: "s".into(),
            transport: McpTransport::Http {
                url: "https://${HOST}/mcp".into(),
                headers: [("Authorization".to_string(), "Bearer ${TOKEN}".to_string())].into(),
            },
        };
        let err = expand_config(&config, &env).unwrap_err();
        assert_eq!(authority_end("https://h:1/p?q"), 11);
        assert_eq!(authority_end("https://u:p@h/p"), 8);
        assert_eq!(authority_end("${URL}"), 0);
        assert!(
            err.starts_with("missing environment variable(s) HOST"),
            "{err}"
        );
        let config = McpServerConfig {
            name: "s".into(),
            transport: McpTransport::Stdio {
                command: "${HOME}/bin/srv".into(),
                args: vec!["--token=${TOKEN}".into()],
                env: [("K".to_string(), "${NOPE:-d}".to_string())].into(),
                cwd: None,
            },
        };
        let McpTransport::Stdio {
            command,
            args,
            env: e,
            ..
        } = expand_config(&config, &env).unwrap().transport
        else {
            panic!()
        };
        assert_eq!(
            (command.as_str(), args[0].as_str(), e["K"].as_str()),
            ("/home/u/bin/srv", "--token=t0k", "d")
        );
    }
}
