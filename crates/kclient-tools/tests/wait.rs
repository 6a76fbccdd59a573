//! client-go's wait.PollUntilContextCancel / PollUntilContextTimeout on tokio's paused
//! clock: when the condition runs, and how polling ends.

use std::cell::RefCell;
use std::time::Duration;

use kclient_tools::wait::{poll_until_cancelled, poll_until_timeout, PollError};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const SECOND: Duration = Duration::from_secs(1);

/// Immediate: a check at once, then one per interval, until the condition holds.
#[tokio::test(start_paused = true)]
async fn polls_on_a_fixed_schedule_until_the_condition_holds() {
    for immediate in [true, false] {
        let started = Instant::now();
        let checks = RefCell::new(Vec::new());
        let outcome: Result<(), PollError<()>> =
            poll_until_cancelled(&CancellationToken::new(), SECOND, immediate, || {
                checks.borrow_mut().push(started.elapsed().as_secs());
                let done = checks.borrow().len() == 3;
                async move { Ok(done) }
            })
            .await;
        assert_eq!(outcome, Ok(()));
        let expected: Vec<u64> = if immediate {
            vec![0, 1, 2]
        } else {
            vec![1, 2, 3]
        };
        assert_eq!(*checks.borrow(), expected, "immediate={immediate}");
    }
}

/// The time a condition takes counts in the interval (not sliding); after a run longer
/// than the interval, one missed tick fires at once and the rest are dropped (a Go ticker
/// buffers one tick): 0 s, 1 s (runs 2.5 s), 3.5 s (the buffered tick), then 4 s.
#[tokio::test(start_paused = true)]
async fn a_slow_condition_does_not_shift_the_schedule() {
    let started = Instant::now();
    let checks = RefCell::new(Vec::new());
    let _: Result<(), PollError<()>> =
        poll_until_cancelled(&CancellationToken::new(), SECOND, true, || {
            checks.borrow_mut().push(started.elapsed().as_millis());
            let n = checks.borrow().len();
            async move {
                tokio::time::sleep(Duration::from_millis(if n == 2 { 2500 } else { 300 })).await;
                Ok(n == 4)
            }
        })
        .await;
    assert_eq!(*checks.borrow(), [0, 1000, 3500, 4000]);
}

/// Timeout: at most timeout / interval checks, then Timeout; cancellation: Cancelled, and
/// the condition never runs after either; an error ends polling with it.
#[tokio::test(start_paused = true)]
async fn timeout_cancellation_and_errors_end_polling() {
    let checks = RefCell::new(0);
    let outcome: Result<(), PollError<()>> = poll_until_timeout(
        &CancellationToken::new(),
        SECOND,
        Duration::from_secs(5),
        true,
        || {
            *checks.borrow_mut() += 1;
            async { Ok(false) }
        },
    )
    .await;
    assert_eq!(outcome, Err(PollError::Timeout));
    assert_eq!(*checks.borrow(), 5, "at 0, 1, 2, 3 and 4 s; not at 5 s");

    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let checks = RefCell::new(0);
    let outcome: Result<(), PollError<()>> = poll_until_cancelled(&cancel, SECOND, false, || {
        *checks.borrow_mut() += 1;
        if *checks.borrow() == 2 {
            canceller.cancel();
        }
        async { Ok(false) }
    })
    .await;
    assert_eq!(outcome, Err(PollError::Cancelled));
    assert_eq!(*checks.borrow(), 2);

    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let outcome: Result<(), PollError<()>> =
        poll_until_cancelled(&cancelled, SECOND, true, || async { panic!("never runs") }).await;
    assert_eq!(outcome, Err(PollError::Cancelled));

    let outcome: Result<(), PollError<&str>> =
        poll_until_cancelled(&CancellationToken::new(), SECOND, true, || async {
            Err("broken")
        })
        .await;
    assert_eq!(outcome, Err(PollError::Failed("broken")));
}
