//! grep and find over real trees.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{Env, err, ok};
use serde_json::json;

fn tree() -> Env {
    let env = Env::new();
    env.write("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
    env.write(
        "src/lib.rs",
        "pub fn hello() -> &'static str {\n    \"hello\"\n}\n",
    );
    env.write("docs/notes.md", "say HELLO\na.b literal\naxb\n");
    env.write("target/out.rs", "fn hello_generated() {}\n");
    env.write(".gitignore", "target/\n");
    env.write(".hidden/secret.rs", "fn hello_hidden() {}\n");
    env.write("bin/data.bin", b"hello\0\x01\x02binary");
    env
}

#[tokio::test]
async fn grep_regex_sorted_and_gitignore_respected() {
    let env = tree();
    let out = env.call("grep", json!({"pattern": "hel+o"})).await;
    assert_eq!(
        ok(&out),
        "src/lib.rs:1: pub fn hello() -> &'static str {\nsrc/lib.rs:2:     \"hello\""
    );
}

#[tokio::test]
async fn grep_ignore_case_and_literal() {
    let env = tree();
    let out = env
        .call(
            "grep",
            json!({"pattern": "hello", "ignoreCase": true, "glob": "*.md"}),
        )
        .await;
    assert_eq!(ok(&out), "docs/notes.md:1: say HELLO");
    let out = env
        .call("grep", json!({"pattern": "a.b", "literal": true}))
        .await;
    assert_eq!(ok(&out), "docs/notes.md:2: a.b literal");
    let out = env
        .call("grep", json!({"pattern": "a.b", "path": "docs"}))
        .await;
    assert_eq!(ok(&out), "notes.md:2: a.b literal\nnotes.md:3: axb");
}

#[tokio::test]
async fn grep_hidden_only_when_the_glob_names_it() {
    let env = tree();
    let out = env.call("grep", json!({"pattern": "hello_hidden"})).await;
    assert_eq!(ok(&out), "No matches found");
    let out = env
        .call(
            "grep",
            json!({"pattern": "hello_hidden", "glob": ".hidden/*.rs"}),
        )
        .await;
    assert_eq!(ok(&out), ".hidden/secret.rs:1: fn hello_hidden() {}");
}

#[tokio::test]
async fn grep_context_lines() {
    let env = Env::new();
    env.write("f.txt", "1\n2\n3\nMATCH\n5\n6\n7\n");
    let out = env
        .call("grep", json!({"pattern": "MATCH", "context": 1}))
        .await;
    assert_eq!(ok(&out), "f.txt-3- 3\nf.txt:4: MATCH\nf.txt-5- 5");
    // A single file as path: labelled by its name.
    let out = env
        .call("grep", json!({"pattern": "MATCH", "path": "f.txt"}))
        .await;
    assert_eq!(ok(&out), "f.txt:4: MATCH");
}

#[tokio::test]
async fn grep_limit_is_deterministic() {
    let env = Env::new();
    for f in ["a", "b", "c", "d"] {
        env.write(&format!("{f}.txt"), "x\nx\nx\n");
    }
    let out = env.call("grep", json!({"pattern": "x", "limit": 5})).await;
    let t = ok(&out);
    assert_eq!(
        t,
        "a.txt:1: x\na.txt:2: x\na.txt:3: x\nb.txt:1: x\nb.txt:2: x\n\n[5 matches limit reached. Use limit=10 for more, or refine pattern]"
    );
    assert_eq!(out.details.unwrap()["matchLimitReached"], 5);
    let out = env.call("grep", json!({"pattern": "nothing-here"})).await;
    assert_eq!(ok(&out), "No matches found");
}

#[tokio::test]
async fn grep_long_lines_are_cut() {
    let env = Env::new();
    env.write("long.txt", format!("needle {}\n", "z".repeat(800)));
    let out = env.call("grep", json!({"pattern": "needle"})).await;
    let t = ok(&out);
    assert!(t.contains("... [truncated]"));
    assert!(t.contains("Some lines truncated to 500 chars"));
}

#[tokio::test]
async fn grep_errors() {
    let env = tree();
    let e = err(&env.call("grep", json!({"pattern": "fn ("})).await);
    assert!(e.starts_with("Invalid regex pattern \"fn (\""), "{e}");
    assert!(e.contains("literal=true"));
    // The same text is fine as a literal.
    ok(&env
        .call("grep", json!({"pattern": "fn (", "literal": true}))
        .await);
    assert_eq!(
        err(&env
            .call("grep", json!({"pattern": "x", "path": "nope"}))
            .await),
        "Path not found: nope"
    );
    let e = err(&env
        .call("grep", json!({"pattern": "x", "glob": "a[b"}))
        .await);
    assert!(e.starts_with("Invalid glob"), "{e}");
}

#[tokio::test]
async fn find_globs_sorted_with_gitignore() {
    let env = tree();
    let out = env.call("find", json!({"pattern": "*.rs"})).await;
    assert_eq!(ok(&out), "src/lib.rs\nsrc/main.rs");
    let out = env.call("find", json!({"pattern": "src/**/*.rs"})).await;
    assert_eq!(ok(&out), "src/lib.rs\nsrc/main.rs");
    let out = env.call("find", json!({"pattern": "**/*.md"})).await;
    assert_eq!(ok(&out), "docs/notes.md");
    let out = env.call("find", json!({"pattern": "src"})).await;
    assert_eq!(ok(&out), "src/");
    // Hidden entries are found when the pattern names them.
    let out = env.call("find", json!({"pattern": ".hidden/*.rs"})).await;
    assert_eq!(ok(&out), ".hidden/secret.rs");
    let out = env.call("find", json!({"pattern": "*.zzz"})).await;
    assert_eq!(ok(&out), "No files found matching pattern");
}

#[tokio::test]
async fn find_limit_and_errors() {
    let env = Env::new();
    for i in 0..10 {
        env.write(&format!("f{i}.txt"), "");
    }
    let out = env
        .call("find", json!({"pattern": "*.txt", "limit": 3}))
        .await;
    assert_eq!(
        ok(&out),
        "f0.txt\nf1.txt\nf2.txt\n\n[3 results limit reached. Use limit=6 for more, or refine pattern]"
    );
    assert_eq!(
        err(&env
            .call("find", json!({"pattern": "*", "path": "nope"}))
            .await),
        "Path not found: nope"
    );
    assert!(err(&env.call("find", json!({"pattern": "a[b"})).await).starts_with("Invalid glob"));
}

#[tokio::test]
async fn grep_respects_cancel() {
    let env = tree();
    let ctx = env.ctx();
    ctx.cancel.cancel();
    let out = common::call_with("grep", json!({"pattern": "hello"}), ctx).await;
    assert_eq!(err(&out), "Operation aborted");
}
