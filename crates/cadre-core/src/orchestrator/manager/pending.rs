//! Counting what is still owed to a parent: runs in progress and notices not yet delivered.
//!
//! Each run of a task holds one [`PendingGuard`]; when a background run ends its guard moves
//! into the notice, so the count drops only once the front end has taken the notice. Print and
//! JSON modes wait for zero before exiting (O6: no result is ever lost).

use std::sync::Arc;

use tokio::sync::watch;

#[derive(Debug, Clone)]
pub(crate) struct Pending {
    count: Arc<watch::Sender<usize>>,
}

impl Pending {
    pub(crate) fn new() -> Pending {
        let (tx, _) = watch::channel(0);
        Pending {
            count: Arc::new(tx),
        }
    }

    pub(crate) fn guard(&self) -> PendingGuard {
        self.count.send_modify(|n| *n += 1);
        PendingGuard {
            count: Arc::clone(&self.count),
        }
    }

    pub(crate) fn get(&self) -> usize {
        *self.count.borrow()
    }

    pub(crate) async fn wait_zero(&self) {
        let mut rx = self.count.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = rx.wait_for(|n| *n == 0).await;
    }
}

/// One unit of pending work; released on drop.
#[derive(Debug)]
pub struct PendingGuard {
    count: Arc<watch::Sender<usize>>,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.count.send_modify(|n| *n = n.saturating_sub(1));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_guards_and_wakes_at_zero() {
        let p = Pending::new();
        p.wait_zero().await;
        let a = p.guard();
        let b = p.guard();
        assert_eq!(p.get(), 2);
        drop(a);
        assert_eq!(p.get(), 1);
        let waiter = {
            let p = p.clone();
            tokio::spawn(async move { p.wait_zero().await })
        };
        drop(b);
        tokio::time::timeout(std::time::Duration::from_secs(10), waiter)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(p.get(), 0);
    }
}
