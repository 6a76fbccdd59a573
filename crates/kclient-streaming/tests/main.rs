//! The integration tests of kclient-streaming, one module per file, linked into one test
//! binary. They run against scripted servers of their own (`support`), which can break the
//! protocols on purpose; kclient-fake's suite runs these clients against the fake server,
//! and kclient-e2e runs them and the real kubectl against it side by side.

mod support;

mod hostile;
mod portforward;
mod remotecommand;
