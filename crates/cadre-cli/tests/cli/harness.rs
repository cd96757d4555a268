//! Shared fixtures: a fake model server, an isolated CADRE_HOME/HOME, a small project, and a
//! way to run the binary with a hang guard.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cadre_testkit::{FakeServer, RecordedRequest};
use serde_json::{Value, json};

/// How long any single run may take before it counts as hung. Only a guard: no test asserts on
/// how fast something is.
pub const HANG_GUARD: Duration = Duration::from_secs(40);

/// The wire format a scenario runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAi,
}

impl Wire {
    pub const BOTH: [Wire; 2] = [Wire::Anthropic, Wire::OpenAi];

    /// The model name declared for this format in the fixture's models.json.
    pub fn model(self) -> &'static str {
        match self {
            Wire::Anthropic => "fake/m1",
            Wire::OpenAi => "fakeoai/m1",
        }
    }

    /// Names of the tools offered in a recorded request, whatever its format.
    pub fn tool_names(self, request: &RecordedRequest) -> Vec<String> {
        let tools = request.body["tools"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        tools
            .iter()
            .filter_map(|t| match self {
                Wire::Anthropic => t["name"].as_str(),
                Wire::OpenAi => t["function"]["name"].as_str(),
            })
            .map(str::to_string)
            .collect()
    }
}

/// A temporary world for one scenario.
pub struct Fixture {
    pub server: FakeServer,
    /// CADRE_HOME.
    pub home: PathBuf,
    /// HOME, empty, so no real ~/.pi or ~/.cadre is read.
    pub user_home: PathBuf,
    /// The working directory of the runs (canonical, as the binary sees it).
    pub project: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        let server = FakeServer::start_blocking().expect("start the fake server");
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = tmp.path().canonicalize().expect("canonical temp dir");
        let home = root.join("cadre-home");
        let user_home = root.join("home");
        let project = root.join("project");
        for dir in [&home, &user_home, &project.join("src")] {
            std::fs::create_dir_all(dir).expect("create dirs");
        }
        // As cadre makes a home: the user's only (an open one is tightened with a note).
        std::fs::set_permissions(&home, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .expect("make the home private");
        std::fs::write(
            project.join("src/lib.rs"),
            "pub fn to_eur(cents: i64) -> i64 {\n    cents * 92 / 100\n}\n",
        )
        .expect("write lib.rs");
        std::fs::write(
            project.join("notes.txt"),
            "alpha line\nbeta line\ngamma line\n",
        )
        .expect("write notes");
        let fixture = Fixture {
            server,
            home,
            user_home,
            project,
            _tmp: tmp,
        };
        fixture.write_models(&fixture.models_json());
        fixture
    }

    /// Two providers on the fake server, one per wire format.
    pub fn models_json(&self) -> Value {
        json!({"providers": {
            "fake": {
                "baseUrl": self.server.anthropic_base_url(),
                "api": "anthropic-messages",
                "apiKey": "test-key",
                "models": [{"id": "m1"}]
            },
            "fakeoai": {
                "baseUrl": self.server.openai_base_url(),
                "api": "openai-completions",
                "apiKey": "test-key",
                "models": [{"id": "m1"}]
            }
        }})
    }

    pub fn write_models(&self, models: &Value) {
        std::fs::write(self.models_path(), models.to_string()).expect("write models.json");
    }

    pub fn models_path(&self) -> PathBuf {
        self.home.join("models.json")
    }

    /// The binary with an isolated environment: only PATH survives from ours.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cadre"));
        cmd.args(args)
            .current_dir(&self.project)
            .env_clear()
            .env("HOME", &self.user_home)
            .env("CADRE_HOME", &self.home)
            // Retries after errors without a retry-after wait milliseconds, not seconds.
            .env("CADRE_RETRY_BASE_MS", "10");
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        cmd
    }

    /// Runs `cadre ARGS` with stdin closed.
    pub fn run(&self, args: &[&str]) -> Output {
        Running::spawn(self.command(args), None).wait(HANG_GUARD)
    }

    /// Runs `cadre -p --model <wire's model> ARGS`.
    pub fn run_print(&self, wire: Wire, args: &[&str]) -> Output {
        let mut all = vec!["-p", "--model", wire.model()];
        all.extend_from_slice(args);
        self.run(&all)
    }

    /// `CADRE_HOME/sessions/--<cwd>--/`.
    pub fn session_dir(&self) -> PathBuf {
        let cwd = self.project.to_string_lossy();
        let encoded = cwd.trim_start_matches('/').replace('/', "-");
        self.home.join("sessions").join(format!("--{encoded}--"))
    }

    /// Session files of the project directory, oldest name first.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = match std::fs::read_dir(self.session_dir()) {
            Ok(dir) => dir
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect(),
            Err(_) => Vec::new(),
        };
        files.sort();
        files
    }

    /// The only session file of the project directory.
    pub fn only_session(&self) -> PathBuf {
        let files = self.session_files();
        assert_eq!(files.len(), 1, "expected one session file: {files:?}");
        files.into_iter().next().unwrap()
    }

    /// The last request the server received.
    pub fn last_request(&self) -> RecordedRequest {
        self.server
            .last_request()
            .expect("the server got a request")
    }
}

/// What a finished run left behind.
#[derive(Debug)]
pub struct Output {
    /// `None` when the process was ended by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// Exit 0, with the run's output in the message otherwise.
    pub fn assert_success(&self) -> &Output {
        assert!(self.success(), "expected success, got {self:#?}");
        assert!(!self.stderr.contains("panicked"), "{self:#?}");
        self
    }

    /// A clean failure: non-zero exit, nothing on stdout, exactly one `cadre: error:` line.
    pub fn assert_one_line_error(&self) -> &str {
        assert!(
            self.code.is_some_and(|c| c != 0),
            "expected a non-zero exit: {self:#?}"
        );
        assert!(self.stdout.is_empty(), "stdout must be empty: {self:#?}");
        assert!(!self.stderr.contains("panicked"), "{self:#?}");
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "expected one stderr line: {self:#?}");
        assert!(
            lines[0].starts_with("cadre: error: "),
            "stderr should start with `cadre: error: `: {self:#?}"
        );
        lines[0]
    }
}

/// A spawned binary whose output is collected on threads (so a full pipe never blocks it).
pub struct Running {
    child: Child,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
}

impl Running {
    pub fn spawn(mut cmd: Command, stdin: Option<&str>) -> Running {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = cmd.spawn().expect("spawn cadre");
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(text.as_bytes()).expect("write stdin");
            // Dropping the pipe closes stdin so the binary sees end of input.
        }
        let stdout = child.stdout.take().map(collect);
        let stderr = child.stderr.take().map(collect);
        Running {
            child,
            stdout,
            stderr,
        }
    }

    /// Like [`Running::spawn`] with stdin closed, but nobody reads stdout: the pipe's read end
    /// is closed at once, as `cadre … | head -0` would leave it.
    pub fn spawn_with_stdout_closed(mut cmd: Command) -> Running {
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::null());
        let mut child = cmd.spawn().expect("spawn cadre");
        drop(child.stdout.take());
        let stderr = child.stderr.take().map(collect);
        Running {
            child,
            stdout: None,
            stderr,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal by name (`INT` as Ctrl-C would, `TERM` as a supervisor would). Through
    /// `kill(1)`: the workspace denies `unsafe`, which `libc::kill` would need.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([format!("-{name}"), self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits for the exit; a run still going after `guard` is killed and fails the test.
    pub fn wait(mut self, guard: Duration) -> Output {
        let deadline = Instant::now() + guard;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("poll child") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let stderr = self.stderr.take().map(join).unwrap_or_default();
                panic!("cadre did not exit within {guard:?}; stderr:\n{stderr}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        Output {
            code: status.code(),
            stdout: self.stdout.take().map(join).unwrap_or_default(),
            stderr: self.stderr.take().map(join).unwrap_or_default(),
        }
    }
}

fn collect(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn join(handle: JoinHandle<String>) -> String {
    handle.join().unwrap_or_default()
}

/// Polls `check` until it holds; panics after the hang guard.
pub fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + HANG_GUARD;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reads a session file and checks it is Pi session format v3: a header line, then entries
/// chained by `parentId` to the entry before, messages in Pi's shapes. Returns the entries
/// after the header.
pub fn assert_valid_session(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("read session file");
    assert!(text.ends_with('\n'), "session file ends mid-line");
    let mut lines = text.lines().map(|l| {
        serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}"))
    });
    let header = lines.next().expect("a header line");
    assert_eq!(header["type"], "session", "{header}");
    assert_eq!(header["version"], 3, "{header}");
    assert!(
        header["id"].as_str().is_some_and(|s| !s.is_empty()),
        "{header}"
    );
    assert!(header["timestamp"].as_str().is_some(), "{header}");
    assert!(header["cwd"].as_str().is_some(), "{header}");

    let entries: Vec<Value> = lines.collect();
    let mut previous: Option<String> = None;
    for entry in &entries {
        let id = entry["id"].as_str().expect("entry id");
        assert!(
            id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "id is not 8 hex digits: {entry}"
        );
        assert!(entry["type"].as_str().is_some(), "{entry}");
        assert!(entry["timestamp"].as_str().is_some(), "{entry}");
        match &previous {
            None => assert!(
                entry["parentId"].is_null(),
                "first entry has a parent: {entry}"
            ),
            Some(prev) => assert_eq!(
                entry["parentId"].as_str(),
                Some(prev.as_str()),
                "entry does not chain to the one before: {entry}"
            ),
        }
        previous = Some(id.to_string());
        if entry["type"] == "message" {
            assert_pi_message(&entry["message"]);
        }
    }
    entries
}

/// Checks the field names of Pi's user, assistant and toolResult messages.
fn assert_pi_message(m: &Value) {
    assert!(m["timestamp"].is_u64(), "timestamp in ms: {m}");
    match m["role"].as_str() {
        Some("user") => assert!(m["content"].is_string() || m["content"].is_array(), "{m}"),
        Some("assistant") => {
            for field in ["api", "provider", "model", "stopReason"] {
                assert!(m[field].is_string(), "assistant lacks {field}: {m}");
            }
            for field in ["input", "output", "cacheRead", "cacheWrite", "totalTokens"] {
                assert!(m["usage"][field].is_u64(), "usage lacks {field}: {m}");
            }
            assert!(m["usage"]["cost"]["total"].is_number(), "{m}");
            for block in m["content"].as_array().expect("assistant content") {
                match block["type"].as_str() {
                    Some("text") => assert!(block["text"].is_string(), "{block}"),
                    Some("thinking") => assert!(block["thinking"].is_string(), "{block}"),
                    Some("toolCall") => {
                        assert!(block["id"].is_string(), "{block}");
                        assert!(block["name"].is_string(), "{block}");
                        // Pi types arguments as an object. cadre keeps arguments that were
                        // not valid JSON as the raw string (cadre-protocol's ToolCall), so the
                        // tool can tell the model what was wrong; only then is a string here.
                        let args = &block["arguments"];
                        let unparsable = args
                            .as_str()
                            .is_some_and(|raw| serde_json::from_str::<Value>(raw).is_err());
                        assert!(args.is_object() || unparsable, "{block}");
                    }
                    _ => panic!("unknown assistant block {block}"),
                }
            }
        }
        Some("toolResult") => {
            assert!(m["toolCallId"].is_string(), "{m}");
            assert!(m["toolName"].is_string(), "{m}");
            assert!(m["isError"].is_boolean(), "{m}");
            assert!(m["content"].is_array(), "{m}");
        }
        other => panic!("unexpected message role {other:?}: {m}"),
    }
}

/// The `message` objects of the message entries, in order.
pub fn messages(entries: &[Value]) -> Vec<&Value> {
    entries
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| &e["message"])
        .collect()
}

/// Every tool call in `messages` has a toolResult with its id.
pub fn assert_every_tool_call_answered(messages: &[&Value]) {
    let results: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .filter_map(|m| m["toolCallId"].as_str())
        .collect();
    for m in messages.iter().filter(|m| m["role"] == "assistant") {
        for block in m["content"].as_array().into_iter().flatten() {
            if block["type"] == "toolCall" {
                let id = block["id"].as_str().unwrap_or("");
                assert!(results.contains(&id), "tool call {id} has no result");
            }
        }
    }
}

/// All tool-result texts of a recorded request, joined.
pub fn tool_result_text(request: &RecordedRequest) -> String {
    request
        .tool_results()
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of a Pi message whose content is a string or an array of blocks.
pub fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Runs git in `dir` with a fixed identity and no system config; returns its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Whether `program` is installed (some checks use optional tools such as python3).
pub fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}
