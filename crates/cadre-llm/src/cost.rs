//! Turn token counts into money, using the model's per-million-token prices (R9).

use cadre_protocol::Usage;

use crate::model::Model;

const PER: f64 = 1_000_000.0;

/// Fill `usage.cost` from `model.cost` (USD per million tokens) and `usage.total_tokens` when the
/// provider left it at zero (input + output + cache read + cache write, as Pi counts it).
pub fn apply_cost(model: &Model, usage: &mut Usage) {
    let price = &model.cost;
    usage.cost.input = usage.input as f64 * price.input / PER;
    usage.cost.output = usage.output as f64 * price.output / PER;
    usage.cost.cache_read = usage.cache_read as f64 * price.cache_read / PER;
    usage.cost.cache_write = usage.cache_write as f64 * price.cache_write / PER;
    usage.cost.total =
        usage.cost.input + usage.cost.output + usage.cost.cache_read + usage.cost.cache_write;
    if usage.total_tokens == 0 {
        usage.total_tokens = usage.token_sum();
    }
}

// Tests cover R9: cost per million tokens.
#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::{Api, Compat, ModelCost};

    fn model(cost: ModelCost) -> Model {
        Model {
            provider: "anthropic".into(),
            id: "m".into(),
            name: "m".into(),
            api: Api::AnthropicMessages,
            base_url: String::new(),
            api_key: None,
            headers: BTreeMap::new(),
            reasoning: false,
            thinking_level_map: BTreeMap::new(),
            input: vec!["text".into(), "image".into()],
            context_window: 1,
            max_tokens: 1,
            cost,
            compat: Compat::default(),
        }
    }

    /// Counts at the top of u64 saturate instead of overflowing (a panic in a debug build).
    #[test]
    fn a_huge_total_saturates() {
        let mut usage = Usage {
            input: u64::MAX,
            output: u64::MAX,
            ..Usage::default()
        };
        apply_cost(&model(ModelCost::default()), &mut usage);
        assert_eq!(usage.total_tokens, u64::MAX);
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn prices_each_bucket_per_million() {
        let m = model(ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        });
        let mut u = Usage {
            input: 1_000_000,
            output: 200_000,
            cache_read: 500_000,
            cache_write: 100_000,
            ..Usage::default()
        };
        apply_cost(&m, &mut u);
        assert!(close(u.cost.input, 3.0));
        assert!(close(u.cost.output, 3.0));
        assert!(close(u.cost.cache_read, 0.15));
        assert!(close(u.cost.cache_write, 0.375));
        assert!(close(u.cost.total, 6.525));
        assert_eq!(u.total_tokens, 1_800_000);
    }

    #[test]
    fn keeps_provider_total_tokens_and_overwrites_stale_cost() {
        let m = model(ModelCost {
            input: 1.0,
            ..ModelCost::default()
        });
        let mut u = Usage {
            input: 10,
            output: 5,
            total_tokens: 99,
            ..Usage::default()
        };
        u.cost.total = 42.0;
        apply_cost(&m, &mut u);
        assert_eq!(u.total_tokens, 99);
        assert!(close(u.cost.input, 0.00001));
        assert!(close(u.cost.output, 0.0));
        assert!(close(u.cost.total, 0.00001));
    }

    #[test]
    fn free_models_and_empty_usage_cost_nothing() {
        let m = model(ModelCost::default());
        let mut u = Usage::default();
        apply_cost(&m, &mut u);
        assert_eq!(u, Usage::default());
        let mut u = Usage {
            input: 123,
            output: 456,
            ..Usage::default()
        };
        apply_cost(&m, &mut u);
        assert!(close(u.cost.total, 0.0));
        assert_eq!(u.total_tokens, 579);
    }
}
