//! kclient-informers: typed informers and listers, client-go's generated `informers` and
//! `listers` packages — `factory.core_v1().pods().informer()` and `.lister()` for every
//! built-in resource of the chosen Kubernetes version.
//!
//! * [`InformerFactoryExt`] gives kclient-cache's
//!   [`SharedInformerFactory`](kclient_cache::SharedInformerFactory) one accessor per
//!   group-version (`core_v1()`, `apps_v1()` ...), each with one method per resource that
//!   can be listed and watched, returning a [`TypedInformer`]: the resource's shared
//!   informer ([`informer`](TypedInformer::informer)) and lister
//!   ([`lister`](TypedInformer::lister)). The accessors are generated (`cargo xtask
//!   codegen`, from the resource tables of kclient-codegen) into the group-version modules
//!   ([`core_v1`], [`apps_v1`] ...), and are only type-level glue over the factory's generic
//!   `informer::<K>()`.
//! * Informers for CustomResourceDefinitions come from `cargo xtask codegen crd`, whose
//!   generated `cron_tabs_informer(&factory)` returns a [`TypedInformer`] too.
//!
//! This crate depends on kclient-core and kclient-cache only. The factory reaches its client
//! through kclient-core's [`ListerWatcherFor`](kclient_core::ListerWatcherFor), which
//! kclient-typed's `Clientset` implements for every type — so the typed clients know nothing
//! of the cache, and this crate knows no HTTP (client-go's `kubernetes/` never imports
//! `tools/cache`; its `informers/` and `listers/` import both). The dynamic and metadata
//! informers need no generated code: `factory.for_resource(&api_resource)` on a factory over
//! kclient-dynamic's `DynamicClient` or `MetadataClient`.
//!
//! The Kubernetes version is k8s-openapi's, as for kclient-typed: the default feature `v1_37`
//! picks 1.37; for 1.35 or 1.36 turn the defaults off and enable `v1_35` or `v1_36` (or the
//! same feature on k8s-openapi). Libraries set `default-features = false`.
//!
//! The examples use the paths a program depending on the `kclient` facade writes
//! (`kclient::informers::…`); one depending on kclient-informers alone writes `kclient_informers::…`.
//!
//! ```no_run
//! # mod kclient { pub mod core { pub use ::kclient_core::*; } pub mod rest { pub use ::kclient_rest::*; } pub mod typed { pub use ::kclient_typed::*; } pub mod cache { pub use ::kclient_cache::*; } pub mod informers { pub use ::kclient_informers::*; } } // the facade's paths
//! use std::time::Duration;
//! use kclient::cache::SharedInformerFactory;
//! use kclient::core::CancellationToken;
//! use kclient::informers::InformerFactoryExt;
//! use kclient::typed::Clientset;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let clientset = Clientset::new(kclient::rest::Config::infer()?)?;
//! let factory = SharedInformerFactory::new(clientset, Duration::from_secs(600));
//! let pods = factory.core_v1().pods();
//! let informer = pods.informer(); // ask before starting: the factory starts what was asked for
//! let cancel = CancellationToken::new();
//! factory.start(&cancel);
//! assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());
//! if let Ok(web) = pods.lister().namespaced("prod").get("web-0") {
//!     println!("web-0 at resourceVersion {:?}", web.metadata.resource_version);
//! }
//! # let _ = informer; Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(kclient_k8s_unsupported)]
compile_error!(
    "kclient-informers supports Kubernetes 1.35, 1.36 and 1.37: enable one of its features \
     v1_35, v1_36 or v1_37 (or the same feature of k8s-openapi)"
);

mod generated;
mod typed_informer;

pub use generated::*;
pub use typed_informer::TypedInformer;
