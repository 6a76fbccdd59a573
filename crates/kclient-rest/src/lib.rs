//! kclient-rest (being written: issue 4).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
