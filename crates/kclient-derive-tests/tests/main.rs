//! The tests of what kclient-derive generates, one module per file, linked into one binary.

#[allow(dead_code)] // the generated accessors the agreement test does not call
mod generated;
mod types;

mod basics;
mod codegen;
mod fake;
mod golden;
