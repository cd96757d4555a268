//! The interactive mode end to end: the real binary on a pseudo-terminal against the fake
//! server, driven by keystrokes, checked on the screen a terminal would show.
//!
//! `tests/peers/pty_screen.py` runs the binary with stdin, stdout and stderr on one
//! pseudo-terminal and keeps a VT screen model (pyte), so the assertions see cells, not escape
//! sequences. Its Python is the peers' venv (`.ci/run` installs pyte there); under CI a missing
//! one fails the tests, elsewhere they skip with a note.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cadre_testkit::{Match, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::{Fixture, HANG_GUARD, Running, assert_valid_session, messages, text_of};

/// A child's conversation starts with this, so the rules never confuse it with the root's.
const CHILD: &str = "[child]";
const PROMPT: &str = "read the notes through a child";
const DESCRIPTION: &str = "Read notes";
const LAUNCHED: &str = "A child is reading the notes.";
const FINAL: &str = "The notes start with alpha.";
/// Long enough that a wait for it is always on screen while it runs.
const SLOW: Duration = Duration::from_secs(3);

/// What the driver reports: the screen after each step, whether each wait matched, the exit.
struct Driven {
    steps: Vec<Value>,
    screen: Vec<String>,
    exit_code: Option<i64>,
    /// The window title the binary set (empty when it set none).
    title: String,
    /// Every byte the binary wrote to the terminal, and as text.
    raw_bytes: Vec<u8>,
    raw: String,
    /// How many steps the script had.
    expected_steps: usize,
}

impl Driven {
    /// The screen after the step that recorded the snapshot `name`.
    fn snapshot(&self, name: &str) -> String {
        let step = self
            .steps
            .iter()
            .find(|s| s["step"]["snapshot"] == name)
            .unwrap_or_else(|| panic!("no snapshot {name}:\n{}", self.dump()));
        screen_text(step)
    }

    /// Every wait matched (the driver stops at the first that did not).
    fn assert_all_ok(&self) {
        let failed = self.steps.iter().find(|s| s["ok"] != true);
        assert!(
            failed.is_none() && self.steps.len() == self.expected_steps,
            "a step failed: {}\n{}",
            failed.map(|s| s["step"].to_string()).unwrap_or_default(),
            self.dump()
        );
    }

    fn screen(&self) -> String {
        self.screen.join("\n")
    }

    /// Every step's screen, for a failure message.
    fn dump(&self) -> String {
        let mut out = String::new();
        for step in &self.steps {
            out.push_str(&format!(
                "--- {} ok={}\n{}\n",
                step["step"],
                step["ok"],
                screen_text(step)
            ));
        }
        out.push_str(&format!(
            "--- final (exit {:?})\n{}\n",
            self.exit_code,
            self.screen()
        ));
        out
    }

    /// The raw output written from the start of step `index` (0-based) on.
    fn raw_from(&self, index: usize) -> String {
        let offset = self.steps[index]["raw_start"].as_u64().unwrap_or(0) as usize;
        String::from_utf8_lossy(self.raw_bytes.get(offset..).unwrap_or_default()).into_owned()
    }
}

fn screen_text(step: &Value) -> String {
    step["screen"]
        .as_array()
        .map(|lines| {
            lines
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The venv Python with pyte, or `None` (a note printed) outside CI.
fn python() -> Option<PathBuf> {
    cadre_testkit::peers::python_with("pyte", "pyte VT emulator")
}

/// Runs `cadre ARGS` on a pseudo-terminal with the fixture's environment, `TERM` and `env`
/// set, feeding it `steps` (see `pty_screen.py`).
fn drive(
    f: &Fixture,
    python: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    size: (u16, u16),
    steps: Value,
) -> Driven {
    let expected_steps = steps.as_array().map_or(0, Vec::len);
    let raw_dir = tempfile::tempdir().unwrap();
    let raw_path = raw_dir.path().join("raw");
    let cadre = f.command(args);
    let script = json!({"cols": size.0, "rows": size.1, "steps": steps});
    let mut cmd = Command::new(python);
    cmd.arg(peer("pty_screen.py"))
        .arg(script.to_string())
        .arg(&raw_path)
        .arg(cadre.get_program())
        .args(cadre.get_args())
        .current_dir(&f.project)
        .env_clear();
    for (key, value) in cadre.get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    cmd.env("TERM", "xterm-256color");
    for (key, value) in env {
        cmd.env(key, value);
    }
    // The driver bounds its own run at 90 s; this guard only catches a driver that hangs.
    let out = Running::spawn(cmd, None).wait(HANG_GUARD + Duration::from_secs(60));
    assert!(
        out.success() && !out.stderr.contains("Traceback"),
        "the pty driver failed: {out:#?}"
    );
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("driver output is not JSON ({e}): {}", out.stdout));
    let raw_bytes = std::fs::read(&raw_path).unwrap_or_default();
    let raw = String::from_utf8_lossy(&raw_bytes).into_owned();
    let driven = Driven {
        steps: report["steps"].as_array().cloned().unwrap_or_default(),
        screen: report["screen"]
            .as_array()
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        exit_code: report["exit_code"].as_i64(),
        title: report["title"].as_str().unwrap_or_default().to_string(),
        raw_bytes,
        raw,
        expected_steps,
    };
    // Every screen of a passing run too, for looking at the mode by eye.
    if std::env::var_os("CADRE_TEST_PTY_DUMP").is_some() {
        eprintln!("{}", driven.dump());
    }
    driven
}

fn peer(script: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(script)
}

/// The interactive mode's arguments: the fixture's model, nothing else.
const ARGS: &[&str] = &["--model", "fake/m1"];

/// Waits for the input line (the prompt glyph at the start of a row).
fn ready() -> Value {
    json!({"wait_for": "(?m)^›", "timeout": 20})
}

/// `steps`, then Ctrl-C twice on an empty line and the exit.
fn then_quit(steps: Value) -> Value {
    let mut steps = steps.as_array().cloned().unwrap_or_default();
    steps.extend([
        json!({"key": "ctrl-c"}),
        json!({"sleep": 0.2}),
        json!({"key": "ctrl-c"}),
        json!({"wait_exit": 20}),
    ]);
    Value::Array(steps)
}

/// The root launches one background Explore child whose answer comes slowly, answers the
/// launch at once, and answers the child's completion notice with [`FINAL`].
fn script_child(f: &Fixture) {
    let child = || Match::first_user(CHILD);
    let root = || !Match::first_user(CHILD);
    let s = &f.server;
    s.script(
        Rule::new(child()).reply(Reply::text("The first line is `alpha line`.").latency(SLOW)),
    );
    s.script(
        Rule::new(root().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_agent",
            "Agent",
            json!({"subagent_type": "Explore", "description": DESCRIPTION,
               "prompt": format!("{CHILD} Read notes.txt and report its first line.")}),
        )),
    );
    s.script(
        Rule::new(root().and(Match::last_user("task-notification"))).reply(Reply::text(FINAL)),
    );
    s.script(Rule::new(root()).reply(Reply::text(LAUNCHED)));
}

#[test]
fn a_prompt_shows_the_child_in_the_panel_while_it_runs_then_the_answer_and_quits() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    script_child(&f);
    let steps = json!([
        ready(),
        {"send": PROMPT},
        {"key": "enter"},
        {"wait_for": "Tasks · 1 running", "timeout": 20},
        {"snapshot": "running"},
        {"wait_for": format!("✓ +Explore +{DESCRIPTION} +done"), "timeout": 30},
        {"wait_for": regex_escape(FINAL), "timeout": 20},
        {"snapshot": "answered"},
    ]);
    let steps = then_quit(steps);
    let run = drive(&f, &python, ARGS, &[], (100, 30), steps);
    run.assert_all_ok();

    // While the child ran: its row with the running glyph, role, description and status.
    let running = run.snapshot("running");
    // The panel: its title, then one row per task.
    let panel: Vec<&str> = running
        .lines()
        .skip_while(|l| !l.starts_with("Tasks · 1 running · 0 done"))
        .collect();
    let row = panel
        .get(1)
        .unwrap_or_else(|| panic!("no task panel:\n{}", run.dump()));
    assert!(row.starts_with('●') && row.contains(DESCRIPTION), "{row}");
    // The status line counts it too.
    let status = running.lines().last().unwrap_or_default();
    assert!(status.contains("1 task running"), "{status}");
    assert!(row.contains("Explore") && row.contains("running"), "{row}");
    // The prompt is in the conversation, echoed after the input glyph.
    assert!(running.contains(&format!("› {PROMPT}")), "{running}");

    let answered = run.snapshot("answered");
    assert!(
        answered.contains("Tasks · 0 running · 1 done"),
        "{answered}"
    );
    assert!(answered.contains(LAUNCHED), "{answered}");
    assert!(!answered.contains("no scripted reply"), "{answered}");

    assert_eq!(run.exit_code, Some(0), "{}", run.dump());
    assert!(run.screen().contains("session saved in"), "{}", run.dump());
    let entries = assert_valid_session(&f.only_session());
    let texts: Vec<String> = messages(&entries).into_iter().map(text_of).collect();
    assert!(texts.iter().any(|t| t == PROMPT), "{texts:?}");
    assert!(texts.iter().any(|t| t == FINAL), "{texts:?}");
}

/// The root's first turn: a slow `read`, so the rule line says "working" for a while; then
/// the answer.
fn script_slow_read(f: &Fixture, first_answer: &str) {
    let s = &f.server;
    s.script(
        Rule::new(Match::AssistantTurns(0)).reply(
            Reply::tool_call("call_read", "read", json!({"path": "notes.txt"})).latency(SLOW),
        ),
    );
    s.script(Rule::new(Match::Always).reply(Reply::text(first_answer)));
}

#[test]
fn enter_while_the_agent_works_steers_its_next_request() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    script_slow_read(&f, "Read them, and looked at beta too.");
    let steer = "also look at the beta line";
    let steps = json!([
        ready(),
        {"send": "read the notes"},
        {"key": "enter"},
        {"wait_for": "working", "timeout": 20},
        {"snapshot": "working"},
        // The first request leaves as the prompt is sent; this pause (well inside the reply's
        // latency) keeps the steer from racing it on a loaded machine.
        {"sleep": 1.0},
        {"send": steer},
        {"key": "enter"},
        {"wait_for": "looked at beta too", "timeout": 30},
        {"snapshot": "answered"},
    ]);
    let steps = then_quit(steps);
    let run = drive(&f, &python, ARGS, &[], (100, 30), steps);
    run.assert_all_ok();
    assert!(
        run.snapshot("working").contains("Enter steers"),
        "{}",
        run.dump()
    );
    // The request after the steer carries it; the one in flight when it was typed did not.
    let requests = f.server.requests();
    assert!(requests.len() >= 2, "{requests:?}");
    assert!(
        !requests[0].all_text().iter().any(|t| t.contains(steer)),
        "the steer reached the request in flight"
    );
    let steered = requests
        .iter()
        .find(|r| r.all_text().iter().any(|t| t.contains(steer)))
        .unwrap_or_else(|| panic!("no request carries the steer"));
    // Delivered inside the run, after the tool call: not a new prompt after the run's answer.
    assert!(
        steered.tool_call_ids().contains(&"call_read".to_string())
            && !steered
                .all_text()
                .iter()
                .any(|t| t.contains("looked at beta too")),
        "the steer came as a new prompt, not inside the run: {}",
        steered.summary()
    );
    assert!(run.snapshot("answered").contains(steer), "{}", run.dump());
    assert_eq!(run.exit_code, Some(0), "{}", run.dump());
}

const FOLLOW_UP: &str = "now summarise the gamma line";

/// A slow first run with a follow-up queued (Alt-Enter) while it works; `None` without pyte.
fn queued_follow_up() -> Option<(Fixture, Driven)> {
    let python = python()?;
    let f = Fixture::new();
    let s = &f.server;
    s.script(Rule::new(Match::last_user(FOLLOW_UP)).reply(Reply::text("Gamma is the last line.")));
    script_slow_read(&f, "The notes have three lines.");
    let steps = json!([
        ready(),
        {"send": "read the notes"},
        {"key": "enter"},
        {"wait_for": "working", "timeout": 20},
        {"send": FOLLOW_UP},
        {"key": "alt-enter"},
        {"snapshot": "queued"},
        {"wait_for": "Gamma is the last line", "timeout": 30},
        {"snapshot": "answered"},
    ]);
    let run = drive(&f, &python, ARGS, &[], (100, 30), then_quit(steps));
    run.assert_all_ok();
    Some((f, run))
}

#[test]
fn alt_enter_queues_a_follow_up_that_is_sent_after_the_run_ends() {
    let Some((f, run)) = queued_follow_up() else {
        return;
    };
    let follow_up = FOLLOW_UP;
    // A follow-up, not a steer: the first run ends with its own answer, then the queued
    // message opens a new turn after that answer.
    let requests = f.server.requests();
    let carrying: Vec<_> = requests
        .iter()
        .filter(|r| r.all_text().iter().any(|t| t.contains(follow_up)))
        .collect();
    assert!(!carrying.is_empty(), "the follow-up was never sent");
    let first = carrying[0];
    assert_eq!(
        first.last_user_text().as_deref(),
        Some(follow_up),
        "{}",
        first.summary()
    );
    assert!(
        first
            .all_text()
            .iter()
            .any(|t| t.contains("The notes have three lines.")),
        "the follow-up was sent before the first run's answer: {}",
        first.summary()
    );
    let answered = run.snapshot("answered");
    let queued = run.snapshot("queued");
    assert!(queued.contains("queued"), "{queued}");
    let answer_at = answered.find("The notes have three lines.");
    let follow_up_answer_at = answered.find("Gamma is the last line.");
    assert!(
        matches!((answer_at, follow_up_answer_at), (Some(a), Some(b)) if a < b),
        "the follow-up's answer should show after the first answer:\n{answered}"
    );
    // The session file has it in the order it was sent.
    let entries = assert_valid_session(&f.only_session());
    let texts: Vec<String> = messages(&entries).into_iter().map(text_of).collect();
    let answer_at = texts
        .iter()
        .position(|t| t == "The notes have three lines.");
    let follow_up_at = texts.iter().position(|t| t == FOLLOW_UP);
    assert!(
        matches!((answer_at, follow_up_at), (Some(a), Some(b)) if a < b),
        "{texts:?}"
    );
    assert_eq!(run.exit_code, Some(0), "{}", run.dump());
}

/// The conversation should show a queued follow-up where it entered the conversation (after
/// the run it waited for), as the session file records it.
#[test]
fn a_queued_follow_up_shows_after_the_answer_it_waited_for() {
    let Some((_f, run)) = queued_follow_up() else {
        return;
    };
    let answered = run.snapshot("answered");
    let answer_at = answered.find("The notes have three lines.");
    let follow_up_at = answered.find(&format!("› {FOLLOW_UP}"));
    assert!(
        matches!((answer_at, follow_up_at), (Some(a), Some(b)) if a < b),
        "the follow-up shows before the answer it waited for:\n{answered}"
    );
}

#[test]
fn esc_stops_a_slow_turn_and_the_next_prompt_works_then_ctrl_d_quits() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    let s = &f.server;
    s.script(Rule::new(Match::last_user("second question")).reply(Reply::text("Second answer.")));
    s.script(Rule::always().reply(Reply::text("never seen").latency(Duration::from_secs(30))));
    let steps = json!([
        ready(),
        {"send": "first question"},
        {"key": "enter"},
        {"wait_for": "working", "timeout": 20},
        {"key": "esc"},
        {"wait_for": "stopped", "timeout": 20},
        {"wait_gone": "working", "timeout": 20},
        {"snapshot": "stopped"},
        {"send": "second question"},
        {"key": "enter"},
        {"wait_for": "Second answer", "timeout": 20},
        {"wait_gone": "working", "timeout": 20},
        // Ctrl-C clears a typed line (so the Ctrl-D after it finds the line empty and quits).
        {"send": "half a thought"},
        {"wait_for": "(?m)^› half a thought$", "timeout": 20},
        {"key": "ctrl-c"},
        {"wait_for": "(?m)^›$", "timeout": 20},
        {"key": "ctrl-d"},
        {"wait_exit": 20},
    ]);
    let run = drive(&f, &python, ARGS, &[], (100, 30), steps);
    run.assert_all_ok();
    assert!(!run.screen().contains("never seen"), "{}", run.dump());
    assert_eq!(run.exit_code, Some(0), "{}", run.dump());
    assert!(run.screen().contains("session saved in"), "{}", run.dump());
    let entries = assert_valid_session(&f.only_session());
    let texts: Vec<String> = messages(&entries).into_iter().map(text_of).collect();
    assert!(texts.iter().any(|t| t == "second question"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "Second answer."), "{texts:?}");
}

#[test]
fn continue_shows_the_earlier_conversation() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    f.server
        .script(Rule::always().reply(Reply::text("Earlier answer about alpha.")));
    f.run(&["-p", "--model", "fake/m1", "an earlier question"])
        .assert_success();
    let steps = json!([
        ready(),
        {"wait_for": "Earlier answer about alpha", "timeout": 20},
        {"snapshot": "resumed"},
        {"key": "ctrl-d"},
        {"wait_exit": 20},
    ]);
    let run = drive(
        &f,
        &python,
        &["--model", "fake/m1", "-c"],
        &[],
        (100, 30),
        steps,
    );
    run.assert_all_ok();
    let resumed = run.snapshot("resumed");
    assert!(resumed.contains("an earlier question"), "{resumed}");
    assert_eq!(run.exit_code, Some(0), "{}", run.dump());
    // Continued, not forked: still one session file.
    f.only_session();
}

/// SGR parameters that set a colour: 30–37, 40–47, 90–97, 100–107, 38 and 48 (extended).
/// 39 and 49 put the default colours back and are no colour.
fn colour_sequences(raw: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = raw;
    while let Some(start) = rest.find("\x1b[") {
        let after = &rest[start + 2..];
        let end = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';' || c == ':'))
            .unwrap_or(after.len());
        let params = &after[..end];
        if after[end..].starts_with('m') {
            let colour = params.split([';', ':']).any(|p| {
                matches!(
                    p.parse::<u16>(),
                    Ok(30..=37 | 38 | 40..=47 | 48 | 90..=97 | 100..=107)
                )
            });
            if colour {
                found.push(format!("\\e[{params}m"));
            }
        }
        rest = &after[end..];
    }
    found
}

#[test]
fn no_color_draws_without_colour_sequences() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    f.server
        .script(Rule::always().reply(Reply::text("Plain answer.")));
    let steps = json!([
        ready(),
        {"send": "hello"},
        {"key": "enter"},
        {"wait_for": "Plain answer", "timeout": 20},
        {"key": "ctrl-d"},
        {"wait_exit": 20},
    ]);
    let run = drive(&f, &python, ARGS, &[("NO_COLOR", "1")], (100, 30), steps);
    run.assert_all_ok();
    // The check itself finds colour where there is some.
    assert!(!colour_sequences("\x1b[1;38;5;4mx").is_empty());
    let colours = colour_sequences(&run.raw);
    assert!(colours.is_empty(), "colour with NO_COLOR: {colours:?}");
    assert_eq!(run.exit_code, Some(0), "{}", run.dump());

    // Without NO_COLOR the same run is coloured, so the check above means something.
    let f = Fixture::new();
    f.server
        .script(Rule::always().reply(Reply::text("Plain answer.")));
    let steps = json!([
        ready(),
        {"send": "hello"},
        {"key": "enter"},
        {"wait_for": "Plain answer", "timeout": 20},
        {"key": "ctrl-d"},
        {"wait_exit": 20},
    ]);
    let coloured = drive(&f, &python, ARGS, &[], (100, 30), steps);
    coloured.assert_all_ok();
    assert!(!colour_sequences(&coloured.raw).is_empty());
}

#[test]
fn a_dumb_terminal_gets_the_line_mode() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    f.server
        .script(Rule::always().reply(Reply::text("Line mode answer.")));
    let steps = json!([
        {"wait_for": "Ctrl-D leaves", "timeout": 20},
        {"send": "hello there"},
        {"key": "enter"},
        {"wait_for": "(?m)^Line mode answer\\.$", "timeout": 20},
        {"key": "ctrl-d"},
        {"wait_exit": 20},
    ]);
    let run = drive(&f, &python, ARGS, &[("TERM", "dumb")], (100, 30), steps);
    run.assert_all_ok();
    // Plain lines: no full-screen mode, no cursor movement, no colour.
    assert!(!run.raw.contains("\x1b[?1049h"), "{:?}", run.raw);
    assert!(
        !run.raw.contains("\x1b["),
        "escape sequences: {:?}",
        run.raw
    );
    assert!(run.screen().contains("hello there"), "{}", run.dump());
    assert_eq!(run.exit_code, Some(0), "{}", run.dump());
    assert!(run.screen().contains("session saved in"), "{}", run.dump());
}

/// Every cursor position (`CSI row;col H`) in `raw`, as (row, col).
fn cursor_moves(raw: &str) -> Vec<(u32, u32)> {
    let mut moves = Vec::new();
    let mut rest = raw;
    while let Some(start) = rest.find("\x1b[") {
        let after = &rest[start + 2..];
        let end = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(after.len());
        if after[end..].starts_with('H') {
            let mut parts = after[..end].split(';').map(|p| p.parse().unwrap_or(1));
            moves.push((parts.next().unwrap_or(1), parts.next().unwrap_or(1)));
        }
        rest = &after[end..];
    }
    moves
}

#[test]
fn a_resize_redraws_the_screen_to_the_new_width() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    // Wider than 80 columns, so at 80 it must wrap; its last word shows whether it did.
    let answer = "The notes hold three lines named alpha, beta and gamma, one per line, \
                  with nothing else in the file at all; the end word is zebra.";
    f.server.script(Rule::always().reply(Reply::text(answer)));
    let steps = json!([
        ready(),
        {"send": "describe the notes"},
        {"key": "enter"},
        {"wait_for": "zebra", "timeout": 20},
        {"wait_gone": "working", "timeout": 20},
        {"resize": [80, 24]},
        {"sleep": 0.5},
        {"snapshot": "narrow"},
        {"key": "ctrl-d"},
        {"wait_exit": 20},
    ]);
    let run = drive(&f, &python, ARGS, &[], (100, 30), steps);
    run.assert_all_ok();
    let narrow = run.snapshot("narrow");
    let lines: Vec<&str> = narrow.lines().collect();
    assert_eq!(lines.len(), 24, "{narrow}");
    for line in &lines {
        assert!(line.chars().count() <= 80, "{line:?}");
    }
    // Redrawn for 80 columns: the status line ends with /help inside them, the answer wraps
    // with nothing cut, and no cell was drawn past column 80 or row 24.
    assert!(
        lines.last().is_some_and(|l| l.ends_with("/help")),
        "{narrow}"
    );
    assert!(narrow.contains("zebra"), "{narrow}");
    // The redraw after the resize starts by clearing the screen; a frame for the old size in
    // flight when the signal went could come before that.
    let after_resize = run.raw_from(5);
    let redraw = after_resize
        .find("\x1b[2J")
        .map(|at| &after_resize[at..])
        .unwrap_or_else(|| panic!("no full redraw after the resize: {after_resize:?}"));
    let drawn = cursor_moves(redraw);
    assert!(!drawn.is_empty(), "nothing redrawn after the resize");
    assert!(
        drawn.iter().all(|&(row, col)| row <= 24 && col <= 80),
        "drawn outside 80x24: {drawn:?}"
    );
    assert_eq!(run.exit_code, Some(0), "{}", run.dump());
}

/// `text` as a regular expression that matches it literally.
fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

#[test]
fn hostile_model_text_cannot_retitle_the_terminal_or_draw_past_its_width() {
    use unicode_width::UnicodeWidthStr;
    let Some(python) = python() else { return };
    let f = Fixture::new();
    // A title change, a screen clear and colour from the model, then wide characters that are
    // more columns than characters (so counting characters would let them overflow).
    let wide = "認証を探す".repeat(12);
    let answer = format!("start \x1b]0;pwned\x07 mid \x1b[2J\x1b[31mred\x1b[0m {wide} end");
    f.server.script(Rule::always().reply(Reply::text(answer)));
    let steps = json!([
        ready(),
        {"send": "say something"},
        {"key": "enter"},
        {"wait_for": "(?m) end$", "timeout": 20},
        {"wait_gone": "working", "timeout": 20},
        {"snapshot": "answered"},
        {"key": "ctrl-d"},
        {"wait_exit": 20},
    ]);
    let run = drive(&f, &python, ARGS, &[], (80, 24), steps);
    run.assert_all_ok();
    assert_eq!(run.title, "", "the model retitled the terminal");
    assert!(!run.raw.contains("pwned\x07"), "{:?}", run.raw);
    let answered = run.snapshot("answered");
    // The screen was not cleared by the model: the prompt is still above the answer.
    assert!(answered.contains("› say something"), "{answered}");
    assert!(answered.contains("start"), "{answered}");
    for line in answered.lines() {
        assert!(line.width() <= 80, "{} columns: {line:?}", line.width());
    }
    // All of the wide text is there, wrapped rather than cut.
    let joined: String = answered.lines().map(str::trim).collect();
    assert!(joined.contains(&wide), "{answered}");
    assert_eq!(run.exit_code, Some(0), "{}", run.dump());
}

/// Opening the mode and leaving without a word should leave the project's sessions as they
/// were (Pi writes a session file only once it has an assistant message), so `cadre -c` still
/// continues the last real conversation.
#[test]
fn opening_and_leaving_at_once_leaves_no_session_for_continue_to_pick() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    f.server
        .script(Rule::always().reply(Reply::text("Earlier answer about alpha.")));
    f.run(&["-p", "--model", "fake/m1", "an earlier question"])
        .assert_success();
    // Opened and left at once, and opened, switched to a new session and left: nothing was
    // said in either, so neither leaves a file (not even the one left by `/new`).
    let steps = json!([ready(), {"key": "ctrl-d"}, {"wait_exit": 20}]);
    let opened = drive(&f, &python, ARGS, &[], (100, 30), steps);
    opened.assert_all_ok();
    let steps = json!([
        ready(),
        {"send": "/new"},
        {"key": "enter"},
        {"wait_for": "a new session", "timeout": 20},
        {"key": "ctrl-d"},
        {"wait_exit": 20},
    ]);
    let switched = drive(&f, &python, ARGS, &[], (100, 30), steps);
    switched.assert_all_ok();
    assert!(
        !switched.screen().contains("session saved"),
        "{}",
        switched.dump()
    );
    let files: Vec<_> = std::fs::read_dir(f.session_dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "only the earlier session's file: {files:?}");
    let steps = json!([
        ready(),
        {"wait_for": "Earlier answer about alpha", "timeout": 20},
        {"key": "ctrl-d"},
        {"wait_exit": 20},
    ]);
    let run = drive(
        &f,
        &python,
        &["--model", "fake/m1", "-c"],
        &[],
        (100, 30),
        steps,
    );
    run.assert_all_ok();
}

/// Esc takes back what was queued for the stopped turn: a steer typed while the agent worked
/// goes back into the input and never reaches a later run (it did, once: the next prompt's
/// run delivered it).
#[test]
fn esc_hands_a_queued_steer_back_to_the_input_instead_of_the_next_run() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    let s = &f.server;
    s.script(Rule::new(Match::last_user("second question")).reply(Reply::text("Second answer.")));
    s.script(Rule::always().reply(Reply::text("never seen").latency(Duration::from_secs(30))));
    let steps = json!([
        ready(),
        {"send": "first question"},
        {"key": "enter"},
        {"wait_for": "working", "timeout": 20},
        {"send": "also delete the build dir"},
        {"key": "enter"},
        {"wait_for": "1 steering", "timeout": 20},
        {"key": "esc"},
        {"wait_for": "1 queued message put back in the input", "timeout": 20},
        {"wait_for": "(?m)^› also delete the build dir$", "timeout": 20},
        {"snapshot": "handed back"},
        // Cleared, then another prompt: its run must not carry the withdrawn steer.
        {"key": "ctrl-c"},
        {"wait_for": "(?m)^›$", "timeout": 20},
        {"send": "second question"},
        {"key": "enter"},
        {"wait_for": "Second answer", "timeout": 20},
        {"wait_gone": "working", "timeout": 20},
        {"key": "ctrl-d"},
        {"wait_exit": 20},
    ]);
    let run = drive(&f, &python, ARGS, &[], (100, 30), steps);
    run.assert_all_ok();
    let carried: Vec<String> = f
        .server
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .filter(|b| b.contains("also delete the build dir"))
        .collect();
    assert!(
        carried.is_empty(),
        "a withdrawn steer reached the model: {carried:?}"
    );
    let entries = assert_valid_session(&f.only_session());
    let texts: Vec<String> = messages(&entries).into_iter().map(text_of).collect();
    assert!(
        !texts
            .iter()
            .any(|t| t.contains("also delete the build dir")),
        "{texts:?}"
    );
}

/// A closed terminal (SIGHUP) ends the session as leaving does: the running task is stopped
/// and recorded, not left `running`, and the exit code says which signal it was.
#[test]
fn a_hang_up_stops_the_running_task_and_records_it() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    let child = || Match::first_user(CHILD);
    let root = || !Match::first_user(CHILD);
    let s = &f.server;
    s.script(Rule::new(child()).reply(Reply::text("late").latency(Duration::from_secs(60))));
    s.script(
        Rule::new(root().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_agent",
            "Agent",
            json!({"subagent_type": "Explore", "description": DESCRIPTION,
               "prompt": format!("{CHILD} Read notes.txt slowly.")}),
        )),
    );
    s.script(Rule::new(root()).reply(Reply::text(LAUNCHED)));
    let steps = json!([
        ready(),
        {"send": PROMPT},
        {"key": "enter"},
        {"wait_for": "Tasks · 1 running", "timeout": 20},
        {"wait_for": LAUNCHED, "timeout": 20},
        {"signal": "HUP"},
        {"wait_exit": 30},
    ]);
    let run = drive(&f, &python, ARGS, &[], (100, 30), steps);
    run.assert_all_ok();
    assert_eq!(run.exit_code, Some(128 + 1), "{}", run.dump());
    let records = crate::orchestration::task_records(&f);
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(records[0]["status"], "stopped", "{:#}", records[0]);
    assert_eq!(
        records[0]["termination"], "parent_shutdown",
        "{:#}",
        records[0]
    );
}

/// `/plan on` and a prompt typed right after it: whichever comes first, the mode stays
/// responsive (it once hung for good: the restart waited behind the new, hanging turn).
#[test]
fn plan_mode_and_a_prompt_at_once_never_hang_the_mode() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    f.server
        .script(Rule::always().reply(Reply::text("never seen").latency(Duration::from_secs(60))));
    let steps = json!([
        ready(),
        {"send": "/plan on"},
        {"key": "enter"},
        {"send": "do the thing"},
        {"key": "enter"},
        {"wait_for": "plan mode on|not restarted", "timeout": 20},
        {"sleep": 0.5},
        {"key": "esc"},
        {"wait_gone": "working", "timeout": 20},
        {"key": "ctrl-c"},
        {"sleep": 0.2},
        {"key": "ctrl-c"},
        {"wait_exit": 20},
    ]);
    let run = drive(&f, &python, ARGS, &[], (100, 30), steps);
    run.assert_all_ok();
    assert_eq!(run.exit_code, Some(0), "{}", run.dump());
}

/// A background task's report that was on its way into a turn the person stopped is still
/// answered: stopping the turn does not stop the tasks' reports (O6).
#[test]
fn a_report_steered_into_a_stopped_turn_is_still_answered() {
    let Some(python) = python() else { return };
    let f = Fixture::new();
    let child = || Match::first_user(CHILD);
    let root = || !Match::first_user(CHILD);
    let s = &f.server;
    s.script(Rule::new(child()).reply(Reply::text("The child is done.")));
    s.script(
        Rule::new(root().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_agent",
            "Agent",
            json!({"subagent_type": "Explore", "description": DESCRIPTION,
               "prompt": format!("{CHILD} Read notes.txt.")}),
        )),
    );
    s.script(
        Rule::new(root().and(Match::last_user("task-notification")))
            .reply(Reply::text("Noted the child's report.")),
    );
    // The root's turn after the launch hangs, so the report is steered into it.
    s.script(Rule::new(root()).reply(Reply::text("never seen").latency(Duration::from_secs(60))));
    let steps = json!([
        ready(),
        {"send": PROMPT},
        {"key": "enter"},
        {"wait_for": "Tasks · 0 running · 1 done", "timeout": 20},
        {"sleep": 0.5},
        {"key": "esc"},
        {"wait_for": "stopped", "timeout": 20},
        {"wait_for": "Noted the child's report", "timeout": 20},
        {"wait_gone": "working", "timeout": 20},
        {"key": "ctrl-d"},
        {"wait_exit": 20},
    ]);
    let run = drive(&f, &python, ARGS, &[], (100, 30), steps);
    run.assert_all_ok();
    assert!(!run.screen().contains("never seen"), "{}", run.dump());
}
