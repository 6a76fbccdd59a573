//! A typed object as a [`serde_json::Value`]: [`to_value`].
//!
//! `serde_json::to_value` drives a type's `Serialize` with a serializer of its own, so a
//! program that both sends an object (as JSON text, as every request does) and compares or
//! edits it as a `Value` compiles the serialization of the object and of every type it holds
//! twice — for a Pod, some hundred types. [`to_value`] writes the text with the serializer the
//! requests use and parses it back (`Value`'s parser is compiled once for all types): one
//! `Serialize` per type per program, for a parse that costs little beside a request.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_core::json_value::to_value;
//!
//! let cm = ConfigMap { data: Some([("k".to_owned(), "v".to_owned())].into()), ..Default::default() };
//! assert_eq!(
//!     to_value(&cm).unwrap(),
//!     serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}, "data": {"k": "v"}})
//! );
//! ```

use serde::Serialize;
use serde_json::Value;

/// `value` as a JSON value: the same value `serde_json::to_value` gives for any type whose
/// text form round-trips (every Kubernetes type does), by way of its JSON text.
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, serde_json::Error> {
    serde_json::from_slice(&serde_json::to_vec(value)?)
}

#[cfg(test)]
mod tests {
    use super::to_value;
    use serde_json::json;

    #[test]
    fn the_value_is_serde_jsons() {
        let cases = [
            json!({"a": [1, -2, 2.5, 1e300, u64::MAX, i64::MIN], "b": null, "c": {"d": "é\n\""}}),
            json!("x"),
            json!(0.0),
        ];
        for case in cases {
            assert_eq!(
                to_value(&case).unwrap(),
                serde_json::to_value(&case).unwrap()
            );
        }
        let map: std::collections::BTreeMap<u32, bool> = [(3, true)].into();
        assert_eq!(to_value(&map).unwrap(), serde_json::to_value(&map).unwrap());
    }
}
