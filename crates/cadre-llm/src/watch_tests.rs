//! The request's one cancellation future and one timer, driven on tokio's paused clock: the
//! clock only moves when every task waits, so these are exact, not timing-dependent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

const FIRST: Duration = Duration::from_secs(30);
const IDLE: Duration = Duration::from_secs(10);
const TOTAL: Duration = Duration::from_secs(1000);

fn timeouts() -> RequestTimeouts {
    RequestTimeouts {
        first_content: FIRST,
        idle: IDLE,
        total: TOTAL,
    }
}

/// A network step that completes after `d`.
async fn step(d: Duration) -> u32 {
    tokio::time::sleep(d).await;
    7
}

fn delta(i: usize) -> StreamEvent {
    StreamEvent::Delta(AssistantMessageEvent::TextStart { content_index: i })
}

fn expired<T>(g: Guarded<T>) -> Option<Deadline> {
    match g {
        Guarded::Expired(d) => Some(d),
        _ => None,
    }
}

#[tokio::test(start_paused = true)]
async fn steady_content_never_times_out_however_long_the_stream() {
    let cancel = CancellationToken::new();
    let mut watch = Watch::new(&cancel, timeouts());
    // Ninety steps of just under the idle timeout, each with content: almost the whole
    // request's time, nine times longer than the idle deadline.
    for _ in 0..90 {
        let r = watch.network(step(IDLE - Duration::from_millis(1))).await;
        assert!(matches!(r, Guarded::Ready(7)));
        watch.content();
    }
}

#[tokio::test(start_paused = true)]
async fn steps_without_content_do_not_move_the_idle_deadline() {
    let cancel = CancellationToken::new();
    let mut watch = Watch::new(&cancel, timeouts());
    assert!(matches!(
        watch.network(step(Duration::from_secs(1))).await,
        Guarded::Ready(7)
    ));
    watch.content();
    let start = Instant::now();
    // Keep-alives every 3 s: each wait completes, none is content.
    let mut keep_alives = 0;
    let deadline = loop {
        match watch.network(step(Duration::from_secs(3))).await {
            Guarded::Ready(_) => keep_alives += 1,
            other => break expired(other),
        }
    };
    assert_eq!(deadline, Some(Deadline::Idle));
    assert_eq!(keep_alives, 3);
    // Counted from the last content, not from the start of the last wait.
    assert_eq!(Instant::now() - start, IDLE);
}

#[tokio::test(start_paused = true)]
async fn the_first_content_deadline_counts_from_the_send_across_every_step() {
    let cancel = CancellationToken::new();
    let mut watch = Watch::new(&cancel, timeouts());
    let start = Instant::now();
    // Headers after 5 s, then pings: none of it is content.
    assert!(matches!(
        watch.network(step(Duration::from_secs(5))).await,
        Guarded::Ready(7)
    ));
    let deadline = loop {
        match watch.network(step(Duration::from_secs(4))).await {
            Guarded::Ready(_) => {}
            other => break expired(other),
        }
    };
    assert_eq!(deadline, Some(Deadline::FirstContent));
    assert_eq!(Instant::now() - start, FIRST);
    // The next attempt gets a fresh first-content deadline; its content switches to idle.
    watch.start_attempt();
    let start = Instant::now();
    assert_eq!(
        expired(watch.network(std::future::pending::<()>()).await),
        Some(Deadline::FirstContent)
    );
    assert_eq!(Instant::now() - start, FIRST);
    watch.start_attempt();
    assert!(matches!(
        watch.network(step(FIRST / 2)).await,
        Guarded::Ready(7)
    ));
    watch.content();
    let start = Instant::now();
    assert_eq!(
        expired(watch.network(std::future::pending::<()>()).await),
        Some(Deadline::Idle)
    );
    assert_eq!(Instant::now() - start, IDLE);
}

#[tokio::test(start_paused = true)]
async fn the_whole_request_deadline_ends_even_a_stream_full_of_content() {
    let cancel = CancellationToken::new();
    let mut watch = Watch::new(&cancel, timeouts());
    let start = Instant::now();
    let deadline = loop {
        match watch.network(step(Duration::from_secs(1))).await {
            Guarded::Ready(_) => watch.content(),
            other => break expired(other),
        }
    };
    assert_eq!(deadline, Some(Deadline::Total));
    assert_eq!(Instant::now() - start, TOTAL);
    assert_eq!(watch.remaining(), Duration::ZERO);
    // A new attempt does not move it either.
    watch.start_attempt();
    assert_eq!(
        expired(watch.network(step(Duration::from_secs(1))).await),
        Some(Deadline::Total)
    );
}

#[tokio::test(start_paused = true)]
async fn the_whole_request_deadline_is_the_earlier_one_near_its_end() {
    let cancel = CancellationToken::new();
    let mut watch = Watch::new(&cancel, timeouts());
    assert!(watch.pause(TOTAL - Duration::from_secs(5)).await);
    assert_eq!(watch.remaining(), Duration::from_secs(5));
    watch.start_attempt();
    let start = Instant::now();
    assert_eq!(
        expired(watch.network(std::future::pending::<()>()).await),
        Some(Deadline::Total)
    );
    assert_eq!(Instant::now() - start, Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn time_spent_handing_content_over_is_not_provider_silence() {
    let cancel = CancellationToken::new();
    let mut watch = Watch::new(&cancel, timeouts());
    let (tx, mut rx) = mpsc::channel(1);
    watch.send(&tx, delta(0)).await.unwrap();
    // The consumer takes the next event only after three idle timeouts.
    let consumer = tokio::spawn(async move {
        tokio::time::sleep(IDLE * 3).await;
        let mut n = 0;
        while rx.recv().await.is_some() {
            n += 1;
        }
        n
    });
    watch.send(&tx, delta(1)).await.unwrap();
    watch.content();
    assert!(matches!(
        watch.network(step(IDLE - Duration::from_millis(1))).await,
        Guarded::Ready(7)
    ));
    drop(tx);
    assert_eq!(consumer.await.unwrap(), 2);
}

#[tokio::test(start_paused = true)]
async fn abort_wins_over_a_ready_step_and_ends_a_pending_one() {
    let cancel = CancellationToken::new();
    let mut watch = Watch::new(&cancel, timeouts());
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(IDLE / 2).await;
        trigger.cancel();
    });
    assert!(matches!(
        watch.network(std::future::pending::<()>()).await,
        Guarded::Cancelled
    ));
    assert!(matches!(
        watch.network(std::future::ready(1)).await,
        Guarded::Cancelled
    ));
}

#[tokio::test(start_paused = true)]
async fn sending_stops_on_abort_or_a_closed_channel() {
    let cancel = CancellationToken::new();
    let mut watch = Watch::new(&cancel, timeouts());
    let (tx, rx) = mpsc::channel(1);
    watch.send(&tx, delta(0)).await.unwrap();
    // Full channel, nobody reading: the abort ends the wait for room.
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(IDLE).await;
        trigger.cancel();
    });
    assert!(matches!(
        watch.send(&tx, delta(1)).await,
        Err(LlmError::Aborted)
    ));
    drop(rx);
    let fresh = CancellationToken::new();
    let mut watch = Watch::new(&fresh, timeouts());
    assert!(matches!(
        watch.send(&tx, delta(2)).await,
        Err(LlmError::Aborted)
    ));
    // Room in the channel does not let an event past an abort.
    let (tx, mut rx) = mpsc::channel(4);
    fresh.cancel();
    assert!(matches!(
        watch.send(&tx, delta(3)).await,
        Err(LlmError::Aborted)
    ));
    assert!(rx.try_recv().is_err());
}

#[tokio::test(start_paused = true)]
async fn backoff_waits_its_delay_unless_aborted() {
    let cancel = CancellationToken::new();
    let mut watch = Watch::new(&cancel, timeouts());
    let start = Instant::now();
    assert!(watch.pause(IDLE * 3).await);
    assert_eq!(Instant::now() - start, IDLE * 3);
    // The timer is back to the attempt's deadline for the next network step.
    watch.start_attempt();
    assert!(matches!(
        watch.network(step(FIRST - Duration::from_millis(1))).await,
        Guarded::Ready(7)
    ));
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(IDLE).await;
        trigger.cancel();
    });
    assert!(!watch.pause(IDLE * 100).await);
}

#[test]
fn an_unrepresentable_deadline_is_far_away_instead_of_a_panic() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let now = Instant::now();
        assert!(deadline_after(now, Duration::MAX) > now + TOTAL);
        let cancel = CancellationToken::new();
        let forever = RequestTimeouts {
            first_content: Duration::MAX,
            idle: Duration::MAX,
            total: Duration::MAX,
        };
        let mut watch = Watch::new(&cancel, forever);
        watch.content();
        assert!(matches!(
            watch.network(std::future::ready(1)).await,
            Guarded::Ready(1)
        ));
    });
}
