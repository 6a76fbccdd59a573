//! kclient-webhook's integration tests, one module per file, linked into one binary.

mod support;

mod admission;
mod certificates;
mod conversion;
