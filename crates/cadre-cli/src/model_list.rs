//! `cadre --list-models [SEARCH]`: the known models, optionally filtered.
//!
//! Pi filters with a fuzzy (subsequence) match on `provider id`; cadre keeps whole substrings,
//! case-insensitive, of the provider, the id, `provider/id` or the display name, so `opus` lists
//! Opus models and nothing else. Several words narrow the list (each must match).

use cadre_llm::{ModelInfo, ModelRegistry};

/// Print the models matching `search` (all of them when it is blank), in the same table style
/// as `cadre tasks` and `cadre agents`; Pi's line when none match.
pub fn print(registry: &ModelRegistry, search: &str) {
    let models: Vec<ModelInfo> = registry
        .list()
        .into_iter()
        .filter(|m| matches(m, search))
        .collect();
    if models.is_empty() && !search.trim().is_empty() {
        crate::commands::print_out(&format!("No models matching \"{}\"\n", search.trim()));
        return;
    }
    let rows: Vec<Vec<String>> = models
        .into_iter()
        .map(|m| {
            let creds = match (&m.unsupported, m.has_credentials) {
                (Some(why), _) => format!("unsupported: {why}"),
                (None, true) => "yes".to_string(),
                (None, false) => "missing".to_string(),
            };
            vec![m.full_name, m.api, m.context_window.to_string(), creds]
        })
        .collect();
    crate::commands::print_out(&crate::commands::format::table(
        &["MODEL", "API", "CONTEXT", "CREDENTIALS"],
        &rows,
    ));
}

/// The models a run can switch to (credentials, a supported api) that match `search`.
pub(crate) fn usable_matching(registry: &ModelRegistry, search: &str) -> Vec<ModelInfo> {
    registry
        .list()
        .into_iter()
        .filter(|m| m.has_credentials && m.unsupported.is_none())
        .filter(|m| matches(m, search))
        .collect()
}

/// Whether every word of `search` is in the model's provider, id, full name or display name.
fn matches(model: &ModelInfo, search: &str) -> bool {
    let haystack =
        format!("{}\n{}\n{}", model.full_name, model.name, model.provider).to_lowercase();
    search
        .split_whitespace()
        .all(|word| haystack.contains(&word.to_lowercase()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use cadre_llm::registry::ModelSource;

    fn info(provider: &str, id: &str, name: &str) -> ModelInfo {
        ModelInfo {
            full_name: format!("{provider}/{id}"),
            provider: provider.into(),
            id: id.into(),
            name: name.into(),
            api: "anthropic-messages".into(),
            reasoning: true,
            context_window: 1,
            max_tokens: 1,
            has_credentials: false,
            source: ModelSource::BuiltIn,
            unsupported: None,
        }
    }

    #[test]
    fn search_is_a_case_insensitive_substring_of_provider_id_or_name() {
        let opus = info("anthropic", "claude-opus-4-7", "Claude Opus 4.7");
        let routed = info("openrouter", "anthropic/claude-opus-4.7", "Claude Opus 4.7");
        let haiku = info("anthropic", "claude-3-5-haiku-latest", "Claude Haiku 3.5");
        for (search, want) in [
            ("", [true, true, true]),
            ("  ", [true, true, true]),
            ("OPUS", [true, true, false]),
            ("opus 4.7", [true, true, false]),
            ("openrouter opus", [false, true, false]),
            ("anthropic/claude-opus", [true, true, false]),
            ("Haiku 3.5", [false, false, true]),
            // Not a subsequence match: the letters of `opus` are in the Haiku id, not the word.
            ("ops", [false, false, false]),
            ("gpt", [false, false, false]),
        ] {
            let got = [&opus, &routed, &haiku].map(|m| matches(m, search));
            assert_eq!(got, want, "{search:?}");
        }
    }
}
