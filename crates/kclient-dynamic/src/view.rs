//! [`ObjectView`]: how a [`DynamicResource`](crate::DynamicResource) reads its objects —
//! whole, as [`DynamicObject`]s (the dynamic client), or only their metadata, as
//! [`PartialObjectMetadata`] (the metadata client). The verbs are written once, for both
//! views; a view decides only what it asks the server for and how it finishes what comes
//! back.

use kclient_core::{
    ApiResource, ApiStatus as _, DynamicObject, FetchedList, ObjectList, PartialObjectMetadata,
    TypeMeta,
};
use kclient_rest::Request;
use serde::de::DeserializeOwned;

use crate::error::Error;

// The metadata view's `Accept` headers, public as `metadata::ACCEPT_…`.

/// The `Accept` header of requests for one object and of watches.
pub const ACCEPT_PARTIAL_OBJECT_METADATA: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/// The `Accept` header of requests for lists.
pub const ACCEPT_PARTIAL_OBJECT_METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// The `Accept` header of requests for one object and of watches while the client speaks
/// protobuf (client-go's metadata client's, less its last, unconverted `application/json`:
/// kclient reports a server that cannot convert rather than reading whole objects).
pub const ACCEPT_PARTIAL_OBJECT_METADATA_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/// The `Accept` header of requests for lists while the client speaks protobuf.
pub const ACCEPT_PARTIAL_OBJECT_METADATA_LIST_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// What a [`DynamicResource`](crate::DynamicResource) reads its objects as:
/// [`DynamicObject`] (whole objects, [`DynamicClient`](crate::DynamicClient)) or
/// [`PartialObjectMetadata`] (their metadata, [`MetadataClient`](crate::MetadataClient)).
/// Sealed: these two are the views.
pub trait ObjectView: sealed::View {}

pub(crate) use sealed::Answer;

impl ObjectView for DynamicObject {}
impl ObjectView for PartialObjectMetadata {}

pub(crate) mod sealed {
    use super::*;

    /// What a request's answer is, for the view's `Accept` header.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Answer {
        /// One object, or a watch's events (get, patch, watch).
        Object,
        /// A list.
        List,
        /// What a delete returns: the object or a `Status`.
        Deleted,
        /// What a delete-collection returns: the list or a `Status`.
        DeletedList,
    }

    /// The view's part of every verb (crate-private: [`ObjectView`](super::ObjectView) is
    /// what users name).
    pub trait View: DeserializeOwned + Send + Sync + 'static {
        /// `request` asking for this view's representation of `answer`.
        fn accept(request: Request, answer: Answer) -> Request;

        /// An object as read (get, watch events), finished for the caller.
        fn finish(self, resource: &ApiResource) -> Self;

        /// A list as read (list, delete-collection), finished for the caller.
        fn finish_list(list: ObjectList<Self>, resource: &ApiResource) -> ObjectList<Self>;

        /// Whether a list of `resource` is finished only once decoded whole (its items'
        /// type comes from the list itself).
        fn finished_whole(resource: &ApiResource) -> bool;

        /// A list fetched with its items not yet decoded, finished for the caller (unless
        /// [`finished_whole`](Self::finished_whole)).
        fn finish_fetched(
            fetched: FetchedList<Self, Error>,
            resource: &ApiResource,
        ) -> FetchedList<Self, Error>;

        /// The error of a request the server refused.
        fn refused(error: kclient_rest::Error, resource: &ApiResource) -> Error;
    }
}

/// Whole objects: JSON, and `apiVersion` and `kind` filled in from the resource (or the
/// list) where the server leaves them out, as client-go's `Unstructured` decoding does.
impl sealed::View for DynamicObject {
    fn accept(request: Request, _: Answer) -> Request {
        request
    }

    fn finish(mut self, resource: &ApiResource) -> Self {
        if self.types.is_none() && !resource.kind.is_empty() {
            self.types = Some(TypeMeta::new(
                resource.api_version.clone(),
                resource.kind.clone(),
            ));
        }
        self
    }

    fn finish_list(mut list: ObjectList<Self>, resource: &ApiResource) -> ObjectList<Self> {
        fill_item_types(&mut list, resource);
        list
    }

    /// When the resource's kind is not known (a bare group/version/resource), the items'
    /// type comes from the list itself.
    fn finished_whole(resource: &ApiResource) -> bool {
        resource.api_version.is_empty() || resource.kind.is_empty()
    }

    /// Items that carry no type get the resource's.
    fn finish_fetched(
        fetched: FetchedList<Self, Error>,
        resource: &ApiResource,
    ) -> FetchedList<Self, Error> {
        let (api_version, kind) = (resource.api_version.clone(), resource.kind.clone());
        fetched.map(move |mut item| {
            fill_item_type(&mut item, &api_version, &kind);
            item
        })
    }

    fn refused(error: kclient_rest::Error, _: &ApiResource) -> Error {
        Error::Rest(error)
    }
}

/// Metadata only: the server converts its answers to `PartialObjectMetadata`, protobuf first
/// while the REST client speaks it (deletes in JSON); a `406` is
/// [`Error::MetadataNotAcceptable`].
impl sealed::View for PartialObjectMetadata {
    fn accept(request: Request, answer: Answer) -> Request {
        match answer {
            Answer::Object => request.negotiate(
                ACCEPT_PARTIAL_OBJECT_METADATA_PROTOBUF,
                ACCEPT_PARTIAL_OBJECT_METADATA,
            ),
            Answer::List => request.negotiate(
                ACCEPT_PARTIAL_OBJECT_METADATA_LIST_PROTOBUF,
                ACCEPT_PARTIAL_OBJECT_METADATA_LIST,
            ),
            Answer::Deleted => request.header("Accept", ACCEPT_PARTIAL_OBJECT_METADATA),
            Answer::DeletedList => request.header("Accept", ACCEPT_PARTIAL_OBJECT_METADATA_LIST),
        }
    }

    fn finish(self, _: &ApiResource) -> Self {
        self
    }

    fn finish_list(list: ObjectList<Self>, _: &ApiResource) -> ObjectList<Self> {
        list
    }

    fn finished_whole(_: &ApiResource) -> bool {
        false
    }

    fn finish_fetched(
        fetched: FetchedList<Self, Error>,
        _: &ApiResource,
    ) -> FetchedList<Self, Error> {
        fetched
    }

    fn refused(error: kclient_rest::Error, resource: &ApiResource) -> Error {
        if error.is_not_acceptable() {
            Error::MetadataNotAcceptable {
                resource: resource.gvr(),
                source: Box::new(error),
            }
        } else {
            Error::Rest(error)
        }
    }
}

/// Gives list items without `apiVersion` and `kind` the list's (its kind without the `List`
/// suffix), or else the resource's (client-go's `UnstructuredList` decoding).
fn fill_item_types(list: &mut ObjectList<DynamicObject>, resource: &ApiResource) {
    let (api_version, kind) = match &list.types {
        Some(t) if !t.api_version.is_empty() && !t.kind.is_empty() => (
            t.api_version.clone(),
            t.kind.strip_suffix("List").unwrap_or(&t.kind).to_owned(),
        ),
        _ => (resource.api_version.clone(), resource.kind.clone()),
    };
    for item in &mut list.items {
        fill_item_type(item, &api_version, &kind);
    }
}

/// Gives an item without any type field the list's type (an item with one keeps its own).
fn fill_item_type(item: &mut DynamicObject, api_version: &str, kind: &str) {
    if api_version.is_empty() || kind.is_empty() {
        return;
    }
    let untyped = item.types.is_none()
        && item.data.get("apiVersion").is_none()
        && item.data.get("kind").is_none();
    if untyped {
        item.types = Some(TypeMeta::new(api_version, kind));
    }
}

#[cfg(test)]
mod tests {
    use kclient_core::{ApiError, GroupVersionKind, Status, StatusReason};
    use serde_json::json;

    use super::sealed::View;
    use super::*;
    use crate::resource::tests::crontabs;

    #[test]
    fn list_items_get_the_list_type() {
        let mut list: ObjectList<DynamicObject> = serde_json::from_value(json!({
            "apiVersion": "stable.example.com/v1", "kind": "CronTabList",
            "metadata": {"resourceVersion": "5"},
            "items": [
                {"metadata": {"name": "a"}},
                {"apiVersion": "stable.example.com/v2", "kind": "CronTab", "metadata": {"name": "b"}}
            ]
        }))
        .unwrap();
        fill_item_types(&mut list, &ApiResource::default());
        assert_eq!(
            list.items[0].types,
            Some(TypeMeta::new("stable.example.com/v1", "CronTab"))
        );
        assert_eq!(
            list.items[1].types.as_ref().unwrap().api_version,
            "stable.example.com/v2",
            "items that carry their type keep it"
        );
    }

    #[test]
    fn list_items_fall_back_to_the_resource_type() {
        let mut list: ObjectList<DynamicObject> =
            serde_json::from_value(json!({"items": [{"metadata": {"name": "a"}}]})).unwrap();
        fill_item_types(&mut list, &ApiResource::default());
        assert_eq!(list.items[0].types, None, "nothing to fill from");
        fill_item_types(&mut list, &crontabs());
        assert_eq!(
            list.items[0].types,
            Some(TypeMeta::new("stable.example.com/v1", "CronTab"))
        );
    }

    #[test]
    fn watch_objects_get_the_resource_type() {
        let filled = DynamicObject::default().finish(&crontabs());
        assert_eq!(
            filled.types,
            Some(TypeMeta::new("stable.example.com/v1", "CronTab"))
        );
        let by_gvr = ApiResource {
            kind: String::new(),
            ..crontabs()
        };
        assert_eq!(DynamicObject::default().finish(&by_gvr).types, None);
    }

    #[test]
    fn a_406_names_the_resource_and_keeps_the_status() {
        let widgets = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::new("example.com", "v1", "Widget"),
            "widgets",
            true,
        );
        let status = Status::failure(
            StatusReason::NotAcceptable,
            406,
            "only the following media types are accepted: application/json",
        );
        let err = PartialObjectMetadata::refused(
            kclient_rest::Error::from(ApiError::from(status)),
            &widgets,
        );
        assert!(matches!(err, Error::MetadataNotAcceptable { .. }));
        assert!(err.is_not_acceptable());
        assert_eq!(
            err.to_string(),
            "the server refused to serve example.com/v1, Resource=widgets as PartialObjectMetadata (406 Not Acceptable)"
        );
        let source = std::error::Error::source(&err).unwrap().to_string();
        assert!(
            source.contains("only the following media types are accepted"),
            "{source}"
        );
        let other = PartialObjectMetadata::refused(
            kclient_rest::Error::from(ApiError::bad_request("x")),
            &widgets,
        );
        assert!(matches!(other, Error::Rest(_)));
        let whole = DynamicObject::refused(
            kclient_rest::Error::from(ApiError::bad_request("x")),
            &widgets,
        );
        assert!(matches!(whole, Error::Rest(_)));
    }
}
