//! Attacks on the token and cost budgets: ways a cap could be escaped (a fallback model without
//! a price, a continuation whose capped parent has ended, failed requests that were paid for,
//! spend that overflows, parallel Agent calls in one turn), each held shut.
use std::sync::Arc;
use std::time::Duration;

use crate::common::{
    Models, ScriptedProvider, call, fail, first_user, manager_config, manager_options, roster,
    settings, spec, text,
};
use cadre_core::budget::{BudgetNode, Limits, Spend, UnknownPrice};
use cadre_core::orchestrator::manager::{EntryOutcome, ParentNotice, TaskManager};
use cadre_core::roles::{RoleDef, ToolList};
use cadre_llm::{CompletionRequest, LlmError, Model, ModelCost, Provider, StreamEvent};
use cadre_protocol::{TaskStatus, Usage};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const GUARD: Duration = Duration::from_secs(30);

async fn guarded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, f).await.expect("hang guard")
}

const INPUT: u64 = 1000;
const OUTPUT: u64 = 200;
const PER_REQUEST_USD: f64 = (INPUT as f64 * 3.0 + OUTPUT as f64 * 15.0) / 1_000_000.0;

/// Every successful reply reports 1,000/200 tokens priced from the model table, as the real
/// client does (`cadre_llm::client` applies the price on success only). A request whose first
/// user text starts `FAILS-LATE` fails after the service has reported its usage: the partial
/// message carries the token counts but, as the client leaves it, no cost.
struct Priced(Arc<ScriptedProvider>);

impl Provider for Priced {
    fn stream(
        &self,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> mpsc::Receiver<StreamEvent> {
        let model = request.model.clone();
        let fails_late = first_user(&request).starts_with("FAILS-LATE");
        let mut inner = self.0.stream(request, cancel);
        let (tx, rx) = mpsc::channel(8);
        tokio::spawn(async move {
            while let Some(mut event) = inner.recv().await {
                if let StreamEvent::Done(m) = &mut event {
                    if fails_late {
                        let mut partial = m.clone();
                        partial.usage = Usage {
                            input: INPUT,
                            output: OUTPUT,
                            ..Usage::default()
                        };
                        partial.stop_reason = cadre_protocol::StopReason::Error;
                        partial.error_message = Some("overloaded mid-stream".into());
                        event = StreamEvent::Failed {
                            error: LlmError::IncompleteStream {
                                provider: "fake".into(),
                                detail: "overloaded mid-stream".into(),
                            },
                            partial,
                        };
                    } else {
                        m.usage = Usage {
                            input: INPUT,
                            output: OUTPUT,
                            ..Usage::default()
                        };
                        cadre_llm::apply_cost(&model, &mut m.usage);
                    }
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

fn role(name: &str, tools: &[&str]) -> RoleDef {
    RoleDef {
        name: name.into(),
        description: format!("test role {name}"),
        tools: ToolList::Named(tools.iter().map(|s| s.to_string()).collect()),
        prompt: format!("ROLE BODY OF {name}"),
        ..RoleDef::default()
    }
}

/// The boss's cap: five requests.
const BOSS_CAP: f64 = PER_REQUEST_USD * 5.0;

fn roles() -> Vec<RoleDef> {
    vec![
        role("spender", &["ls"]),
        // Its first model is priced; its fallback is not.
        RoleDef {
            fallback_model: Some("fake/free".into()),
            ..role("flaky-to-free", &["ls"])
        },
        // A capped parent that launches one spender child.
        RoleDef {
            max_cost_usd: Some(BOSS_CAP),
            ..role("boss", &["Agent", "ls"])
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

fn harness(cap: Limits) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    let provider = ScriptedProvider::new(|r| {
        let key = first_user(r);
        let last = crate::common::last_text(r);
        if last == "continue please" {
            return call("ls", json!({}));
        }
        // `FLAKY` fails its first call on the priced model, then spends on the fallback.
        if key.starts_with("FLAKY") {
            if r.model.id == "scripted" {
                return fail();
            }
            return if crate::common::turn(r) < 30 {
                call("ls", json!({}))
            } else {
                text("spent thirty free turns")
            };
        }
        if key.starts_with("BOSS") {
            return if crate::common::turn(r) == 0 {
                call(
                    "Agent",
                    json!({"subagent_type": "spender", "description": "grand",
                           "prompt": "SPEND grandchild"}),
                )
            } else {
                text("boss done")
            };
        }
        if key.starts_with("SPEND") || key.starts_with("FAILS-LATE") {
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
    options.unknown_price = UnknownPrice::Fail;
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
    /// The next completion notice to the root (a background task's end is owed until read).
    async fn completion(&mut self) -> ParentNotice {
        loop {
            let n = guarded(self.notices.recv()).await.expect("notice");
            if n.kind == cadre_core::orchestrator::manager::NoticeKind::Completion {
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

async fn launch(h: &Harness, role: &str, prompt: &str) -> EntryOutcome {
    match guarded(h.manager.launch(&h.root, spec(role, prompt), None)).await {
        Ok(mut entries) => entries.remove(0),
        Err(error) => EntryOutcome::Refused {
            description: prompt.into(),
            error,
        },
    }
}

/// A role's fallback model (T7) without a price is not taken under a cost cap: the task's
/// first failure stands instead of a run the cap cannot count.
#[tokio::test]
async fn a_fallback_to_an_unpriced_model_is_not_taken_under_a_cost_cap() {
    let h = harness(usd(1.0));
    let outcome = launch(&h, "flaky-to-free", "FLAKY work").await;
    let free_requests = h
        .provider
        .requests()
        .iter()
        .filter(|r| r.model.id == "free")
        .count();
    if let EntryOutcome::Started(o) = &outcome {
        let r = record(&h, &o.task_id);
        eprintln!(
            "model {} status {:?} spent {:?}; {free_requests} requests on the unpriced model",
            r.model, r.status, r.budget
        );
    }
    assert_eq!(
        free_requests, 0,
        "under a cost cap with unknownPrice=fail, no request may go to a model without a price"
    );
}

/// A task continued after its capped parent ended stays inside that parent's cap: the parent's
/// budget is rebuilt from its record (a stand-in node) rather than the root's taken.
#[tokio::test]
async fn continuing_a_grandchild_after_its_capped_parent_ended_stays_inside_the_parents_cap() {
    let h = harness(usd(40.0 * PER_REQUEST_USD));
    let boss = match launch(&h, "boss", "BOSS run").await {
        EntryOutcome::Started(o) => *o,
        EntryOutcome::Refused { error, .. } => panic!("refused: {error}"),
    };
    guarded(h.manager.wait_idle()).await;
    let boss_record = record(&h, &boss.task_id);
    let grand = h
        .manager
        .store()
        .list_root(crate::common::ROOT_SESSION_ID)
        .unwrap()
        .records
        .into_iter()
        .find(|r| r.parent_task_id.as_deref() == Some(boss.task_id.as_str()))
        .expect("the boss launched a grandchild");
    let before = grand.budget.expect("capped").spent.cost_usd;
    eprintln!(
        "boss {:?} spent {:?}; grandchild spent {before} (cap {:?})",
        boss_record.status,
        boss_record.budget.map(|b| b.spent),
        grand.budget.map(|b| b.cap)
    );
    // The boss has ended. Continue its child from the root: it keeps listing for ever.
    let sent = guarded(
        h.manager
            .send_message(&h.root, &grand.id, "continue please"),
    )
    .await;
    eprintln!("send_message: {sent:?}");
    guarded(h.manager.wait_idle()).await;
    let after = record(&h, &grand.id);
    let b = after.budget.expect("capped");
    eprintln!(
        "after the continuation: {b:?}; session {:?}",
        h.budget.state()
    );
    // Everything under the boss together may pass its cap by one in-flight request per task.
    assert!(
        b.spent.cost_usd <= BOSS_CAP + 2.0 * PER_REQUEST_USD + 1e-9,
        "the boss's subtree spent {} against its cap {BOSS_CAP}",
        b.spent.cost_usd
    );
}

/// A request that fails after the service reported its usage (an in-stream error, a dropped
/// connection after output) was paid for: it is charged its priced cost, not only its tokens.
#[tokio::test]
async fn a_failed_request_with_reported_usage_is_charged_its_cost() {
    let h = harness(usd(1.0));
    let _ = launch(&h, "spender", "FAILS-LATE once").await;
    guarded(h.manager.wait_idle()).await;
    let s = h.budget.state();
    eprintln!("session after one failed request: {s:?}");
    assert_eq!(s.spent.tokens, INPUT + OUTPUT, "the tokens are charged");
    assert!(
        (s.spent.cost_usd - PER_REQUEST_USD).abs() < 1e-9,
        "the same tokens cost nothing: {s:?}"
    );
}

/// A spend that overflows saturates: one more huge charge (a price near `f64::MAX`) cannot
/// reset an exhausted cap.
#[test]
fn an_overflowing_spend_saturates_and_the_cap_stays_exhausted() {
    let root = BudgetNode::root(usd(1.0), Spend::default());
    let huge = Spend {
        tokens: 0,
        cost_usd: f64::MAX,
    };
    root.charge(huge, false);
    assert!(root.admit().is_err(), "spent f64::MAX of $1");
    root.charge(huge, false);
    assert!(
        root.admit().is_err(),
        "spent twice f64::MAX, but the ledger says {:?}",
        root.state().spent
    );
}

/// Several Agent calls in one turn, each reserving half of what is left,
/// never jointly reserve more than the cap.
#[tokio::test]
async fn parallel_agent_calls_in_one_turn_reserve_inside_the_cap() {
    let mut h = harness(usd(40.0 * PER_REQUEST_USD));
    let launches = (0..4).map(|i| {
        let mut s = spec("spender", &format!("SPEND {i}"));
        s.task.run_in_background = Some(true);
        let m = h.manager.clone();
        let root = h.root.clone();
        async move { m.launch(&root, s, None).await }
    });
    let _ = guarded(futures_util::future::join_all(launches)).await;
    for _ in 0..4 {
        let _ = h.completion().await;
    }
    guarded(h.manager.wait_idle()).await;
    let s = h.budget.state();
    assert!(
        s.spent.cost_usd <= 40.0 * PER_REQUEST_USD + 4.0 * PER_REQUEST_USD + 1e-9,
        "{s:?}"
    );
    assert!(s.reserved.cost_usd.abs() < 1e-9, "{s:?}");
    let _ = TaskStatus::Partial;
}
