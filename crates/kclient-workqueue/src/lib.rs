//! client-go's workqueue for Rust (work in progress: see issue 3).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
