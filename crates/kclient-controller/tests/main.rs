//! The integration tests of kclient-controller, one module per file, linked into one test
//! binary (see docs/testing.md for why).

mod support;

mod chaos;
mod fake_server;
mod filters;
mod helpers;
mod manager;
mod queueing;
mod reconcile;
mod sharded;
mod stale;
mod triggers;
