//! What a user meets at the command line: a `cadre task stop` from another terminal takes
//! effect, interrupts and failures say what happened in one line, and reports do not repeat
//! themselves.

use cadre_testkit::{Fault, Match, Reply, Rule};
use serde_json::json;

use crate::harness::{Fixture, HANG_GUARD, Running, Wire, wait_until};
use crate::orchestration::task_records;

const CHILD: &str = "[child]";
const NOTIFICATION: &str = "<task-notification>";

/// The parent launches one background child that hangs in its first model request, answers at
/// once, and answers again when the child's notification arrives.
fn script_hanging_background_child(f: &Fixture) {
    let s = &f.server;
    let parent = || !Match::first_user(CHILD);
    s.script(
        Rule::new(parent().and(Match::last_user(NOTIFICATION)))
            .reply(Reply::text("The slow task was stopped.")),
    );
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_bg",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Never answers",
                   "name": "slow", "run_in_background": true,
                   "prompt": format!("{CHILD} Read notes.txt.")}),
        )),
    );
    s.script(Rule::new(parent()).reply(Reply::text("Launched; waiting for it.")));
    s.script(
        Rule::new(Match::first_user(CHILD))
            .reply(Reply::text("never finished").fault(Fault::SilentAfter { events: 1 })),
    );
}

#[test]
fn task_stop_from_another_process_stops_a_live_task() {
    let f = Fixture::new();
    script_hanging_background_child(&f);
    let running = Running::spawn(
        f.command(&["-p", "--model", Wire::Anthropic.model(), "start it"]),
        None,
    );
    wait_until("the child to be running", || {
        task_records(&f).iter().any(|r| r["status"] == "running")
            && f.server
                .requests()
                .iter()
                .any(|r| r.first_user_text().is_some_and(|t| t.contains(CHILD)))
    });

    let stop = f.run(&["task", "stop", "slow"]);
    stop.assert_success();
    // It waits for the owner to act and says so.
    let id = task_records(&f)[0]["id"].as_str().unwrap().to_string();
    assert_eq!(
        stop.stdout,
        format!("task {id} stopped; its partial output is kept\n"),
        "{stop:#?}"
    );

    // The run notices the request, stops the child, answers its notification and exits.
    let out = running.wait(HANG_GUARD);
    out.assert_success();
    assert_eq!(out.stdout, "The slow task was stopped.\n", "{out:#?}");
    let records = task_records(&f);
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(records[0]["status"], "stopped", "{:#}", records[0]);
    let dir = f
        .home
        .join("tasks")
        .join(records[0]["rootSessionId"].as_str().unwrap());
    let request = dir
        .join(".stop-requests")
        .join(records[0]["id"].as_str().unwrap());
    assert!(!request.exists(), "the request is consumed");
}

#[test]
fn an_interrupted_run_says_so_and_exits_128_plus_the_signal() {
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let f = Fixture::new();
        f.server.script(
            Rule::new(Match::Always)
                .reply(Reply::text("never finished").fault(Fault::SilentAfter { events: 1 })),
        );
        let running = Running::spawn(
            f.command(&["-p", "--model", Wire::Anthropic.model(), "talk"]),
            None,
        );
        wait_until("the request", || !f.server.requests().is_empty());
        running.signal(signal);
        let out = running.wait(HANG_GUARD);
        assert_eq!(out.code, Some(code), "{signal}: {out:#?}");
        let line = out.assert_one_line_error();
        assert!(
            line.starts_with(&format!(
                "cadre: error: interrupted by SIG{signal}; the run was aborted (session: "
            )),
            "{line}"
        );
    }
}

#[test]
fn no_default_model_names_the_models_that_would_work() {
    let f = Fixture::new();
    // The fixture's models.json has two providers with keys, but no default is configured.
    let out = f.run(&["-p", "hi"]);
    let line = out.assert_one_line_error();
    assert!(line.contains("no model configured"), "{line}");
    assert!(line.contains("--model provider/id"), "{line}");
    assert!(
        line.contains("fake/m1") && line.contains("fakeoai/m1"),
        "{line}"
    );
    assert!(line.contains("defaultModel"), "{line}");
    // Not the last built-in default's own complaint, which reads as if OpenRouter were wanted.
    assert!(!line.contains("no API key for provider"), "{line}");

    // doctor says the same instead of "No problems found".
    let out = f.run(&["doctor"]);
    out.assert_success();
    assert!(
        out.stdout
            .contains("warning: `cadre -p` without --model fails: no model configured"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("No problems found"), "{}", out.stdout);

    // With a default in settings.json, doctor names it.
    std::fs::write(
        f.home.join("settings.json"),
        r#"{"defaultProvider": "fake", "defaultModel": "m1"}"#,
    )
    .unwrap();
    let out = f.run(&["doctor"]);
    assert!(
        out.stdout.contains("default model: fake/m1 (settings)"),
        "{}",
        out.stdout
    );

    // Nothing with credentials at all: say where a provider would go.
    std::fs::remove_file(f.home.join("settings.json")).unwrap();
    std::fs::remove_file(f.models_path()).unwrap();
    let out = f.run(&["-p", "hi"]);
    let line = out.assert_one_line_error();
    assert!(line.contains("ANTHROPIC_API_KEY"), "{line}");
    assert!(
        line.contains(&f.models_path().display().to_string()),
        "{line}"
    );
    assert!(line.contains("cadre --list-models"), "{line}");
}

#[test]
fn conflicting_session_flags_are_reported_before_the_model_is_picked() {
    let f = Fixture::new();
    // No --model and no default: the flags, not the model, are what the user got wrong first.
    for args in [
        &["-p", "--continue", "--session", "x.jsonl", "hi"][..],
        &["-p", "--no-session", "--continue", "hi"],
    ] {
        let out = f.run(args);
        let line = out.assert_one_line_error();
        assert!(line.contains("cannot be combined"), "{args:?}: {line}");
    }
    assert!(f.session_files().is_empty());
}

#[test]
fn a_missing_argument_reads_as_one_sentence() {
    let f = Fixture::new();
    let out = f.run(&["task", "show"]);
    let line = out.assert_one_line_error();
    assert_eq!(
        line,
        "cadre: error: the following required arguments were not provided: <TARGET>"
    );
    assert_eq!(out.code, Some(2));
}

#[test]
fn agents_says_an_untrusted_project_is_not_trusted_once() {
    let f = Fixture::new();
    let out = f.run(&["agents"]);
    out.assert_success();
    let tail: Vec<&str> = out.stdout.lines().rev().take(2).collect();
    assert_eq!(
        tail,
        [
            format!(
                "  Trust it with `cadre trust {}` (or pass --trust for one run).",
                f.project.display()
            ),
            format!(
                "Project {}: not trusted; its agents are not loaded.",
                f.project.display()
            ),
        ],
        "{}",
        out.stdout
    );
    assert_eq!(
        out.stdout.matches("not trusted").count(),
        1,
        "{}",
        out.stdout
    );
}

#[test]
fn demo_json_keep_says_where_the_directory_is() {
    let f = Fixture::new();
    let tmp = f.home.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = f.command(&["demo", "--json", "--keep"]);
    cmd.env("TMPDIR", &tmp);
    let out = Running::spawn(cmd, None).wait(HANG_GUARD);
    out.assert_success();
    let kept: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(
        out.stderr,
        format!("cadre: note: demo directory kept: {}\n", kept[0].display())
    );
    // stdout stays pure JSON lines.
    for line in out.stdout.lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    }
}

#[test]
fn an_empty_task_target_is_refused_in_one_line() {
    let f = Fixture::new();
    for command in ["show", "output", "stop", "apply"] {
        let out = f.run(&["task", command, " "]);
        let line = out.assert_one_line_error();
        assert!(
            line.starts_with("cadre: error: the task target is empty"),
            "{command}: {line}"
        );
    }
}

#[test]
fn applying_a_task_without_a_worktree_says_where_its_changes_are() {
    let f = Fixture::new();
    let s = &f.server;
    let parent = || !Match::first_user(CHILD);
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_fg",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Read the notes",
                   "name": "reader", "prompt": format!("{CHILD} Read notes.txt.")}),
        )),
    );
    s.script(Rule::new(parent()).reply(Reply::text("Done.")));
    s.script(Rule::new(Match::first_user(CHILD)).reply(Reply::text("alpha line")));
    f.run_print(Wire::Anthropic, &["go"]).assert_success();

    let out = f.run(&["task", "apply", "reader"]);
    let line = out.assert_one_line_error();
    assert!(line.contains("did not run in a worktree"), "{line}");
    assert!(
        line.contains("already in the working tree")
            && line.contains("only a task launched with `isolation: worktree`"),
        "{line}"
    );
}

#[test]
fn an_ended_task_without_output_has_none_not_none_yet() {
    let f = Fixture::new();
    // Nothing recorded at all: no pointer to a listing that would be empty too.
    let out = f.run(&["task", "output", "x"]);
    let line = out.assert_one_line_error();
    assert_eq!(
        line,
        "cadre: error: no task matches `x`: there are no tasks yet"
    );

    // A child whose model fails: the task ends failed with no output.
    let s = &f.server;
    let parent = || !Match::first_user(CHILD);
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_fg",
            "Agent",
            json!({"subagent_type": "Explore", "description": "Fail",
                   "name": "broken", "prompt": format!("{CHILD} Read notes.txt.")}),
        )),
    );
    s.script(Rule::new(parent()).reply(Reply::text("It failed.")));
    s.script(
        Rule::new(Match::first_user(CHILD)).reply(Reply::text("x").fault(Fault::Status {
            status: 400,
            retry_after: None,
            body: None,
        })),
    );
    f.run_print(Wire::Anthropic, &["go"]).assert_success();
    let out = f.run(&["task", "output", "broken"]);
    out.assert_success();
    assert!(out.stdout.is_empty(), "{out:#?}");
    assert!(out.stderr.contains("has no output\n"), "{}", out.stderr);
    assert!(out.stderr.contains("(failed"), "{}", out.stderr);
}

#[test]
fn help_says_what_the_defaults_and_stdin_really_are() {
    let f = Fixture::new();
    let out = f.run(&["--help"]);
    out.assert_success();
    let help = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    // --tools without the flag enables the subagent tools too, and they can be named.
    assert!(
        help.contains("the subagent tools Agent,SendMessage,TaskOutput,TaskStop"),
        "{help}"
    );
    // --trust loads the project's agents, not only its settings.
    assert!(
        help.contains("loads its agents and .cadre/settings.json"),
        "{help}"
    );
    // Piped stdin is added to a prompt given as an argument (see errors::prompt_from_stdin_is_used),
    // before it, as in Pi; each further argument is a prompt of its own.
    assert!(
        help.contains("Piped stdin comes before the first prompt"),
        "{help}"
    );
    assert!(help.contains("run one after the other"), "{help}");
}

#[test]
fn trusting_twice_says_already_trusted_and_a_missing_path_does_not_exist() {
    let f = Fixture::new();
    let out = f.run(&["trust"]);
    out.assert_success();
    assert!(out.stdout.starts_with("trusted: "), "{}", out.stdout);
    let out = f.run(&["trust"]);
    out.assert_success();
    assert_eq!(
        out.stdout,
        format!(
            "already trusted: {} (`cadre trust --revoke {}` stops trusting it)\n",
            f.project.display(),
            f.project.display()
        )
    );
    let missing = f.project.join("no-such-dir");
    let out = f.run(&["trust", missing.to_str().unwrap()]);
    let line = out.assert_one_line_error();
    assert_eq!(
        line,
        format!("cadre: error: {} does not exist", missing.display())
    );
}

#[test]
fn an_unreadable_task_record_is_named_once() {
    let f = Fixture::new();
    let dir = f.home.join("tasks/0199ffff-root/0199ffff-bad");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("task.json"), "{ not json").unwrap();
    let out = f.run(&["tasks"]);
    out.assert_success();
    let file = dir.join("task.json").display().to_string();
    assert!(
        out.stderr.starts_with(&format!(
            "cadre: warning: skipped {file}: invalid task record"
        )),
        "{}",
        out.stderr
    );
    assert_eq!(
        out.stderr.matches(&dir.display().to_string()).count(),
        1,
        "{}",
        out.stderr
    );
    let out = f.run(&["doctor"]);
    assert!(
        out.stdout
            .contains(&format!("warning: unreadable task record: {file}: invalid")),
        "{}",
        out.stdout
    );
}

#[test]
fn notes_on_stderr_say_what_kind_of_message_they_are() {
    let f = Fixture::new();
    f.server
        .script(Rule::new(Match::Always).reply(Reply::text("ok")));
    // Every stderr line of a run is `cadre: error:`, `cadre: warning:` or `cadre: note:`.
    let out = f.run_print(Wire::Anthropic, &["--thinking", "high", "hi"]);
    out.assert_success();
    assert!(
        out.stderr.starts_with("cadre: note: thinking high → off: "),
        "{}",
        out.stderr
    );

    // The file as the user named it, with the line number.
    let session = f.project.join("torn.jsonl");
    let first = f.run_print(Wire::Anthropic, &["--session", "torn.jsonl", "hi"]);
    first.assert_success();
    let mut text = std::fs::read_to_string(&session).unwrap();
    text.push_str("{\"type\":\"message\",\"torn\n");
    std::fs::write(&session, text).unwrap();
    let out = f.run_print(Wire::Anthropic, &["--session", "torn.jsonl", "again"]);
    out.assert_success();
    assert!(
        out.stderr.starts_with("cadre: warning: torn.jsonl:6: ")
            && out.stderr.contains("skipped an unreadable line"),
        "{}",
        out.stderr
    );
}

#[test]
fn list_models_uses_the_same_table_style_as_the_other_listings() {
    let f = Fixture::new();
    let out = f.run(&["--list-models"]);
    out.assert_success();
    let header = out.stdout.lines().next().unwrap();
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        columns,
        ["MODEL", "API", "CONTEXT", "CREDENTIALS"],
        "{header}"
    );
    // Columns start where their header does, two spaces apart.
    let at = header.find("CREDENTIALS").unwrap();
    let row = out
        .stdout
        .lines()
        .find(|l| l.starts_with("fake/m1 "))
        .unwrap();
    assert_eq!(&row[at..], "yes", "{}", out.stdout);
}

#[test]
fn a_run_warns_about_a_broken_agent_file() {
    let f = Fixture::new();
    f.server
        .script(Rule::new(Match::Always).reply(Reply::text("ok")));
    let agents = f.project.join(".cadre/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("review.md"),
        "---\nname: review\ndescription: [oops\n---\n",
    )
    .unwrap();
    let out = f.run_print(Wire::Anthropic, &["--trust", "hi"]);
    out.assert_success();
    assert_eq!(out.stdout, "ok\n");
    let line = out.stderr.lines().next().unwrap_or_default();
    assert!(
        line.starts_with(
            "cadre: warning: agent type `review` is unavailable: line 4: invalid YAML"
        ),
        "{}",
        out.stderr
    );
    assert!(line.contains(".cadre/agents/review.md"), "{line}");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);

    // Untrusted, the file is not read at all, so there is nothing to warn about.
    let out = f.run_print(Wire::Anthropic, &["hi"]);
    out.assert_success();
    assert!(out.stderr.is_empty(), "{}", out.stderr);
}

#[test]
fn an_interrupted_demo_removes_its_directory() {
    let f = Fixture::new();
    let tmp = f.home.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let entries = || std::fs::read_dir(&tmp).unwrap().count();
    // The demo takes a fraction of a second; the signal goes as soon as its directory exists,
    // and a run that finished first anyway is tried again.
    let mut interrupted = false;
    for _ in 0..5 {
        let mut cmd = f.command(&["demo"]);
        cmd.env("TMPDIR", &tmp);
        let running = Running::spawn(cmd, None);
        wait_until("the demo directory", || entries() > 0);
        running.signal("INT");
        let out = running.wait(HANG_GUARD);
        assert_eq!(entries(), 0, "the demo directory is left behind: {out:#?}");
        if out.code == Some(130) {
            assert_eq!(
                out.stderr,
                "cadre: error: interrupted by SIGINT; the demo was stopped and its directory removed\n"
            );
            interrupted = true;
            break;
        }
        out.assert_success();
    }
    assert!(interrupted, "no run was interrupted before it finished");
}

#[test]
fn doctor_reports_a_role_whose_launch_would_fail() {
    let f = Fixture::new();
    let agents = f.project.join(".cadre/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("helper.md"),
        "---\nname: helper\ndescription: helps\ntools: read, frob\nmodel: nope/x\n---\nbody\n",
    )
    .unwrap();
    let out = f.run(&["doctor", "--trust"]);
    // An error: doctor exits 1.
    assert_eq!(out.code, Some(1), "{out:#?}");
    assert!(
        out.stdout.contains(
            "  error: agent type `helper` (.cadre/agents/helper.md): unknown tool(s) in the role's tools: frob, so every launch fails"
        ),
        "{}",
        out.stdout
    );
    // A role file's model that cannot be had runs the child on the parent's model.
    assert!(
        out.stdout.contains(
            "  warning: agent type `helper` (.cadre/agents/helper.md): the role's model `nope/x` cannot be used (unknown model); running on the parent's model"
        ),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("1 error"), "{}", out.stdout);
    // The built-in roles alone are fine.
    std::fs::remove_file(agents.join("helper.md")).unwrap();
    let out = f.run(&["doctor", "--trust"]);
    assert!(!out.stdout.contains("agent type `"), "{}", out.stdout);
}

#[test]
fn an_open_silent_stdin_is_explained_not_waited_on_in_silence() {
    use std::io::{BufRead, Write};
    use std::process::Stdio;

    let f = Fixture::new();
    f.server.script(
        Rule::new(Match::first_user("from the argument").and(Match::first_user("LATE-STDIN")))
            .reply(Reply::text("got both")),
    );
    let mut cmd = f.command(&[
        "-p",
        "--model",
        Wire::Anthropic.model(),
        "from the argument",
    ]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let _ = tx.send(line.unwrap_or_default());
        }
    });
    // stdin stays open and silent: the run says what it is waiting for.
    let note = rx.recv_timeout(HANG_GUARD).expect("a note on stderr");
    assert_eq!(
        note,
        "cadre: note: waiting for stdin to close, because piped input is added to the prompt (run with </dev/null to do without)"
    );
    assert!(
        f.server.requests().is_empty(),
        "nothing is sent before stdin closes"
    );
    // What arrives later is still part of the prompt.
    stdin.write_all(b"LATE-STDIN text\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "got both\n");
    assert!(rx.recv_timeout(HANG_GUARD).is_err(), "no other stderr line");
}

#[test]
fn the_demo_transcript_states_a_notification_status_once() {
    let f = Fixture::new();
    let tmp = f.home.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = f.command(&["demo"]);
    cmd.env("TMPDIR", &tmp);
    let out = Running::spawn(cmd, None).wait(HANG_GUARD);
    out.assert_success();
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("⇐ task-notification:"))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert_eq!(
        line,
        "  ⇐ task-notification: test-audit completed · Explore \"Audit conversion tests\""
    );
}

#[test]
fn an_interrupt_while_waiting_for_a_background_task_is_reported_as_one() {
    let f = Fixture::new();
    script_hanging_background_child(&f);
    let running = Running::spawn(
        f.command(&["-p", "--model", Wire::Anthropic.model(), "start it"]),
        None,
    );
    wait_until("the child to be running", || {
        f.server
            .requests()
            .iter()
            .any(|r| r.first_user_text().is_some_and(|t| t.contains(CHILD)))
            && f.server.requests().len() >= 3
    });
    // The third request is the parent's second turn being asked for, not answered: only once
    // its answer is in the session is the run waiting for the task, the state under test.
    wait_until("the parent to wait for its task", || {
        f.session_files().iter().any(|p| {
            std::fs::read_to_string(p).is_ok_and(|t| t.contains("Launched; waiting for it."))
        })
    });
    let before = f.server.requests().len();
    running.signal("INT");
    let out = running.wait(HANG_GUARD);
    assert_eq!(out.code, Some(130), "{out:#?}");
    assert!(
        out.stdout.is_empty(),
        "no answer after an interrupt: {out:#?}"
    );
    assert!(
        out.stderr
            .starts_with("cadre: error: interrupted by SIGINT; the run was aborted"),
        "{out:#?}"
    );
    // The stopped child reports, but the parent takes no other turn to answer it.
    assert_eq!(
        f.server.requests().len(),
        before,
        "a model request after Ctrl-C"
    );
    let records = task_records(&f);
    assert_eq!(records[0]["status"], "stopped", "{:#}", records[0]);
}
