//! kclient: Kubernetes' client-go, done in Rust.
//!
//! This facade re-exports the kclient crates behind cargo features, so one dependency gives a
//! program every layer it enables, and its documentation is the whole library: each module
//! below is a layer's crate, inlined, with the feature that enables it. Programs that need a
//! single layer can depend on that crate directly instead (`kclient-core`,
//! `kclient-workqueue`, ...); the types are the same.
//!
//! Each item has one path: a layer's crate defines it and no other layer re-exports it
//! (`ListPager` is `kclient::core::ListPager`, not also `kclient::typed::ListPager`), and the
//! [`prelude`] adds a second, short path for the names most programs use, no two of which
//! share a name.
//!
//! | module | crate | feature |
//! |---|---|---|
//! | [`core`] | `kclient-core`: GVK, `Resource`, `DynamicObject`, options, watch events, errors, selectors, keys, `ListerWatcher`, `ListPager`, `CancellationToken` | always |
//! | `rest` | `kclient-rest`: `Config`, `RestClient` | `rest` (default) |
//! | `discovery` | `kclient-discovery`: `DiscoveryClient`, caches, `RestMapper` | `discovery` (default) |
//! | `dynamic` | `kclient-dynamic`: `DynamicClient` | `dynamic` (default) |
//! | `typed` | `kclient-typed`: `ResourceClient<K>`, `Clientset` | `typed` (default) |
//! | `cache` | `kclient-cache`: `SharedIndexInformer`, `SharedInformerFactory`, event handlers, `Indexer`, `Lister`, the reflector and FIFOs | `cache` (default) |
//! | `informers` | `kclient-informers`: the generated typed informers and listers, `factory.core_v1().pods()` | `informers` (default) |
//! | `workqueue` | `kclient-workqueue`: client-go's workqueue | `workqueue` (default) |
//! | `tools` | `kclient-tools`: leader election, events, watch utilities, retries, wait helpers | `tools` |
//! | `controller` | `kclient-controller`: the reconcile runtime, `Controller`, `Reconciler`, `Action`, finalizers, owner references, `Manager` | `controller` |
//! | `fake` | `kclient-fake`: an in-memory API server for tests | `fake` |
//! | `streaming` | `kclient-streaming`: exec, attach and port-forward (`remotecommand`, `portforward`), also on the typed client's pods | `streaming` |
//! | `derive` | `kclient-derive`: `#[derive(CustomResource)]`, API types in Rust and their CRD (with `core::crd`) | `derive` |
//! | `webhook` | `kclient-webhook`: admission and conversion webhooks, their HTTPS server, certificates and configurations | `webhook` |
//!
//! Built-in types come from k8s-openapi, re-exported as [`k8s_openapi`] so that `kclient` is
//! the one dependency a program lists (`kclient::k8s_openapi::api::core::v1::Pod`). It needs
//! exactly one Kubernetes version. The default features include `v1_37` (Kubernetes 1.37,
//! the version the e2e suite's kube-apiserver runs). k8s-openapi refuses two versions at
//! once, so another version means turning the defaults off and listing the layers with it:
//!
//! ```toml
//! kclient = { version = "0.1", default-features = false, features = ["rest", "discovery", "dynamic", "typed", "cache", "informers", "workqueue", "v1_35", "common-groups"] }
//! ```
//!
//! (`v1_35`, `v1_36` or `v1_37`, or the same feature on k8s-openapi). Libraries built on
//! kclient set `default-features = false` and enable no version and no API group.
//!
//! **API groups.** Built-in kinds are spoken in protobuf (kube-apiserver's cheaper encoding,
//! and the faster one to decode), with codecs generated per API group. A program compiles and
//! links the codecs of the groups whose features it turns on — `group-core`, `group-apps`,
//! `group-batch`, … (a group turns on the groups its types contain: `group-apps` has
//! `group-core`) — and speaks JSON for the kinds of every other group: they work the same,
//! only their bodies are larger and slower to decode. The default features have
//! `common-groups`: core, apps, batch, networking, rbac, policy, autoscaling, coordination
//! (Leases), events and apiextensions (CRDs); `all-groups` has every group. A program that
//! knows its kinds builds faster and smaller with just their groups. The protobuf *encoders*
//! are compiled only for `compact-protobuf` (in the default features), which lets the
//! compact cache representation keep built-in kinds as protobuf (without it `compact_cache()`
//! leaves them decoded): a client decodes responses and sends JSON, so it needs none. The
//! compact cache itself is the `compact` feature (which `compact-protobuf` turns on): it
//! compiles a second copy of the store for every kind a program caches, and without it a
//! cache asked to be compact keeps its objects decoded, with a warning. Informers on a
//! DeltaFIFO (`FifoKind::Delta`, client-go's informers before `InOrderInformers`) are the
//! `informer-delta-fifo` feature (in the default features); without it every informer runs on
//! a RealFIFO, the default either way, and no DeltaFIFO is compiled for each kind a program
//! caches. An operator of Deployments and Pods, which needs none of these:
//!
//! ```toml
//! kclient = { version = "0.1", default-features = false, features = ["controller", "derive", "v1_37", "group-core", "group-apps"] }
//! ```
//!
//! Every layer's error converts into one [`Error`] (with `From`, so `?` works across
//! layers), which answers the [`ApiStatus`](core::ApiStatus) predicates (`is_not_found()`,
//! `is_conflict()` ...) whichever layer carried the server's refusal; see [`error`].
//!
//! ```
//! use kclient::prelude::*;
//!
//! let key: ObjectKey = "default/web".parse().unwrap();
//! assert_eq!(key.namespace.as_deref(), Some("default"));
//! let gvk = GroupVersion::parse("apps/v1").unwrap().with_kind("Deployment");
//! assert_eq!(gvk.api_version(), "apps/v1");
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// The feature badges of the re-exported layers, on docs.rs only (rustdoc's `doc_cfg` is not
// stable; `[package.metadata.docs.rs]` passes `--cfg docsrs`).
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod error;

pub use error::{Error, Result};

/// The Kubernetes API types: the k8s-openapi crate, re-exported, so that one dependency line
/// (`kclient = "0.1"`) gives a program kclient and the types it works on, in the version
/// kclient's own crates were built against (`kclient::k8s_openapi::api::core::v1::Pod`).
///
/// A build has exactly one Kubernetes version, chosen by a feature of this crate: `v1_37`
/// (the default, the e2e suite's kube-apiserver), `v1_36` or `v1_35`. Choose the version of
/// the oldest API server the program must talk to: a newer version's types may carry fields
/// and resources that server does not serve. To choose another version, turn the default
/// features off and list the layers with the version (see the [crate docs](crate)).
/// Libraries built on kclient enable no version; the final program picks it.
#[doc(no_inline)]
pub use k8s_openapi;

#[doc(inline)]
pub use kclient_core as core;

/// Config, transport and the REST client (the `kclient-rest` crate).
#[cfg(feature = "rest")]
#[cfg_attr(docsrs, doc(cfg(feature = "rest")))]
#[doc(inline)]
pub use kclient_rest as rest;

/// Discovery, its caches and the RestMapper (the `kclient-discovery` crate).
#[cfg(feature = "discovery")]
#[cfg_attr(docsrs, doc(cfg(feature = "discovery")))]
#[doc(inline)]
pub use kclient_discovery as discovery;

/// The dynamic and metadata clients (the `kclient-dynamic` crate).
#[cfg(feature = "dynamic")]
#[cfg_attr(docsrs, doc(cfg(feature = "dynamic")))]
#[doc(inline)]
pub use kclient_dynamic as dynamic;

/// Typed clients and the generated Clientset (the `kclient-typed` crate). Without the cache:
/// the typed informers are in `informers` (kclient-informers).
#[cfg(feature = "typed")]
#[cfg_attr(docsrs, doc(cfg(feature = "typed")))]
#[doc(inline)]
pub use kclient_typed as typed;

/// client-go's informer cache: shared informers and their factory, event handlers, the
/// store and indexer, listers, the reflector, DeltaFIFO and RealFIFO (the `kclient-cache`
/// crate).
#[cfg(feature = "cache")]
#[cfg_attr(docsrs, doc(cfg(feature = "cache")))]
#[doc(inline)]
pub use kclient_cache as cache;

/// The generated typed informers and listers, `factory.core_v1().pods().informer()` (the
/// `kclient-informers` crate).
#[cfg(feature = "informers")]
#[cfg_attr(docsrs, doc(cfg(feature = "informers")))]
#[doc(inline)]
pub use kclient_informers as informers;

/// client-go's workqueue (the `kclient-workqueue` crate).
#[cfg(feature = "workqueue")]
#[cfg_attr(docsrs, doc(cfg(feature = "workqueue")))]
#[doc(inline)]
pub use kclient_workqueue as workqueue;

/// What controllers need beyond informers: leader election, events, watch utilities, retry
/// on conflict, wait/poll helpers (the `kclient-tools` crate).
#[cfg(feature = "tools")]
#[cfg_attr(docsrs, doc(cfg(feature = "tools")))]
#[doc(inline)]
pub use kclient_tools as tools;

/// The reconcile runtime on shared informers: `Controller` (owns, watches, predicates),
/// `Reconciler` and `Action`, finalizers, owner references, and a `Manager` with leader
/// election, probes, metrics and graceful shutdown (the `kclient-controller` crate).
#[cfg(feature = "controller")]
#[cfg_attr(docsrs, doc(cfg(feature = "controller")))]
#[doc(inline)]
pub use kclient_controller as controller;

/// An in-memory Kubernetes API server over real HTTP, for tests and demos (the
/// `kclient-fake` crate).
#[cfg(feature = "fake")]
#[cfg_attr(docsrs, doc(cfg(feature = "fake")))]
#[doc(inline)]
pub use kclient_fake as fake;

/// Exec, attach and port-forward: client-go's `tools/remotecommand` and `tools/portforward`
/// over WebSocket and SPDY (the `kclient-streaming` crate). The typed client's pods get
/// `exec`, `attach`, `forward` and friends with it.
#[cfg(feature = "streaming")]
#[cfg_attr(docsrs, doc(cfg(feature = "streaming")))]
#[doc(inline)]
pub use kclient_streaming as streaming;

/// `#[derive(CustomResource)]`: a custom resource's API written as Rust types, its
/// CustomResourceDefinition generated from them (the `kclient-derive` crate; the CRD side is
/// [`core::crd`]: `CustomResourceExt`, `merge_crds`, structural schemas).
#[cfg(feature = "derive")]
#[cfg_attr(docsrs, doc(cfg(feature = "derive")))]
#[doc(inline)]
pub use kclient_derive as derive;

/// Admission and conversion webhooks: `CustomValidator`, `CustomDefaulter`, hub-and-spoke
/// `Conversion`, the `WebhookServer` (HTTPS, certificate reloading, controller-runtime's
/// metrics), development certificates and the webhook configurations (the `kclient-webhook`
/// crate; the wire formats are [`core::admission`] and [`core::conversion`]).
#[cfg(feature = "webhook")]
#[cfg_attr(docsrs, doc(cfg(feature = "webhook")))]
#[doc(inline)]
pub use kclient_webhook as webhook;

/// The names most programs use, in one import: a second, short path to items of the layers
/// above (each also at its one path in its layer's module), no two with the same name.
pub mod prelude {
    #[cfg(feature = "cache")]
    #[cfg_attr(docsrs, doc(cfg(feature = "cache")))]
    #[doc(no_inline)]
    pub use kclient_cache::{
        wait_for_cache_sync, wait_for_named_cache_sync, EnqueueObjectKey, Indexer, Indexers,
        KeyFunc, Lister, ResourceEventHandler, ResourceEventHandlerFuncs, SharedIndexInformer,
        SharedInformerFactory,
    };
    #[cfg(feature = "controller")]
    #[cfg_attr(docsrs, doc(cfg(feature = "controller")))]
    #[doc(no_inline)]
    pub use kclient_controller::{Action, Controller, Manager, ReconcileContext, Reconciler};
    #[cfg(feature = "derive")]
    #[cfg_attr(docsrs, doc(cfg(feature = "derive")))]
    #[doc(no_inline)]
    pub use kclient_core::crd::CustomResourceExt;
    #[doc(no_inline)]
    pub use kclient_core::{
        ApiError, ApiResource, ApiStatus, CancellationToken, DeletedObject, DynamicObject,
        ErrorReport, GroupVersion, GroupVersionKind, GroupVersionResource, ListerWatcher,
        ObjectKey, ObjectList, Resource, ResourceExt, WatchEvent,
    };
    #[cfg(feature = "derive")]
    #[cfg_attr(docsrs, doc(cfg(feature = "derive")))]
    #[doc(no_inline)]
    pub use kclient_derive::CustomResource;
    #[cfg(feature = "dynamic")]
    #[cfg_attr(docsrs, doc(cfg(feature = "dynamic")))]
    #[doc(no_inline)]
    pub use kclient_dynamic::DynamicClient;
    #[cfg(feature = "informers")]
    #[cfg_attr(docsrs, doc(cfg(feature = "informers")))]
    #[doc(no_inline)]
    pub use kclient_informers::InformerFactoryExt;
    #[cfg(feature = "rest")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rest")))]
    #[doc(no_inline)]
    pub use kclient_rest::{Config, RestClient};
    #[cfg(feature = "typed")]
    #[cfg_attr(docsrs, doc(cfg(feature = "typed")))]
    #[doc(no_inline)]
    pub use kclient_typed::{Clientset, ResourceClient};
    #[cfg(feature = "workqueue")]
    #[cfg_attr(docsrs, doc(cfg(feature = "workqueue")))]
    #[doc(no_inline)]
    pub use kclient_workqueue::{
        default_controller_rate_limiter, DelayingInterface, DelayingQueue, QueueInterface,
        RateLimitingInterface, RateLimitingQueue, WorkQueue,
    };
}

/// The code of `docs/getting-started.md`, compiled as doc tests so that the guide cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/getting-started.md")]
mod getting_started {}

/// The code of the README, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
mod readme {}

/// The code of `docs/custom-resources.md`, compiled as doc tests (it uses the derive).
#[cfg(all(doctest, feature = "derive"))]
#[doc = include_str!("../../../docs/custom-resources.md")]
mod custom_resources {}

/// The code of `docs/testing-with-kclient-fake.md`, compiled as doc tests (it uses
/// `kclient::fake`).
#[cfg(all(doctest, feature = "fake"))]
#[doc = include_str!("../../../docs/testing-with-kclient-fake.md")]
mod testing_with_kclient_fake {}
