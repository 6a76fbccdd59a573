//! kclient-fake: an in-memory Kubernetes API server over real HTTP on loopback.
//!
//! It is what demos run on, what every kclient client's integration tests run on, and what
//! you test your controllers with: client-go's fake clientset and object tracker, done over
//! the wire, so that no code path of the client is faked. It behaves like kube-apiserver
//! wherever a client can observe it: one resourceVersion across the store, `409 Conflict` on
//! stale updates, `410 Expired` for watches and continue tokens beyond the history, label and
//! field selectors applied to lists *and* watches (an object leaving a selector arrives as
//! `DELETED`), bookmarks, streaming lists (`sendInitialEvents`), pagination over consistent
//! snapshots, strategic merge patch and server-side apply with field managers, finalizers,
//! owner-reference garbage collection, namespace deletion, CustomResourceDefinitions,
//! discovery (legacy and aggregated), HTTPS with token or client-certificate authentication,
//! and fault injection.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use kclient_fake::FakeApiServer;
//! use serde_json::json;
//!
//! let server = FakeApiServer::builder().start().await?;
//! // Seed objects without HTTP (namespaces are created as needed)...
//! server.seed(json!({
//!     "apiVersion": "v1", "kind": "ConfigMap",
//!     "metadata": {"name": "settings", "namespace": "demo"},
//!     "data": {"mode": "fast"}
//! }))?;
//! // ...point a client at it (kclient-rest directly, anything else through a kubeconfig)...
//! let client = kclient_rest::RestClient::new(server.config()?)?;
//! server.write_kubeconfig("/tmp/kubeconfig")?;
//! // ...and read back what the code under test did.
//! let cm = server.get_value(&kclient_core::GroupResource::new("", "configmaps"), "demo", "settings");
//! assert!(cm.is_some());
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! The guide `docs/testing-with-kclient-fake.md` shows how to test a controller with it.
//!
//! # Fidelity and limits
//!
//! kube-apiserver's observable behaviour is the specification: status codes, `Status` bodies
//! and messages, resourceVersion semantics, watch events. Where the fake server knowingly
//! differs:
//!
//! - **Server-side apply** has no OpenAPI schema: lists merge by key only for the built-in
//!   list keys of strategic merge patch (containers/initContainers/ephemeralContainers and
//!   env, volumes, imagePullSecrets by `name`, container ports by `containerPort`, service
//!   ports by `port`, volumeMounts by `mountPath`, ownerReferences by `uid`, conditions by
//!   `type`, finalizers as a set); every other list, and every list of a custom resource, is
//!   atomic. Conflicts, `force`, ownership transfer, shared ownership of equal values and
//!   removal of fields a manager stops applying follow the real rules.
//! - **Strategic merge patch** uses the same key table; `$setElementOrder` is accepted and
//!   ignored.
//! - **Garbage collection and namespace deletion** run synchronously inside the write that
//!   triggers them; every dependent blocks a foreground deletion (`blockOwnerDeletion` is not
//!   consulted separately).
//! - **Pods** are deleted at once (no kubelet finishes a graceful deletion); pod spec
//!   immutability and most per-type validation and defaulting are not implemented (a few
//!   visible defaults are: `replicas: 1`, secret `type: Opaque`, service `type: ClusterIP`,
//!   pods start `Pending`, namespaces get the `kubernetes` finalizer).
//! - **Custom resources** are not validated against their schema, pruned, defaulted or
//!   converted between versions.
//! - **Lists** always include `kind`/`apiVersion` in items (kube-apiserver omits them for
//!   built-in types); **tables** have the default `Name`/`Created At` columns; there is no
//!   protobuf or CBOR (a protobuf request body gets `415`, so kubectl's typed generators
//!   such as `kubectl create configmap` fail; `kubectl create -f`/`apply` work), and
//!   `/openapi/v3` has paths but no schemas.
//! - **Watches** send bookmarks every bookmark interval (60 s by default) and two seconds
//!   before their timeout, as the watch cache does, but exactly once (the watch cache's
//!   one-second timer may send that last one twice); they last 30 minutes unless
//!   `timeoutSeconds` says otherwise. The history starts with the state the server started
//!   with (as the watch cache starts from a list), so a watch from resourceVersion 1 gets
//!   `410 Expired`.
//! - There is no RBAC, no admission other than namespace lifecycle, and authentication is a
//!   bearer token or a client certificate signed by the server's CA.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// `ApiError` (kclient-core) is a whole `Status`; errors are the cold path of a test server,
// and boxing them everywhere would only add noise.
#![allow(clippy::result_large_err)]

pub mod catalogue;
pub mod cli;
mod connect;
mod crd;
mod defaults;
mod discovery;
mod errors;
mod faults;
mod gc;
mod handler;
mod kubeconfig;
pub mod manifests;
mod meta;
mod openapi;
mod patch;
mod pods;
mod query;
mod registry;
mod response;
mod router;
mod scale;
mod selectors;
mod server;
mod store;
mod table;
mod tls;
mod watch;

pub use catalogue::{ExtraSubresource, GenerationBumps, ResourceInfo, ScaleSpec};
pub use faults::{Failure, Faults};
pub use kubeconfig::Credentials;
pub use manifests::{load_manifests, parse_manifests};
pub use server::{FakeApiServer, FakeApiServerBuilder, Settings};
pub use tls::CertifiedKey;

/// Why the server could not start or a handle operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Binding the listener or writing a file failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// Generating certificates or the TLS configuration failed.
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// The API refused an object (seeding).
    #[error("{0}")]
    Api(#[from] kclient_core::ApiError),
    /// A manifest could not be read or parsed.
    #[error("manifest {path}: {message}")]
    Manifest {
        /// The file.
        path: String,
        /// What was wrong.
        message: String,
    },
}
