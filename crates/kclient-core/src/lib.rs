//! kclient-core: apimachinery for kclient (in progress).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod api_error;
pub mod api_resource;
pub mod dynamic_object;
pub mod fields;
pub mod gvk;
pub mod labels;
pub mod lister_watcher;
pub mod object_key;
pub mod object_list;
pub mod options;
pub mod patch;
pub mod resource;
mod selector_error;
pub mod status;
pub mod type_meta;
pub mod watch_event;
pub mod watch_frame;

pub use api_error::{ApiError, ApiStatus, RESOURCE_VERSION_TOO_LARGE};
pub use api_resource::ApiResource;
pub use dynamic_object::DynamicObject;
pub use gvk::{
    GroupResource, GroupVersion, GroupVersionKind, GroupVersionParseError, GroupVersionResource,
};
pub use lister_watcher::{ListerWatcher, WatchStream};
pub use object_key::{
    deletion_handling_meta_namespace_key, meta_namespace_key, split_meta_namespace_key,
    DeletedFinalStateUnknown, DeletedObject, KeyError, ObjectKey,
};
pub use object_list::ObjectList;
pub use options::{
    CreateOptions, DeleteOptions, DeletionPropagation, FieldValidation, GetOptions, ListOptions,
    OptionsError, PatchOptions, Preconditions, ResourceVersionMatch, UpdateOptions,
};
pub use patch::{JsonPatch, Patch, PatchOperation, PatchType};
pub use resource::{Resource, ResourceExt, ScopeNamespaced};
pub use selector_error::SelectorError;
pub use status::{Status, StatusCause, StatusDetails, StatusReason};
pub use type_meta::TypeMeta;
pub use watch_event::{Bookmark, WatchDecodeError, WatchEvent, INITIAL_EVENTS_END_ANNOTATION};
pub use watch_frame::JsonFrameDecoder;
