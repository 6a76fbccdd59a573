//! kclient-core: the apimachinery layer of kclient, the vocabulary every other kclient crate
//! shares, with no I/O.
//!
//! * Identifiers: [`GroupVersion`], [`GroupVersionKind`], [`GroupVersionResource`],
//!   [`GroupResource`], [`GroupKind`], and [`ApiResource`], which describes any resource,
//!   built-in or custom.
//! * Objects: the [`Resource`] trait (implemented for every k8s-openapi type with
//!   `ObjectMeta`, for [`DynamicObject`] and for [`PartialObjectMetadata`]), [`ResourceExt`],
//!   [`ObjectList`] ([`PartialObjectMetadataList`] is one).
//! * Requests: [`options`] (list, get, create, update, patch, delete) and [`patch`], each in
//!   the exact wire format of the API server, with the server's validation rules.
//! * Watches: [`WatchEvent`] and [`JsonFrameDecoder`], which frames a watch stream
//!   incrementally with bounded memory.
//! * Errors: [`Status`], [`ApiError`] and the [`ApiStatus`] predicates (`is_not_found()`,
//!   `is_conflict()`, `is_gone()` ...); [`FieldError`] and [`go_format`] for validation
//!   messages worded and formatted as the API server's; [`ErrorReport`], an error and its
//!   causes one per line (what a `main` returns), and [`handle_error`] (client-go's
//!   `utilruntime.HandleError`).
//! * Responses: [`DeleteResponse`], the object or the `Status` a delete answers with.
//! * Selection: [`labels`] and [`fields`] selectors, parsed, matched and rendered as
//!   apimachinery does.
//! * Keys: [`meta_namespace_key`], [`split_meta_namespace_key`], [`ObjectKey`] and the
//!   deletion tombstone [`DeletedFinalStateUnknown`].
//! * The [`ListerWatcher`] trait: the seam between clients and the informer cache, with
//!   [`ListerWatcherFor`] and [`DynamicListerWatcherFor`], through which an informer factory
//!   makes lister-watchers from a client, and [`FilteredListWatch`] (any lister-watcher with
//!   its options tweaked, [`TweakListOptions`]); and the [`ListPager`] that pages any
//!   `ListerWatcher`'s lists.
//! * Webhooks' wire formats: [`admission`] (`AdmissionReview`) and [`conversion`]
//!   (`ConversionReview`), what kclient-webhook serves and kclient-fake sends.
//! * Shared plumbing: [`CancellationToken`] (tokio-util's), which stops every layer's tasks,
//!   [`BoxError`], the boxed error of user code and lower layers, and [`backoff`]
//!   (apimachinery's `wait.Backoff` and `ExponentialBackoffManager`, on tokio's clock), which
//!   the reflector and the retry helpers above share.
//!
//! The examples use the paths a program depending on the `kclient` facade writes
//! (`kclient::core::…`); one depending on kclient-core alone writes `kclient_core::…`.
//!
//! ```
//! # mod kclient { pub mod k8s_openapi { pub use ::k8s_openapi::*; } pub mod core { pub use ::kclient_core::*; } } // the facade's paths
//! use kclient::k8s_openapi::api::core::v1::Pod;
//! use kclient::core::options::ListOptions;
//! use kclient::core::{labels, meta_namespace_key, Resource, WatchEvent};
//!
//! // Describe a resource and address it.
//! let pods = Pod::api_resource(&());
//! assert_eq!(pods.collection_path(Some("prod")), "/api/v1/namespaces/prod/pods");
//!
//! // Build list options the way the API server expects them.
//! let selector: labels::Selector = "app=web,tier!=db".parse().unwrap();
//! let opts = ListOptions::default().label_selector(&selector).unwrap().limit(500);
//! assert_eq!(
//!     opts.query_pairs(),
//!     [("labelSelector", "app=web,tier!=db".to_string()), ("limit", "500".to_string())]
//! );
//!
//! // Decode a watch frame and key its object.
//! let frame = br#"{"type":"ADDED","object":{"metadata":{"name":"web-0","namespace":"prod","labels":{"app":"web"}}}}"#;
//! let event = WatchEvent::<Pod>::from_json(frame).unwrap();
//! let pod = event.object().unwrap();
//! assert_eq!(meta_namespace_key(pod), "prod/web-0");
//! assert!(selector.matches(&pod.metadata.labels));
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod admission;
pub mod api_error;
pub mod api_resource;
pub mod backoff;
mod box_error;
pub mod conversion;
#[cfg(feature = "schema")]
pub mod crd;
pub mod delete_response;
pub mod dynamic_object;
mod error_report;
pub mod extract;
pub mod fetched_list;
pub mod field_error;
pub mod fields;
pub mod go_format;
pub mod gvk;
pub mod json_list;
mod json_scan;
mod json_text;
pub mod json_value;
pub mod labels;
pub mod lister_watcher;
mod lookup_fn;
pub mod managed_fields;
pub mod object_key;
pub mod object_list;
pub mod options;
pub mod pager;
pub mod partial_object_metadata;
pub mod patch;
pub mod resource;
pub mod resource_version;
mod selector_error;
pub mod sharding;
pub mod snippet;
pub mod status;
pub mod type_meta;
pub mod watch_event;
pub mod watch_frame;
pub mod yaml_nesting;

pub use api_error::{ApiError, ApiStatus, RESOURCE_VERSION_TOO_LARGE};
pub use api_resource::ApiResource;
pub use box_error::BoxError;
pub use delete_response::DeleteResponse;
pub use dynamic_object::DynamicObject;
pub use error_report::{handle_error, ErrorReport};
pub use fetched_list::{FetchedList, ListPart};
pub use field_error::FieldError;
pub use gvk::{
    GroupKind, GroupResource, GroupVersion, GroupVersionKind, GroupVersionParseError,
    GroupVersionResource,
};
pub use lister_watcher::{
    DynamicListerWatcherFor, FilteredListWatch, ListerWatcher, ListerWatcherFor, TweakListOptions,
    WatchStream,
};
pub use object_key::{
    deletion_handling_meta_namespace_key, meta_namespace_key, split_meta_namespace_key,
    DeletedFinalStateUnknown, DeletedObject, KeyError, ObjectKey,
};
pub use object_list::ObjectList;
pub use options::{
    go_duration, CreateOptions, DeleteOptions, DeletionPropagation, FieldValidation, GetOptions,
    ListOptions, OptionsError, PatchOptions, Preconditions, ResourceVersionMatch, UpdateOptions,
    MAX_GO_DURATION, MAX_TIMEOUT_SECONDS,
};
pub use pager::{ListPager, PagedList, PagedListError, PagerError, DEFAULT_PAGE_SIZE};
pub use partial_object_metadata::{PartialObjectMetadata, PartialObjectMetadataList};
pub use patch::{JsonPatch, Patch, PatchOperation, PatchType};
pub use resource::{Resource, ResourceExt, ScopeNamespaced};
pub use selector_error::SelectorError;
pub use snippet::snippet;
pub use status::{Status, StatusCause, StatusDetails, StatusReason};
pub use type_meta::TypeMeta;
pub use watch_event::{Bookmark, WatchDecodeError, WatchEvent, INITIAL_EVENTS_END_ANNOTATION};
pub use watch_frame::JsonFrameDecoder;

/// What stops informers, reflectors, controllers, leader election and the other long-running
/// tasks of every layer: tokio-util's `CancellationToken`, re-exported here, at the bottom of
/// the layering, so that each layer takes the same type without its own re-export.
pub use tokio_util::sync::CancellationToken;

/// What the code `#[derive(CustomResource)]` generates refers to, so that a crate using the
/// derive needs no dependency of its own on these. Not a public API.
#[cfg(feature = "schema")]
#[doc(hidden)]
pub mod __private {
    pub use k8s_openapi;
    pub use schemars;
    pub use serde;
    pub use serde_json;
}
