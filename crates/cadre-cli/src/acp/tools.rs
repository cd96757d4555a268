//! How a cadre tool call looks in an editor: its ACP kind, title, locations and content.

use serde_json::{Value, json};

/// ACP's `ToolKind` for a tool name (the editor picks an icon and grouping from it).
pub fn kind(tool: &str) -> &'static str {
    match tool {
        "read" => "read",
        "edit" | "write" => "edit",
        "bash" => "execute",
        "grep" | "find" | "ls" => "search",
        // The orchestration tools delegate work; `think` is ACP's kind for planning steps.
        "Agent" | "SendMessage" | "TaskOutput" | "TaskStop" => "think",
        _ => "other",
    }
}

/// A short human title: the tool and what it acts on.
pub fn title(tool: &str, args: &Value) -> String {
    let s = |key: &str| args.get(key).and_then(Value::as_str).map(one_line);
    let subject = match tool {
        "read" | "edit" | "write" | "ls" => s("path"),
        "bash" => s("command"),
        "grep" | "find" => s("pattern"),
        "Agent" => s("description").or_else(|| {
            args.get("tasks")
                .and_then(Value::as_array)
                .map(|t| format!("{} tasks", t.len()))
        }),
        "SendMessage" | "TaskOutput" | "TaskStop" => s("task_id").or_else(|| s("to")),
        _ => None,
    };
    match subject {
        Some(subject) if !subject.is_empty() => format!("{tool}: {subject}"),
        _ => tool.to_string(),
    }
}

/// The first line of `text`, at most 120 characters.
fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(120).collect();
    if out.len() < line.len() || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

/// The files a call touches, as ACP locations (the editor can follow them).
pub fn locations(tool: &str, args: &Value, cwd: &std::path::Path) -> Vec<Value> {
    let Some(path) = args.get("path").and_then(Value::as_str) else {
        return Vec::new();
    };
    if !matches!(tool, "read" | "edit" | "write" | "ls" | "grep" | "find") {
        return Vec::new();
    }
    let path = cwd.join(path);
    let mut location = json!({"path": path});
    if tool == "read"
        && let Some(offset) = args.get("offset").and_then(Value::as_u64)
    {
        location["line"] = json!(offset);
    }
    vec![location]
}

/// The diffs an edit or write call makes, known from its arguments alone (no file is read:
/// `oldText` of an edit is the replaced fragment, a write shows the new content whole).
pub fn diffs(tool: &str, args: &Value, cwd: &std::path::Path) -> Vec<Value> {
    let Some(path) = args.get("path").and_then(Value::as_str) else {
        return Vec::new();
    };
    let path = cwd.join(path);
    match tool {
        "write" => args
            .get("content")
            .and_then(Value::as_str)
            .map(|content| vec![json!({"type": "diff", "path": path, "newText": content})])
            .unwrap_or_default(),
        "edit" => {
            let one = |e: &Value| {
                let old = e.get("oldText").and_then(Value::as_str)?;
                let new = e.get("newText").and_then(Value::as_str)?;
                Some(json!({"type": "diff", "path": path, "oldText": old, "newText": new}))
            };
            match args.get("edits").and_then(Value::as_array) {
                Some(edits) => edits.iter().filter_map(one).collect(),
                None => one(args).into_iter().collect(),
            }
        }
        _ => Vec::new(),
    }
}

/// A tool result's text (the `content` text blocks of cadre's tool result).
pub fn result_text(result: &Value) -> String {
    match result {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("content") {
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

/// The one place a refusal's code reaches ACP: a tool call's `_meta`
/// (`{"cadre/refusal": {"code": "plan_mode"}}`, or `{"cadre/refusals": [{"task", "code"}]}` for
/// a `tasks` launch), from the tool result's `details`; `None` for a call not refused.
pub fn refusal_meta(details: Option<&Value>) -> Option<Value> {
    use cadre_core::orchestrator::tools::{REFUSAL_DETAILS_KEY, REFUSALS_DETAILS_KEY};
    let details = details?;
    let mut meta = serde_json::Map::new();
    for (from, to) in [
        (REFUSAL_DETAILS_KEY, "cadre/refusal"),
        (REFUSALS_DETAILS_KEY, "cadre/refusals"),
    ] {
        if let Some(value) = details.get(from) {
            meta.insert(to.to_string(), value.clone());
        }
    }
    (!meta.is_empty()).then_some(Value::Object(meta))
}

/// ACP tool-call content holding `text`.
pub fn text_content(text: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": text}})
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn kinds_titles_and_locations_come_from_the_call() {
        assert_eq!(kind("bash"), "execute");
        assert_eq!(kind("mcp__srv__x"), "other");
        assert_eq!(
            title("bash", &json!({"command": "ls -la\nrm x"})),
            "bash: ls -la…"
        );
        assert_eq!(
            title("Agent", &json!({"description": "scan"})),
            "Agent: scan"
        );
        let cwd = std::path::Path::new("/p");
        let loc = locations("read", &json!({"path": "a.rs", "offset": 3}), cwd);
        assert_eq!(loc, vec![json!({"path": "/p/a.rs", "line": 3})]);
        assert!(locations("bash", &json!({"path": "x"}), cwd).is_empty());
    }

    #[test]
    fn a_refused_call_s_code_becomes_its_meta() {
        let details = json!({"refusal": {"code": "plan_mode"}});
        assert_eq!(
            refusal_meta(Some(&details)),
            Some(json!({"cadre/refusal": {"code": "plan_mode"}}))
        );
        assert_eq!(refusal_meta(Some(&json!({"other": 1}))), None);
        assert_eq!(refusal_meta(None), None);
    }

    #[test]
    fn edits_and_writes_are_diffs() {
        let cwd = std::path::Path::new("/p");
        let d = diffs(
            "edit",
            &json!({"path": "a", "edits": [{"oldText": "x", "newText": "y"}]}),
            cwd,
        );
        assert_eq!(d[0]["oldText"], "x");
        assert_eq!(d[0]["newText"], "y");
        let d = diffs("write", &json!({"path": "a", "content": "z"}), cwd);
        assert_eq!(d[0]["newText"], "z");
        assert!(d[0].get("oldText").is_none());
    }
}
