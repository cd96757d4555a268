//! SPEC I7 through the whole runtime: `mcpServers` (settings, a project's `.mcp.json`) give the
//! root and its children `mcp__<server>__<tool>` tools served by a real MCP server written with
//! the official MCP Python SDK (`tests/peers/mcp_server_tools.py`). Read-only children get only
//! the tools annotated read-only; an untrusted project's `.mcp.json` is ignored; a server that
//! fails to start, crashes mid-call or floods its stderr costs a warning or a tool error, never
//! the run or cadre's output.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use cadre_testkit::{Match, RecordedRequest, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, HANG_GUARD, Running, Wire, wait_until};
use crate::orchestration::task_records;

const CHILD: &str = "[mcp-child]";

fn python() -> Option<PathBuf> {
    cadre_testkit::peers::python_with_mcp()
}

fn server_script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers/mcp_server_tools.py")
        .to_string_lossy()
        .into_owned()
}

/// A stdio server entry running the test server with `args`; `MCP_TEST_MARKER` is the file
/// its destructive tool writes.
fn stdio_entry(python: &Path, f: &Fixture, args: &[&str]) -> Value {
    let mut all = vec![server_script()];
    all.extend(args.iter().map(|a| a.to_string()));
    json!({
        "command": python,
        "args": all,
        "env": {"MCP_TEST_MARKER": marker(f).to_string_lossy()}
    })
}

/// The log of server `server`'s one start in this test (`<server>-<pid>-<n>.log`).
fn server_log(f: &Fixture, server: &str) -> PathBuf {
    let logs: Vec<PathBuf> = std::fs::read_dir(f.home.join("logs/mcp"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{server}-")) && n.ends_with(".log"))
        })
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs[0].clone()
}

fn marker(f: &Fixture) -> PathBuf {
    f.home.join("deleted.marker")
}

fn write_settings(f: &Fixture, servers: Value) {
    std::fs::write(
        f.home.join("settings.json"),
        json!({ "mcpServers": servers }).to_string(),
    )
    .unwrap();
}

/// The newest tool result of an Anthropic request: (is_error, text).
fn last_result(r: &RecordedRequest) -> (bool, String) {
    let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
    for m in messages.iter().rev() {
        for b in m["content"].as_array().into_iter().flatten().rev() {
            if b["type"] == "tool_result" {
                return (b["is_error"] == json!(true), b["content"].to_string());
            }
        }
    }
    panic!("no tool result in {}", r.summary());
}

/// The root's requests (not a child's), in order.
fn root_requests(f: &Fixture) -> Vec<RecordedRequest> {
    f.server
        .requests()
        .into_iter()
        .filter(|r| !r.first_user_text().is_some_and(|t| t.contains(CHILD)))
        .collect()
}

/// Script the root to call `calls` in order, then answer "done".
fn script_root_calls(f: &Fixture, calls: &[(&str, Value)]) {
    for (i, (tool, args)) in calls.iter().enumerate() {
        f.server
            .script(Rule::new(Match::AssistantTurns(i)).reply(Reply::tool_call(
                format!("call_{i}"),
                *tool,
                args.clone(),
            )));
    }
    f.server.script(Rule::always().reply(Reply::text("done")));
}

#[test]
fn the_root_calls_an_mcp_tool_and_gets_its_result() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    write_settings(&f, json!({ "tools": stdio_entry(&python, &f, &[]) }));
    script_root_calls(
        &f,
        &[
            ("mcp__tools__lookup", json!({"key": "k1"})),
            ("mcp__tools__env_has", json!({"name": "OPENAI_API_KEY"})),
        ],
    );
    let mut cmd = f.command(&["-p", "--model", Wire::Anthropic.model(), "Look k1 up."]);
    // A credential in cadre's environment never reaches a server that does not name it.
    cmd.env("OPENAI_API_KEY", "sk-test-not-for-servers");
    let out = Running::spawn(cmd, None).wait(HANG_GUARD);
    out.assert_success();
    assert_eq!(out.stdout.trim(), "done");
    let requests = root_requests(&f);
    assert_eq!(requests.len(), 3, "two calls, then the answer");
    let tools = Wire::Anthropic.tool_names(&requests[0]);
    for name in [
        "read",
        "Agent",
        "mcp__tools__lookup",
        "mcp__tools__delete_everything",
        "mcp__tools__crash",
    ] {
        assert!(tools.iter().any(|t| t == name), "{name} in {tools:?}");
    }
    let spec = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__tools__lookup")
        .unwrap()
        .clone();
    assert!(
        spec["description"]
            .as_str()
            .unwrap()
            .starts_with("Look a key up."),
        "{spec}"
    );
    assert_eq!(spec["input_schema"]["properties"]["key"]["type"], "string");
    let (is_error, text) = last_result(&requests[1]);
    assert!(!is_error && text.contains("value of k1"), "{text}");
    let (is_error, text) = last_result(&requests[2]);
    assert!(
        !is_error && text.contains("unset") && !text.contains("\"set"),
        "{text}"
    );
}

#[test]
fn tools_limits_the_roots_mcp_tools_and_plan_mode_keeps_the_unannotated_ones() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    write_settings(&f, json!({ "tools": stdio_entry(&python, &f, &[]) }));
    f.server.script(Rule::always().reply(Reply::text("ok")));
    let out = f.run_print(
        Wire::Anthropic,
        &["--tools", "read,mcp__tools__lookup,mcp__tools__nope", "hi"],
    );
    out.assert_success();
    let tools = Wire::Anthropic.tool_names(&f.last_request());
    assert_eq!(tools, ["read", "mcp__tools__lookup"]);
    assert!(
        out.stderr
            .contains("--tools names mcp__tools__nope, which no running MCP server provides"),
        "{}",
        out.stderr
    );

    f.run_print(Wire::Anthropic, &["--plan", "hi"])
        .assert_success();
    let tools = Wire::Anthropic.tool_names(&f.last_request());
    assert!(tools.iter().any(|t| t == "mcp__tools__lookup"), "{tools:?}");
    assert!(
        tools.iter().any(|t| t == "mcp__tools__env_has"),
        "{tools:?}"
    );
    for gone in [
        "mcp__tools__delete_everything",
        "mcp__tools__crash",
        "write",
    ] {
        assert!(!tools.iter().any(|t| t == gone), "{gone} in {tools:?}");
    }

    let out = f.run_print(
        Wire::Anthropic,
        &[
            "--plan",
            "--tools",
            "read,mcp__tools__delete_everything",
            "hi",
        ],
    );
    out.assert_success();
    assert_eq!(Wire::Anthropic.tool_names(&f.last_request()), ["read"]);
    assert!(
        out.stderr.contains(
            "note: --plan leaves out mcp__tools__delete_everything: its server does not \
             annotate it read-only"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn a_read_only_child_gets_only_read_only_annotated_mcp_tools() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    write_settings(&f, json!({ "tools": stdio_entry(&python, &f, &[]) }));
    let s = &f.server;
    let child = || Match::first_user(CHILD);
    let parent = || !Match::first_user(CHILD);
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_agent",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Use the MCP tools",
                   "prompt": format!("{CHILD} Look things up, then delete everything.")}),
        )),
    );
    s.script(Rule::new(parent()).reply(Reply::text("The child reported.")));
    s.script(
        Rule::new(child().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "c1",
            "mcp__tools__lookup",
            json!({"key": "k2"}),
        )),
    );
    s.script(
        Rule::new(child().and(Match::AssistantTurns(1))).reply(Reply::tool_call(
            "c2",
            "mcp__tools__delete_everything",
            json!({"path": "/"}),
        )),
    );
    s.script(Rule::new(child()).reply(Reply::text("looked up; deleting was refused")));
    f.run_print(Wire::Anthropic, &["Launch the child."])
        .assert_success();

    let children: Vec<RecordedRequest> = s
        .requests()
        .into_iter()
        .filter(|r| r.first_user_text().is_some_and(|t| t.contains(CHILD)))
        .collect();
    assert_eq!(children.len(), 3, "two calls, then the answer");
    let tools = Wire::Anthropic.tool_names(&children[0]);
    assert!(tools.iter().any(|t| t == "mcp__tools__lookup"), "{tools:?}");
    assert!(
        tools.iter().any(|t| t == "mcp__tools__env_has"),
        "{tools:?}"
    );
    for absent in [
        "mcp__tools__delete_everything",
        "mcp__tools__crash",
        "write",
    ] {
        assert!(!tools.iter().any(|t| t == absent), "{absent} in {tools:?}");
    }
    let (is_error, text) = last_result(&children[1]);
    assert!(!is_error && text.contains("value of k2"), "{text}");
    let (is_error, text) = last_result(&children[2]);
    assert!(is_error, "{text}");
    assert!(
        text.contains("the role is read-only and the MCP tool is not annotated read-only"),
        "{text}"
    );
    assert!(!marker(&f).exists(), "the destructive tool ran");
    let records = task_records(&f);
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(records[0]["status"], "completed", "{:#}", records[0]);
    assert_eq!(
        records[0]["usage"]["toolCallsBlocked"],
        json!(1),
        "{:#}",
        records[0]
    );
}

#[test]
fn a_writable_child_may_call_the_destructive_tool() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    write_settings(&f, json!({ "tools": stdio_entry(&python, &f, &[]) }));
    let s = &f.server;
    let child = || Match::first_user(CHILD);
    let parent = || !Match::first_user(CHILD);
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_agent",
            "Agent",
            json!({"subagent_type": "general-purpose", "description": "Delete",
                   "prompt": format!("{CHILD} Delete everything.")}),
        )),
    );
    s.script(Rule::new(parent()).reply(Reply::text("The child reported.")));
    s.script(
        Rule::new(child().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "c1",
            "mcp__tools__delete_everything",
            json!({"path": "/tmp/x"}),
        )),
    );
    s.script(Rule::new(child()).reply(Reply::text("deleted")));
    f.run_print(Wire::Anthropic, &["Launch the child."])
        .assert_success();
    assert_eq!(
        std::fs::read_to_string(marker(&f)).unwrap(),
        "deleted /tmp/x\n"
    );
}

#[test]
fn an_untrusted_projects_mcp_json_is_ignored_until_trusted() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    std::fs::write(
        f.project.join(".mcp.json"),
        json!({"mcpServers": {"proj": stdio_entry(&python, &f, &[])}}).to_string(),
    )
    .unwrap();
    f.server.script(Rule::always().reply(Reply::text("ok")));
    let out = f.run_print(Wire::Anthropic, &["hi"]);
    out.assert_success();
    assert!(
        out.stderr
            .contains(".mcp.json is ignored: the project is not trusted"),
        "{}",
        out.stderr
    );
    let tools = Wire::Anthropic.tool_names(&f.last_request());
    assert!(!tools.iter().any(|t| t.starts_with("mcp__")), "{tools:?}");

    let out = f.run_print(Wire::Anthropic, &["--trust", "hi"]);
    out.assert_success();
    assert!(
        !out.stderr.contains(".mcp.json is ignored"),
        "{}",
        out.stderr
    );
    let tools = Wire::Anthropic.tool_names(&f.last_request());
    assert!(tools.iter().any(|t| t == "mcp__proj__lookup"), "{tools:?}");
}

/// Trust attaches to the repository: a repository nested inside a trusted one (its own `.git`)
/// is a project of its own, and its `.mcp.json` does not start until it is trusted itself. A
/// plain subdirectory of the trusted repository stays trusted. The servers here only write a
/// marker (and then fail to start, which costs a warning): a marker means the command ran.
#[test]
fn a_repository_nested_in_a_trusted_one_starts_no_server_until_trusted_itself() {
    let f = Fixture::new();
    let outer = f.project.clone();
    let inner = outer.join("vendor/inner");
    std::fs::create_dir_all(outer.join(".git")).unwrap();
    std::fs::create_dir_all(inner.join(".git")).unwrap();
    let ran = |name: &str| f.home.join(format!("{name}.ran"));
    let writes_marker = |name: &str| {
        json!({"mcpServers": {name: {
            "command": "sh",
            "args": ["-c", format!("echo started > '{}'", ran(name).display())],
        }}})
        .to_string()
    };
    std::fs::write(outer.join(".mcp.json"), writes_marker("outer")).unwrap();
    std::fs::write(inner.join(".mcp.json"), writes_marker("inner")).unwrap();
    f.server.script(Rule::always().reply(Reply::text("ok")));
    f.run(&["trust"]).assert_success();
    let run_in = |dir: &Path| {
        let mut cmd = f.command(&["-p", "--model", Wire::Anthropic.model(), "hi"]);
        cmd.current_dir(dir);
        let out = Running::spawn(cmd, None).wait(HANG_GUARD);
        out.assert_success();
        out
    };

    // The trusted repository's servers start from a subdirectory of it.
    run_in(&outer.join("src"));
    assert!(ran("outer").exists(), "the trusted repository's server ran");

    // The nested repository is not trusted through the outer one.
    let out = run_in(&inner);
    assert!(
        out.stderr
            .contains(".mcp.json is ignored: the project is not trusted"),
        "{}",
        out.stderr
    );
    assert!(!ran("inner").exists(), "the nested repository's server ran");
    let mut doctor = f.command(&["doctor"]);
    doctor.current_dir(&inner);
    let report = Running::spawn(doctor, None).wait(HANG_GUARD).stdout;
    assert!(
        report.contains(&format!(
            "project {}: not trusted (it is a repository of its own inside trusted {}",
            inner.display(),
            outer.display()
        )),
        "{report}"
    );
    assert!(!ran("inner").exists(), "doctor started the nested server");

    // Trusted itself, it starts them.
    f.run(&["trust", inner.to_str().unwrap()]).assert_success();
    run_in(&inner);
    assert!(
        ran("inner").exists(),
        "the trusted nested repository's server ran"
    );
}

#[test]
fn a_server_that_crashes_mid_call_is_a_tool_error_and_the_run_goes_on() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    write_settings(&f, json!({ "tools": stdio_entry(&python, &f, &[]) }));
    script_root_calls(
        &f,
        &[
            ("mcp__tools__crash", json!({})),
            ("mcp__tools__lookup", json!({"key": "after"})),
            ("read", json!({"path": "notes.txt"})),
        ],
    );
    let out = f.run_print(Wire::Anthropic, &["Crash it."]);
    out.assert_success();
    assert_eq!(out.stdout.trim(), "done");
    let requests = root_requests(&f);
    assert_eq!(requests.len(), 4);
    let (is_error, text) = last_result(&requests[1]);
    assert!(is_error, "{text}");
    assert!(
        text.contains("MCP server `tools` cannot run `crash`"),
        "{text}"
    );
    let (is_error, text) = last_result(&requests[2]);
    assert!(is_error, "{text}");
    assert!(text.contains("cannot run `lookup`"), "{text}");
    let (is_error, text) = last_result(&requests[3]);
    assert!(!is_error && text.contains("alpha line"), "{text}");
    // The server's stderr went to its log, not to cadre's output.
    assert!(!out.stderr.contains("crashing now"), "{}", out.stderr);
    let log = std::fs::read_to_string(server_log(&f, "tools")).unwrap();
    assert!(log.contains("crashing now"), "{log}");
}

#[test]
fn a_server_that_fails_to_start_is_a_warning_and_the_others_work() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    write_settings(
        &f,
        json!({
            "broken": stdio_entry(&python, &f, &["--fail-start"]),
            "missing": {"command": "/nonexistent/mcp-server"},
            "good": stdio_entry(&python, &f, &[]),
        }),
    );
    script_root_calls(&f, &[("mcp__good__lookup", json!({"key": "k3"}))]);
    let out = f.run_print(Wire::Anthropic, &["hi"]);
    out.assert_success();
    assert_eq!(out.stdout.trim(), "done");
    assert!(
        out.stderr.contains("warning: MCP server `broken` (stdio "),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("warning: MCP server `missing` (stdio /nonexistent/mcp-server) did not start: cannot run /nonexistent/mcp-server: no such program (is it installed and on PATH?)"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("refuses to start"), "{}", out.stderr);
    let requests = root_requests(&f);
    let tools = Wire::Anthropic.tool_names(&requests[0]);
    assert!(tools.iter().any(|t| t == "mcp__good__lookup"), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp__broken")),
        "{tools:?}"
    );
    let (is_error, text) = last_result(&requests[1]);
    assert!(!is_error && text.contains("value of k3"), "{text}");
}

#[test]
fn a_servers_stderr_flood_does_not_reach_cadres_output() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    write_settings(&f, json!({ "tools": stdio_entry(&python, &f, &[]) }));
    script_root_calls(&f, &[("mcp__tools__flood", json!({}))]);
    let out = f.run(&[
        "-p",
        "--mode",
        "json",
        "--model",
        Wire::Anthropic.model(),
        "Flood.",
    ]);
    out.assert_success();
    assert!(!out.stdout.contains("FLOOD"));
    assert!(!out.stderr.contains("FLOOD"));
    for line in out.stdout.lines() {
        serde_json::from_str::<Value>(line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:.200}"));
    }
    let (is_error, text) = last_result(&root_requests(&f)[1]);
    assert!(!is_error && text.contains("flooded"), "{text}");
    let log = server_log(&f, "tools");
    let size = std::fs::metadata(&log).unwrap().len();
    assert!(size <= 1024 * 1024 + 200, "log is {size} bytes");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.ends_with("[log cut: the server wrote more than 1 MiB to stderr]\n"));
}

/// The test server over streamable HTTP on a free local port; killed on drop.
struct HttpServer(Child);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_http_server_works_like_a_stdio_one() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _server = HttpServer(
        Command::new(&python)
            .args([server_script(), "--http".into(), port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("the HTTP MCP server listens", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    write_settings(
        &f,
        json!({"web": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp"),
                       "headers": {"X-Test": "${TEST_HEADER:-default}"}}}),
    );
    script_root_calls(&f, &[("mcp__web__lookup", json!({"key": "over http"}))]);
    let out = f.run_print(Wire::Anthropic, &["hi"]);
    out.assert_success();
    let (is_error, text) = last_result(&root_requests(&f)[1]);
    assert!(!is_error && text.contains("value of over http"), "{text}");
}

#[test]
fn doctor_lists_the_servers_and_whether_they_start() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    write_settings(
        &f,
        json!({
            "good": stdio_entry(&python, &f, &[]),
            "broken": stdio_entry(&python, &f, &["--fail-start"]),
            "bad name": {"command": "x"},
        }),
    );
    std::fs::write(
        f.project.join(".mcp.json"),
        json!({"mcpServers": {"proj": {"command": "x"}}}).to_string(),
    )
    .unwrap();
    let out = f.run(&["doctor"]);
    out.assert_success();
    let section = out
        .stdout
        .split("\nMCP servers\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_else(|| panic!("no MCP section in {}", out.stdout));
    let settings = f.home.join("settings.json");
    for want in [
        "warning: MCP server \"bad name\"".to_string(),
        ".mcp.json: .mcp.json (not read: the project is not trusted; `cadre trust` trusts it)"
            .to_string(),
        format!(
            "good: stdio {}, from {}: started, 7 tools (3 read-only)",
            python.display(),
            settings.display()
        ),
        "warning: broken: stdio ".to_string(),
    ] {
        assert!(section.contains(&want), "{want} in\n{section}");
    }
    assert!(section.contains(": did not start: "), "{section}");
    assert!(!section.contains("proj: "), "{section}");

    let out = f.run(&["doctor", "--trust"]);
    assert!(
        out.stdout.contains("proj: stdio x, from .mcp.json"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_server_gets_the_credentials_its_configuration_names_and_no_others() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    let mut entry = stdio_entry(&python, &f, &[]);
    entry["env"]["GITHUB_TOKEN"] = json!("${GITHUB_TOKEN}");
    write_settings(&f, json!({ "tools": entry }));
    script_root_calls(
        &f,
        &[
            ("mcp__tools__env_has", json!({"name": "GITHUB_TOKEN"})),
            ("mcp__tools__env_has", json!({"name": "OTHER_SECRET_TOKEN"})),
        ],
    );
    let mut cmd = f.command(&["-p", "--model", Wire::Anthropic.model(), "Check."]);
    // Both look like credentials, so cadre takes both out of its environment at start-up.
    cmd.env("GITHUB_TOKEN", "ghp_named_in_the_config")
        .env("OTHER_SECRET_TOKEN", "not-named-anywhere");
    Running::spawn(cmd, None).wait(HANG_GUARD).assert_success();
    let requests = root_requests(&f);
    let (_, named) = last_result(&requests[1]);
    assert!(named.contains("\"set") || named.contains(" set"), "{named}");
    assert!(!named.contains("unset"), "{named}");
    let (_, other) = last_result(&requests[2]);
    assert!(other.contains("unset"), "{other}");
}

#[test]
fn secrets_in_an_http_servers_url_never_reach_the_terminal() {
    let f = Fixture::new();
    // A port nothing listens on: bound, then released.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    write_settings(
        &f,
        json!({"web": {"type": "http",
            "url": format!("http://127.0.0.1:{port}/${{OPENAI_API_KEY}}/mcp?api_key=${{OPENAI_API_KEY}}")}}),
    );
    f.server.script(Rule::always().reply(Reply::text("done")));
    let key = "sk-url-secret-0123456789abcdef";
    let mut cmd = f.command(&["-p", "--model", Wire::Anthropic.model(), "hi"]);
    cmd.env("OPENAI_API_KEY", key);
    let out = Running::spawn(cmd, None).wait(HANG_GUARD);
    out.assert_success();
    assert!(
        out.stderr.contains(&format!(
            "warning: MCP server `web` (http http://127.0.0.1:{port}) did not start"
        )),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains(key) && !out.stdout.contains(key),
        "{}",
        out.stderr
    );
    let mut cmd = f.command(&["doctor"]);
    cmd.env("OPENAI_API_KEY", key);
    let out = Running::spawn(cmd, None).wait(HANG_GUARD);
    assert!(
        out.stdout
            .contains(&format!("web: http http://127.0.0.1:{port}, from ")),
        "{}",
        out.stdout
    );
    assert!(
        !out.stderr.contains(key) && !out.stdout.contains(key),
        "{}",
        out.stdout
    );
}

#[test]
fn an_interrupted_run_ends_the_servers_and_what_they_started() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    write_settings(&f, json!({ "tools": stdio_entry(&python, &f, &[]) }));
    script_root_calls(
        &f,
        &[
            ("mcp__tools__spawn_sleeper", json!({})),
            ("mcp__tools__slow", json!({"seconds": 600})),
        ],
    );
    let cmd = f.command(&["-p", "--model", Wire::Anthropic.model(), "Sleep."]);
    let running = Running::spawn(cmd, None);
    let started = PathBuf::from(format!("{}.started", marker(&f).display()));
    wait_until("the slow call to start", || started.exists());
    let requests = root_requests(&f);
    let (_, text) = last_result(&requests[1]);
    let pid: String = text.chars().filter(char::is_ascii_digit).collect();
    let pid: i32 = pid.parse().unwrap();
    let alive = |pid: i32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        !stat.is_empty() && !stat.contains(") Z ")
    };
    assert!(alive(pid));
    running.signal("INT");
    let out = running.wait(HANG_GUARD);
    assert_eq!(out.code, Some(130), "{}", out.stderr);
    wait_until("the server's own child to end", || !alive(pid));
}

#[test]
fn claude_codes_server_wildcard_denies_and_a_miscased_denial_fails_closed() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    write_settings(&f, json!({ "tools": stdio_entry(&python, &f, &[]) }));
    let agents = f.home.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("nomcp.md"),
        "---\nname: nomcp\ndescription: no tools server\ndisallowedTools: mcp__tools__*\n---\nWork.\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("typo.md"),
        "---\nname: typo\ndescription: a typo\ndisallowedTools: mcp__Tools\n---\nWork.\n",
    )
    .unwrap();
    let s = &f.server;
    let child = || Match::first_user(CHILD);
    let parent = || !Match::first_user(CHILD);
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "a1",
            "Agent",
            json!({"subagent_type": "typo", "description": "typo", "prompt": format!("{CHILD} x")}),
        )),
    );
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(1))).reply(Reply::tool_call(
            "a2",
            "Agent",
            json!({"subagent_type": "nomcp", "description": "no mcp", "prompt": format!("{CHILD} y")}),
        )),
    );
    s.script(Rule::new(parent()).reply(Reply::text("done")));
    s.script(Rule::new(child()).reply(Reply::text("child done")));
    f.run_print(Wire::Anthropic, &["Launch."]).assert_success();
    let requests = root_requests(&f);
    let (is_error, text) = last_result(&requests[1]);
    assert!(is_error, "{text}");
    assert!(
        text.contains("mcp__Tools") && text.contains("case-sensitive"),
        "{text}"
    );
    let children: Vec<RecordedRequest> = s
        .requests()
        .into_iter()
        .filter(|r| r.first_user_text().is_some_and(|t| t.contains(CHILD)))
        .collect();
    assert_eq!(children.len(), 1, "only nomcp ran");
    let tools = Wire::Anthropic.tool_names(&children[0]);
    assert!(!tools.iter().any(|t| t.starts_with("mcp__")), "{tools:?}");
    assert!(tools.iter().any(|t| t == "read"), "{tools:?}");
}
