//! One root session served to one MCP connection (stdio) or MCP session (HTTP).

use std::sync::Arc;

use anyhow::Result;
use cadre_host::Host;

use super::config::Setup;

/// A root session and what keeps its events drained. Cheap to clone.
#[derive(Clone)]
pub struct Served {
    inner: Arc<Inner>,
}

struct Inner {
    host: Host,
    drain: tokio::task::JoinHandle<()>,
    /// Set once the session was closed on purpose (not left to `Drop`).
    closed: std::sync::atomic::AtomicBool,
}

impl Served {
    /// Build a root session as every front end does (the host), with its notes on stderr.
    pub async fn start(setup: &Setup) -> Result<Served> {
        let started = Host::start(setup.ctx.clone(), setup.options.clone()).await?;
        for warning in &started.warnings {
            errln!("cadre: {warning}");
        }
        let mut events = started.events;
        // Nothing renders the root's events (there are no model turns) and progress is read
        // from the task manager per call; the channel is unbounded, so it is drained.
        let drain = tokio::spawn(async move { while events.recv().await.is_some() {} });
        Ok(Served {
            inner: Arc::new(Inner {
                host: started.host,
                drain,
                closed: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    pub fn host(&self) -> &Host {
        &self.inner.host
    }

    /// End the session: running tasks are stopped (L6, recorded `stopped`) and the session
    /// file is written out. Later calls do nothing.
    pub async fn close(&self) -> Result<(), cadre_host::HostError> {
        // Closed once: the HTTP server may reach one session by two ways at exit.
        if self
            .inner
            .closed
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return Ok(());
        }
        let host = &self.inner.host;
        host.interrupt();
        let closed = host.shutdown().await;
        self.inner.drain.abort();
        closed.map(|_| ())
    }
}

/// A session that does not keep itself open (the HTTP server's list of live sessions).
pub struct WeakServed(std::sync::Weak<Inner>);

impl WeakServed {
    pub fn upgrade(&self) -> Option<Served> {
        self.0.upgrade().map(|inner| Served { inner })
    }
}

/// The live MCP sessions of an HTTP server, closed in order when it stops.
pub type Sessions = Arc<std::sync::Mutex<Vec<WeakServed>>>;

impl Served {
    pub fn downgrade(&self) -> WeakServed {
        WeakServed(Arc::downgrade(&self.inner))
    }
}

impl Drop for Inner {
    /// An HTTP session that ends (deleted, expired, server stopping) drops its handler: its
    /// tasks are stopped and its file written out as an explicit close would.
    fn drop(&mut self) {
        self.drain.abort();
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let host = self.host.clone();
        host.interrupt();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = host.shutdown().await {
                    errln!("cadre: error: closing an MCP session: {e}");
                }
            });
        }
    }
}
