//! Garbage arguments get a clear error result from every tool, never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use cadre_tools::BUILTIN_TOOL_NAMES;
use common::{Env, err};
use serde_json::{Value, json};

#[tokio::test]
async fn every_tool_rejects_garbage_cleanly() {
    let env = Env::new();
    let garbage: Vec<Value> = vec![
        json!([1, 2]),
        json!(42),
        json!(true),
        json!("{\"path\": "),
        json!("[]"),
        json!({"path": 5, "command": [], "pattern": {}, "content": 1, "edits": 3}),
    ];
    for tool in BUILTIN_TOOL_NAMES {
        for args in &garbage {
            let out = env.call(tool, args.clone()).await;
            let e = err(&out);
            assert!(
                e.starts_with(&format!("Invalid arguments for {tool}: ")),
                "{tool} {args}: {e}"
            );
        }
    }
}

#[tokio::test]
async fn messages_say_what_is_wrong() {
    let env = Env::new();
    let e = err(&env.call("read", json!({})).await);
    assert_eq!(
        e,
        "Invalid arguments for read: missing required argument `path` (a string)"
    );
    let e = err(&env.call("read", json!({"path": "x", "offset": -3})).await);
    assert!(
        e.contains("`offset` must be a non-negative whole number, got number -3"),
        "{e}"
    );
    let e = err(&env.call("read", json!({"path": "x", "limit": 0})).await);
    assert!(e.contains("`limit` must be at least 1"), "{e}");
    let e = err(&env
        .call("bash", json!({"command": "echo", "timeout": "soon"}))
        .await);
    assert!(
        e.contains("`timeout` must be a non-negative number of seconds"),
        "{e}"
    );
    let e = err(&env.call("bash", json!({"command": "  "})).await);
    assert!(e.contains("empty"), "{e}");
    let e = err(&env.call("write", json!({"path": "a"})).await);
    assert!(e.contains("missing required argument `content`"), "{e}");
    let e = err(&env
        .call("edit", json!({"path": "a", "edits": [{"oldText": "x"}]}))
        .await);
    assert!(e.contains("`edits[0].newText`"), "{e}");
    let e = err(&env
        .call("grep", json!({"pattern": "x", "ignoreCase": "maybe"}))
        .await);
    assert!(e.contains("`ignoreCase` must be a boolean"), "{e}");
    let e = err(&env
        .call("find", json!({"pattern": "*", "limit": 1.5}))
        .await);
    assert!(e.contains("`limit`"), "{e}");
    let e = err(&env.call("ls", json!("not json at all")).await);
    assert!(e.contains("not valid JSON"), "{e}");
}

#[tokio::test]
async fn arguments_as_a_json_string_are_accepted() {
    let env = Env::new();
    env.write("s.txt", "ok");
    let out = env.call("read", json!("{\"path\": \"s.txt\"}")).await;
    assert_eq!(common::ok(&out), "ok");
}
