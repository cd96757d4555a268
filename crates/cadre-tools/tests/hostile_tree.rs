//! grep, find and ls over trees a hostile repository can hold: deeper than PATH_MAX, and with
//! file names that would forge lines of output.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use common::{Env, ok};
use serde_json::json;

/// A chain of `depth` directories named `dd` below `root`, with `file` at the bottom. Each level
/// is made relative to an open descriptor of the one above (through `/proc/self/fd`), so no
/// path handed to the kernel grows with the depth and the tree can go past PATH_MAX.
struct DeepTree {
    top: PathBuf,
}

impl DeepTree {
    fn new(root: &Path, depth: usize, file: &str, content: &str) -> DeepTree {
        let mut dir = File::open(root).unwrap();
        for _ in 0..depth {
            let next = format!("/proc/self/fd/{}/dd", dir.as_raw_fd());
            std::fs::create_dir(&next).unwrap();
            dir = File::open(&next).unwrap();
        }
        std::fs::write(format!("/proc/self/fd/{}/{file}", dir.as_raw_fd()), content).unwrap();
        DeepTree {
            top: root.join("dd"),
        }
    }
}

impl Drop for DeepTree {
    fn drop(&mut self) {
        // The standard library's recursive removal keeps a descriptor open per level; GNU rm
        // does not mind the depth.
        let _ = std::process::Command::new("rm")
            .arg("-rf")
            .arg(&self.top)
            .status();
    }
}

#[tokio::test]
async fn grep_past_path_max_finds_the_match_or_says_what_it_could_not_search() {
    let env = Env::new();
    env.write("top.txt", "nothing here\n");
    let _tree = DeepTree::new(env.dir.path(), 3000, "needle.txt", "hello DEEPNEEDLE\n");
    let out = env.call("grep", json!({"pattern": "DEEPNEEDLE"})).await;
    let t = ok(&out);
    assert_ne!(t, "No matches found");
    assert!(
        t.contains("needle.txt:1: hello DEEPNEEDLE") || t.contains("could not be searched"),
        "{t}"
    );
}

#[tokio::test]
async fn find_past_path_max_finds_the_file_or_says_what_it_could_not_search() {
    let env = Env::new();
    let _tree = DeepTree::new(env.dir.path(), 3000, "needle.txt", "x\n");
    let out = env.call("find", json!({"pattern": "needle*"})).await;
    let t = ok(&out);
    assert_ne!(t, "No files found matching pattern");
    assert!(
        t.contains("needle.txt") || t.contains("could not be searched"),
        "{t}"
    );
}

/// A tree whose names try to forge lines: a directory `x<LF>src` holding `secret.rs` would
/// print as `x` and then `src/secret.rs`, a file name with an escape sequence recolours the
/// terminal, and one holding a fake notice would close the listing early.
fn forging_tree() -> Env {
    let env = Env::new();
    env.write("x\nsrc/secret.rs", "let key = 1;\n");
    env.write("\u{1b}[2Jclear.rs", "let key = 2;\n");
    env.write("ok.rs\n\n[No more results]", "let key = 3;\n");
    env.write("plain.rs", "let key = 4;\n");
    env
}

/// No output line may come from a name alone: each line is a whole entry.
fn assert_no_forged_lines(t: &str) {
    for line in t.lines() {
        assert!(!line.starts_with("src/secret.rs"), "{t}");
        assert!(!line.starts_with("[No more results]"), "{t}");
        assert!(!line.contains('\u{1b}'), "{t}");
    }
}

#[tokio::test]
async fn ls_quotes_names_with_control_characters() {
    let env = forging_tree();
    let t = ok(&env.call("ls", json!({})).await);
    assert_no_forged_lines(&t);
    assert!(t.contains("$'x\\nsrc'/\n"), "{t}");
    assert!(t.contains("$'\\x1b[2Jclear.rs'"), "{t}");
    assert!(t.contains("$'ok.rs\\n\\n[No more results]'"), "{t}");
    assert!(t.contains("\nplain.rs"), "{t}");
    assert!(t.contains("shown in bash's $'…' quoting"), "{t}");
}

#[tokio::test]
async fn find_quotes_names_with_control_characters() {
    let env = forging_tree();
    let t = ok(&env.call("find", json!({"pattern": "*"})).await);
    assert_no_forged_lines(&t);
    assert!(t.contains("$'x\\nsrc/secret.rs'"), "{t}");
    assert!(t.contains("$'x\\nsrc'/"), "{t}");
    assert!(t.contains("$'\\x1b[2Jclear.rs'"), "{t}");
    assert!(t.contains("shown in bash's $'…' quoting"), "{t}");
    // Plain names are listed as they are, without the notice.
    let t = ok(&env.call("find", json!({"pattern": "plain*"})).await);
    assert_eq!(t, "plain.rs");
}

#[tokio::test]
async fn grep_quotes_names_with_control_characters() {
    let env = forging_tree();
    let t = ok(&env.call("grep", json!({"pattern": "key"})).await);
    assert_no_forged_lines(&t);
    assert!(t.contains("$'x\\nsrc/secret.rs':1: let key = 1;"), "{t}");
    assert!(t.contains("$'\\x1b[2Jclear.rs':1: let key = 2;"), "{t}");
    assert!(
        t.contains("$'ok.rs\\n\\n[No more results]':1: let key = 3;"),
        "{t}"
    );
    assert!(t.contains("plain.rs:1: let key = 4;"), "{t}");
    assert!(t.contains("shown in bash's $'…' quoting"), "{t}");
    // Searching the one file directly labels it by its (quoted) name too.
    let t = ok(&env
        .call(
            "grep",
            json!({"pattern": "key", "path": "\u{1b}[2Jclear.rs"}),
        )
        .await);
    assert!(t.starts_with("$'\\x1b[2Jclear.rs':1: let key = 2;"), "{t}");
}

#[tokio::test]
async fn a_backslash_in_a_name_is_not_shown_as_a_directory() {
    let env = Env::new();
    env.write("src\\secret.rs", "x\n");
    let t = ok(&env.call("find", json!({"pattern": "*secret*"})).await);
    assert_eq!(t, "src\\secret.rs");
}
