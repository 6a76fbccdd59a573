//! kclient: Kubernetes' client-go, done in Rust.
//!
//! This facade re-exports the kclient crates behind cargo features, so one dependency gives a
//! program every layer it enables. Programs that need a single layer can depend on that crate
//! directly instead (`kclient-core`, `kclient-workqueue`, ...); the types are the same.
//!
//! | module | crate | feature |
//! |---|---|---|
//! | [`core`] | `kclient-core`: GVK, `Resource`, `DynamicObject`, options, watch events, errors, selectors, keys | always |
//! | `rest` | `kclient-rest`: `Config`, `RestClient` | `rest` (default) |
//! | `discovery` | `kclient-discovery`: `DiscoveryClient`, caches, `RestMapper` | `discovery` (default) |
//! | `dynamic` | `kclient-dynamic`: `DynamicClient` | `dynamic` (default) |
//! | `typed` | `kclient-typed`: `ResourceClient<K>`, `Clientset` | `typed` (default) |
//! | `cache` | `kclient-cache`: `SharedIndexInformer`, `SharedInformerFactory`, event handlers, `Indexer`, `Lister`, the reflector and FIFOs | `cache` (default) |
//! | `informers` | `kclient-informers`: the generated typed informers and listers, `factory.core_v1().pods()` | `informers` (default) |
//! | `workqueue` | `kclient-workqueue`: client-go's workqueue | `workqueue` (default) |
//! | `tools` | `kclient-tools`: leader election, events, watch utilities, retries, wait helpers | `tools` |
//! | `fake` | `kclient-fake`: an in-memory API server for tests | `fake` |
//!
//! Built-in types come from k8s-openapi, which needs exactly one Kubernetes version. The
//! default features include `v1_37` (Kubernetes 1.37, the version the e2e suite's
//! kube-apiserver runs). k8s-openapi refuses two versions at once, so another version means
//! turning the defaults off and listing the layers with it:
//!
//! ```toml
//! kclient = { version = "0.1", default-features = false, features = ["rest", "discovery", "dynamic", "typed", "cache", "informers", "workqueue", "v1_35"] }
//! ```
//!
//! (`v1_35`, `v1_36` or `v1_37`, or the same feature on k8s-openapi). Libraries built on
//! kclient set `default-features = false` and enable no version.
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

pub mod error;

pub use error::{Error, Result};
pub use kclient_core as core;

/// Config, transport and the REST client (the `kclient-rest` crate).
#[cfg(feature = "rest")]
pub use kclient_rest as rest;

/// Discovery, its caches and the RestMapper (the `kclient-discovery` crate).
#[cfg(feature = "discovery")]
pub use kclient_discovery as discovery;

/// The dynamic client (the `kclient-dynamic` crate).
#[cfg(feature = "dynamic")]
pub use kclient_dynamic as dynamic;

/// Typed clients and the generated Clientset (the `kclient-typed` crate).
#[cfg(feature = "typed")]
pub use kclient_typed as typed;

/// client-go's informer cache: shared informers and their factory, event handlers, the
/// store and indexer, listers, the reflector, DeltaFIFO and RealFIFO (the `kclient-cache`
/// crate).
#[cfg(feature = "cache")]
pub use kclient_cache as cache;

/// The generated typed informers and listers, `factory.core_v1().pods().informer()` (the
/// `kclient-informers` crate).
#[cfg(feature = "informers")]
pub use kclient_informers as informers;

/// client-go's workqueue (the `kclient-workqueue` crate).
#[cfg(feature = "workqueue")]
pub use kclient_workqueue as workqueue;

/// What controllers need beyond informers: leader election, events, watch utilities, retry
/// on conflict, wait/poll helpers (the `kclient-tools` crate).
#[cfg(feature = "tools")]
pub use kclient_tools as tools;

/// An in-memory Kubernetes API server over real HTTP, for tests and demos (the
/// `kclient-fake` crate).
#[cfg(feature = "fake")]
pub use kclient_fake as fake;

/// The names most programs use, in one import.
pub mod prelude {
    #[cfg(feature = "cache")]
    pub use kclient_cache::{
        wait_for_cache_sync, wait_for_named_cache_sync, CancellationToken, DeletedObject, Indexer,
        Indexers, KeyFunc, Lister, ResourceEventHandler, ResourceEventHandlerFuncs,
        SharedIndexInformer, SharedInformerFactory,
    };
    pub use kclient_core::{
        ApiError, ApiResource, ApiStatus, DynamicObject, GroupVersion, GroupVersionKind,
        GroupVersionResource, ListerWatcher, ObjectKey, ObjectList, Resource, ResourceExt,
        WatchEvent,
    };
    #[cfg(feature = "dynamic")]
    pub use kclient_dynamic::DynamicClient;
    #[cfg(feature = "informers")]
    pub use kclient_informers::InformerFactoryExt;
    #[cfg(feature = "rest")]
    pub use kclient_rest::{Config, RestClient};
    #[cfg(feature = "typed")]
    pub use kclient_typed::{Clientset, ResourceClient};
    #[cfg(feature = "workqueue")]
    pub use kclient_workqueue::{
        default_controller_rate_limiter, DelayingInterface, DelayingQueue, Queue, QueueInterface,
        RateLimitingInterface, RateLimitingQueue,
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
