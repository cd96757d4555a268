//! Context compaction (SPEC R10) through the agent: at the threshold, on request (with custom
//! instructions, and again on top of an earlier summary), after a context overflow (compact,
//! then retry once), aborted; what the session file records and what the next request carries.
//! The model is the fake server behind the real Anthropic client; children compact too (the
//! task manager with a scripted provider).

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cadre_core::agent::{Agent, AgentConfig};
use cadre_core::compaction::prompt::{
    SUMMARIZATION_PROMPT, SUMMARIZATION_SYSTEM_PROMPT, UPDATE_SUMMARIZATION_PROMPT,
};
use cadre_core::compaction::summary::COMPACTION_SUMMARY_PREFIX;
use cadre_core::compaction::{CompactionError, CompactionReason, CompactionSettings};
use cadre_core::session::{SessionWriter, load_session};
use cadre_llm::{HttpProvider, Model, RetryPolicy};
use cadre_protocol::{
    AgentEvent, Message, SessionEntry, SessionEntryKind, StopReason, TaskStatus, ThinkingLevel,
};
use cadre_testkit::{FakeServer, Fault, Match, RecordedRequest, Reply, Rule};
use serde_json::json;
use tokio::sync::mpsc;

/// Bound on any one step, so a broken loop fails instead of hanging. Never a timing assertion.
const GUARD: Duration = Duration::from_secs(30);

async fn guarded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, f).await.expect("hang guard")
}

fn fake_model(server: &FakeServer, context_window: u64) -> Model {
    let mut m = common::model("m1");
    m.base_url = server.anthropic_base_url();
    m.api_key = Some("test-key".into());
    m.context_window = context_window;
    m
}

struct Setup {
    server: FakeServer,
    agent: Agent,
    events: mpsc::UnboundedReceiver<AgentEvent>,
    session: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

async fn setup(context_window: u64, settings: CompactionSettings) -> Setup {
    let server = FakeServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("notes.txt"),
        "alpha line\nbeta line\ngamma line\n",
    )
    .unwrap();
    let session_path = dir.path().join("s.jsonl");
    let writer = SessionWriter::create_at(&session_path, dir.path(), None)
        .await
        .unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    let config = AgentConfig {
        provider: Arc::new(HttpProvider::new(RetryPolicy::default())),
        model: fake_model(&server, context_window),
        thinking: ThinkingLevel::Off,
        system_prompt: "SYSTEM".into(),
        tools: cadre_tools::builtin_tools(),
        cwd: dir.path().to_path_buf(),
        artifacts_dir: dir.path().join("artifacts"),
        events: Some(tx),
        compaction: settings,
    };
    Setup {
        server,
        agent: Agent::new(config, Vec::new(), Some(writer)),
        events: rx,
        session: session_path,
        _dir: dir,
    }
}

fn settings(reserve: u64, keep: u64) -> CompactionSettings {
    CompactionSettings {
        enabled: true,
        reserve_tokens: reserve,
        keep_recent_tokens: keep,
    }
}

fn summarizer() -> Match {
    Match::system("context summarization assistant")
}

fn drain(rx: &mut mpsc::UnboundedReceiver<AgentEvent>) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

fn compaction_events(events: &[AgentEvent]) -> Vec<AgentEvent> {
    events
        .iter()
        .filter(|e| {
            matches!(
                e,
                AgentEvent::CompactionStart { .. } | AgentEvent::CompactionEnd { .. }
            )
        })
        .cloned()
        .collect()
}

fn is_summarization(r: &RecordedRequest) -> bool {
    r.system_text() == SUMMARIZATION_SYSTEM_PROMPT
}

fn compactions(path: &Path) -> Vec<SessionEntry> {
    load_session(path)
        .unwrap()
        .entries
        .into_iter()
        .filter(|e| matches!(e.kind, SessionEntryKind::Compaction { .. }))
        .collect()
}

/// The id of the session entry holding the user message whose text starts with `prefix`.
fn user_entry_id(path: &Path, prefix: &str) -> String {
    load_session(path)
        .unwrap()
        .entries
        .iter()
        .find(|e| match &e.kind {
            SessionEntryKind::Message {
                message: Message::User(u),
            } => u.content.to_text().starts_with(prefix),
            _ => false,
        })
        .map(|e| e.id.clone())
        .unwrap()
}

fn long(tag: &str, chars: usize) -> String {
    format!("{tag} {}", "x".repeat(chars))
}

#[tokio::test]
async fn threshold_compaction_summarises_older_turns_before_the_request() {
    // Window 20 000, reserve 1 000: the first answer reports 19 510 tokens, so the second
    // prompt's request would pass 19 000.
    let mut s = setup(20_000, settings(1_000, 100)).await;
    s.server
        .script(Rule::new(summarizer()).reply(Reply::text("SUMMARY-ONE").usage(300, 20)));
    s.server.script(
        Rule::new(Match::last_user("FIRST").and(Match::assistant_turns(0)))
            .reply(Reply::tool_call("call_1", "read", json!({"path": "notes.txt"})).usage(100, 5)),
    );
    s.server.script(
        Rule::new(Match::last_tool_result("alpha line"))
            .reply(Reply::text("first done").usage(19_500, 10)),
    );
    s.server
        .script(Rule::new(Match::last_user("SECOND")).reply(Reply::text("second done")));

    let first = guarded(s.agent.prompt(long("FIRST", 800))).await.unwrap();
    assert_eq!(first.final_message.unwrap().text(), "first done");
    assert!(compaction_events(&drain(&mut s.events)).is_empty());

    let second = guarded(s.agent.prompt(long("SECOND", 800))).await.unwrap();
    assert_eq!(second.stop_reason, StopReason::Stop);
    assert_eq!(second.final_message.unwrap().text(), "second done");
    assert_eq!(second.turns, 1, "the summarisation request is not a turn");
    // The summary's usage is part of the run's.
    assert!(second.usage.input >= 300, "{:?}", second.usage);

    let all_events = drain(&mut s.events);
    // The run's own messages, from its prompt (kept) on.
    let Some(AgentEvent::AgentEnd { messages }) = all_events.last() else {
        panic!("{:?}", all_events.last())
    };
    assert_eq!(messages.len(), 2);
    assert!(common::message_text(&messages[0]).starts_with("SECOND"));
    let events = compaction_events(&all_events);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(
        events[0],
        AgentEvent::CompactionStart {
            reason: CompactionReason::Threshold
        }
    );
    let AgentEvent::CompactionEnd {
        reason,
        result: Some(result),
        aborted,
        will_retry,
        error_message,
    } = &events[1]
    else {
        panic!("{:?}", events[1])
    };
    assert_eq!(*reason, CompactionReason::Threshold);
    assert!(!aborted && !will_retry && error_message.is_none());
    assert_eq!(
        result.summary,
        "SUMMARY-ONE\n\n<read-files>\nnotes.txt\n</read-files>"
    );
    assert_eq!(
        result.details,
        Some(json!({"readFiles": ["notes.txt"], "modifiedFiles": []}))
    );
    // 19 510 reported, plus the second prompt estimated at chars / 4.
    assert_eq!(result.tokens_before, 19_510 + 202);

    let requests = s.server.requests();
    assert_eq!(requests.len(), 4);
    let summary_request = &requests[2];
    assert!(is_summarization(summary_request));
    let prompt = summary_request.last_user_text().unwrap();
    assert!(
        prompt.starts_with("<conversation>\n[User]: FIRST x"),
        "{prompt}"
    );
    assert!(prompt.contains("[Assistant tool calls]: read(path=\"notes.txt\")"));
    assert!(prompt.contains("[Tool result]: alpha line"));
    assert!(prompt.contains("[Assistant]: first done"));
    assert!(
        !prompt.contains("SECOND"),
        "the kept prompt is not summarised"
    );
    assert!(prompt.ends_with(SUMMARIZATION_PROMPT));
    assert!(
        summary_request
            .body
            .get("tools")
            .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty))
    );
    // 80% of reserveTokens bounds the summary.
    assert_eq!(summary_request.body["max_tokens"], 800);

    // The request after it: the summary, then the kept prompt; none of the summarised turns.
    let next = &requests[3];
    let first_user = next.first_user_text().unwrap();
    assert!(first_user.starts_with(COMPACTION_SUMMARY_PREFIX));
    assert!(first_user.contains("SUMMARY-ONE"));
    assert_eq!(next.assistant_turns(), 0);
    assert!(next.last_user_text().unwrap().starts_with("SECOND"));
    let all = next.all_text().join("\n");
    assert!(
        !all.contains("FIRST") && !all.contains("alpha line"),
        "{all}"
    );

    // The session file: Pi's entry, cut at the kept prompt, and a reload gives the agent's
    // history exactly.
    let path = s.agent.session_path().unwrap().to_path_buf();
    guarded(s.agent.close()).await.unwrap();
    let entries = compactions(&path);
    assert_eq!(entries.len(), 1);
    let SessionEntryKind::Compaction {
        summary,
        first_kept_entry_id,
        tokens_before,
        details,
        from_hook,
    } = &entries[0].kind
    else {
        unreachable!()
    };
    assert_eq!(summary, &result.summary);
    assert_eq!(first_kept_entry_id, &user_entry_id(&path, "SECOND"));
    assert_eq!(first_kept_entry_id, &result.first_kept_entry_id);
    assert_eq!(*tokens_before, result.tokens_before);
    assert_eq!(details, &result.details);
    assert_eq!(*from_hook, Some(false));
    let loaded = load_session(&path).unwrap();
    let texts: Vec<String> = loaded.messages().iter().map(common::message_text).collect();
    assert_eq!(texts.len(), 3);
    assert!(texts[0].contains("SUMMARY-ONE"));
    assert!(texts[1].starts_with("SECOND"));
    assert_eq!(texts[2], "second done");
    assert_eq!(path, s.session);
}

#[tokio::test]
async fn manual_compaction_uses_custom_instructions_and_updates_an_earlier_summary() {
    let mut s = setup(100_000, settings(16_384, 10)).await;
    s.server.script(
        Rule::new(summarizer().and(Match::any_text("<previous-summary>")))
            .reply(Reply::text("SUMMARY-B")),
    );
    s.server
        .script(Rule::new(summarizer()).reply(Reply::text("SUMMARY-A")));
    for (tag, answer) in [
        ("ONE", "answer one"),
        ("TWO", "answer two"),
        ("THREE", "answer three"),
    ] {
        s.server
            .script(Rule::new(Match::last_user(tag)).reply(Reply::text(answer)));
    }
    guarded(s.agent.prompt(long("ONE", 100))).await.unwrap();
    guarded(s.agent.prompt(long("TWO", 100))).await.unwrap();
    drain(&mut s.events);

    let result = guarded(s.agent.compact(Some("Focus on the database".into())))
        .await
        .unwrap();
    assert_eq!(result.summary, "SUMMARY-A");
    assert_eq!(
        result.details,
        Some(json!({"readFiles": [], "modifiedFiles": []}))
    );
    let path = s.agent.session_path().unwrap().to_path_buf();
    assert_eq!(result.first_kept_entry_id, user_entry_id(&path, "TWO"));
    let summarisation = s.server.last_request().unwrap();
    assert!(is_summarization(&summarisation));
    let prompt = summarisation.last_user_text().unwrap();
    assert!(
        prompt.ends_with("\n\nAdditional focus: Focus on the database"),
        "{prompt}"
    );
    assert!(prompt.contains("[User]: ONE x") && prompt.contains("[Assistant]: answer one"));
    assert!(!prompt.contains("TWO"));
    let events = compaction_events(&drain(&mut s.events));
    assert_eq!(
        events[0],
        AgentEvent::CompactionStart {
            reason: CompactionReason::Manual
        }
    );
    assert!(matches!(
        &events[1],
        AgentEvent::CompactionEnd { reason: CompactionReason::Manual, result: Some(r), .. } if *r == result
    ));
    // The history is what a reload of the file gives.
    assert_eq!(
        load_session(&path).unwrap().messages(),
        s.agent.messages().to_vec()
    );

    // Nothing new since: refused, and said so in the end event.
    let again = guarded(s.agent.compact(None)).await;
    assert_eq!(again, Err(CompactionError::AlreadyCompacted));
    let events = compaction_events(&drain(&mut s.events));
    assert!(matches!(
        &events[1],
        AgentEvent::CompactionEnd { result: None, aborted: false, error_message: Some(m), .. }
            if m == "Compaction failed: Already compacted"
    ));

    // The next turn carries the summary; compacting again updates it.
    guarded(s.agent.prompt(long("THREE", 100))).await.unwrap();
    let after = s.server.last_request().unwrap();
    assert!(after.first_user_text().unwrap().contains("SUMMARY-A"));
    assert!(!after.all_text().join("\n").contains("ONE x"));
    let second = guarded(s.agent.compact(None)).await.unwrap();
    assert_eq!(second.summary, "SUMMARY-B");
    let update = s.server.last_request().unwrap();
    let prompt = update.last_user_text().unwrap();
    assert!(prompt.contains("<previous-summary>\nSUMMARY-A\n</previous-summary>"));
    assert!(prompt.ends_with(UPDATE_SUMMARIZATION_PROMPT));
    assert!(prompt.contains("[User]: TWO x") && !prompt.contains("ONE x"));
    assert!(!prompt.contains("Additional focus"));
    guarded(s.agent.close()).await.unwrap();
    assert_eq!(compactions(&path).len(), 2);
    let reloaded = load_session(&path).unwrap().messages();
    assert!(common::message_text(&reloaded[0]).contains("SUMMARY-B"));
    assert!(common::message_text(&reloaded[1]).starts_with("THREE"));
}

#[tokio::test]
async fn an_overflow_compacts_then_retries_once() {
    let mut s = setup(100_000, settings(16_384, 10)).await;
    s.server
        .script(Rule::new(summarizer()).reply(Reply::text("SUMMARY")));
    s.server
        .script(Rule::new(Match::last_user("ONE")).reply(Reply::text("answer one")));
    s.server.script(
        Rule::new(Match::last_user("TWO"))
            .reply(Reply::failing(Fault::ContextOverflow))
            .reply(Reply::text("two after compaction")),
    );
    s.server
        .script(Rule::new(Match::last_user("THREE")).reply(Reply::failing(Fault::ContextOverflow)));
    guarded(s.agent.prompt(long("ONE", 100))).await.unwrap();
    drain(&mut s.events);

    let outcome = guarded(s.agent.prompt(long("TWO", 100))).await.unwrap();
    assert_eq!(outcome.stop_reason, StopReason::Stop, "{:?}", outcome.error);
    assert_eq!(
        outcome.final_message.unwrap().text(),
        "two after compaction"
    );
    let events = drain(&mut s.events);
    let c = compaction_events(&events);
    assert_eq!(
        c[0],
        AgentEvent::CompactionStart {
            reason: CompactionReason::Overflow
        }
    );
    assert!(matches!(
        &c[1],
        AgentEvent::CompactionEnd {
            reason: CompactionReason::Overflow,
            result: Some(_),
            aborted: false,
            will_retry: true,
            error_message: None
        }
    ));
    // The failed reply was shown, then replaced by the retry's.
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::MessageEnd { message: Message::Assistant(a) } if a.stop_reason == StopReason::Error
    )));
    let requests = s.server.requests();
    let kinds: Vec<bool> = requests.iter().map(is_summarization).collect();
    assert_eq!(kinds, vec![false, false, true, false]);
    let retry = &requests[3];
    assert!(retry.first_user_text().unwrap().contains("SUMMARY"));
    assert!(retry.last_user_text().unwrap().starts_with("TWO"));
    assert!(!retry.all_text().join("\n").contains("ONE x"));
    assert!(
        s.agent
            .messages()
            .iter()
            .all(|m| !matches!(m, Message::Assistant(a) if a.stop_reason == StopReason::Error)),
        "the failed reply is not kept"
    );

    // An overflow after the one compact-and-retry is reported, not retried again.
    let outcome = guarded(s.agent.prompt(long("THREE", 100))).await.unwrap();
    assert_eq!(outcome.stop_reason, StopReason::Error);
    let c = compaction_events(&drain(&mut s.events));
    let last = c.last().unwrap();
    assert!(
        matches!(last, AgentEvent::CompactionEnd { reason: CompactionReason::Overflow, result: None, will_retry: false, error_message: Some(m), .. }
            if m.starts_with("Context overflow recovery failed after one compact-and-retry attempt")),
        "{c:?}"
    );
    let path = s.agent.session_path().unwrap().to_path_buf();
    guarded(s.agent.close()).await.unwrap();
    // Two compactions: one per overflow that had something to summarise.
    assert_eq!(compactions(&path).len(), 2);
    assert!(load_session(&path).unwrap().dropped_lines.is_empty());
}

#[tokio::test]
async fn an_aborted_compaction_changes_nothing() {
    let mut s = setup(100_000, settings(16_384, 10)).await;
    s.server
        .script(Rule::new(summarizer()).reply(Reply::failing(Fault::NoResponse)));
    for (tag, answer) in [("ONE", "answer one"), ("TWO", "answer two")] {
        s.server
            .script(Rule::new(Match::last_user(tag)).reply(Reply::text(answer)));
    }
    guarded(s.agent.prompt(long("ONE", 100))).await.unwrap();
    guarded(s.agent.prompt(long("TWO", 100))).await.unwrap();
    drain(&mut s.events);
    let before = s.agent.messages().to_vec();

    let controller = s.agent.controller();
    let mut events = s.events;
    let watcher = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(e) = events.recv().await {
            let start = matches!(e, AgentEvent::CompactionStart { .. });
            let end = matches!(e, AgentEvent::CompactionEnd { .. });
            seen.push(e);
            if start {
                controller.abort();
            }
            if end {
                break;
            }
        }
        seen
    });
    let result = guarded(s.agent.compact(None)).await;
    assert_eq!(result, Err(CompactionError::Aborted));
    let seen = guarded(watcher).await.unwrap();
    assert!(matches!(
        seen.last(),
        Some(AgentEvent::CompactionEnd {
            result: None,
            aborted: true,
            error_message: None,
            ..
        })
    ));
    assert_eq!(s.agent.messages(), before.as_slice());
    assert!(!s.agent.controller().is_running());
    let path = s.agent.session_path().unwrap().to_path_buf();
    guarded(s.agent.close()).await.unwrap();
    assert!(compactions(&path).is_empty());
}

#[tokio::test]
async fn an_abort_during_automatic_compaction_ends_the_run() {
    let mut s = setup(20_000, settings(1_000, 10)).await;
    s.server
        .script(Rule::new(summarizer()).reply(Reply::failing(Fault::NoResponse)));
    s.server.script(
        Rule::new(Match::last_user("FIRST")).reply(Reply::text("first done").usage(19_500, 10)),
    );
    s.server
        .script(Rule::new(Match::last_user("SECOND")).reply(Reply::text("never asked")));
    guarded(s.agent.prompt(long("FIRST", 100))).await.unwrap();
    drain(&mut s.events);

    let controller = s.agent.controller();
    let mut events = s.events;
    let watcher = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(e) = events.recv().await {
            let start = matches!(e, AgentEvent::CompactionStart { .. });
            let end = matches!(e, AgentEvent::AgentEnd { .. });
            seen.push(e);
            if start {
                controller.abort();
            }
            if end {
                break;
            }
        }
        seen
    });
    let outcome = guarded(s.agent.prompt(long("SECOND", 100))).await.unwrap();
    assert_eq!(outcome.stop_reason, StopReason::Aborted);
    let seen = guarded(watcher).await.unwrap();
    let c = compaction_events(&seen);
    assert_eq!(
        c[0],
        AgentEvent::CompactionStart {
            reason: CompactionReason::Threshold
        }
    );
    assert!(matches!(
        &c[1],
        AgentEvent::CompactionEnd {
            result: None,
            aborted: true,
            ..
        }
    ));
    // Nothing was compacted: the first turn is still there, the aborted reply is recorded.
    let texts: Vec<String> = s
        .agent
        .messages()
        .iter()
        .map(common::message_text)
        .collect();
    assert!(texts[0].starts_with("FIRST"));
    assert!(matches!(
        s.agent.messages().last(),
        Some(Message::Assistant(a)) if a.stop_reason == StopReason::Aborted
    ));
    let path = s.agent.session_path().unwrap().to_path_buf();
    guarded(s.agent.close()).await.unwrap();
    assert!(compactions(&path).is_empty());
}

#[tokio::test]
async fn a_continued_compacted_session_compacts_on_top_of_its_summary() {
    // A file compacted by one agent, continued by another from the file alone.
    let mut s = setup(100_000, settings(16_384, 10)).await;
    s.server.script(
        Rule::new(summarizer().and(Match::any_text("<previous-summary>")))
            .reply(Reply::text("SECOND SUMMARY")),
    );
    s.server
        .script(Rule::new(summarizer()).reply(Reply::text("FIRST SUMMARY")));
    for (tag, answer) in [
        ("ONE", "answer one"),
        ("TWO", "answer two"),
        ("THREE", "answer three"),
    ] {
        s.server
            .script(Rule::new(Match::last_user(tag)).reply(Reply::text(answer)));
    }
    guarded(s.agent.prompt(long("ONE", 100))).await.unwrap();
    guarded(s.agent.prompt(long("TWO", 100))).await.unwrap();
    guarded(s.agent.compact(None)).await.unwrap();
    let config = s.agent.config().clone();
    let path = s.agent.session_path().unwrap().to_path_buf();
    guarded(s.agent.close()).await.unwrap();

    let loaded = load_session(&path).unwrap();
    let writer = SessionWriter::resume(&path, &loaded).await.unwrap();
    let mut agent = Agent::new(config, loaded.messages(), Some(writer));
    guarded(agent.prompt(long("THREE", 100))).await.unwrap();
    let result = guarded(agent.compact(None)).await.unwrap();
    assert_eq!(result.summary, "SECOND SUMMARY");
    // The kept part starts at an entry of the file.
    assert_eq!(result.first_kept_entry_id, user_entry_id(&path, "THREE"));
    let prompt = s.server.last_request().unwrap().last_user_text().unwrap();
    assert!(prompt.contains("<previous-summary>\nFIRST SUMMARY\n</previous-summary>"));
    assert!(prompt.contains("[User]: TWO x"));
    guarded(agent.close()).await.unwrap();
    let reloaded = load_session(&path).unwrap().messages();
    assert_eq!(reloaded.len(), 3);
    assert!(common::message_text(&reloaded[0]).contains("SECOND SUMMARY"));
}

// ------------------------------------------------------------------------------- children

/// A writing child whose threshold is a few tokens: it compacts between its tool calls, and
/// still finishes with its turn and tool counts and its execution receipt intact.
#[tokio::test]
async fn a_child_compacts_mid_task_and_keeps_its_receipt() {
    use cadre_core::roles::builtin_roles;
    use common::{ScriptedProvider, call, start_manager, text};

    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("Makefile"), "test:\n\ttrue\n").unwrap();
    std::fs::write(work.join("lib.txt"), "one\n").unwrap();
    common::git(&work, &["init", "-q"]);
    common::git(&work, &["add", "."]);
    common::git(&work, &["commit", "-qm", "init"]);

    // Routes on content, not on turn numbers: after a compaction the history is shorter.
    let provider = ScriptedProvider::new(|r| {
        if r.system_prompt == SUMMARIZATION_SYSTEM_PROMPT {
            return text("CHILD SUMMARY: wrote lib.txt");
        }
        let last = common::last_text(r);
        if last.contains("Successfully wrote") {
            call("bash", json!({"command": "make test"}))
        } else if last.contains("true") || last.contains("(no output)") {
            text("implemented; make test passes")
        } else {
            call("write", json!({"path": "lib.txt", "content": "two\n"}))
        }
    });
    let (manager, root, _notices) = start_manager(
        dir.path(),
        provider.clone(),
        common::Models(&["scripted"]),
        builtin_roles(),
        &json!({}),
    );
    // Window 100 000, reserve 99 990: the threshold is 10 tokens.
    manager.set_compaction(settings(99_990, 10));
    let entries = guarded(manager.launch(&root, common::spec("code", "IMPLEMENT"), None))
        .await
        .unwrap();
    let outcome = common::single(entries);
    assert_eq!(outcome.status, TaskStatus::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.result, "implemented; make test passes");
    assert!(
        outcome.receipt.contains("Verification: PASS"),
        "{}",
        outcome.receipt
    );
    assert!(
        outcome.receipt.contains("`make test` (exit 0)"),
        "{}",
        outcome.receipt
    );

    let requests = provider.requests();
    let summaries = requests
        .iter()
        .filter(|r| r.system_prompt == SUMMARIZATION_SYSTEM_PROMPT)
        .count();
    assert!(summaries >= 1, "the child never compacted");
    // After the compaction the child's requests carry the summary, not the task's first turn.
    let last = requests
        .iter()
        .rfind(|r| r.system_prompt != SUMMARIZATION_SYSTEM_PROMPT)
        .unwrap();
    assert!(common::all_text(last).contains("CHILD SUMMARY"));
    // Lifecycle counters run on: three turns, two tool calls, whatever was compacted.
    assert_eq!(outcome.usage.turns, 3);
    assert_eq!(outcome.usage.tool_calls_executed, 2);

    let record = manager
        .store()
        .load(common::ROOT_SESSION_ID, &outcome.task_id)
        .unwrap();
    let session = record.session_file.unwrap();
    assert!(!compactions(Path::new(&session)).is_empty());
}
