//! The integration tests of kclient-cache, one module per file, linked into one test binary
//! (a binary per file made ~130 test executables of ~100 MB each in a workspace build).
//! `tests/memory.rs`, `tests/properties.rs` stay targets of their own (see Cargo.toml).

mod common;

mod blocking_handlers;
mod concurrency;
mod controller;
mod delta_fifo;
mod factory;
mod fake_source;
mod fifo;
mod indexer;
mod process_and_listers;
mod real_fifo;
mod reflector;
mod representation;
mod shared_informer;
mod store_resource_version;
