#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cadre_protocol::{Message, ThinkingLevel};
use serde_json::{Value, json};

use super::*;
use crate::error::ErrorKind;
use crate::test_support::{model, request};
use ThinkingLevel::*;

fn claude(id: &str) -> Model {
    let mut m = model(Api::AnthropicMessages);
    m.provider = "anthropic".into();
    m.id = id.into();
    m.reasoning = true;
    m.max_tokens = 128_000;
    m
}

fn body(m: &Model, level: ThinkingLevel) -> Value {
    let mut req = request(m.clone(), vec![Message::user("hi")]);
    req.thinking = level;
    serde_json::from_slice(&crate::anthropic::build_body(&req).unwrap()).unwrap()
}

fn g(family: Family, major: u32, minor: u32) -> Option<Generation> {
    Some(Generation {
        family,
        major,
        minor,
    })
}

#[test]
fn generations_are_read_from_ids_of_every_shape() {
    use Family::*;
    let table = [
        ("claude-opus-4-7", g(Opus, 4, 7)),
        ("claude-opus-4-6", g(Opus, 4, 6)),
        ("claude-sonnet-4-6", g(Sonnet, 4, 6)),
        ("claude-sonnet-4-5-20250929", g(Sonnet, 4, 5)),
        ("claude-sonnet-4-20250514", g(Sonnet, 4, 0)),
        ("claude-opus-4-0", g(Opus, 4, 0)),
        ("claude-opus-4-1", g(Opus, 4, 1)),
        ("claude-haiku-4-5", g(Haiku, 4, 5)),
        ("claude-3-7-sonnet-20250219", g(Sonnet, 3, 7)),
        ("claude-3-5-haiku-latest", g(Haiku, 3, 5)),
        ("claude-3-haiku-20240307", g(Haiku, 3, 0)),
        ("anthropic/claude-opus-4.7", g(Opus, 4, 7)),
        ("anthropic/claude-sonnet-4.6", g(Sonnet, 4, 6)),
        ("us.anthropic.claude-sonnet-4-6-v1:0", g(Sonnet, 4, 6)),
        ("anthropic.claude-opus-4-6-v1", g(Opus, 4, 6)),
        ("claude-sonnet-5", g(Sonnet, 5, 0)),
        ("CLAUDE-OPUS-4-7", g(Opus, 4, 7)),
        ("claude-instant-1", None),
        ("gpt-5", None),
        ("my-proxy-model", None),
        ("claude-opus", None),
    ];
    for (id, want) in table {
        assert_eq!(generation(id), want, "{id}");
    }
}

#[test]
fn form_per_generation_and_compat_override() {
    let table = [
        ("claude-3-7-sonnet-20250219", ThinkingForm::Budget),
        ("claude-sonnet-4-0", ThinkingForm::Budget),
        ("claude-opus-4-1", ThinkingForm::Budget),
        ("claude-opus-4-5", ThinkingForm::Budget),
        ("claude-haiku-4-5", ThinkingForm::Budget),
        ("claude-sonnet-4-6", ThinkingForm::Adaptive),
        ("claude-opus-4-6", ThinkingForm::Adaptive),
        ("claude-opus-4-7", ThinkingForm::Adaptive),
        ("anthropic/claude-opus-4.7", ThinkingForm::Adaptive),
        ("corp-large", ThinkingForm::Budget),
    ];
    for (id, want) in table {
        assert_eq!(thinking_form(&claude(id)), want, "{id}");
    }
    let mut m = claude("corp-large");
    m.compat.thinking_format = Some(FORMAT_ADAPTIVE.into());
    assert_eq!(thinking_form(&m), ThinkingForm::Adaptive);
    let mut m = claude("claude-opus-4-6");
    m.compat.thinking_format = Some(FORMAT_BUDGET.into());
    assert_eq!(thinking_form(&m), ThinkingForm::Budget);
    // Pi's OpenAI-side values say nothing about Claude's form.
    m.compat.thinking_format = Some("deepseek".into());
    assert_eq!(thinking_form(&m), ThinkingForm::Adaptive);
}

#[test]
fn adaptive_bodies_per_level_on_opus_4_7() {
    let m = claude("claude-opus-4-7");
    let table = [
        (Minimal, "low"),
        (Low, "low"),
        (Medium, "medium"),
        (High, "high"),
        (Xhigh, "xhigh"),
        (Max, "max"),
    ];
    for (level, effort) in table {
        let b = body(&m, level);
        assert_eq!(
            b["thinking"],
            json!({"type": "adaptive", "display": "summarized"}),
            "{level}"
        );
        assert_eq!(b["output_config"], json!({"effort": effort}), "{level}");
        // Adaptive thinking shares max_tokens with the answer: no budget is added.
        assert_eq!(b["max_tokens"], 32_000, "{level}");
        let r = crate::thinking::resolve_thinking(&m, level);
        assert_eq!(
            (r.effective, r.wire_value.as_deref(), r.clamp_reason),
            (level, Some(effort), None)
        );
    }
    // Off: neither `enabled` nor `disabled` (Opus 4.7 refuses both); no effort either.
    let b = body(&m, Off);
    assert!(b.get("thinking").is_none(), "{b}");
    assert!(b.get("output_config").is_none(), "{b}");
}

#[test]
fn opus_and_sonnet_4_6_take_max_but_not_xhigh() {
    for id in ["claude-opus-4-6", "claude-sonnet-4-6"] {
        let m = claude(id);
        let b = body(&m, Max);
        assert_eq!(b["output_config"], json!({"effort": "max"}), "{id}");
        let r = crate::thinking::resolve_thinking(&m, Xhigh);
        assert_eq!(r.effective, High, "{id}");
        assert_eq!(r.wire_value.as_deref(), Some("high"));
        let reason = r.clamp_reason.unwrap();
        assert!(
            reason.contains("thinking level xhigh") && reason.contains("low, medium, high, max"),
            "{reason}"
        );
        let b = body(&m, Xhigh);
        assert_eq!(b["output_config"], json!({"effort": "high"}), "{id}");
        assert_eq!(b["thinking"]["type"], "adaptive");
    }
}

#[test]
fn budget_generations_keep_budget_tokens() {
    for id in [
        "claude-3-7-sonnet-20250219",
        "claude-sonnet-4-20250514",
        "claude-opus-4-1",
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
    ] {
        let mut m = claude(id);
        m.max_tokens = 64_000;
        let b = body(&m, High);
        assert_eq!(
            b["thinking"],
            json!({"type": "enabled", "budget_tokens": 16_384}),
            "{id}"
        );
        assert!(b.get("output_config").is_none(), "{id}");
        assert!(body(&m, Off).get("thinking").is_none(), "{id}");
    }
}

#[test]
fn overrides_pick_the_form_and_the_effort() {
    // A proxy id the table does not know, told it is adaptive; Pi's string map values are the
    // effort; numbers (budgets from an older entry) are not efforts.
    let mut m = claude("corp/claude-next");
    m.compat.thinking_format = Some(FORMAT_ADAPTIVE.into());
    m.thinking_level_map.insert(Xhigh, Some("max".into()));
    m.thinking_level_map.insert(Medium, Some("8192".into()));
    m.thinking_level_map.insert(Minimal, None);
    assert_eq!(body(&m, Xhigh)["output_config"], json!({"effort": "max"}));
    assert_eq!(
        body(&m, Medium)["output_config"],
        json!({"effort": "medium"})
    );
    // Unknown generation: max is not assumed.
    let r = crate::thinking::resolve_thinking(&m, Max);
    assert_eq!(r.effective, Xhigh);
    assert_eq!(r.wire_value.as_deref(), Some("max"));
    // A null level is clamped away (minimal → off, the nearest lower supported level).
    let r = crate::thinking::resolve_thinking(&m, Minimal);
    assert_eq!(r.effective, Off);
    assert!(body(&m, Minimal).get("thinking").is_none());

    // Budgets left in the map of an adaptive model (an older models.json) do not make xhigh an
    // effort Opus 4.6 takes.
    let mut m = claude("claude-opus-4-6");
    m.thinking_level_map.insert(Xhigh, Some("32768".into()));
    m.thinking_level_map.insert(Max, Some("64000".into()));
    assert_eq!(body(&m, Xhigh)["output_config"], json!({"effort": "high"}));
    assert_eq!(body(&m, Max)["output_config"], json!({"effort": "max"}));

    // A dated 4.6 id forced back to the budget form.
    let mut m = claude("claude-sonnet-4-6-20260101");
    m.max_tokens = 64_000;
    m.compat.thinking_format = Some(FORMAT_BUDGET.into());
    assert_eq!(
        body(&m, Medium)["thinking"],
        json!({"type": "enabled", "budget_tokens": 8_192})
    );
}

#[test]
fn adaptive_thinking_survives_a_foreign_tool_turn() {
    // The budget form drops thinking when the open tool turn has no thinking block; adaptive
    // thinking has no such rule (Claude may skip thinking on any turn).
    let mut req = crate::test_support::rich_request(Api::AnthropicMessages, "openai-completions");
    req.model = claude("claude-opus-4-7");
    req.thinking = High;
    let b: Value = serde_json::from_slice(&crate::anthropic::build_body(&req).unwrap()).unwrap();
    assert_eq!(b["thinking"]["type"], "adaptive");
}

fn http400(message: &str) -> LlmError {
    LlmError::Http {
        provider: "anthropic".into(),
        status: 400,
        message: message.into(),
        retry_after: None,
        kind: ErrorKind::Fatal,
    }
}

#[test]
fn a_refused_form_says_what_to_change() {
    let m = claude("corp-opus");
    let e = explain_rejection(
        &m,
        http400(
            "\"thinking.type.enabled\" is not supported for this model. Use \
             \"thinking.type.adaptive\" and \"output_config.effort\" to control thinking behavior.",
        ),
    );
    let text = e.to_string();
    assert!(
        text.starts_with("HTTP 400 from anthropic: \"thinking.type.enabled\""),
        "{text}"
    );
    assert!(text.contains("cadre sent budget thinking"), "{text}");
    assert!(
        text.contains("\"thinkingFormat\": \"anthropic-adaptive\""),
        "{text}"
    );
    assert!(text.contains("anthropic/corp-opus"), "{text}");
    assert!(text.contains("--thinking off"), "{text}");
    assert_eq!(e.kind(), ErrorKind::Fatal);

    let m = claude("claude-opus-4-7");
    let text = explain_rejection(
        &m,
        http400("adaptive thinking is not supported on this model"),
    )
    .to_string();
    assert!(
        text.contains("\"thinkingFormat\": \"anthropic-budget\""),
        "{text}"
    );

    let text = explain_rejection(
        &m,
        http400("output_config.effort: xhigh is not a valid value"),
    )
    .to_string();
    assert!(text.contains("lower `--thinking` level"), "{text}");
    assert!(text.contains("thinkingLevelMap"), "{text}");

    // Unrelated 400s, other statuses and other APIs are left alone.
    let text =
        explain_rejection(&m, http400("messages: at least one message is required")).to_string();
    assert!(!text.contains("thinkingFormat"), "{text}");
    let other = LlmError::Http {
        provider: "anthropic".into(),
        status: 429,
        message: "thinking too fast".into(),
        retry_after: None,
        kind: ErrorKind::Retryable,
    };
    assert!(!explain_rejection(&m, other).to_string().contains("—"));
    let mut openai = m.clone();
    openai.api = Api::OpenAiCompletions;
    let text = explain_rejection(&openai, http400("budget_tokens unknown")).to_string();
    assert!(!text.contains("thinkingFormat"), "{text}");
}
