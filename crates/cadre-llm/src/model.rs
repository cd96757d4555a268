//! A resolved model: everything a provider client needs to call it.

use std::collections::BTreeMap;

use cadre_protocol::ThinkingLevel;
use serde::{Deserialize, Serialize};

/// Wire format of a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Api {
    #[serde(rename = "openai-completions")]
    OpenAiCompletions,
    #[serde(rename = "anthropic-messages")]
    AnthropicMessages,
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
}

impl Api {
    pub fn as_str(self) -> &'static str {
        match self {
            Api::OpenAiCompletions => "openai-completions",
            Api::AnthropicMessages => "anthropic-messages",
            Api::OpenAiResponses => "openai-responses",
        }
    }

    pub fn parse(s: &str) -> Option<Api> {
        match s {
            "openai-completions" => Some(Api::OpenAiCompletions),
            "anthropic-messages" => Some(Api::AnthropicMessages),
            "openai-responses" => Some(Api::OpenAiResponses),
            _ => None,
        }
    }
}

/// Price per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelCost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

/// Pi's `compat` switches for OpenAI-compatible servers (unknown keys are ignored).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Compat {
    pub supports_developer_role: Option<bool>,
    pub supports_reasoning_effort: Option<bool>,
    pub supports_usage_in_streaming: Option<bool>,
    pub max_tokens_field: Option<String>,
    pub supports_store: Option<bool>,
    /// Pi's `thinkingFormat`. For `anthropic-messages` cadre reads `anthropic-adaptive` and
    /// `anthropic-budget` (see `claude_thinking.rs`); other values are kept and ignored.
    pub thinking_format: Option<String>,
}

/// A model resolved from the registry, with its credentials. `Debug` redacts the key and header
/// values (they may carry credentials too).
#[derive(Clone, PartialEq)]
pub struct Model {
    /// Provider name, e.g. `anthropic`.
    pub provider: String,
    /// Model id sent to the API.
    pub id: String,
    /// Display name.
    pub name: String,
    pub api: Api,
    /// Base URL including the version path (`https://api.openai.com/v1`,
    /// `https://api.anthropic.com`).
    pub base_url: String,
    /// Resolved API key (never written to disk or logs by cadre).
    pub api_key: Option<String>,
    /// Extra request headers (values resolved).
    pub headers: BTreeMap<String, String>,
    pub reasoning: bool,
    /// Pi's `input`: the kinds of content the model takes, `text` and possibly `image`. Images
    /// sent to a model without `image` are replaced by a note (see `images.rs`).
    pub input: Vec<String>,
    /// Pi `thinkingLevelMap`: `None` value = level unsupported, `Some(s)` = value sent.
    pub thinking_level_map: BTreeMap<ThinkingLevel, Option<String>>,
    pub context_window: u64,
    pub max_tokens: u64,
    pub cost: ModelCost,
    pub compat: Compat,
}

impl Model {
    /// `provider/id`, the name users type.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.provider, self.id)
    }

    /// Whether the model takes image blocks (`input` includes `image`).
    pub fn accepts_images(&self) -> bool {
        self.input.iter().any(|kind| kind == "image")
    }
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("provider", &self.provider)
            .field("id", &self.id)
            .field("name", &self.name)
            .field("api", &self.api)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("reasoning", &self.reasoning)
            .field("input", &self.input)
            .field("thinking_level_map", &self.thinking_level_map)
            .field("context_window", &self.context_window)
            .field("max_tokens", &self.max_tokens)
            .field("cost", &self.cost)
            .field("compat", &self.compat)
            .finish()
    }
}
