//! CRD conversion, hub and spoke (controller-runtime's `conversion.Hub`/`Convertible`): one
//! version is the hub, every other version converts to and from it (`TryFrom` both ways; a
//! `From` gives one), so `n` versions need `2(n-1)` conversions, not `n(n-1)`.
//!
//! ```
//! use kclient_webhook::conversion::Conversion;
//! # mod v1 { #[derive(Clone, serde::Serialize, serde::Deserialize)] pub struct Widget { pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, pub size: i32 }
//! #   impl k8s_openapi::Resource for Widget { const API_VERSION: &'static str = "example.com/v1"; const GROUP: &'static str = "example.com"; const KIND: &'static str = "Widget"; const VERSION: &'static str = "v1"; const URL_PATH_SEGMENT: &'static str = "widgets"; type Scope = k8s_openapi::NamespaceResourceScope; }
//! #   impl k8s_openapi::Metadata for Widget { type Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta; fn metadata(&self) -> &Self::Ty { &self.metadata } fn metadata_mut(&mut self) -> &mut Self::Ty { &mut self.metadata } } }
//! # mod v2 { #[derive(Clone, serde::Serialize, serde::Deserialize)] pub struct Widget { pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, pub width: i32, pub height: i32 }
//! #   impl k8s_openapi::Resource for Widget { const API_VERSION: &'static str = "example.com/v2"; const GROUP: &'static str = "example.com"; const KIND: &'static str = "Widget"; const VERSION: &'static str = "v2"; const URL_PATH_SEGMENT: &'static str = "widgets"; type Scope = k8s_openapi::NamespaceResourceScope; }
//! #   impl k8s_openapi::Metadata for Widget { type Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta; fn metadata(&self) -> &Self::Ty { &self.metadata } fn metadata_mut(&mut self) -> &mut Self::Ty { &mut self.metadata } } }
//! // v2 is the hub; v1 converts to and from it.
//! impl From<v1::Widget> for v2::Widget {
//!     fn from(w: v1::Widget) -> Self { v2::Widget { metadata: w.metadata, width: w.size, height: w.size } }
//! }
//! impl From<v2::Widget> for v1::Widget {
//!     fn from(w: v2::Widget) -> Self { v1::Widget { metadata: w.metadata, size: w.width.max(w.height) } }
//! }
//! let conversion = Conversion::<v2::Widget>::hub().spoke::<v1::Widget>();
//! let v2 = conversion
//!     .convert(&serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "size": 3}), "example.com/v2")
//!     .unwrap();
//! assert_eq!((v2["width"].as_i64(), v2["height"].as_i64()), (Some(3), Some(3)));
//! ```

use std::collections::BTreeMap;
use std::fmt::Display;
use std::marker::PhantomData;
use std::sync::Arc;

use kclient_core::conversion::{ConversionRequest, ConversionResponse};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// Why an object could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConversionError {
    /// The object has no `apiVersion`, or one this conversion does not know.
    #[error("unknown apiVersion {0:?}: this conversion knows {1}")]
    UnknownVersion(String, String),
    /// The object does not decode as its version's type.
    #[error("cannot decode {api_version} {name}: {message}")]
    Decode {
        /// Its version.
        api_version: String,
        /// Its name.
        name: String,
        /// Why.
        message: String,
    },
    /// The user's conversion refused it.
    #[error("cannot convert {name} from {from} to {to}: {message}")]
    Convert {
        /// Its name.
        name: String,
        /// The version it is in.
        from: String,
        /// The version asked for.
        to: String,
        /// The conversion's error.
        message: String,
    },
}

type ToHub = dyn Fn(Value) -> Result<Value, String> + Send + Sync;
type FromHub = dyn Fn(Value) -> Result<Value, String> + Send + Sync;

/// A version's way to and from the hub, on JSON.
#[derive(Clone)]
struct Version {
    to_hub: Arc<ToHub>,
    from_hub: Arc<FromHub>,
}

/// The conversions of one kind's versions through the hub version `H`.
pub struct Conversion<H> {
    hub: String,
    versions: BTreeMap<String, Version>,
    _hub: PhantomData<fn() -> H>,
}

impl<H> Clone for Conversion<H> {
    fn clone(&self) -> Self {
        Self {
            hub: self.hub.clone(),
            versions: self.versions.clone(),
            _hub: PhantomData,
        }
    }
}

impl<H> std::fmt::Debug for Conversion<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversion")
            .field("hub", &self.hub)
            .field("versions", &self.versions.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// `value` decoded as `T`.
fn decode<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// `value` as JSON, with its own `apiVersion` and `kind` (a type that does not write them is
/// given them).
fn encode<T: Serialize + k8s_openapi::Resource>(value: &T) -> Result<Value, String> {
    let mut json = kclient_core::json_value::to_value(value).map_err(|e| e.to_string())?;
    if let Value::Object(map) = &mut json {
        map.insert("apiVersion".into(), T::API_VERSION.into());
        map.insert("kind".into(), T::KIND.into());
    }
    Ok(json)
}

impl<H> Conversion<H>
where
    H: k8s_openapi::Resource + Serialize + DeserializeOwned + 'static,
{
    /// A conversion whose hub is `H` (every other version converts through it).
    pub fn hub() -> Self {
        let identity = Version {
            to_hub: Arc::new(|v| encode(&decode::<H>(v)?)),
            from_hub: Arc::new(|v| encode(&decode::<H>(v)?)),
        };
        Self {
            hub: H::API_VERSION.to_owned(),
            versions: BTreeMap::from([(H::API_VERSION.to_owned(), identity)]),
            _hub: PhantomData,
        }
    }

    /// Adds version `S`, converted to the hub with `H: TryFrom<S>` and back with
    /// `S: TryFrom<H>` (a `From` implementation is one).
    pub fn spoke<S>(mut self) -> Self
    where
        S: k8s_openapi::Resource + Serialize + DeserializeOwned + TryFrom<H> + 'static,
        H: TryFrom<S>,
        <S as TryFrom<H>>::Error: Display,
        <H as TryFrom<S>>::Error: Display,
    {
        let version = Version {
            to_hub: Arc::new(|v| {
                let spoke = decode::<S>(v)?;
                let hub = H::try_from(spoke).map_err(|e| e.to_string())?;
                encode(&hub)
            }),
            from_hub: Arc::new(|v| {
                let hub = decode::<H>(v)?;
                let spoke = S::try_from(hub).map_err(|e| e.to_string())?;
                encode(&spoke)
            }),
        };
        self.versions.insert(S::API_VERSION.to_owned(), version);
        self
    }

    /// The versions this conversion knows (`apiVersion`s).
    pub fn versions(&self) -> impl Iterator<Item = &str> {
        self.versions.keys().map(String::as_str)
    }

    /// `object` in `desired` (an `apiVersion`). Its metadata stays the object's (the API
    /// server refuses a conversion that changes more than labels and annotations).
    pub fn convert(&self, object: &Value, desired: &str) -> Result<Value, ConversionError> {
        let from = object["apiVersion"].as_str().unwrap_or_default().to_owned();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if from == desired {
            return Ok(object.clone());
        }
        let known = || self.versions().collect::<Vec<_>>().join(", ");
        let source = self
            .versions
            .get(&from)
            .ok_or_else(|| ConversionError::UnknownVersion(from.clone(), known()))?;
        let target = self
            .versions
            .get(desired)
            .ok_or_else(|| ConversionError::UnknownVersion(desired.to_owned(), known()))?;
        let refused = |message: String| ConversionError::Convert {
            name: name.clone(),
            from: from.clone(),
            to: desired.to_owned(),
            message,
        };
        let hub = (source.to_hub)(object.clone()).map_err(&refused)?;
        let mut converted = (target.from_hub)(hub).map_err(&refused)?;
        keep_metadata(object, &mut converted);
        Ok(converted)
    }

    /// The answer to `request`: every object converted, or a failure naming the first one
    /// that could not be (the API server fails the whole request then).
    pub fn review(&self, request: &ConversionRequest) -> ConversionResponse {
        let converted: Result<Vec<Value>, ConversionError> = request
            .objects
            .iter()
            .map(|o| self.convert(o, &request.desired_api_version))
            .collect();
        match converted {
            Ok(objects) => ConversionResponse::success(&request.uid, objects),
            Err(e) => {
                tracing::warn!(uid = %request.uid, error = %e, "conversion failed");
                ConversionResponse::failure(&request.uid, e.to_string())
            }
        }
    }
}

/// The converted object keeps the original's metadata. A conversion may change labels and
/// annotations (the API server allows that much): when the converted object carries the
/// metadata on (its name is the original's), its labels and annotations are taken; a
/// conversion that dropped the metadata keeps the original's whole.
fn keep_metadata(original: &Value, converted: &mut Value) {
    let Some(mut metadata) = original.get("metadata").cloned() else {
        return;
    };
    let carried = converted
        .get("metadata")
        .filter(|m| m.get("name").is_some() && m.get("name") == metadata.get("name"));
    if let (Value::Object(kept), Some(Value::Object(new))) = (&mut metadata, carried) {
        for key in ["labels", "annotations"] {
            match new.get(key) {
                Some(v) => {
                    kept.insert(key.into(), v.clone());
                }
                None => {
                    kept.remove(key);
                }
            }
        }
    }
    if let Value::Object(map) = converted {
        map.insert("metadata".into(), metadata);
    }
}
