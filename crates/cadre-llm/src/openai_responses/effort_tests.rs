//! The reasoning effort sent to each built-in OpenAI family at each thinking level: only values
//! the family takes (OpenAI's `reasoning.effort` reference), with a refused one clamped.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cadre_protocol::{Message, ThinkingLevel};
use serde_json::Value;

use super::build_body;
use crate::registry::{MapEnv, ModelRegistry};
use crate::test_support::request;

/// The effort sent at `off`, `minimal`, `low`, `medium`, `high`, `xhigh`, `max`.
const TABLE: &[(&str, [&str; 7])] = &[
    // GPT-5 takes `minimal`, not `none`.
    (
        "gpt-5",
        [
            "minimal", "minimal", "low", "medium", "high", "high", "high",
        ],
    ),
    (
        "gpt-5-mini",
        [
            "minimal", "minimal", "low", "medium", "high", "high", "high",
        ],
    ),
    // GPT-5.1 takes `none`, not `minimal`, and no `xhigh`.
    (
        "gpt-5.1",
        ["none", "none", "low", "medium", "high", "high", "high"],
    ),
    (
        "gpt-5.4",
        ["none", "none", "low", "medium", "high", "xhigh", "xhigh"],
    ),
    (
        "gpt-5.5",
        ["none", "none", "low", "medium", "high", "xhigh", "xhigh"],
    ),
    // Codex: `low` to `high` (`xhigh` from Codex Max).
    (
        "gpt-5-codex",
        ["low", "low", "low", "medium", "high", "high", "high"],
    ),
    (
        "gpt-5.1-codex-mini",
        ["low", "low", "low", "medium", "high", "high", "high"],
    ),
    (
        "gpt-5.1-codex-max",
        ["low", "low", "low", "medium", "high", "xhigh", "xhigh"],
    ),
    (
        "gpt-5.3-codex",
        ["low", "low", "low", "medium", "high", "xhigh", "xhigh"],
    ),
    // GPT-5 Pro takes only `high`; later Pro models `medium` to `xhigh`.
    (
        "gpt-5-pro",
        ["high", "high", "high", "high", "high", "high", "high"],
    ),
    (
        "gpt-5.4-pro",
        [
            "medium", "medium", "medium", "medium", "high", "xhigh", "xhigh",
        ],
    ),
    // o-series: `low` to `high`.
    (
        "o3",
        ["low", "low", "low", "medium", "high", "high", "high"],
    ),
    (
        "o4-mini",
        ["low", "low", "low", "medium", "high", "high", "high"],
    ),
    (
        "o1",
        ["low", "low", "low", "medium", "high", "high", "high"],
    ),
];

fn builtin(id: &str) -> crate::model::Model {
    let env = MapEnv::new().with("OPENAI_API_KEY", "sk-test");
    ModelRegistry::builtin(&env)
        .resolve(&format!("openai/{id}"))
        .unwrap()
}

#[test]
fn each_openai_family_gets_only_efforts_it_takes() {
    for (id, efforts) in TABLE {
        let model = builtin(id);
        for (level, want) in ThinkingLevel::ALL.iter().zip(efforts) {
            let mut req = request(model.clone(), vec![Message::user("hi")]);
            req.thinking = *level;
            let body: Value = serde_json::from_slice(&build_body(&req).unwrap()).unwrap();
            let sent = body.pointer("/reasoning/effort").and_then(Value::as_str);
            assert_eq!(sent, Some(*want), "{id} at {level}: {body}");
            // No reasoning means nothing to summarize.
            let summary = body.pointer("/reasoning/summary");
            assert_eq!(summary.is_some(), *want != "none", "{id} at {level}");
        }
    }
}

#[test]
fn a_refused_level_is_clamped_with_a_reason() {
    let r = crate::thinking::resolve_thinking(&builtin("gpt-5"), ThinkingLevel::Off);
    assert_eq!(r.effective, ThinkingLevel::Minimal);
    let reason = r.clamp_reason.unwrap();
    assert!(
        reason.contains("gpt-5") && reason.contains("off"),
        "{reason}"
    );

    // `off` on GPT-5.1 and later is reasoning off, sent as `none`: nothing clamped.
    let r = crate::thinking::resolve_thinking(&builtin("gpt-5.4"), ThinkingLevel::Off);
    assert_eq!(r.effective, ThinkingLevel::Off);
    assert_eq!(r.clamp_reason, None);
    assert_eq!(r.wire_value.as_deref(), Some("none"));

    let r = crate::thinking::resolve_thinking(&builtin("gpt-5-pro"), ThinkingLevel::Low);
    assert_eq!(r.effective, ThinkingLevel::High);
    assert!(r.clamp_reason.is_some());
}
