//! The runtime of the unit tests that drive timers.

/// A current-thread runtime with its clock paused: sleeps end as soon as nothing else can
/// run, so tests of refresh periods and rates take no real time.
pub(crate) fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}
