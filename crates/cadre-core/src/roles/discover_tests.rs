//! T2, T3, T4: layer precedence, overrides, blocking, unreadable layers and trust.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::roles::ToolList;

/// A user home, a cadre home and a git project with `a/b` below its root.
struct Fixture {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    cadre_home: PathBuf,
    root: PathBuf,
    cwd: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let cadre_home = tmp.path().join("cadre");
        let root = tmp.path().join("repo");
        let cwd = root.join("a/b");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        Fixture {
            _tmp: tmp,
            home,
            cadre_home,
            root,
            cwd,
        }
    }

    fn opts(&self, trusted: bool) -> DiscoverOptions {
        DiscoverOptions {
            cadre_home: CadreHome::new(&self.cadre_home),
            home_dir: Some(self.home.clone()),
            cwd: self.cwd.clone(),
            trust: if trusted {
                ProjectTrust::Trusted
            } else {
                ProjectTrust::Untrusted {
                    reason: "not trusted for the test".into(),
                }
            },
        }
    }

    fn roster(&self) -> Roster {
        discover(&self.opts(true))
    }
}

fn write(path: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

/// A valid cadre role file `<dir>/<name>.md` whose description says where it is.
fn role(dir: &Path, name: &str, desc: &str) -> PathBuf {
    write(
        &dir.join(format!("{name}.md")),
        &format!("---\nname: {name}\ndescription: {desc}\n---\nPrompt of {desc}.\n"),
    )
}

fn desc<'a>(roster: &'a Roster, name: &str) -> &'a str {
    &roster.get(name).unwrap().def.description
}

#[test]
fn builtins_alone() {
    let f = Fixture::new();
    let r = f.roster();
    assert_eq!(
        r.names(),
        [
            "general-purpose",
            "Explore",
            "Plan",
            "research",
            "code",
            "review",
            "verification",
            "advisor",
            "fork"
        ]
    );
    assert!(r.blocked.is_empty());
    assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    assert!(r.trusted && r.untrusted_reason.is_none());
    let explore = r.get("explorer").unwrap();
    assert_eq!(explore.def.name, "Explore");
    assert_eq!(explore.layer, Layer::Builtin);
    assert_eq!(explore.file, None);
    assert_eq!(r.get("EXPLORE").unwrap().def.name, "Explore");
    assert_eq!(r.get("implementer").unwrap().def.name, "code");
    assert_eq!(r.get("general").unwrap().def.name, "general-purpose");
    assert_eq!(r.get("Reviewer").unwrap().def.name, "review");
}

#[test]
fn builtins_roster_matches_an_empty_discovery() {
    let f = Fixture::new();
    assert_eq!(Roster::builtins().roles, f.roster().roles);
    let opts = DiscoverOptions::new(CadreHome::new(&f.cadre_home), &f.cwd, ProjectTrust::Trusted);
    assert_eq!(opts.cwd, f.cwd);
}

#[test]
fn unknown_names_list_the_known_ones() {
    let r = Fixture::new().roster();
    match r.get("scout") {
        Err(RoleLookupError::Unknown { name, known }) => {
            assert_eq!(name, "scout");
            assert!(known.contains(&"Explore".to_string()) && known.len() == 9);
        }
        other => panic!("{other:?}"),
    }
    let e = r.get("scout").unwrap_err().to_string();
    assert!(
        e.contains("unknown agent type `scout`") && e.contains("general-purpose"),
        "{e}"
    );
}

#[test]
fn user_replaces_builtin_whole_and_reports_it() {
    let f = Fixture::new();
    let file = write(
        &f.cadre_home.join("agents/code.md"),
        "---\nname: code\ndescription: My coder.\ntools: read\n---\nMine.\n",
    );
    let r = f.roster();
    let code = r.get("implementer").unwrap();
    assert_eq!(code.layer, Layer::User);
    assert_eq!(code.file.as_deref(), Some(file.as_path()));
    // Whole replacement: nothing of the built-in (its edit/write tools) survives.
    assert_eq!(code.def.tools, ToolList::Named(vec!["read".into()]));
    assert_eq!(code.def.prompt, "Mine.");
    assert_eq!(
        code.overrides,
        vec![Origin {
            layer: Layer::Builtin,
            file: None
        }]
    );
    let d: Vec<_> = r
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::Override)
        .collect();
    assert_eq!(d.len(), 1);
    assert!(
        d[0].message.contains("overrides built-in"),
        "{}",
        d[0].message
    );
    // Roster order keeps the built-in slot.
    assert_eq!(r.names()[4], "code");
}

#[test]
fn user_directories_cadre_over_pi_over_claude() {
    let f = Fixture::new();
    let claude = write(
        &f.home.join(".claude/agents/x.md"),
        "---\nname: x\ndescription: claude\n---\n",
    );
    let pi = role(&f.home.join(".pi/agent/agents"), "x", "pi");
    let cadre = role(&f.cadre_home.join("agents"), "x", "cadre");
    let r = f.roster();
    let x = r.get("x").unwrap();
    assert_eq!(x.def.description, "cadre");
    assert_eq!(
        x.overrides,
        vec![
            Origin {
                layer: Layer::User,
                file: Some(claude)
            },
            Origin {
                layer: Layer::User,
                file: Some(pi.clone())
            },
        ]
    );
    std::fs::remove_file(x.file.clone().unwrap()).unwrap();
    assert_eq!(desc(&f.roster(), "x"), "pi");
    std::fs::remove_file(&pi).unwrap();
    assert_eq!(desc(&f.roster(), "x"), "claude");
    assert_eq!(cadre.file_name().unwrap(), "x.md");
}

#[test]
fn project_over_user() {
    let f = Fixture::new();
    role(&f.cadre_home.join("agents"), "x", "user");
    let p = role(&f.root.join(".cadre/agents"), "x", "project");
    let r = f.roster();
    let x = r.get("x").unwrap();
    assert_eq!(
        (x.layer, x.def.description.as_str()),
        (Layer::Project, "project")
    );
    assert_eq!(x.file.as_deref(), Some(p.as_path()));
    assert_eq!(x.overrides.len(), 1);
    assert_eq!(x.overrides[0].layer, Layer::User);
}

#[test]
fn nearest_project_directory_wins() {
    let f = Fixture::new();
    role(&f.root.join(".cadre/agents"), "x", "root");
    role(&f.root.join("a/.pi/agents"), "x", "middle");
    write(
        &f.cwd.join(".claude/agents/anything.md"),
        "---\nname: x\ndescription: cwd\n---\n",
    );
    let r = f.roster();
    assert_eq!(desc(&r, "x"), "cwd");
    assert_eq!(r.get("x").unwrap().overrides.len(), 2);
    // Directories outside the project (above the git root) are never searched.
    role(
        &f.root.parent().unwrap().join(".cadre/agents"),
        "y",
        "outside",
    );
    assert!(matches!(
        f.roster().get("y"),
        Err(RoleLookupError::Unknown { .. })
    ));
}

#[test]
fn one_directory_cadre_over_pi_over_claude() {
    let f = Fixture::new();
    write(
        &f.cwd.join(".claude/agents/x.md"),
        "---\nname: x\ndescription: claude\n---\n",
    );
    role(&f.cwd.join(".pi/agents"), "x", "pi");
    role(&f.cwd.join(".cadre/agents"), "x", "cadre");
    assert_eq!(desc(&f.roster(), "x"), "cadre");
    std::fs::remove_file(f.cwd.join(".cadre/agents/x.md")).unwrap();
    assert_eq!(desc(&f.roster(), "x"), "pi");
}

#[test]
fn untrusted_project_contributes_nothing_and_says_why() {
    let f = Fixture::new();
    role(&f.root.join(".cadre/agents"), "code", "project code");
    role(&f.cwd.join(".pi/agents"), "extra", "project extra");
    // Even a malformed project file is not read.
    write(&f.root.join(".claude/agents/bad.md"), "nonsense");
    let r = discover(&f.opts(false));
    assert!(!r.trusted);
    assert_eq!(
        r.untrusted_reason.as_deref(),
        Some("not trusted for the test")
    );
    assert_eq!(r.get("code").unwrap().layer, Layer::Builtin);
    assert!(matches!(
        r.get("extra"),
        Err(RoleLookupError::Unknown { .. })
    ));
    assert!(r.blocked.is_empty());
    let skipped: Vec<_> = r
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::Untrusted)
        .collect();
    assert_eq!(skipped.len(), 3, "{:?}", r.diagnostics);

    // Trusted, the same tree loads.
    let r = f.roster();
    assert_eq!(r.get("code").unwrap().layer, Layer::Project);
    assert_eq!(desc(&r, "extra"), "project extra");
}

#[test]
fn trust_from_the_store_or_the_flag() {
    let f = Fixture::new();
    let store = TrustStore::load_from(&f.cadre_home.join("trust.json")).unwrap();
    match ProjectTrust::from_store(&store, &f.root, false) {
        ProjectTrust::Untrusted { reason } => {
            assert!(
                reason.contains("cadre trust") && reason.contains("--trust"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(ProjectTrust::from_store(&store, &f.root, true).is_trusted());
    let mut store = store;
    store.trust(&f.root).unwrap();
    assert!(ProjectTrust::from_store(&store, &f.root.canonicalize().unwrap(), false).is_trusted());
}

#[test]
fn malformed_file_blocks_its_name_at_its_layer() {
    let f = Fixture::new();
    role(&f.cadre_home.join("agents"), "code", "user code");
    let bad = write(
        &f.root.join(".cadre/agents/code.md"),
        "---\nname: code\ndescription: d\ntool: read\n---\n",
    );
    let r = f.roster();
    match r.get("implementer") {
        Err(RoleLookupError::Blocked { name, reason, file }) => {
            assert_eq!(name, "code");
            assert_eq!(file, bad);
            assert!(reason.contains("unknown key `tool`"), "{reason}");
        }
        other => panic!("no fall back to user or built-in code: {other:?}"),
    }
    assert!(!r.names().contains(&"code"));
    assert_eq!(r.blocked.len(), 1);
    assert_eq!(r.blocked[0].layer, Layer::Project);
    let malformed: Vec<_> = r
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::Malformed)
        .collect();
    assert_eq!(malformed.len(), 1);
    assert_eq!(malformed[0].file.as_deref(), Some(bad.as_path()));
    assert!(
        r.diagnostics
            .iter()
            .any(|d| d.message.contains("does not fall back"))
    );
    // Other roles are unaffected.
    assert_eq!(r.get("Explore").unwrap().layer, Layer::Builtin);
    assert!(r.summary().contains("- code: unavailable"));
}

#[test]
fn a_higher_valid_file_replaces_a_lower_malformed_one() {
    let f = Fixture::new();
    write(&f.cadre_home.join("agents/x.md"), "---\nname: x\n---\n");
    role(&f.root.join(".cadre/agents"), "x", "project x");
    let r = f.roster();
    let x = r.get("x").unwrap();
    assert_eq!(x.def.description, "project x");
    assert_eq!(x.overrides[0].layer, Layer::User);
    assert!(r.blocked.is_empty());
    assert!(
        r.diagnostics
            .iter()
            .any(|d| d.kind == DiagnosticKind::Malformed)
    );
}

#[test]
fn malformed_variants_block() {
    let f = Fixture::new();
    let dir = f.cadre_home.join("agents");
    write(
        &dir.join("mismatch.md"),
        "---\nname: other\ndescription: d\n---\n",
    );
    write(&dir.join("nofront.md"), "just text\n");
    write(&dir.join("badyaml.md"), "---\nname: [\n---\n");
    write(
        &dir.join("huge.md"),
        &format!(
            "---\nname: huge\ndescription: d\n---\n{}",
            "x".repeat(MAX_FILE_BYTES)
        ),
    );
    std::fs::write(dir.join("binary.md"), [0xff, 0xfe, 0x00]).unwrap();
    let r = f.roster();
    for (name, needle) in [
        ("mismatch", "does not match"),
        ("nofront", "no YAML frontmatter"),
        ("badyaml", "invalid YAML"),
        ("huge", "larger than the 65536-byte limit"),
        ("binary", "UTF-8"),
    ] {
        match r.get(name) {
            Err(RoleLookupError::Blocked { reason, .. }) => {
                assert!(reason.contains(needle), "{name}: {reason}")
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // A renamed file does not keep answering to its old name.
    assert!(matches!(
        r.get("other"),
        Err(RoleLookupError::Unknown { .. })
    ));
}

#[test]
fn two_files_claiming_one_name_in_one_directory_block_it() {
    let f = Fixture::new();
    let dir = f.cadre_home.join("agents");
    write(
        &dir.join("explore.md"),
        "---\nname: explore\ndescription: one\n---\n",
    );
    write(
        &dir.join("explorer.md"),
        "---\nname: explorer\ndescription: two\n---\n",
    );
    let r = f.roster();
    match r.get("Explore") {
        Err(RoleLookupError::Blocked { reason, .. }) => {
            assert!(reason.contains("more than one file"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn alias_named_file_replaces_the_builtin() {
    let f = Fixture::new();
    role(&f.cadre_home.join("agents"), "explorer", "my explorer");
    let r = f.roster();
    for q in ["Explore", "explore", "EXPLORER"] {
        assert_eq!(desc(&r, q), "my explorer");
    }
    assert_eq!(r.get("explore").unwrap().overrides[0].layer, Layer::Builtin);
    assert_eq!(r.names().len(), 9);
}

#[test]
fn claude_code_files_in_claude_dirs() {
    let f = Fixture::new();
    write(
        &f.root.join(".claude/agents/reviewer-agent.md"),
        "---\nname: sec-review\ndescription: Security review.\ntools: Read, Grep, Glob\ncolor: red\n---\nReview.\n",
    );
    let hooked = write(
        &f.root.join(".claude/agents/hooked-file.md"),
        "---\nname: hooked\ndescription: d\nhooks:\n  PreToolUse: []\n---\n",
    );
    let r = f.roster();
    let sec = r.get("sec-review").unwrap();
    assert_eq!(sec.def.tools.display(), "read, grep, find");
    assert_eq!(sec.def.dialect, Some(Dialect::ClaudeCode));
    assert!(matches!(
        r.get("reviewer-agent"),
        Err(RoleLookupError::Unknown { .. })
    ));
    // A malformed Claude Code file blocks the name it declares.
    match r.get("hooked") {
        Err(RoleLookupError::Blocked { file, reason, .. }) => {
            assert_eq!(file, hooked);
            assert!(reason.contains("`hooks` is not supported"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // cadre keys in a Claude Code directory are unknown there.
    write(
        &f.root.join(".claude/agents/z.md"),
        "---\nname: z\ndescription: d\nreadonly: true\n---\n",
    );
    assert!(matches!(
        f.roster().get("z"),
        Err(RoleLookupError::Blocked { .. })
    ));
}

#[test]
fn claude_notes_become_diagnostics() {
    let f = Fixture::new();
    write(
        &f.home.join(".claude/agents/w.md"),
        "---\nname: w\ndescription: d\ntools: Read, WebSearch\n---\n",
    );
    let r = f.roster();
    assert_eq!(r.get("w").unwrap().def.tools.display(), "read");
    assert!(
        r.diagnostics
            .iter()
            .any(|d| d.kind == DiagnosticKind::Note && d.message.contains("WebSearch"))
    );
}

#[test]
fn other_files_are_ignored() {
    let f = Fixture::new();
    let dir = f.cadre_home.join("agents");
    write(&dir.join("notes.txt"), "not a role");
    write(&dir.join("README"), "not a role");
    std::fs::create_dir_all(dir.join("folder.md")).unwrap();
    let r = f.roster();
    assert!(
        r.blocked.is_empty() && r.diagnostics.is_empty(),
        "{:?}",
        r.diagnostics
    );
}

#[test]
fn a_file_where_a_directory_should_be_blocks_lower_layers() {
    let f = Fixture::new();
    role(&f.home.join(".pi/agent/agents"), "x", "pi x");
    write(&f.cadre_home.join("agents"), "I am a file");
    role(&f.root.join(".cadre/agents"), "y", "project y");
    let r = f.roster();
    for name in ["x", "code", "Explore"] {
        match r.get(name) {
            Err(RoleLookupError::Blocked { reason, file, .. }) => {
                assert!(reason.contains("cannot be read"), "{reason}");
                assert_eq!(file, f.cadre_home.join("agents"));
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // Higher layers still load.
    assert_eq!(desc(&r, "y"), "project y");
    assert!(
        r.diagnostics
            .iter()
            .any(|d| d.kind == DiagnosticKind::UnreadableDir)
    );
}

#[test]
fn unreadable_directory_blocks_every_lower_layer() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new();
    role(&f.home.join(".pi/agent/agents"), "x", "pi x");
    let dir = f.cadre_home.join("agents");
    role(&dir, "mine", "mine");
    role(&f.root.join(".cadre/agents"), "y", "project y");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o000)).unwrap();
    let unreadable = std::fs::read_dir(&dir).is_err();
    let r = f.roster();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    if !unreadable {
        eprintln!(
            "note: running with privileges that read a mode-000 directory; assertion skipped"
        );
        return;
    }
    for name in ["x", "code", "general-purpose"] {
        assert!(
            matches!(r.get(name), Err(RoleLookupError::Blocked { .. })),
            "{name}"
        );
    }
    assert!(matches!(
        r.get("mine"),
        Err(RoleLookupError::Unknown { .. })
    ));
    assert_eq!(desc(&r, "y"), "project y");
}

#[test]
fn working_in_the_home_directory_reads_a_directory_once() {
    let f = Fixture::new();
    // CADRE_HOME/agents is also the project's `.cadre/agents` when cwd is the home.
    let opts = DiscoverOptions {
        cadre_home: CadreHome::new(f.root.join(".cadre")),
        cwd: f.root.clone(),
        ..f.opts(true)
    };
    role(&f.root.join(".cadre/agents"), "x", "x");
    let r = discover(&opts);
    let x = r.get("x").unwrap();
    assert_eq!(x.layer, Layer::User);
    assert!(x.overrides.is_empty());
}

#[test]
fn agent_dirs_are_listed_lowest_first() {
    let f = Fixture::new();
    let dirs: Vec<(Layer, PathBuf, Dialect)> = agent_dirs(&f.opts(true))
        .into_iter()
        .map(|d| (d.layer, d.dir, d.dialect))
        .collect();
    let expect = vec![
        (
            Layer::User,
            f.home.join(".claude/agents"),
            Dialect::ClaudeCode,
        ),
        (Layer::User, f.home.join(".pi/agent/agents"), Dialect::Pi),
        (Layer::User, f.cadre_home.join("agents"), Dialect::Cadre),
        (
            Layer::Project,
            f.root.join(".claude/agents"),
            Dialect::ClaudeCode,
        ),
        (Layer::Project, f.root.join(".pi/agents"), Dialect::Pi),
        (Layer::Project, f.root.join(".cadre/agents"), Dialect::Cadre),
        (
            Layer::Project,
            f.root.join("a/.claude/agents"),
            Dialect::ClaudeCode,
        ),
        (Layer::Project, f.root.join("a/.pi/agents"), Dialect::Pi),
        (
            Layer::Project,
            f.root.join("a/.cadre/agents"),
            Dialect::Cadre,
        ),
        (
            Layer::Project,
            f.cwd.join(".claude/agents"),
            Dialect::ClaudeCode,
        ),
        (Layer::Project, f.cwd.join(".pi/agents"), Dialect::Pi),
        (Layer::Project, f.cwd.join(".cadre/agents"), Dialect::Cadre),
    ];
    assert_eq!(dirs, expect);
    // Without a home directory the ~/.pi and ~/.claude sources are skipped.
    let opts = DiscoverOptions {
        home_dir: None,
        ..f.opts(true)
    };
    assert_eq!(agent_dirs(&opts)[0].dir, f.cadre_home.join("agents"));
}

#[test]
fn summary_lists_roles_for_the_tool_description() {
    let f = Fixture::new();
    write(
        &f.cadre_home.join("agents/pinned.md"),
        "---\nname: pinned\ndescription: |\n  Multi\n  line.\nmodel: prov/m1\ntools: read\nreadonly: true\n---\n",
    );
    let s = f.roster().summary();
    assert!(
        s.contains("- Explore (also: explore, explorer): Fast read-only"),
        "{s}"
    );
    assert!(
        s.contains("[tools: read, grep, find, ls, bash, mcp__*; read-only]"),
        "{s}"
    );
    assert!(s.contains("- general-purpose (also: general): "), "{s}");
    assert!(s.contains("[tools: all]"), "{s}");
    assert!(
        s.contains("- pinned: Multi line. [tools: read; read-only; model: prov/m1]"),
        "{s}"
    );
    assert_eq!(s.lines().count(), 10);
}

#[test]
fn a_malformed_alias_file_blocks_the_builtin_it_names() {
    let f = Fixture::new();
    write(
        &f.root.join(".pi/agents/implementer.md"),
        "---\nname: implementer\n---\n",
    );
    let r = f.roster();
    for q in ["code", "implementer", "CODE"] {
        assert!(
            matches!(r.get(q), Err(RoleLookupError::Blocked { .. })),
            "{q}"
        );
    }
}

#[test]
fn a_dangling_symlink_is_malformed_not_skipped() {
    let f = Fixture::new();
    let dir = f.cadre_home.join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(dir.join("missing-target"), dir.join("code.md")).unwrap();
    match f.roster().get("code") {
        Err(RoleLookupError::Blocked { reason, .. }) => {
            assert!(reason.contains("cannot read"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn subfolders_are_read_recursively_and_one_name_twice_in_a_tree_blocks_it() {
    let f = Fixture::new();
    let dir = f.root.join(".claude/agents");
    let claude = |name: &str| format!("---\nname: {name}\ndescription: {name} role\n---\nBody\n");
    write(&dir.join("quality/reviewer.md"), &claude("deep-reviewer"));
    write(&dir.join("lang/rust/expert.md"), &claude("rust-expert"));
    write(&dir.join("a/twin.md"), &claude("twin"));
    write(&dir.join("b/twin-again.md"), &claude("twin"));
    // Hidden folders (a checkout's `.git`) are not entered; a README is not an agent.
    write(&dir.join(".git/x.md"), &claude("hidden"));
    write(&dir.join("README.md"), "# Agents\n\nA collection.\n");
    // A link back up the tree is read once.
    std::os::unix::fs::symlink(&dir, dir.join("lang/loop")).unwrap();
    let r = f.roster();
    assert_eq!(desc(&r, "deep-reviewer"), "deep-reviewer role");
    assert_eq!(desc(&r, "rust-expert"), "rust-expert role");
    match r.get("twin") {
        Err(RoleLookupError::Blocked { reason, .. }) => {
            assert!(reason.contains("more than one file"), "{reason}");
            assert!(reason.contains("twin-again.md"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        r.get("hidden"),
        Err(RoleLookupError::Unknown { .. })
    ));
    let readme = r
        .diagnostics
        .iter()
        .find(|d| d.file.as_deref() == Some(dir.join("README.md").as_path()))
        .unwrap();
    assert_eq!(readme.kind, DiagnosticKind::Note);
    assert!(!readme.is_error());
    assert!(readme.message.contains("not an agent file"), "{readme:?}");
    // Each role appears once although the loop reaches the tree twice.
    assert_eq!(
        r.roles
            .iter()
            .filter(|x| x.def.name == "rust-expert")
            .count(),
        1
    );
}

#[test]
fn malformed_files_report_every_problem_with_file_and_line() {
    let f = Fixture::new();
    let file = write(
        &f.root.join(".claude/agents/bad.md"),
        "---\nname: bad\ndescription: d\ntool: Read\ncategory: x\nmaxTurns: 0\n---\n",
    );
    let r = f.roster();
    let mine: Vec<&Diagnostic> = r
        .diagnostics
        .iter()
        .filter(|d| d.file.as_deref() == Some(file.as_path()))
        .collect();
    let errors: Vec<(Option<usize>, &str)> = mine
        .iter()
        .filter(|d| d.is_error())
        .map(|d| (d.line, d.message.as_str()))
        .collect();
    assert_eq!(errors.len(), 2, "{mine:?}");
    assert_eq!(errors[0].0, Some(4));
    assert!(
        errors[0]
            .1
            .starts_with(&format!("{}:4: unknown key `tool`", file.display())),
        "{errors:?}"
    );
    assert_eq!(errors[1].0, Some(6));
    let notes: Vec<_> = mine.iter().filter(|d| !d.is_error()).collect();
    assert_eq!(notes.len(), 1, "{mine:?}");
    assert_eq!(notes[0].line, Some(5));
    match r.get("bad") {
        Err(RoleLookupError::Blocked { reason, .. }) => {
            assert!(reason.contains("line 4: unknown key `tool`"), "{reason}");
            assert!(reason.contains("line 6: bad `maxTurns`"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn pi_directories_read_pi_package_files() {
    let f = Fixture::new();
    write(
        &f.home.join(".pi/agent/agents/auditor.md"),
        "---\ndescription: Audits.\nmax_turns: 5\nfallbackModels: a/b\n---\nAudit.\n",
    );
    write(
        &f.root.join(".pi/agents/explore.md"),
        "---\nname: Explore\ndescription: Project explorer.\ntools: read, grep\n---\nLook.\n",
    );
    let r = f.roster();
    let auditor = r.get("auditor").unwrap();
    assert_eq!(auditor.def.max_turns, Some(5));
    assert_eq!(auditor.def.dialect, Some(Dialect::Pi));
    let explore = r.get("explore").unwrap();
    assert_eq!(explore.def.description, "Project explorer.");
    assert_eq!(explore.layer, Layer::Project);
}

#[test]
fn a_project_link_out_of_the_project_is_not_followed() {
    let f = Fixture::new();
    let outside = f.home.join("elsewhere");
    write(
        &outside.join("x.md"),
        "---\nname: x\ndescription: outside\n---\nBody\n",
    );
    let dir = f.root.join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("linked")).unwrap();
    // Inside the project a link is fine.
    write(
        &f.root.join("shared/y.md"),
        "---\nname: y\ndescription: inside\n---\nBody\n",
    );
    std::os::unix::fs::symlink(f.root.join("shared"), dir.join("shared")).unwrap();
    let r = f.roster();
    assert!(matches!(r.get("x"), Err(RoleLookupError::Unknown { .. })));
    assert_eq!(desc(&r, "y"), "inside");
    assert!(
        r.diagnostics
            .iter()
            .any(|d| d.message.contains("leads outside the project")),
        "{:?}",
        r.diagnostics
    );
    // The same link in a user directory is the user's own choice and is followed.
    let user = f.home.join(".claude/agents");
    std::fs::create_dir_all(&user).unwrap();
    std::os::unix::fs::symlink(&outside, user.join("linked")).unwrap();
    assert_eq!(desc(&f.roster(), "x"), "outside");
}
