//! How budgets read: in receipts, notices, steers and views.

use super::{BudgetState, Limits, Meter, Spend};

/// `41,230`.
pub fn tokens(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `$0.41`, `$12.30`; under a dollar up to four decimals, so small caps and spends are told
/// apart (`$0.015`, `$0.0012`).
pub fn usd(x: f64) -> String {
    if x >= 1.0 || x <= 0.0 {
        return format!("${x:.2}");
    }
    let fine = format!("{x:.4}");
    let trimmed = fine.trim_end_matches('0');
    let decimals = trimmed.split('.').nth(1).map_or(0, str::len);
    if decimals < 2 {
        format!("${x:.2}")
    } else {
        format!("${trimmed}")
    }
}

/// `$0.41 of $0.50, 41,230 of 50,000 tokens` for the capped meters; `None` when uncapped.
pub fn spent_of_cap(spent: Spend, cap: Limits) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(c) = cap.max_cost_usd {
        parts.push(format!("{} of {}", usd(spent.cost_usd), usd(c)));
    }
    if let Some(c) = cap.max_tokens {
        parts.push(format!("{} of {} tokens", tokens(spent.tokens), tokens(c)));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// A token count for a narrow cell: `950`, `41.2k`, `50k`, `1.5M`.
pub fn short_tokens(n: u64) -> String {
    let (value, unit) = match n {
        0..1_000 => return n.to_string(),
        1_000..1_000_000 => (n as f64 / 1e3, "k"),
        _ => (n as f64 / 1e6, "M"),
    };
    let text = format!("{value:.1}");
    format!("{}{unit}", text.strip_suffix(".0").unwrap_or(&text))
}

/// A live row's short form of a budget: `$0.41/$0.50` for a cost cap, `41.2k/50k tok` for a
/// token cap, both joined by ` · `; `None` for a task under no cap.
pub fn compact(state: &BudgetState) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(c) = state.cap.max_cost_usd {
        parts.push(format!("{}/{}", usd(state.spent.cost_usd), usd(c)));
    }
    if let Some(c) = state.cap.max_tokens {
        parts.push(format!(
            "{}/{} tok",
            short_tokens(state.spent.tokens),
            short_tokens(c)
        ));
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// The receipt's line: `Budget: $0.41 of $0.50` (and `(estimated)` when some usage was not
/// reported); `None` for a task without a budget.
pub fn receipt_line(state: &BudgetState) -> Option<String> {
    let mut line = format!("Budget: {}", spent_of_cap(state.spent, state.cap)?);
    if state.estimated {
        line.push_str(" (partly estimated)");
    }
    if let Some(meter) = state.exhausted {
        line.push_str(match meter {
            Meter::Tokens => " — stopped by its token budget",
            Meter::Cost => " — stopped by its cost budget",
        });
    }
    Some(line)
}

/// The steer a task gets at [`super::WARN_AT`] of its cap: one final handoff.
pub fn final_handoff_steer(meter: Meter, state: &BudgetState) -> String {
    let which = match meter {
        Meter::Tokens => "token",
        Meter::Cost => "cost",
    };
    let used = spent_of_cap(state.spent, state.cap).unwrap_or_default();
    format!(
        "<budget-warning>You have used 80% of your {which} budget ({used}). Stop starting new \
         work: write your final answer now with what you have established, and say what is \
         left undone. The task is stopped when the budget runs out.</budget-warning>"
    )
}

/// The root's warning at [`super::WARN_AT`] of the session's cap.
pub fn root_warning(meter: Meter, state: &BudgetState) -> String {
    let which = match meter {
        Meter::Tokens => "token",
        Meter::Cost => "cost",
    };
    let used = spent_of_cap(state.spent, state.cap).unwrap_or_default();
    format!(
        "<budget-warning>This session has used 80% of its {which} budget ({used}), its \
         subagents included. Wrap up: new subagents get at most half of what is left, and \
         requests are refused once it is spent.</budget-warning>"
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_like_a_person_writes_them() {
        assert_eq!(tokens(0), "0");
        assert_eq!(tokens(999), "999");
        assert_eq!(tokens(41_230), "41,230");
        assert_eq!(tokens(1_234_567), "1,234,567");
        assert_eq!(usd(0.41), "$0.41");
        assert_eq!(usd(0.0012), "$0.0012");
        assert_eq!(usd(0.0), "$0.00");
        assert_eq!(usd(0.5), "$0.50");
        assert_eq!(usd(0.015), "$0.015");
        assert_eq!(usd(12.3), "$12.30");
    }

    #[test]
    fn the_receipt_line_names_each_capped_meter() {
        let state = BudgetState {
            cap: Limits {
                max_cost_usd: Some(0.5),
                max_tokens: Some(50_000),
            },
            spent: Spend {
                tokens: 41_230,
                cost_usd: 0.41,
            },
            exhausted: Some(Meter::Cost),
            ..BudgetState::default()
        };
        assert_eq!(
            receipt_line(&state).unwrap(),
            "Budget: $0.41 of $0.50, 41,230 of 50,000 tokens — stopped by its cost budget"
        );
        assert_eq!(receipt_line(&BudgetState::default()), None);
    }

    #[test]
    fn the_compact_form_fits_a_live_row() {
        let mut state = BudgetState {
            cap: Limits {
                max_cost_usd: Some(0.5),
                max_tokens: None,
            },
            spent: Spend {
                tokens: 41_230,
                cost_usd: 0.41,
            },
            ..BudgetState::default()
        };
        assert_eq!(compact(&state).unwrap(), "$0.41/$0.50");
        state.cap.max_tokens = Some(50_000);
        assert_eq!(compact(&state).unwrap(), "$0.41/$0.50 · 41.2k/50k tok");
        state.cap.max_cost_usd = None;
        assert_eq!(compact(&state).unwrap(), "41.2k/50k tok");
        assert_eq!(compact(&BudgetState::default()), None);
        assert_eq!(short_tokens(950), "950");
        assert_eq!(short_tokens(1_500_000), "1.5M");
    }
}
