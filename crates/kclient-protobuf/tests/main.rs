//! The integration tests of kclient-protobuf, one module per file, linked into one test binary
//! (a binary per file made ~130 test executables of ~100 MB each in a workspace build).
//! `tests/fuzz.rs` stay targets of their own (see Cargo.toml).

mod fit;
mod golden;
mod hostile;
mod roundtrip;
