//! The integration tests of kclient-controller, one module per file, linked into one test
//! binary.
