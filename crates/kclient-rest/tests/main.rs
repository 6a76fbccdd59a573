//! The integration tests of kclient-rest, one module per file, linked into one test binary
//! (a binary per file made ~130 test executables of ~100 MB each in a workspace build).
//! `tests/fuzz.rs` stay targets of their own (see Cargo.toml).

mod support;

mod auth;
mod client;
mod hostile_wire;
mod incluster;
mod kubeconfig;
mod list;
mod protobuf;
mod proxy;
mod rate_limit;
mod retry;
mod throttle_log;
mod tls;
mod upgrade;
mod watch;
