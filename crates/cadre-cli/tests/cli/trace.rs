//! `cadre trace` (SPEC I5) and `cadre --export`: a run with parallel, nested, background and
//! failed tasks rendered as one page, checked for its content, its escaping and that it loads
//! nothing from elsewhere; then opened once in headless Chromium for a screenshot.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cadre_testkit::{Fault, Match, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, Running, Wire, have};
use crate::orchestration::task_records;

const KID: &str = "[kid-";
const NOTIFICATION: &str = "<task-notification>";
const HOSTILE: &str = "Probe <script>alert(1)</script> & \"quotes\"";
const FINAL: &str = "All four reported.";
/// A role that may delegate: its child launches a grandchild.
const LEAD: &str = "---\nname: lead\ndescription: Delegates the reading.\ntools: read, Agent\n---\n\
Delegate what you are asked.\n";

fn parent() -> Match {
    !Match::first_user(KID)
}

fn kid(tag: &str) -> Match {
    Match::first_user(format!("[kid-{tag}]"))
}

/// The parent launches three tasks at once (a plain one with a hostile description, a lead that
/// launches a grandchild, one whose model call fails), then one in the background, and answers
/// once the background one reports.
fn script_run(f: &Fixture) {
    let dir = f.home.join("agents");
    std::fs::create_dir_all(&dir).expect("agents dir");
    std::fs::write(dir.join("lead.md"), LEAD).expect("write the lead role");
    let s = &f.server;
    s.script(Rule::new(parent().and(Match::last_user(NOTIFICATION))).reply(Reply::text(FINAL)));
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_fan",
            "Agent",
            json!({"tasks": [
                {"subagent_type": "Explore", "description": HOSTILE, "name": "prober",
                 "prompt": "[kid-a] Read notes.txt and report."},
                {"subagent_type": "lead", "description": "Lead the reading", "name": "lead-1",
                 "prompt": "[kid-b] Have someone read notes.txt."},
                {"subagent_type": "Explore", "description": "Doomed probe", "name": "doomed",
                 "prompt": "[kid-f] This one fails."},
            ]}),
        )),
    );
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(1))).reply(Reply::tool_call(
            "call_bg",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Background read",
                   "name": "bg-reader", "run_in_background": true,
                   "prompt": "[kid-d] Read notes.txt in the background."}),
        )),
    );
    s.script(Rule::new(parent()).reply(Reply::text("Waiting for the background report.")));
    s.script(Rule::new(kid("f")).reply(Reply::failing(Fault::status(400))));
    s.script(Rule::new(kid("c")).reply(Reply::text("Grandchild: notes start with alpha.")));
    s.script(
        Rule::new(kid("b").and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_nested",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Nested read", "name": "nested",
                   "prompt": "[kid-c] Read notes.txt."}),
        )),
    );
    s.script(Rule::new(kid("b")).reply(Reply::text("Lead: the grandchild reported alpha.")));
    s.script(
        Rule::new(Match::first_user(KID).and(Match::AssistantTurns(0))).reply(
            Reply::tool_call("call_read", "read", json!({"path": "notes.txt"}))
                .latency(Duration::from_millis(50)),
        ),
    );
    s.script(Rule::new(Match::first_user(KID)).reply(Reply::text(
        "notes.txt starts with alpha. <script>alert(2)</script>",
    )));
}

/// The details block of one task on the page.
fn task_details<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("id=\"task-{id}\""))
        .unwrap_or_else(|| panic!("no details of {id}"));
    let rest = &html[start..];
    let end = rest.find("<div class=\"task ").unwrap_or(rest.len());
    &rest[..end]
}

fn by_name<'a>(records: &'a [Value], name: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no task {name}: {records:#?}"))
}

/// Run the scripted session and write its trace to `page` (relative to the project).
fn traced_run(f: &Fixture, page: &str) -> (String, Vec<Value>) {
    script_run(f);
    let out = f.run_print(Wire::Anthropic, &["Read the notes, four ways."]);
    out.assert_success();
    assert_eq!(out.stdout.trim_end(), FINAL);
    let trace = f.run(&["trace", "-o", page]);
    trace.assert_success();
    let html = std::fs::read_to_string(f.project.join(page)).expect("the page was written");
    (html, task_records(f))
}

#[test]
fn trace_shows_parallel_nested_background_and_failed_tasks_escaped_and_self_contained() {
    let f = Fixture::new();
    let (html, records) = traced_run(&f, "f.html");
    assert_eq!(records.len(), 5, "{records:#?}");
    let prober = by_name(&records, "prober");
    let lead = by_name(&records, "lead-1");
    let nested = by_name(&records, "nested");
    let doomed = by_name(&records, "doomed");
    let bg = by_name(&records, "bg-reader");
    assert_eq!(doomed["status"], "failed", "{doomed:#}");
    assert_eq!(bg["background"], true);
    assert_eq!(nested["parentTaskId"], lead["id"], "{nested:#}");

    for r in [prober, lead, nested, doomed, bg] {
        let id = r["id"].as_str().unwrap();
        let status = r["status"].as_str().unwrap();
        let row = format!("<tr class=\"{status}\" id=\"row-{id}\">");
        assert!(html.contains(&row), "row of {id} ({status}) missing");
        assert!(
            html.contains(&format!("id=\"task-{id}\"")),
            "details of {id}"
        );
    }
    assert!(html.contains("<td class=\"st\">failed · provider_error</td>"));
    assert!(html.contains("<span class=\"bg\">background</span>"));
    // The grandchild sits under its parent: after its row, indented one level more, and its
    // details link back to it.
    let lead_id = lead["id"].as_str().unwrap();
    let nested_id = nested["id"].as_str().unwrap();
    let lead_at = html.find(&format!("id=\"row-{lead_id}\"")).unwrap();
    let nested_at = html.find(&format!("id=\"row-{nested_id}\"")).unwrap();
    assert!(lead_at < nested_at);
    assert!(html[nested_at..].starts_with(&format!(
        "id=\"row-{nested_id}\"><td style=\"padding-left:1.6rem\">"
    )));
    assert!(html.contains(&format!("launched by <a href=\"#task-{lead_id}\">")));
    // Receipts come from the results (foreground) and notifications (background); outputs
    // and conversations are one click away.
    for r in [prober, bg] {
        let details = task_details(&html, r["id"].as_str().unwrap());
        assert!(
            details.contains("<summary>execution receipt</summary>"),
            "receipt of {}: {details}",
            r["name"]
        );
    }
    assert!(html.contains("<summary>conversation</summary>"));
    assert!(html.contains("Lead: the grandchild reported alpha."));
    assert!(html.contains("<h2>Root conversation</h2>"));
    assert!(html.contains("5 tasks</b>: "), "totals");

    // Hostile text from descriptions, outputs and conversations is text, never markup.
    assert!(
        !html.to_lowercase().contains("<script"),
        "no script element"
    );
    assert!(html.contains("Probe &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;"));
    assert!(html.contains("&lt;script&gt;alert(2)&lt;/script&gt;"));
    // Nothing loads from elsewhere.
    for needle in ["http://", "https://", "src=", "<link", "@import", "url("] {
        assert!(!html.contains(needle), "{needle} in the page");
    }
    assert!(html.len() < 2 * 1024 * 1024, "{} bytes", html.len());

    screenshot(&f.project.join("f.html"));
}

#[test]
fn trace_names_a_session_by_id_prefix_writes_stdout_and_shows_broken_records() {
    let f = Fixture::new();
    let (_, records) = traced_run(&f, "first.html");
    let session = f.only_session();
    let root = records[0]["rootSessionId"].as_str().unwrap().to_string();
    // A record someone broke: shown as a row, not a failure.
    let broken = f.home.join("tasks").join(&root).join("0000-broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("task.json"), "{not json").unwrap();

    let out = f.run(&["trace", &root[..8], "-o", "-"]);
    out.assert_success();
    assert!(out.stdout.starts_with("<!doctype html>"), "{}", out.stdout);
    assert!(
        out.stdout.contains("unreadable task record: "),
        "broken record row"
    );
    assert_eq!(out.stdout.matches("<tr class=\"").count(), 6);

    // The default name carries the session id.
    let out = f.run(&["trace", session.to_str().unwrap()]);
    out.assert_success();
    assert!(f.project.join(format!("cadre-trace-{root}.html")).is_file());

    let out = f.run(&["trace", "no-such-session"]);
    assert!(!out.success());
    assert!(out.stderr.contains("no session found"), "{}", out.stderr);
}

#[test]
fn export_writes_one_session_as_html_in_pis_argument_shape() {
    let f = Fixture::new();
    f.server
        .script(Rule::always().reply(Reply::text("Hi <b>there</b>")));
    f.run_print(Wire::Anthropic, &["Say hi <i>now</i>"])
        .assert_success();
    let session = f.only_session();
    let out = f.run(&["--export", session.to_str().unwrap(), "out.html"]);
    out.assert_success();
    assert_eq!(out.stdout.trim_end(), "Exported to: out.html");
    let html = std::fs::read_to_string(f.project.join("out.html")).unwrap();
    assert!(html.contains("Say hi &lt;i&gt;now&lt;/i&gt;"), "{html}");
    assert!(html.contains("Hi &lt;b&gt;there&lt;/b&gt;"), "{html}");

    // Without an output, Pi's default name after the session file.
    let out = f.run(&["--export", session.to_str().unwrap()]);
    out.assert_success();
    let stem = session.file_stem().unwrap().to_str().unwrap();
    assert!(
        f.project
            .join(format!("cadre-session-{stem}.html"))
            .is_file()
    );

    let out = f.run(&["--export", "missing.jsonl"]);
    assert!(!out.success());
    assert!(
        out.stderr.contains("no such session file"),
        "{}",
        out.stderr
    );
}

/// Open the page in headless Chromium and keep a screenshot (TRACE_SCREENSHOT, default
/// /tmp/trace-screenshot.png) for a person to look at. CI installs Chromium; elsewhere a
/// missing one skips this part with a note.
fn screenshot(page: &Path) {
    let Some(browser) = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| have(b))
    else {
        assert!(
            std::env::var_os("CI").is_none(),
            "under CI the trace must be opened in Chromium, and none was found"
        );
        eprintln!("note: no chromium on PATH; the trace page is not opened in a browser");
        return;
    };
    let shot = std::env::var_os("TRACE_SCREENSHOT")
        .map_or_else(|| PathBuf::from("/tmp/trace-screenshot.png"), PathBuf::from);
    let _ = std::fs::remove_file(&shot);
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        "--window-size=1400,1000",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .arg(format!("--screenshot={}", shot.display()))
    .arg(format!("file://{}", page.display()));
    let out = Running::spawn(cmd, None).wait(Duration::from_secs(60));
    assert!(out.success(), "chromium failed: {}", out.stderr);
    let png = std::fs::read(&shot).expect("a screenshot was written");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
}
