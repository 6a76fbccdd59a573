//! client-go's util/retry and wait.Backoff semantics, on tokio's paused clock: how many
//! tries, how long between them, what is returned when the steps run out, and that a
//! non-retriable error ends at once.

use std::time::Duration;

use kclient_core::{ApiError, ApiStatus, GroupResource};
use kclient_tools::retry::{
    exponential_backoff, jitter, on_error, retry_on_conflict, RetryBackoff, WaitError,
    DEFAULT_BACKOFF, DEFAULT_RETRY,
};
use tokio::time::Instant;

fn conflict() -> ApiError {
    ApiError::conflict(
        &GroupResource::new("apps", "deployments"),
        "web",
        "the object has been modified",
    )
}

fn not_found() -> ApiError {
    ApiError::not_found(&GroupResource::new("apps", "deployments"), "web")
}

#[test]
fn the_defaults_are_client_gos() {
    assert_eq!(
        (
            DEFAULT_RETRY.steps,
            DEFAULT_RETRY.duration,
            DEFAULT_RETRY.factor,
            DEFAULT_RETRY.jitter
        ),
        (5, Duration::from_millis(10), 1.0, 0.1)
    );
    assert_eq!(
        (
            DEFAULT_BACKOFF.steps,
            DEFAULT_BACKOFF.duration,
            DEFAULT_BACKOFF.factor,
            DEFAULT_BACKOFF.jitter
        ),
        (4, Duration::from_millis(10), 5.0, 0.1)
    );
}

/// client-go's Backoff.Step: the current duration (jittered), then growth by the factor; at
/// the cap, the duration stays and the steps end; with no steps left, the same duration.
#[test]
fn step_follows_wait_backoff() {
    let mut b = RetryBackoff {
        duration: Duration::from_secs(1),
        factor: 2.0,
        jitter: 0.0,
        steps: 10,
        cap: Duration::from_secs(5),
    };
    let waits: Vec<u64> = (0..6).map(|_| b.step().as_secs()).collect();
    assert_eq!(waits, [1, 2, 4, 5, 5, 5]);
    assert_eq!(b.steps, 0, "reaching the cap ends the steps");

    let mut constant = RetryBackoff { factor: 0.0, ..b };
    constant.steps = 2;
    assert_eq!(constant.step(), Duration::from_secs(5));

    for _ in 0..1000 {
        let d = jitter(Duration::from_millis(100), 0.1);
        assert!(
            d >= Duration::from_millis(100) && d <= Duration::from_millis(110),
            "{d:?}"
        );
    }
    assert_eq!(jitter(Duration::from_secs(1), 0.0), Duration::from_secs(1));
    // Huge factors saturate instead of panicking.
    let mut huge = RetryBackoff {
        duration: Duration::MAX,
        factor: 10.0,
        jitter: 1.0,
        steps: 3,
        cap: Duration::ZERO,
    };
    assert_eq!(huge.step(), Duration::MAX);
}

/// retry.RetryOnConflict: conflicts are retried with DefaultRetry's waits (10–11 ms each);
/// after five conflicting tries the last conflict is returned.
#[tokio::test(start_paused = true)]
async fn retry_on_conflict_tries_five_times_then_returns_the_conflict() {
    let started = Instant::now();
    let mut tries = Vec::new();
    let result: Result<(), ApiError> = retry_on_conflict(DEFAULT_RETRY, || {
        tries.push(started.elapsed());
        async { Err(conflict()) }
    })
    .await;
    assert!(result.unwrap_err().is_conflict());
    assert_eq!(tries.len(), 5);
    for pair in tries.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= Duration::from_millis(10) && gap <= Duration::from_millis(11),
            "{gap:?}"
        );
    }
}

/// A success after conflicts returns the value; a non-retriable error returns at once.
#[tokio::test(start_paused = true)]
async fn success_and_non_retriable_errors_end_the_retries() {
    let mut tries = 0;
    let value = retry_on_conflict(DEFAULT_RETRY, || {
        tries += 1;
        let outcome = if tries < 3 {
            Err(conflict())
        } else {
            Ok("updated")
        };
        async move { outcome }
    })
    .await;
    assert_eq!(value.unwrap(), "updated");
    assert_eq!(tries, 3);

    let mut tries = 0;
    let started = Instant::now();
    let result: Result<(), ApiError> = retry_on_conflict(DEFAULT_RETRY, || {
        tries += 1;
        async { Err(not_found()) }
    })
    .await;
    assert!(result.unwrap_err().is_not_found());
    assert_eq!(tries, 1);
    assert_eq!(started.elapsed(), Duration::ZERO, "no wait");
}

/// retry.OnError with DefaultBackoff: four tries, waits of about 10, 50 and 250 ms.
#[tokio::test(start_paused = true)]
async fn on_error_with_default_backoff_grows_the_waits() {
    let started = Instant::now();
    let mut tries = Vec::new();
    let result: Result<(), ApiError> = on_error(
        DEFAULT_BACKOFF,
        |e: &ApiError| e.is_server_timeout() || e.is_too_many_requests(),
        || {
            tries.push(started.elapsed());
            async { Err(ApiError::too_many_requests("slow down", 1)) }
        },
    )
    .await;
    assert!(result.unwrap_err().is_too_many_requests());
    assert_eq!(tries.len(), 4);
    let gaps: Vec<Duration> = tries.windows(2).map(|p| p[1] - p[0]).collect();
    for (gap, base) in gaps.iter().zip([10u64, 50, 250]) {
        let base = Duration::from_millis(base);
        assert!(
            *gap >= base && *gap <= base + base / 10,
            "{gap:?} for {base:?}"
        );
    }
}

/// wait.ExponentialBackoff: the condition holds → done; never → Timeout after `steps`
/// checks; an error → that error at once. No steps → Timeout without a check.
#[tokio::test(start_paused = true)]
async fn exponential_backoff_semantics() {
    let mut checks = 0;
    let r: Result<(), WaitError<()>> = exponential_backoff(DEFAULT_RETRY, || {
        checks += 1;
        let done = checks == 2;
        async move { Ok(done) }
    })
    .await;
    assert_eq!((r, checks), (Ok(()), 2));

    let mut checks = 0;
    let r: Result<(), WaitError<()>> = exponential_backoff(DEFAULT_RETRY, || {
        checks += 1;
        async { Ok(false) }
    })
    .await;
    assert_eq!((r, checks), (Err(WaitError::Timeout), 5));

    let r: Result<(), WaitError<&str>> =
        exponential_backoff(DEFAULT_RETRY, || async { Err("broken") }).await;
    assert_eq!(r, Err(WaitError::Failed("broken")));

    let mut checks = 0;
    let none = RetryBackoff {
        steps: 0,
        ..DEFAULT_RETRY
    };
    let r: Result<(), WaitError<()>> = exponential_backoff(none, || {
        checks += 1;
        async { Ok(true) }
    })
    .await;
    assert_eq!((r, checks), (Err(WaitError::Timeout), 0));
}
