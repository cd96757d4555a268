//! Merge a parsed `models.json` into the built-in providers, following Pi's rules:
//! built-in providers keep their models, `modelOverrides` patch them, `models` are upserted by id;
//! other providers are defined by the file alone.

use std::collections::BTreeMap;

use cadre_protocol::ThinkingLevel;
use serde_json::{Map, Value};

use super::file::{RawCost, RawFile, RawModel, RawOverride, RawProvider};
use super::{ApiKind, ModelDef, ModelSource, ProviderDef};
use crate::model::{Compat, ModelCost};

/// Pi's defaults for a model entry that leaves them out.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
pub const DEFAULT_MAX_TOKENS: u64 = 16_384;
/// Pi's default `input` for a model entry: text only.
pub const DEFAULT_INPUT: &[&str] = &["text"];

/// The result of merging: the providers, and the file's provider entries cadre has no use for
/// (overrides of Pi built-ins that cadre does not have), for `cadre doctor`.
pub struct Merged {
    pub providers: Vec<ProviderDef>,
    pub ignored: Vec<String>,
}

/// Merge `file` into `builtins`. An `Err` is a message without the file name (the caller adds it).
pub fn merge(mut providers: Vec<ProviderDef>, file: RawFile) -> Result<Merged, String> {
    let mut ignored = Vec::new();
    for (name, raw) in file.providers {
        if let Some(p) = providers.iter_mut().find(|p| p.name == name) {
            merge_into_builtin(p, raw)?;
        } else if raw.models.is_some() {
            providers.push(custom_provider(name, raw)?);
        } else {
            // Pi has built-ins cadre lacks (google, groq, ...); an entry that only tweaks one of
            // them has nothing to attach to here.
            ignored.push(name);
        }
    }
    Ok(Merged { providers, ignored })
}

fn merge_into_builtin(p: &mut ProviderDef, raw: RawProvider) -> Result<(), String> {
    if let Some(url) = raw.base_url {
        p.base_url = Some(url);
    }
    if let Some(key) = raw.api_key {
        p.api_key = Some(key);
    }
    if let Some(headers) = raw.headers {
        p.headers.extend(headers);
    }
    if let Some(auth) = raw.auth_header {
        p.auth_header = auth;
    }
    if let Some(api) = &raw.api {
        p.api = ApiKind::parse(api);
    }
    let provider_compat = raw.compat.unwrap_or_default();
    let mut overrides = raw.model_overrides.unwrap_or_default();
    for m in &mut p.models {
        let ov = overrides.remove(&m.id);
        let ov_compat = ov.as_ref().and_then(|o| o.compat.clone());
        if !provider_compat.is_empty() || ov_compat.is_some() {
            let merged = merge_maps(&provider_compat, ov_compat.as_ref());
            m.compat = parse_compat(merged).map_err(|e| format!("{}/{}: {e}", p.name, m.id))?;
        }
        if let Some(ov) = ov {
            apply_override(m, ov);
        }
    }
    // Pi ignores overrides naming models it does not know; so does cadre.
    for raw_model in raw.models.unwrap_or_default() {
        let m = custom_model(&p.name, &p.api, &provider_compat, raw_model)?;
        match p.models.iter_mut().find(|x| x.id == m.id) {
            Some(slot) => *slot = m,
            None => p.models.push(m),
        }
    }
    Ok(())
}

fn apply_override(m: &mut ModelDef, ov: RawOverride) {
    if let Some(name) = ov.name {
        m.name = name;
    }
    if let Some(r) = ov.reasoning {
        m.reasoning = r;
    }
    if let Some(input) = ov.input {
        m.input = input;
    }
    if let Some(map) = ov.thinking_level_map {
        m.thinking_level_map = level_map(map);
    }
    if let Some(cw) = ov.context_window {
        m.context_window = cw;
    }
    if let Some(mt) = ov.max_tokens {
        m.max_tokens = mt;
    }
    if let Some(cost) = ov.cost {
        m.cost = apply_cost(m.cost, cost);
    }
    if let Some(headers) = ov.headers {
        m.headers.extend(headers);
    }
}

fn custom_provider(name: String, raw: RawProvider) -> Result<ProviderDef, String> {
    let api = raw
        .api
        .as_deref()
        .map(ApiKind::parse)
        .unwrap_or(ApiKind::Missing);
    let compat = raw.compat.unwrap_or_default();
    let models = raw
        .models
        .unwrap_or_default()
        .into_iter()
        .map(|m| custom_model(&name, &api, &compat, m))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ProviderDef {
        name,
        builtin: false,
        base_url: raw.base_url,
        api,
        api_key: raw.api_key,
        default_key_env: None,
        headers: raw.headers.unwrap_or_default(),
        auth_header: raw.auth_header.unwrap_or(false),
        models,
    })
}

fn custom_model(
    provider: &str,
    provider_api: &ApiKind,
    provider_compat: &Map<String, Value>,
    raw: RawModel,
) -> Result<ModelDef, String> {
    let compat = parse_compat(merge_maps(provider_compat, raw.compat.as_ref()))
        .map_err(|e| format!("{provider}/{}: {e}", raw.id))?;
    Ok(ModelDef {
        name: raw.name.unwrap_or_else(|| raw.id.clone()),
        api: raw
            .api
            .as_deref()
            .map(ApiKind::parse)
            .unwrap_or_else(|| provider_api.clone()),
        base_url: raw.base_url,
        reasoning: raw.reasoning.unwrap_or(false),
        input: raw
            .input
            .unwrap_or_else(|| DEFAULT_INPUT.iter().map(|s| s.to_string()).collect()),
        thinking_level_map: raw.thinking_level_map.map(level_map).unwrap_or_default(),
        context_window: raw.context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW),
        max_tokens: raw.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        cost: apply_cost(ModelCost::default(), raw.cost.unwrap_or_default()),
        compat,
        headers: raw.headers.unwrap_or_default(),
        source: ModelSource::File,
        id: raw.id,
    })
}

/// Shallow merge: the model's keys replace the provider's (Pi's documented behaviour).
fn merge_maps(base: &Map<String, Value>, over: Option<&Map<String, Value>>) -> Map<String, Value> {
    let mut out = base.clone();
    if let Some(over) = over {
        for (k, v) in over {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

fn parse_compat(map: Map<String, Value>) -> Result<Compat, String> {
    serde_json::from_value(Value::Object(map)).map_err(|e| format!("invalid compat: {e}"))
}

fn apply_cost(mut cost: ModelCost, raw: RawCost) -> ModelCost {
    if let Some(v) = raw.input {
        cost.input = v;
    }
    if let Some(v) = raw.output {
        cost.output = v;
    }
    if let Some(v) = raw.cache_read {
        cost.cache_read = v;
    }
    if let Some(v) = raw.cache_write {
        cost.cache_write = v;
    }
    cost
}

/// Convert Pi's `thinkingLevelMap`; keys that are not levels cadre knows are skipped so newer Pi
/// files still load.
fn level_map(raw: BTreeMap<String, Option<String>>) -> BTreeMap<ThinkingLevel, Option<String>> {
    raw.into_iter()
        .filter_map(|(k, v)| ThinkingLevel::parse(&k).map(|l| (l, v)))
        .collect()
}
