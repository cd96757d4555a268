//! The session store (R6): Pi's JSONL v3 files, written by one task, read back forgivingly.

use std::io::Write;
use std::path::Path;

use cadre_core::session::{
    SessionError, SessionWriter, latest_session, load_session, session_dir_for_cwd,
};
use cadre_protocol::{ContentBlock, Message, SessionEntryKind, StopReason, UserContent};
use serde_json::{Value, json};

use crate::common::agent::*;

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn is_hex8(s: &str) -> bool {
    s.len() == 8 && s.chars().all(|c| c.is_ascii_hexdigit())
}

#[tokio::test]
async fn new_file_has_pi_header_name_and_entry_chain() {
    let home = tempfile::tempdir().unwrap();
    let dir = session_dir_for_cwd(home.path(), Path::new("/work/proj"));
    let mut w = SessionWriter::create(&dir, Path::new("/work/proj"), Some(Path::new("/p.jsonl")))
        .await
        .unwrap();
    assert!(dir.ends_with("sessions/--work-proj--"));
    let name = w.path().file_name().unwrap().to_string_lossy().into_owned();
    let (stamp, rest) = name.split_once('_').unwrap();
    assert_eq!(rest, format!("{}.jsonl", w.session_id()));
    assert_eq!(stamp.len(), "2024-12-03T14-00-00-000Z".len());
    assert!(!stamp.contains(':') && !stamp.contains('.'));

    let a = w.append_message(&Message::user("hello"));
    assert_eq!(w.leaf_id(), Some(a.as_str()));
    let b = w.append_message(&Message::Assistant(assistant(
        vec![ContentBlock::text("hi")],
        StopReason::Stop,
    )));
    let c = w.append(SessionEntryKind::ModelChange {
        provider: "openai".into(),
        model_id: "gpt-4o".into(),
    });
    assert!(is_hex8(&a) && is_hex8(&b) && is_hex8(&c));
    assert_ne!(a, b);
    w.flush().await.unwrap();

    let l = lines(w.path());
    assert_eq!(l.len(), 4);
    assert_eq!(l[0]["type"], "session");
    assert_eq!(l[0]["version"], 3);
    assert_eq!(l[0]["id"], w.session_id());
    assert_eq!(l[0]["cwd"], "/work/proj");
    assert_eq!(l[0]["parentSession"], "/p.jsonl");
    assert!(l[0]["timestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(l[1]["type"], "message");
    assert_eq!(l[1]["parentId"], Value::Null);
    assert_eq!(l[1]["message"]["role"], "user");
    assert_eq!(l[2]["parentId"], json!(a));
    assert_eq!(l[2]["message"]["stopReason"], "stop");
    assert_eq!(l[3]["type"], "model_change");
    assert_eq!(l[3]["parentId"], json!(b));
    w.close().await.unwrap();
}

#[tokio::test]
async fn a_custom_message_is_a_custom_message_entry_that_loads_back() {
    let home = tempfile::tempdir().unwrap();
    let mut w = SessionWriter::create(home.path(), Path::new("/p"), None)
        .await
        .unwrap();
    let notice = Message::Custom(cadre_protocol::CustomMessage {
        custom_type: "task-notification".into(),
        content: UserContent::Text("Task t1 finished.".into()),
        display: true,
        details: Some(json!({"taskId": "t1"})),
        timestamp: 1_733_234_400_123,
    });
    w.append_message(&notice);
    w.flush().await.unwrap();
    let l = lines(w.path());
    // Pi's custom_message entry: the message's fields, no `message` wrapper.
    assert_eq!(l[1]["type"], "custom_message");
    assert_eq!(l[1]["customType"], "task-notification");
    assert_eq!(l[1]["content"], "Task t1 finished.");
    assert_eq!(l[1]["display"], true);
    assert_eq!(l[1]["details"], json!({"taskId": "t1"}));
    assert_eq!(l[1]["timestamp"], "2024-12-03T14:00:00.123Z");
    assert!(l[1].get("message").is_none(), "{}", l[1]);
    let path = w.path().to_path_buf();
    w.close().await.unwrap();
    assert_eq!(load_session(&path).unwrap().messages(), vec![notice]);
}

#[tokio::test]
async fn agent_session_round_trips_and_resumes_with_chain() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let writer = SessionWriter::create(&sessions, dir.path(), None)
        .await
        .unwrap();
    let path = writer.path().to_path_buf();
    let provider = ScriptedProvider::new(|req| match last_text(req).as_str() {
        "go" => tool_reply(&[call("c1", "echo", json!({"v": 1}))]),
        other => text_reply(&format!("re {other}")),
    });
    let mut h = harness(
        provider.clone(),
        vec![echo_tool()],
        Some(writer),
        vec![],
        dir,
    );
    assert_eq!(h.agent.session_path(), Some(path.as_path()));
    h.agent.prompt("go").await.unwrap();
    let written = h.agent.messages().to_vec();
    assert_eq!(written.len(), 4);

    // Everything is on disk once prompt returns.
    let loaded = load_session(&path).unwrap();
    assert!(loaded.dropped_lines.is_empty());
    assert_eq!(loaded.messages(), written);
    // A new session records the model and thinking level first, as Pi does.
    assert_eq!(loaded.model(), Some(("fake".into(), "scripted".into())));
    assert_eq!(loaded.thinking_level().as_deref(), Some("off"));
    assert_eq!(loaded.entries.len(), 6);
    h.agent.close().await.unwrap();

    // Resume: the chain continues from the leaf.
    let leaf = loaded.leaf_id().unwrap().to_string();
    let writer = SessionWriter::resume(&path, &loaded).await.unwrap();
    assert_eq!(writer.session_id(), loaded.session_id());
    let mut h2 = harness(
        provider.clone(),
        vec![echo_tool()],
        Some(writer),
        loaded.messages(),
        tempfile::tempdir().unwrap(),
    );
    // Resuming does not record the settings again; changing them does.
    h2.agent.set_thinking(cadre_protocol::ThinkingLevel::High);
    h2.agent.set_thinking(cadre_protocol::ThinkingLevel::High);
    let mut other = model();
    other.id = "other".into();
    h2.agent.set_model(other.clone());
    h2.agent.set_model(other);
    h2.agent.prompt("more").await.unwrap();
    h2.agent.close().await.unwrap();
    let l = lines(&path);
    assert_eq!(l.len(), 11);
    assert_eq!(l[7]["type"], "thinking_level_change");
    assert_eq!(l[7]["parentId"], json!(leaf));
    assert_eq!(l[8]["type"], "model_change");
    assert_eq!(l[10]["parentId"], l[9]["id"]);
    let reloaded = load_session(&path).unwrap();
    assert_eq!(reloaded.messages().len(), 6);
    assert_eq!(reloaded.model(), Some(("fake".into(), "other".into())));
    assert_eq!(reloaded.thinking_level().as_deref(), Some("high"));
    assert_eq!(provider.requests().last().unwrap().model.id, "other");
    provider.assert_valid();
}

#[tokio::test]
async fn torn_last_line_loads_is_reported_and_resume_starts_a_fresh_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SessionWriter::create(dir.path(), dir.path(), None)
        .await
        .unwrap();
    let path = w.path().to_path_buf();
    w.append_message(&Message::user("one"));
    let second = w.append_message(&Message::Assistant(assistant(
        vec![ContentBlock::ToolCall(call("t1", "echo", json!({})))],
        StopReason::ToolUse,
    )));
    w.close().await.unwrap();
    // A crash in the middle of writing the tool result.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(br#"{"type":"message","id":"deadbeef","parentId":""#)
        .unwrap();
    drop(f);

    let loaded = load_session(&path).unwrap();
    assert_eq!(loaded.dropped_lines.len(), 1);
    assert_eq!(loaded.dropped_lines[0].0, 4);
    assert!(!loaded.ends_with_newline);
    assert_eq!(loaded.leaf_id(), Some(second.as_str()));
    assert_eq!(loaded.messages().len(), 2);

    // The agent answers the dangling call and persists the answer on a line of its own.
    let writer = SessionWriter::resume(&path, &loaded).await.unwrap();
    let provider = ScriptedProvider::new(|_| text_reply("ok"));
    let mut h = harness(
        provider.clone(),
        vec![],
        Some(writer),
        loaded.messages(),
        dir,
    );
    h.agent.prompt("continue").await.unwrap();
    h.agent.close().await.unwrap();
    provider.assert_valid();

    let again = load_session(&path).unwrap();
    assert_eq!(again.dropped_lines.len(), 1, "only the old torn line");
    assert!(again.ends_with_newline);
    let m = again.messages();
    assert_eq!(m.len(), 5);
    assert!(matches!(&m[2], Message::ToolResult(r) if r.tool_call_id == "t1" && r.is_error));
    let Message::User(u) = &m[3] else { panic!() };
    // A prompt is written as Pi writes it: one text block.
    assert_eq!(
        u.content,
        UserContent::Blocks(vec![ContentBlock::text("continue")])
    );
    assert_eq!(again.entries[2].parent_id.as_deref(), Some(second.as_str()));
}

#[tokio::test]
async fn non_session_and_old_files_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.jsonl");
    std::fs::write(&p, "{\"role\":\"user\"}\n").unwrap();
    let err = load_session(&p).unwrap_err();
    assert!(matches!(err, SessionError::NotASession { .. }));
    assert!(err.to_string().contains("not a session file"));
    assert!(matches!(
        load_session(&dir.path().join("missing.jsonl")),
        Err(SessionError::Read { .. })
    ));

    let v1 = dir.path().join("v1.jsonl");
    std::fs::write(
        &v1,
        "{\"type\":\"session\",\"id\":\"o\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n{\"type\":\"message\",\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"x\",\"timestamp\":1}}\n",
    )
    .unwrap();
    let loaded = load_session(&v1).unwrap();
    assert_eq!(loaded.messages().len(), 1);
    assert!(matches!(
        SessionWriter::resume(&v1, &loaded).await,
        Err(SessionError::Unsupported { .. })
    ));
}

#[tokio::test]
async fn unknown_entries_are_skipped_and_latest_session_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = SessionWriter::create(dir.path(), dir.path(), None)
        .await
        .unwrap();
    let a = first.append_message(&Message::user("q"));
    first.flush().await.unwrap();
    // Pi may write entry types cadre does not know.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(first.path())
        .unwrap();
    writeln!(
        f,
        r#"{{"type":"shiny_new","id":"0badf00d","parentId":"{a}","timestamp":"t"}}"#
    )
    .unwrap();
    drop(f);
    let first_path = first.path().to_path_buf();
    first.close().await.unwrap();
    let loaded = load_session(&first_path).unwrap();
    assert_eq!(loaded.skipped.len(), 1);
    assert!(loaded.dropped_lines.is_empty());
    assert_eq!(loaded.leaf_id(), Some("0badf00d"));
    let mut resumed = SessionWriter::resume(&first_path, &loaded).await.unwrap();
    resumed.append_message(&Message::user("after"));
    resumed.close().await.unwrap();
    let l = lines(&first_path);
    assert_eq!(l[3]["parentId"], "0badf00d");
    assert_eq!(load_session(&first_path).unwrap().messages().len(), 2);

    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut second = SessionWriter::create(dir.path(), dir.path(), None)
        .await
        .unwrap();
    second.append_message(&Message::user("newer"));
    second.close().await.unwrap();
    let latest = latest_session(dir.path()).unwrap();
    assert_eq!(latest.file_name(), Path::new(&latest).file_name());
    assert!(
        latest
            .to_string_lossy()
            .contains(&load_session(&latest).unwrap().header.id)
    );
}
