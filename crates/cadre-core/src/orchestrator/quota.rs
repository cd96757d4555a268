//! The concurrency quota of one root session (SPEC O7).
//!
//! Every task under a root session — at any depth — runs holding one slot of the root's [`Quota`].
//! Waiting tasks are served strictly first come, first served.
//!
//! The quota is a `tokio::sync::Semaphore`: it is documented as fair (permits are handed out in
//! the order they were requested, and a waiter never overtakes an earlier one), and dropping a
//! pending `acquire` future removes it from the wait queue. Those are exactly the two properties
//! needed, so no hand-made queue is kept.
//!
//! **Slot lending.** A parent blocked on a foreground child does no work while it waits, so it
//! lends its own slot to that child ([`Permit::lend`]) instead of making the child queue for a new
//! one. Without this, a full quota of parents each waiting on a queued child would deadlock. A slot
//! is reference counted: it goes back to the semaphore only when its holder *and* everyone it was
//! lent to have let go, so a parent that ends before its borrowing child never frees a slot the
//! child still runs in. A slot is lent to one borrower at a time, so lending never lets more
//! tasks work than the capacity: parallel foreground children beyond the first wait for a slot
//! of their own *or* for the loan to come back, whichever is first
//! ([`Quota::acquire_for_foreground_child`]). Waiting for the quota alone would deadlock a full
//! quota, since the parent holding the slot waits for them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// One FIFO quota shared by every task of a root session. Cheap to clone; clones share slots.
#[derive(Debug, Clone)]
pub struct Quota {
    semaphore: Arc<Semaphore>,
    capacity: usize,
}

impl Quota {
    /// A quota of `capacity` concurrent tasks. A capacity of 0 would block every task forever, so it
    /// is raised to 1; an absurdly large one is capped at what the semaphore supports.
    pub fn new(capacity: usize) -> Quota {
        let capacity = capacity.clamp(1, Semaphore::MAX_PERMITS);
        Quota {
            semaphore: Arc::new(Semaphore::new(capacity)),
            capacity,
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Slots free right now (a snapshot; for status displays, not decisions).
    pub fn available(&self) -> usize {
        self.semaphore.available_permits()
    }

    /// Wait for a slot, behind every earlier waiter. Cancel safe: dropping the future before it
    /// completes leaves the queue as if it had never been called.
    pub async fn acquire(&self) -> Permit {
        // The semaphore is owned by this quota and never closed, so acquiring cannot fail; the
        // error arm exists only to satisfy the type and is handled without panicking.
        match Arc::clone(&self.semaphore).acquire_owned().await {
            Ok(permit) => Permit::root(permit),
            Err(_) => Permit::root_unbounded(),
        }
    }

    /// A slot without waiting, if one is free and nobody is queued ahead.
    pub fn try_acquire(&self) -> Option<Permit> {
        Arc::clone(&self.semaphore)
            .try_acquire_owned()
            .ok()
            .map(Permit::root)
    }

    /// The slot for a foreground child: borrowed from its blocked parent when the parent holds a
    /// slot that is not already lent out; otherwise the first of a slot acquired in FIFO order
    /// like any other task and the parent's loan coming back (from a sibling that ended).
    pub async fn acquire_for_foreground_child(&self, parent: Option<&Permit>) -> Permit {
        let Some(parent) = parent else {
            return self.acquire().await;
        };
        if let Some(lent) = parent.lend() {
            return lent;
        }
        tokio::select! {
            lent = parent.borrow() => lent,
            own = self.acquire() => own,
        }
    }
}

/// The slot a task runs in. Released when every holder of the slot (this permit and the permits
/// lent from it) has been dropped.
#[derive(Debug)]
pub struct Permit {
    /// The semaphore permit, shared with borrowers; it returns to the quota when the last `Arc`
    /// goes. `None` only in the unreachable closed-semaphore case.
    slot: Arc<Option<OwnedSemaphorePermit>>,
    /// Whether this permit's slot is lent to a child.
    lending: Arc<Loan>,
    /// For a borrowed permit: the lender's loan, returned when this permit drops so the lender
    /// can lend again.
    lender: Option<Arc<Loan>>,
}

/// A slot's loan to one child at a time.
#[derive(Debug, Default)]
struct Loan {
    out: AtomicBool,
    /// Signalled when the loan comes back.
    returned: Notify,
}

impl Permit {
    fn root(permit: OwnedSemaphorePermit) -> Permit {
        Permit {
            slot: Arc::new(Some(permit)),
            lending: Arc::default(),
            lender: None,
        }
    }

    fn root_unbounded() -> Permit {
        Permit {
            slot: Arc::new(None),
            lending: Arc::default(),
            lender: None,
        }
    }

    /// Lend this slot to a child while the holder waits on it. `None` when the slot is already
    /// lent (a second parallel child must acquire its own slot). The loan ends when the returned
    /// permit is dropped; a borrowed permit can itself be lent on to a grandchild.
    pub fn lend(&self) -> Option<Permit> {
        if self
            .lending
            .out
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return None;
        }
        Some(Permit {
            slot: Arc::clone(&self.slot),
            lending: Arc::default(),
            lender: Some(Arc::clone(&self.lending)),
        })
    }

    /// Lend this slot as soon as it is not lent (see [`Permit::lend`]).
    pub async fn borrow(&self) -> Permit {
        loop {
            let returned = self.lending.returned.notified();
            tokio::pin!(returned);
            // Registered before the check, so a loan returned in between is not missed.
            returned.as_mut().enable();
            if let Some(lent) = self.lend() {
                return lent;
            }
            returned.await;
        }
    }

    /// Whether this slot is currently lent to a child.
    pub fn is_lent(&self) -> bool {
        self.lending.out.load(Ordering::Acquire)
    }

    /// Whether this permit was borrowed from a parent rather than acquired from the quota.
    pub fn is_borrowed(&self) -> bool {
        self.lender.is_some()
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(lender) = &self.lender {
            lender.out.store(false, Ordering::Release);
            lender.returned.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use std::future::Future;
    use std::sync::Mutex;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    const GUARD: Duration = Duration::from_secs(10);

    async fn guarded<T>(f: impl Future<Output = T>) -> T {
        tokio::time::timeout(GUARD, f).await.expect("hang guard")
    }

    /// Yield until the runtime has polled everything runnable, without relying on time.
    async fn settle() {
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
    }

    #[test]
    fn capacity_is_clamped() {
        assert_eq!(Quota::new(0).capacity(), 1);
        assert_eq!(Quota::new(3).capacity(), 3);
        assert_eq!(Quota::new(usize::MAX).capacity(), Semaphore::MAX_PERMITS);
    }

    #[tokio::test]
    async fn permits_release_on_drop() {
        let q = Quota::new(2);
        let a = q.acquire().await;
        let b = q.acquire().await;
        assert_eq!(q.available(), 0);
        assert!(q.try_acquire().is_none());
        drop(a);
        assert_eq!(q.available(), 1);
        drop(b);
        assert_eq!(q.available(), 2);
    }

    #[tokio::test]
    async fn waiters_are_served_in_fifo_order() {
        let q = Quota::new(1);
        let first = q.acquire().await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut handles = Vec::new();
        for i in 0..20 {
            let q = q.clone();
            let order = Arc::clone(&order);
            handles.push(tokio::spawn(async move {
                let p = q.acquire().await;
                order.lock().unwrap().push(i);
                // Hold the slot across a yield so the next waiter really has to wait for it.
                tokio::task::yield_now().await;
                drop(p);
            }));
            // Each waiter is enqueued before the next one is spawned.
            settle().await;
        }
        drop(first);
        for h in handles {
            guarded(h).await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), (0..20).collect::<Vec<_>>());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn capacity_is_respected_under_concurrency() {
        let q = Quota::new(3);
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let mut handles = Vec::new();
        for _ in 0..64 {
            let q = q.clone();
            let running = Arc::clone(&running);
            let peak = Arc::clone(&peak);
            handles.push(tokio::spawn(async move {
                let _p = q.acquire().await;
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                for _ in 0..5 {
                    tokio::task::yield_now().await;
                }
                running.fetch_sub(1, Ordering::SeqCst);
            }));
        }
        for h in handles {
            guarded(h).await.unwrap();
        }
        assert!(peak.load(Ordering::SeqCst) <= 3);
        assert_eq!(q.available(), 3);
    }

    #[tokio::test]
    async fn a_dropped_waiter_leaves_the_queue() {
        let q = Quota::new(1);
        let held = q.acquire().await;
        // A waiter that is enqueued and then cancelled.
        let q2 = q.clone();
        let cancelled = tokio::spawn(async move {
            let _p = q2.acquire().await;
            panic!("a cancelled waiter must never get the slot");
        });
        settle().await;
        // A second waiter queued behind it.
        let q3 = q.clone();
        let later = tokio::spawn(async move { q3.acquire().await });
        settle().await;
        cancelled.abort();
        assert!(guarded(cancelled).await.unwrap_err().is_cancelled());
        drop(held);
        let p = guarded(later).await.unwrap();
        assert_eq!(q.available(), 0);
        drop(p);
        assert_eq!(q.available(), 1);
    }

    #[tokio::test]
    async fn a_timed_out_acquire_does_not_hold_a_place() {
        let q = Quota::new(1);
        let held = q.acquire().await;
        // Poll the acquire once, then drop it: it was queued and must leave the queue.
        {
            let mut fut = std::pin::pin!(q.acquire());
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            assert!(fut.as_mut().poll(&mut cx).is_pending());
        }
        drop(held);
        assert!(q.try_acquire().is_some());
    }

    #[tokio::test]
    async fn lent_permit_shares_the_slot_and_returns_it() {
        let q = Quota::new(1);
        let parent = q.acquire().await;
        let child = parent.lend().expect("first loan");
        assert!(child.is_borrowed());
        assert!(parent.is_lent());
        // Only one loan at a time.
        assert!(parent.lend().is_none());
        assert_eq!(q.available(), 0);
        drop(child);
        assert!(!parent.is_lent());
        // The slot is back with the parent, not with the quota.
        assert_eq!(q.available(), 0);
        let again = parent.lend().expect("lendable again after the loan ended");
        drop(again);
        drop(parent);
        assert_eq!(q.available(), 1);
    }

    #[tokio::test]
    async fn slot_outlives_a_parent_that_ends_before_its_borrower() {
        let q = Quota::new(1);
        let parent = q.acquire().await;
        let child = parent.lend().unwrap();
        drop(parent);
        // The child still runs in the slot.
        assert_eq!(q.available(), 0);
        drop(child);
        assert_eq!(q.available(), 1);
    }

    /// A task at `depth` that launches one foreground child (down to `max_depth`) and waits on it.
    fn run_task(
        q: Quota,
        slot: Permit,
        depth: u32,
        max_depth: u32,
        log: Arc<Mutex<Vec<u32>>>,
    ) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            if depth < max_depth {
                let child_slot = q.acquire_for_foreground_child(Some(&slot)).await;
                let child = tokio::spawn(run_task(
                    q.clone(),
                    child_slot,
                    depth + 1,
                    max_depth,
                    Arc::clone(&log),
                ));
                child.await.unwrap();
            }
            log.lock().unwrap().push(depth);
            drop(slot);
        })
    }

    async fn nested_at_full_quota(capacity: usize) {
        let q = Quota::new(capacity);
        let log = Arc::new(Mutex::new(Vec::new()));
        // Fill the quota with top-level tasks, each nesting three levels of foreground children,
        // and queue one more top-level task behind them.
        let mut handles = Vec::new();
        for _ in 0..capacity + 1 {
            let q = q.clone();
            let log = Arc::clone(&log);
            handles.push(tokio::spawn(async move {
                let slot = q.acquire().await;
                run_task(q.clone(), slot, 1, 3, log).await;
            }));
        }
        for h in handles {
            guarded(h).await.unwrap();
        }
        assert_eq!(log.lock().unwrap().len(), (capacity + 1) * 3);
        assert_eq!(q.available(), capacity);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nesting_never_deadlocks_at_capacity_one() {
        nested_at_full_quota(1).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nesting_never_deadlocks_at_capacity_two() {
        nested_at_full_quota(2).await;
    }

    #[tokio::test]
    async fn parallel_foreground_children_borrow_once_and_queue_the_rest() {
        let q = Quota::new(2);
        let parent = q.acquire().await;
        let first = q.acquire_for_foreground_child(Some(&parent)).await;
        assert!(first.is_borrowed());
        // The second child takes the last free slot; a third would wait for one of them.
        let second = q.acquire_for_foreground_child(Some(&parent)).await;
        assert!(!second.is_borrowed());
        assert!(q.try_acquire().is_none());
        let q2 = q.clone();
        let p2 = parent.lend();
        assert!(p2.is_none());
        let third = tokio::spawn(async move { q2.acquire().await });
        settle().await;
        assert!(!third.is_finished());
        drop(first);
        settle().await;
        // Returning a borrowed slot gives it back to the parent, not to the queue.
        assert!(!third.is_finished());
        drop(second);
        let third = guarded(third).await.unwrap();
        drop(third);
        drop(parent);
        assert_eq!(q.available(), 2);
    }

    #[tokio::test]
    async fn a_root_parent_without_a_slot_acquires() {
        let q = Quota::new(1);
        let child = q.acquire_for_foreground_child(None).await;
        assert!(!child.is_borrowed());
        assert_eq!(q.available(), 0);
    }

    #[tokio::test]
    async fn a_second_foreground_child_takes_the_loan_back_at_full_quota() {
        let q = Quota::new(1);
        let parent = Arc::new(q.acquire().await);
        let first = q.acquire_for_foreground_child(Some(&parent)).await;
        assert!(first.is_borrowed());
        let (q2, p2) = (q.clone(), Arc::clone(&parent));
        let second = tokio::spawn(async move { q2.acquire_for_foreground_child(Some(&p2)).await });
        settle().await;
        assert!(
            !second.is_finished(),
            "the only slot is lent to the first child"
        );
        drop(first);
        let second = guarded(second).await.unwrap();
        assert!(
            second.is_borrowed(),
            "the loan came back to the waiting sibling"
        );
        assert_eq!(q.available(), 0);
        drop(second);
        drop(parent);
        assert_eq!(q.available(), 1);
    }
}
