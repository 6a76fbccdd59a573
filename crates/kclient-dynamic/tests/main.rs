//! The integration tests of kclient-dynamic, one module per file, linked into one test binary
//! (a binary per file made ~130 test executables of ~100 MB each in a workspace build).

mod common;

mod dynamic;
mod metadata;
mod pager;
