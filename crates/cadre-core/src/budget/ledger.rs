//! The budget tree: one node for the root session and one per task, each charged with its own
//! requests and its whole subtree's.
//!
//! Reservations keep a fan-out from jointly overspending. A child launched under a capped
//! parent reserves a slice ([`super::CHILD_SHARE`]) of what the parent has left — its cap,
//! minus its spend, minus what its other live children still hold — and its own cap is the
//! smaller of that slice and the role's. What the child spends comes out of its reservation;
//! what it leaves is given back when it ends ([`BudgetNode::close`]). So every live task's
//! remaining room is carved out of its parent's, and all of them together never exceed the
//! root's cap by more than one in-flight request each.
//!
//! Locks: one mutex per node, never two held at once (a charge walks up the tree locking one
//! node at a time), so nothing here can deadlock.

use std::sync::{Arc, Mutex};

use super::{BudgetState, CHILD_SHARE, Limits, Meter, Spend, WARN_AT};

/// Lock ignoring poisoning: nothing panics while holding these locks.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Called once when a node's spend first crosses [`WARN_AT`] of its cap.
pub type WarnHook = Arc<dyn Fn(Meter, BudgetState) + Send + Sync>;

/// One node of the tree.
pub struct BudgetNode {
    parent: Option<Arc<BudgetNode>>,
    state: Mutex<NodeState>,
    warn: Mutex<Option<WarnHook>>,
    /// Stands in for a task that has ended (rebuilt from its record so a continued child stays
    /// inside its subtree's cap): it is closed with the child it was made for.
    stand_in: bool,
}

#[derive(Debug, Default)]
struct NodeState {
    cap: Limits,
    /// The node's own requests and its subtree's.
    spent: Spend,
    /// Reservations its live children have not spent yet.
    outstanding: Spend,
    /// What is left of this node's own reservation in its parent; `None` for a node that
    /// reserved nothing (a root, or the child of an uncapped parent).
    hold_left: Option<Spend>,
    estimated: bool,
    warned: bool,
    exhausted: Option<Meter>,
}

/// Why a request or a launch is refused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exhausted {
    pub meter: Meter,
    pub spent: Spend,
    pub cap: Limits,
}

impl std::fmt::Display for Exhausted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.meter {
            Meter::Tokens => write!(
                f,
                "token budget exhausted: {} of {} tokens",
                super::text::tokens(self.spent.tokens),
                super::text::tokens(self.cap.max_tokens.unwrap_or(0))
            ),
            Meter::Cost => write!(
                f,
                "cost budget exhausted: {} of {}",
                super::text::usd(self.spent.cost_usd),
                super::text::usd(self.cap.max_cost_usd.unwrap_or(0.0))
            ),
        }
    }
}

/// Whether a request may be sent.
pub type Admission = Result<(), Exhausted>;

/// Which capped meter of `cap` is used up when `used` is counted against it.
fn used_up(cap: Limits, used: Spend) -> Option<Meter> {
    if cap.max_tokens.is_some_and(|c| used.tokens >= c) {
        return Some(Meter::Tokens);
    }
    // A cent's hundredth left is nothing left: no request costs less.
    if cap.max_cost_usd.is_some_and(|c| used.cost_usd >= c - 1e-6) {
        return Some(Meter::Cost);
    }
    None
}

impl BudgetNode {
    /// A root session's node; `spent_before` is what the session spent in earlier processes.
    pub fn root(cap: Limits, spent_before: Spend) -> Arc<BudgetNode> {
        Arc::new(BudgetNode {
            parent: None,
            state: Mutex::new(NodeState {
                cap,
                spent: spent_before,
                ..NodeState::default()
            }),
            warn: Mutex::new(None),
            stand_in: false,
        })
    }

    /// What is left to reserve: the cap minus the spend and the live children's reservations,
    /// per capped meter.
    fn available(s: &NodeState) -> Spend {
        let used = Spend {
            tokens: s.spent.tokens.saturating_add(s.outstanding.tokens),
            cost_usd: s.spent.cost_usd + s.outstanding.cost_usd,
        };
        Spend {
            tokens: s
                .cap
                .max_tokens
                .map_or(u64::MAX, |c| c.saturating_sub(used.tokens)),
            cost_usd: s
                .cap
                .max_cost_usd
                .map_or(f64::INFINITY, |c| (c - used.cost_usd).max(0.0)),
        }
    }

    /// A child's node: its cap is the smaller of `own` and `share` (at most
    /// [`super::CHILD_SHARE`]) of what this node has left, which it reserves. `spent_before` is what a continued task spent in earlier runs
    /// (already counted above it): its new cap leaves room for that. Refused when this node or
    /// an ancestor has nothing left.
    pub fn child(
        self: &Arc<Self>,
        own: Limits,
        spent_before: Spend,
        share: f64,
    ) -> Result<Arc<Self>, Exhausted> {
        let share = if share.is_finite() && share > 0.0 {
            share.min(CHILD_SHARE)
        } else {
            CHILD_SHARE
        };
        self.admit()?;
        let mut s = lock(&self.state);
        let available = Self::available(&s);
        if let Some(meter) = used_up(s.cap, s.spent).or_else(|| {
            // Nothing left to reserve although the node itself could still make a request.
            if s.cap.max_tokens.is_some() && available.tokens == 0 {
                Some(Meter::Tokens)
            } else if s.cap.max_cost_usd.is_some() && available.cost_usd <= 1e-6 {
                Some(Meter::Cost)
            } else {
                None
            }
        }) {
            return Err(Exhausted {
                meter,
                spent: s.spent,
                cap: s.cap,
            });
        }
        let hold = Spend {
            tokens: s
                .cap
                .max_tokens
                .map_or(0, |_| ((available.tokens as f64 * share) as u64).max(1)),
            cost_usd: s
                .cap
                .max_cost_usd
                .map_or(0.0, |_| available.cost_usd * share),
        };
        let slice = Limits {
            max_tokens: s
                .cap
                .max_tokens
                .map(|_| hold.tokens.saturating_add(spent_before.tokens)),
            max_cost_usd: s
                .cap
                .max_cost_usd
                .map(|_| hold.cost_usd + spent_before.cost_usd),
        };
        let cap = own.min(slice);
        // A continued task that already spent its own cap has nothing to run on.
        if let Some(meter) = used_up(cap, spent_before) {
            return Err(Exhausted {
                meter,
                spent: spent_before,
                cap,
            });
        }
        let capped = !s.cap.is_unlimited();
        if capped {
            s.outstanding.add(hold);
        }
        drop(s);
        Ok(Arc::new(BudgetNode {
            parent: Some(Arc::clone(self)),
            state: Mutex::new(NodeState {
                cap,
                spent: spent_before,
                hold_left: capped.then_some(hold),
                ..NodeState::default()
            }),
            warn: Mutex::new(None),
            stand_in: false,
        }))
    }

    /// A node standing in for an ended task under this one: its cap and spend are the task's as
    /// recorded, and it reserves its room here as a child would. A child made under it (a
    /// continued task of the ended one) closes it when it closes.
    pub fn stand_in(
        self: &Arc<Self>,
        own: Limits,
        spent_before: Spend,
    ) -> Result<Arc<Self>, Exhausted> {
        let node = self.child(own, spent_before, CHILD_SHARE)?;
        let state = std::mem::take(&mut *lock(&node.state));
        Ok(Arc::new(BudgetNode {
            parent: node.parent.clone(),
            state: Mutex::new(state),
            warn: Mutex::new(None),
            stand_in: true,
        }))
    }

    /// Call `hook` when this node's spend first crosses [`WARN_AT`] of its cap.
    pub fn on_warning(&self, hook: WarnHook) {
        *lock(&self.warn) = Some(hook);
    }

    /// May this node send a request now? Its own room counts its children's reservations;
    /// an ancestor only refuses once it is spent outright (its room for this node is reserved).
    pub fn admit(&self) -> Admission {
        {
            let s = lock(&self.state);
            let used = Spend {
                tokens: s.spent.tokens.saturating_add(s.outstanding.tokens),
                cost_usd: s.spent.cost_usd + s.outstanding.cost_usd,
            };
            if let Some(meter) = used_up(s.cap, used) {
                return Err(Exhausted {
                    meter,
                    spent: s.spent,
                    cap: s.cap,
                });
            }
        }
        let mut up = self.parent.clone();
        while let Some(node) = up {
            {
                let s = lock(&node.state);
                if let Some(meter) = used_up(s.cap, s.spent) {
                    return Err(Exhausted {
                        meter,
                        spent: s.spent,
                        cap: s.cap,
                    });
                }
            }
            up = node.parent.clone();
        }
        Ok(())
    }

    /// Record that a request was refused here, for the task's termination.
    pub fn mark_exhausted(&self, meter: Meter) {
        let mut s = lock(&self.state);
        s.exhausted.get_or_insert(meter);
    }

    /// Charge one response to this node and every ancestor. Warning hooks of nodes that cross
    /// [`WARN_AT`] run after every lock is released.
    pub fn charge(self: &Arc<Self>, spend: Spend, estimated: bool) {
        if spend.is_zero() && !estimated {
            return;
        }
        let mut fired: Vec<(WarnHook, Meter, BudgetState)> = Vec::new();
        // What the node below used of its reservation here: no longer outstanding.
        let mut used_of_hold = Spend::default();
        let mut node = Some(Arc::clone(self));
        while let Some(n) = node {
            {
                let mut s = lock(&n.state);
                s.spent.add(spend);
                s.estimated |= estimated;
                s.outstanding = s.outstanding.minus(used_of_hold);
                used_of_hold = match s.hold_left {
                    Some(h) => {
                        let d = spend.min(h);
                        s.hold_left = Some(h.minus(d));
                        d
                    }
                    None => Spend::default(),
                };
                if !s.warned
                    && let Some(meter) = crossed_warning(s.cap, s.spent)
                {
                    s.warned = true;
                    if let Some(hook) = lock(&n.warn).clone() {
                        fired.push((hook, meter, view(&s)));
                    }
                }
            }
            node = n.parent.clone();
        }
        for (hook, meter, state) in fired {
            hook(meter, state);
        }
    }

    /// The node's task ended: what is left of its reservation goes back to its parent.
    pub fn close(&self) {
        let left = {
            let mut s = lock(&self.state);
            s.hold_left.replace(Spend::default())
        };
        if let (Some(left), Some(parent)) = (left, &self.parent) {
            let mut p = lock(&parent.state);
            p.outstanding = p.outstanding.minus(left);
        }
        if let Some(parent) = self.parent.as_ref().filter(|p| p.stand_in) {
            parent.close();
        }
    }

    pub fn state(&self) -> BudgetState {
        view(&lock(&self.state))
    }

    /// The cap in force.
    pub fn cap(&self) -> Limits {
        lock(&self.state).cap
    }
}

/// A child's reservation until its task exists: dropped on a failed launch, it goes back to
/// the parent.
pub struct Reservation {
    node: Arc<BudgetNode>,
    kept: bool,
}

impl Reservation {
    pub fn new(node: Arc<BudgetNode>) -> Reservation {
        Reservation { node, kept: false }
    }

    pub fn node(&self) -> &Arc<BudgetNode> {
        &self.node
    }

    /// The task exists: its end gives the reservation back from now on.
    pub fn keep(mut self) -> Arc<BudgetNode> {
        self.kept = true;
        Arc::clone(&self.node)
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.kept {
            self.node.close();
        }
    }
}

impl std::fmt::Debug for BudgetNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BudgetNode")
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

fn view(s: &NodeState) -> BudgetState {
    BudgetState {
        cap: s.cap,
        spent: s.spent,
        reserved: s.outstanding,
        estimated: s.estimated,
        exhausted: s.exhausted,
    }
}

fn crossed_warning(cap: Limits, spent: Spend) -> Option<Meter> {
    if cap
        .max_tokens
        .is_some_and(|c| spent.tokens as f64 >= c as f64 * WARN_AT)
    {
        return Some(Meter::Tokens);
    }
    if cap
        .max_cost_usd
        .is_some_and(|c| spent.cost_usd >= c * WARN_AT)
    {
        return Some(Meter::Cost);
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    fn usd(x: f64) -> Limits {
        Limits {
            max_cost_usd: Some(x),
            max_tokens: None,
        }
    }

    fn cost(x: f64) -> Spend {
        Spend {
            tokens: 0,
            cost_usd: x,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn an_unlimited_tree_admits_everything_and_still_counts() {
        let root = BudgetNode::root(Limits::default(), Spend::default());
        let child = root
            .child(Limits::default(), Spend::default(), CHILD_SHARE)
            .unwrap();
        child.charge(cost(5.0), false);
        assert!(child.admit().is_ok());
        assert!(close(root.state().spent.cost_usd, 5.0));
        assert!(close(child.state().spent.cost_usd, 5.0));
    }

    #[test]
    fn a_child_reserves_half_of_what_is_left_and_gives_back_the_rest() {
        let root = BudgetNode::root(usd(1.0), cost(0.2));
        let a = root
            .child(Limits::default(), Spend::default(), CHILD_SHARE)
            .unwrap();
        assert!(close(a.cap().max_cost_usd.unwrap(), 0.4));
        assert!(close(root.state().reserved.cost_usd, 0.4));
        let b = root
            .child(usd(0.05), Spend::default(), CHILD_SHARE)
            .unwrap();
        // Half of the 0.4 left, but its own cap is smaller.
        assert!(close(b.cap().max_cost_usd.unwrap(), 0.05));
        a.charge(cost(0.1), false);
        // Spent out of the reservation: still 0.3 held for a, 0.2 for b.
        let s = root.state();
        assert!(close(s.spent.cost_usd, 0.3), "{s:?}");
        assert!(close(s.reserved.cost_usd, 0.5), "{s:?}");
        a.close();
        b.close();
        assert!(close(root.state().reserved.cost_usd, 0.0));
    }

    #[test]
    fn a_fan_out_of_overspenders_never_passes_the_roots_cap_by_more_than_one_request_each() {
        let root = BudgetNode::root(usd(1.0), Spend::default());
        let kids: Vec<_> = (0..8)
            .map(|_| {
                root.child(Limits::default(), Spend::default(), CHILD_SHARE)
                    .unwrap()
            })
            .collect();
        // Each spends 0.03 a request while admitted.
        for k in &kids {
            while k.admit().is_ok() {
                k.charge(cost(0.03), false);
            }
        }
        let spent = root.state().spent.cost_usd;
        assert!(spent <= 1.0 + 8.0 * 0.03, "{spent}");
        // Every child stopped inside its reservation plus one request.
        for k in &kids {
            let s = k.state();
            assert!(
                s.spent.cost_usd <= s.cap.max_cost_usd.unwrap() + 0.03,
                "{s:?}"
            );
        }
        assert!(root.admit().is_err() || root.state().spent.cost_usd < 1.0);
    }

    #[test]
    fn the_tasks_of_one_call_split_half_of_the_remainder_equally() {
        let root = BudgetNode::root(usd(1.6), Spend::default());
        let n = 8;
        let kids: Vec<_> = (0..n)
            .map(|i| {
                root.child(
                    Limits::default(),
                    Spend::default(),
                    1.0 / (2 * n - i) as f64,
                )
                .unwrap()
            })
            .collect();
        for k in &kids {
            assert!(close(k.cap().max_cost_usd.unwrap(), 0.1), "{k:?}");
        }
        assert!(close(root.state().reserved.cost_usd, 0.8));
        // A share above the default is held to it.
        let big = root
            .child(Limits::default(), Spend::default(), 7.0)
            .unwrap();
        assert!(close(big.cap().max_cost_usd.unwrap(), 0.4));
    }

    #[test]
    fn the_root_is_refused_once_its_own_room_is_gone_but_a_child_keeps_its_reservation() {
        let root = BudgetNode::root(usd(1.0), Spend::default());
        let child = root
            .child(Limits::default(), Spend::default(), CHILD_SHARE)
            .unwrap();
        root.charge(cost(0.5), false);
        assert!(root.admit().is_err(), "0.5 spent + 0.5 reserved");
        assert!(child.admit().is_ok());
        let e = root
            .child(Limits::default(), Spend::default(), CHILD_SHARE)
            .unwrap_err();
        assert_eq!(e.meter, Meter::Cost);
        assert_eq!(e.to_string(), "cost budget exhausted: $0.50 of $1.00");
    }

    #[test]
    fn tokens_are_a_meter_of_their_own() {
        let root = BudgetNode::root(
            Limits {
                max_tokens: Some(1000),
                max_cost_usd: None,
            },
            Spend::default(),
        );
        let c = root
            .child(Limits::default(), Spend::default(), CHILD_SHARE)
            .unwrap();
        assert_eq!(c.cap().max_tokens, Some(500));
        assert_eq!(c.cap().max_cost_usd, None);
        c.charge(
            Spend {
                tokens: 500,
                cost_usd: 9.0,
            },
            false,
        );
        let e = c.admit().unwrap_err();
        assert_eq!(e.meter, Meter::Tokens);
        assert_eq!(e.to_string(), "token budget exhausted: 500 of 500 tokens");
    }

    #[test]
    fn a_continued_task_keeps_its_earlier_spend_and_gets_new_room() {
        let root = BudgetNode::root(usd(10.0), cost(0.5));
        let c = root.child(usd(1.0), cost(0.5), CHILD_SHARE).unwrap();
        assert!(close(c.cap().max_cost_usd.unwrap(), 1.0));
        assert!(c.admit().is_ok());
        c.charge(cost(0.5), false);
        assert!(c.admit().is_err());
    }

    #[test]
    fn the_warning_fires_once_per_node_at_eighty_percent() {
        let root = BudgetNode::root(usd(1.0), Spend::default());
        let child = root
            .child(Limits::default(), Spend::default(), CHILD_SHARE)
            .unwrap();
        let root_warnings = Arc::new(AtomicU32::new(0));
        let child_warnings = Arc::new(AtomicU32::new(0));
        let r = Arc::clone(&root_warnings);
        root.on_warning(Arc::new(move |_, _| {
            r.fetch_add(1, Ordering::SeqCst);
        }));
        let c = Arc::clone(&child_warnings);
        child.on_warning(Arc::new(move |m, s| {
            assert_eq!(m, Meter::Cost);
            assert!(s.spent.cost_usd >= 0.4);
            c.fetch_add(1, Ordering::SeqCst);
        }));
        child.charge(cost(0.39), false);
        assert_eq!(child_warnings.load(Ordering::SeqCst), 0);
        child.charge(cost(0.02), false);
        child.charge(cost(0.05), false);
        assert_eq!(child_warnings.load(Ordering::SeqCst), 1);
        assert_eq!(root_warnings.load(Ordering::SeqCst), 0);
        root.charge(cost(0.4), false);
        assert_eq!(root_warnings.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_stand_in_for_an_ended_task_keeps_its_subtree_inside_its_cap() {
        let root = BudgetNode::root(usd(10.0), Spend::default());
        // The ended parent had a $1.00 cap and spent $0.90 with its subtree.
        let parent = root.stand_in(usd(1.0), cost(0.9)).unwrap();
        assert!(close(parent.cap().max_cost_usd.unwrap(), 1.0));
        let child = parent
            .child(Limits::default(), cost(0.0), CHILD_SHARE)
            .unwrap();
        assert!(close(child.cap().max_cost_usd.unwrap(), 0.05), "{child:?}");
        child.charge(cost(0.05), false);
        assert!(child.admit().is_err());
        assert!(close(root.state().spent.cost_usd, 0.05));
        // Closing the child closes the stand-in: the root gets its reservation back.
        child.close();
        assert!(close(root.state().reserved.cost_usd, 0.0), "{root:?}");
        // A stand-in for a parent already spent refuses the continuation.
        assert!(root.stand_in(usd(1.0), cost(1.0)).is_err());
    }

    #[test]
    fn a_parent_with_nothing_left_refuses_new_children() {
        let root = BudgetNode::root(usd(1.0), cost(1.0));
        assert!(
            root.child(Limits::default(), Spend::default(), CHILD_SHARE)
                .is_err()
        );
        let tiny = BudgetNode::root(
            Limits {
                max_tokens: Some(1),
                max_cost_usd: None,
            },
            Spend::default(),
        );
        let first = tiny
            .child(Limits::default(), Spend::default(), CHILD_SHARE)
            .unwrap();
        assert_eq!(first.cap().max_tokens, Some(1));
        assert!(
            tiny.child(Limits::default(), Spend::default(), CHILD_SHARE)
                .is_err()
        );
    }
}
