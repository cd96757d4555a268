//! The root session's token and cost budget: its caps (`--max-cost-usd`/`--max-tokens` over the
//! `budgets` settings) and what the session spent before this process.
//!
//! What was spent is read from the session files, not from a counter of its own: every reply's
//! usage is in the root's session file and in each task's, which are written as replies arrive
//! and survive `kill -9`. So a continued session counts its earlier spend — the root's and every
//! task's, ended or killed mid-run — without a sync per request.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use cadre_core::budget::{BudgetNode, BudgetSettings, Limits, Spend, UnknownPrice};
use cadre_core::orchestrator::store::TaskStore;
use cadre_protocol::{Message, SessionEntryKind};

/// The session's budget as the run path takes it.
pub struct SessionBudget {
    pub node: Arc<BudgetNode>,
    pub unknown_price: UnknownPrice,
}

/// Build the session's budget node. `flags` override the settings meter by meter.
pub fn session_budget(
    settings: &cadre_core::config::Settings,
    flags: Limits,
    root_session_file: Option<&Path>,
    store: &TaskStore,
    root_session_id: &str,
) -> Result<SessionBudget> {
    let configured = BudgetSettings::from_settings(&settings.raw).map_err(anyhow::Error::msg)?;
    let limits = Limits {
        max_tokens: flags.max_tokens.or(configured.limits.max_tokens),
        max_cost_usd: flags.max_cost_usd.or(configured.limits.max_cost_usd),
    };
    let spent = if limits.is_unlimited() {
        Spend::default()
    } else {
        spent_before(root_session_file, store, root_session_id)
    };
    Ok(SessionBudget {
        node: BudgetNode::root(limits, spent),
        unknown_price: configured.unknown_price,
    })
}

/// What a root session and its tasks spent. A task that ended has its whole usage in its
/// record; one whose process died mid-run (its record recovered as orphaned, or still marked
/// running) has it in its session file, which got every reply as it arrived. A file that cannot
/// be read counts what the record knew.
pub fn spent_before(root_session_file: Option<&Path>, store: &TaskStore, root_id: &str) -> Spend {
    let mut spent = Spend::default();
    if let Some(path) = root_session_file.filter(|p| p.exists()) {
        spent.add(session_spend(path).unwrap_or_default());
    }
    if let Ok(listing) = store.list_root(root_id) {
        for record in listing.records {
            let recorded = Spend::of_usage(&record.usage.tokens);
            let cut_short = record.termination.is_none();
            let from_session = record
                .session_file
                .as_deref()
                .filter(|_| cut_short)
                .and_then(|file| session_spend(Path::new(file)));
            spent.add(from_session.unwrap_or(recorded));
        }
    }
    spent
}

/// Every reply's usage in one session file (all branches: a reply was paid for whichever
/// branch kept it); `None` when it cannot be read.
fn session_spend(path: &Path) -> Option<Spend> {
    let mut spent = Spend::default();
    let loaded = cadre_core::session::load_session(path).ok()?;
    for entry in &loaded.entries {
        if let SessionEntryKind::Message {
            message: Message::Assistant(a),
        } = &entry.kind
        {
            spent.add(Spend::of_usage(&a.usage));
        }
    }
    Some(spent)
}

/// Refuse a session whose model has no price under a cost cap, before any token is spent.
pub fn check_priced(budget: &SessionBudget, model: &cadre_llm::Model) -> Result<()> {
    let unpriced = model.cost.input <= 0.0 && model.cost.output <= 0.0;
    if unpriced
        && budget.node.cap().max_cost_usd.is_some()
        && budget.unknown_price == UnknownPrice::Fail
    {
        anyhow::bail!(
            "model `{}` has no price in the model table, so a cost budget cannot be kept; \
             choose a priced model, or set budgets.unknownPrice to \"tokens_only\" in \
             settings to count only its tokens",
            model.full_name()
        );
    }
    Ok(())
}
