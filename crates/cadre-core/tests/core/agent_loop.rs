//! The agent loop (R4) and its abort behaviour (R3), against a scripted provider.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use cadre_core::agent::{AgentController, AgentError};
use cadre_llm::{LlmError, StreamEvent};
use cadre_protocol::{AgentEvent, ContentBlock, Message, StopReason};
use cadre_tools::ToolOutput;
use serde_json::json;
use tokio::sync::{Barrier, Notify};
use tokio::time::timeout;

use crate::common::agent::*;

/// Two `meet` calls only both succeed if they run at the same time.
fn meet_tool(barrier: Arc<Barrier>) -> Arc<FnTool> {
    FnTool::new("meet", move |args, _| {
        let barrier = barrier.clone();
        Box::pin(async move {
            match timeout(HANG_GUARD, barrier.wait()).await {
                Ok(_) => ToolOutput::ok(format!("met {}", args["who"])),
                Err(_) => ToolOutput::error("the other call never started"),
            }
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_turn_with_concurrent_tools_answers_every_call_in_order() {
    let provider = ScriptedProvider::new(|req| match last_text(req).as_str() {
        "go" => tool_reply(&[
            call("c1", "meet", json!({"who": "a"})),
            call("c2", "echo", json!({"x": 1})),
            call("c3", "nope", json!({})),
            call("c4", "echo", json!("{not json")),
            call("c5", "meet", json!({"who": "b"})),
        ]),
        "result:c5" => text_reply("all done"),
        other => text_reply(&format!("unexpected {other}")),
    });
    let mut h = simple(
        provider.clone(),
        vec![meet_tool(Arc::new(Barrier::new(2))), echo_tool()],
    );
    let outcome = h.prompt("go").await;

    assert_eq!(outcome.turns, 2);
    assert_eq!(outcome.stop_reason, StopReason::Stop);
    assert_eq!(outcome.error, None);
    assert_eq!(outcome.final_message.unwrap().text(), "all done");
    assert_eq!(outcome.usage.total_tokens, 30);
    assert_eq!(h.agent.usage().total_tokens, 30);
    provider.assert_valid();

    let results = result_texts(h.agent.messages());
    assert_eq!(
        results,
        vec![
            ("c1".into(), "met \"a\"".into(), false),
            ("c2".into(), "{\"x\":1}".into(), false),
            ("c3".into(), "Tool nope not found".into(), true),
            (
                "c4".into(),
                "Invalid arguments for echo: the arguments are not valid JSON (key must be a \
                 string at line 1 column 2); send a JSON object"
                    .into(),
                true
            ),
            ("c5".into(), "met \"b\"".into(), false),
        ]
    );
    // The second request carries the system prompt, the tools and the whole batch.
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].system_prompt, "system");
    assert_eq!(requests[1].tools.len(), 2);
    assert_eq!(requests[1].messages.len(), 7);

    let events = drain(&mut h.events);
    let n = names(&events);
    assert_eq!(
        &n[..4],
        &[
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user"
        ]
    );
    assert_eq!(n[4], "message_start:assistant");
    let first_end = n.iter().position(|e| e == "message_end:assistant").unwrap();
    assert!(
        n[5..first_end]
            .iter()
            .all(|e| e == "message_update:assistant")
    );
    let turn_end = n.iter().position(|e| e == "turn_end").unwrap();
    let tool_events = &n[first_end + 1..turn_end];
    assert_eq!(
        tool_events
            .iter()
            .filter(|e| *e == "tool_execution_start")
            .count(),
        5
    );
    assert_eq!(
        tool_events
            .iter()
            .filter(|e| *e == "tool_execution_end")
            .count(),
        5
    );
    // Result messages come after every execution ended, in call order.
    let result_ids: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd {
                message: Message::ToolResult(r),
            } => Some(r.tool_call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(result_ids, vec!["c1", "c2", "c3", "c4", "c5"]);
    let last_exec_end = n.iter().rposition(|e| e == "tool_execution_end").unwrap();
    let first_result = n
        .iter()
        .position(|e| e == "message_start:toolResult")
        .unwrap();
    assert!(last_exec_end < first_result);
    assert_eq!(n[turn_end + 1], "turn_start");
    assert_eq!(n.last().unwrap(), "agent_end");
    assert_eq!(n.iter().filter(|e| *e == "turn_end").count(), 2);
    let AgentEvent::AgentEnd { messages } = events.last().unwrap() else {
        panic!()
    };
    assert_eq!(messages.len(), 8);
    // message_update carries the partial rebuilt from deltas.
    let AgentEvent::TurnEnd { tool_results, .. } = &events[turn_end] else {
        panic!()
    };
    assert_eq!(tool_results.len(), 5);
    let last_update = events
        .iter()
        .rev()
        .find_map(|e| match e {
            AgentEvent::MessageUpdate { message, .. } => Some(message.text()),
            _ => None,
        })
        .unwrap();
    assert_eq!(last_update, "all done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutations_on_one_target_are_serialised_in_call_order() {
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let write_log = log.clone();
    let write = FnTool::mutating("write", move |args, _| {
        let log = write_log.clone();
        Box::pin(async move {
            let tag = args["tag"].as_str().unwrap_or("?").to_string();
            log.lock().unwrap().push(format!("start {tag}"));
            tokio::time::sleep(Duration::from_millis(30)).await;
            log.lock().unwrap().push(format!("end {tag}"));
            ToolOutput::ok(tag)
        })
    });
    let provider = ScriptedProvider::new(|req| match last_text(req).as_str() {
        "go" => tool_reply(&[
            call("w1", "write", json!({"path": "a", "tag": "a1"})),
            call("w2", "write", json!({"path": "b", "tag": "b1"})),
            call("w3", "write", json!({"path": "a", "tag": "a2"})),
        ]),
        _ => text_reply("ok"),
    });
    let mut h = simple(provider.clone(), vec![write]);
    h.prompt("go").await;
    let log = log.lock().unwrap().clone();
    let pos = |s: &str| log.iter().position(|e| e == s).unwrap();
    assert!(pos("end a1") < pos("start a2"), "{log:?}");
    // Different targets may overlap: b1 is not held back behind a1.
    assert!(pos("start b1") < pos("end a1"), "{log:?}");
    let ids: Vec<String> = result_texts(h.agent.messages())
        .into_iter()
        .map(|r| r.1)
        .collect();
    assert_eq!(ids, vec!["a1", "b1", "a2"]);
    provider.assert_valid();
}

#[tokio::test]
async fn steer_is_delivered_after_the_tool_batch() {
    let controller: Arc<OnceLock<AgentController>> = Arc::default();
    let c = controller.clone();
    let steerer = FnTool::new("steer", move |_, _| {
        let c = c.clone();
        Box::pin(async move {
            c.get().unwrap().steer("change course");
            ToolOutput::ok("steered")
        })
    });
    let provider = ScriptedProvider::new(|req| match last_text(req).as_str() {
        "go" => tool_reply(&[call("s1", "steer", json!({})), call("e1", "echo", json!(1))]),
        "change course" => text_reply("changed"),
        other => text_reply(&format!("unexpected {other}")),
    });
    let mut h = simple(provider.clone(), vec![steerer, echo_tool()]);
    controller.set(h.agent.controller()).ok().unwrap();
    let outcome = h.prompt("go").await;
    assert_eq!(outcome.final_message.unwrap().text(), "changed");
    let requests = provider.requests();
    let second = &requests[1].messages;
    // Both calls of the batch ran; the steer follows their results.
    assert_eq!(result_texts(second).len(), 2);
    assert!(
        matches!(second.last(), Some(Message::User(u)) if u.content.to_text() == "change course")
    );
    let events = drain(&mut h.events);
    let queue_updates: Vec<(Vec<String>, Vec<String>)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::QueueUpdate {
                steering,
                follow_up,
            } => Some((steering.clone(), follow_up.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        queue_updates,
        vec![
            (vec!["change course".to_string()], vec![]),
            (vec![], vec![])
        ]
    );
    provider.assert_valid();
}

#[tokio::test]
async fn follow_up_is_delivered_when_the_agent_would_stop() {
    let provider = ScriptedProvider::new(|req| text_reply(&format!("re: {}", last_text(req))));
    let mut h = simple(provider.clone(), vec![]);
    let controller = h.agent.controller();
    assert!(matches!(
        h.agent.run_queued().await,
        Err(AgentError::NothingQueued)
    ));
    controller.follow_up("and then?");
    controller.follow_up("finally");
    assert_eq!(controller.queued().1.len(), 2);
    let outcome = h.prompt("first").await;
    assert_eq!(outcome.turns, 3);
    assert_eq!(outcome.final_message.unwrap().text(), "re: finally");
    let n = names(&drain(&mut h.events));
    assert_eq!(n.iter().filter(|e| *e == "agent_start").count(), 1);
    assert_eq!(n.iter().filter(|e| *e == "agent_end").count(), 1);
    assert_eq!(n.iter().filter(|e| *e == "turn_start").count(), 3);

    // Queued while idle, run without a new prompt.
    controller.follow_up("later");
    let outcome = timeout(HANG_GUARD, h.agent.run_queued())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.final_message.unwrap().text(), "re: later");
    assert!(!controller.is_running());
    assert_eq!(h.agent.messages().len(), 8);
    provider.assert_valid();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_while_streaming_records_the_partial_and_answers_its_calls() {
    let streaming = Arc::new(Notify::new());
    let s = streaming.clone();
    let provider = ScriptedProvider::new(move |req| match last_text(req).as_str() {
        "go" => {
            // A complete tool call, then text, then the provider hangs (ignoring cancel).
            let mut steps = tool_deltas(&[call("t1", "echo", json!({}))]);
            steps.push(delta(cadre_protocol::AssistantMessageEvent::TextDelta {
                content_index: 1,
                delta: "thinking about".into(),
            }));
            steps.push(Step::Notify(s.clone()));
            steps.push(Step::Hang);
            steps
        }
        other => text_reply(&format!("fresh {other}")),
    });
    let mut h = simple(provider.clone(), vec![echo_tool()]);
    let controller = h.agent.controller();
    assert!(!controller.is_running());
    controller.abort(); // idle: no effect on the next run
    let aborter = tokio::spawn(async move {
        streaming.notified().await;
        assert!(controller.is_running());
        controller.abort();
    });
    let outcome = h.prompt("go").await;
    aborter.await.unwrap();
    assert_eq!(outcome.stop_reason, StopReason::Aborted);
    assert!(outcome.error.is_some());
    let last = outcome.final_message.unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(last.text(), "thinking about");
    assert_eq!(
        result_texts(h.agent.messages()),
        vec![("t1".into(), "Operation aborted".into(), true)]
    );
    let n = names(&drain(&mut h.events));
    assert!(n.contains(&"message_end:assistant".to_string()));
    assert_eq!(n.last().unwrap(), "agent_end");

    let next = h.prompt("again").await;
    assert_eq!(next.final_message.unwrap().text(), "fresh again");
    provider.assert_valid();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_during_long_tools_returns_promptly_with_every_call_answered() {
    // Each tool reports when it runs; the abort comes once both are running.
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel::<&'static str>();
    let st = started_tx.clone();
    // Honours cancellation and reports what it did.
    let polite = FnTool::new("polite", move |_, ctx| {
        let st = st.clone();
        Box::pin(async move {
            st.send("polite").unwrap();
            ctx.cancel.cancelled().await;
            ToolOutput::error("stopped by abort")
        })
    });
    // Ignores cancellation entirely: must be dropped by the loop.
    let stubborn = FnTool::mutating("stubborn", move |_, _| {
        let st = started_tx.clone();
        Box::pin(async move {
            st.send("stubborn").unwrap();
            tokio::time::sleep(Duration::from_secs(3600)).await;
            ToolOutput::ok("never")
        })
    });
    let provider = ScriptedProvider::new(|req| match last_text(req).as_str() {
        "go" => tool_reply(&[
            call("p1", "polite", json!({})),
            call("s1", "stubborn", json!({"path": "f"})),
            // Waits behind s1 (same target): never starts.
            call("s2", "stubborn", json!({"path": "f"})),
        ]),
        other => text_reply(&format!("fresh {other}")),
    });
    let mut h = simple(provider.clone(), vec![polite, stubborn]);
    let controller = h.agent.controller();
    let aborter = tokio::spawn(async move {
        started.recv().await.unwrap();
        started.recv().await.unwrap();
        controller.abort();
    });
    let outcome = h.prompt("go").await;
    aborter.await.unwrap();
    assert_eq!(outcome.stop_reason, StopReason::Aborted);
    assert_eq!(outcome.turns, 1);
    assert_eq!(
        result_texts(h.agent.messages()),
        vec![
            ("p1".into(), "stopped by abort".into(), true),
            ("s1".into(), "Operation aborted".into(), true),
            ("s2".into(), "Operation aborted".into(), true),
        ]
    );
    let events = drain(&mut h.events);
    let n = names(&events);
    assert_eq!(n.iter().filter(|e| *e == "tool_execution_start").count(), 3);
    assert_eq!(n.iter().filter(|e| *e == "tool_execution_end").count(), 3);
    assert_eq!(n.last().unwrap(), "agent_end");

    let next = h.prompt("again").await;
    assert_eq!(next.final_message.unwrap().text(), "fresh again");
    assert_eq!(next.error, None);
    provider.assert_valid();
}

#[tokio::test]
async fn provider_failure_is_an_outcome_and_history_stays_valid() {
    let provider = ScriptedProvider::new(|req| match last_text(req).as_str() {
        "go" => {
            let partial = assistant(
                vec![
                    ContentBlock::text("half"),
                    ContentBlock::ToolCall(call("x1", "echo", json!({}))),
                ],
                StopReason::Stop,
            );
            let mut steps = text_deltas("half");
            steps.push(failed(
                LlmError::Http {
                    provider: "fake".into(),
                    status: 401,
                    message: "bad key".into(),
                    retry_after: None,
                    kind: cadre_llm::ErrorKind::Auth,
                },
                partial,
            ));
            steps
        }
        "cut" => {
            let mut steps = text_deltas("partial answer");
            steps.push(Step::Close);
            steps
        }
        other => text_reply(&format!("fresh {other}")),
    });
    let mut h = simple(provider.clone(), vec![echo_tool()]);
    let outcome = h.agent.prompt("go").await.unwrap();
    assert_eq!(outcome.stop_reason, StopReason::Error);
    assert!(outcome.error.as_deref().unwrap().contains("401"));
    let last = outcome.final_message.unwrap();
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(result_texts(h.agent.messages()).len(), 1);
    let n = names(&drain(&mut h.events));
    let tail: Vec<&str> = n[n.len() - 5..].iter().map(String::as_str).collect();
    assert_eq!(
        tail,
        [
            "message_end:assistant",
            "message_start:toolResult",
            "message_end:toolResult",
            "turn_end",
            "agent_end"
        ]
    );

    // A stream that closes without its terminal event is a failure, never an empty answer.
    let outcome = h.prompt("cut").await;
    assert_eq!(outcome.stop_reason, StopReason::Error);
    assert_eq!(outcome.final_message.unwrap().text(), "partial answer");
    assert!(outcome.error.unwrap().contains("without a final message"));

    let next = h.agent.prompt("again").await.unwrap();
    assert_eq!(next.final_message.unwrap().text(), "fresh again");
    provider.assert_valid();
}

#[tokio::test]
async fn retry_resets_the_partial_message() {
    let provider = ScriptedProvider::new(|_| {
        let mut steps = text_deltas("garbage");
        steps.push(Step::Send(StreamEvent::Retry {
            attempt: 1,
            max_attempts: 3,
            delay_ms: 10,
            error: LlmError::Connection {
                provider: "fake".into(),
                message: "reset".into(),
            },
        }));
        steps.extend(text_reply("good"));
        steps
    });
    let mut h = simple(provider.clone(), vec![]);
    let outcome = h.agent.prompt("hi").await.unwrap();
    assert_eq!(outcome.final_message.unwrap().text(), "good");
    let events = drain(&mut h.events);
    let n = names(&events);
    let retry = n.iter().position(|e| e == "auto_retry_start").unwrap();
    // Pi's framing: the abandoned attempt's message ends, so do its turn and run; the retry
    // is a new run whose success is reported once its reply has ended.
    assert_eq!(
        n[retry - 3..retry + 4],
        [
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "auto_retry_start",
            "agent_start",
            "turn_start",
            "message_start:assistant"
        ]
    );
    let end = n.iter().position(|e| e == "auto_retry_end").unwrap();
    assert_eq!(n[end - 1], "message_end:assistant");
    assert_eq!(n[end + 1..], ["turn_end", "agent_end"]);
    // The first run's agent_end has the prompt and the failed attempt; the retry's only what
    // it added.
    let ends: Vec<&Vec<Message>> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::AgentEnd { messages } => Some(messages),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 2);
    assert!(
        matches!(&ends[0][..], [Message::User(_), Message::Assistant(a)]
        if a.stop_reason == StopReason::Error && a.text() == "garbage")
    );
    assert!(matches!(&ends[1][..], [Message::Assistant(a)] if a.text() == "good"));
    let AgentEvent::AutoRetryStart {
        attempt,
        error_message,
        ..
    } = &events[retry]
    else {
        panic!()
    };
    assert_eq!(*attempt, 1);
    assert!(error_message.contains("reset"));
    let updates_after: Vec<String> = events[retry..]
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageUpdate { message, .. } => Some(message.text()),
            _ => None,
        })
        .collect();
    assert!(
        updates_after.iter().all(|t| !t.contains("garbage")),
        "{updates_after:?}"
    );
    assert!(matches!(
        events
            .iter()
            .find(|e| matches!(e, AgentEvent::AutoRetryEnd { .. })),
        Some(AgentEvent::AutoRetryEnd {
            success: true,
            attempt: 1,
            ..
        })
    ));
    // One message_end for the abandoned attempt, one for the reply that counts; each
    // message_start is matched.
    assert_eq!(
        n.iter().filter(|e| *e == "message_end:assistant").count(),
        2
    );
    assert_eq!(
        n.iter().filter(|e| *e == "message_start:assistant").count(),
        2
    );
    assert_eq!(h.agent.messages().len(), 2, "only the good reply is kept");
}

#[tokio::test]
async fn a_retry_that_fails_is_reported_after_its_run_ends() {
    let reset = || LlmError::Connection {
        provider: "fake".into(),
        message: "reset".into(),
    };
    let provider = ScriptedProvider::new(move |_| {
        vec![
            Step::Send(StreamEvent::Retry {
                attempt: 1,
                max_attempts: 1,
                delay_ms: 1,
                error: reset(),
            }),
            Step::Send(StreamEvent::Failed {
                error: reset(),
                partial: assistant(Vec::new(), StopReason::Error),
            }),
        ]
    });
    let mut h = simple(provider.clone(), vec![]);
    let outcome = h.agent.prompt("hi").await.unwrap();
    assert_eq!(outcome.stop_reason, StopReason::Error);
    let events = drain(&mut h.events);
    let n = names(&events);
    // As in Pi, which decides on retrying once a run has ended.
    assert_eq!(
        n[n.len() - 4..],
        [
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "auto_retry_end"
        ]
    );
    assert!(matches!(
        events.last(),
        Some(AgentEvent::AutoRetryEnd {
            success: false,
            attempt: 1,
            final_error: Some(e),
        }) if e.contains("reset")
    ));
}

#[tokio::test]
async fn calls_of_a_reply_cut_by_the_token_limit_are_refused() {
    let provider = ScriptedProvider::new(|req| match last_text(req).as_str() {
        "go" => {
            let calls = [call("l1", "echo", json!({"a": 1}))];
            let mut steps = tool_deltas(&calls);
            steps.push(Step::Send(StreamEvent::Done(assistant(
                calls.iter().cloned().map(ContentBlock::ToolCall).collect(),
                StopReason::Length,
            ))));
            steps
        }
        _ => text_reply("ok"),
    });
    let mut h = simple(provider.clone(), vec![echo_tool()]);
    let outcome = h.agent.prompt("go").await.unwrap();
    assert_eq!(outcome.turns, 2);
    let results = result_texts(h.agent.messages());
    assert!(results[0].2);
    assert!(results[0].1.contains("output token limit"));
    provider.assert_valid();
}

#[tokio::test]
async fn history_with_unanswered_calls_is_repaired_before_the_next_request() {
    let provider = ScriptedProvider::new(|_| text_reply("ok"));
    let history = vec![
        Message::user("earlier"),
        Message::Assistant(assistant(
            vec![ContentBlock::ToolCall(call("old", "echo", json!({})))],
            StopReason::ToolUse,
        )),
    ];
    let mut h = harness(
        provider.clone(),
        vec![],
        None,
        history,
        tempfile::tempdir().unwrap(),
    );
    assert_eq!(h.agent.usage().total_tokens, 15);
    h.agent.prompt("now").await.unwrap();
    provider.assert_valid();
    assert_eq!(result_texts(h.agent.messages()).len(), 1);
}

#[tokio::test]
async fn tool_updates_become_events_and_a_panicking_tool_still_gets_a_result() {
    let progress = FnTool::new("progress", |_, ctx| {
        Box::pin(async move {
            let updates = ctx.updates.expect("updates channel when events are wanted");
            updates.send(json!({"line": 1})).unwrap();
            updates.send(json!({"line": 2})).unwrap();
            ToolOutput::ok("done").with_details(json!({"lines": 2}))
        })
    });
    let boom = FnTool::new("boom", |_, _| Box::pin(async move { panic!("tool bug") }));
    let provider = ScriptedProvider::new(|req| match last_text(req).as_str() {
        "go" => tool_reply(&[
            call("p", "progress", json!({})),
            call("b", "boom", json!({})),
        ]),
        _ => text_reply("ok"),
    });
    let mut h = simple(provider.clone(), vec![progress, boom]);
    let outcome = h.prompt("go").await;
    assert_eq!(outcome.error, None);
    let results = result_texts(h.agent.messages());
    assert_eq!(results[0], ("p".into(), "done".into(), false));
    assert_eq!(results[1].0, "b");
    assert!(results[1].2);
    let Some(Message::ToolResult(r)) = h.agent.messages().get(2) else {
        panic!()
    };
    assert_eq!(r.details, Some(json!({"lines": 2})));

    let events = drain(&mut h.events);
    let updates: Vec<serde_json::Value> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionUpdate { partial_result, .. } => Some(partial_result.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(updates, vec![json!({"line": 1}), json!({"line": 2})]);
    let ends: Vec<(String, bool)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                is_error,
                result,
                ..
            } => {
                assert!(result["content"].is_array());
                Some((tool_call_id.clone(), *is_error))
            }
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 2);
    assert!(ends.contains(&("b".into(), true)));
    let progress_end = events
        .iter()
        .position(|e| matches!(e, AgentEvent::ToolExecutionEnd { tool_call_id, .. } if tool_call_id == "p"))
        .unwrap();
    let last_update = events
        .iter()
        .rposition(|e| matches!(e, AgentEvent::ToolExecutionUpdate { .. }))
        .unwrap();
    assert!(last_update < progress_end);
    provider.assert_valid();
}

#[tokio::test]
async fn steer_queued_while_idle_is_delivered_with_the_next_prompt() {
    let provider = ScriptedProvider::new(|req| text_reply(&format!("re {}", last_text(req))));
    let mut h = simple(provider.clone(), vec![]);
    h.agent.controller().steer("also this");
    let outcome = h.agent.prompt("main").await.unwrap();
    assert_eq!(outcome.turns, 1);
    let first = &provider.requests()[0].messages;
    assert_eq!(first.len(), 2);
    assert_eq!(last_text(&provider.requests()[0]), "also this");

    // With only steering queued, run_queued delivers it.
    h.agent.controller().steer("steer only");
    let outcome = h.agent.run_queued().await.unwrap();
    assert_eq!(outcome.final_message.unwrap().text(), "re steer only");
}

#[tokio::test]
async fn a_steered_message_arrives_whole_and_unlisted() {
    let provider = ScriptedProvider::new(|req| text_reply(&format!("re {}", last_text(req))));
    let mut h = simple(provider.clone(), vec![]);
    let notice = Message::Custom(cadre_protocol::CustomMessage {
        custom_type: "task-notification".into(),
        content: cadre_protocol::UserContent::Text("task t1 ended".into()),
        display: true,
        details: Some(json!({"taskId": "t1"})),
        timestamp: 1,
    });
    let controller = h.agent.controller();
    controller.steer_message(notice.clone());
    // As Pi's steered custom messages: not in the queue a person sees.
    assert_eq!(controller.queued(), (vec![], vec![]));
    h.agent.run_queued().await.unwrap();
    let events = drain(&mut h.events);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::QueueUpdate { .. })),
        "{:?}",
        names(&events)
    );
    let delivered: Vec<&Message> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd { message } if !matches!(message, Message::Assistant(_)) => {
                Some(message)
            }
            _ => None,
        })
        .collect();
    assert_eq!(delivered, vec![&notice]);
    assert_eq!(h.agent.messages()[0], notice);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_while_waiting_for_the_first_event() {
    let waiting = Arc::new(Notify::new());
    let w = waiting.clone();
    let provider = ScriptedProvider::new(move |req| match last_text(req).as_str() {
        "go" => vec![Step::Notify(w.clone()), Step::Hang],
        other => text_reply(&format!("fresh {other}")),
    });
    let mut h = simple(provider.clone(), vec![]);
    let controller = h.agent.controller();
    let aborter = tokio::spawn(async move {
        waiting.notified().await;
        controller.abort();
    });
    let outcome = h.prompt("go").await;
    aborter.await.unwrap();
    assert_eq!(outcome.stop_reason, StopReason::Aborted);
    let last = outcome.final_message.unwrap();
    assert!(last.content.is_empty());
    assert_eq!(last.error_message.as_deref(), Some("Request was aborted"));
    let n = names(&drain(&mut h.events));
    assert_eq!(
        &n[n.len() - 4..],
        &[
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end"
        ]
    );
    let next = h.prompt("again").await;
    assert_eq!(next.final_message.unwrap().text(), "fresh again");
}

/// Records the arguments of every call it sees and the calls refused before it.
#[derive(Default)]
struct RecordingGate {
    checked: Mutex<Vec<(String, serde_json::Value)>>,
    unreadable: Mutex<Vec<String>>,
}

impl cadre_core::agent::ToolGate for RecordingGate {
    fn check(&self, call: &cadre_protocol::ToolCall) -> Option<String> {
        self.checked
            .lock()
            .unwrap()
            .push((call.id.clone(), call.arguments.clone()));
        None
    }

    fn on_unreadable(&self, call: &cadre_protocol::ToolCall) {
        self.unreadable.lock().unwrap().push(call.id.clone());
    }
}

#[tokio::test]
async fn the_gate_checks_exactly_the_arguments_the_tool_runs_with() {
    let provider = ScriptedProvider::new(|req| match last_text(req).as_str() {
        "go" => tool_reply(&[
            call("obj", "echo", json!({"path": "a"})),
            call("str", "echo", json!("{\"path\": \"/etc/passwd\"}")),
            call("null", "echo", serde_json::Value::Null),
            call("bad", "echo", json!("{\"path\": ")),
            call(
                "dup",
                "echo",
                json!(r#"{"path": "a", "path": "/etc/passwd"}"#),
            ),
            call("arr", "echo", json!(["/etc/passwd"])),
        ]),
        _ => text_reply("ok"),
    });
    let mut h = simple(provider.clone(), vec![echo_tool()]);
    let gate = Arc::new(RecordingGate::default());
    h.agent.set_tool_gate(gate.clone());
    h.agent.prompt("go").await.unwrap();
    // The gate saw the normalised objects; the unreadable calls were never shown to it.
    assert_eq!(
        *gate.checked.lock().unwrap(),
        vec![
            ("obj".to_string(), json!({"path": "a"})),
            ("str".to_string(), json!({"path": "/etc/passwd"})),
            ("null".to_string(), json!({})),
        ]
    );
    assert_eq!(*gate.unreadable.lock().unwrap(), ["bad", "dup", "arr"]);
    // The tool ran with the very values the gate checked (echo prints what it was given).
    let results = result_texts(h.agent.messages());
    assert_eq!(results[0].1, "{\"path\":\"a\"}");
    assert_eq!(results[1].1, "{\"path\":\"/etc/passwd\"}");
    assert_eq!(results[2].1, "{}");
    for (id, text, is_error) in &results[3..] {
        assert!(*is_error, "{id}");
        assert!(
            text.starts_with("Invalid arguments for echo: "),
            "{id}: {text}"
        );
    }
    assert!(results[4].1.contains("more than once"), "{}", results[4].1);
    // Events carry the arguments the tool ran with, too.
    let started: Vec<serde_json::Value> = drain(&mut h.events)
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionStart {
                tool_call_id, args, ..
            } if tool_call_id == "str" => Some(args),
            _ => None,
        })
        .collect();
    assert_eq!(started, [json!({"path": "/etc/passwd"})]);
    provider.assert_valid();
}

/// Refuses `write` and counts every call it sees.
struct ReadOnlyGate(Mutex<Vec<String>>);

impl cadre_core::agent::ToolGate for ReadOnlyGate {
    fn check(&self, call: &cadre_protocol::ToolCall) -> Option<String> {
        self.0.lock().unwrap().push(call.id.clone());
        (call.name == "write").then(|| "write is not allowed for this agent".to_string())
    }
}

#[tokio::test]
async fn tool_gate_sees_every_call_and_refusals_are_results() {
    let ran: Arc<Mutex<u32>> = Arc::default();
    let r = ran.clone();
    let write = FnTool::mutating("write", move |_, _| {
        let r = r.clone();
        Box::pin(async move {
            *r.lock().unwrap() += 1;
            ToolOutput::ok("written")
        })
    });
    let provider = ScriptedProvider::new(|req| match last_text(req).as_str() {
        "go" => tool_reply(&[
            call("w", "write", json!({"path": "x"})),
            call("e", "echo", json!({})),
            call("u", "unknown", json!({})),
        ]),
        _ => text_reply("ok"),
    });
    let mut h = simple(provider.clone(), vec![write, echo_tool()]);
    let gate = Arc::new(ReadOnlyGate(Mutex::default()));
    h.agent.set_tool_gate(gate.clone());
    h.agent.prompt("go").await.unwrap();
    assert_eq!(*gate.0.lock().unwrap(), vec!["w", "e", "u"]);
    assert_eq!(*ran.lock().unwrap(), 0);
    let results = result_texts(h.agent.messages());
    assert_eq!(
        results[0],
        (
            "w".into(),
            "write is not allowed for this agent".into(),
            true
        )
    );
    assert!(!results[1].2);
    assert_eq!(results[2].1, "Tool unknown not found");
    provider.assert_valid();
}
