//! kclient: Kubernetes' client-go, done in Rust.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use kclient_core as core;
