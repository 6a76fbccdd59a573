//! The integration tests of kclient-discovery, one module per file, linked into one test binary
//! (a binary per file made ~130 test executables of ~100 MB each in a workspace build).

mod support;

mod cache;
mod discovery;
mod mapper;
