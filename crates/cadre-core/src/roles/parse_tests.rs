//! T1, T2, T3: every fail-closed rule of the role file format, in both dialects.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

fn doc(front: &str, body: &str) -> String {
    format!("---\n{front}\n---\n{body}")
}

fn cadre(front: &str) -> Result<RoleDef, RoleError> {
    parse_role(&doc(front, "Do the thing."), "r", Dialect::Cadre)
}

fn claude(front: &str) -> Result<RoleDef, RoleError> {
    parse_role(
        &doc(front, "Do the thing."),
        "file-stem",
        Dialect::ClaudeCode,
    )
}

const BASE: &str = "name: r\ndescription: A role.";

/// Parse `BASE` plus one extra line and expect a bad value for `key`.
fn expect_bad(extra: &str, key: &str) -> String {
    match cadre(&format!("{BASE}\n{extra}")) {
        Err(RoleError::BadValue { key: k, reason }) => {
            assert_eq!(k, key, "{extra}: {reason}");
            reason
        }
        other => panic!("{extra}: expected a bad `{key}`, got {other:?}"),
    }
}

#[test]
fn full_cadre_file_parses_every_key() {
    let front = "\
name: r
description: Reviews things.
tools: [read, grep, find, ls, bash]
disallowedTools: write, edit
model: anthropic/claude-x
fallbackModel: openai/gpt-y
thinking: high
skills: [code-review, rust_style]
readonly: true
shellPolicy: inspect
background: true
context: fresh
isolation: worktree
warningTurns: 30
warningIntervalTurns: 20
maxTurns: 60
graceTurns: 0
maxToolCalls: 100
softToolCalls: 80
toolBudgetBlock: read, grep
timeoutMs: 900000
bashTimeoutMs: 30000
oneShot: true
allowPlanFiles: true";
    let def = parse_role(&doc(front, "\n\nBody text.\n\n"), "r", Dialect::Cadre).unwrap();
    assert_eq!(def.name, "r");
    assert_eq!(def.description, "Reviews things.");
    assert_eq!(
        def.tools,
        ToolList::Named(vec![
            "read".into(),
            "grep".into(),
            "find".into(),
            "ls".into(),
            "bash".into()
        ])
    );
    assert_eq!(def.disallowed_tools, vec!["write", "edit"]);
    assert_eq!(def.model.as_deref(), Some("anthropic/claude-x"));
    assert_eq!(def.fallback_model.as_deref(), Some("openai/gpt-y"));
    assert_eq!(def.thinking, Some(ThinkingLevel::High));
    assert_eq!(def.skills, vec!["code-review", "rust_style"]);
    assert!(def.readonly && def.one_shot && def.allow_plan_files);
    assert_eq!(def.shell_policy, ShellPolicy::Inspect);
    assert_eq!(def.background, Some(true));
    assert_eq!(def.context, ContextMode::Fresh);
    assert_eq!(def.isolation, Isolation::Worktree);
    assert_eq!(def.warning_turns, Some(30));
    assert_eq!(def.warning_interval_turns, Some(20));
    assert_eq!(def.max_turns, Some(60));
    assert_eq!(def.grace_turns, Some(0));
    assert_eq!(def.max_tool_calls, Some(100));
    assert_eq!(def.soft_tool_calls, Some(80));
    assert_eq!(
        def.tool_budget_block,
        Some(ToolList::Named(vec!["read".into(), "grep".into()]))
    );
    assert_eq!(def.timeout_ms, Some(900_000));
    assert_eq!(def.bash_timeout_ms, Some(30_000));
    assert_eq!(def.prompt, "Body text.");
    assert_eq!(def.dialect, Some(Dialect::Cadre));
    assert!(def.notes.is_empty());
}

#[test]
fn minimal_file_takes_the_defaults() {
    let def = cadre(BASE).unwrap();
    assert_eq!(def.tools, ToolList::All);
    assert!(def.disallowed_tools.is_empty());
    assert_eq!(def.model, None);
    assert_eq!(def.thinking, None);
    assert!(!def.readonly && !def.one_shot && !def.allow_plan_files);
    assert_eq!(def.shell_policy, ShellPolicy::Unrestricted);
    assert_eq!(def.background, None);
    assert_eq!(def.context, ContextMode::Fresh);
    assert_eq!(def.isolation, Isolation::None);
    assert_eq!(def.tool_budget_block, None);
    assert_eq!(def.prompt, "Do the thing.");
}

#[test]
fn tools_accept_a_list_a_comma_string_and_star() {
    let t = |v: &str| cadre(&format!("{BASE}\ntools: {v}")).map(|d| d.tools);
    let named = |v: &[&str]| ToolList::Named(v.iter().map(|s| s.to_string()).collect());
    assert_eq!(
        t("read, grep,find ,ls").unwrap(),
        named(&["read", "grep", "find", "ls"])
    );
    assert_eq!(t("[read, grep]").unwrap(), named(&["read", "grep"]));
    assert_eq!(t("\"*\"").unwrap(), ToolList::All);
    assert_eq!(t("[\"*\"]").unwrap(), ToolList::All);
    // Trailing commas are tolerated; duplicates are folded.
    assert_eq!(t("read,,read,").unwrap(), named(&["read"]));
    // An empty list is a role with no tools, not "all".
    assert_eq!(t("[]").unwrap(), named(&[]));
    assert_eq!(t("\"\"").unwrap(), named(&[]));
    assert_eq!(
        t("read").unwrap().as_named(),
        Some(&["read".to_string()][..])
    );
    assert_eq!(ToolList::All.as_named(), None);
    assert!(ToolList::All.contains("anything") && !named(&["a"]).contains("b"));
}

#[test]
fn tool_list_values_are_checked() {
    assert!(expect_bad("tools: [read, \"*\"]", "tools").contains("stand alone"));
    assert!(expect_bad("tools: {read: true}", "tools").contains("a mapping"));
    assert!(expect_bad("tools: [read, 3]", "tools").contains("strings"));
    assert!(expect_bad("tools: [read, \"\"]", "tools").contains("empty"));
    assert!(expect_bad("tools: true", "tools").contains("a boolean"));
    assert!(expect_bad("tools: \"re ad\"", "tools").contains("whitespace"));
    assert!(expect_bad("disallowedTools: \"*\"", "disallowedTools").contains("every tool"));
    assert!(expect_bad("toolBudgetBlock: 5", "toolBudgetBlock").contains("a number"));
    assert_eq!(
        cadre(&format!("{BASE}\ntoolBudgetBlock: \"*\""))
            .unwrap()
            .tool_budget_block,
        Some(ToolList::All)
    );
}

#[test]
fn tool_limits_are_enforced() {
    let many: Vec<String> = (0..MAX_TOOLS + 1).map(|i| format!("t{i}")).collect();
    assert!(expect_bad(&format!("tools: {}", many.join(",")), "tools").contains("limit is 64"));
    let ok: Vec<String> = (0..MAX_TOOLS).map(|i| format!("t{i}")).collect();
    assert!(cadre(&format!("{BASE}\ntools: {}", ok.join(","))).is_ok());

    let long = "x".repeat(MAX_TOOL_NAME_CHARS + 1);
    assert!(expect_bad(&format!("tools: [{long}]"), "tools").contains("128"));
    let fits = "x".repeat(MAX_TOOL_NAME_CHARS);
    assert!(cadre(&format!("{BASE}\ntools: [{fits}]")).is_ok());
    assert!(expect_bad(&format!("disallowedTools: [{long}]"), "disallowedTools").contains("128"));
}

#[test]
fn unknown_keys_make_a_cadre_file_malformed() {
    for (key, hint) in [
        ("tool", Some("tools")),
        ("Tools", Some("tools")),
        ("disallowed_tools", Some("disallowedTools")),
        ("allowedTools", None),
        ("permissionMode", None),
        ("color", None),
        ("effort", None),
        ("hooks", None),
        ("review", None),
    ] {
        match cadre(&format!("{BASE}\n{key}: x")) {
            Err(RoleError::UnknownKey {
                key: k,
                dialect,
                hint: h,
            }) => {
                assert_eq!(k, key);
                assert_eq!(dialect, "cadre");
                match hint {
                    Some(near) => assert!(h.contains(near), "{key}: {h}"),
                    None => assert!(h.is_empty(), "{key}: {h}"),
                }
            }
            other => panic!("{key}: {other:?}"),
        }
    }
    // The message names the key and a likely fix, not the whole key set.
    let e = cadre(&format!("{BASE}\nmaxturns: 3"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "unknown key `maxturns` in a cadre role file (did you mean `maxTurns`?)"
    );
}

#[test]
fn portable_files_ignore_harmless_unknown_keys_and_refuse_capability_look_alikes() {
    // (dialect, key, loads)
    let cases = [
        (Dialect::ClaudeCode, "category", true),
        (Dialect::ClaudeCode, "version", true),
        (Dialect::ClaudeCode, "author", true),
        (Dialect::ClaudeCode, "tags", true),
        (Dialect::ClaudeCode, "thinking", true),
        (Dialect::ClaudeCode, "timeoutMs", true),
        (Dialect::ClaudeCode, "oneShot", true),
        (Dialect::ClaudeCode, "Tools", false),
        (Dialect::ClaudeCode, "tool", false),
        (Dialect::ClaudeCode, "allowed-tools", false),
        (Dialect::ClaudeCode, "allowed_tools", false),
        (Dialect::ClaudeCode, "disallowed_tools", false),
        (Dialect::ClaudeCode, "DisallowedTools", false),
        (Dialect::ClaudeCode, "permission_mode", false),
        (Dialect::ClaudeCode, "permisionMode", false),
        (Dialect::ClaudeCode, "readonly", false),
        (Dialect::ClaudeCode, "readOnly", false),
        (Dialect::ClaudeCode, "shellPolicy", false),
        (Dialect::ClaudeCode, "isolaton", false),
        (Dialect::ClaudeCode, "mcp_servers", false),
        (Dialect::ClaudeCode, "Hooks", false),
        (Dialect::Pi, "category", true),
        (Dialect::Pi, "author", true),
        (Dialect::Pi, "Tools", false),
        (Dialect::Pi, "read_only", false),
        (Dialect::Pi, "allowed-tools", false),
        (Dialect::Pi, "denyTools", false),
        (Dialect::Pi, "tool_permissions", false),
    ];
    for (dialect, key, loads) in cases {
        let text = doc(&format!("name: r\ndescription: d\n{key}: x"), "body");
        match parse_role_file(&text, "r", dialect) {
            Parsed::Role { notes, .. } => {
                assert!(loads, "{dialect:?} {key} loaded");
                assert_eq!(notes.len(), 1, "{key}: {notes:?}");
                assert!(notes[0].message.contains("ignored"), "{notes:?}");
                assert_eq!(notes[0].line, Some(4), "{key}");
            }
            Parsed::Malformed { problems, .. } => {
                assert!(!loads, "{dialect:?} {key}: {problems:?}");
                assert!(
                    matches!(&problems[0].error, RoleError::UnknownKey { hint, .. } if hint.contains("limits what the role may do")),
                    "{key}: {problems:?}"
                );
                assert_eq!(problems[0].line, Some(4), "{key}");
            }
            Parsed::Skipped { reason } => panic!("{key}: skipped: {reason}"),
        }
    }
}

#[test]
fn booleans_must_be_booleans() {
    for key in ["readonly", "background", "oneShot", "allowPlanFiles"] {
        for v in ["\"true\"", "yes", "1", "[true]"] {
            let reason = expect_bad(&format!("{key}: {v}"), key);
            assert!(reason.contains("true or false"), "{key}: {v}: {reason}");
        }
    }
    assert!(
        !cadre(&format!("{BASE}\nbackground: false"))
            .unwrap()
            .background
            .unwrap()
    );
}

#[test]
fn counts_must_be_positive_whole_numbers() {
    for key in [
        "warningTurns",
        "warningIntervalTurns",
        "maxTurns",
        "maxToolCalls",
        "softToolCalls",
        "timeoutMs",
        "bashTimeoutMs",
    ] {
        for v in ["0", "-1", "1.5", "\"5\"", "true", "[5]"] {
            expect_bad(&format!("{key}: {v}"), key);
        }
        assert!(cadre(&format!("{BASE}\n{key}: 1")).is_ok(), "{key}");
    }
    // u32 counts refuse values past u32; timeoutMs is u64.
    assert!(expect_bad("maxTurns: 4294967296", "maxTurns").contains("above"));
    assert_eq!(
        cadre(&format!("{BASE}\ntimeoutMs: 4294967296"))
            .unwrap()
            .timeout_ms,
        Some(4_294_967_296)
    );
    // graceTurns may be zero but not negative.
    assert_eq!(
        cadre(&format!("{BASE}\ngraceTurns: 0"))
            .unwrap()
            .grace_turns,
        Some(0)
    );
    expect_bad("graceTurns: -1", "graceTurns");
    expect_bad("graceTurns: one", "graceTurns");
}

#[test]
fn soft_tool_calls_cannot_exceed_the_hard_limit() {
    assert!(expect_bad("maxToolCalls: 10\nsoftToolCalls: 11", "softToolCalls").contains("above"));
    assert!(cadre(&format!("{BASE}\nmaxToolCalls: 10\nsoftToolCalls: 10")).is_ok());
}

#[test]
fn enumerations_are_checked() {
    assert!(expect_bad("shellPolicy: readonly", "shellPolicy").contains("inspect"));
    expect_bad("shellPolicy: Inspect", "shellPolicy");
    expect_bad("shellPolicy: 1", "shellPolicy");
    assert!(expect_bad("context: inherit", "context").contains("fresh, fork"));
    assert!(expect_bad("isolation: container", "isolation").contains("none, worktree"));
    assert!(expect_bad("thinking: extreme", "thinking").contains("xhigh"));
    expect_bad("reasoning_effort: 3", "reasoning_effort");
    for (v, p) in [
        ("unrestricted", ShellPolicy::Unrestricted),
        ("inspect", ShellPolicy::Inspect),
        ("verify", ShellPolicy::Verify),
        ("none", ShellPolicy::None),
    ] {
        assert_eq!(
            cadre(&format!("{BASE}\nshellPolicy: {v}"))
                .unwrap()
                .shell_policy,
            p
        );
    }
    assert_eq!(
        cadre(&format!("{BASE}\ncontext: fork")).unwrap().context,
        ContextMode::Fork
    );
    assert_eq!(
        cadre(&format!("{BASE}\nisolation: none"))
            .unwrap()
            .isolation,
        Isolation::None
    );
}

#[test]
fn thinking_has_one_alias_and_may_be_set_once() {
    assert_eq!(
        cadre(&format!("{BASE}\nreasoning_effort: medium"))
            .unwrap()
            .thinking,
        Some(ThinkingLevel::Medium)
    );
    assert!(
        expect_bad("thinking: low\nreasoning_effort: high", "reasoning_effort").contains("already")
    );
}

#[test]
fn models_are_checked_and_inherit_means_none() {
    assert_eq!(
        cadre(&format!("{BASE}\nmodel: inherit")).unwrap().model,
        None
    );
    assert_eq!(
        cadre(&format!("{BASE}\nfallbackModel: inherit"))
            .unwrap()
            .fallback_model,
        None
    );
    expect_bad("model: 4", "model");
    expect_bad("model: \"\"", "model");
    assert!(expect_bad("model: \"a b\"", "model").contains("whitespace"));
    let long = "m".repeat(MAX_MODEL_CHARS + 1);
    assert!(expect_bad(&format!("model: {long}"), "model").contains("256"));
    expect_bad("fallbackModel: [a]", "fallbackModel");
}

#[test]
fn skills_are_safe_names() {
    assert_eq!(
        cadre(&format!("{BASE}\nskills: a, b, a")).unwrap().skills,
        vec!["a", "b"]
    );
    for v in ["../etc", "a/b", ".hidden", "\"a b\"", "[\"x\\\\y\"]"] {
        expect_bad(&format!("skills: {v}"), "skills");
    }
    let many: Vec<String> = (0..MAX_SKILLS + 1).map(|i| format!("s{i}")).collect();
    assert!(expect_bad(&format!("skills: {}", many.join(",")), "skills").contains("limit"));
}

#[test]
fn a_key_without_a_value_is_malformed_not_absent() {
    // `tools:` with nothing must not mean "all tools".
    assert!(expect_bad("tools:", "tools").contains("no value"));
    expect_bad("readonly: ~", "readonly");
    expect_bad("model: null", "model");
}

#[test]
fn name_rules() {
    // The name must equal the stem.
    match parse_role(&doc(BASE, ""), "other", Dialect::Cadre) {
        Err(RoleError::NameMismatch { name, stem }) => {
            assert_eq!((name.as_str(), stem.as_str()), ("r", "other"));
        }
        other => panic!("{other:?}"),
    }
    // Exact, not case-folded.
    assert!(matches!(
        parse_role(&doc("name: r\ndescription: d", ""), "R", Dialect::Cadre),
        Err(RoleError::NameMismatch { .. })
    ));
    // Characters and length.
    for bad_name in ["My-Role", "my_role", "my role", "rôle", "\"\""] {
        let r = parse_role(
            &doc(&format!("name: {bad_name}\ndescription: d"), ""),
            bad_name,
            Dialect::Cadre,
        );
        assert!(
            matches!(r, Err(RoleError::BadValue { ref key, .. }) if key == "name"),
            "{bad_name}: {r:?}"
        );
    }
    let long = "a".repeat(MAX_NAME_CHARS + 1);
    let r = parse_role(
        &doc(&format!("name: {long}\ndescription: d"), ""),
        &long,
        Dialect::Cadre,
    );
    assert!(
        matches!(r, Err(RoleError::BadValue { ref key, ref reason }) if key == "name" && reason.contains("64"))
    );
    let fits = "a".repeat(MAX_NAME_CHARS);
    assert!(
        parse_role(
            &doc(&format!("name: {fits}\ndescription: d"), ""),
            &fits,
            Dialect::Cadre
        )
        .is_ok()
    );
    // The capitalised built-in names are allowed.
    for n in ["Explore", "Plan"] {
        assert!(
            parse_role(
                &doc(&format!("name: {n}\ndescription: d"), ""),
                n,
                Dialect::Cadre
            )
            .is_ok()
        );
    }
    assert!(
        parse_role(
            &doc("name: Verification\ndescription: d", ""),
            "Verification",
            Dialect::Cadre
        )
        .is_err()
    );
    assert!(
        matches!(cadre("name: 5\ndescription: d"), Err(RoleError::BadValue { ref key, .. }) if key == "name")
    );
}

#[test]
fn required_keys() {
    assert_eq!(cadre("description: d"), Err(RoleError::MissingKey("name")));
    assert_eq!(cadre("name: r"), Err(RoleError::MissingKey("description")));
    assert_eq!(
        parse_role("---\n---\nbody", "r", Dialect::Cadre),
        Err(RoleError::MissingKey("name"))
    );
    assert!(
        matches!(cadre("name: r\ndescription: \"  \""), Err(RoleError::BadValue { ref key, .. }) if key == "description")
    );
    assert!(
        matches!(cadre("name: r\ndescription: [a]"), Err(RoleError::BadValue { ref key, .. }) if key == "description")
    );
}

#[test]
fn size_limits() {
    let desc = "d".repeat(MAX_DESCRIPTION_CHARS + 1);
    let r = cadre(&format!("name: r\ndescription: {desc}"));
    assert!(
        matches!(r, Err(RoleError::BadValue { ref key, .. }) if key == "description"),
        "{r:?}"
    );
    // Characters, not bytes.
    let desc = "é".repeat(MAX_DESCRIPTION_CHARS);
    assert!(cadre(&format!("name: r\ndescription: {desc}")).is_ok());

    let body = "b".repeat(MAX_BODY_BYTES + 1);
    assert_eq!(
        parse_role(&doc(BASE, &body), "r", Dialect::Cadre),
        Err(RoleError::TooLarge {
            what: "prompt body",
            size: MAX_BODY_BYTES + 1,
            limit: MAX_BODY_BYTES
        })
    );
    let body = "b".repeat(MAX_BODY_BYTES);
    assert!(parse_role(&doc(BASE, &body), "r", Dialect::Cadre).is_ok());

    // The whole file: a long YAML comment keeps the body small.
    let filler = format!("# {}", "c".repeat(MAX_FILE_BYTES));
    let r = parse_role(&doc(&format!("{BASE}\n{filler}"), ""), "r", Dialect::Cadre);
    assert!(
        matches!(r, Err(RoleError::TooLarge { what: "file", .. })),
        "{r:?}"
    );
}

#[test]
fn frontmatter_shape() {
    assert_eq!(
        parse_role("just text", "r", Dialect::Cadre),
        Err(RoleError::MissingFrontmatter)
    );
    assert_eq!(
        parse_role("", "r", Dialect::Cadre),
        Err(RoleError::MissingFrontmatter)
    );
    assert_eq!(
        parse_role("\n---\nname: r\n---\n", "r", Dialect::Cadre),
        Err(RoleError::MissingFrontmatter)
    );
    assert_eq!(
        parse_role("---\nname: r\ndescription: d\n", "r", Dialect::Cadre),
        Err(RoleError::UnterminatedFrontmatter)
    );
    assert!(matches!(
        parse_role("---\nname: [r\n---\n", "r", Dialect::Cadre),
        Err(RoleError::Yaml(_))
    ));
    // Duplicate keys are invalid YAML here, never "last one wins".
    assert!(matches!(
        parse_role(
            "---\nname: r\ndescription: d\ntools: read\ntools: \"*\"\n---\n",
            "r",
            Dialect::Cadre
        ),
        Err(RoleError::Yaml(_))
    ));
    assert_eq!(
        parse_role("---\n- a\n- b\n---\n", "r", Dialect::Cadre),
        Err(RoleError::NotAMapping)
    );
    assert!(matches!(
        parse_role("---\n1: x\n---\n", "r", Dialect::Cadre),
        Err(RoleError::BadValue { .. })
    ));
    // BOM and CRLF line ends are fine; `---` may carry trailing spaces.
    let def = parse_role(
        "\u{feff}---  \r\nname: r\r\ndescription: d\r\n---\r\nBody\r\n",
        "r",
        Dialect::Cadre,
    )
    .unwrap();
    assert_eq!(def.prompt, "Body");
    // A later `---` in the body is body text.
    let def = parse_role(
        "---\nname: r\ndescription: d\n---\na\n---\nb",
        "r",
        Dialect::Cadre,
    )
    .unwrap();
    assert_eq!(def.prompt, "a\n---\nb");
}

#[test]
fn errors_read_well() {
    let e = cadre(&format!("{BASE}\ntool: read"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("unknown key `tool`"), "{e}");
    let e = cadre(&format!("{BASE}\nmaxTurns: 0"))
        .unwrap_err()
        .to_string();
    assert_eq!(e, "bad `maxTurns`: 0 is not a positive whole number");
    let e = parse_role(&doc(BASE, ""), "x", Dialect::Cadre)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "name `r` does not match the file name `x.md` (rename the file to `r.md` or set `name: x`)"
    );
}

#[test]
fn claude_code_files() {
    let def = claude(
        "name: code-reviewer\ndescription: Reviews.\ntools: Read, Grep, Glob, LS, Bash, WebSearch, mcp__x__y\n\
         disallowedTools: [Write, MultiEdit, TodoWrite]\nmodel: inherit\ncolor: purple\neffort: high\n\
         permissionMode: default\nskills: [a]\nmaxTurns: 5\nbackground: true\nisolation: worktree",
    )
    .unwrap();
    // The name need not equal the stem.
    assert_eq!(def.name, "code-reviewer");
    assert_eq!(
        def.tools,
        ToolList::Named(vec![
            "read".into(),
            "grep".into(),
            "find".into(),
            "ls".into(),
            "bash".into(),
            "mcp__x__y".into()
        ])
    );
    assert_eq!(def.disallowed_tools, vec!["write", "edit"]);
    assert_eq!(def.model, None);
    assert_eq!(def.thinking, Some(ThinkingLevel::High));
    assert_eq!(def.skills, vec!["a"]);
    assert_eq!(def.max_turns, Some(5));
    assert_eq!(def.background, Some(true));
    assert_eq!(def.isolation, Isolation::Worktree);
    assert!(!def.readonly);
    assert_eq!(def.dialect, Some(Dialect::ClaudeCode));
    assert_eq!(def.notes.len(), 2, "{:?}", def.notes);
    assert!(def.notes[0].contains("WebSearch"));

    // Model aliases pass through for the registry to resolve.
    assert_eq!(
        claude("name: a\ndescription: d\nmodel: sonnet")
            .unwrap()
            .model
            .as_deref(),
        Some("sonnet")
    );
}

#[test]
fn claude_code_capability_keys() {
    // Hooks can refuse tool calls: without them the role would be wider.
    match claude("name: a\ndescription: d\nhooks: {x: 1}") {
        Err(RoleError::Unsupported { key, .. }) => assert_eq!(key, "hooks"),
        other => panic!("{other:?}"),
    }
    // Memory and per-role servers add tools in Claude Code: leaving them out narrows.
    for (key, value) in [
        ("memory", "user"),
        ("mcpServers", "[github]"),
        ("initialPrompt", "go"),
        ("permissionMode", "bypassPermissions"),
    ] {
        let def = claude(&format!("name: a\ndescription: d\n{key}: {value}")).unwrap();
        assert_eq!(def.notes.len(), 1, "{key}: {:?}", def.notes);
        assert!(def.notes[0].contains(key), "{:?}", def.notes);
        assert_eq!(def.tools, ToolList::All);
    }
    for mode in ["default", "acceptEdits", "dontAsk"] {
        let def = claude(&format!("name: a\ndescription: d\npermissionMode: {mode}")).unwrap();
        assert!(!def.readonly, "{mode}");
    }
    assert!(
        claude("name: a\ndescription: d\npermissionMode: plan")
            .unwrap()
            .readonly
    );
    assert!(matches!(
        claude("name: a\ndescription: d\npermissionMode: yolo"),
        Err(RoleError::BadValue { ref key, .. }) if key == "permissionMode"
    ));
    // Claude Code only knows worktree isolation.
    assert!(claude("name: a\ndescription: d\nisolation: none").is_err());
    assert_eq!(
        claude("name: a\ndescription: d\ncolor: 3").unwrap().notes,
        vec!["`color` is not a string; ignored"]
    );
    assert!(claude("name: a\ndescription: d\neffort: huge").is_err());
    // The name is still validated.
    for bad_name in ["code`x", "a  b", "a/", ".a", "x\u{7}y", "caf\u{e9}"] {
        let text = format!("name: \"{bad_name}\"\ndescription: d");
        assert!(claude(&text).is_err(), "{bad_name:?}");
    }
    assert_eq!(claude("description: d"), Err(RoleError::MissingKey("name")));
}

#[test]
fn peek_name_reads_what_it_can() {
    assert_eq!(
        peek_name("---\nname: x\nhooks: {}\n---\n").as_deref(),
        Some("x")
    );
    assert_eq!(peek_name("---\nname: [x\n---\n"), None);
    assert_eq!(peek_name("no frontmatter"), None);
    assert_eq!(peek_name("---\nname: 3\n---\n"), None);
}

#[test]
fn alias_expansion_is_bounded() {
    // A "billion laughs" frontmatter fails (or is refused as a bad value) instead of expanding.
    let mut front =
        String::from("name: r\ndescription: d\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        front.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let r = cadre(&front);
    assert!(
        matches!(r, Err(RoleError::Yaml(ref m)) if m.contains("limit")),
        "{r:?}"
    );
    // Small aliases are ordinary values, checked like any other.
    let def = cadre("name: r\ndescription: d\nmodel: &m prov/m\nfallbackModel: *m").unwrap();
    assert_eq!(def.fallback_model.as_deref(), Some("prov/m"));
}

#[test]
fn plan_mode_compatibility() {
    let ro = cadre(&format!("{BASE}\nreadonly: true")).unwrap();
    assert!(ro.plan_mode_compatible());
    assert!(!cadre(BASE).unwrap().plan_mode_compatible());
    for extra in [
        "isolation: worktree",
        "context: fork",
        "shellPolicy: verify",
    ] {
        let def = cadre(&format!("{BASE}\nreadonly: true\n{extra}")).unwrap();
        assert!(!def.plan_mode_compatible(), "{extra}");
    }
    // Files cannot set skip_context_files.
    assert!(!ro.skip_context_files);
}

fn parsed(text: &str, stem: &str, dialect: Dialect) -> Parsed {
    parse_role_file(text, stem, dialect)
}

#[test]
fn every_problem_of_a_file_is_reported_with_its_line() {
    let text = "---\nname: r\ndescription: d\nmaxTurns: 0\ncolor: red\nreadonly: maybe\ntools: [Raed]\n---\nbody";
    let Parsed::Malformed { problems, .. } = parsed(text, "r", Dialect::Cadre) else {
        panic!("loaded");
    };
    let lines: Vec<Option<usize>> = problems.iter().map(|p| p.line).collect();
    // maxTurns (line 4), color (unknown in cadre files, 5), readonly (6); `Raed` passes in a
    // cadre file (the launch checks cadre names), so three problems.
    assert_eq!(lines, vec![Some(4), Some(5), Some(6)], "{problems:?}");
    let text =
        "---\nname: a\ndescription: d\nallowed-tools: Read\nmaxTurns: -1\ntools: Gerp\n---\n";
    let Parsed::Malformed { problems, .. } = parsed(text, "x", Dialect::ClaudeCode) else {
        panic!("loaded");
    };
    let got: Vec<(Option<usize>, String)> = problems
        .iter()
        .map(|p| (p.line, p.error.to_string()))
        .collect();
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[0].0, Some(4));
    assert!(got[0].1.contains("allowed-tools"), "{got:?}");
    assert_eq!(got[1].0, Some(5));
    assert_eq!(got[2].0, Some(6));
    assert!(got[2].1.contains("did you mean `Grep`"), "{got:?}");
    // Missing keys and YAML errors have a place too.
    let Parsed::Malformed { problems, .. } = parsed("---\nname: r\n---\n", "r", Dialect::Cadre)
    else {
        panic!("loaded");
    };
    assert_eq!(problems[0].error, RoleError::MissingKey("description"));
    let Parsed::Malformed { problems, .. } =
        parsed("---\nname: r\ndescription: [x\n---\n", "r", Dialect::Cadre)
    else {
        panic!("loaded");
    };
    assert!(matches!(problems[0].error, RoleError::Yaml(_)));
    assert!(problems[0].line.is_some_and(|l| l >= 3), "{problems:?}");
}

#[test]
fn claude_code_files_as_collections_write_them() {
    // (frontmatter, body, what must hold)
    let long_desc = format!("description: {}", "d".repeat(MAX_DESCRIPTION_CHARS * 3));
    let big_body = "b".repeat(MAX_BODY_BYTES * 3);
    type Check = fn(&RoleDef) -> bool;
    let cases: &[(&str, &str, Check)] = &[
        ("name: a\ndescription: d\ntools: *", "x", |d| {
            d.tools == ToolList::All
        }),
        (
            "name: a\ndescription: Use when: the user asks. Triggers on: 'x', 'y'",
            "x",
            |d| d.description.starts_with("Use when: the user"),
        ),
        (
            "name: a\ndescription: **TECHNICAL** reviews\ntools: Read, Grep",
            "x",
            |d| d.description == "**TECHNICAL** reviews" && d.tools.contains("grep"),
        ),
        (
            "name: a\ndescription: d\ncategory: quality\nversion: 1.0\nauthor: x\ntags: [a]",
            "x",
            |d| d.notes.len() == 4,
        ),
        (
            "name: a\ndescription: d\ntools: Read, Bash(git diff:*), Bash(git log:*)",
            "x",
            |d| d.bash_allow == ["git diff:*", "git log:*"] && d.tools.contains("bash"),
        ),
        (
            "name: a\ndescription: d\ntools: Read, WebSearch, mcp__context7__get-library-docs, TaskList",
            "x",
            |d| d.tools.as_named().is_some_and(|t| t.len() == 2) && d.notes.len() == 1,
        ),
        (
            "name: dotnet-framework-4.8-expert\ndescription: d",
            "x",
            |d| d.name == "dotnet-framework-4.8-expert",
        ),
        (
            "name: Python DevOps/CI-CD Expert\ndescription: d",
            "x",
            |d| d.name == "Python DevOps/CI-CD Expert",
        ),
        ("name: a\ndescription: d\nmodel: opus", "x", |d| {
            d.model.as_deref() == Some("opus")
        }),
    ];
    for (front, body, check) in cases {
        let def = claude_with_body(front, body);
        assert!(check(&def), "{front}: {def:?}");
    }
    let def = claude_with_body(&format!("name: a\n{long_desc}"), &big_body);
    assert_eq!(def.prompt.len(), big_body.len());
    // cadre's own files keep the T1 limits and plain YAML.
    assert!(
        parse_role(
            &doc(&format!("name: r\n{long_desc}"), ""),
            "r",
            Dialect::Cadre
        )
        .is_err()
    );
    assert!(parse_role(&doc(BASE, &big_body), "r", Dialect::Cadre).is_err());
    assert!(cadre("name: r\ndescription: Use when: x").is_err());
    // A ruler closes the frontmatter, as Claude Code's pattern allows.
    let def = parse_role(
        "---\nname: a\ndescription: d\n----------\nBody",
        "a",
        Dialect::ClaudeCode,
    )
    .unwrap();
    assert_eq!(def.prompt, "Body");
}

fn claude_with_body(front: &str, body: &str) -> RoleDef {
    parse_role(&doc(front, body), "file-stem", Dialect::ClaudeCode)
        .unwrap_or_else(|e| panic!("{front}: {e}"))
}

#[test]
fn files_that_are_not_agents_are_skipped_in_portable_directories() {
    for dialect in [Dialect::ClaudeCode, Dialect::Pi] {
        assert!(matches!(
            parsed("# README\n\nThese are agents.", "README", dialect),
            Parsed::Skipped { .. }
        ));
        assert!(matches!(
            parsed(
                "---\nname: a\ndescription: d\ndisabled: true\n---\n",
                "a",
                dialect
            ),
            Parsed::Skipped { .. }
        ));
    }
    assert!(matches!(
        parsed(
            "---\nname: a\ndescription: d\nenabled: false\n---\n",
            "a",
            Dialect::Pi
        ),
        Parsed::Skipped { .. }
    ));
    // In cadre's own directories a file without frontmatter is a mistake.
    assert!(matches!(
        parsed("# notes", "notes", Dialect::Cadre),
        Parsed::Malformed { .. }
    ));
    // `disabled: false` loads.
    assert!(matches!(
        parsed(
            "---\nname: a\ndescription: d\ndisabled: false\n---\n",
            "a",
            Dialect::ClaudeCode
        ),
        Parsed::Role { .. }
    ));
}

fn pi(front: &str, stem: &str) -> Result<RoleDef, RoleError> {
    parse_role(&doc(front, "Do it."), stem, Dialect::Pi)
}

#[test]
fn pi_package_files() {
    // The name defaults to the stem; a capitalised built-in name matches its stem in any case.
    assert_eq!(pi("description: d", "auditor").unwrap().name, "auditor");
    assert_eq!(
        pi("name: Explore\ndescription: d", "explore").unwrap().name,
        "Explore"
    );
    assert!(matches!(
        pi("name: other\ndescription: d", "auditor"),
        Err(RoleError::NameMismatch { .. })
    ));
    assert!(pi("name: explorer\ndescription: d", "Explorer").is_err());
    type Check = fn(&RoleDef) -> bool;
    let cases: &[(&str, Check)] = &[
        ("fallbackModels: [a/x, b/y]", |d| {
            d.fallback_model.as_deref() == Some("a/x") && d.notes.len() == 1
        }),
        ("fallbackModels: a/x", |d| {
            d.fallback_model.as_deref() == Some("a/x") && d.notes.is_empty()
        }),
        ("max_turns: 0", |d| d.max_turns.is_none()),
        ("max_turns: 12", |d| d.max_turns == Some(12)),
        ("defaultContext: fork", |d| d.context == ContextMode::Fork),
        ("inheritProjectContext: false", |d| d.skip_context_files),
        ("inheritProjectContext: true", |d| !d.skip_context_files),
        ("maxSubagentDepth: 0", |d| d.disallowed_tools == ["Agent"]),
        ("maxSubagentDepth: 2", |d| d.disallowed_tools.is_empty()),
        ("allowSubagents: false", |d| d.disallowed_tools == ["Agent"]),
        ("allowSubagents: true", |d| {
            d.disallowed_tools.is_empty() && d.tools == ToolList::All && d.notes.len() == 1
        }),
        ("disallowed_tools: write, edit", |d| {
            d.disallowed_tools == ["write", "edit"]
        }),
        ("systemPromptMode: replace", |d| d.notes.len() == 1),
        ("systemPromptMode: append", |d| d.notes.is_empty()),
        ("appendSystemPrompt: true", |d| d.notes.is_empty()),
        ("thinking: max", |d| d.thinking == Some(ThinkingLevel::Max)),
        ("tools: Read, Bash, web_search, contact_supervisor", |d| {
            d.tools == ToolList::Named(vec!["read".into(), "bash".into()]) && d.notes.len() == 2
        }),
        (
            "output: out.md\ndefaultReads: a.md\ndefaultProgress: true\ncompletionGuard: false\naliases: [x]\nlast-layer: disabled\ninheritSkills: false",
            |d| d.notes.len() == 7,
        ),
        ("category: x", |d| d.notes.len() == 1),
    ];
    for (extra, check) in cases {
        let def = pi(&format!("name: r\ndescription: d\n{extra}"), "r")
            .unwrap_or_else(|e| panic!("{extra}: {e}"));
        assert!(check(&def), "{extra}: {def:?}");
    }
    for bad in [
        "systemPromptMode: sometimes",
        "max_turns: -1",
        "maxSubagentDepth: x",
        "allowSubagents: yes",
        "inheritProjectContext: 1",
        "readOnly: true",
        "allowed_tools: read",
    ] {
        assert!(
            pi(&format!("name: r\ndescription: d\n{bad}"), "r").is_err(),
            "{bad}"
        );
    }
}

#[test]
fn nothing_an_ignored_key_or_the_yaml_retry_hides_can_widen_a_role() {
    // An alias through the retry still denies (the retry leaves real aliases alone).
    let anchor = "---\nname: anchor\ndescription: Use when: you need a reviewer\n\
                  shared: &deny [Bash, Write, Edit]\ndisallowedTools: *deny\n---\nbody";
    match parsed(anchor, "anchor", Dialect::ClaudeCode) {
        Parsed::Role { def, .. } => {
            assert_eq!(def.disallowed_tools, ["bash", "write", "edit"], "{def:?}")
        }
        other => panic!("{other:?}"),
    }
    // Each of these must not load (file text after `name: r\ndescription: d\n`).
    for extra in [
        // A merge key is not applied, so what it adds is unknown.
        "base: &b\n  disallowedTools: Bash\n<<: *b",
        // An ignored mapping that holds a capability key.
        "defaults:\n  disallowedTools: Bash",
        "extra: {tools: Read}",
        // A look-alike in another script (Cyrillic o's).
        "t\u{43e}\u{43e}ls: Read",
        // Deny entries cadre cannot read.
        "disallowedTools: Write;Edit",
        "disallowedTools: run_command",
        "disallowedTools: [Write|Edit]",
    ] {
        let text = format!("---\nname: r\ndescription: d\n{extra}\n---\nbody");
        for dialect in [Dialect::ClaudeCode, Dialect::Pi] {
            assert!(
                matches!(parsed(&text, "r", dialect), Parsed::Malformed { .. }),
                "{dialect:?} loaded: {extra}"
            );
        }
    }
    // Denying a host-only tool denies nothing cadre has, which is harmless.
    let def = claude("name: a\ndescription: d\ndisallowedTools: WebFetch, Write").unwrap();
    assert_eq!(def.disallowed_tools, ["write"]);
    // A malformed Claude Code file that parses only after the retry blocks its declared name.
    let deployer = "---\nname: deploy\ndescription: Use when: deploying.\ndisallowedTools: Bash\n\
                    hooks:\n  PreToolUse: []\n---\nbody";
    match parsed(deployer, "deployer", Dialect::ClaudeCode) {
        Parsed::Malformed { name, .. } => assert_eq!(name, "deploy"),
        other => panic!("{other:?}"),
    }
    assert_eq!(peek_name(deployer).as_deref(), Some("deploy"));
    let starred = "---\nname: code\ndescription: d\ntools: *\nhooks: {}\n---\n";
    match parsed(starred, "x", Dialect::ClaudeCode) {
        Parsed::Malformed { name, .. } => assert_eq!(name, "code"),
        other => panic!("{other:?}"),
    }
}
