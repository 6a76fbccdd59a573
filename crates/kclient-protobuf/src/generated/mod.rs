//! The generated codecs, one module per Kubernetes version (`cargo xtask codegen`; the version
//! is the one k8s-openapi is built for, see `build.rs`).

#[cfg(kclient_k8s = "1.35")]
mod v1_35;
#[cfg(kclient_k8s = "1.36")]
mod v1_36;
#[cfg(kclient_k8s = "1.37")]
mod v1_37;

#[cfg(kclient_k8s = "1.35")]
pub(crate) use v1_35::CODECS;
#[cfg(all(kclient_k8s = "1.35", feature = "encode"))]
pub(crate) use v1_35::ENTRIES;
#[cfg(kclient_k8s = "1.36")]
pub(crate) use v1_36::CODECS;
#[cfg(all(kclient_k8s = "1.36", feature = "encode"))]
pub(crate) use v1_36::ENTRIES;
#[cfg(kclient_k8s = "1.37")]
pub(crate) use v1_37::CODECS;
#[cfg(all(kclient_k8s = "1.37", feature = "encode"))]
pub(crate) use v1_37::ENTRIES;
