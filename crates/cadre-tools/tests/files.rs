//! read, write, edit and ls on real files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use cadre_protocol::ContentBlock;
use common::{Env, err, ok, text};
use serde_json::json;

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn read_whole_small_file() {
    let env = Env::new();
    env.write("a.txt", "hello\nworld\n");
    let out = env.call("read", json!({"path": "a.txt"})).await;
    assert_eq!(ok(&out), "hello\nworld");
    assert_eq!(out.details, None);
}

#[tokio::test]
async fn read_offset_limit_and_continuation() {
    let env = Env::new();
    env.write("n.txt", numbered(10));
    let out = env
        .call("read", json!({"path": "n.txt", "offset": 3, "limit": 2}))
        .await;
    assert_eq!(
        ok(&out),
        "line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]"
    );
    let out = env
        .call("read", json!({"path": "n.txt", "offset": 9}))
        .await;
    assert_eq!(ok(&out), "line 9\nline 10");
    let out = env
        .call("read", json!({"path": "n.txt", "offset": 11}))
        .await;
    assert!(err(&out).contains("Offset 11 is beyond end of file (10 lines total)"));
    // Numeric strings are accepted.
    let out = env
        .call("read", json!({"path": "n.txt", "offset": "10"}))
        .await;
    assert_eq!(ok(&out), "line 10");
}

#[tokio::test]
async fn read_huge_file_truncates_by_lines_and_bytes() {
    let env = Env::new();
    env.write("big.txt", numbered(5000));
    let out = env.call("read", json!({"path": "big.txt"})).await;
    let t = ok(&out);
    assert!(t.starts_with("line 1\n"));
    assert!(
        t.ends_with("[Showing lines 1-2000 of 5000. Use offset=2001 to continue.]"),
        "{}",
        &t[t.len() - 100..]
    );
    assert_eq!(
        out.details.as_ref().unwrap()["truncation"]["truncatedBy"],
        "lines"
    );

    let out = env
        .call("read", json!({"path": "big.txt", "offset": 2001}))
        .await;
    assert!(ok(&out).ends_with("[Showing lines 2001-4000 of 5000. Use offset=4001 to continue.]"));

    // Long lines: the 50 KiB limit is hit before 2000 lines.
    let wide: String = (0..1000)
        .map(|i| format!("{i:04}{}\n", "x".repeat(196)))
        .collect();
    env.write("wide.txt", &wide);
    let out = env.call("read", json!({"path": "wide.txt"})).await;
    let t = ok(&out);
    assert!(
        t.contains("(50.0KB limit). Use offset="),
        "{}",
        &t[t.len() - 120..]
    );
    assert!(t.len() < 52 * 1024);

    // A single line larger than the limit points to bash.
    env.write("one.txt", "y".repeat(60 * 1024));
    let out = env.call("read", json!({"path": "one.txt"})).await;
    let t = ok(&out);
    assert!(
        t.starts_with("[Line 1 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' one.txt"),
        "{t}"
    );
}

#[tokio::test]
async fn read_crlf_lines_are_clean() {
    let env = Env::new();
    env.write("w.txt", "a\r\nb\r\n");
    assert_eq!(
        ok(&env.call("read", json!({"path": "w.txt"})).await),
        "a\nb"
    );
}

#[tokio::test]
async fn read_errors() {
    let env = Env::new();
    let out = env.call("read", json!({"path": "nope.txt"})).await;
    assert_eq!(err(&out), "File not found: nope.txt");
    std::fs::create_dir(env.path("d")).unwrap();
    assert!(err(&env.call("read", json!({"path": "d"})).await).contains("Use ls"));
    env.write("bin.dat", [0u8, 1, 2, 3, 0, 255]);
    let e = err(&env.call("read", json!({"path": "bin.dat"})).await);
    assert!(e.contains("binary file"), "{e}");
    let fifo = env.path("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let e = err(&env.call("read", json!({"path": "pipe"})).await);
    assert!(e.contains("not a regular file"), "{e}");
    let e = err(&env
        .call(
            "edit",
            json!({"path": "pipe", "edits": [{"oldText": "a", "newText": "b"}]}),
        )
        .await);
    assert!(e.contains("not a regular file"), "{e}");
    env.write("e.txt", "");
    assert_eq!(
        ok(&env.call("read", json!({"path": "e.txt"})).await),
        "(empty file)"
    );
}

#[tokio::test]
async fn read_image_as_block() {
    let env = Env::new();
    let png: Vec<u8> = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    env.write("pic.png", &png);
    let out = env.call("read", json!({"path": "pic.png"})).await;
    assert!(!out.is_error);
    assert_eq!(out.content.len(), 2);
    assert_eq!(text(&out), "Read image file [image/png]");
    match &out.content[1] {
        ContentBlock::Image { data, mime_type } => {
            assert_eq!(mime_type, "image/png");
            assert_eq!(data, "iVBORw0KGgoAAAANSUhEUg==");
        }
        other => panic!("expected image, got {other:?}"),
    }
}

#[tokio::test]
async fn write_creates_dirs_and_overwrites() {
    let env = Env::new();
    let out = env
        .call(
            "write",
            json!({"path": "deep/er/f.txt", "content": "héllo"}),
        )
        .await;
    assert_eq!(ok(&out), "Successfully wrote 6 bytes to deep/er/f.txt");
    assert_eq!(
        std::fs::read_to_string(env.path("deep/er/f.txt")).unwrap(),
        "héllo"
    );
    env.call("write", json!({"path": "deep/er/f.txt", "content": "new"}))
        .await;
    assert_eq!(
        std::fs::read_to_string(env.path("deep/er/f.txt")).unwrap(),
        "new"
    );
    std::fs::create_dir(env.path("dir")).unwrap();
    assert!(
        err(&env
            .call("write", json!({"path": "dir", "content": "x"}))
            .await)
        .contains("directory")
    );
}

#[tokio::test]
async fn edit_multi_success_with_diff() {
    let env = Env::new();
    env.write("c.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    let out = env
        .call(
            "edit",
            json!({"path": "c.rs", "edits": [
                {"oldText": "fn a() {}", "newText": "fn a() { 1 }"},
                {"oldText": "fn c() {}", "newText": "fn c() { 3 }"}
            ]}),
        )
        .await;
    assert_eq!(ok(&out), "Successfully replaced 2 block(s) in c.rs.");
    assert_eq!(
        std::fs::read_to_string(env.path("c.rs")).unwrap(),
        "fn a() { 1 }\nfn b() {}\nfn c() { 3 }\n"
    );
    let details = out.details.unwrap();
    assert_eq!(details["firstChangedLine"], 1);
    let diff = details["diff"].as_str().unwrap();
    assert!(diff.contains("-1 fn a() {}"), "{diff}");
    assert!(diff.contains("+3 fn c() { 3 }"), "{diff}");
}

#[tokio::test]
async fn edit_failures_leave_the_file_alone() {
    let env = Env::new();
    let original = "x = 1\nx = 1\ny = 2\n";
    env.write("f.py", original);
    let e = err(&env
        .call(
            "edit",
            json!({"path": "f.py", "edits": [{"oldText": "x = 1", "newText": "x = 3"}]}),
        )
        .await);
    assert!(e.starts_with("Found 2 occurrences of the text"), "{e}");
    let e = err(&env
        .call(
            "edit",
            json!({"path": "f.py", "edits": [
                {"oldText": "y = 2", "newText": "y = 3"},
                {"oldText": "zzz", "newText": "q"}
            ]}),
        )
        .await);
    assert!(e.starts_with("Could not find edits[1]"), "{e}");
    let e = err(&env
        .call(
            "edit",
            json!({"path": "f.py", "edits": [
                {"oldText": "1\ny", "newText": "A"},
                {"oldText": "y = 2", "newText": "B"}
            ]}),
        )
        .await);
    assert!(e.contains("edits[0] and edits[1] overlap"), "{e}");
    assert_eq!(std::fs::read_to_string(env.path("f.py")).unwrap(), original);
    let e = err(&env
        .call(
            "edit",
            json!({"path": "missing.py", "edits": [{"oldText": "a", "newText": "b"}]}),
        )
        .await);
    assert_eq!(e, "File not found: missing.py");
}

#[tokio::test]
async fn edit_preserves_crlf_and_bom() {
    let env = Env::new();
    env.write("w.txt", "\u{FEFF}one\r\ntwo\r\nthree\r\n");
    let out = env
        .call(
            "edit",
            json!({"path": "w.txt", "edits": [{"oldText": "one\ntwo", "newText": "1\n2\n2.5"}]}),
        )
        .await;
    ok(&out);
    assert_eq!(
        std::fs::read(env.path("w.txt")).unwrap(),
        "\u{FEFF}1\r\n2\r\n2.5\r\nthree\r\n".as_bytes()
    );
}

#[tokio::test]
async fn ls_sorts_marks_dirs_and_limits() {
    let env = Env::new();
    for f in ["b.txt", "A.txt", ".hidden", "c.txt"] {
        env.write(f, "x");
    }
    std::fs::create_dir(env.path("Dir")).unwrap();
    let out = env.call("ls", json!({})).await;
    assert_eq!(ok(&out), ".hidden\nA.txt\nb.txt\nc.txt\nDir/");
    let out = env.call("ls", json!({"limit": 2})).await;
    assert_eq!(
        ok(&out),
        ".hidden\nA.txt\n\n[2 entries limit reached. Use limit=4 for more]"
    );
    assert_eq!(out.details.unwrap()["entryLimitReached"], 2);
    assert_eq!(
        err(&env.call("ls", json!({"path": "nope"})).await),
        "Path not found: nope"
    );
    assert_eq!(
        err(&env.call("ls", json!({"path": "b.txt"})).await),
        "Not a directory: b.txt"
    );
    std::fs::create_dir(env.path("empty")).unwrap();
    assert_eq!(
        ok(&env.call("ls", json!({"path": "empty"})).await),
        "(empty directory)"
    );
}

#[tokio::test]
async fn absolute_and_home_paths() {
    let env = Env::new();
    let p = env.write("abs.txt", "abs");
    let out = env.call("read", json!({"path": p.to_string_lossy()})).await;
    assert_eq!(ok(&out), "abs");
}
