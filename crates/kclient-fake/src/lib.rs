//! kclient-fake (being written: issue 5).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
