//! The integration tests of kclient-streaming, one module per file, linked into one test
//! binary. They run against scripted servers of their own (`support`), which can break the
//! protocols on purpose; kclient-fake's suite runs these clients against the fake server.

mod support;

mod remotecommand;
