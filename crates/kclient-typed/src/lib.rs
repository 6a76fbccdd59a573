//! kclient-typed: typed Kubernetes clients, generic at the core and generated at the surface.
//!
//! * [`ResourceClient<K>`] is the one typed client, for any [`Resource`](kclient_core::Resource)
//!   `K` (client-go's `gentype.ClientWithListAndApply[T]`, kube-rs's `Api<K>`): get, list,
//!   paged lists ([`list_all`](ResourceClient::list_all), [`list_pages`](ResourceClient::list_pages),
//!   kclient-core's [`ListPager`](kclient_core::ListPager)), watch, create, update, patch
//!   (every kind), server-side apply, delete ([`DeleteResponse`](kclient_core::DeleteResponse))
//!   and delete-collection, with the `status` and `scale` subresources on
//!   the types that have them ([`HasStatus`], [`HasScale`]). It implements
//!   [`ListerWatcher`](kclient_core::ListerWatcher), so informers run on it, and the
//!   [`Clientset`] implements [`ListerWatcherFor`](kclient_core::ListerWatcherFor), so an
//!   informer factory makes informers from it — and
//!   [`DynamicListerWatcherFor`](kclient_core::DynamicListerWatcherFor) for `DynamicObject`
//!   and `PartialObjectMetadata` (through kclient-dynamic's clients), so the same factory
//!   makes informers of resources chosen at run time, whole or metadata only;
//!   `filtered_list_watch` gives kclient-core's
//!   [`FilteredListWatch`](kclient_core::FilteredListWatch) over it. This crate knows nothing of the cache: the
//!   factory is kclient-cache's, its typed accessors (`factory.core_v1().pods()`)
//!   kclient-informers'.
//! * [`Clientset`] hands out those clients the way client-go's does:
//!   `clientset.core_v1().pods("ns")`, `clientset.apps_v1().deployments("ns")`, one accessor
//!   per group-version and one method per resource, for every resource of the chosen
//!   Kubernetes version. That surface is generated (`cargo xtask codegen`, from the resource
//!   table in `kclient-codegen`) and is only type-level glue over `ResourceClient`.
//! * Hand-written extensions where client-go has them: pod logs ([`LogOptions`], streams of
//!   bytes or lines), eviction and binding.
//!
//! Resources chosen at run time are kclient-dynamic's: its `DynamicClient` (whole objects) and
//! `MetadataClient` (metadata only). The verbs of all three are built by kclient-rest's
//! `ResourceRequests`, so they address, check and refuse alike (a refusal is
//! [`Error::Refused`]).
//!
//! # Listing
//!
//! One request lists: [`list`](ResourceClient::list) (one page when `options.limit` is set).
//! Everything else is built on it:
//!
//! * [`pager`](ResourceClient::pager) — kclient-core's
//!   [`ListPager`](kclient_core::ListPager) (client-go's `tools/pager`): every page of a large
//!   list from one snapshot, with a full list when the snapshot expires, as one list, a
//!   stream of pages or of items; [`list_all`](ResourceClient::list_all) and
//!   [`list_pages`](ResourceClient::list_pages) are its two common uses.
//! * [`fetch_list`](ResourceClient::fetch_list) — the list with its items not yet decoded,
//!   the primitive of kclient-core's [`ListerWatcher`](kclient_core::ListerWatcher) seam that
//!   the pager and the reflector decode page by page (`ListerWatcher::list_mapped`; the
//!   client's own `list_mapped` is deprecated).
//!
//! The Kubernetes version is k8s-openapi's, and a build has exactly one. The default feature
//! `v1_37` picks 1.37, the version the e2e suite's kube-apiserver runs; for 1.35 or 1.36 turn
//! the defaults off and enable `v1_35` or `v1_36` instead (or the same feature on k8s-openapi):
//!
//! ```toml
//! kclient-typed = { version = "0.1", default-features = false, features = ["v1_35"] }
//! ```
//!
//! Libraries built on kclient-typed set `default-features = false` and leave the choice to the
//! final program. The Clientset offers the resources of the chosen version
//! ([`KUBERNETES_VERSION`]). k8s-openapi models some fields differently across versions (the
//! workload kinds' `spec` is `Option<Spec>` up to 1.36 and `Spec` from 1.37 on), so code meant
//! for several versions builds objects from JSON, as below.
//!
//! The examples use the paths a program depending on the `kclient` facade writes
//! (`kclient::typed::…`); one depending on kclient-typed alone writes `kclient_typed::…`.
//!
//! ```no_run
//! # mod kclient { pub mod k8s_openapi { pub use ::k8s_openapi::*; } pub mod core { pub use ::kclient_core::*; } pub mod rest { pub use ::kclient_rest::*; } pub mod typed { pub use ::kclient_typed::*; } } // the facade's paths
//! use kclient::k8s_openapi::api::apps::v1::Deployment;
//! use kclient::core::{DeleteOptions, ListOptions};
//! use kclient::typed::{ApplyOptions, Clientset};
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let clientset = Clientset::new(kclient::rest::Config::infer()?)?;
//! let deployments = clientset.apps_v1().deployments("default");
//!
//! // Server-side apply, then scale through the scale subresource.
//! let web = json!({
//!     "apiVersion": "apps/v1", "kind": "Deployment",
//!     "metadata": { "name": "web" },
//!     "spec": {
//!         "selector": { "matchLabels": { "app": "web" } },
//!         "template": {
//!             "metadata": { "labels": { "app": "web" } },
//!             "spec": { "containers": [{ "name": "web", "image": "nginx" }] }
//!         }
//!     }
//! });
//! let applied: Deployment = deployments.apply("web", &web, &ApplyOptions::new("example").force()).await?;
//! deployments.scale_to("web", 3).await?;
//!
//! // Every deployment in the namespace, 500 per page.
//! for d in deployments.list_all(&ListOptions::default()).await? {
//!     println!("{:?}", d.metadata.name);
//! }
//! deployments.delete("web", &DeleteOptions::background()).await?;
//! # let _ = applied; Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(kclient_k8s_unsupported)]
compile_error!(
    "kclient-typed supports Kubernetes 1.35, 1.36 and 1.37: enable one of its features v1_35, \
     v1_36 or v1_37 (or the same feature of k8s-openapi)"
);

mod apply;
mod client;
mod clientset;
mod error;
mod expansion;
mod generated;
mod list_watch;
mod pager;
mod subresource;

pub use apply::ApplyOptions;
pub use client::ResourceClient;
pub use clientset::Clientset;
pub use error::Error;
pub use expansion::{LogLines, LogOptions, LogStream, LogStreamKind};
pub use generated::*;
pub use subresource::{HasScale, HasStatus};

/// The Kubernetes version this build targets (`"1.35"`, `"1.36"` or `"1.37"`): k8s-openapi's.
pub const KUBERNETES_VERSION: &str = if cfg!(kclient_k8s = "1.35") {
    "1.35"
} else if cfg!(kclient_k8s = "1.36") {
    "1.36"
} else {
    "1.37"
};
