//! Built-in providers and a short list of well-known models for each.
//!
//! Prices are USD per million tokens as published by the vendors; limits are the vendors' context
//! window and maximum output. A user's `models.json` can override any of it (`modelOverrides`) or
//! add models, so this list is a convenience, not a catalogue.

use std::collections::BTreeMap;

use cadre_protocol::ThinkingLevel;

use super::{ApiKind, ModelDef, ModelSource, ProviderDef};
use crate::model::{Api, Compat, ModelCost};

struct Spec {
    id: &'static str,
    name: &'static str,
    reasoning: bool,
    context_window: u64,
    max_tokens: u64,
    cost: [f64; 4],
    /// Explicit `thinkingLevelMap` entries.
    levels: &'static [(ThinkingLevel, Option<&'static str>)],
}

/// Claude's extended thinking takes any budget below `max_tokens`, so the two levels above `high`
/// are offered too; the values are the budgets (see `thinking.rs`, capped to the model's output).
const CLAUDE_LEVELS: &[(ThinkingLevel, Option<&str>)] = &[
    (ThinkingLevel::Xhigh, Some("32768")),
    (ThinkingLevel::Max, Some("64000")),
];

/// GPT-5 family reasoning cannot be switched off: the lowest effort is `minimal`.
const GPT5_LEVELS: &[(ThinkingLevel, Option<&str>)] = &[(ThinkingLevel::Off, None)];

const ANTHROPIC: &[Spec] = &[
    Spec {
        id: "claude-sonnet-4-5",
        name: "Claude Sonnet 4.5",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 64_000,
        cost: [3.0, 15.0, 0.3, 3.75],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-opus-4-5",
        name: "Claude Opus 4.5",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 64_000,
        cost: [5.0, 25.0, 0.5, 6.25],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-opus-4-1",
        name: "Claude Opus 4.1",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 32_000,
        cost: [15.0, 75.0, 1.5, 18.75],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-haiku-4-5",
        name: "Claude Haiku 4.5",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 64_000,
        cost: [1.0, 5.0, 0.1, 1.25],
        levels: CLAUDE_LEVELS,
    },
    // Newer models and the dated ids of older ones, which role files written for Claude Code
    // name (`claude-sonnet-4-20250514`); figures as Anthropic publishes them.
    Spec {
        id: "claude-sonnet-4-6",
        name: "Claude Sonnet 4.6",
        reasoning: true,
        context_window: 1_000_000,
        max_tokens: 64_000,
        cost: [3.0, 15.0, 0.3, 3.75],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-opus-4-7",
        name: "Claude Opus 4.7",
        reasoning: true,
        context_window: 1_000_000,
        max_tokens: 128_000,
        cost: [5.0, 25.0, 0.5, 6.25],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-opus-4-6",
        name: "Claude Opus 4.6",
        reasoning: true,
        context_window: 1_000_000,
        max_tokens: 128_000,
        cost: [5.0, 25.0, 0.5, 6.25],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-sonnet-4-5-20250929",
        name: "Claude Sonnet 4.5 (2025-09-29)",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 64_000,
        cost: [3.0, 15.0, 0.3, 3.75],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-opus-4-5-20251101",
        name: "Claude Opus 4.5 (2025-11-01)",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 64_000,
        cost: [5.0, 25.0, 0.5, 6.25],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-haiku-4-5-20251001",
        name: "Claude Haiku 4.5 (2025-10-01)",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 64_000,
        cost: [1.0, 5.0, 0.1, 1.25],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-opus-4-1-20250805",
        name: "Claude Opus 4.1 (2025-08-05)",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 32_000,
        cost: [15.0, 75.0, 1.5, 18.75],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-opus-4-0",
        name: "Claude Opus 4",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 32_000,
        cost: [15.0, 75.0, 1.5, 18.75],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-opus-4-20250514",
        name: "Claude Opus 4 (2025-05-14)",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 32_000,
        cost: [15.0, 75.0, 1.5, 18.75],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-sonnet-4-0",
        name: "Claude Sonnet 4",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 64_000,
        cost: [3.0, 15.0, 0.3, 3.75],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-sonnet-4-20250514",
        name: "Claude Sonnet 4 (2025-05-14)",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 64_000,
        cost: [3.0, 15.0, 0.3, 3.75],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-3-7-sonnet-20250219",
        name: "Claude Sonnet 3.7",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 64_000,
        cost: [3.0, 15.0, 0.3, 3.75],
        levels: CLAUDE_LEVELS,
    },
    Spec {
        id: "claude-3-5-haiku-20241022",
        name: "Claude Haiku 3.5",
        reasoning: false,
        context_window: 200_000,
        max_tokens: 8_192,
        cost: [0.8, 4.0, 0.08, 1.0],
        levels: &[],
    },
    Spec {
        id: "claude-3-5-haiku-latest",
        name: "Claude Haiku 3.5 (latest)",
        reasoning: false,
        context_window: 200_000,
        max_tokens: 8_192,
        cost: [0.8, 4.0, 0.08, 1.0],
        levels: &[],
    },
    Spec {
        id: "claude-3-haiku-20240307",
        name: "Claude Haiku 3",
        reasoning: false,
        context_window: 200_000,
        max_tokens: 4_096,
        cost: [0.25, 1.25, 0.03, 0.3],
        levels: &[],
    },
];

const OPENAI: &[Spec] = &[
    Spec {
        id: "gpt-5",
        name: "GPT-5",
        reasoning: true,
        context_window: 400_000,
        max_tokens: 128_000,
        cost: [1.25, 10.0, 0.125, 0.0],
        levels: GPT5_LEVELS,
    },
    Spec {
        id: "gpt-5-mini",
        name: "GPT-5 mini",
        reasoning: true,
        context_window: 400_000,
        max_tokens: 128_000,
        cost: [0.25, 2.0, 0.025, 0.0],
        levels: GPT5_LEVELS,
    },
    Spec {
        id: "gpt-4.1",
        name: "GPT-4.1",
        reasoning: false,
        context_window: 1_047_576,
        max_tokens: 32_768,
        cost: [2.0, 8.0, 0.5, 0.0],
        levels: &[],
    },
];

const OPENROUTER: &[Spec] = &[
    Spec {
        id: "anthropic/claude-sonnet-4.5",
        name: "Claude Sonnet 4.5 (OpenRouter)",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 64_000,
        cost: [3.0, 15.0, 0.3, 3.75],
        levels: &[],
    },
    Spec {
        id: "anthropic/claude-opus-4.5",
        name: "Claude Opus 4.5 (OpenRouter)",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 64_000,
        cost: [5.0, 25.0, 0.5, 6.25],
        levels: &[],
    },
    Spec {
        id: "anthropic/claude-haiku-4.5",
        name: "Claude Haiku 4.5 (OpenRouter)",
        reasoning: true,
        context_window: 200_000,
        max_tokens: 64_000,
        cost: [1.0, 5.0, 0.1, 1.25],
        levels: &[],
    },
    Spec {
        id: "openai/gpt-5",
        name: "GPT-5 (OpenRouter)",
        reasoning: true,
        context_window: 400_000,
        max_tokens: 128_000,
        cost: [1.25, 10.0, 0.125, 0.0],
        levels: GPT5_LEVELS,
    },
    Spec {
        id: "openai/gpt-4.1-mini",
        name: "GPT-4.1 mini (OpenRouter)",
        reasoning: false,
        context_window: 1_047_576,
        max_tokens: 32_768,
        cost: [0.4, 1.6, 0.1, 0.0],
        levels: &[],
    },
];

fn model(spec: &Spec, api: Api) -> ModelDef {
    let [input, output, cache_read, cache_write] = spec.cost;
    ModelDef {
        id: spec.id.to_string(),
        name: spec.name.to_string(),
        api: ApiKind::Supported(api),
        base_url: None,
        reasoning: spec.reasoning,
        // Every built-in model reads images.
        input: vec!["text".to_string(), "image".to_string()],
        thinking_level_map: spec
            .levels
            .iter()
            .map(|(l, v)| (*l, v.map(str::to_string)))
            .collect(),
        context_window: spec.context_window,
        max_tokens: spec.max_tokens,
        cost: ModelCost {
            input,
            output,
            cache_read,
            cache_write,
        },
        compat: Compat::default(),
        headers: BTreeMap::new(),
        source: ModelSource::BuiltIn,
    }
}

fn provider(name: &str, api: Api, base_url: &str, key_env: &str, specs: &[Spec]) -> ProviderDef {
    ProviderDef {
        name: name.to_string(),
        builtin: true,
        base_url: Some(base_url.to_string()),
        api: ApiKind::Supported(api),
        api_key: None,
        default_key_env: Some(key_env.to_string()),
        headers: BTreeMap::new(),
        auth_header: false,
        models: specs.iter().map(|s| model(s, api)).collect(),
    }
}

/// The built-in providers, in display order.
pub fn providers() -> Vec<ProviderDef> {
    vec![
        provider(
            "anthropic",
            Api::AnthropicMessages,
            "https://api.anthropic.com",
            "ANTHROPIC_API_KEY",
            ANTHROPIC,
        ),
        provider(
            "openai",
            Api::OpenAiCompletions,
            "https://api.openai.com/v1",
            "OPENAI_API_KEY",
            OPENAI,
        ),
        provider(
            "openrouter",
            Api::OpenAiCompletions,
            "https://openrouter.ai/api/v1",
            "OPENROUTER_API_KEY",
            OPENROUTER,
        ),
    ]
}
