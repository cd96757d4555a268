//! Turning agent events into output: JSON lines, or a readable transcript for people.

use std::io::Write;

use cadre_protocol::{AgentEvent, ContentBlock, Message};
use serde_json::Value;

/// Print one event as a JSON line on stdout. A closed stdout (e.g. `| head`) is not an error
/// worth dying for mid-run; the caller learns of it from the return value.
pub fn print_json_line<T: serde::Serialize>(value: &T) -> bool {
    let Ok(line) = serde_json::to_string(value) else {
        return false;
    };
    // Streamed text has not passed the agent's redaction yet: a provider that echoes a key
    // into its answer must not print it (S5).
    let line = cadre_protocol::redact::redact_str(&line);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").and_then(|_| out.flush()).is_ok()
}

/// A compact, human-readable rendering of the events that matter to a person watching a run.
pub fn transcript_line(event: &AgentEvent) -> Option<String> {
    match event {
        AgentEvent::ToolExecutionStart {
            tool_name, args, ..
        } => Some(format!("  → {tool_name} {}", summarize_args(args))),
        AgentEvent::ToolExecutionEnd {
            tool_name,
            result,
            is_error,
            ..
        } => {
            let text = result_text(result);
            let first = first_lines(&text, 3);
            let mark = if *is_error { "✗" } else { "←" };
            Some(format!("  {mark} {tool_name}: {first}"))
        }
        AgentEvent::MessageEnd {
            message: Message::Assistant(a),
        } => {
            let text = a.text();
            if text.trim().is_empty() || a.tool_calls().next().is_none() {
                // Final answers are printed by the caller; only narrate text that precedes tools.
                return None;
            }
            Some(format!("  model: {}", first_lines(&text, 2)))
        }
        AgentEvent::MessageEnd {
            message: Message::Custom(c),
        } => Some(format!(
            "  ⇐ {}: {}",
            c.custom_type,
            notice_summary(&c.content.to_text())
        )),
        AgentEvent::MessageEnd {
            message: Message::User(u),
        } if u
            .content
            .to_text()
            .trim_start()
            .starts_with("<task-notification") =>
        {
            Some(format!(
                "  ⇐ task-notification: {}",
                notice_summary(&u.content.to_text())
            ))
        }
        AgentEvent::AutoRetryStart {
            attempt,
            max_attempts,
            delay_ms,
            error_message,
        } => Some(format!(
            "  … retry {attempt}/{max_attempts} in {delay_ms} ms ({error_message})"
        )),
        _ => None,
    }
}

/// "name status" of a `<task-notification>` (or "name turn N" of a `<progress-warning>`), read
/// from its one-line fields.
pub(crate) fn notice_summary(text: &str) -> String {
    let field = |tag: &str| {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        text.lines().find_map(|l| {
            let l = l.trim();
            l.strip_prefix(&open)?
                .strip_suffix(&close)
                .map(str::to_string)
        })
    };
    let who = field("name")
        .or_else(|| field("task-id"))
        .unwrap_or_default();
    let what = field("status")
        .or_else(|| field("turn").map(|t| format!("turn {t}")))
        .unwrap_or_default();
    // The summary usually ends with the status already shown after the name.
    let summary = field("summary")
        .map(|s| {
            let s = s
                .strip_suffix(what.as_str())
                .filter(|rest| !what.is_empty() && rest.ends_with(' '))
                .map_or(s.as_str(), str::trim_end);
            format!(" · {}", clip(s, 80))
        })
        .unwrap_or_default();
    format!("{who} {what}{summary}").trim().to_string()
}

fn summarize_args(args: &Value) -> String {
    match args {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => format!("{:?}", clip(s, 60)),
                    other => clip(&other.to_string(), 60),
                };
                format!("{k}={v}")
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => clip(&other.to_string(), 80),
    }
}

/// The text of a tool result as carried in `tool_execution_end`.
fn result_text(result: &Value) -> String {
    if let Some(s) = result.as_str() {
        return s.to_string();
    }
    let blocks = result.get("content").cloned().unwrap_or(Value::Null);
    match serde_json::from_value::<Vec<ContentBlock>>(blocks) {
        Ok(blocks) => cadre_protocol::join_text(&blocks),
        Err(_) => result.to_string(),
    }
}

fn first_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut shown: Vec<String> = lines.iter().take(n).map(|l| clip(l, 100)).collect();
    if lines.len() > n {
        shown.push(format!("(+{} more lines)", lines.len() - n));
    }
    shown.join(" ⏎ ")
}

/// At most `max` characters of `s`, cut on a character boundary and marked with "…" when cut.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_start_shows_name_and_args() {
        let line = transcript_line(&AgentEvent::ToolExecutionStart {
            tool_call_id: "c".into(),
            tool_name: "grep".into(),
            args: json!({"pattern": "to_eur"}),
        });
        assert_eq!(line.as_deref(), Some("  → grep pattern=\"to_eur\""));
    }

    #[test]
    fn long_values_are_clipped_on_char_boundaries() {
        let s = "é".repeat(200);
        let c = clip(&s, 10);
        assert_eq!(c.chars().count(), 11);
    }

    #[test]
    fn tool_end_shows_first_lines() {
        let line = transcript_line(&AgentEvent::ToolExecutionEnd {
            tool_call_id: "c".into(),
            tool_name: "ls".into(),
            result: json!({"content": [{"type": "text", "text": "a\nb\nc\nd\ne"}]}),
            is_error: false,
        });
        assert_eq!(line.as_deref(), Some("  ← ls: a ⏎ b ⏎ c ⏎ (+2 more lines)"));
    }
}
