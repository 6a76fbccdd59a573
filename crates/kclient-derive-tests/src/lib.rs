//! The tests of what `#[derive(CustomResource)]` (kclient-derive) generates, in a package of
//! their own (not published; the library is empty, the tests are in `tests/`).
//!
//! They are not kclient-derive's own tests because it is a proc macro: cargo builds a proc
//! macro's tests, and every dev-dependency they use, for the host, a second copy of the
//! clients, kclient-fake and the protobuf codecs beside the one every other test of the
//! workspace links. Here they share that copy. The derive's compile errors are
//! kclient-derive-ui's.
//!
//! * `tests/golden.rs`: each test type's CRD against its golden copy in `tests/golden/`
//!   (`KCLIENT_BLESS=1 cargo test -p kclient-derive-tests --test integration golden`
//!   rewrites them).
//! * `tests/fake.rs`: every golden CRD against kclient-fake.
//! * `tests/codegen.rs`: the types `cargo xtask codegen crd` makes from the golden CRDs
//!   (`tests/generated/`) read and write what the derived types do.
//! * `tests/basics.rs`: a derived resource's CRD, and an object of it written and read back.
//! * This crate's doc test: kclient-derive's crate example (its `src/crate_example.md`),
//!   below.
//!
//! # kclient-derive's crate example
//!
#![doc = include_str!("../../kclient-derive/src/crate_example.md")]
