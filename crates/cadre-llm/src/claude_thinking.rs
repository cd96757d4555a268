//! Which thinking form a Claude model takes, and which efforts.
//!
//! Anthropic has two request forms for extended thinking:
//! - **budget**: `thinking: {"type": "enabled", "budget_tokens": N}` — Claude 3.7 Sonnet and the
//!   Claude 4, 4.1 and 4.5 models;
//! - **adaptive**: `thinking: {"type": "adaptive"}` with `output_config: {"effort": E}` — Claude
//!   Opus 4.6, Sonnet 4.6, Opus 4.7 and later. The budget form is deprecated on 4.6 and answered
//!   with a 400 from Opus 4.7 on, as is `{"type": "disabled"}`; thinking off therefore sends no
//!   `thinking` field at all.
//!
//! | generation                    | form     | efforts                         |
//! |-------------------------------|----------|---------------------------------|
//! | Claude 3.7, 4, 4.1, 4.5       | budget   | —                               |
//! | Opus 4.6, Sonnet 4.6          | adaptive | low, medium, high, max          |
//! | 4.7 and later (Opus 4.7, …)   | adaptive | low, medium, high, xhigh, max   |
//!
//! Sources: Anthropic's adaptive thinking and effort pages (platform.claude.com, "Adaptive
//! thinking", "Effort": `max` on Opus 4.6, Sonnet 4.6 and later, `xhigh` from Opus 4.7) and Pi
//! 0.73.1 (`supportsAdaptiveThinking`, `mapThinkingLevelToEffort`, whose catalog maps `xhigh` to
//! `xhigh` on Opus 4.7 and to `max` on Opus 4.6).
//!
//! Ids are read wherever the Claude name appears in them, so proxy and cloud ids (`anthropic/
//! claude-opus-4.7`, `us.anthropic.claude-sonnet-4-6-v1:0`) get the form of their generation. An
//! id with no recognisable generation gets the budget form unless the model entry says otherwise
//! with `compat.thinkingFormat` (`"anthropic-adaptive"` or `"anthropic-budget"`).

use cadre_protocol::ThinkingLevel;

use crate::error::LlmError;
use crate::model::{Api, Model};

/// `compat.thinkingFormat` value that selects the adaptive form.
pub const FORMAT_ADAPTIVE: &str = "anthropic-adaptive";
/// `compat.thinkingFormat` value that selects the budget form.
pub const FORMAT_BUDGET: &str = "anthropic-budget";

/// The request form of Claude's extended thinking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkingForm {
    /// `{"type": "enabled", "budget_tokens": N}`.
    Budget,
    /// `{"type": "adaptive"}` + `output_config.effort`.
    Adaptive,
}

/// A Claude model line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Opus,
    Sonnet,
    Haiku,
}

/// A Claude family and version, read from a model id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation {
    pub family: Family,
    pub major: u32,
    pub minor: u32,
}

impl Generation {
    fn at_least(&self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }

    /// The form the generation takes (see the module table).
    pub fn form(&self) -> ThinkingForm {
        if self.at_least(4, 6) {
            ThinkingForm::Adaptive
        } else {
            ThinkingForm::Budget
        }
    }

    /// Whether an adaptive generation accepts `effort` (`low`, `medium`, `high`, `xhigh`, `max`).
    pub fn accepts_effort(&self, effort: &str) -> bool {
        match effort {
            "low" | "medium" | "high" => self.form() == ThinkingForm::Adaptive,
            "max" => self.at_least(4, 6),
            "xhigh" => self.at_least(4, 7),
            _ => false,
        }
    }
}

/// The Claude generation named in `id`, if any: `claude-opus-4-7`, `claude-sonnet-4-20250514`
/// (a date is not a minor version), `claude-3-7-sonnet-20250219`, `anthropic/claude-opus-4.7`,
/// `us.anthropic.claude-sonnet-4-6-v1:0`, `claude-sonnet-5`.
pub fn generation(id: &str) -> Option<Generation> {
    let lower = id.to_ascii_lowercase();
    let start = lower.find("claude-")?;
    let words: Vec<&str> = lower[start + "claude-".len()..]
        .split(['-', '.', ':', '/', '@'])
        .collect();
    let number = |w: Option<&&str>| -> Option<u32> {
        let w = w?;
        // A date (`20250514`) or a build tag is not a version number.
        (w.len() <= 2 && !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()))
            .then(|| w.parse().ok())
            .flatten()
    };
    let family = |w: &str| match w {
        "opus" => Some(Family::Opus),
        "sonnet" => Some(Family::Sonnet),
        "haiku" => Some(Family::Haiku),
        _ => None,
    };
    // New style: claude-<family>-<major>[-<minor>].
    if let Some(f) = words.first().and_then(|w| family(w)) {
        let major = number(words.get(1))?;
        let minor = number(words.get(2)).unwrap_or(0);
        return Some(Generation {
            family: f,
            major,
            minor,
        });
    }
    // Old style: claude-<major>[-<minor>]-<family>.
    let major = number(words.first())?;
    let (minor, rest) = match number(words.get(1)) {
        Some(minor) => (minor, 2),
        None => (0, 1),
    };
    let f = family(words.get(rest)?)?;
    Some(Generation {
        family: f,
        major,
        minor,
    })
}

/// The thinking form for `model`: `compat.thinkingFormat` when it names one, else the form of
/// the generation its id names, else budget.
pub fn thinking_form(model: &Model) -> ThinkingForm {
    match model.compat.thinking_format.as_deref() {
        Some(FORMAT_ADAPTIVE) => return ThinkingForm::Adaptive,
        Some(FORMAT_BUDGET) => return ThinkingForm::Budget,
        _ => {}
    }
    generation(&model.id).map_or(ThinkingForm::Budget, |g| g.form())
}

/// The effort a level means when the model entry does not map it: `minimal` is Anthropic's
/// `low` (its lowest effort, as Pi maps it); `off` has none.
pub fn default_effort(level: ThinkingLevel) -> Option<&'static str> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal | ThinkingLevel::Low => Some("low"),
        ThinkingLevel::Medium => Some("medium"),
        ThinkingLevel::High => Some("high"),
        ThinkingLevel::Xhigh => Some("xhigh"),
        ThinkingLevel::Max => Some("max"),
    }
}

/// Whether an adaptive model takes `level` when its entry does not map it: `off` to `high`
/// always; `xhigh` and `max` when the generation accepts that effort.
pub fn adaptive_default_supported(model: &Model, level: ThinkingLevel) -> bool {
    match level {
        ThinkingLevel::Xhigh | ThinkingLevel::Max => generation(&model.id)
            .zip(default_effort(level))
            .is_some_and(|(g, e)| g.accepts_effort(e)),
        _ => true,
    }
}

/// The efforts an adaptive model takes, for messages (`low, medium, high, max`).
pub fn efforts_of(model: &Model) -> String {
    let mut efforts = vec!["low", "medium", "high"];
    for (level, effort) in [(ThinkingLevel::Xhigh, "xhigh"), (ThinkingLevel::Max, "max")] {
        if crate::thinking::level_supported(model, level) {
            efforts.push(effort);
        }
    }
    efforts.join(", ")
}

/// A 400 from Anthropic that refuses the thinking form or effort cadre sent, with what the user
/// can change appended; any other error is returned as it was.
pub fn explain_rejection(model: &Model, error: LlmError) -> LlmError {
    let LlmError::Http {
        provider,
        status: 400,
        message,
        retry_after,
        kind,
    } = error
    else {
        return error;
    };
    let hint = (model.api == Api::AnthropicMessages)
        .then(|| rejection_hint(model, &message))
        .flatten();
    let message = match hint {
        Some(hint) => format!("{message} — {hint}"),
        None => message,
    };
    LlmError::Http {
        provider,
        status: 400,
        message,
        retry_after,
        kind,
    }
}

fn rejection_hint(model: &Model, message: &str) -> Option<String> {
    let lower = message.to_ascii_lowercase();
    let name = model.full_name();
    let mentions = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if !mentions(&["thinking", "budget_tokens", "adaptive", "effort"]) {
        return None;
    }
    let set = |format: &str| {
        format!(
            "set `\"compat\": {{\"thinkingFormat\": \"{format}\"}}` on {name} in models.json \
             (`modelOverrides` for a built-in model), or run with `--thinking off`"
        )
    };
    if mentions(&["effort"]) && !mentions(&["budget_tokens", "thinking.type"]) {
        return Some(format!(
            "{name} refused the thinking effort cadre sent; choose a lower `--thinking` level, \
             or map the level to an effort the model takes with `thinkingLevelMap` in models.json"
        ));
    }
    Some(match thinking_form(model) {
        ThinkingForm::Budget => format!(
            "cadre sent budget thinking (`thinking.type: enabled` with `budget_tokens`), which \
             {name} does not take: {}",
            set(FORMAT_ADAPTIVE)
        ),
        ThinkingForm::Adaptive => format!(
            "cadre sent adaptive thinking (`thinking.type: adaptive` with `output_config.effort`), \
             which {name} does not take: {}",
            set(FORMAT_BUDGET)
        ),
    })
}

#[cfg(test)]
#[path = "claude_thinking_tests.rs"]
mod tests;
