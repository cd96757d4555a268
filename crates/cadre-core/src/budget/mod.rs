//! Token and cost budgets (issue "Token and cost budgets…"; see `docs/budgets.md`).
//!
//! Two meters: **tokens** (non-cached input + cache writes + output) and **cost** in USD at the
//! model table's list prices. A root session and every task has a node in one [`Ledger`] tree;
//! a request is charged to its node and every ancestor, a child's cap is the smaller of its own
//! and a slice of what its parent has left ([`ledger`]), and every model request is admitted by
//! the [`metered`] provider first.

pub mod ledger;
pub mod metered;
pub mod settings;
pub mod text;

pub use cadre_protocol::{BudgetState, Limits, Meter, Spend};

pub use ledger::{Admission, BudgetNode, Exhausted, Reservation};
pub use metered::MeteredProvider;
pub use settings::{BudgetSettings, UnknownPrice};

/// The share of a parent's remainder a child reserves at launch.
pub const CHILD_SHARE: f64 = 0.5;

/// The fraction of a cap at which a task is told to hand over (and the root warned).
pub const WARN_AT: f64 = 0.8;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_protocol::Usage;

    #[test]
    fn tokens_count_fresh_input_cache_writes_and_output_not_cache_reads() {
        let u = Usage {
            input: 100,
            output: 20,
            cache_read: 5000,
            cache_write: 7,
            ..Usage::default()
        };
        assert_eq!(Spend::of_usage(&u).tokens, 127);
    }

    #[test]
    fn a_hostile_cost_is_no_refund_and_no_escape() {
        let mut u = Usage::default();
        u.cost.total = -5.0;
        assert_eq!(Spend::of_usage(&u).cost_usd, 0.0);
        u.cost.total = f64::NAN;
        assert_eq!(Spend::of_usage(&u).cost_usd, f64::MAX);
        u.cost.total = f64::INFINITY;
        assert_eq!(Spend::of_usage(&u).cost_usd, f64::MAX);
        // A sum that overflows stays at the top: it never wraps back to nothing.
        let mut s = Spend {
            tokens: u64::MAX,
            cost_usd: f64::MAX,
        };
        s.add(Spend {
            tokens: 5,
            cost_usd: f64::MAX,
        });
        assert_eq!((s.tokens, s.cost_usd), (u64::MAX, f64::MAX));
    }

    #[test]
    fn limits_take_each_meters_smaller_cap() {
        let a = Limits {
            max_tokens: Some(10),
            max_cost_usd: None,
        };
        let b = Limits {
            max_tokens: Some(20),
            max_cost_usd: Some(1.0),
        };
        assert_eq!(
            a.min(b),
            Limits {
                max_tokens: Some(10),
                max_cost_usd: Some(1.0)
            }
        );
    }
}
