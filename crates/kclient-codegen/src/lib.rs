//! kclient-codegen (work in progress).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
