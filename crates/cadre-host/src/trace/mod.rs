//! A root session's run as one self-contained HTML page (SPEC I5): its tasks as a timeline,
//! nested under the task that launched them, each with its numbers, receipt, review notes,
//! output and conversation one click away, then the root conversation.
//!
//! Everything shown comes from files a repository or a model can write: every string is
//! escaped, every text and the page are capped, and a record or session that cannot be read is
//! a row saying so. No scripts, no external resources: the page opens the same offline.

pub mod notices;
mod read;
pub mod timeline;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cadre_core::orchestrator::store::TaskStore;
use cadre_protocol::{Message, TaskRecord, TaskStatus};

use crate::export::{CONVERSATION_STYLE, clip, conversation, escape};
pub use read::SESSION_BYTES;
use read::{SessionText, read_capped, read_session};
use timeline::{Axis, Row};

/// The most bytes of one task's output shown.
pub const OUTPUT_BYTES: usize = 64 * 1024;
/// The page stops adding conversations once it is this large; what is left out says so.
pub const PAGE_BYTES: usize = 8 * 1024 * 1024;
/// The most bytes one conversation adds to the page.
const CONVERSATION_BYTES: usize = 1024 * 1024;
/// A longer error or diagnostic is cut.
const NOTE_CHARS: usize = 4_000;
/// A longer description, name or prompt line is cut.
const LABEL_CHARS: usize = 300;

const TRACE_STYLE: &str = "body{max-width:80rem}table{border-collapse:collapse;width:100%;font-size:12px}\
td,th{padding:.2rem .4rem;border-bottom:1px solid #eee;text-align:left;vertical-align:top}\
.axis{position:relative;height:14px;background:#f3f3f3;min-width:16rem}\
.bar{position:absolute;top:2px;height:10px;border-radius:2px;background:#36c}\
.completed .bar{background:#2a6}.failed .bar{background:#c33}.partial .bar{background:#d90}\
.stopped .bar{background:#888}.running .bar{background:#36c}.st{font-weight:600}\
.failed .st{color:#c33}.completed .st{color:#2a6}.partial .st{color:#b70}.bg{color:#666;font-style:italic}\
.bad{background:#fdecec}details{margin:.4rem 0}summary{cursor:pointer}.task{border:1px solid #ddd;padding:.3rem .6rem;margin:.6rem 0}\
.kv{color:#555;font-size:12px}";

/// A rendered trace: the root session's id (for the file name) and the page.
pub struct Trace {
    pub session_id: String,
    pub page: String,
}

/// Render the trace of the root session in `root_session`; task records are read from
/// `tasks_dir` (`CADRE_HOME/tasks`). Fails only when the root session names no session id.
pub fn render_trace(root_session: &Path, tasks_dir: &Path) -> Result<Trace> {
    let root = read_session(root_session);
    let id = match &root {
        SessionText::Loaded { id, .. } => id.clone(),
        SessionText::Unreadable(why) => {
            anyhow::bail!("cannot read {}: {why}", root_session.display())
        }
        SessionText::TooLarge(bytes) => header_id(root_session).with_context(|| {
            format!(
                "{} ({bytes} bytes) is too large to trace and its header names no session",
                root_session.display()
            )
        })?,
    };
    let store = TaskStore::new(tasks_dir);
    let (records, problems) = match store.list_root(&id) {
        Ok(listing) => (
            listing.records,
            listing
                .problems
                .into_iter()
                .map(|p| p.to_string())
                .collect(),
        ),
        Err(e) => (Vec::new(), vec![e.to_string()]),
    };
    let root_messages: &[Message] = match &root {
        SessionText::Loaded { messages, .. } => messages,
        _ => &[],
    };
    let receipts = notices::receipts(root_messages, &records);

    let title = format!("cadre trace · {id}");
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{t}</title>\
         <style>{CONVERSATION_STYLE}{TRACE_STYLE}</style></head><body><h1>{t}</h1>\
         <p class=\"kv\">root session file: {}</p>",
        escape(&root_session.display().to_string()),
        t = escape(&title),
    );
    let (rows, axis) = timeline::rows(&records);
    totals(&mut out, &records, axis);
    table(&mut out, &records, &rows, &problems);
    out.push_str("<h2>Tasks</h2>");
    for row in &rows {
        let r = &records[row.index];
        let receipt = receipts.get(r.id.as_str()).map(String::as_str);
        details(&mut out, r, receipt, &store);
    }
    out.push_str("<h2>Root conversation</h2>");
    session_block(&mut out, &root);
    out.push_str("</body></html>\n");
    Ok(Trace {
        session_id: id,
        page: out,
    })
}

/// The id in a session file's header line, read without loading the file.
fn header_id(path: &Path) -> Option<String> {
    let head = read_capped(path, 64 * 1024).ok()?;
    let line = head.lines().next()?;
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    value["id"].as_str().map(str::to_string)
}

fn totals(out: &mut String, records: &[TaskRecord], axis: Option<Axis>) {
    let mut by_status: Vec<(TaskStatus, usize)> = Vec::new();
    for r in records {
        match by_status.iter_mut().find(|(s, _)| *s == r.status) {
            Some((_, n)) => *n += 1,
            None => by_status.push((r.status, 1)),
        }
    }
    let statuses: Vec<String> = by_status
        .iter()
        .map(|(s, n)| format!("{n} {}", s.as_str()))
        .collect();
    let input: u64 = records
        .iter()
        .fold(0, |a, r| a.saturating_add(r.usage.tokens.input));
    let output: u64 = records
        .iter()
        .fold(0, |a, r| a.saturating_add(r.usage.tokens.output));
    let cost: f64 = records.iter().map(|r| r.usage.tokens.cost.total).sum();
    let wall = axis.map_or("-".to_string(), |a| duration(a.span_ms()));
    let _ = write!(
        out,
        "<p class=\"totals\"><b>{} tasks</b>: {} · tokens {input} in / {output} out · cost ${cost:.4} · wall time {}</p>",
        records.len(),
        escape(&statuses.join(", ")),
        escape(&wall),
    );
}

fn table(out: &mut String, records: &[TaskRecord], rows: &[Row], problems: &[String]) {
    out.push_str(
        "<h2>Timeline</h2><table><tr><th>task</th><th>timeline</th><th>status</th><th>role</th>\
         <th>mode</th><th>turns</th><th>tool calls</th><th>tokens</th><th>cost</th><th>model</th></tr>",
    );
    for row in rows {
        let r = &records[row.index];
        let label = r.name.as_deref().unwrap_or(&r.description);
        let termination = r.termination.map_or("", |t| t.as_str());
        let _ = write!(
            out,
            "<tr class=\"{status}\" id=\"row-{id}\"><td style=\"padding-left:{indent}rem\">\
             <a href=\"#task-{id}\">{label}</a><div class=\"kv\">{desc}</div></td>\
             <td><div class=\"axis\"><div class=\"bar\" style=\"left:{left:.2}%;width:{width:.2}%\"></div></div></td>\
             <td class=\"st\">{status}{sep}{termination}</td><td>{agent}</td><td>{mode}</td>\
             <td>{turns}</td><td>{calls}</td><td>{tin} / {tout}</td><td>${cost:.4}</td><td>{model}</td></tr>",
            status = r.status.as_str(),
            id = escape(&r.id),
            indent = 0.4 + 1.2 * row.level as f64,
            label = escape(&clip(label, LABEL_CHARS)),
            desc = escape(&clip(&r.description, LABEL_CHARS)),
            left = row.left,
            width = row.width,
            sep = if termination.is_empty() { "" } else { " · " },
            agent = escape(&r.agent),
            mode = if r.background {
                "<span class=\"bg\">background</span>"
            } else {
                "foreground"
            },
            turns = r.usage.turns,
            calls = r.usage.tool_calls_executed,
            tin = r.usage.tokens.input,
            tout = r.usage.tokens.output,
            cost = r.usage.tokens.cost.total,
            model = escape(&r.model),
        );
    }
    for problem in problems {
        let _ = write!(
            out,
            "<tr class=\"bad\"><td colspan=\"10\">unreadable task record: {}</td></tr>",
            escape(&clip(problem, NOTE_CHARS))
        );
    }
    if rows.is_empty() && problems.is_empty() {
        out.push_str("<tr><td colspan=\"10\">This session launched no tasks.</td></tr>");
    }
    out.push_str("</table>");
}

fn details(out: &mut String, r: &TaskRecord, receipt: Option<&str>, store: &TaskStore) {
    let label = r.name.as_deref().unwrap_or(&r.description);
    let _ = write!(
        out,
        "<div class=\"task {status}\" id=\"task-{id}\"><b>{label}</b> <span class=\"st\">{status}</span> \
         <span class=\"kv\">{agent} · task {id}{parent}</span>\
         <div class=\"kv\">started {start} · ended {end} · thinking {thinking}</div>",
        status = r.status.as_str(),
        id = escape(&r.id),
        label = escape(&clip(label, LABEL_CHARS)),
        agent = escape(&r.agent),
        parent = r
            .parent_task_id
            .as_deref()
            .map_or(String::new(), |p| format!(
                " · launched by <a href=\"#task-{0}\">{0}</a>",
                escape(p)
            )),
        start = escape(r.started_at.as_deref().unwrap_or(&r.created_at)),
        end = escape(r.ended_at.as_deref().unwrap_or("-")),
        thinking = escape(&r.effective_thinking),
    );
    if let Some(e) = &r.error {
        let _ = write!(
            out,
            "<pre class=\"m err\">error: {}</pre>",
            escape(&clip(e, NOTE_CHARS))
        );
    }
    if !r.diagnostics.is_empty() {
        out.push_str("<div class=\"kv\">notes (review verdicts, fallbacks):</div><pre>");
        for d in r.diagnostics.iter().take(50) {
            let _ = writeln!(out, "{}", escape(&clip(d, NOTE_CHARS)));
        }
        out.push_str("</pre>");
    }
    if let Some(receipt) = receipt {
        let _ = write!(
            out,
            "<details><summary>execution receipt</summary><pre>{}</pre></details>",
            escape(&clip(receipt, NOTE_CHARS * 4))
        );
    }
    let _ = write!(
        out,
        "<details><summary>prompt</summary><pre>{}</pre></details>",
        escape(&clip(&r.prompt, OUTPUT_BYTES))
    );
    match store.output_path(&r.root_session_id, &r.id) {
        Ok(path) => match read_capped(&path, OUTPUT_BYTES) {
            Ok(text) if text.is_empty() => out.push_str("<div class=\"kv\">no output</div>"),
            Ok(text) => {
                let _ = write!(
                    out,
                    "<details><summary>output</summary><pre>{}</pre></details>",
                    escape(&text)
                );
            }
            Err(e) => {
                let _ = write!(
                    out,
                    "<div class=\"bad\">output unreadable: {}</div>",
                    escape(&e.to_string())
                );
            }
        },
        Err(e) => {
            let _ = write!(out, "<div class=\"bad\">{}</div>", escape(&e.to_string()));
        }
    }
    out.push_str("<details><summary>conversation</summary>");
    if out.len() >= PAGE_BYTES {
        out.push_str("<div class=\"bad\">left out: the page reached its size limit</div>");
    } else {
        match &r.session_file {
            Some(file) => session_block(out, &read_session(&PathBuf::from(file))),
            None => out.push_str("<div class=\"kv\">no session file recorded</div>"),
        }
    }
    out.push_str("</details></div>");
}

fn session_block(out: &mut String, session: &SessionText) {
    match session {
        SessionText::Loaded { messages, .. } => {
            let cap = out
                .len()
                .saturating_add(CONVERSATION_BYTES)
                .min(PAGE_BYTES.max(out.len()));
            conversation(out, messages, cap);
        }
        SessionText::TooLarge(bytes) => {
            let _ = write!(
                out,
                "<div class=\"bad\">the session file is {bytes} bytes, too large to show here \
                 (`cadre --export FILE SESSION` writes it alone)</div>"
            );
        }
        SessionText::Unreadable(why) => {
            let _ = write!(
                out,
                "<div class=\"bad\">session unreadable: {}</div>",
                escape(&clip(why, NOTE_CHARS))
            );
        }
    }
}

fn duration(ms: i64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{}.{:01}s", s, (ms % 1000) / 100),
        60..3600 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn record(id: &str, session: &Path) -> TaskRecord {
        TaskRecord {
            id: id.into(),
            root_session_id: "root-1".into(),
            agent: "Explore".into(),
            description: "<img src=x onerror=alert(1)>".into(),
            status: TaskStatus::Completed,
            session_file: Some(session.display().to_string()),
            created_at: "2026-01-01T00:00:00.000Z".into(),
            ended_at: Some("2026-01-01T00:00:03.000Z".into()),
            ..TaskRecord::default()
        }
    }

    /// A huge output, a session too large to load, a missing session and a broken record make
    /// a small page that names each problem, and nothing in it is markup from the files.
    #[test]
    fn oversized_missing_and_broken_inputs_make_a_bounded_page_that_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root.jsonl");
        std::fs::write(
            &root,
            "{\"type\":\"session\",\"version\":3,\"id\":\"root-1\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n",
        )
        .unwrap();
        let huge = dir.path().join("huge.jsonl");
        let file = std::fs::File::create(&huge).unwrap();
        file.set_len(SESSION_BYTES + 1).unwrap();
        let tasks = dir.path().join("tasks");
        let store = TaskStore::new(&tasks);
        for (id, session) in [("t1", huge.clone()), ("t3", dir.path().join("gone.jsonl"))] {
            let task = tasks.join("root-1").join(id);
            std::fs::create_dir_all(&task).unwrap();
            let json = serde_json::to_string(&record(id, &session)).unwrap();
            std::fs::write(task.join("task.json"), json).unwrap();
        }
        store
            .write_output("root-1", "t1", &"<u>".repeat(400_000))
            .unwrap();
        std::fs::create_dir_all(tasks.join("root-1/t2")).unwrap();
        std::fs::write(tasks.join("root-1/t2/task.json"), "{broken").unwrap();

        let trace = render_trace(&root, &tasks).unwrap();
        let page = trace.page;
        assert_eq!(trace.session_id, "root-1");
        assert!(page.len() < 512 * 1024, "{} bytes", page.len());
        assert!(page.contains("more bytes)"), "the output is cut");
        assert!(page.contains("too large to show here"));
        assert!(page.contains("session unreadable: "));
        assert!(page.contains("unreadable task record: "));
        assert!(!page.contains("This session launched no tasks."));
        assert!(
            !page.contains("<img") && !page.contains("<u>"),
            "no markup from files"
        );
        assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
        assert!(page.contains("2 tasks</b>: 2 completed"));
        assert!(page.contains("wall time 3.0s"));
    }

    #[test]
    fn a_root_session_that_cannot_be_read_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = render_trace(&dir.path().join("none.jsonl"), dir.path())
            .err()
            .unwrap();
        assert!(err.to_string().contains("cannot read"), "{err}");
    }
}
