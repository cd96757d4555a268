//! S1/S2 through the whole runtime: `cadre -p` launches a scripted child that tries to change
//! the project every way it can — `write`, `edit`, and bash with a redirect, `tee`, `cp` over a
//! file, `python3` writing a file, a symlink, `/proc/self/cwd`, `git commit`, `mv`, `rm`. A
//! read-only child (the built-in `Explore`, and a read-only role with an unrestricted shell so
//! every command reaches the kernel sandbox) leaves the tree byte-for-byte unchanged, every
//! attempt fails, and the dispatch refusals are counted in its task record; a writable child
//! running the same script does change the tree, which proves the sandbox, not a broken shell.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cadre_testkit::{Match, RecordedRequest, Reply, Rule};
use cadre_tools::sandbox::landlock_status;
use serde_json::{Value, json};

use crate::harness::{Fixture, Wire, git, have};
use crate::orchestration::task_records;

const CHILD: &str = "[attacker]";

/// Every attack, in an order in which each one succeeds for a writable child.
fn attacks() -> Vec<(&'static str, Value)> {
    let mut out = vec![
        ("write", json!({"path": "notes.txt", "content": "pwned\n"})),
        (
            "edit",
            json!({"path": "notes.txt", "edits": [{"oldText": "pwned", "newText": "edited"}]}),
        ),
    ];
    for cmd in [
        "echo pwned > notes.txt",
        "echo pwned | tee src/lib.rs",
        "cp notes.txt src/lib.rs",
        "ln -sf notes.txt link.txt && echo pwned > link.txt",
        "echo pwned > /proc/self/cwd/notes.txt",
        "git -c user.name=x -c user.email=x@y commit -q --allow-empty -m evil",
        "mv notes.txt moved.txt",
        "rm moved.txt",
    ] {
        out.push(("bash", json!({ "command": cmd })));
    }
    if have("python3") {
        out.push((
            "bash",
            json!({"command": "python3 -c \"open('py.txt','w').write('pwned')\""}),
        ));
    }
    out
}

/// Every path under `root` with its content (files), target (links) or kind.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let v = if meta.is_symlink() {
                format!("link {:?}", std::fs::read_link(&path).unwrap())
            } else if meta.is_dir() {
                walk(&path, out);
                "dir".into()
            } else {
                format!("{:?}", std::fs::read(&path).unwrap())
            };
            out.insert(path, v);
        }
    }
    let mut out = BTreeMap::new();
    walk(root, &mut out);
    out
}

fn is_child(r: &RecordedRequest) -> bool {
    r.first_user_text().is_some_and(|t| t.contains(CHILD))
}

/// Whether the newest tool result in a request is an error.
fn last_result_is_error(r: &RecordedRequest) -> (bool, String) {
    let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
    for m in messages.iter().rev() {
        if let Some(blocks) = m["content"].as_array() {
            for b in blocks.iter().rev() {
                if b["type"] == "tool_result" {
                    return (b["is_error"] == json!(true), b["content"].to_string());
                }
            }
        }
    }
    panic!("no tool result in {}", r.summary());
}

/// What a run of the attacks left: the fixture, the project before the run, the child's
/// requests in order and its task record.
type Attacked = (
    Fixture,
    BTreeMap<PathBuf, String>,
    Vec<RecordedRequest>,
    Value,
);

/// Launch a child of `role` that runs every attack, then answers.
fn run_attacks(role: &str, extra_role: Option<&str>) -> Attacked {
    let f = Fixture::new();
    git(&f.project, &["init", "-q"]);
    git(&f.project, &["add", "."]);
    git(&f.project, &["commit", "-qm", "init"]);
    let before = snapshot(&f.project);
    if let Some(def) = extra_role {
        let dir = f.home.join("agents");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{role}.md")), def).unwrap();
    }
    let s = &f.server;
    let child = || Match::first_user(CHILD);
    let parent = || !Match::first_user(CHILD);
    s.script(
        Rule::new(parent().and(Match::AssistantTurns(0))).reply(Reply::tool_call(
            "call_agent",
            "Agent",
            json!({"subagent_type": role, "description": "Try to change files",
                   "prompt": format!("{CHILD} Change the project in every way you can.")}),
        )),
    );
    s.script(Rule::new(parent()).reply(Reply::text("The child reported.")));
    let list = attacks();
    for (i, (tool, args)) in list.iter().enumerate() {
        s.script(
            Rule::new(child().and(Match::AssistantTurns(i))).reply(Reply::tool_call(
                format!("call_attack_{i}"),
                *tool,
                args.clone(),
            )),
        );
    }
    s.script(Rule::new(child()).reply(Reply::text("I tried every attack.")));
    f.run_print(Wire::Anthropic, &["Launch the attacker."])
        .assert_success();
    let children: Vec<RecordedRequest> = f.server.requests().into_iter().filter(is_child).collect();
    assert_eq!(
        children.len(),
        list.len() + 1,
        "one request per attack, then the answer"
    );
    let records = task_records(&f);
    assert_eq!(records.len(), 1, "{records:#?}");
    let record = records.into_iter().next().unwrap();
    (f, before, children, record)
}

const RO_UNRESTRICTED: &str = "---\nname: ro-unrestricted\ndescription: Read-only with an \
unrestricted shell, so every command reaches the sandbox.\ntools: read, write, edit, bash\n\
readonly: true\nshellPolicy: unrestricted\n---\nTry what you are told.\n";

const RW_UNRESTRICTED: &str = "---\nname: rw-unrestricted\ndescription: A writable child with \
the same tools.\ntools: read, write, edit, bash\nshellPolicy: unrestricted\n---\nTry what you are \
told.\n";

/// `shell_runs`: the role's shell policy lets every command through, so under Landlock each
/// bash attack must really run and fail in the kernel (not be refused before it runs).
fn assert_unchanged_and_refused(role: &str, def: Option<&str>, shell_runs: bool) {
    let (f, before, children, record) = run_attacks(role, def);
    // Byte-for-byte, .git included: nothing changed, nothing was added.
    let after = snapshot(&f.project);
    assert_eq!(before, after, "{role} changed the tree");
    let committed = git(&f.project, &["rev-list", "--count", "HEAD"]);
    assert_eq!(committed.trim(), "1", "no commit was made");
    assert_eq!(
        std::fs::read_to_string(f.project.join("notes.txt")).unwrap(),
        "alpha line\nbeta line\ngamma line\n"
    );
    for extra in ["link.txt", "moved.txt", "py.txt"] {
        assert!(
            !f.project.join(extra).exists(),
            "{role}: {extra} was created"
        );
    }
    // Every attack failed (the answer after attack i is request i+1).
    for (i, r) in children.iter().enumerate().skip(1) {
        let (is_error, text) = last_result_is_error(r);
        assert!(is_error, "{role}: attack {} succeeded: {text}", i - 1);
        if shell_runs && i > 2 && landlock_status().is_enforced() {
            assert!(
                text.contains("exited with code"),
                "{role}: attack {}: {text}",
                i - 1
            );
        }
    }
    // write and edit were refused at dispatch, and counted.
    let blocked = record["usage"]["toolCallsBlocked"].as_u64().unwrap();
    assert!(blocked >= 2, "{role}: blocked {blocked}: {record:#}");
    assert_eq!(record["readonly"], json!(true));
}

#[test]
fn a_read_only_explore_child_cannot_change_the_tree() {
    assert_unchanged_and_refused("Explore", None, false);
}

#[test]
fn a_read_only_child_with_an_unrestricted_shell_cannot_change_the_tree() {
    assert_unchanged_and_refused("ro-unrestricted", Some(RO_UNRESTRICTED), true);
}

#[test]
fn the_same_attacks_from_a_writable_child_change_the_tree() {
    let (f, before, children, record) = run_attacks("rw-unrestricted", Some(RW_UNRESTRICTED));
    assert_ne!(before, snapshot(&f.project));
    let committed = git(&f.project, &["rev-list", "--count", "HEAD"]);
    assert_eq!(committed.trim(), "2", "the commit was made");
    assert!(!f.project.join("notes.txt").exists(), "moved, then removed");
    assert!(std::fs::symlink_metadata(f.project.join("link.txt")).is_ok());
    assert_eq!(
        std::fs::read_to_string(f.project.join("src/lib.rs")).unwrap(),
        "pwned\n"
    );
    if have("python3") {
        assert!(f.project.join("py.txt").exists());
    }
    for (i, r) in children.iter().enumerate().skip(1) {
        let (is_error, text) = last_result_is_error(r);
        assert!(
            !is_error,
            "attack {} failed for a writable child: {text}",
            i - 1
        );
    }
    assert_eq!(record["usage"]["toolCallsBlocked"], json!(0));
}
