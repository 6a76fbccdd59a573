//! Which types have a codec: looked up by Rust type (a client of `K` asks whether it can
//! speak protobuf) and by `apiVersion` and `kind` (a server turning stored JSON into protobuf).
//!
//! The entries are generated (a `kinds!` list in each version's module: every k8s-openapi
//! type that implements `k8s_openapi::Resource`, each under its API group's cargo feature)
//! plus kclient-core's `PartialObjectMetadata`. A lookup scans about a hundred entries
//! comparing `TypeId`s; clients do it once, when they are made.
//!
//! The two lookups read two tables of the same codecs, so that a program that only looks up
//! by Rust type (a client) links no kind's conversion from and to JSON: those are reached
//! only through [`by_kind`]'s table, which a server uses.
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_protobuf::registry;
//!
//! let pods = registry::codec::<Pod>().expect("a built-in kind");
//! assert_eq!((pods.api_version(), pods.kind()), ("v1", "Pod"));
//! assert!(registry::codec::<serde_json::Value>().is_none());
//! assert!(registry::by_kind("apps/v1", "Deployment").is_some());
//! ```

use std::any::Any;

#[cfg(feature = "encode")]
use serde::de::DeserializeOwned;
#[cfg(feature = "encode")]
use serde::Serialize;

use crate::envelope;
#[cfg(feature = "encode")]
use crate::wire::Encode;
use crate::wire::{Ctx, Decode, DecodeError};
use crate::Message;

/// The protobuf codec of one kind: its `apiVersion` and `kind` (the envelope's type) and the
/// message's decoder and encoder.
pub struct Codec<K> {
    api_version: &'static str,
    kind: &'static str,
    decode: fn(&[u8], Ctx) -> Result<K, DecodeError>,
    #[cfg(feature = "encode")]
    encoded_len: fn(&K) -> usize,
    #[cfg(feature = "encode")]
    encode_raw: fn(&K, &mut Vec<u8>),
    fit: fn(&mut K),
}

impl<K> std::fmt::Debug for Codec<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Codec")
            .field("api_version", &self.api_version)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl<K: Message> Codec<K> {
    /// The codec of `K`'s message, sent in an envelope typed `api_version`, `kind`.
    pub const fn new(api_version: &'static str, kind: &'static str) -> Self {
        Self {
            api_version,
            kind,
            decode: <K as Decode>::decode,
            #[cfg(feature = "encode")]
            encoded_len: <K as Encode>::encoded_len,
            #[cfg(feature = "encode")]
            encode_raw: |k, buf| k.encode_raw(buf),
            fit: <K as Message>::fit,
        }
    }
}

impl<K: Message + k8s_openapi::Resource> Codec<K> {
    /// The codec of a k8s-openapi kind, typed with its `API_VERSION` and `KIND`.
    pub const RESOURCE: Self = Self::new(K::API_VERSION, K::KIND);
}

impl<K> Codec<K> {
    /// The envelope's `apiVersion` (`apps/v1`).
    pub fn api_version(&self) -> &'static str {
        self.api_version
    }

    /// The envelope's `kind` (`Deployment`).
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Decodes the bare message (no magic, no envelope: a list's item).
    pub fn decode_message(&self, raw: &[u8], ctx: Ctx) -> Result<K, DecodeError> {
        (self.decode)(raw, ctx)
    }

    /// Decodes a whole body: the magic, the envelope (whose kind must be this codec's), the
    /// message.
    pub fn decode_body(&self, body: &[u8], ctx: Ctx) -> Result<K, DecodeError> {
        envelope::decode_object_with(body, self.kind, ctx, self.decode)
    }

    /// The function that gives back, in place, the capacity an object's lists do not use
    /// (`Message::fit`): what an object decoded by serde needs to be as small as one the
    /// codec decoded.
    pub fn fitter(&self) -> fn(&mut K) {
        self.fit
    }

    /// The bare message's bytes.
    #[cfg(feature = "encode")]
    pub fn encode_message(&self, object: &K) -> Vec<u8> {
        let mut out = Vec::with_capacity((self.encoded_len)(object));
        (self.encode_raw)(object, &mut out);
        out
    }

    /// A whole body: magic, envelope, message (what kube-apiserver writes).
    #[cfg(feature = "encode")]
    pub fn encode_body(&self, object: &K) -> Vec<u8> {
        let raw_len = (self.encoded_len)(object);
        envelope::encode_envelope_with(self.api_version, self.kind, raw_len, |out| {
            (self.encode_raw)(object, out)
        })
    }
}

/// A codec whose Rust type is erased: what a server needs to answer in protobuf for objects
/// it holds as JSON, and to read protobuf bodies into JSON (with the `encode` feature).
#[cfg(feature = "encode")]
pub trait Entry: Any + Sync {
    /// The envelope's `apiVersion`.
    fn api_version(&self) -> &'static str;
    /// The envelope's `kind`.
    fn kind(&self) -> &'static str;
    /// The bare message of a JSON object of this kind.
    fn json_to_message(&self, json: &serde_json::Value) -> Result<Vec<u8>, serde_json::Error>;
    /// A bare message of this kind as JSON (with `apiVersion` and `kind`).
    fn message_to_json(&self, raw: &[u8]) -> Result<serde_json::Value, DecodeError>;
}

#[cfg(feature = "encode")]
impl<K> Entry for Codec<K>
where
    K: Serialize + DeserializeOwned + 'static,
{
    fn api_version(&self) -> &'static str {
        self.api_version
    }

    fn kind(&self) -> &'static str {
        self.kind
    }

    fn json_to_message(&self, json: &serde_json::Value) -> Result<Vec<u8>, serde_json::Error> {
        let object = K::deserialize(json)?;
        Ok(self.encode_message(&object))
    }

    fn message_to_json(&self, raw: &[u8]) -> Result<serde_json::Value, DecodeError> {
        let object = self.decode_message(raw, Ctx::default())?;
        serde_json::to_value(&object)
            .map_err(|e| DecodeError::new(format!("{}: cannot write as JSON: {e}", self.kind)))
    }
}

/// kclient-core's `PartialObjectMetadata` (`meta.k8s.io/v1`): what the metadata client gets.
static PARTIAL_OBJECT_METADATA: Codec<kclient_core::PartialObjectMetadata> = Codec::new(
    kclient_core::PartialObjectMetadata::API_VERSION,
    kclient_core::PartialObjectMetadata::KIND,
);

/// Declares the codecs of the kinds listed (each may carry `#[cfg(…)]`): `CODECS`, each as
/// `Any` for [`codec`], and `ENTRIES`, each as an [`Entry`] for [`by_kind`].
macro_rules! kinds {
    ($($(#[$cfg:meta])* $kind:ty,)*) => {
        /// Every kind's codec, for a lookup by Rust type.
        pub(crate) static CODECS: &[&(dyn std::any::Any + Send + Sync)] = &[
            $($(#[$cfg])* &crate::registry::Codec::<$kind>::RESOURCE,)*
        ];
        /// Every kind's codec with its JSON conversions, for a lookup by `apiVersion` and
        /// `kind`.
        #[cfg(feature = "encode")]
        pub(crate) static ENTRIES: &[&dyn crate::registry::Entry] = &[
            $($(#[$cfg])* &crate::registry::Codec::<$kind>::RESOURCE,)*
        ];
    };
}
pub(crate) use kinds;

/// The codec of `K`, if it is a built-in kind of an API group compiled in (or kclient-core's
/// `PartialObjectMetadata`); `None` for custom resources, `DynamicObject`, kinds of groups
/// whose feature is off, and anything else, which stay JSON.
pub fn codec<K: 'static>() -> Option<&'static Codec<K>> {
    if let Some(pom) = (&PARTIAL_OBJECT_METADATA as &dyn Any).downcast_ref::<Codec<K>>() {
        return Some(pom);
    }
    crate::generated::CODECS
        .iter()
        .find_map(|codec| codec.downcast_ref::<Codec<K>>())
}

/// The codec of the kind `kind` in `api_version` (`"apps/v1"`, `"Deployment"`), among the
/// API groups compiled in (with the `encode` feature: a server's lookup).
#[cfg(feature = "encode")]
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static dyn Entry> {
    crate::generated::ENTRIES
        .iter()
        .copied()
        .chain(std::iter::once(&PARTIAL_OBJECT_METADATA as &dyn Entry))
        .find(|e| e.api_version() == api_version && e.kind() == kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Status};

    #[test]
    fn kinds_have_codecs_and_parts_do_not() {
        assert!(codec::<ConfigMap>().is_some());
        assert!(codec::<Deployment>().is_some());
        assert!(codec::<Status>().is_some());
        assert!(codec::<kclient_core::PartialObjectMetadata>().is_some());
        // A part of a kind is reached through its kind, never looked up.
        assert!(codec::<PodSpec>().is_none());
        assert!(codec::<kclient_core::DynamicObject>().is_none());
        assert!(by_kind("v1", "Deployment").is_none());
        assert_eq!(by_kind("v1", "Status").map(|e| e.kind()), Some("Status"));
    }

    #[test]
    fn a_body_round_trips_and_its_kind_is_checked() {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some("a".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let codec = codec::<ConfigMap>().unwrap();
        let body = codec.encode_body(&cm);
        assert_eq!(body, envelope::encode_envelope("v1", "ConfigMap", &cm));
        assert_eq!(codec.decode_body(&body, Ctx::default()).unwrap(), cm);
        let other = envelope::encode_envelope("v1", "Secret", &cm);
        let err = codec.decode_body(&other, Ctx::default()).unwrap_err();
        assert!(err.to_string().contains("expected a ConfigMap"), "{err}");
    }

    #[test]
    fn an_entry_converts_json_both_ways() {
        let entry = by_kind("apps/v1", "Deployment").unwrap();
        let json = serde_json::json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
        });
        let raw = entry.json_to_message(&json).unwrap();
        let back = entry.message_to_json(&raw).unwrap();
        // Go writes its non-pointer structs even when empty, and so does kube-apiserver's JSON
        // (`"strategy": {}`, `"resources": {}`): the rest is what was sent.
        assert_eq!(back["spec"]["strategy"], serde_json::json!({}));
        assert_eq!(back["metadata"], json["metadata"]);
        assert_eq!(back["spec"]["replicas"], 3);
        assert_eq!(entry.json_to_message(&back).unwrap(), raw);
        assert!(entry
            .json_to_message(&serde_json::json!({"spec": "nope"}))
            .is_err());
    }
}
