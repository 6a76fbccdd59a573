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
//! owner-reference garbage collection, namespace deletion, CustomResourceDefinitions (with
//! schema validation, pruning and defaulting of custom resources, and conversion webhooks),
//! admission webhooks (mutating and validating, called over HTTPS as kube-apiserver calls
//! them),
//! discovery (legacy and aggregated), HTTPS with token or client-certificate authentication,
//! and fault injection. For tests it records every request ([`RecordedAction`], client-go's fake
//! `Actions()`), lets a test fail, answer or delay only the requests it picks ([`Reactor`],
//! client-go's `PrependReactor`), and waits for a condition on its state without polling
//! ([`FakeApiServer::wait_until`]).
//!
//! It presents itself as Kubernetes 1.37 (`/version`: `v1.37.0-kclient-fake`), the release the
//! workspace builds k8s-openapi for and the e2e suite's kube-apiserver runs. Its built-in
//! catalogue ([`catalogue::builtin_resources`]), described in discovery exactly as
//! kube-apiserver v1.37 describes those resources (names, kinds, scope, verbs, short names,
//! categories, subresources, group order and preferred versions; the e2e suite's `discovery`
//! scenario compares the two):
//!
//! - core/v1: namespaces, pods, services, configmaps, secrets, serviceaccounts, nodes, events,
//!   endpoints, persistentvolumeclaims, persistentvolumes, resourcequotas, limitranges,
//!   replicationcontrollers, podtemplates;
//! - apps/v1: deployments, replicasets, statefulsets, daemonsets, controllerrevisions;
//! - batch/v1: jobs, cronjobs; autoscaling/v2: horizontalpodautoscalers;
//! - networking.k8s.io/v1: ingresses, ingressclasses, networkpolicies; policy/v1:
//!   poddisruptionbudgets; rbac.authorization.k8s.io/v1: roles, rolebindings, clusterroles,
//!   clusterrolebindings; storage.k8s.io/v1: storageclasses; discovery.k8s.io/v1:
//!   endpointslices; scheduling.k8s.io/v1: priorityclasses; coordination.k8s.io/v1: leases;
//!   events.k8s.io/v1: events; admissionregistration.k8s.io/v1:
//!   mutatingwebhookconfigurations, validatingwebhookconfigurations; apiextensions.k8s.io/v1:
//!   customresourcedefinitions.
//!
//! Each with kube-apiserver's per-type rules: the `status` and `scale` subresources, whether
//! and when `metadata.generation` moves, whether an update may create, what a delete answers,
//! the selectable fields (and the wording of an unsupported one), a few visible defaults.
//! Subresources: `namespaces/finalize`; the pod's `log`, `binding`, `eviction` (honouring
//! PodDisruptionBudgets), `ephemeralcontainers` and `resize`; `serviceaccounts/token`
//! (TokenRequests); `pods/exec`, `attach` and `portforward`, over the real protocols
//! (WebSocket, SPDY), through handlers the test installs to play the container
//! ([`FakeApiServer::set_exec_handler`], [`FakeApiServer::set_port_forward_handler`]); and
//! the other connect subresources (`pods/proxy`, `services/proxy`, `nodes/proxy`, and exec,
//! attach and port-forward without a handler), which fail as a cluster with nothing running
//! does.
//!
//! The examples use the paths a program depending on the `kclient` facade writes
//! (`kclient::fake::…`); one depending on kclient-fake alone writes `kclient_fake::…`.
//!
//! ```no_run
//! # mod kclient { pub mod core { pub use ::kclient_core::*; } pub mod rest { pub use ::kclient_rest::*; } pub mod fake { pub use ::kclient_fake::*; } } // the facade's paths
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use kclient::fake::FakeApiServer;
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
//! let client = kclient::rest::RestClient::new(server.config()?)?;
//! server.write_kubeconfig("/tmp/kubeconfig")?;
//! // ...and read back what the code under test did.
//! let cm = server.get_value(&kclient::core::GroupResource::new("", "configmaps"), "demo", "settings");
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
//! - **Pods** are deleted at once (no kubelet finishes a graceful deletion). Most per-type
//!   validation and defaulting is not implemented (a few visible defaults are: `replicas: 1`,
//!   secret `type: Opaque` and `stringData` merged into `data`, service `type: ClusterIP`,
//!   pods start `Pending`, namespaces get the `kubernetes` finalizer), but the immutable
//!   fields of the common kinds are refused as kube-apiserver refuses them: a pod's spec
//!   beyond its mutable fields, a Service's cluster IPs, the selectors of Deployments,
//!   ReplicaSets, DaemonSets, StatefulSets and Jobs, a Job's pod template, ConfigMaps and
//!   Secrets marked `immutable` (the `422 Invalid` messages and causes are the server's; the
//!   e2e suite's `immutable_*` scenarios compare them). No cluster IP is allocated: the rule
//!   holds for the IPs a client set.
//! - **Custom resources** are validated against, pruned by and defaulted from their CRD's
//!   schema as apiextensions-apiserver does (the guide lists the rules), except that CEL
//!   rules (`x-kubernetes-validations`) are not evaluated, defaults are applied on writes
//!   only (not when reading objects a later schema would default), and server-side apply
//!   reports type mismatches as validation errors. Versions convert with the `None`
//!   strategy (apiVersion and pruning), or through the CRD's conversion webhook.
//! - **Admission webhooks** (`MutatingWebhookConfiguration`, `ValidatingWebhookConfiguration`)
//!   are called as kube-apiserver calls them, except that `matchConditions` are not evaluated
//!   (the webhook is called as if they held) and `matchPolicy: Equivalent` knows only the
//!   versions of custom resources; a Service is reached through
//!   [`FakeApiServer::route_service`]. The guide's "Webhooks" section says the rest.
//! - **Content negotiation** follows kube-apiserver's (see the `negotiate` module's rules):
//!   `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1` (or `v1beta1`,
//!   `…List` for lists) gets the metadata of any resource, custom ones included, on get,
//!   list (paged), watch and the writes' answers; an unsupported `as=`, group or version, or
//!   media type is a `406` worded as the server words it.
//! - **Protobuf** (`application/vnd.kubernetes.protobuf`, what client-go's typed clients ask
//!   for) is served as kube-apiserver serves it, byte for byte, for every built-in kind
//!   kclient-protobuf has a codec of (those of the Kubernetes version k8s-openapi is built
//!   for): objects, lists, `;stream=watch` watches, the writes' answers, `Status` errors and
//!   the `PartialObjectMetadata(List)` conversions (of custom resources too); protobuf request
//!   bodies of those kinds are read (a custom resource's is a `400`, as its decoder fails).
//!   Custom resources and Tables answer JSON; so do the pod subresources (`eviction`,
//!   `binding`, `log`), `serviceaccounts/token` and the discovery and OpenAPI documents.
//!   YAML wins negotiation as on the real server but is answered in JSON.
//! - **Tables** have the default `Name`/`Created At` columns; there is no CBOR (a CBOR
//!   request body gets `415`), and `/openapi/v3` has paths but no schemas.
//! - **Watches** send bookmarks every bookmark interval (60 s by default) and two seconds
//!   before their timeout, as the watch cache does, but exactly once (the watch cache's
//!   one-second timer may send that last one twice); they last 30 minutes unless
//!   `timeoutSeconds` says otherwise. The history starts with the state the server started
//!   with (as the watch cache starts from a list), so a watch from resourceVersion 1 gets
//!   `410 Expired`.
//! - **Nothing runs**: no kubelet, container, endpoint or controller. Exec, attach and
//!   port-forward run what the test's handlers do (a handler stands in for the kubelet of
//!   every node: the Node object need not exist; a pod is running when its `status.phase`
//!   says `Running`; exec over SPDY and port-forward's old WebSocket channel protocol are
//!   not served). The other connect subresources answer as kube-apiserver does when there
//!   is nothing to connect to (`400` without a host or container, `404`/`500` for a missing
//!   node or one without addresses, `503` otherwise); a PodDisruptionBudget's status is what a test writes (a new one has not
//!   been observed, so evicting a running pod it selects gets `429` until the test plays the
//!   disruption controller); `serviceaccounts/token` mints JWT-shaped, unsigned tokens that
//!   the fake itself does not accept.
//! - **One version per group**: autoscaling is served as v2 only (kube-apiserver serves v1
//!   too); built-in objects are not converted between versions.
//! - `pods/ephemeralcontainers` and `pods/resize` change only what they change on a real
//!   server, but are not validated (a resize that would change the QoS class is taken).
//! - There is no RBAC (the rbac.authorization.k8s.io objects are stored, never enforced), no
//!   admission other than namespace lifecycle and webhooks, and authentication is a bearer token or a
//!   client certificate signed by the server's CA.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// `ApiError` (kclient-core) is a whole `Status`; errors are the cold path of a test server,
// and boxing them everywhere would only add noise.
#![allow(clippy::result_large_err)]

mod actions;
mod admission;
mod call;
pub mod catalogue;
pub mod cli;
mod connect;
mod conversion_webhook;
mod crd;
mod defaults;
mod discovery;
mod errors;
mod faults;
mod gc;
mod handler;
mod immutable;
mod kubeconfig;
pub mod manifests;
mod meta;
mod negotiate;
mod openapi;
mod patch;
mod pods;
mod protobuf;
mod query;
mod reactors;
mod registry;
mod request;
mod response;
mod router;
pub mod samples;
mod scale;
mod schema;
mod selectors;
mod server;
mod state;
mod store;
mod streaming;
mod table;
mod tls;
mod verbs;
mod wait;
mod watch;
mod webhook_client;

pub use actions::{ActionFilter, RecordedAction, DEFAULT_ACTION_HISTORY};

/// The old name of [`RecordedAction`], kept for a release.
#[deprecated(note = "renamed `RecordedAction`, apart from kclient-controller's `Action`")]
pub type Action = RecordedAction;
pub use catalogue::{ExtraSubresource, GenerationBumps, ResourceInfo, ScaleSpec};
pub use faults::Faults;
pub use kubeconfig::Credentials;
pub use manifests::{load_manifests, parse_manifests};
pub use reactors::{Failure, Reaction, Reactor, ReactorHandle, Reactors};
pub use server::{FakeApiServer, FakeApiServerBuilder};
pub use state::Settings;
pub use streaming::{
    echo_port, forward_to_address, ExecRequest, FakeKubelet, PortForwardRequest, Process,
    ProcessOutput, ProcessStdin,
};
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
    /// [`FakeApiServer::wait_until`]'s condition did not hold within its bound.
    #[error("the condition at {location} did not hold within {timeout:?}; {last_read}")]
    #[non_exhaustive]
    WaitTimeout {
        /// The bound.
        timeout: std::time::Duration,
        /// Where `wait_until` was called.
        location: &'static std::panic::Location<'static>,
        /// What the condition read from the server when it was last checked: each object it
        /// got (its JSON without `managedFields`, or `absent`), each list (the names), the
        /// number of recorded actions it looked at.
        last_read: String,
    },
    /// A manifest could not be read or parsed.
    #[error("manifest {path}: {message}")]
    Manifest {
        /// The file.
        path: String,
        /// What was wrong.
        message: String,
    },
}
