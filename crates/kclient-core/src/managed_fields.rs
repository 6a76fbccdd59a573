//! Decoding an object without its `metadata.managedFields`: [`WithoutManagedFields`].
//!
//! Server-side apply's field ownership (`managedFields`) is often the largest part of an
//! object's metadata — three entries of a Pod decode to some 20 KB of JSON values — and
//! controllers rarely read it; caches drop it (the informer factory does by default). Dropping
//! it *after* decoding still pays for building and freeing those values. This decodes any
//! object type while skipping that one value in the input, the way `#[serde(skip)]` would, with
//! no change to the type: the JSON is still checked, only nothing is built from it.
//!
//! The filter sits only where it is needed: between the object's top-level keys (to find
//! `metadata`) and between `metadata`'s keys (to skip `managedFields`). Every other value (the
//! spec, the status) is handed to the type's own decoder directly.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_core::WithoutManagedFields;
//!
//! let json = r#"{"metadata":{"name":"a","managedFields":[{"manager":"kubectl"}],"labels":{"x":"y"}},"data":{"k":"v"}}"#;
//! let WithoutManagedFields(cm) = serde_json::from_str::<WithoutManagedFields<ConfigMap>>(json).unwrap();
//! assert_eq!(cm.metadata.name.as_deref(), Some("a"));
//! assert!(cm.metadata.managed_fields.is_none());
//! assert_eq!(cm.metadata.labels.unwrap()["x"], "y");
//! ```

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{BorrowedStrDeserializer, CowStrDeserializer};
use serde::de::{
    DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde::Deserialize;

/// An object decoded without `metadata.managedFields` (which is left `None`); see the
/// [module](self).
#[derive(Debug, Clone, PartialEq)]
pub struct WithoutManagedFields<K>(pub K);

impl<K> WithoutManagedFields<K> {
    /// The object.
    pub fn into_inner(self) -> K {
        self.0
    }
}

impl<'de, K: Deserialize<'de>> Deserialize<'de> for WithoutManagedFields<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        K::deserialize(Filter {
            inner: deserializer,
            level: Level::Object,
        })
        .map(WithoutManagedFields)
    }
}

/// A seed decoding `K`, without `metadata.managedFields` when `omit_managed_fields` is set
/// (the items of a list and the objects of watch events).
pub(crate) struct ObjectSeed<K> {
    omit_managed_fields: bool,
    _kind: PhantomData<fn() -> K>,
}

impl<K> ObjectSeed<K> {
    /// A seed that skips managedFields if `omit_managed_fields`.
    pub(crate) fn new(omit_managed_fields: bool) -> Self {
        Self {
            omit_managed_fields,
            _kind: PhantomData,
        }
    }
}

impl<K> Clone for ObjectSeed<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for ObjectSeed<K> {}

impl<'de, K: Deserialize<'de>> DeserializeSeed<'de> for ObjectSeed<K> {
    type Value = K;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<K, D::Error> {
        if self.omit_managed_fields {
            WithoutManagedFields::<K>::deserialize(deserializer)
                .map(WithoutManagedFields::into_inner)
        } else {
            K::deserialize(deserializer)
        }
    }
}

/// Where in the object a filtered map is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// The object's top level: `metadata`'s value is filtered.
    Object,
    /// `metadata`: `managedFields` is skipped.
    Metadata,
}

/// A deserializer whose maps are filtered at `level`; anything else passes through.
struct Filter<D> {
    inner: D,
    level: Level,
}

macro_rules! forward_to_inner {
    ($($method:ident ( $($arg:ident : $ty:ty),* );)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.inner.$method($($arg,)* FilterVisitor { inner: visitor, level: self.level })
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Filter<D> {
    type Error = D::Error;

    forward_to_inner! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// Wraps the visitor so that a map it is given is filtered.
struct FilterVisitor<V> {
    inner: V,
    level: Level,
}

macro_rules! forward_visit {
    ($($method:ident ( $ty:ty );)*) => {
        $(
            fn $method<E: serde::de::Error>(self, v: $ty) -> Result<Self::Value, E> {
                self.inner.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for FilterVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit! {
        visit_bool(bool);
        visit_i8(i8);
        visit_i16(i16);
        visit_i32(i32);
        visit_i64(i64);
        visit_i128(i128);
        visit_u8(u8);
        visit_u16(u16);
        visit_u32(u32);
        visit_u64(u64);
        visit_u128(u128);
        visit_f32(f32);
        visit_f64(f64);
        visit_char(char);
        visit_str(&str);
        visit_borrowed_str(&'de str);
        visit_string(String);
        visit_bytes(&[u8]);
        visit_borrowed_bytes(&'de [u8]);
        visit_byte_buf(Vec<u8>);
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(Filter {
            inner: deserializer,
            level: self.level,
        })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(Filter {
            inner: deserializer,
            level: self.level,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        // The filtered maps are objects, never arrays: an array here is not an object's
        // top level nor its metadata, and passes through.
        self.inner.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_map(FilterMap {
            inner: map,
            level: self.level,
            next_value: None,
        })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_enum(data)
    }
}

/// A map whose keys are read first, so that `managedFields` can be skipped and `metadata`'s
/// value filtered.
struct FilterMap<A> {
    inner: A,
    level: Level,
    /// The level the next value is filtered at, if at all.
    next_value: Option<Level>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for FilterMap<A> {
    type Error = A::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        loop {
            let Some(Key(key)) = self.inner.next_key::<Key<'de>>()? else {
                return Ok(None);
            };
            match (self.level, key.as_ref()) {
                (Level::Metadata, "managedFields") => {
                    self.inner.next_value::<IgnoredAny>()?;
                    continue;
                }
                (Level::Object, "metadata") => self.next_value = Some(Level::Metadata),
                _ => self.next_value = None,
            }
            return match key {
                Cow::Borrowed(key) => seed.deserialize(BorrowedStrDeserializer::new(key)),
                owned @ Cow::Owned(_) => seed.deserialize(CowStrDeserializer::new(owned)),
            }
            .map(Some);
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        match self.next_value.take() {
            Some(level) => self
                .inner
                .next_value_seed(FilterSeed { inner: seed, level }),
            None => self.inner.next_value_seed(seed),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// A seed whose deserializer is filtered at `level`.
struct FilterSeed<S> {
    inner: S,
    level: Level,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for FilterSeed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(Filter {
            inner: deserializer,
            level: self.level,
        })
    }
}

/// A map key (or any string), borrowed from the input when it has no escapes.
pub(crate) struct Key<'de>(pub(crate) Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor<'de>(PhantomData<&'de ()>);
        impl<'de> Visitor<'de> for KeyVisitor<'de> {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map key")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use super::*;
    use crate::{DynamicObject, PartialObjectMetadata};

    fn pod_json() -> serde_json::Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "web",
                "namespace": "prod",
                "labels": {"app": "web"},
                "managedFields": [
                    {"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}}},
                ],
                "resourceVersion": "7",
            },
            "spec": {"containers": [{"name": "c", "image": "nginx", "env": [{"name": "managedFields", "value": "x"}]}]},
            "status": {"phase": "Running"},
        })
    }

    /// Decoding without managedFields equals decoding whole and dropping them, for typed,
    /// dynamic and metadata-only objects, from bytes and from a `Value`.
    #[test]
    fn the_result_is_the_object_decoded_whole_minus_its_managed_fields() {
        let text = serde_json::to_string(&pod_json()).unwrap();
        let mut whole: Pod = serde_json::from_str(&text).unwrap();
        assert!(whole.metadata.managed_fields.is_some());
        whole.metadata.managed_fields = None;
        let WithoutManagedFields(pod): WithoutManagedFields<Pod> =
            serde_json::from_str(&text).unwrap();
        assert_eq!(pod, whole);
        let WithoutManagedFields(from_value): WithoutManagedFields<Pod> =
            serde_json::from_value(pod_json()).unwrap();
        assert_eq!(from_value, whole);

        let mut whole: DynamicObject = serde_json::from_str(&text).unwrap();
        whole.metadata.managed_fields = None;
        let WithoutManagedFields(dynamic): WithoutManagedFields<DynamicObject> =
            serde_json::from_str(&text).unwrap();
        assert_eq!(dynamic, whole);
        assert_eq!(
            dynamic.data["spec"]["containers"][0]["env"][0]["name"],
            "managedFields"
        );

        let WithoutManagedFields(meta): WithoutManagedFields<PartialObjectMetadata> =
            serde_json::from_str(&text).unwrap();
        assert_eq!(meta.metadata.name.as_deref(), Some("web"));
        assert!(meta.metadata.managed_fields.is_none());
    }

    /// Only `metadata.managedFields` goes: a `managedFields` key anywhere else (the top level,
    /// inside the spec, in a label) is decoded as usual; escaped keys are recognised.
    #[test]
    fn only_metadata_managed_fields_is_skipped() {
        let text = r#"{"managedFields":{"kept":true},"metadata":{"name":"a","labels":{"managedFields":"v"},"manag\u0065dFields":[{"manager":"m"}]},"spec":{"managedFields":[1]}}"#;
        let WithoutManagedFields(obj): WithoutManagedFields<DynamicObject> =
            serde_json::from_str(text).unwrap();
        assert!(obj.metadata.managed_fields.is_none());
        assert_eq!(obj.metadata.labels.unwrap()["managedFields"], "v");
        assert_eq!(obj.data["managedFields"], json!({"kept": true}));
        assert_eq!(obj.data["spec"]["managedFields"], json!([1]));
    }

    /// The skipped value is still checked: malformed JSON there is an error, as it would be
    /// if decoded; a type error in it is not (nothing is built from it).
    #[test]
    fn malformed_json_in_the_skipped_value_is_still_an_error() {
        let bad = r#"{"metadata":{"name":"a","managedFields":[{"manager":}]}}"#;
        assert!(serde_json::from_str::<WithoutManagedFields<Pod>>(bad).is_err());
        let wrong_type = r#"{"metadata":{"name":"a","managedFields":"not a list"}}"#;
        assert!(serde_json::from_str::<Pod>(wrong_type).is_err());
        let WithoutManagedFields(pod) =
            serde_json::from_str::<WithoutManagedFields<Pod>>(wrong_type).unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("a"));
        // Errors elsewhere are the type's own, with their position.
        let err = serde_json::from_str::<WithoutManagedFields<Pod>>(r#"{"metadata":{"name":5}}"#)
            .unwrap_err();
        assert!(
            err.to_string().contains("invalid type: integer `5`"),
            "{err}"
        );
        assert_eq!(err.column(), 21, "{err}");
    }

    #[test]
    fn the_object_seed_honours_the_flag() {
        let text = serde_json::to_string(&pod_json()).unwrap();
        let mut de = serde_json::Deserializer::from_str(&text);
        let kept: Pod = ObjectSeed::new(false).deserialize(&mut de).unwrap();
        assert!(kept.metadata.managed_fields.is_some());
        let mut de = serde_json::Deserializer::from_str(&text);
        let omitted: Pod = ObjectSeed::new(true).deserialize(&mut de).unwrap();
        assert!(omitted.metadata.managed_fields.is_none());
    }
}
