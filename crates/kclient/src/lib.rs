//! kclient: Kubernetes' client-go, done in Rust.
//!
//! This facade re-exports the kclient crates behind cargo features, so one dependency gives a
//! program every layer it enables. Programs that need a single layer can depend on that crate
//! directly instead (`kclient-core`, `kclient-workqueue`, ...); the types are the same.
//!
//! | module | crate | feature |
//! |---|---|---|
//! | [`core`] | `kclient-core`: GVK, `Resource`, `DynamicObject`, options, watch events, errors, selectors, keys | always |
//! | [`workqueue`] | `kclient-workqueue`: client-go's workqueue | `workqueue` (default) |
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

pub use kclient_core as core;

/// client-go's workqueue (the `kclient-workqueue` crate).
#[cfg(feature = "workqueue")]
pub use kclient_workqueue as workqueue;

/// The names most programs use, in one import.
pub mod prelude {
    pub use kclient_core::{
        ApiError, ApiResource, ApiStatus, DynamicObject, GroupVersion, GroupVersionKind,
        GroupVersionResource, ListerWatcher, ObjectKey, ObjectList, Resource, ResourceExt,
        WatchEvent,
    };
}
