//! Clamp a requested thinking level to what a model accepts and compute the value sent on the
//! wire.
//!
//! Support rules (Pi's `thinkingLevelMap` tristate, extended to cadre's `max`):
//! - a model with `reasoning: false` only takes `off`;
//! - a level mapped to `null` is unsupported;
//! - `off` .. `high` are supported unless mapped to `null`;
//! - `xhigh` and `max` are supported only when the map gives them a value;
//! - an unsupported level falls to the nearest supported lower level, else the nearest higher.
//!
//! Wire values:
//! - OpenAI (`openai-completions`, `openai-responses`): the `reasoning_effort` string — the map's
//!   value when given, else the level name (`minimal`, `low`, `medium`, `high`); `off` sends
//!   nothing unless the map gives it a value (e.g. `"none"`); nothing at all when
//!   `compat.supportsReasoningEffort` is `false`.
//! - Anthropic (`anthropic-messages`), in the form the model takes
//!   ([`crate::claude_thinking::thinking_form`]):
//!   - budget: the thinking budget in tokens, as a decimal string — the map's value when it is a
//!     number, else [`anthropic_budget`]'s table, capped to `max_tokens - ANSWER_RESERVE_TOKENS`
//!     so the answer keeps room. When that cap is below Anthropic's minimum budget thinking is
//!     turned off.
//!   - adaptive: the effort (`low`, `medium`, `high`, `xhigh`, `max`) — the map's value when it
//!     is a string that is not a number (Pi's rule), else the level's effort (`minimal` → `low`).
//!     Without a map entry `xhigh` and `max` are supported when the generation accepts them
//!     (see the table in `claude_thinking.rs`).
//!
//!   `off` sends nothing.

use cadre_protocol::ThinkingLevel;

use crate::claude_thinking::{self, ThinkingForm};
use crate::model::{Api, Model};

/// Anthropic's smallest accepted `budget_tokens`.
pub const ANTHROPIC_MIN_BUDGET: u64 = 1024;

/// Output tokens kept free for the answer when capping a thinking budget.
pub const ANSWER_RESERVE_TOKENS: u64 = 1024;

/// Default Anthropic thinking budgets per level (tokens).
///
/// | level   | budget |
/// |---------|--------|
/// | minimal | 1024   |
/// | low     | 2048   |
/// | medium  | 8192   |
/// | high    | 16384  |
/// | xhigh   | 32768  |
/// | max     | 64000  |
pub fn anthropic_budget(level: ThinkingLevel) -> Option<u64> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some(1024),
        ThinkingLevel::Low => Some(2048),
        ThinkingLevel::Medium => Some(8192),
        ThinkingLevel::High => Some(16_384),
        ThinkingLevel::Xhigh => Some(32_768),
        ThinkingLevel::Max => Some(64_000),
    }
}

/// The outcome of clamping: recorded with the session (R8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThinkingResolution {
    pub requested: ThinkingLevel,
    pub effective: ThinkingLevel,
    /// Why `effective` differs from `requested`; `None` when it does not.
    pub clamp_reason: Option<String>,
    /// The `reasoning_effort` string (OpenAI), the budget in tokens (Anthropic budget form) or
    /// the effort (Anthropic adaptive form); `None` = send no thinking parameter.
    pub wire_value: Option<String>,
}

impl ThinkingResolution {
    pub fn is_clamped(&self) -> bool {
        self.requested != self.effective
    }

    /// The Anthropic thinking budget, when the wire value is one.
    pub fn budget_tokens(&self) -> Option<u64> {
        self.wire_value.as_deref().and_then(|v| v.parse().ok())
    }
}

/// Whether `model` takes `level` as is.
pub fn level_supported(model: &Model, level: ThinkingLevel) -> bool {
    if !model.reasoning {
        return level == ThinkingLevel::Off;
    }
    match model.thinking_level_map.get(&level) {
        Some(None) => false,
        // A budget (a number) says nothing about which efforts an adaptive model takes.
        Some(Some(v)) if is_adaptive(model) && v.trim().parse::<u64>().is_ok() => {
            claude_thinking::adaptive_default_supported(model, level)
        }
        Some(Some(_)) => true,
        None if is_adaptive(model) => claude_thinking::adaptive_default_supported(model, level),
        None => level <= ThinkingLevel::High,
    }
}

fn is_adaptive(model: &Model) -> bool {
    model.api == Api::AnthropicMessages
        && claude_thinking::thinking_form(model) == ThinkingForm::Adaptive
}

/// Clamp `requested` for `model` and compute its wire value. Pure.
pub fn resolve_thinking(model: &Model, requested: ThinkingLevel) -> ThinkingResolution {
    let name = model.full_name();
    let (mut effective, mut clamp_reason) = if !model.reasoning {
        let reason =
            (requested != ThinkingLevel::Off).then(|| format!("{name} does not support reasoning"));
        (ThinkingLevel::Off, reason)
    } else if level_supported(model, requested) {
        (requested, None)
    } else {
        match nearest_supported(model, requested) {
            Some(level) if is_adaptive(model) => (
                level,
                Some(format!(
                    "{name} does not support thinking level {requested} (its efforts: {}); \
                     using {level}",
                    claude_thinking::efforts_of(model)
                )),
            ),
            Some(level) => (
                level,
                Some(format!(
                    "{name} does not support thinking level {requested}; using {level}"
                )),
            ),
            None => (
                ThinkingLevel::Off,
                Some(format!("{name} supports no thinking level")),
            ),
        }
    };

    let wire_value = match model.api {
        Api::OpenAiCompletions | Api::OpenAiResponses => openai_effort(model, effective),
        Api::AnthropicMessages if is_adaptive(model) => anthropic_effort(model, effective),
        Api::AnthropicMessages => match anthropic_wire_budget(model, effective) {
            Ok(budget) => budget.map(|b| b.to_string()),
            Err(cap) => {
                clamp_reason = Some(format!(
                    "{name} max_tokens {} leaves {cap} tokens for thinking, below the minimum \
                     {ANTHROPIC_MIN_BUDGET}; thinking off",
                    model.max_tokens
                ));
                effective = ThinkingLevel::Off;
                None
            }
        },
    };
    ThinkingResolution {
        requested,
        effective,
        clamp_reason,
        wire_value,
    }
}

/// Nearest supported level below `requested`, else above it.
fn nearest_supported(model: &Model, requested: ThinkingLevel) -> Option<ThinkingLevel> {
    let all = ThinkingLevel::ALL;
    let below = all
        .iter()
        .rev()
        .copied()
        .filter(|l| *l < requested)
        .find(|l| level_supported(model, *l));
    below.or_else(|| {
        all.iter()
            .copied()
            .filter(|l| *l > requested)
            .find(|l| level_supported(model, *l))
    })
}

fn openai_effort(model: &Model, level: ThinkingLevel) -> Option<String> {
    // A server flagged as not understanding `reasoning_effort` gets none (Pi's compat switch).
    if !model.reasoning || model.compat.supports_reasoning_effort == Some(false) {
        return None;
    }
    if let Some(Some(v)) = model.thinking_level_map.get(&level) {
        return Some(v.clone());
    }
    match level {
        ThinkingLevel::Off => None,
        // xhigh/max only get here with a mapped value (handled above); `high` is the safe
        // fallback should the map be bypassed.
        ThinkingLevel::Xhigh | ThinkingLevel::Max => Some("high".to_string()),
        other => Some(other.as_str().to_string()),
    }
}

/// The adaptive effort for `level`: a mapped string that is not a budget, else the level's.
fn anthropic_effort(model: &Model, level: ThinkingLevel) -> Option<String> {
    if level == ThinkingLevel::Off || !model.reasoning {
        return None;
    }
    let mapped = model
        .thinking_level_map
        .get(&level)
        .and_then(|v| v.as_deref())
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.parse::<u64>().is_err());
    mapped
        .or_else(|| claude_thinking::default_effort(level))
        .map(str::to_string)
}

/// The budget for `level`, or `Err(cap)` when the model's output limit leaves too little room.
fn anthropic_wire_budget(model: &Model, level: ThinkingLevel) -> Result<Option<u64>, u64> {
    if level == ThinkingLevel::Off || !model.reasoning {
        return Ok(None);
    }
    let mapped = model
        .thinking_level_map
        .get(&level)
        .and_then(|v| v.as_deref())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let Some(budget) = mapped.or_else(|| anthropic_budget(level)) else {
        return Ok(None);
    };
    let cap = model.max_tokens.saturating_sub(ANSWER_RESERVE_TOKENS);
    if cap < ANTHROPIC_MIN_BUDGET {
        return Err(cap);
    }
    Ok(Some(budget.clamp(ANTHROPIC_MIN_BUDGET, cap)))
}

// Tests cover R8: the clamp table and wire values.
#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::{Compat, ModelCost};
    use ThinkingLevel::*;

    fn model(api: Api, reasoning: bool, map: &[(ThinkingLevel, Option<&str>)]) -> Model {
        Model {
            provider: "p".into(),
            id: "m".into(),
            name: "m".into(),
            api,
            base_url: "http://localhost".into(),
            api_key: None,
            headers: BTreeMap::new(),
            reasoning,
            thinking_level_map: map.iter().map(|(l, v)| (*l, v.map(String::from))).collect(),
            input: vec!["text".into(), "image".into()],
            context_window: 200_000,
            max_tokens: 64_000,
            cost: ModelCost::default(),
            compat: Compat::default(),
        }
    }

    fn eff(m: &Model, l: ThinkingLevel) -> ThinkingLevel {
        resolve_thinking(m, l).effective
    }

    #[test]
    fn non_reasoning_model_is_always_off() {
        for api in [
            Api::OpenAiCompletions,
            Api::AnthropicMessages,
            Api::OpenAiResponses,
        ] {
            let m = model(api, false, &[]);
            for l in ThinkingLevel::ALL {
                let r = resolve_thinking(&m, l);
                assert_eq!(r.effective, Off);
                assert_eq!(r.wire_value, None);
                assert_eq!(r.clamp_reason.is_some(), l != Off, "{l}");
                assert_eq!(r.is_clamped(), l != Off);
            }
        }
        let r = resolve_thinking(&model(Api::OpenAiCompletions, false, &[]), High);
        assert!(
            r.clamp_reason
                .unwrap()
                .contains("does not support reasoning")
        );
    }

    #[test]
    fn default_map_supports_off_to_high_and_clamps_above() {
        let m = model(Api::OpenAiCompletions, true, &[]);
        let table = [
            (Off, Off, None),
            (Minimal, Minimal, Some("minimal")),
            (Low, Low, Some("low")),
            (Medium, Medium, Some("medium")),
            (High, High, Some("high")),
            (Xhigh, High, Some("high")),
            (Max, High, Some("high")),
        ];
        for (req, want, wire) in table {
            let r = resolve_thinking(&m, req);
            assert_eq!(r.effective, want, "{req}");
            assert_eq!(r.wire_value.as_deref(), wire, "{req}");
            assert_eq!(r.clamp_reason.is_some(), req != want, "{req}");
        }
    }

    #[test]
    fn mapped_values_are_sent_and_enable_xhigh_and_max() {
        let m = model(
            Api::OpenAiCompletions,
            true,
            &[
                (Off, Some("none")),
                (Xhigh, Some("xhigh")),
                (Max, Some("max")),
            ],
        );
        let r = resolve_thinking(&m, Off);
        assert_eq!((r.effective, r.wire_value.as_deref()), (Off, Some("none")));
        let r = resolve_thinking(&m, Xhigh);
        assert_eq!(
            (r.effective, r.wire_value.as_deref()),
            (Xhigh, Some("xhigh"))
        );
        let r = resolve_thinking(&m, Max);
        assert_eq!((r.effective, r.wire_value.as_deref()), (Max, Some("max")));
        assert!(r.clamp_reason.is_none());
    }

    #[test]
    fn max_falls_to_xhigh_when_only_xhigh_is_mapped() {
        let m = model(Api::OpenAiCompletions, true, &[(Xhigh, Some("max"))]);
        let r = resolve_thinking(&m, Max);
        assert_eq!(r.effective, Xhigh);
        assert_eq!(r.wire_value.as_deref(), Some("max"));
        assert!(r.clamp_reason.unwrap().contains("using xhigh"));
    }

    #[test]
    fn null_levels_clamp_down_then_up() {
        // Pi's deepseek example: only off, high and xhigh.
        let m = model(
            Api::OpenAiCompletions,
            true,
            &[
                (Minimal, None),
                (Low, None),
                (Medium, None),
                (High, Some("high")),
                (Xhigh, Some("max")),
            ],
        );
        assert_eq!(eff(&m, Minimal), Off);
        assert_eq!(eff(&m, Low), Off);
        assert_eq!(eff(&m, Medium), Off);
        assert_eq!(eff(&m, High), High);
        assert_eq!(eff(&m, Xhigh), Xhigh);
        assert_eq!(eff(&m, Max), Xhigh);

        // Thinking cannot be disabled: off goes up to the lowest supported level.
        let m = model(Api::OpenAiCompletions, true, &[(Off, None)]);
        let r = resolve_thinking(&m, Off);
        assert_eq!(r.effective, Minimal);
        assert_eq!(r.wire_value.as_deref(), Some("minimal"));
        assert!(r.clamp_reason.unwrap().contains("using minimal"));

        let m = model(
            Api::OpenAiCompletions,
            true,
            &[(Off, None), (Minimal, None), (Low, None)],
        );
        assert_eq!(eff(&m, Off), Medium);
        assert_eq!(eff(&m, Minimal), Medium);
    }

    #[test]
    fn nothing_supported_means_off() {
        let all_null: Vec<_> = ThinkingLevel::ALL.iter().map(|l| (*l, None)).collect();
        let m = model(Api::OpenAiCompletions, true, &all_null);
        let r = resolve_thinking(&m, Medium);
        assert_eq!(r.effective, Off);
        assert_eq!(r.wire_value, None);
        assert!(r.clamp_reason.unwrap().contains("no thinking level"));
    }

    #[test]
    fn anthropic_budget_table() {
        let m = model(
            Api::AnthropicMessages,
            true,
            &[(Xhigh, Some("32768")), (Max, Some("64000"))],
        );
        // max_tokens 64000 → cap 62976.
        let table = [
            (Off, None),
            (Minimal, Some(1024)),
            (Low, Some(2048)),
            (Medium, Some(8192)),
            (High, Some(16_384)),
            (Xhigh, Some(32_768)),
            (Max, Some(62_976)),
        ];
        for (level, want) in table {
            let r = resolve_thinking(&m, level);
            assert_eq!(r.effective, level);
            assert_eq!(r.budget_tokens(), want, "{level}");
            assert!(r.clamp_reason.is_none());
        }
        for l in ThinkingLevel::ALL {
            let b = anthropic_budget(l);
            assert_eq!(b.is_none(), l == Off);
        }
    }

    #[test]
    fn anthropic_budget_capped_below_max_tokens() {
        let mut m = model(Api::AnthropicMessages, true, &[]);
        m.max_tokens = 8192;
        let r = resolve_thinking(&m, High);
        assert_eq!(r.effective, High);
        assert_eq!(r.budget_tokens(), Some(8192 - ANSWER_RESERVE_TOKENS));
        let r = resolve_thinking(&m, Low);
        assert_eq!(r.budget_tokens(), Some(2048));
    }

    #[test]
    fn anthropic_tiny_max_tokens_turns_thinking_off() {
        let mut m = model(Api::AnthropicMessages, true, &[]);
        m.max_tokens = 1500;
        let r = resolve_thinking(&m, Medium);
        assert_eq!(r.effective, Off);
        assert_eq!(r.wire_value, None);
        assert!(r.clamp_reason.unwrap().contains("below the minimum"));
    }

    #[test]
    fn anthropic_mapped_non_numeric_value_uses_table_and_small_values_are_raised() {
        let m = model(
            Api::AnthropicMessages,
            true,
            &[(Xhigh, Some("very-high")), (Low, Some("10"))],
        );
        assert_eq!(resolve_thinking(&m, Xhigh).budget_tokens(), Some(32_768));
        assert_eq!(
            resolve_thinking(&m, Low).budget_tokens(),
            Some(ANTHROPIC_MIN_BUDGET)
        );
    }

    #[test]
    fn anthropic_clamped_level_uses_effective_budget() {
        let m = model(Api::AnthropicMessages, true, &[]);
        let r = resolve_thinking(&m, Max);
        assert_eq!(r.effective, High);
        assert_eq!(r.budget_tokens(), Some(16_384));
        assert!(r.clamp_reason.unwrap().contains("thinking level max"));
    }

    #[test]
    fn openai_effort_for_every_level_with_responses_api() {
        let m = model(Api::OpenAiResponses, true, &[]);
        assert_eq!(resolve_thinking(&m, Off).wire_value, None);
        assert_eq!(
            resolve_thinking(&m, Medium).wire_value.as_deref(),
            Some("medium")
        );
        assert_eq!(resolve_thinking(&m, Medium).budget_tokens(), None);
    }

    #[test]
    fn openai_without_reasoning_effort_support_sends_nothing() {
        let mut m = model(Api::OpenAiCompletions, true, &[]);
        m.compat.supports_reasoning_effort = Some(false);
        let r = resolve_thinking(&m, High);
        assert_eq!(r.effective, High);
        assert_eq!(r.wire_value, None);
        assert!(r.clamp_reason.is_none());
    }

    #[test]
    fn level_supported_matches_rules() {
        let m = model(
            Api::OpenAiCompletions,
            true,
            &[(Low, None), (Max, Some("x"))],
        );
        let got: Vec<bool> = ThinkingLevel::ALL
            .iter()
            .map(|l| level_supported(&m, *l))
            .collect();
        assert_eq!(got, [true, true, false, true, true, false, true]);
    }
}
