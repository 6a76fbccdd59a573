//! Decoding an object without its `metadata.managedFields`: [`decode_object`].
//!
//! Server-side apply's field ownership (`managedFields`) is often the largest part of an
//! object's metadata — three entries of a Pod decode to some 20 KB of JSON values — and
//! controllers rarely read it; caches drop it (the informer factory does by default). Dropping
//! it *after* decoding still pays for building and freeing those values. [`decode_object`]
//! cuts the member out of the JSON text first ([`strip_managed_fields`]) and decodes the rest,
//! so nothing is built from it; the cut value is still checked to be JSON, so malformed input
//! is the same error it would be if decoded.
//!
//! The cut is made in the text, not by a filtering deserializer, so that every kind is decoded
//! by one `serde_json` deserializer (from a byte slice) whether managedFields are kept or not:
//! a filter wrapped around the deserializer would compile every type an object holds a second
//! time, for every kind a program decodes.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_core::managed_fields::decode_object;
//!
//! let json = br#"{"metadata":{"name":"a","managedFields":[{"manager":"kubectl"}],"labels":{"x":"y"}},"data":{"k":"v"}}"#;
//! let cm: ConfigMap = decode_object(json, true).unwrap();
//! assert_eq!(cm.metadata.name.as_deref(), Some("a"));
//! assert!(cm.metadata.managed_fields.is_none());
//! assert_eq!(cm.metadata.labels.unwrap()["x"], "y");
//! ```

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeOwned, Visitor};
use serde::{Deserialize, Deserializer};

use crate::json_text::Text;

/// Decodes one object from JSON text, without its `metadata.managedFields` (left `None`) if
/// `omit_managed_fields`. The whole text must be the object (trailing whitespace aside).
///
/// Decode errors are `serde_json`'s; when managedFields were cut out, a position after them
/// counts from the text without them.
pub fn decode_object<K: DeserializeOwned>(
    json: &[u8],
    omit_managed_fields: bool,
) -> Result<K, serde_json::Error> {
    if omit_managed_fields {
        serde_json::from_slice(&strip_managed_fields(json))
    } else {
        serde_json::from_slice(json)
    }
}

/// The JSON text of an object without the `managedFields` member of its `metadata` (the first
/// top-level `metadata` member, if it is an object), and the comma that separated it; the text
/// as it was (borrowed) when there is no such member, or when the text is not what it should
/// be up to there or a value before it ends is not JSON (the decoder then says what is wrong).
///
/// A `managedFields` key anywhere else (the top level, the spec, a label) stays; a key spelled
/// with escapes (`"manag\u0065dFields"`) is recognised.
///
/// ```
/// use kclient_core::managed_fields::strip_managed_fields;
///
/// let json = br#"{"kind":"Pod","metadata":{"name":"a","managedFields":[{"manager":"m"}],"uid":"u"}}"#;
/// assert_eq!(&*strip_managed_fields(json), br#"{"kind":"Pod","metadata":{"name":"a","uid":"u"}}"#);
/// ```
pub fn strip_managed_fields(json: &[u8]) -> Cow<'_, [u8]> {
    match managed_fields_span(json) {
        Some((start, end)) => {
            let mut out = Vec::with_capacity(json.len() - (end - start));
            out.extend_from_slice(&json[..start]);
            out.extend_from_slice(&json[end..]);
            Cow::Owned(out)
        }
        None => Cow::Borrowed(json),
    }
}

/// Where `metadata.managedFields` is, with one separating comma: `start..end` to cut out.
fn managed_fields_span(json: &[u8]) -> Option<(usize, usize)> {
    let mut text = Text::new(json);
    text.expect(b'{')?;
    if text.peek()? == b'}' {
        return None;
    }
    loop {
        let key = text.key()?;
        if text.peek()? == b'{' && key == "metadata" {
            return text.member_span("managedFields");
        }
        text.skip_value()?;
        match text.next()? {
            b',' => {}
            _ => return None,
        }
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
    /// dynamic and metadata-only objects.
    #[test]
    fn the_result_is_the_object_decoded_whole_minus_its_managed_fields() {
        let text = serde_json::to_vec(&pod_json()).unwrap();
        let mut whole: Pod = decode_object(&text, false).unwrap();
        assert!(whole.metadata.managed_fields.is_some());
        whole.metadata.managed_fields = None;
        assert_eq!(decode_object::<Pod>(&text, true).unwrap(), whole);

        let mut whole: DynamicObject = serde_json::from_slice(&text).unwrap();
        whole.metadata.managed_fields = None;
        let dynamic: DynamicObject = decode_object(&text, true).unwrap();
        assert_eq!(dynamic, whole);
        assert_eq!(
            dynamic.data["spec"]["containers"][0]["env"][0]["name"],
            "managedFields"
        );

        let meta: PartialObjectMetadata = decode_object(&text, true).unwrap();
        assert_eq!(meta.metadata.name.as_deref(), Some("web"));
        assert!(meta.metadata.managed_fields.is_none());
    }

    /// Only `metadata.managedFields` goes: a `managedFields` key anywhere else (the top level,
    /// inside the spec, in a label) is decoded as usual; escaped keys are recognised.
    #[test]
    fn only_metadata_managed_fields_is_skipped() {
        let text = br#"{"managedFields":{"kept":true},"metadata":{"name":"a","labels":{"managedFields":"v"},"manag\u0065dFields":[{"manager":"m"}]},"spec":{"managedFields":[1]}}"#;
        let obj: DynamicObject = decode_object(text, true).unwrap();
        assert!(obj.metadata.managed_fields.is_none());
        assert_eq!(obj.metadata.labels.unwrap()["managedFields"], "v");
        assert_eq!(obj.data["managedFields"], json!({"kept": true}));
        assert_eq!(obj.data["spec"]["managedFields"], json!([1]));
    }

    /// The member goes with one comma wherever it stands, whitespace or not.
    #[test]
    fn the_member_is_cut_with_one_comma() {
        for (json, want) in [
            (r#"{"metadata":{"managedFields":[]}}"#, r#"{"metadata":{}}"#),
            (r#"{"metadata":{"managedFields":[],"a":1}}"#, r#"{"metadata":{"a":1}}"#),
            (r#"{"metadata":{"a":1,"managedFields":[]}}"#, r#"{"metadata":{"a":1}}"#),
            (r#"{"metadata":{"a":1,"managedFields":[],"b":2}}"#, r#"{"metadata":{"a":1,"b":2}}"#),
            (
                "{ \"kind\" : \"X\" , \"metadata\" : { \"a\" : \"}\" , \"managedFields\" : [ {\"x\":\"]\"} ] } }",
                "{ \"kind\" : \"X\" , \"metadata\" : { \"a\" : \"}\"  } }",
            ),
            (r#"{"metadata":{"a":1}}"#, r#"{"metadata":{"a":1}}"#),
            (r#"{"metadata":null,"managedFields":[]}"#, r#"{"metadata":null,"managedFields":[]}"#),
            (r#"{}"#, r#"{}"#),
        ] {
            let stripped = strip_managed_fields(json.as_bytes());
            assert_eq!(std::str::from_utf8(&stripped).unwrap(), want, "{json}");
            let value: serde_json::Value = serde_json::from_slice(&stripped).unwrap();
            assert!(value["metadata"].get("managedFields").is_none(), "{json}");
        }
    }

    /// The cut value is still checked: malformed JSON there is an error, as it would be if
    /// decoded; a type error in it is not (nothing is built from it). Text that is not an
    /// object, or is cut short, is left to the decoder.
    #[test]
    fn malformed_json_in_the_skipped_value_is_still_an_error() {
        let bad = br#"{"metadata":{"name":"a","managedFields":[{"manager":}]}}"#;
        assert!(decode_object::<Pod>(bad, true).is_err());
        let mismatched = br#"{"metadata":{"managedFields":[1},"name":"a"}}"#;
        assert!(decode_object::<Pod>(mismatched, true).is_err());
        let wrong_type = br#"{"metadata":{"name":"a","managedFields":"not a list"}}"#;
        assert!(decode_object::<Pod>(wrong_type, false).is_err());
        let pod: Pod = decode_object(wrong_type, true).unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("a"));
        // Errors elsewhere are the type's own, with their position.
        let err = decode_object::<Pod>(br#"{"metadata":{"name":5}}"#, true).unwrap_err();
        assert!(
            err.to_string().contains("invalid type: integer `5`"),
            "{err}"
        );
        assert_eq!(err.column(), 21, "{err}");
        for text in [
            &b""[..],
            b"[",
            b"{",
            b"{\"metadata\":{\"managedFields\":[",
            b"\"x\"",
            b"{\"a\\",
        ] {
            assert!(matches!(strip_managed_fields(text), Cow::Borrowed(_)));
            assert!(decode_object::<DynamicObject>(text, true).is_err());
        }
    }

    /// Cut at every length, the text never makes the scan panic.
    #[test]
    fn every_prefix_is_handled() {
        let text = serde_json::to_vec(&pod_json()).unwrap();
        for end in 0..=text.len() {
            let _ = strip_managed_fields(&text[..end]);
        }
    }
}
