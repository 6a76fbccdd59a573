//! The integration tests of kclient-typed, one module per file, linked into one test binary
//! (a binary per file made ~130 test executables of ~100 MB each in a workspace build).

mod common;

mod clientset;
mod pager;
mod pod_expansion;
#[cfg(feature = "streaming")]
mod pod_streams;
mod subresources;
mod verbs;
