//! Sessions across runs: `--session FILE`, `--continue`, `--no-session`.

use cadre_testkit::{Match, Reply, Rule};

use crate::conversation::{PROMPT, run_conversation};
use crate::harness::{
    Fixture, Wire, assert_every_tool_call_answered, assert_valid_session, messages, text_of,
    tool_result_text,
};

const FOLLOW_UP: &str = "FOLLOW-UP: and what did bash print?";
const SECOND_ANSWER: &str = "bash printed bash-said-42.";

/// The follow-up turn: the whole earlier conversation (four assistant turns) plus the new prompt.
fn script_follow_up(fixture: &Fixture) {
    fixture.server.script(
        Rule::new(
            Match::first_user("ROUTE-CONV")
                .and(Match::last_user("FOLLOW-UP"))
                .and(Match::assistant_turns(4)),
        )
        .reply(Reply::text(SECOND_ANSWER)),
    );
}

/// The follow-up request carried the earlier conversation, and the file grew from its old leaf.
fn assert_continued(fixture: &Fixture, session: &std::path::Path, before: &[serde_json::Value]) {
    let request = fixture.last_request();
    assert_eq!(request.assistant_turns(), 4, "history was sent");
    assert!(request.first_user_text().unwrap().contains(PROMPT));
    assert!(request.last_user_text().unwrap().contains(FOLLOW_UP));
    let results = tool_result_text(&request);
    assert!(
        results.contains("bash-said-42"),
        "earlier tool results sent: {results}"
    );
    fixture.server.check_tool_calls_answered().unwrap();

    let after = assert_valid_session(session);
    assert!(after.len() > before.len(), "the session gained entries");
    assert_eq!(
        &after[..before.len()],
        before,
        "earlier entries are untouched"
    );
    let old_leaf = before.last().unwrap()["id"].as_str().unwrap();
    assert_eq!(after[before.len()]["parentId"], old_leaf);
    let msgs = messages(&after);
    assert_every_tool_call_answered(&msgs);
    let tail: Vec<String> = msgs[msgs.len() - 2..].iter().map(|m| text_of(m)).collect();
    assert_eq!(tail, [FOLLOW_UP, SECOND_ANSWER]);
}

#[test]
fn session_file_reloads_with_history() {
    let fixture = Fixture::new();
    run_conversation(&fixture, Wire::Anthropic);
    let session = fixture.only_session();
    let before = assert_valid_session(&session);

    script_follow_up(&fixture);
    let session_arg = session.to_string_lossy().into_owned();
    let out = fixture.run_print(Wire::Anthropic, &["--session", &session_arg, FOLLOW_UP]);
    out.assert_success();
    assert_eq!(out.stdout, format!("{SECOND_ANSWER}\n"));
    assert_eq!(
        fixture.session_files(),
        std::slice::from_ref(&session),
        "no new file"
    );
    assert_continued(&fixture, &session, &before);
}

#[test]
fn continue_picks_the_latest_session_of_the_directory() {
    let fixture = Fixture::new();
    // An older, unrelated session in the same directory.
    fixture
        .server
        .script(Rule::new(Match::first_user("ROUTE-OTHER")).reply(Reply::text("other answer")));
    fixture
        .run_print(Wire::OpenAi, &["ROUTE-OTHER: hello"])
        .assert_success();
    let older = fixture.only_session();
    let older_text = std::fs::read_to_string(&older).unwrap();
    // Session names carry a millisecond timestamp; make sure the next one sorts later.
    std::thread::sleep(std::time::Duration::from_millis(20));

    run_conversation_in_second_session(&fixture);
    let files = fixture.session_files();
    assert_eq!(files.len(), 2);
    let latest = files.iter().find(|f| **f != older).unwrap().clone();
    let before = assert_valid_session(&latest);

    script_follow_up(&fixture);
    let out = fixture.run_print(Wire::OpenAi, &["--continue", FOLLOW_UP]);
    out.assert_success();
    assert_eq!(out.stdout, format!("{SECOND_ANSWER}\n"));
    assert_eq!(fixture.session_files().len(), 2, "no new file");
    assert_eq!(std::fs::read_to_string(&older).unwrap(), older_text);
    assert_continued(&fixture, &latest, &before);
}

/// `run_conversation` expects a single session file; here a second one is made directly.
fn run_conversation_in_second_session(fixture: &Fixture) {
    crate::conversation::script_conversation(fixture);
    let out = fixture.run_print(Wire::OpenAi, &[PROMPT]);
    out.assert_success();
    assert_eq!(
        out.stdout,
        format!("{}\n", crate::conversation::FINAL_ANSWER)
    );
}

#[test]
fn session_flag_creates_a_missing_file_where_asked() {
    let fixture = Fixture::new();
    fixture
        .server
        .script(Rule::new(Match::first_user("ROUTE-NEW")).reply(Reply::text("fresh")));
    let path = fixture.user_home.join("custom/place.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let arg = path.to_string_lossy().into_owned();
    let out = fixture.run_print(Wire::Anthropic, &["--session", &arg, "ROUTE-NEW: hi"]);
    out.assert_success();
    assert_eq!(out.stdout, "fresh\n");
    let entries = assert_valid_session(&path);
    let roles: Vec<String> = messages(&entries)
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert!(
        fixture.session_files().is_empty(),
        "nothing in the catalogue"
    );
}

#[test]
fn no_session_writes_no_file() {
    let fixture = Fixture::new();
    fixture
        .server
        .script(Rule::new(Match::first_user("ROUTE-NOSESS")).reply(Reply::text("ephemeral")));
    let out = fixture.run_print(Wire::OpenAi, &["--no-session", "ROUTE-NOSESS: hi"]);
    out.assert_success();
    assert_eq!(out.stdout, "ephemeral\n");
    assert!(fixture.session_files().is_empty());
    let sessions = fixture.home.join("sessions");
    let any_file = walk(&sessions).into_iter().any(|p| p.is_file());
    assert!(!any_file, "no file under {}", sessions.display());
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk(&path));
            }
            out.push(path);
        }
    }
    out
}

#[test]
fn a_torn_last_line_is_reported_and_the_session_continues() {
    let fixture = Fixture::new();
    // Without the torn answer the history ends at the edit's result: three assistant turns,
    // which the conversation's own turn-3 rule would also match, so this rule goes first.
    fixture.server.script(
        Rule::new(
            Match::first_user("ROUTE-CONV")
                .and(Match::last_user("FOLLOW-UP"))
                .and(Match::assistant_turns(3)),
        )
        .reply(Reply::text(SECOND_ANSWER)),
    );
    run_conversation(&fixture, Wire::OpenAi);
    let session = fixture.only_session();
    let entries = assert_valid_session(&session);
    // Cut the file inside its last line (the final answer), as a crash mid-write would.
    let text = std::fs::read_to_string(&session).unwrap();
    let torn = &text[..text.trim_end().len() - 20];
    std::fs::write(&session, torn).unwrap();
    let torn_line = torn.lines().last().unwrap().to_string();

    let arg = session.to_string_lossy().into_owned();
    let out = fixture.run_print(Wire::OpenAi, &["--session", &arg, FOLLOW_UP]);
    out.assert_success();
    assert_eq!(out.stdout, format!("{SECOND_ANSWER}\n"));
    assert!(
        out.stderr.contains("skipped an unreadable line"),
        "the torn line is reported: {}",
        out.stderr
    );
    fixture.server.check_tool_calls_answered().unwrap();

    // The torn line stays on a line of its own; the new entries chain to the last whole one.
    let text = std::fs::read_to_string(&session).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.iter().filter(|l| **l == torn_line).count(), 1);
    let repaired: String = lines
        .iter()
        .filter(|l| **l != torn_line)
        .map(|l| format!("{l}\n"))
        .collect();
    let copy = fixture.user_home.join("repaired.jsonl");
    std::fs::write(&copy, repaired).unwrap();
    let after = assert_valid_session(&copy);
    let last_whole = &entries[entries.len() - 2];
    assert_eq!(after[entries.len() - 1]["parentId"], last_whole["id"]);
}

#[test]
fn continue_without_an_earlier_session_starts_one() {
    let fixture = Fixture::new();
    fixture
        .server
        .script(Rule::new(Match::first_user("ROUTE-FIRST")).reply(Reply::text("first run")));
    let out = fixture.run_print(Wire::Anthropic, &["--continue", "ROUTE-FIRST: hi"]);
    out.assert_success();
    assert_eq!(out.stdout, "first run\n");
    let entries = assert_valid_session(&fixture.only_session());
    assert_eq!(messages(&entries).len(), 2);
}

#[test]
fn an_empty_session_file_starts_a_new_session_there() {
    let fixture = Fixture::new();
    fixture
        .server
        .script(Rule::new(Match::first_user("ROUTE-EMPTY")).reply(Reply::text("filled")));
    // As `mktemp` would leave it for us.
    let path = fixture.user_home.join("made-by-mktemp.jsonl");
    std::fs::write(&path, "").unwrap();
    let arg = path.to_string_lossy().into_owned();
    let out = fixture.run_print(Wire::OpenAi, &["--session", &arg, "ROUTE-EMPTY: hi"]);
    out.assert_success();
    assert_eq!(out.stdout, "filled\n");
    let entries = assert_valid_session(&path);
    assert_eq!(messages(&entries).len(), 2);
}

#[test]
fn a_session_cut_after_a_tool_call_is_repaired_before_sending() {
    let fixture = Fixture::new();
    fixture.server.script(
        Rule::new(
            Match::first_user("ROUTE-CONV")
                .and(Match::last_user("FOLLOW-UP"))
                .and(Match::assistant_turns(1)),
        )
        .reply(Reply::text(SECOND_ANSWER)),
    );
    run_conversation(&fixture, Wire::Anthropic);
    let session = fixture.only_session();
    // Keep the header, the prompt and the first assistant turn (ls + grep calls): as if the
    // process had been killed while the tools ran.
    let text = std::fs::read_to_string(&session).unwrap();
    let first_assistant = text
        .lines()
        .position(|l| l.contains(r#""role":"assistant""#))
        .unwrap();
    let kept: String = text
        .lines()
        .take(first_assistant + 1)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&session, &kept).unwrap();
    let entries = assert_valid_session(&session);
    assert_eq!(messages(&entries).last().unwrap()["role"], "assistant");

    let arg = session.to_string_lossy().into_owned();
    let out = fixture.run_print(Wire::Anthropic, &["--session", &arg, FOLLOW_UP]);
    out.assert_success();
    assert_eq!(out.stdout, format!("{SECOND_ANSWER}\n"));
    fixture
        .server
        .check_tool_calls_answered()
        .expect("the dangling calls were answered before the request");
    let after = assert_valid_session(&session);
    assert_every_tool_call_answered(&messages(&after));
}

/// Another local user reads nothing a run wrote: the home an older version left open (0755) is
/// made 0700 with a note, and a new session file is 0600 whatever the umask.
#[test]
fn a_run_leaves_nothing_other_users_can_read() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let fixture = Fixture::new();
    fixture
        .server
        .script(Rule::always().reply(Reply::text("ok")));
    std::fs::set_permissions(&fixture.home, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = fixture.run_print(Wire::Anthropic, &["ROUTE-MODES"]);
    out.assert_success();
    assert!(
        out.stderr
            .contains("(CADRE_HOME) was open to other users (mode 0755)"),
        "{out:#?}"
    );
    assert_eq!(mode(&fixture.home), 0o700);
    let session = fixture.only_session();
    assert_eq!(mode(&session), 0o600);
    assert_eq!(mode(session.parent().unwrap()), 0o700);
    // Once private, the next run says nothing about it.
    let out = fixture.run_print(Wire::Anthropic, &["ROUTE-MODES"]);
    out.assert_success();
    assert!(!out.stderr.contains("CADRE_HOME"), "{out:#?}");
}
