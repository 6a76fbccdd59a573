//! kclient-dynamic: every verb on any resource, including custom resources unknown at compile
//! time, over [`DynamicObject`](kclient_core::DynamicObject) — client-go's `dynamic` package —
//! and its `metadata` package.
//!
//! [`DynamicClient::resource`] takes a [`GroupVersionResource`](kclient_core::GroupVersionResource)
//! or an [`ApiResource`](kclient_core::ApiResource) (from kclient-discovery's `RestMapper`) and
//! gives a [`DynamicResource`], narrowed to a namespace with
//! [`namespace`](DynamicResource::namespace), with `get`, `list`, `watch`, `create`, `update`,
//! `update_status`, `patch` (JSON, merge, strategic merge, apply), `apply`, `apply_status`,
//! `delete` and `delete_collection`. Objects round-trip losslessly: fields kclient has never
//! heard of are kept and sent back as they came. List items get `apiVersion` and `kind` from
//! the list, as client-go's `UnstructuredList` does.
//!
//! The [`metadata`] module is client-go's `metadata` package: a [`MetadataClient`] reads
//! only the [`PartialObjectMetadata`](kclient_core::PartialObjectMetadata) of any resource,
//! and backs metadata-only informers. It is the same client as [`DynamicClient`] (one
//! [`ViewClient`]), and its [`MetadataResource`] the same [`DynamicResource`], reading
//! another view of the objects ([`ObjectView`]): the verbs are
//! written once, over kclient-rest's `ResourceRequests` (which the typed client's are too),
//! and a view only says what it asks the server for and how it finishes the answer.
//!
//! # Listing
//!
//! One request lists: [`list`](DynamicResource::list) (one page when `options.limit` is
//! set). Everything else is built on it:
//!
//! * [`pager`](DynamicResource::pager) — kclient-core's [`ListPager`](kclient_core::ListPager)
//!   (client-go's `tools/pager`): every page of a large list from one snapshot, with a full
//!   list when the snapshot expires, as one list, a stream of pages or of items;
//!   [`list_all`](DynamicResource::list_all) and [`list_pages`](DynamicResource::list_pages)
//!   are its two common uses.
//! * [`fetch_list`](DynamicResource::fetch_list) — the list with its items not yet decoded,
//!   the primitive of kclient-core's [`ListerWatcher`](kclient_core::ListerWatcher) seam that
//!   the pager and the reflector decode page by page (`ListerWatcher::list_mapped`).
//!
//! A `DynamicResource` (or kclient-core's [`FilteredListWatch`](kclient_core::FilteredListWatch)
//! over one, with selectors) implements [`ListerWatcher`](kclient_core::ListerWatcher), so
//! informers and pagers work for any resource.
//!
//! The examples use the paths a program depending on the `kclient` facade writes
//! (`kclient::dynamic::…`); one depending on kclient-dynamic alone writes `kclient_dynamic::…`.
//!
//! ```no_run
//! # mod kclient { pub mod core { pub use ::kclient_core::*; } pub mod rest { pub use ::kclient_rest::*; } pub mod dynamic { pub use ::kclient_dynamic::*; } } // the facade's paths
//! use kclient::core::{DynamicObject, GroupVersionResource, ListOptions, Patch, PatchOptions};
//! use kclient::dynamic::DynamicClient;
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let rest = kclient::rest::RestClient::new(kclient::rest::Config::infer()?)?;
//! let client = DynamicClient::new(rest);
//! let crontabs = client
//!     .resource(&GroupVersionResource::new("stable.example.com", "v1", "crontabs"))
//!     .namespace("default");
//!
//! // Server-side apply a custom resource...
//! let desired: DynamicObject = serde_json::from_value(json!({
//!     "apiVersion": "stable.example.com/v1", "kind": "CronTab",
//!     "metadata": {"name": "nightly"},
//!     "spec": {"cronSpec": "0 3 * * *", "image": "backup:1.2"}
//! }))?;
//! let applied = crontabs.apply("nightly", &desired, &PatchOptions::apply("my-tool")).await?;
//! println!("resourceVersion {:?}", applied.metadata.resource_version);
//!
//! // ...patch it, and list them all.
//! let patch = Patch::Merge(json!({"spec": {"image": "backup:1.3"}}));
//! crontabs.patch("nightly", &patch, &PatchOptions::default()).await?;
//! for ct in crontabs.list(&ListOptions::default()).await? {
//!     println!("{} {}", ct.metadata.name.unwrap_or_default(), ct.data["spec"]["image"]);
//! }
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod client;
mod error;
mod list_watch;
pub mod metadata;
mod pager;
mod resource;
mod view;
mod whole;

pub use client::{DynamicClient, ViewClient};
pub use error::Error;
pub use metadata::{MetadataClient, MetadataResource};
pub use resource::{DynamicResource, ResourceRef};
pub use view::ObjectView;
