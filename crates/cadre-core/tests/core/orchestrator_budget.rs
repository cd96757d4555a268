//! Token and cost budgets end to end in the task manager: a scripted provider whose replies
//! carry real usage and cost, children that would spend without end, and the ledger's caps.
use std::sync::Arc;
use std::time::Duration;

use crate::common::{
    Models, ScriptedProvider, all_text, call, first_user, manager_config, manager_options, roster,
    settings, spec, text,
};
use cadre_core::budget::{BudgetNode, Limits, Spend, UnknownPrice};
use cadre_core::orchestrator::manager::{
    Delivery, EntryOutcome, LaunchError, NoticeKind, ParentNotice, TaskManager,
};
use cadre_core::roles::{RoleDef, ToolList};
use cadre_llm::{CompletionRequest, Model, ModelCost, Provider, StreamEvent};
use cadre_protocol::{TaskStatus, TerminationKind, Usage};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const GUARD: Duration = Duration::from_secs(20);

async fn guarded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, f).await.expect("hang guard")
}

/// Every reply costs this: 1,000 input and 200 output tokens at $3/$15 per million.
const INPUT: u64 = 1000;
const OUTPUT: u64 = 200;
const PER_REQUEST_USD: f64 = (INPUT as f64 * 3.0 + OUTPUT as f64 * 15.0) / 1_000_000.0;

/// The scripted provider with every reply's usage set as a real provider reports it (cost
/// priced from the model table). Models named `free` have no price.
struct Priced(Arc<ScriptedProvider>);

impl Provider for Priced {
    fn stream(
        &self,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> mpsc::Receiver<StreamEvent> {
        let model = request.model.clone();
        let mut inner = self.0.stream(request, cancel);
        let (tx, rx) = mpsc::channel(8);
        tokio::spawn(async move {
            while let Some(mut event) = inner.recv().await {
                if let StreamEvent::Done(m) = &mut event {
                    m.usage = Usage {
                        input: INPUT,
                        output: OUTPUT,
                        ..Usage::default()
                    };
                    cadre_llm::apply_cost(&model, &mut m.usage);
                }
                if tx.send(event).await.is_err() {
                    return;
                }
            }
        });
        rx
    }
}

fn priced(id: &str) -> Model {
    let mut m = crate::common::model(id);
    if id != "free" {
        m.cost = ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        };
    }
    m
}

struct PricedModels;

impl cadre_core::orchestrator::manager::ModelResolver for PricedModels {
    fn resolve(&self, name: &str) -> Result<Model, String> {
        match name.strip_prefix("fake/") {
            Some(id @ ("scripted" | "free")) => Ok(priced(id)),
            _ => Err(format!("unknown model {name}")),
        }
    }
    fn known(&self) -> Vec<String> {
        vec!["fake/scripted".into(), "fake/free".into()]
    }
}

fn role(name: &str) -> RoleDef {
    RoleDef {
        name: name.into(),
        description: format!("test role {name}"),
        tools: ToolList::Named(vec!["ls".into()]),
        prompt: format!("ROLE BODY OF {name}"),
        ..RoleDef::default()
    }
}

fn roles() -> Vec<RoleDef> {
    vec![
        role("spender"),
        RoleDef {
            max_cost_usd: Some(PER_REQUEST_USD * 2.5),
            ..role("capped")
        },
        RoleDef {
            max_tokens: Some(3 * (INPUT + OUTPUT)),
            ..role("token-capped")
        },
        RoleDef {
            model: Some("fake/free".into()),
            ..role("unpriced")
        },
        RoleDef {
            max_cost_usd: Some(PER_REQUEST_USD * 5.0),
            ..role("five")
        },
    ]
}

struct Harness {
    _dir: tempfile::TempDir,
    manager: TaskManager,
    root: cadre_core::orchestrator::manager::ParentRef,
    notices: mpsc::UnboundedReceiver<ParentNotice>,
    provider: Arc<ScriptedProvider>,
    budget: Arc<BudgetNode>,
}

/// Children whose prompt starts `SPEND` list the directory for ever; `STEERABLE` ones stop
/// with a text answer once they were told of their budget.
fn harness(cap: Limits, unknown_price: UnknownPrice) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    let provider = ScriptedProvider::new(|r| {
        let key = first_user(r);
        if crate::common::last_text(r) == "continue please" {
            return text("finished after the raise");
        }
        if key.starts_with("STEERABLE") && all_text(r).contains("<budget-warning>") {
            return text("handing over what I have");
        }
        if key.starts_with("SPEND") || key.starts_with("STEERABLE") {
            return call("ls", json!({}));
        }
        text("done")
    });
    let (tx, rx) = mpsc::unbounded_channel();
    let mut config = manager_config(
        dir.path(),
        Arc::clone(&provider),
        Models(&["scripted"]),
        roster(roles()),
        settings(&json!({"maxConcurrentTasks": 8})),
        tx,
    );
    config.provider = Arc::new(Priced(Arc::clone(&provider)));
    config.models = Arc::new(PricedModels);
    let budget = BudgetNode::root(cap, Spend::default());
    let mut options = manager_options();
    options.budget = Some(Arc::clone(&budget));
    options.unknown_price = unknown_price;
    let manager = TaskManager::with_options(config, options);
    let mut root = crate::common::root_parent(&manager);
    root.model = priced("scripted");
    Harness {
        _dir: dir,
        manager,
        root,
        notices: rx,
        provider,
        budget,
    }
}

fn usd(x: f64) -> Limits {
    Limits {
        max_cost_usd: Some(x),
        max_tokens: None,
    }
}

impl Harness {
    /// One task's launch: its outcome, or the error refusing it.
    async fn launch(&self, role: &str, prompt: &str, background: bool) -> EntryOutcome {
        let mut s = spec(role, prompt);
        s.task.run_in_background = Some(background);
        match guarded(self.manager.launch(&self.root, s, None)).await {
            Ok(mut entries) => entries.remove(0),
            Err(error) => EntryOutcome::Refused {
                description: prompt.into(),
                error,
            },
        }
    }

    async fn completion(&mut self) -> ParentNotice {
        loop {
            let n = guarded(self.notices.recv()).await.expect("notice");
            if n.kind == NoticeKind::Completion {
                return n;
            }
        }
    }
}

fn record(h: &Harness, id: &str) -> cadre_protocol::TaskRecord {
    h.manager
        .store()
        .load(crate::common::ROOT_SESSION_ID, id)
        .unwrap()
}

fn started(e: EntryOutcome) -> cadre_core::orchestrator::manager::TaskOutcome {
    match e {
        EntryOutcome::Started(o) => *o,
        EntryOutcome::Refused { error, .. } => panic!("refused: {error}"),
    }
}

#[tokio::test]
async fn a_fan_out_of_eight_overspenders_stays_inside_the_sessions_cap() {
    let cap = 40.0 * PER_REQUEST_USD;
    let mut h = harness(usd(cap), UnknownPrice::Fail);
    let mut ids = Vec::new();
    for i in 0..8 {
        let o = started(h.launch("spender", &format!("SPEND {i}"), true).await);
        assert_eq!(o.delivery, Delivery::Background);
        ids.push(o.task_id);
    }
    let mut texts = Vec::new();
    for _ in 0..8 {
        texts.push(h.completion().await.text().to_string());
    }
    guarded(h.manager.wait_idle()).await;
    for id in &ids {
        let r = record(&h, id);
        assert_eq!(r.status, TaskStatus::Partial, "{id}: {:?}", r.error);
        assert_eq!(r.termination, Some(TerminationKind::CostBudget));
        let b = r.budget.expect("a capped task records its budget");
        // Inside its reservation, give or take the one request in flight when it crossed.
        assert!(
            b.spent.cost_usd <= b.cap.max_cost_usd.unwrap() + PER_REQUEST_USD + 1e-9,
            "{b:?}"
        );
        assert!(
            r.error
                .as_deref()
                .unwrap()
                .contains("cost budget exhausted")
        );
    }
    let spent = h.budget.state().spent.cost_usd;
    assert!(
        spent <= cap + 8.0 * PER_REQUEST_USD + 1e-9,
        "spent {spent} of {cap}"
    );
    // Every reservation came back.
    assert!(h.budget.state().reserved.cost_usd.abs() < 1e-9);
    // The receipt says what each spent, in the notice the parent reads.
    assert!(
        texts
            .iter()
            .all(|t| t.contains("Budget: $") && t.contains("stopped by its cost budget")),
        "{texts:#?}"
    );
    // Refused requests never reached the provider: each child sent only admitted ones.
    let sent = h.provider.requests().len() as f64;
    assert!(sent * PER_REQUEST_USD <= cap + 8.0 * PER_REQUEST_USD + 1e-9);
}

#[tokio::test]
async fn a_role_cap_stops_its_task_partial_with_the_receipt_line() {
    let h = harness(Limits::default(), UnknownPrice::Fail);
    let o = started(h.launch("capped", "SPEND alone", false).await);
    assert_eq!(o.status, TaskStatus::Partial);
    assert_eq!(o.termination, Some(TerminationKind::CostBudget));
    assert!(
        o.receipt
            .contains("Budget: $0.018 of $0.015 — stopped by its cost budget"),
        "{}",
        o.receipt
    );
    let r = record(&h, &o.task_id);
    let b = r.budget.unwrap();
    assert_eq!(b.cap.max_cost_usd, Some(PER_REQUEST_USD * 2.5));
    assert_eq!(b.exhausted, Some(cadre_protocol::Meter::Cost));
}

#[tokio::test]
async fn a_token_cap_ends_the_task_with_token_budget() {
    let h = harness(Limits::default(), UnknownPrice::Fail);
    let o = started(h.launch("token-capped", "SPEND tokens", false).await);
    assert_eq!(o.termination, Some(TerminationKind::TokenBudget));
    assert!(
        o.receipt.contains("Budget: 3,600 of 3,600 tokens"),
        "{}",
        o.receipt
    );
}

#[tokio::test]
async fn at_eighty_percent_the_child_is_told_to_hand_over_and_does() {
    let h = harness(Limits::default(), UnknownPrice::Fail);
    // Capped at five requests: the steer arrives once four are spent.
    let o = started(h.launch("five", "STEERABLE one", false).await);
    assert_eq!(o.status, TaskStatus::Completed, "{:?}", o.error);
    assert_eq!(o.result, "handing over what I have");
    let steered: Vec<_> = h
        .provider
        .requests()
        .into_iter()
        .filter(|r| all_text(r).contains("<budget-warning>You have used 80% of your cost budget"))
        .collect();
    assert_eq!(steered.len(), 1, "one steer, answered in the next request");
    assert_eq!(h.provider.requests().len(), 5);
}

#[tokio::test]
async fn an_exhausted_session_refuses_new_launches_with_a_clear_reason() {
    let h = harness(usd(PER_REQUEST_USD), UnknownPrice::Fail);
    h.budget.charge(
        Spend {
            tokens: 0,
            cost_usd: PER_REQUEST_USD,
        },
        false,
    );
    match h.launch("spender", "SPEND late", false).await {
        EntryOutcome::Refused { error, .. } => {
            assert!(matches!(error, LaunchError::BudgetExhausted(_)), "{error}");
            let text = error.to_string();
            assert!(
                text.contains("cost budget exhausted: $0.006 of $0.006"),
                "{text}"
            );
        }
        EntryOutcome::Started(o) => panic!("started: {o:?}"),
    }
    assert!(h.provider.requests().is_empty());
}

#[tokio::test]
async fn a_model_without_a_price_is_refused_under_a_cost_cap_unless_tokens_only() {
    let h = harness(usd(1.0), UnknownPrice::Fail);
    match h.launch("unpriced", "free work", false).await {
        EntryOutcome::Refused { error, .. } => {
            assert!(matches!(error, LaunchError::UnpricedModel(_)), "{error}");
            assert!(error.to_string().contains("budgets.unknownPrice"));
        }
        EntryOutcome::Started(o) => panic!("started: {o:?}"),
    }
    assert!(h.provider.requests().is_empty(), "no token spent");
    // Nothing stays reserved for the refused launch.
    assert_eq!(h.budget.state().reserved, Spend::default());

    let h = harness(usd(1.0), UnknownPrice::TokensOnly);
    let o = started(h.launch("unpriced", "free work", false).await);
    assert_eq!(o.status, TaskStatus::Completed);
}

#[tokio::test]
async fn a_task_stopped_by_its_budget_continues_once_the_budget_is_raised() {
    let h = harness(Limits::default(), UnknownPrice::Fail);
    let o = started(h.launch("capped", "SPEND later", false).await);
    assert_eq!(o.termination, Some(TerminationKind::CostBudget));
    let id = o.task_id.clone();
    let before = record(&h, &id);
    let spent_before = before.budget.unwrap().spent.cost_usd;

    // Without a raise, the continuation has nothing to spend.
    let refused = guarded(h.manager.send_message(&h.root, &id, "continue please")).await;
    assert!(
        matches!(refused, Err(LaunchError::BudgetExhausted(_))),
        "{refused:?}"
    );

    // Raise its own cap, as `cadre task budget` does, and continue it.
    let mut raised = before.clone();
    raised.budgets.max_cost_usd = Some(PER_REQUEST_USD * 10.0);
    h.manager.store().save(&mut raised).unwrap();
    guarded(h.manager.send_message(&h.root, &id, "continue please"))
        .await
        .unwrap();
    let after = record(&h, &id);
    assert_eq!(after.status, TaskStatus::Completed, "{:?}", after.error);
    assert_eq!(after.termination, Some(TerminationKind::Normal));
    let b = after.budget.unwrap();
    assert!(
        (b.spent.cost_usd - (spent_before + PER_REQUEST_USD)).abs() < 1e-9,
        "{b:?}"
    );
    assert_eq!(b.cap.max_cost_usd, Some(PER_REQUEST_USD * 10.0));
}

/// Replies as `Priced` does, but a conversation's request reports a large context (so the
/// child compacts before its next request) and a compaction summary is dearer.
struct LargeContext(Arc<ScriptedProvider>);

const CONTEXT_INPUT: u64 = 20_000;
const SUMMARY_OUTPUT: u64 = 2_000;

fn is_summary(r: &CompletionRequest) -> bool {
    r.system_prompt
        .starts_with(cadre_core::compaction::prompt::SUMMARIZATION_SYSTEM_PROMPT)
}

impl Provider for LargeContext {
    fn stream(
        &self,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> mpsc::Receiver<StreamEvent> {
        let model = request.model.clone();
        let summary = is_summary(&request);
        let mut inner = self.0.stream(request, cancel);
        let (tx, rx) = mpsc::channel(8);
        tokio::spawn(async move {
            while let Some(mut event) = inner.recv().await {
                if let StreamEvent::Done(m) = &mut event {
                    m.usage = Usage {
                        input: CONTEXT_INPUT,
                        output: if summary { SUMMARY_OUTPUT } else { OUTPUT },
                        ..Usage::default()
                    };
                    cadre_llm::apply_cost(&model, &mut m.usage);
                }
                if tx.send(event).await.is_err() {
                    return;
                }
            }
        });
        rx
    }
}

#[tokio::test]
async fn a_compaction_that_crosses_the_cap_is_counted_and_stops_the_task() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    let provider = ScriptedProvider::new(|r| {
        if is_summary(r) {
            return text("## Goal\nRead the directory.");
        }
        call("ls", json!({}))
    });
    let turn_usd = (CONTEXT_INPUT as f64 * 3.0 + OUTPUT as f64 * 15.0) / 1e6;
    let summary_usd = (CONTEXT_INPUT as f64 * 3.0 + SUMMARY_OUTPUT as f64 * 15.0) / 1e6;
    // Room for two turns and part of a summary: the summary crosses the cap.
    let cap = 2.0 * turn_usd + summary_usd / 2.0;
    let (tx, _rx) = mpsc::unbounded_channel();
    let mut config = manager_config(
        dir.path(),
        Arc::clone(&provider),
        Models(&["scripted"]),
        roster(vec![RoleDef {
            max_cost_usd: Some(cap),
            ..role("compacting")
        }]),
        settings(&json!({})),
        tx,
    );
    config.provider = Arc::new(LargeContext(Arc::clone(&provider)));
    config.models = Arc::new(PricedModels);
    let manager = TaskManager::with_options(config, manager_options());
    manager.set_compaction(cadre_core::compaction::CompactionSettings {
        enabled: true,
        // Compact once the context passes 10,000 tokens, keeping only the newest turn.
        reserve_tokens: 90_000,
        keep_recent_tokens: 10,
    });
    let mut root = crate::common::root_parent(&manager);
    root.model = priced("scripted");
    let o = started(
        guarded(manager.launch(&root, spec("compacting", "COMPACT me"), None))
            .await
            .unwrap()
            .remove(0),
    );
    let summaries = provider.requests().iter().filter(|r| is_summary(r)).count();
    assert!(summaries >= 1, "the child compacted: {o:?}");
    assert_eq!(
        o.termination,
        Some(TerminationKind::CostBudget),
        "{:?}",
        o.error
    );
    let b = manager
        .store()
        .load(crate::common::ROOT_SESSION_ID, &o.task_id)
        .unwrap()
        .budget
        .unwrap();
    // The summary's cost is in the task's spend, which crossed the cap by less than a request.
    let turns = provider.requests().len() - summaries;
    let expected = turns as f64 * turn_usd + summaries as f64 * summary_usd;
    assert!(
        (b.spent.cost_usd - expected).abs() < 1e-9,
        "{b:?} vs {expected}"
    );
    assert!(b.spent.cost_usd > cap && b.spent.cost_usd <= cap + summary_usd);
}
