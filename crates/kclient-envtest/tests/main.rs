//! kclient-envtest's integration tests, one binary (as in the other crates):
//!
//! * `bad_input`: what a wrong setup gets — missing binaries, a wrong version, a port in use,
//!   a server that never becomes ready or exits — each a typed error within a bounded wait,
//!   with nothing left running. Fake binaries (shell scripts): they run everywhere.
//! * `real`: etcd and kube-apiserver for real — what an environment installs, its kubeconfig,
//!   detaching, and that a panicking, aborted or finished test process leaves no server and
//!   no port behind. They need the binaries: `KCLIENT_ENVTEST_BINARIES` names their directory
//!   (`cargo xtask e2e test` sets it to kclient's build); without it they say so and pass.

mod bad_input;
mod real;
mod support;
