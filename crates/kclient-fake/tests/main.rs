//! The integration tests of kclient-fake, one module per file, linked into one test binary
//! (a binary per file made ~130 test executables of ~100 MB each in a workspace build).
#![recursion_limit = "256"]

mod common;

mod bad_input;
mod builtins;
mod conversion_webhooks;
mod crd;
mod crud;
mod delete_gc;
mod discovery;
mod immutable;
mod kubectl;
mod list_watch;
mod metadata;
mod patch;
mod pods;
mod protobuf;
mod reactors;
mod rest_client;
mod sharding;
mod streaming;
mod subresources;
mod table_dry_run;
mod tls_faults;
mod webhooks;
