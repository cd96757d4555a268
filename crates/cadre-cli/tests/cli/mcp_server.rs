//! `cadre mcp` driven by the official MCP Python SDK (`tests/peers/mcp_client_*.py`), as an MCP
//! host would drive it: tools and their schemas, foreground calls with progress, background
//! calls and TaskOutput, cancellation, resources, bad arguments, the session record; raw
//! garbage on stdin; streamable HTTP and its loopback rule.
//!
//! The client scripts print one JSON report; the checks are here.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use cadre_testkit::{Match, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, HANG_GUARD, Running, assert_valid_session, messages};

#[path = "mcp_server/http_bounds.rs"]
mod http_bounds;
#[path = "mcp_server/stdio_bounds.rs"]
mod stdio_bounds;

const CHILD: &str = "[child]";
const HANG: &str = "[hang]";

/// The interpreter with the MCP SDK: `CADRE_TEST_PYTHON`, else the venv `.ci/run` makes. Under
/// CI a missing one fails the test; elsewhere the test is skipped with a note.
fn python() -> Option<PathBuf> {
    cadre_testkit::peers::python_with_mcp()
}

fn peer(script: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(script)
}

/// `python SCRIPT ARGS…` in the fixture's project with the fixture's environment (the
/// stdio client passes it on to the server it starts).
fn client_command(f: &Fixture, python: &Path, script: &str, args: &[&str]) -> Command {
    let mut client = Command::new(python);
    client
        .arg(peer(script))
        .args(args)
        .current_dir(&f.project)
        .env_clear()
        .env("HOME", &f.user_home)
        .env("CADRE_HOME", &f.home)
        .env("CADRE_RETRY_BASE_MS", "10");
    if let Some(path) = std::env::var_os("PATH") {
        client.env("PATH", path);
    }
    client
}

/// Run a stdio scenario; the report it printed.
fn run_stdio(f: &Fixture, python: &Path, scenario: &str) -> Value {
    run_stdio_in(f, python, scenario, "auto")
}

/// Run a stdio scenario with the client's protocol negotiation `mode` (`auto`: the SDK's
/// default, 2026-07-28 with this server; `legacy`: the initialize handshake).
fn run_stdio_in(f: &Fixture, python: &Path, scenario: &str, mode: &str) -> Value {
    run_stdio_with(f, python, scenario, mode, &[])
}

/// Run a stdio scenario against `cadre mcp --model fake/m1 SERVER_ARGS`.
fn run_stdio_with(
    f: &Fixture,
    python: &Path,
    scenario: &str,
    mode: &str,
    server_args: &[&str],
) -> Value {
    let mut args = vec![scenario, env!("CARGO_BIN_EXE_cadre"), "--model", "fake/m1"];
    args.extend_from_slice(server_args);
    let mut cmd = client_command(f, python, "mcp_client_stdio.py", &args);
    cmd.env("MCP_CLIENT_MODE", mode);
    let out = Running::spawn(cmd, None).wait(HANG_GUARD * 2);
    assert!(out.success(), "the client failed: {out:#?}");
    assert!(!out.stderr.contains("panicked"), "{out:#?}");
    let last = out.stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("no report ({e}): {out:#?}"))
}

/// A child reads notes.txt, then answers; a `[hang]` child never gets an answer.
fn script_children(f: &Fixture) {
    let s = &f.server;
    s.script(
        Rule::new(Match::first_user(HANG))
            .reply(Reply::text("too late").latency(Duration::from_secs(600))),
    );
    s.script(
        Rule::new(Match::first_user("Count the lines")).reply(Reply::tool_call(
            "call_so",
            "structured_output",
            json!({"lines": 3}),
        )),
    );
    s.script(
        Rule::new(Match::first_user(CHILD).and(Match::AssistantTurns(0))).reply(
            Reply::tool_call("call_read", "read", json!({"path": "notes.txt"})).usage(40, 7),
        ),
    );
    s.script(
        Rule::new(Match::first_user(CHILD))
            .reply(Reply::text("The first line is `alpha line`.").usage(60, 9)),
    );
}

/// The root session file's messages (there is one session: the root's; children's are
/// elsewhere).
fn root_messages(f: &Fixture) -> Vec<Value> {
    messages(&root_entries(f)).into_iter().cloned().collect()
}

/// The root session's entries, checked to be a valid session.
fn root_entries(f: &Fixture) -> Vec<Value> {
    assert_valid_session(&f.only_session())
}

fn task_records(f: &Fixture) -> Vec<Value> {
    crate::orchestration::task_records(f)
}

#[test]
fn tools_are_the_built_in_orchestration_tools_with_their_schemas() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    let report = run_stdio(&f, &python, "tools");
    let tools = report["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Agent", "SendMessage", "TaskOutput", "TaskStop"]);
    let agent = &tools[0]["inputSchema"];
    for key in [
        "description",
        "prompt",
        "subagent_type",
        "run_in_background",
        "tasks",
        "review",
        "output_schema",
        "scope",
    ] {
        assert!(
            agent["properties"].get(key).is_some(),
            "Agent lacks {key}: {agent}"
        );
    }
    assert_eq!(tools[2]["inputSchema"]["required"], json!(["task_id"]));
    assert!(
        tools[2]["inputSchema"]["properties"]
            .get("timeout_ms")
            .is_some()
    );
    assert!(
        tools[0]["description"]
            .as_str()
            .unwrap()
            .contains("Explore")
    );
    // The client gets no task notifications: no description tells it not to poll.
    for tool in [&tools[0], &tools[2]] {
        let text = tool["description"].as_str().unwrap();
        assert!(!text.contains("never poll"), "{text}");
        assert!(!text.contains("task-notification"), "{text}");
    }
}

#[test]
fn a_foreground_agent_call_reports_progress_and_returns_the_result_with_its_receipt() {
    for mode in ["auto", "legacy"] {
        foreground_call(mode);
    }
}

fn foreground_call(mode: &str) {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    script_children(&f);
    let report = run_stdio_in(&f, &python, "foreground", mode);
    let expected = if mode == "legacy" {
        "2025"
    } else {
        "2026-07-28"
    };
    assert!(
        report["protocol"].as_str().unwrap().starts_with(expected),
        "{report:#}"
    );
    let result = &report["result"];
    assert_eq!(result["isError"], false, "{report:#}");
    let text = result["text"].as_str().unwrap();
    assert!(text.contains("completed"), "{text}");
    assert!(text.contains("alpha line"), "{text}");
    assert!(text.contains("<execution-receipt>"), "{text}");
    let progress = report["progress"].as_array().unwrap();
    assert!(!progress.is_empty(), "no progress notification: {report:#}");
    let messages: Vec<&str> = progress
        .iter()
        .filter_map(|p| p["message"].as_str())
        .collect();
    assert!(
        messages.iter().any(|m| m.contains("started Explore")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("turns 1, tool calls 1")),
        "{messages:?}"
    );
    // The task's end comes before the result, with the tokens of both turns (40+7, 60+9).
    let last = messages.last().unwrap();
    assert!(last.contains("completed; tasks 1/1 done"), "{messages:?}");
    assert!(last.contains("tokens 116"), "{messages:?}");
    // Tokens count up turn by turn, not only at the end: the first turn's (40+7) are there
    // while the task still runs.
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("tasks 0/1 done, turns 1,") && m.contains("tokens 47")),
        "{messages:?}"
    );
    let values: Vec<f64> = progress
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");

    // Recorded in the root session as the model's calls are: a valid session whose tool call
    // has its result.
    let messages = root_messages(&f);
    let call = messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("the call is recorded");
    assert_eq!(call["content"][0]["name"], "Agent");
    let result = messages
        .iter()
        .find(|m| m["role"] == "toolResult")
        .expect("its result is recorded");
    assert_eq!(result["toolCallId"], call["content"][0]["id"]);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("alpha line")
    );
    let records = task_records(&f);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["status"], "completed");
}

#[test]
fn concurrent_calls_with_one_description_each_report_their_own_task() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    script_children(&f);
    let report = run_stdio(&f, &python, "concurrent");
    let calls = report["calls"].as_array().unwrap();
    let id_of = |call: &Value| {
        let text = call["result"]["text"].as_str().unwrap();
        let rest = text
            .strip_prefix("Task ")
            .unwrap_or_else(|| panic!("{text}"));
        rest.split(' ').next().unwrap().to_string()
    };
    let ids = [id_of(&calls[0]), id_of(&calls[1])];
    assert_ne!(ids[0], ids[1], "{report:#}");
    for (i, call) in calls.iter().enumerate() {
        let progress: Vec<&str> = call["progress"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let own = &ids[i];
        let other = &ids[1 - i];
        assert!(
            progress
                .iter()
                .any(|m| m.contains(&format!("task {own} started"))),
            "call {i}: {progress:#?}"
        );
        assert!(
            progress
                .iter()
                .any(|m| m.contains(&format!("task {own} completed"))),
            "call {i}: {progress:#?}"
        );
        assert!(
            progress.iter().all(|m| !m.contains(other.as_str())),
            "call {i} reports the other call's task: {progress:#?}"
        );
    }
}

#[test]
fn an_output_schema_gives_structured_content() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    script_children(&f);
    let report = run_stdio(&f, &python, "structured");
    assert_eq!(report["result"]["isError"], false, "{report:#}");
    assert_eq!(
        report["result"]["structuredContent"],
        json!({"lines": 3}),
        "{report:#}"
    );
}

#[test]
fn a_background_call_returns_the_task_id_and_task_output_blocks_for_the_result() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    script_children(&f);
    let report = run_stdio(&f, &python, "background");
    let launched = report["launched"]["text"].as_str().unwrap();
    assert!(
        launched.contains("in the background: task_id="),
        "{launched}"
    );
    // The client gets no notices: it is told to poll, never not to.
    assert!(launched.contains("call TaskOutput"), "{launched}");
    assert!(!launched.contains("do not poll"), "{launched}");
    let id = report["task_id"].as_str().expect("a task id");
    let output = report["output"]["text"].as_str().unwrap();
    assert_eq!(report["output"]["isError"], false, "{report:#}");
    assert!(output.contains(&format!("Task {id}")), "{output}");
    assert!(output.contains("status completed"), "{output}");
    assert!(output.contains("alpha line"), "{output}");
    // The finished task's notice is kept in the session (no model run answers it), and each
    // call says who made it.
    let entries = root_entries(&f);
    let custom = |kind: &str| {
        entries
            .iter()
            .filter(|e| e["type"] == "custom_message" && e["customType"] == kind)
            .count()
    };
    assert_eq!(custom("task-notification"), 1, "{entries:#?}");
    assert_eq!(custom("mcp-client-call"), 2, "{entries:#?}");
    let messages = root_messages(&f);
    let calls = messages
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .count();
    assert_eq!(calls, 2, "{messages:#?}");
}

#[test]
fn a_cancelled_call_stops_its_task() {
    for mode in ["auto", "legacy"] {
        cancelled_call(mode);
    }
}

fn cancelled_call(mode: &str) {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    script_children(&f);
    let report = run_stdio_in(&f, &python, "cancel", mode);
    assert_eq!(report["completed"], false, "{report:#}");
    let records = report["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{report:#}");
    assert_eq!(records[0]["status"], "stopped", "{report:#}");
    let on_disk = task_records(&f);
    assert_eq!(on_disk.len(), 2);
    assert!(
        on_disk.iter().all(|r| r["status"] == "stopped"),
        "{on_disk:#?}"
    );
    // The TaskOutput the client gave up on stopped waiting (recorded so), and TaskStop then
    // stopped its task.
    assert_eq!(report["stopped"]["isError"], false, "{report:#}");
    assert!(
        report["stopped"]["text"]
            .as_str()
            .unwrap()
            .contains("status stopped"),
        "{report:#}"
    );
    let results: Vec<String> = root_messages(&f)
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| {
            m["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert!(
        results
            .iter()
            .any(|t| t == "TaskOutput was cancelled by the client"),
        "{results:#?}"
    );
    // The call is recorded with its (aborted) result, so the session stays valid.
    let messages = root_messages(&f);
    crate::harness::assert_every_tool_call_answered(&messages.iter().collect::<Vec<_>>());
}

#[test]
fn resources_list_the_roster_and_each_tasks_record_output_and_session() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    script_children(&f);
    let report = run_stdio(&f, &python, "resources");
    let uris: Vec<&str> = report["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris[0], "cadre://roster");
    assert_eq!(uris.len(), 4, "{uris:?}");
    let task = uris[1];
    assert_eq!(uris[2], format!("{task}/output"));
    assert_eq!(uris[3], format!("{task}/session"));
    let contents = &report["contents"];
    assert!(
        contents["cadre://roster"]
            .as_str()
            .unwrap()
            .contains("Explore")
    );
    let record: Value = serde_json::from_str(contents[task].as_str().unwrap()).unwrap();
    assert_eq!(record["status"], "completed");
    assert!(
        contents[&format!("{task}/output")]
            .as_str()
            .unwrap()
            .contains("alpha line")
    );
    let session = contents[&format!("{task}/session")].as_str().unwrap();
    assert!(
        session
            .lines()
            .all(|l| serde_json::from_str::<Value>(l).is_ok()),
        "{session}"
    );
    assert!(session.contains("notes.txt"), "{session}");
    let missing = report["missing"].as_str().unwrap();
    assert!(
        missing.contains("no resource cadre://tasks/no-such-task"),
        "{missing}"
    );
}

#[test]
fn bad_arguments_are_tool_errors_with_a_clear_message() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    let report = run_stdio(&f, &python, "bad-args");
    let results = &report["results"];
    for key in [
        "prompt_not_a_string",
        "unknown_role",
        "output_without_task",
        "stop_unknown",
    ] {
        assert_eq!(results[key]["isError"], true, "{key}: {report:#}");
    }
    let text = |k: &str| results[k]["text"].as_str().unwrap().to_string();
    assert!(
        text("prompt_not_a_string").contains("invalid Agent arguments"),
        "{report:#}"
    );
    assert!(text("unknown_role").contains("no-such-role"), "{report:#}");
    assert!(
        text("output_without_task").contains("invalid TaskOutput arguments"),
        "{report:#}"
    );
    assert!(text("stop_unknown").contains("nope"), "{report:#}");
    let unknown = report["unknown_tool"].as_str().unwrap();
    assert!(unknown.contains("unknown tool `NoSuchTool`"), "{unknown}");
    assert_eq!(report["tools_after"], 4);
    assert!(task_records(&f).is_empty());
}

/// `--plan` and `--session-dir` apply as for `-p`: a writing role is refused with plan mode's
/// reason, and the session is stored where it was told.
#[test]
fn the_serve_flags_apply() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    script_children(&f);
    let dir = f.home.join("elsewhere");
    let dir_arg = dir.to_string_lossy().into_owned();
    let report = run_stdio_with(
        &f,
        &python,
        "writer",
        "auto",
        &["--plan", "--session-dir", &dir_arg],
    );
    assert_eq!(report["result"]["isError"], true, "{report:#}");
    let text = report["result"]["text"].as_str().unwrap();
    assert!(text.contains("plan mode: `code` may not launch"), "{text}");
    assert!(f.session_files().is_empty());
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(task_records(&f).is_empty());
}

/// Raw lines on stdin: garbage, a huge line and a request for an unknown method do not end
/// the server; the next valid request is answered; end of input ends it with 0.
#[test]
fn malformed_input_does_not_end_the_server() {
    let f = Fixture::new();
    let mut cmd = f.command(&["mcp", "--model", "fake/m1"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let lines = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    let send = |stdin: &mut std::process::ChildStdin, line: &str| {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
    };
    send(&mut stdin, "this is not json");
    send(&mut stdin, "{\"jsonrpc\": \"2.0\", \"id\": ");
    send(&mut stdin, &init.to_string());
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    );
    send(&mut stdin, "[1, 2, 3]");
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "no/such"}).to_string(),
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string(),
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "TaskOutput", "arguments": {"task_id": 7}}})
        .to_string(),
    );
    drop(stdin);
    let deadline = std::time::Instant::now() + HANG_GUARD;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "cadre mcp did not exit"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let lines = lines.join().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(0), "{lines:#?}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Nothing but JSON-RPC on stdout.
    let frames: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a frame {l:?}: {e}")))
        .collect();
    assert!(frames.iter().all(|f| f["jsonrpc"] == "2.0"), "{frames:#?}");
    let by_id = |id: i64| frames.iter().find(|f| f["id"] == id);
    assert!(
        by_id(1).is_some_and(|f| f["result"]["serverInfo"]["name"] == "cadre"),
        "{frames:#?}"
    );
    assert!(
        by_id(2).is_some_and(|f| f.get("error").is_some()),
        "{frames:#?}"
    );
    let tools = &by_id(3).expect("tools/list answered")["result"]["tools"];
    assert_eq!(tools.as_array().map(Vec::len), Some(4), "{frames:#?}");
    let call = &by_id(4).expect("tools/call answered")["result"];
    assert_eq!(call["isError"], true, "{frames:#?}");
    assert!(
        call["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("invalid TaskOutput arguments")
    );
}

#[test]
fn streamable_http_serves_the_sdk_client() {
    for mode in ["auto", "legacy"] {
        http_client(mode);
    }
}

/// One client over HTTP: stateless 2026-07-28 requests (`auto`, served by the process's root
/// session) or an MCP session (`legacy`, a root session of its own). Either way the calls end
/// up in one valid session file once the server is stopped.
fn http_client(mode: &str) {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    script_children(&f);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let server = Running::spawn(
        f.command(&["mcp", "--http", &addr, "--model", "fake/m1"]),
        None,
    );
    let url = format!("http://{addr}/mcp");
    // The token is read where the server writes it, for its owner only.
    let token_file = f.home.join("mcp-http").join(format!("{port}.token"));
    crate::harness::wait_until("the token file", || token_file.exists());
    let token = std::fs::read_to_string(&token_file).unwrap();
    let token = token.trim();
    assert_eq!(token.len(), 64, "{token}");
    let mode_bits = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&token_file).unwrap().permissions(),
    );
    assert_eq!(mode_bits & 0o777, 0o600);
    let mut client = client_command(&f, &python, "mcp_client_http.py", &[&url]);
    client.env("MCP_CLIENT_MODE", mode).env("MCP_TOKEN", token);
    let out = Running::spawn(client, None).wait(HANG_GUARD * 2);
    server.signal("TERM");
    let served = server.wait(HANG_GUARD);
    assert!(out.success(), "{out:#?}\nserver: {served:#?}");
    assert_eq!(served.code, Some(143), "{served:#?}");
    assert!(served.stdout.is_empty(), "{served:#?}");
    // The token was printed once, on stderr, and its file is gone with the server.
    assert_eq!(served.stderr.matches(token).count(), 1, "{served:#?}");
    assert!(!token_file.exists());
    assert!(!served.stderr.contains("panicked"), "{served:#?}");
    let report: Value = serde_json::from_str(out.stdout.lines().last().unwrap()).unwrap();
    let expected = if mode == "legacy" {
        "2025"
    } else {
        "2026-07-28"
    };
    assert!(
        report["protocol"].as_str().unwrap().starts_with(expected),
        "{report:#}"
    );
    assert_eq!(
        report["tools"],
        json!(["Agent", "SendMessage", "TaskOutput", "TaskStop"]),
        "{report:#}"
    );
    let text = report["result"]["text"].as_str().unwrap();
    assert!(text.contains("alpha line"), "{report:#}");
    assert!(
        !report["progress"].as_array().unwrap().is_empty(),
        "{report:#}"
    );
    // A page from another site (DNS rebinding, a browser's Origin) is refused.
    assert_eq!(report["foreign_host_status"], 403, "{report:#}");
    assert_eq!(report["foreign_origin_status"], 403, "{report:#}");
    // Without the token, or with a wrong one, nothing is served.
    assert_eq!(report["no_token_status"], 401, "{report:#}");
    assert_eq!(report["wrong_token_status"], 401, "{report:#}");
    // At most 16 live sessions (the client's own one ended with its DELETE).
    let statuses = report["session_statuses"].as_array().unwrap();
    assert_eq!(statuses.len(), 17, "{report:#}");
    assert!(statuses[..16].iter().all(|s| s == 200), "{report:#}");
    assert_eq!(statuses[16], 503, "{report:#}");
    let refusal = report["refused_session"]["error"]["message"]
        .as_str()
        .unwrap();
    assert!(refusal.contains("at most 16 MCP sessions"), "{refusal}");
    let messages = root_messages(&f);
    let result = messages
        .iter()
        .find(|m| m["role"] == "toolResult")
        .unwrap_or_else(|| panic!("the call is recorded: {messages:#?}"));
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("alpha line")
    );
}

#[test]
fn a_non_loopback_http_address_is_refused() {
    let f = Fixture::new();
    let out = f.run(&["mcp", "--http", "0.0.0.0:8765", "--model", "fake/m1"]);
    let line = out.assert_one_line_error();
    assert!(line.contains("loopback only"), "{line}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
