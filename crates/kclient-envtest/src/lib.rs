//! kclient-envtest: a real etcd and kube-apiserver for your tests — controller-runtime's
//! `envtest`, in Rust.
//!
//! [`Environment::builder`] starts etcd and kube-apiserver (and kube-controller-manager if
//! asked) on free ports of 127.0.0.1, with certificates and keys generated for it, writes an
//! admin kubeconfig, gives its [`Config`](kclient_rest::Config) and a `Clientset`, and installs
//! the CRDs (a derived type's `Kind::crd()`) and webhook configurations it is given. Dropping
//! the [`Environment`] stops everything and removes its temporary directory — also when the
//! test panics; a watchdog process does the same when the test process dies without
//! unwinding (killed, aborted, or ending with an environment in a `static`:
//! [`Environment::shared`], one cluster for a whole test binary).
//!
//! The binaries come from `KUBEBUILDER_ASSETS` (the directory `setup-envtest use -p path`
//! prints), from kclient's own build (`cargo xtask e2e build` in a kclient checkout), or a
//! directory given: see [`binaries`]. kube-apiserver runs as kclient's e2e suite runs it (the
//! same code starts that suite's cluster): RBAC, client certificates and a token, a
//! service-account issuer, and etcd's revision moved past 1 so that resourceVersion 1 is as
//! expired as on any cluster that has lived. Starting takes about 5–10 s; share one
//! environment between tests where they allow it. kclient-fake starts in milliseconds but
//! evaluates no CEL and runs no controllers: `docs/testing.md` says which to choose.
//!
//! ```no_run
//! use kclient_envtest::Environment;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let env = Environment::builder()
//!     // .crd(Memcached::crd()) for a `#[derive(CustomResource)]` type
//!     .start()
//!     .await?;
//! let clientset = env.clientset()?;
//! let namespaces = clientset.core_v1().namespaces().list(&Default::default()).await?;
//! assert!(namespaces.items.iter().any(|ns| ns.metadata.name.as_deref() == Some("default")));
//! env.stop()?; // or let it drop
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod apiserver;
pub mod binaries;
mod controller_manager;
mod environment;
mod error;
mod etcd;
#[cfg(feature = "clientset")]
mod install;
mod kubeconfig;
mod pki;
mod ports;
mod process;
mod wait;
mod watchdog;

pub use binaries::{BinaryAssets, Origin};
pub use environment::{
    Detached, Environment, EnvironmentBuilder, DEFAULT_START_TIMEOUT, DEFAULT_STOP_TIMEOUT,
};
pub use error::Error;
#[cfg(feature = "clientset")]
pub use install::{DEFAULT_INSTALL_TIMEOUT, FIELD_MANAGER};
pub use kubeconfig::{CLUSTER_NAME, TOKEN_CONTEXT};
pub use process::ProcessRecord;
