//! The on-disk shape of Pi's `models.json`. Only the keys cadre uses are declared; serde ignores
//! the rest, so a Pi user's file loads unchanged.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Default, Deserialize)]
pub struct RawFile {
    #[serde(default)]
    pub providers: BTreeMap<String, RawProvider>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawProvider {
    pub base_url: Option<String>,
    pub api: Option<String>,
    pub api_key: Option<String>,
    pub headers: Option<BTreeMap<String, String>>,
    pub auth_header: Option<bool>,
    pub compat: Option<Map<String, Value>>,
    pub models: Option<Vec<RawModel>>,
    pub model_overrides: Option<BTreeMap<String, RawOverride>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawModel {
    pub id: String,
    pub name: Option<String>,
    pub api: Option<String>,
    pub base_url: Option<String>,
    pub reasoning: Option<bool>,
    pub input: Option<Vec<String>>,
    pub thinking_level_map: Option<BTreeMap<String, Option<String>>>,
    pub context_window: Option<u64>,
    pub max_tokens: Option<u64>,
    pub cost: Option<RawCost>,
    pub compat: Option<Map<String, Value>>,
    pub headers: Option<BTreeMap<String, String>>,
}

/// Fields Pi's `modelOverrides` accepts for a built-in model (all optional, cost partial).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawOverride {
    pub name: Option<String>,
    pub reasoning: Option<bool>,
    pub input: Option<Vec<String>>,
    pub thinking_level_map: Option<BTreeMap<String, Option<String>>>,
    pub context_window: Option<u64>,
    pub max_tokens: Option<u64>,
    pub cost: Option<RawCost>,
    pub compat: Option<Map<String, Value>>,
    pub headers: Option<BTreeMap<String, String>>,
}

/// A possibly partial price table (per million tokens).
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawCost {
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
}
