//! The session's resources: the roster, and each task's record, output and session file.
//!
//! URIs: `cadre://roster`, `cadre://tasks/<id>`, `cadre://tasks/<id>/output`,
//! `cadre://tasks/<id>/session`. Only this root session's tasks are served, and a read is
//! capped: a longer file is served from its end, with a note saying so.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use cadre_host::Host;
use rmcp::ErrorData as McpError;
use rmcp::model::{ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult};
use serde_json::{Value, json};

/// The most a read returns.
pub const MAX_RESOURCE_BYTES: u64 = 1024 * 1024;

const ROSTER_URI: &str = "cadre://roster";
const TASKS_PREFIX: &str = "cadre://tasks/";

pub fn list(host: &Host) -> Result<ListResourcesResult, McpError> {
    let mut resources = vec![json!({
        "uri": ROSTER_URI,
        "name": "roster",
        "title": "Agent types",
        "description": "The roles Agent can launch (subagent_type), with their tools.",
        "mimeType": "text/markdown",
    })];
    for t in host.tasks().list() {
        let id = &t.task_id;
        let label = format!("{} \"{}\"", t.agent, t.description);
        resources.push(json!({
            "uri": format!("{TASKS_PREFIX}{id}"),
            "name": format!("task {id}"),
            "title": format!("Task {label}: {}", t.status.as_str()),
            "description": "The task's record (task.json): status, usage, files, receipt.",
            "mimeType": "application/json",
        }));
        let mut output = json!({
            "uri": format!("{TASKS_PREFIX}{id}/output"),
            "name": format!("task {id} output"),
            "title": format!("Output of task {label}"),
            "mimeType": "text/markdown",
        });
        if let Ok(meta) = std::fs::metadata(&t.output_file) {
            output["size"] = json!(meta.len().min(MAX_RESOURCE_BYTES));
        }
        resources.push(output);
        resources.push(json!({
            "uri": format!("{TASKS_PREFIX}{id}/session"),
            "name": format!("task {id} session"),
            "title": format!("Session of task {label}"),
            "mimeType": "application/x-ndjson",
        }));
    }
    from_json(json!({ "resultType": "complete", "resources": resources }))
}

pub fn templates() -> Result<ListResourceTemplatesResult, McpError> {
    from_json(json!({ "resultType": "complete", "resourceTemplates": [
        {"uriTemplate": "cadre://tasks/{task_id}", "name": "task record", "mimeType": "application/json"},
        {"uriTemplate": "cadre://tasks/{task_id}/output", "name": "task output", "mimeType": "text/markdown"},
        {"uriTemplate": "cadre://tasks/{task_id}/session", "name": "task session", "mimeType": "application/x-ndjson"},
    ]}))
}

pub fn read(host: &Host, uri: &str) -> Result<ReadResourceResult, McpError> {
    if uri == ROSTER_URI {
        return contents(uri, "text/markdown", roster_text(host));
    }
    let Some(rest) = uri.strip_prefix(TASKS_PREFIX) else {
        return Err(not_found(uri));
    };
    let (target, part) = match rest.split_once('/') {
        Some((id, part)) => (id, Some(part)),
        None => (rest, None),
    };
    // Only this session's tasks, by id, id prefix or name (as TaskOutput takes them).
    let tasks = host.tasks();
    let id = tasks.resolve(target).map_err(|_| not_found(uri))?;
    let (record, _) = tasks
        .record(&id)
        .map_err(|e| McpError::internal_error(format!("task {id}: {e}"), None))?;
    match part {
        None => {
            let text = serde_json::to_string_pretty(&record)
                .map_err(|e| McpError::internal_error(format!("task {id}: {e}"), None))?;
            contents(uri, "application/json", text)
        }
        Some("output") => contents(
            uri,
            "text/markdown",
            capped_file(Path::new(&record.output_file))?,
        ),
        Some("session") => match &record.session_file {
            Some(path) => contents(uri, "application/x-ndjson", capped_file(Path::new(path))?),
            None => Err(McpError::resource_not_found(
                format!("task {id} has no session file"),
                None,
            )),
        },
        Some(_) => Err(not_found(uri)),
    }
}

fn roster_text(host: &Host) -> String {
    let tasks = host.tasks();
    let roster = tasks.roster();
    let mut text = String::from("# Agent types\n\n");
    text.push_str(&roster.summary());
    if !roster.blocked.is_empty() {
        text.push_str("\n\n## Unavailable\n");
        for b in &roster.blocked {
            text.push_str(&format!("- {}: {}\n", b.name, b.reason));
        }
    }
    if let Some(reason) = &roster.untrusted_reason {
        text.push_str(&format!("\n\nProject roles not loaded: {reason}\n"));
    }
    text
}

/// A file's text, or its last [`MAX_RESOURCE_BYTES`] after a note when it is longer (a line
/// cut at the start is dropped). A missing file reads as empty: a task that wrote nothing yet.
fn capped_file(path: &Path) -> Result<String, McpError> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => {
            return Err(McpError::internal_error(
                format!("cannot read {}: {e}", path.display()),
                None,
            ));
        }
    };
    let io = |e: std::io::Error| {
        McpError::internal_error(format!("cannot read {}: {e}", path.display()), None)
    };
    let len = file.metadata().map_err(io)?.len();
    let skip = len.saturating_sub(MAX_RESOURCE_BYTES);
    file.seek(SeekFrom::Start(skip)).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(MAX_RESOURCE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if skip > 0 {
        if let Some(at) = text.find('\n') {
            text.drain(..=at);
        }
        text = format!(
            "[the first {skip} or more bytes of {} are omitted: it is longer than {MAX_RESOURCE_BYTES} bytes]\n{text}",
            path.display()
        );
    }
    Ok(cadre_protocol::redact::redact_str(&text).into_owned())
}

fn contents(uri: &str, mime: &str, text: String) -> Result<ReadResourceResult, McpError> {
    from_json(
        json!({ "resultType": "complete", "contents": [{ "uri": uri, "mimeType": mime, "text": text }] }),
    )
}

fn not_found(uri: &str) -> McpError {
    McpError::resource_not_found(
        format!(
            "no resource {uri}: this server has {ROSTER_URI} and {TASKS_PREFIX}<task id>[/output|/session] for its session's tasks"
        ),
        None,
    )
}

fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, McpError> {
    serde_json::from_value(value)
        .map_err(|e| McpError::internal_error(format!("resource result: {e}"), None))
}
