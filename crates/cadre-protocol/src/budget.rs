//! Token and cost budgets as records and views carry them (the ledger is cadre-core's).

use serde::{Deserialize, Serialize};

use crate::Usage;

/// Which meter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Meter {
    Tokens,
    Cost,
}

/// Caps; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Limits {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

impl Limits {
    pub fn is_unlimited(&self) -> bool {
        self.max_tokens.is_none() && self.max_cost_usd.is_none()
    }

    /// Each meter's smaller cap (a missing cap is unlimited).
    pub fn min(self, other: Limits) -> Limits {
        Limits {
            max_tokens: min_opt(self.max_tokens, other.max_tokens, u64::min),
            max_cost_usd: min_opt(self.max_cost_usd, other.max_cost_usd, f64::min),
        }
    }
}

fn min_opt<T: Copy>(a: Option<T>, b: Option<T>, f: fn(T, T) -> T) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(f(a, b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// An amount on both meters.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Spend {
    pub tokens: u64,
    pub cost_usd: f64,
}

impl Spend {
    /// What one response's usage counts: cache reads are not tokens spent on the budget (they
    /// are priced, so they count in the cost).
    pub fn of_usage(usage: &Usage) -> Spend {
        Spend {
            tokens: [usage.cache_write, usage.output]
                .into_iter()
                .fold(usage.input, u64::saturating_add),
            cost_usd: finite(usage.cost.total),
        }
    }

    pub fn add(&mut self, other: Spend) {
        self.tokens = self.tokens.saturating_add(other.tokens);
        self.cost_usd = finite(self.cost_usd + other.cost_usd);
    }

    /// `self - other`, floored at zero.
    pub fn minus(self, other: Spend) -> Spend {
        Spend {
            tokens: self.tokens.saturating_sub(other.tokens),
            cost_usd: (self.cost_usd - other.cost_usd).max(0.0),
        }
    }

    /// Each meter's smaller amount.
    pub fn min(self, other: Spend) -> Spend {
        Spend {
            tokens: self.tokens.min(other.tokens),
            cost_usd: self.cost_usd.min(other.cost_usd),
        }
    }

    pub fn is_zero(&self) -> bool {
        self.tokens == 0 && self.cost_usd <= 0.0
    }
}

/// A price or count from a server or a models.json is not trusted to be a finite,
/// non-negative number. A negative amount is no refund (0); an amount that overflowed or is not
/// a number saturates, so it exhausts a cap rather than resetting or escaping it.
fn finite(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        f64::MAX
    } else if x > 0.0 {
        x
    } else {
        0.0
    }
}

/// A task's budget as `task.json` and the views show it.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BudgetState {
    /// The cap in force: the smaller of the task's own and the slice of its parent's remainder
    /// it reserved at launch.
    #[serde(flatten)]
    pub cap: Limits,
    /// What the task and its subtree spent.
    pub spent: Spend,
    /// What is still reserved for its live children.
    pub reserved: Spend,
    /// Some of the spend was estimated (a response without usage).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// Which meter stopped it, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exhausted: Option<Meter>,
}
