#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The tables spell out their rows.
#![allow(clippy::type_complexity)]

use serde_json::json;

use super::*;

fn m(full: &str, usable: bool) -> CatalogModel {
    let (provider, id) = full.split_once('/').unwrap();
    CatalogModel {
        provider: provider.into(),
        id: id.into(),
        name: format!("{id} (display)"),
        context_window: if id.contains("4-6") || id.contains("4-7") {
            1_000_000
        } else {
            200_000
        },
        usable,
    }
}

/// The built-in Anthropic and OpenRouter Claude models, with credentials for `anthropic` and
/// `openrouter` as given.
fn registry(anthropic: bool, openrouter: bool) -> Vec<CatalogModel> {
    let mut out: Vec<CatalogModel> = [
        "claude-sonnet-4-5",
        "claude-opus-4-5",
        "claude-opus-4-1",
        "claude-haiku-4-5",
        "claude-sonnet-4-6",
        "claude-opus-4-7",
        "claude-opus-4-6",
        "claude-sonnet-4-5-20250929",
        "claude-opus-4-20250514",
        "claude-sonnet-4-20250514",
        "claude-3-7-sonnet-20250219",
        "claude-3-5-haiku-20241022",
        "claude-3-5-haiku-latest",
    ]
    .iter()
    .map(|id| m(&format!("anthropic/{id}"), anthropic))
    .collect();
    out.push(m("openai/gpt-5", true));
    for id in [
        "anthropic/claude-sonnet-4.5",
        "anthropic/claude-opus-4.5",
        "anthropic/claude-opus-4.6-fast",
        "anthropic/claude-haiku-4.5",
    ] {
        out.push(m(&format!("openrouter/{id}"), openrouter));
    }
    out
}

fn cx<'a>(
    readonly: bool,
    parent: Option<&'a str>,
    aliases: &'a [(String, String)],
    catalog: &'a [CatalogModel],
) -> ExpandContext<'a> {
    ExpandContext {
        readonly,
        parent_provider: parent,
        aliases,
        catalog,
    }
}

fn target(e: &Expansion) -> Option<&str> {
    match e {
        Expansion::Alias { target, .. } | Expansion::Family { target, .. } => Some(target),
        _ => None,
    }
}

#[test]
fn claude_ids_are_read_apart() {
    let cases: &[(&str, Option<(Family, u32, u32, Option<u32>, bool)>)] = &[
        (
            "claude-sonnet-4-5",
            Some((Family::Sonnet, 4, 5, None, false)),
        ),
        ("claude-opus-4-1", Some((Family::Opus, 4, 1, None, false))),
        (
            "claude-3-5-haiku-20241022",
            Some((Family::Haiku, 3, 5, Some(20241022), false)),
        ),
        ("claude-haiku-4-5", Some((Family::Haiku, 4, 5, None, false))),
        (
            "claude-sonnet-4-20250514",
            Some((Family::Sonnet, 4, 0, Some(20250514), false)),
        ),
        (
            "claude-3-7-sonnet-20250219",
            Some((Family::Sonnet, 3, 7, Some(20250219), false)),
        ),
        (
            "anthropic/claude-opus-4.5",
            Some((Family::Opus, 4, 5, None, false)),
        ),
        (
            "claude-sonnet-4-5@20250929",
            Some((Family::Sonnet, 4, 5, Some(20250929), false)),
        ),
        (
            "anthropic.claude-3-5-sonnet-20240620-v1:0",
            Some((Family::Sonnet, 3, 5, Some(20240620), false)),
        ),
        (
            "claude-3-5-haiku-latest",
            Some((Family::Haiku, 3, 5, None, false)),
        ),
        (
            "anthropic/claude-3.7-sonnet:thinking",
            Some((Family::Sonnet, 3, 7, None, true)),
        ),
        (
            "anthropic/claude-opus-4.6-fast",
            Some((Family::Opus, 4, 6, None, true)),
        ),
        ("claude-instant-1", None),
        ("claude-opus", None),
        ("gpt-5", None),
        ("claude-sonnet-opus-4", None),
    ];
    for (id, want) in cases {
        let got = parse_claude_id(id).map(|c| (c.family, c.major, c.minor, c.date, c.variant));
        assert_eq!(got, *want, "{id}");
    }
}

#[test]
fn default_aliases_pick_the_newest_model_of_the_family_where_credentials_are() {
    let both = registry(true, true);
    let anthropic_only = registry(true, false);
    let openrouter_only = registry(false, true);
    let none = registry(false, false);
    let no_aliases: &[(String, String)] = &[];
    // (name, read-only, parent provider, catalog, expected target; None = unavailable)
    let cases: &[(&str, bool, Option<&str>, &[CatalogModel], Option<&str>)] = &[
        (
            "sonnet",
            false,
            None,
            &both,
            Some("anthropic/claude-sonnet-4-6"),
        ),
        (
            "opus",
            false,
            None,
            &both,
            Some("anthropic/claude-opus-4-7"),
        ),
        (
            "haiku",
            false,
            None,
            &both,
            Some("anthropic/claude-haiku-4-5"),
        ),
        (
            "Opus",
            false,
            None,
            &anthropic_only,
            Some("anthropic/claude-opus-4-7"),
        ),
        // The parent's provider first.
        (
            "opus",
            false,
            Some("openrouter"),
            &both,
            Some("openrouter/anthropic/claude-opus-4.5"),
        ),
        // A parent provider without Claude models does not count.
        (
            "opus",
            false,
            Some("openai"),
            &both,
            Some("anthropic/claude-opus-4-7"),
        ),
        // OpenRouter only: its models, never the variant.
        (
            "sonnet",
            false,
            None,
            &openrouter_only,
            Some("openrouter/anthropic/claude-sonnet-4.5"),
        ),
        (
            "opus",
            false,
            None,
            &openrouter_only,
            Some("openrouter/anthropic/claude-opus-4.5"),
        ),
        // opusplan: plan (read-only) on opus, execute on sonnet.
        (
            "opusplan",
            true,
            None,
            &both,
            Some("anthropic/claude-opus-4-7"),
        ),
        (
            "opusplan",
            false,
            None,
            &both,
            Some("anthropic/claude-sonnet-4-6"),
        ),
        (
            "sonnet[1m]",
            false,
            None,
            &both,
            Some("anthropic/claude-sonnet-4-6"),
        ),
        (
            "sonnet[1m]",
            false,
            None,
            &openrouter_only,
            Some("openrouter/anthropic/claude-sonnet-4.5"),
        ),
        ("sonnet", false, None, &none, None),
        ("haiku", true, Some("anthropic"), &none, None),
    ];
    for (name, readonly, parent, catalog, want) in cases {
        let e = expand(name, &cx(*readonly, *parent, no_aliases, catalog));
        match want {
            Some(want) => assert_eq!(target(&e), Some(*want), "{name} {parent:?}: {e:?}"),
            None => assert!(
                matches!(&e, Expansion::Unavailable { reason } if reason.contains("no provider with credentials")),
                "{name}: {e:?}"
            ),
        }
    }
}

#[test]
fn notes_say_what_opusplan_and_1m_did() {
    let both = registry(true, true);
    let openrouter_only = registry(false, true);
    let notes = |name: &str, readonly: bool, catalog: &[CatalogModel]| {
        let plan = ModelPlan::new(
            ModelSource::Frontmatter,
            name,
            &cx(readonly, None, &[], catalog),
        );
        plan.note().unwrap()
    };
    assert!(
        notes("opusplan", true, &both).contains("opusplan runs read-only roles on opus"),
        "{}",
        notes("opusplan", true, &both)
    );
    assert!(notes("opusplan", false, &both).contains("writing roles on sonnet"));
    assert!(notes("sonnet[1m]", false, &both).contains("has a 1M-token context window"));
    let narrow = notes("sonnet[1m]", false, &openrouter_only);
    assert!(
        narrow.contains("200K-token context window; the 1M context is not available"),
        "{narrow}"
    );
}

#[test]
fn the_settings_table_wins_over_the_defaults() {
    let both = registry(true, true);
    let none = registry(false, false);
    let aliases = parse_model_aliases(Some(&json!({
        "opus": "fake/big",
        "Fast": "openai/gpt-5",
        "haiku": "sonnet",
        "sonnet": null
    })))
    .unwrap();
    let cases: &[(&str, &[CatalogModel], Option<&str>)] = &[
        // Taken as written, whatever the registry has: the registry judges it.
        ("opus", &none, Some("fake/big")),
        ("OPUS", &both, Some("fake/big")),
        ("fast", &both, Some("openai/gpt-5")),
        // A table entry pointing at a default alias goes one step further.
        ("haiku", &both, Some("anthropic/claude-sonnet-4-6")),
        // `null` leaves the default.
        ("sonnet", &both, Some("anthropic/claude-sonnet-4-6")),
    ];
    for (name, catalog, want) in cases {
        let e = expand(name, &cx(false, None, &aliases, catalog));
        assert_eq!(target(&e), *want, "{name}: {e:?}");
    }
    let e = expand("haiku", &cx(false, None, &aliases, &both));
    assert!(
        matches!(&e, Expansion::Alias { note: Some(n), .. } if n.starts_with("modelAliases.haiku")),
        "{e:?}"
    );
}

#[test]
fn claude_ids_no_usable_provider_lists_go_to_the_newest_of_their_family() {
    let both = registry(true, true);
    let openrouter_only = registry(false, true);
    let none = registry(false, false);
    let cases: &[(&str, &[CatalogModel], Option<&str>, &str)] = &[
        // Listed and usable: as written.
        ("claude-sonnet-4-20250514", &both, None, ""),
        ("claude-3-5-haiku-20241022", &both, None, ""),
        ("anthropic/claude-opus-4-1", &both, None, ""),
        // Not listed: the newest of the family.
        (
            "claude-3-opus-20240229",
            &both,
            Some("anthropic/claude-opus-4-7"),
            "not a known model",
        ),
        (
            "claude-sonnet-9-9",
            &both,
            Some("anthropic/claude-sonnet-4-6"),
            "not a known model",
        ),
        // Listed, but only where there are no credentials.
        (
            "claude-sonnet-4-20250514",
            &openrouter_only,
            Some("openrouter/anthropic/claude-sonnet-4.5"),
            "on no provider with credentials",
        ),
        // Listed but nothing of the family usable, or no family: as written (the registry
        // says why).
        ("claude-sonnet-4-20250514", &none, None, ""),
        ("claude-instant-1", &both, None, ""),
        ("gpt-5", &both, None, ""),
        ("fake/model", &both, None, ""),
    ];
    let e = expand("claude-3-opus-20240229", &cx(false, None, &[], &none));
    assert!(
        matches!(&e, Expansion::Unavailable { reason } if reason.contains("Claude opus")),
        "{e:?}"
    );
    for (name, catalog, want, says) in cases {
        let e = expand(name, &cx(false, None, &[], catalog));
        match want {
            None => assert_eq!(e, Expansion::AsWritten, "{name}"),
            Some(want) => match &e {
                Expansion::Family { target, note } => {
                    assert_eq!(target, want, "{name}");
                    assert!(note.contains(says), "{name}: {note}");
                }
                other => panic!("{name}: {other:?}"),
            },
        }
    }
}

#[test]
fn malformed_model_aliases_are_errors() {
    assert_eq!(parse_model_aliases(None).unwrap(), Vec::new());
    assert_eq!(parse_model_aliases(Some(&json!(null))).unwrap(), Vec::new());
    let cases = [
        (json!("opus"), "modelAliases"),
        (json!(["opus"]), "modelAliases"),
        (json!({ "opus": 4 }), "modelAliases.opus"),
        (json!({ "opus": "" }), "modelAliases.opus"),
        (json!({ "opus": { "model": "x" } }), "modelAliases.opus"),
        (json!({ " ": "x/y" }), "modelAliases"),
        (json!({ "opus": "a/b", "OPUS": "c/d" }), "modelAliases.OPUS"),
    ];
    for (value, key) in cases {
        match parse_model_aliases(Some(&value)) {
            Err((k, message)) => {
                assert_eq!(k, key, "{value}");
                assert!(!message.is_empty());
            }
            Ok(v) => panic!("{value}: {v:?}"),
        }
    }
}

#[test]
fn plans_name_their_source_and_leniency() {
    let both = registry(true, true);
    let none = registry(false, false);
    let c = cx(false, None, &[], &both);
    let cases = [
        (ModelSource::Frontmatter, "sonnet", "alias", true),
        (
            ModelSource::Frontmatter,
            "claude-3-opus-20240229",
            "family",
            true,
        ),
        (
            ModelSource::Frontmatter,
            "anthropic/claude-opus-4-1",
            "frontmatter",
            true,
        ),
        (ModelSource::AgentOverride, "opus", "agentOverride", false),
        (
            ModelSource::SettingsDefault,
            "opus",
            "settingsDefault",
            false,
        ),
        (ModelSource::Call, "opus", "call", false),
        (ModelSource::Parent, "p/parent", "parent", false),
    ];
    for (source, name, shown, lenient) in cases {
        let plan = ModelPlan::new(source, name, &c);
        assert_eq!(plan.source_name(), shown, "{name}");
        assert_eq!(plan.lenient, lenient, "{name}");
    }
    assert_eq!(
        ModelPlan::new(ModelSource::Parent, "p/parent", &c).target(),
        None
    );
    let unavailable = ModelPlan::new(
        ModelSource::Frontmatter,
        "opus",
        &cx(false, None, &[], &none),
    );
    assert_eq!(unavailable.target(), None);
}

#[test]
fn settle_falls_back_to_the_parent_only_for_a_role_files_model() {
    let both = registry(true, true);
    let none = registry(false, false);
    let known = |name: &str| -> Result<String, String> {
        if name.starts_with("anthropic/") || name == "ok/fallback" {
            Ok(name.to_string())
        } else {
            Err(format!("unknown model {name}"))
        }
    };
    let front = |name: &str, catalog: &[CatalogModel]| {
        ModelPlan::new(
            ModelSource::Frontmatter,
            name,
            &cx(false, None, &[], catalog),
        )
    };
    // Resolved.
    match settle(&front("opus", &both), None, known) {
        Settled::Model { name, .. } => assert_eq!(name, "anthropic/claude-opus-4-7"),
        other => panic!("{other:?}"),
    }
    // No credentials for any Claude model: the parent's, saying why.
    match settle(&front("opus", &none), None, known) {
        Settled::Parent { note: Some(note) } => {
            assert!(note.contains("`opus`"), "{note}");
            assert!(note.contains("no provider with credentials"), "{note}");
            assert!(note.contains("running on the parent's model"), "{note}");
        }
        other => panic!("{other:?}"),
    }
    // An unknown provider in a role file: the parent's.
    assert!(matches!(
        settle(&front("nope/model", &both), None, known),
        Settled::Parent { note: Some(_) }
    ));
    // The fallback model comes before the parent.
    match settle(&front("nope/model", &both), Some("ok/fallback"), known) {
        Settled::Model {
            name,
            fallback_note: Some(n),
            ..
        } => {
            assert_eq!(name, "ok/fallback");
            assert!(n.contains("using fallback"), "{n}");
        }
        other => panic!("{other:?}"),
    }
    // The call and the settings stay strict.
    for source in [
        ModelSource::Call,
        ModelSource::AgentOverride,
        ModelSource::SettingsDefault,
    ] {
        let plan = ModelPlan::new(source, "nope/model", &cx(false, None, &[], &both));
        assert!(
            matches!(settle(&plan, None, known), Settled::Failed { .. }),
            "{source:?}"
        );
        let plan = ModelPlan::new(source, "opus", &cx(false, None, &[], &none));
        match settle(&plan, Some("nope/fb"), known) {
            Settled::Failed {
                error, fallback, ..
            } => {
                assert!(error.contains("no provider with credentials"), "{error}");
                assert_eq!(fallback.unwrap().0, "nope/fb");
            }
            other => panic!("{source:?}: {other:?}"),
        }
    }
    // No model at all: the parent's, nothing to say.
    let plan = ModelPlan::new(
        ModelSource::Parent,
        "p/parent",
        &cx(false, None, &[], &both),
    );
    assert_eq!(settle(&plan, None, known), Settled::Parent { note: None });
}

#[test]
fn the_built_in_catalog_gives_each_family_its_newest_model() {
    use cadre_llm::registry::MapEnv;
    let newest = |env: &MapEnv| {
        let catalog = catalog_of(&cadre_llm::ModelRegistry::builtin(env));
        [Family::Sonnet, Family::Opus, Family::Haiku]
            .map(|f| newest_of_family(f, None, &catalog).map(CatalogModel::full_name))
    };
    let both = MapEnv::new()
        .with("ANTHROPIC_API_KEY", "k")
        .with("OPENROUTER_API_KEY", "k");
    assert_eq!(
        newest(&both),
        [
            Some("anthropic/claude-sonnet-4-6".to_string()),
            Some("anthropic/claude-opus-4-7".to_string()),
            Some("anthropic/claude-haiku-4-5".to_string()),
        ]
    );
    // Through OpenRouter only: its ids, and not the `-fast` variant of Opus 4.6.
    let openrouter = MapEnv::new().with("OPENROUTER_API_KEY", "k");
    assert_eq!(
        newest(&openrouter),
        [
            Some("openrouter/anthropic/claude-sonnet-4.6".to_string()),
            Some("openrouter/anthropic/claude-opus-4.7".to_string()),
            Some("openrouter/anthropic/claude-haiku-4.5".to_string()),
        ]
    );
}
