//! The `budgets` settings: `{"maxCostUsd": 2, "maxTokens": 500000, "unknownPrice": "fail"}`.

use serde_json::Value;

use super::Limits;

/// What a USD budget does with a model the table has no price for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnknownPrice {
    /// Refuse to launch it before any token is spent.
    #[default]
    Fail,
    /// Run it and count only its tokens.
    TokensOnly,
}

/// The session's caps and the unknown-price rule.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BudgetSettings {
    pub limits: Limits,
    pub unknown_price: UnknownPrice,
}

impl BudgetSettings {
    /// Read `budgets` from a merged settings document. Anything that is not a positive number
    /// (or a known `unknownPrice`) is an error: a misspelt cap must not silently mean none.
    pub fn from_settings(raw: &serde_json::Map<String, Value>) -> Result<BudgetSettings, String> {
        let map = match raw.get("budgets") {
            None | Some(Value::Null) => return Ok(BudgetSettings::default()),
            Some(Value::Object(map)) => map,
            Some(_) => {
                return Err(
                    "settings: budgets must be an object like {\"maxCostUsd\": 2.5}".into(),
                );
            }
        };
        let mut out = BudgetSettings::default();
        for (key, value) in map {
            match key.as_str() {
                "maxCostUsd" => out.limits.max_cost_usd = Some(positive_usd(key, value)?),
                "maxTokens" => out.limits.max_tokens = Some(positive_tokens(key, value)?),
                "unknownPrice" => {
                    out.unknown_price = match value.as_str() {
                        Some("fail") => UnknownPrice::Fail,
                        Some("tokens_only") => UnknownPrice::TokensOnly,
                        _ => {
                            return Err(format!(
                                "settings: budgets.unknownPrice must be \"fail\" or \"tokens_only\", found {value}"
                            ));
                        }
                    }
                }
                other => {
                    return Err(format!(
                        "settings: unknown key budgets.{other} (expected maxCostUsd, maxTokens or unknownPrice)"
                    ));
                }
            }
        }
        Ok(out)
    }
}

/// A USD cap from a setting, a flag or a role: a finite number above zero.
pub fn parse_usd(what: &str, value: &Value) -> Result<f64, String> {
    positive_usd(what, value)
}

/// A token cap from a setting, a flag or a role: a whole number above zero.
pub fn parse_tokens(what: &str, value: &Value) -> Result<u64, String> {
    positive_tokens(what, value)
}

fn positive_usd(key: &str, value: &Value) -> Result<f64, String> {
    match value.as_f64() {
        Some(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!(
            "{key} must be a number of US dollars above 0, found {value}"
        )),
    }
}

fn positive_tokens(key: &str, value: &Value) -> Result<u64, String> {
    match value.as_u64() {
        Some(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "{key} must be a whole number of tokens above 0, found {value}"
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> Result<BudgetSettings, String> {
        BudgetSettings::from_settings(v.as_object().unwrap())
    }

    #[test]
    fn caps_and_the_unknown_price_rule_are_read() {
        let s = read(json!({"budgets": {"maxCostUsd": 2.5, "maxTokens": 1000, "unknownPrice": "tokens_only"}})).unwrap();
        assert_eq!(s.limits.max_cost_usd, Some(2.5));
        assert_eq!(s.limits.max_tokens, Some(1000));
        assert_eq!(s.unknown_price, UnknownPrice::TokensOnly);
        assert_eq!(read(json!({})).unwrap(), BudgetSettings::default());
    }

    #[test]
    fn a_cap_that_means_nothing_is_an_error() {
        for bad in [
            json!({"budgets": {"maxCostUsd": 0}}),
            json!({"budgets": {"maxCostUsd": -1}}),
            json!({"budgets": {"maxCostUsd": "2"}}),
            json!({"budgets": {"maxTokens": 1.5}}),
            json!({"budgets": {"maxcostusd": 2}}),
            json!({"budgets": {"unknownPrice": "ignore"}}),
            json!({"budgets": 3}),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad}");
        }
    }
}
