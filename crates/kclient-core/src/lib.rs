//! kclient-core: apimachinery for kclient (in progress).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
