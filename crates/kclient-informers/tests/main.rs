//! The integration tests of kclient-informers, one module per file, linked into one test binary
//! (a binary per file made ~130 test executables of ~100 MB each in a workspace build).

mod fake_support;
mod misbehaving_server;

mod accessors;
mod informer_fake;
mod misbehaving;
mod reflector_fake;
