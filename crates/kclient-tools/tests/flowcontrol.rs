//! client-go's `util/flowcontrol/backoff_test.go` cases, on tokio's paused clock.

use std::time::Duration;

use kclient_tools::flowcontrol::Backoff;
use tokio::time::{advance, Instant};

const STEP: Duration = Duration::from_secs(1);

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[tokio::test(start_paused = true)]
async fn slow_backoff_doubles_up_to_the_maximum_and_reset_clears_it() {
    let b: Backoff = Backoff::new(STEP, secs(50));
    for (i, want) in [0, 1, 2, 4, 8, 16, 32, 50, 50, 50].into_iter().enumerate() {
        advance(STEP).await;
        assert_eq!(b.get("slow"), secs(want), "step {i}");
        b.next("slow", Instant::now());
    }
    b.next("slow", Instant::now());
    b.reset("slow");
    assert_eq!(b.get("slow"), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn backoff_expires_after_twice_the_maximum() {
    let b: Backoff = Backoff::new(STEP, secs(5));
    for _ in 0..=5 {
        advance(STEP).await;
        b.next("reset", Instant::now());
    }
    assert!(
        b.is_in_backoff_since("reset", Instant::now()),
        "capped at the maximum"
    );
    let last_update = Instant::now();
    advance(secs(11)).await; // more than twice the maximum
    assert!(!b.is_in_backoff_since("reset", last_update));
}

#[tokio::test(start_paused = true)]
async fn the_high_water_mark_holds_until_the_entry_expires() {
    let b: Backoff = Backoff::new(STEP, secs(5));
    for _ in 0..=5 {
        advance(STEP).await;
        b.next("hwm", Instant::now());
    }
    advance(secs(6)).await; // within twice the maximum: no start over
    b.next("hwm", Instant::now());
    assert_eq!(b.get("hwm"), secs(5));
    advance(secs(11)).await; // beyond: starts over at the initial delay
    b.next("hwm", Instant::now());
    assert_eq!(b.get("hwm"), STEP);
}

#[tokio::test(start_paused = true)]
async fn gc_drops_only_expired_entries() {
    let b: Backoff = Backoff::new(STEP, secs(5));
    for _ in 0..=5 {
        advance(STEP).await;
        b.next("gc", Instant::now());
    }
    b.next("fresh", Instant::now());
    advance(secs(6)).await;
    b.gc();
    assert_eq!(b.len(), 2, "6 s is within twice the maximum");
    b.next("fresh", Instant::now());
    advance(secs(6)).await;
    b.gc();
    assert_eq!(
        b.get("gc"),
        Duration::ZERO,
        "12 s after its last update: collected"
    );
    assert_eq!(b.get("fresh"), secs(2), "updated 6 s ago: kept");
    assert_eq!(b.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_alternate_has_expired_func_governs_gc_and_starting_over() {
    // client-go's TestAlternateBackoffGC and TestAlternateHasExpiredFunc.
    let later: Backoff = Backoff::new(STEP, secs(50))
        .has_expired_func(|event, last, _| event.duration_since(last) >= secs(200));
    later.next("a", Instant::now());
    advance(secs(101)).await;
    later.gc();
    assert_eq!(later.len(), 1, "the default rule would have collected it");
    advance(secs(501)).await;
    later.gc();
    assert!(later.is_empty());

    let sooner: Backoff = Backoff::new(STEP, secs(50))
        .has_expired_func(|event, last, _| event.duration_since(last) >= secs(8));
    sooner.next("b", Instant::now());
    advance(secs(5)).await;
    sooner.next("b", Instant::now());
    assert_eq!(sooner.get("b"), secs(2), "not expired: doubled");
    advance(secs(9)).await;
    sooner.next("b", Instant::now());
    assert_eq!(sooner.get("b"), STEP, "expired after 8 s: started over");
}

#[tokio::test(start_paused = true)]
async fn is_in_backoff_since_update_follows_client_gos_table() {
    let b: Backoff = Backoff::new(STEP, secs(10));
    let start = Instant::now();
    let cases: &[(u64, bool, u64)] = &[
        (0, false, 0),
        (1, false, 1),
        (2, true, 2),
        (3, false, 2),
        (4, true, 4),
        (5, true, 4),
        (6, true, 4),
        (7, false, 4),
        (8, true, 8),
        (9, true, 8),
        (10, true, 8),
        (11, true, 8),
        (12, true, 8),
        (13, true, 8),
        (14, true, 8),
        (15, false, 8),
        (16, true, 10),
        (17, true, 10),
        (18, true, 10),
        (19, true, 10),
        (20, true, 10),
        (21, true, 10),
        (22, true, 10),
        (23, true, 10),
        (24, true, 10),
        (25, false, 10),
        (26, true, 10),
        (27, true, 10),
        (28, true, 10),
        (29, true, 10),
        (30, true, 10),
        (31, true, 10),
        (32, true, 10),
        (33, true, 10),
        (34, true, 10),
        (35, false, 10),
        (56, false, 0),
        (57, false, 1),
    ];
    for &(tick, in_backoff, value) in cases {
        let at = start + secs(tick);
        advance(at - Instant::now()).await;
        let now = Instant::now();
        assert_eq!(
            b.is_in_backoff_since_update("id", now),
            in_backoff,
            "tick {tick}"
        );
        if in_backoff {
            assert_eq!(b.get("id"), secs(value), "tick {tick}");
        } else {
            b.next("id", now);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn jitter_adds_at_most_its_factor_of_the_previous_delay() {
    let initial = Duration::from_millis(100);
    let max = Duration::from_secs(60);
    let b: Backoff = Backoff::with_jitter(initial, max, 0.1);
    assert_eq!(b.get("j"), Duration::ZERO);
    let within = |factor: u32, previous: Duration, got: Duration| {
        let low = previous * factor;
        let high = low + previous.mul_f64(0.1);
        assert!(
            (got >= low && got <= high) || got == max,
            "{got:?} not in [{low:?}, {high:?}]"
        );
    };
    advance(initial).await;
    b.next("j", Instant::now());
    let mut previous = b.get("j");
    within(1, initial, previous);
    for _ in 0..10 {
        advance(initial).await;
        b.next("j", Instant::now());
        let got = b.get("j");
        within(2, previous, got);
        previous = got;
    }
    assert_eq!(previous, max, "reached the maximum despite jitter");
}

#[tokio::test(start_paused = true)]
async fn extreme_settings_saturate_instead_of_panicking() {
    let b: Backoff<u64> = Backoff::with_jitter(Duration::MAX, Duration::MAX, f64::INFINITY);
    b.next(1u64, Instant::now());
    b.next(1u64, Instant::now());
    assert_eq!(b.get(&1), Duration::MAX);
    assert!(b.is_in_backoff_since_update(&1, Instant::now()));
    let nan: Backoff = Backoff::with_jitter(STEP, secs(5), f64::NAN);
    nan.next("n", Instant::now());
    assert_eq!(nan.get("n"), STEP, "a NaN jitter factor adds none");
}
