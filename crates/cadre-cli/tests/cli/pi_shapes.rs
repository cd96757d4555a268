//! Comparing cadre's JSON output with Pi's by shape: which keys an object has and which JSON
//! type every value is, recursively. Values (ids, timestamps, text, token counts) may differ.
//!
//! Differences that are meant are listed in an allowlist of [`Allow`] entries, each with the
//! reason, so a new difference fails the comparison instead of slipping in.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value};

/// The Pi release cadre is compared with.
pub const PI_VERSION: &str = "0.73.1";

/// The shape of a JSON value: objects keep their keys, arrays their elements, and every other
/// value becomes the name of its type (`"string"`, `"number"`, `"boolean"`, `"null"`).
pub fn shape(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), shape(v)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        other => Value::String(type_name(other).to_string()),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// How a path the allowlist names is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Not compared at all: the key may be missing on either side.
    Ignore,
    /// Only the JSON type of the value is compared, not what is inside (data such as tool
    /// arguments, whose keys are the model's, not the format's).
    Opaque,
    /// An array whose elements on cadre's side each have the shape of some element on Pi's
    /// side, in any number: for content that Pi serialises while it is still being written.
    Subset,
}

/// One intended difference.
#[derive(Clone, Copy, Debug)]
pub struct Allow {
    /// The event (line) type it applies to (`"message_update"`, …), or `"*"` for all.
    pub event: &'static str,
    /// Dot-separated keys from the top of the line; `[]` is any element of an array, `*` any
    /// key, `**` any number of keys and elements: `"message.content[].index"`,
    /// `"**.arguments"`.
    pub path: &'static str,
    pub rule: Rule,
    /// Why the difference is intended.
    pub reason: &'static str,
}

/// The label of one line in a sequence: its type, and for messages the role or the streaming
/// event type, so a reordering is reported as such rather than as a shape difference.
pub fn label(v: &Value) -> String {
    let kind = v["type"].as_str().unwrap_or("?");
    match kind {
        "message_start" | "message_end" => {
            format!("{kind}({})", v["message"]["role"].as_str().unwrap_or("?"))
        }
        "message_update" => format!(
            "{kind}({})",
            v["assistantMessageEvent"]["type"].as_str().unwrap_or("?")
        ),
        other => other.to_string(),
    }
}

/// Asserts that two sequences of JSON lines have the same labels in the same order and every
/// pair the same shape, apart from what `allow` permits. Panics with every difference found.
pub fn assert_same_shape(pi: &[Value], cadre: &[Value], allow: &[Allow]) {
    let pi_labels: Vec<String> = pi.iter().map(label).collect();
    let cadre_labels: Vec<String> = cadre.iter().map(label).collect();
    if pi_labels != cadre_labels {
        panic!(
            "the event sequences differ:\n{}",
            side_by_side(&pi_labels, &cadre_labels)
        );
    }
    let mut diffs = Vec::new();
    for (i, (p, c)) in pi.iter().zip(cadre).enumerate() {
        let event = p["type"].as_str().unwrap_or("?");
        let rules: Vec<&Allow> = allow
            .iter()
            .filter(|a| a.event == "*" || a.event == event)
            .collect();
        let mut found = Vec::new();
        compare(p, c, &mut Vec::new(), &rules, &mut found);
        diffs.extend(
            found
                .into_iter()
                .map(|d| format!("#{i} {}: {d}", pi_labels[i])),
        );
    }
    assert!(
        diffs.is_empty(),
        "cadre's output differs from Pi's in shape:\n{}",
        diffs.join("\n")
    );
}

/// The differences between two values, as `path: what` lines.
pub fn differences(pi: &Value, cadre: &Value, allow: &[Allow]) -> Vec<String> {
    let rules: Vec<&Allow> = allow.iter().collect();
    let mut found = Vec::new();
    compare(pi, cadre, &mut Vec::new(), &rules, &mut found);
    found
}

fn side_by_side(pi: &[String], cadre: &[String]) -> String {
    let n = pi.len().max(cadre.len());
    (0..n)
        .map(|i| {
            let p = pi.get(i).map_or("", String::as_str);
            let c = cadre.get(i).map_or("", String::as_str);
            let mark = if p == c { " " } else { "≠" };
            format!("{mark} {i:>3} pi: {p:<32} cadre: {c}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn rule_at(path: &[String], rules: &[&Allow]) -> Option<Rule> {
    rules
        .iter()
        .find(|a| path_matches(a.path, path))
        .map(|a| a.rule)
}

fn path_matches(pattern: &str, path: &[String]) -> bool {
    let parts: Vec<&str> = pattern.split('.').flat_map(split_brackets).collect();
    matches_from(&parts, path)
}

fn matches_from(parts: &[&str], path: &[String]) -> bool {
    match (parts.split_first(), path.split_first()) {
        (None, None) => true,
        (Some((&"**", rest)), _) => (0..=path.len()).any(|skip| matches_from(rest, &path[skip..])),
        (Some((p, rest)), Some((s, tail))) => {
            (*p == "*" || *p == s.as_str()) && matches_from(rest, tail)
        }
        _ => false,
    }
}

/// `content[]` is the key `content`, then any element.
fn split_brackets(part: &str) -> Vec<&str> {
    match part.strip_suffix("[]") {
        Some(key) if !key.is_empty() => vec![key, "[]"],
        _ => vec![part],
    }
}

fn show(path: &[String]) -> String {
    if path.is_empty() {
        return "(line)".into();
    }
    path.join(".").replace(".[]", "[]")
}

fn compare(
    pi: &Value,
    cadre: &Value,
    path: &mut Vec<String>,
    rules: &[&Allow],
    out: &mut Vec<String>,
) {
    match rule_at(path, rules) {
        Some(Rule::Ignore) => return,
        Some(Rule::Opaque) => {
            if type_name(pi) != type_name(cadre) {
                out.push(format!(
                    "{}: pi has {}, cadre {}",
                    show(path),
                    type_name(pi),
                    type_name(cadre)
                ));
            }
            return;
        }
        Some(Rule::Subset) => {
            if let (Value::Array(p), Value::Array(c)) = (pi, cadre) {
                for (i, item) in c.iter().enumerate() {
                    path.push("[]".into());
                    let fits = p.iter().any(|candidate| {
                        let mut found = Vec::new();
                        compare(candidate, item, path, rules, &mut found);
                        found.is_empty()
                    });
                    path.pop();
                    if !fits {
                        out.push(format!(
                            "{}[{i}]: cadre's {} has no counterpart in pi's {}",
                            show(path),
                            shape(item),
                            shape(pi)
                        ));
                    }
                }
                return;
            }
        }
        None => {}
    }
    match (pi, cadre) {
        (Value::Object(p), Value::Object(c)) => {
            for (key, pv) in p {
                path.push(key.clone());
                match c.get(key) {
                    Some(cv) => compare(pv, cv, path, rules, out),
                    None if rule_at(path, rules) == Some(Rule::Ignore) => {}
                    None => out.push(format!("{}: only pi has it ({})", show(path), shape(pv))),
                }
                path.pop();
            }
            for (key, cv) in c {
                if p.contains_key(key) {
                    continue;
                }
                path.push(key.clone());
                if rule_at(path, rules) != Some(Rule::Ignore) {
                    out.push(format!("{}: only cadre has it ({})", show(path), shape(cv)));
                }
                path.pop();
            }
        }
        (Value::Array(p), Value::Array(c)) => {
            if p.len() != c.len() {
                out.push(format!(
                    "{}: pi has {} elements, cadre {}",
                    show(path),
                    p.len(),
                    c.len()
                ));
                return;
            }
            path.push("[]".into());
            for (pv, cv) in p.iter().zip(c) {
                compare(pv, cv, path, rules, out);
            }
            path.pop();
        }
        (p, c) if type_name(p) != type_name(c) => out.push(format!(
            "{}: pi has {} {}, cadre {} {}",
            show(path),
            type_name(p),
            p,
            type_name(c),
            c
        )),
        _ => {}
    }
}

/// Parses JSON lines (every line must be JSON).
pub fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

/// Whether the suite runs in CI, where a missing peer is a failure rather than a skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Pi's executable: `CADRE_TEST_PI`, then `/tmp/pi/node_modules/.bin/pi`, then `pi` on `PATH`,
/// if it reports [`PI_VERSION`]. `None` (with a note on stderr) when there is none; under
/// `CI=true` that is a failure instead.
pub fn pi_binary() -> Option<PathBuf> {
    let found = candidates().into_iter().find(|p| p.is_file());
    let problem = match &found {
        None => "Pi is not installed (set CADRE_TEST_PI, or install it with `npm install --prefix /tmp/pi @mariozechner/pi-coding-agent@0.73.1`)".to_string(),
        Some(path) => match pi_version(path) {
            Some(v) if v == PI_VERSION => return found,
            other => format!(
                "{} reports version {other:?}, not {PI_VERSION}",
                path.display()
            ),
        },
    };
    assert!(!in_ci(), "{problem}");
    eprintln!("note: skipping the comparison with Pi: {problem}");
    None
}

fn candidates() -> Vec<PathBuf> {
    if let Some(path) = std::env::var_os("CADRE_TEST_PI") {
        // An explicit choice is the only one: a wrong path must not fall back silently.
        return vec![PathBuf::from(path)];
    }
    let mut out = vec![PathBuf::from("/tmp/pi/node_modules/.bin/pi")];
    if let Some(path) = std::env::var_os("PATH") {
        out.extend(std::env::split_paths(&path).map(|dir| dir.join("pi")));
    }
    out
}

fn pi_version(path: &Path) -> Option<String> {
    let out = Command::new(path)
        .arg("--version")
        .env("PI_OFFLINE", "1")
        .env("PI_TELEMETRY", "0")
        .output()
        .ok()?;
    // Pi prints its version on stderr.
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text.lines().find(|l| !l.trim().is_empty())?.trim();
    Some(line.rsplit(' ').next().unwrap_or(line).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shape_keeps_keys_and_types() {
        assert_eq!(
            shape(&json!({"a": 1, "b": ["x", null], "c": {"d": true}})),
            json!({"a": "number", "b": ["string", "null"], "c": {"d": "boolean"}})
        );
    }

    #[test]
    fn differences_name_the_path() {
        let pi = json!({"type": "t", "m": {"content": [{"type": "text", "text": "a"}], "id": "x"}});
        let cadre =
            json!({"type": "t", "m": {"content": [{"type": "text", "text": 1}], "extra": 2}});
        let d = differences(&pi, &cadre, &[]);
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d[0].starts_with("m.content[].text: pi has string"), "{d:?}");
        assert!(d[1].starts_with("m.id: only pi has it"), "{d:?}");
        assert!(d[2].starts_with("m.extra: only cadre has it"), "{d:?}");
    }

    #[test]
    fn allowlist_rules() {
        let pi = json!({"a": {"k": 1}, "b": [{"x": 1}, {"y": "s"}], "c": [{"i": 0}],
                        "e": [{"deep": {"k": 1}}]});
        let cadre = json!({"a": {"other": []}, "b": [{"y": "t"}], "c": [{}], "d": 1,
                           "e": [{"deep": {}}]});
        let allow = [
            Allow {
                event: "*",
                path: "a",
                rule: Rule::Opaque,
                reason: "data",
            },
            Allow {
                event: "*",
                path: "b",
                rule: Rule::Subset,
                reason: "streaming",
            },
            Allow {
                event: "*",
                path: "c[].i",
                rule: Rule::Ignore,
                reason: "scratch",
            },
            Allow {
                event: "*",
                path: "d",
                rule: Rule::Ignore,
                reason: "extra",
            },
            Allow {
                event: "*",
                path: "**.deep",
                rule: Rule::Opaque,
                reason: "data",
            },
        ];
        assert_eq!(differences(&pi, &cadre, &allow), Vec::<String>::new());
        let bad = json!({"a": "s", "b": [{"z": 1}], "c": [{}], "d": 1, "e": [{"deep": 1}]});
        assert_eq!(differences(&pi, &bad, &allow).len(), 3);
    }

    #[test]
    #[should_panic(expected = "the event sequences differ")]
    fn a_reordering_is_reported() {
        let a = [json!({"type": "agent_start"}), json!({"type": "agent_end"})];
        let b = [json!({"type": "agent_end"}), json!({"type": "agent_start"})];
        assert_same_shape(&a, &b, &[]);
    }
}
