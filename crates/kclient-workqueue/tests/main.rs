//! The integration tests of kclient-workqueue, one module per file, linked into one test binary
//! (a binary per file made ~130 test executables of ~100 MB each in a workspace build).

mod concurrency;
mod delaying_queue;
mod global_metrics_provider;
mod interface;
mod metrics;
mod priority_queue;
mod prometheus;
mod queue;
mod rate_limiting_queue;
mod storage;
