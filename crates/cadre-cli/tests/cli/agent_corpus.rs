//! Compatibility over the agent files people already have: public Claude Code and Pi subagent
//! collections (tests/fixtures/agent-corpus/, each with its LICENSE and a SOURCE naming the
//! commit and the paths taken) must load and launch in cadre.
//!
//! The denominator is decided without cadre's parser: a file counts when the tool it was
//! written for would load it (Claude Code's frontmatter rule, or the rule of the Pi package it
//! comes from, see `own_tool`). The numerator reads `cadre agents --json`: a file counts when a
//! role with that `file` is `launchable`. Files whose names collide inside one collection block
//! each other by cadre's rule; they are shown and left out of the share.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::Fixture;

/// The share of loadable files that must launch, per dialect (issue 11's goal).
const GOAL: f64 = 0.95;

fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent-corpus")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Dialect {
    Claude,
    Pi,
}

impl Dialect {
    /// The corpus sub-folder.
    fn dir(self) -> &'static str {
        match self {
            Dialect::Claude => "claude",
            Dialect::Pi => "pi",
        }
    }

    /// Where the files go under HOME: the user folder cadre reads for this dialect.
    fn agents_dir(self) -> &'static str {
        match self {
            Dialect::Claude => ".claude/agents",
            Dialect::Pi => ".pi/agent/agents",
        }
    }
}

/// How the tool a collection was written for decides that a file is an agent, and its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OwnRule {
    /// Claude Code: frontmatter with non-empty string `name` and `description`.
    ClaudeCode,
    /// pi-mono's subagent example, pi-subagents (nicobailon, fitchmultz), gee666's pi-subagent:
    /// non-empty `name` and `description`, else the file is skipped.
    NameAndDescription,
    /// @tintinweb/pi-subagents: `name` defaults to the file stem, `description` to the name.
    NameDefaultsToStem,
    /// goofansu's pi-subagent: the name is always the file stem (`name:` is not read);
    /// `description` and a non-empty body are required.
    StemIsName,
}

/// Every collection in the corpus, with its own tool's rule (read from that tool's loader).
const COLLECTIONS: &[(Dialect, &str, OwnRule)] = &[
    (
        Dialect::Claude,
        "0xfurai__claude-code-subagents",
        OwnRule::ClaudeCode,
    ),
    (
        Dialect::Claude,
        "VoltAgent__awesome-claude-code-subagents",
        OwnRule::ClaudeCode,
    ),
    (
        Dialect::Claude,
        "davepoon__claude-code-subagents-collection",
        OwnRule::ClaudeCode,
    ),
    (
        Dialect::Claude,
        "lst97__claude-code-sub-agents",
        OwnRule::ClaudeCode,
    ),
    (
        Dialect::Claude,
        "rshah515__claude-code-subagents",
        OwnRule::ClaudeCode,
    ),
    (
        Dialect::Claude,
        "supatest-ai__awesome-claude-code-sub-agents",
        OwnRule::ClaudeCode,
    ),
    (
        Dialect::Claude,
        "vijaythecoder__awesome-claude-agents",
        OwnRule::ClaudeCode,
    ),
    (Dialect::Claude, "wshobson__agents", OwnRule::ClaudeCode),
    (
        Dialect::Pi,
        "badlogic__pi-mono",
        OwnRule::NameAndDescription,
    ),
    (
        Dialect::Pi,
        "fitchmultz__pi-subagents",
        OwnRule::NameAndDescription,
    ),
    (
        Dialect::Pi,
        "gee666__pi-subagent",
        OwnRule::NameAndDescription,
    ),
    (Dialect::Pi, "goofansu__pi-subagent", OwnRule::StemIsName),
    (
        Dialect::Pi,
        "nicobailon__pi-subagents",
        OwnRule::NameAndDescription,
    ),
    (
        Dialect::Pi,
        "tintinweb__pi-subagents",
        OwnRule::NameDefaultsToStem,
    ),
];

/// The loaders of the tools the files were written for, re-stated here so that the
/// denominator does not depend on cadre's parser.
mod own_tool {
    use serde_yaml_ng::{Mapping, Value};

    use super::OwnRule;

    /// The frontmatter text as Claude Code's `FRONTMATTER_REGEX` (`^---\s*\n([\s\S]*?)---`)
    /// cuts it: after the opening `---` and its whitespace up to the last newline in it, up to
    /// the first `---` anywhere after (not only a line of its own).
    pub fn frontmatter(text: &str) -> Option<(&str, &str)> {
        let rest = text.strip_prefix("---")?;
        let space = rest.len() - rest.trim_start().len();
        let newline = rest[..space].rfind('\n')?;
        let after = &rest[newline + 1..];
        let end = after.find("---")?;
        Some((&after[..end], &after[end + 3..]))
    }

    /// Claude Code's retry after a YAML error (`quoteProblematicValues`): every simple
    /// `key: value` line whose unquoted value holds a YAML indicator is double-quoted.
    pub fn quote_problematic_values(frontmatter: &str) -> String {
        frontmatter
            .split('\n')
            .map(|line| quote_line(line).unwrap_or_else(|| line.to_string()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// One line of the retry; `None` leaves the line as it is.
    fn quote_line(line: &str) -> Option<String> {
        let key_len = line
            .find(|c: char| !(c.is_ascii_alphabetic() || c == '_' || c == '-'))
            .unwrap_or(line.len());
        let (key, rest) = line.split_at(key_len);
        let rest = rest.strip_prefix(':')?;
        let value = rest.trim_start();
        // `\s+(.+)$`: at least one space, then a value without line breaks (JS `.`).
        if key.is_empty() || value.len() == rest.len() || value.is_empty() || value.contains('\r') {
            return None;
        }
        let quoted = |q: char| value.len() >= 2 && value.starts_with(q) && value.ends_with(q);
        if quoted('"') || quoted('\'') {
            return None;
        }
        let special = value.contains(|c: char| "{}[]*&#!|>%@`".contains(c)) || value.contains(": ");
        if !special {
            return None;
        }
        let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
        Some(format!("{key}: \"{escaped}\""))
    }

    /// The frontmatter as a YAML mapping: as written, else (Claude Code only) after the retry.
    fn mapping(frontmatter: &str, retry: bool) -> Option<Mapping> {
        let parse = |text: &str| match serde_yaml_ng::from_str::<Value>(text) {
            Ok(Value::Mapping(map)) => Some(Ok(map)),
            Ok(_) => Some(Err(())),
            Err(_) => None,
        };
        match parse(frontmatter) {
            Some(parsed) => parsed.ok(),
            None if retry => parse(&quote_problematic_values(frontmatter))?.ok(),
            None => None,
        }
    }

    fn text<'a>(map: &'a Mapping, key: &str) -> Option<&'a str> {
        map.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    /// The name under which the tool would load the file, or `None` when it would skip it.
    pub fn loaded_name(rule: OwnRule, stem: &str, text_of_file: &str) -> Option<String> {
        let (frontmatter, body) = frontmatter(text_of_file)?;
        let map = mapping(frontmatter, rule == OwnRule::ClaudeCode)?;
        let name = text(&map, "name");
        let description = text(&map, "description");
        match rule {
            OwnRule::ClaudeCode | OwnRule::NameAndDescription => {
                description.and(name).map(str::to_string)
            }
            OwnRule::NameDefaultsToStem => Some(name.unwrap_or(stem).to_string()),
            OwnRule::StemIsName => {
                (description.is_some() && !body.trim().is_empty()).then(|| stem.to_string())
            }
        }
    }
}

/// What happened to one file.
#[derive(Debug, Default)]
struct FileOutcome {
    /// Path under the collection's `agents/`.
    rel: String,
    /// The name its own tool loads it under; `None`: its own tool skips it.
    own_name: Option<String>,
    /// Another loadable file of the collection has the same name.
    collides: bool,
    /// `roles[]` has an entry for this file.
    loads: bool,
    /// ... and that entry is launchable.
    launches: bool,
    /// cadre's problems, blocked reasons and diagnostics for this file.
    why: Vec<String>,
}

/// One collection's row of the table.
#[derive(Debug)]
struct CollectionReport {
    dialect: Dialect,
    name: String,
    files: Vec<FileOutcome>,
}

impl CollectionReport {
    fn loadable(&self) -> impl Iterator<Item = &FileOutcome> {
        self.files.iter().filter(|f| f.own_name.is_some())
    }
    /// Loadable files whose names are unique in the collection: the share's denominator.
    fn counted(&self) -> impl Iterator<Item = &FileOutcome> {
        self.loadable().filter(|f| !f.collides)
    }
    fn launched(&self) -> usize {
        self.counted().filter(|f| f.launches).count()
    }
    fn row(&self) -> String {
        format!(
            "{:<46} {:>5} {:>8} {:>7} {:>6} {:>8}",
            self.name,
            self.files.len(),
            self.loadable().count(),
            self.loadable().filter(|f| f.collides).count(),
            self.counted().filter(|f| f.loads).count(),
            self.launched(),
        )
    }
}

/// All `.md` files under `dir`, as paths relative to it, sorted.
fn agent_files(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {dir:?}: {e}"));
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                let rel = path.strip_prefix(root).unwrap();
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A path from `--json`, comparable with the ones this test built (both canonical).
fn same_file(json_path: &str, ours: &Path) -> bool {
    let theirs = Path::new(json_path);
    theirs == ours || theirs.canonicalize().is_ok_and(|p| p == ours)
}

/// Scores one collection: `files` are (relative path, text) under `agents_dir`, `report` is
/// the output of `cadre agents --json` for a HOME holding exactly those files.
fn evaluate(
    dialect: Dialect,
    name: &str,
    rule: OwnRule,
    agents_dir: &Path,
    files: &[(String, String)],
    report: &Value,
) -> CollectionReport {
    let empty = Vec::new();
    let list = |key: &str| report[key].as_array().unwrap_or(&empty);
    let (roles, blocked, diagnostics) = (list("roles"), list("blocked"), list("diagnostics"));
    let mut outcomes: Vec<FileOutcome> = files
        .iter()
        .map(|(rel, text)| {
            let stem = Path::new(rel)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let path = agents_dir.join(rel);
            let of_file = |v: &&Value| v["file"].as_str().is_some_and(|f| same_file(f, &path));
            let mut outcome = FileOutcome {
                rel: rel.clone(),
                own_name: own_tool::loaded_name(rule, &stem, text),
                ..FileOutcome::default()
            };
            for role in roles.iter().filter(of_file) {
                outcome.loads = true;
                outcome.launches |= role["launchable"].as_bool() == Some(true);
                for problem in role["problems"].as_array().unwrap_or(&empty) {
                    outcome
                        .why
                        .push(format!("problem: {}", problem.as_str().unwrap_or("?")));
                }
            }
            for entry in blocked.iter().filter(of_file) {
                outcome.why.push(format!(
                    "blocked `{}`: {}",
                    entry["name"].as_str().unwrap_or("?"),
                    entry["reason"].as_str().unwrap_or("?")
                ));
            }
            for d in diagnostics.iter().filter(of_file) {
                let line = d["line"]
                    .as_u64()
                    .map(|l| format!(":{l}"))
                    .unwrap_or_default();
                outcome.why.push(format!(
                    "{} {}{line}: {}",
                    d["severity"].as_str().unwrap_or("?"),
                    d["kind"].as_str().unwrap_or("?"),
                    d["message"].as_str().unwrap_or("?")
                ));
            }
            outcome
        })
        .collect();
    let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
    for name in outcomes.iter().filter_map(|o| o.own_name.as_deref()) {
        *by_name.entry(name).or_default() += 1;
    }
    let colliding: BTreeSet<String> = by_name
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(name, _)| name.to_string())
        .collect();
    for outcome in &mut outcomes {
        outcome.collides = outcome
            .own_name
            .as_ref()
            .is_some_and(|n| colliding.contains(n));
    }
    CollectionReport {
        dialect,
        name: name.to_string(),
        files: outcomes,
    }
}

/// Runs `cadre agents --json` over one collection copied into a fresh HOME.
fn run_collection(dialect: Dialect, name: &str, rule: OwnRule) -> CollectionReport {
    let source = corpus_root().join(dialect.dir()).join(name).join("agents");
    let fixture = Fixture::new();
    let agents_dir = fixture.user_home.join(dialect.agents_dir());
    copy_tree(&source, &agents_dir);
    let files: Vec<(String, String)> = agent_files(&source)
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(source.join(&rel)).unwrap();
            (rel, String::from_utf8_lossy(&bytes).into_owned())
        })
        .collect();
    let out = fixture.run(&["agents", "--json"]);
    assert!(
        out.success(),
        "cadre agents --json failed for {name}: {:?}\n{}",
        out.code,
        out.stderr
    );
    let report: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "cadre agents --json for {name} is not JSON ({e}):\n{}",
            out.stdout
        )
    });
    evaluate(dialect, name, rule, &agents_dir, &files, &report)
}

/// The table, the collisions and, per dialect, the share and the files that fail.
fn summary(reports: &[CollectionReport]) -> (String, Vec<(Dialect, f64)>) {
    let mut text = format!(
        "{:<46} {:>5} {:>8} {:>7} {:>6} {:>8}\n",
        "collection", "files", "loadable", "collide", "loads", "launches"
    );
    let mut shares = Vec::new();
    for dialect in [Dialect::Claude, Dialect::Pi] {
        let of: Vec<&CollectionReport> = reports.iter().filter(|r| r.dialect == dialect).collect();
        if of.is_empty() {
            continue;
        }
        for report in &of {
            text.push_str(&report.row());
            text.push('\n');
        }
        let counted: usize = of.iter().map(|r| r.counted().count()).sum();
        let launched: usize = of.iter().map(|r| r.launched()).sum();
        let share = if counted == 0 {
            0.0
        } else {
            launched as f64 / counted as f64
        };
        text.push_str(&format!(
            "{}: {launched} of {counted} loadable files launch ({:.1}%)\n",
            dialect.dir(),
            share * 100.0
        ));
        shares.push((dialect, share));
    }
    for report in reports {
        for f in report.loadable().filter(|f| f.collides) {
            text.push_str(&format!(
                "collision (expected to block): {}/{} is `{}`; launches: {}\n",
                report.name,
                f.rel,
                f.own_name.as_deref().unwrap_or(""),
                f.launches
            ));
        }
    }
    for report in reports {
        for f in report.counted().filter(|f| !f.launches) {
            text.push_str(&format!(
                "does not launch: {}/{} (loads: {})\n",
                report.name, f.rel, f.loads
            ));
            for why in &f.why {
                text.push_str(&format!("    {why}\n"));
            }
        }
    }
    (text, shares)
}

#[test]
fn the_corpus_table_names_every_collection_on_disk() {
    let mut on_disk = BTreeSet::new();
    for dialect in [Dialect::Claude, Dialect::Pi] {
        for entry in std::fs::read_dir(corpus_root().join(dialect.dir())).unwrap() {
            let dir = entry.unwrap().path();
            for needed in ["LICENSE", "SOURCE", "agents"] {
                assert!(dir.join(needed).exists(), "{dir:?} has no {needed}");
            }
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            on_disk.insert((dialect, name));
        }
    }
    let listed: BTreeSet<(Dialect, String)> = COLLECTIONS
        .iter()
        .map(|(d, n, _)| (*d, n.to_string()))
        .collect();
    assert_eq!(on_disk, listed);
}

#[test]
fn own_tool_rules_match_the_loaders_they_restate() {
    use own_tool::loaded_name;
    let cases: &[(OwnRule, &str, Option<&str>)] = &[
        (
            OwnRule::ClaudeCode,
            "---\nname: a\ndescription: d\n---\nbody",
            Some("a"),
        ),
        // A `: ` inside a value breaks YAML; Claude Code's retry quotes it.
        (
            OwnRule::ClaudeCode,
            "---\nname: a\ndescription: Use when: x\n---\n",
            Some("a"),
        ),
        (
            OwnRule::ClaudeCode,
            "---\nname: a\ndescription: **Bold** lead\n---\n",
            Some("a"),
        ),
        // The closing `---` need not be a line of its own.
        (
            OwnRule::ClaudeCode,
            "---\n\nname: a\ndescription: d\n------\nbody",
            Some("a"),
        ),
        (
            OwnRule::ClaudeCode,
            "\n---\nname: a\ndescription: d\n---\n",
            None,
        ),
        (OwnRule::ClaudeCode, "---\nname: a\n---\n", None),
        (
            OwnRule::ClaudeCode,
            "---\nname: [a]\ndescription: d\n---\n",
            None,
        ),
        (
            OwnRule::ClaudeCode,
            "---\nname: a\ndescription: \"\"\n---\n",
            None,
        ),
        (
            OwnRule::ClaudeCode,
            "# Title\n---\nname: a\ndescription: d\n---\n",
            None,
        ),
        (
            OwnRule::NameAndDescription,
            "---\ndescription: d\n---\nbody",
            None,
        ),
        (
            OwnRule::NameAndDescription,
            "---\nname: a\ndescription: d\n---\n",
            Some("a"),
        ),
        (
            OwnRule::NameDefaultsToStem,
            "---\ndescription: d\n---\nbody",
            Some("stem"),
        ),
        (
            OwnRule::NameDefaultsToStem,
            "---\nname: a\n---\nbody",
            Some("a"),
        ),
        (
            OwnRule::StemIsName,
            "---\nname: a\ndescription: d\n---\nbody",
            Some("stem"),
        ),
        (OwnRule::StemIsName, "---\ndescription: d\n---\n\n", None),
        (OwnRule::StemIsName, "---\nname: a\n---\nbody", None),
    ];
    for (rule, text, want) in cases {
        assert_eq!(
            loaded_name(*rule, "stem", text).as_deref(),
            *want,
            "{rule:?} on {text:?}"
        );
    }
    assert_eq!(
        own_tool::quote_problematic_values("name: a\ndescription: x: \"y\"\n  - z: w"),
        "name: a\ndescription: \"x: \\\"y\\\"\"\n  - z: w"
    );
}

/// The scoring against a hand-written `cadre agents --json` (the schema of issue 11).
#[test]
fn evaluate_reads_the_agents_json_schema() {
    let dir = Path::new("/h/.claude/agents");
    let file = |rel: &str, name: &str| {
        (
            rel.to_string(),
            format!("---\nname: {name}\ndescription: d\n---\nbody\n"),
        )
    };
    let files = vec![
        file("a.md", "alpha"),
        file("sub/b.md", "beta"),
        file("c.md", "gamma"),
        file("d1.md", "twin"),
        file("d2.md", "twin"),
        ("notes.md".to_string(), "no frontmatter\n".to_string()),
    ];
    let report = serde_json::json!({
        "trusted": false,
        "roles": [
            {"name": "general-purpose", "aliases": [], "layer": "built-in", "file": null,
             "description": "x", "tools": "all", "disallowedTools": [], "readonly": false,
             "shellPolicy": "default", "bashAllow": [],
             "model": {"requested": null, "resolved": null, "source": "parent",
                       "fallsBackToParent": true, "note": null},
             "launchable": true, "problems": [], "notes": [], "overrides": []},
            {"name": "alpha", "aliases": [], "layer": "user", "file": "/h/.claude/agents/a.md",
             "description": "d", "tools": ["read"], "disallowedTools": [], "readonly": false,
             "shellPolicy": "default", "bashAllow": ["git diff:*"],
             "model": {"requested": "sonnet", "resolved": "anthropic/claude-sonnet-4-6",
                       "source": "alias", "fallsBackToParent": false, "note": null},
             "launchable": true, "problems": [], "notes": ["dropped WebSearch"], "overrides": []},
            {"name": "beta", "aliases": [], "layer": "user", "file": "/h/.claude/agents/sub/b.md",
             "description": "d", "tools": "all", "disallowedTools": [], "readonly": false,
             "shellPolicy": "default", "bashAllow": [],
             "model": {"requested": null, "resolved": null, "source": "parent",
                       "fallsBackToParent": true, "note": null},
             "launchable": false, "problems": ["unknown tool(s) Frobnicate"], "notes": [],
             "overrides": []}
        ],
        "blocked": [
            {"name": "gamma", "layer": "user", "file": "/h/.claude/agents/c.md",
             "reason": "unknown key `tols`"},
            {"name": "twin", "layer": "user", "file": "/h/.claude/agents/d1.md",
             "reason": "defined by more than one file"}
        ],
        "diagnostics": [
            {"kind": "malformed", "severity": "error", "file": "/h/.claude/agents/c.md",
             "line": 3, "message": "unknown key `tols`"},
            {"kind": "note", "severity": "warning", "file": null, "line": null,
             "message": "unrelated"}
        ]
    });
    let scored = evaluate(
        Dialect::Claude,
        "sample",
        OwnRule::ClaudeCode,
        dir,
        &files,
        &report,
    );
    let by_rel = |rel: &str| scored.files.iter().find(|f| f.rel == rel).unwrap();
    assert_eq!(scored.files.len(), 6);
    assert_eq!(scored.loadable().count(), 5);
    assert_eq!(scored.counted().count(), 3);
    assert_eq!(scored.launched(), 1);
    assert!(by_rel("a.md").launches);
    assert!(by_rel("sub/b.md").loads && !by_rel("sub/b.md").launches);
    assert_eq!(
        by_rel("sub/b.md").why,
        ["problem: unknown tool(s) Frobnicate"]
    );
    assert!(!by_rel("c.md").loads);
    assert_eq!(
        by_rel("c.md").why,
        [
            "blocked `gamma`: unknown key `tols`",
            "error malformed:3: unknown key `tols`"
        ]
    );
    assert!(by_rel("d1.md").collides && by_rel("d2.md").collides);
    assert!(by_rel("notes.md").own_name.is_none());
    let (text, shares) = summary(&[scored]);
    assert_eq!(shares.len(), 1);
    assert!((shares[0].1 - 1.0 / 3.0).abs() < 1e-9, "{text}");
    assert!(
        text.contains("does not launch: sample/c.md (loads: false)"),
        "{text}"
    );
    assert!(
        text.contains("collision (expected to block): sample/d1.md"),
        "{text}"
    );
}

/// The real corpus: at least 95% of the files Claude Code (or the Pi package) would load must
/// load and launch in cadre, per dialect.
#[test]
fn public_agent_files_load_and_launch() {
    let reports: Vec<CollectionReport> = COLLECTIONS
        .iter()
        .map(|(dialect, name, rule)| run_collection(*dialect, name, *rule))
        .collect();
    for report in &reports {
        assert!(
            report.counted().count() > 0,
            "{}: no file counts as loadable; the corpus or the rule is broken",
            report.name
        );
    }
    let (text, shares) = summary(&reports);
    println!("{text}");
    assert_eq!(shares.len(), 2, "{text}");
    for (dialect, share) in shares {
        assert!(
            share >= GOAL,
            "{}: {:.1}% of loadable files launch, the goal is {:.0}% (table and failing files above)",
            dialect.dir(),
            share * 100.0,
            GOAL * 100.0
        );
    }
}
