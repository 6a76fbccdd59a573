//! Converting custom resources between the versions of their CRD: with the `None` strategy
//! ([`crate::registry::for_version`]: the `apiVersion` changes, the object is pruned by the
//! target version's schema), or, for a CRD with `spec.conversion.strategy: Webhook`, through
//! its webhook, as apiextensions-apiserver's `webhookConverter` does: a `ConversionReview`
//! (`v1`, or `v1beta1` for a webhook that names only that) with a fresh uid, the
//! `desiredAPIVersion` and the object, bounded by the webhook client's 30 seconds; the
//! answer is checked (uid, type, result, count, the object's version, kind, name, namespace
//! and uid), the object keeps its metadata but for the labels and annotations the webhook
//! set, and is pruned by the target version's schema.
//!
//! The server converts an object when it is written in a version other than the storage
//! version (to store it, and back for the answer) and when it is read in one (get, each item
//! of a list, watch events, the object an update starts from, the old object of a delete),
//! one call per object, as kube-apiserver's storage decodes each object on its own (its
//! watch cache of each version converts an object once, when it enters the cache; the fake
//! converts when it serves it, so the calls are more, the answers the same).
//!
//! A failure is the server's error for it: a write's is a `500` with the converter's message
//! (`conversion webhook for <group>/<version>, Kind=<kind> failed: ...`); a read's is what
//! the storage makes of an object it cannot decode (see [`Read`], and
//! [`Registry::list_converted`] for lists).

use std::time::Duration;

use kclient_core::{ApiError, Status, StatusCause, StatusDetails, StatusReason};
use serde_json::{json, Value};

use crate::catalogue::ResourceInfo;
use crate::registry::{for_version, Registry};
use crate::webhook_client::{self, ConversionWebhook};

/// How long a conversion call may take (the webhook client's timeout).
const TIMEOUT: Duration = Duration::from_secs(30);

fn api_version(v: &Value) -> &str {
    v.get("apiVersion").and_then(Value::as_str).unwrap_or("")
}

fn kind(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or("")
}

/// `<group>/<version>, Kind=<kind>`, as Go prints a `GroupVersionKind`.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// A conversion failure as the server answers it (an error that is not a `Status`).
fn failure(message: String) -> ApiError {
    Status::failure(StatusReason::Unknown, 500, message).into()
}

/// How a read reports an object it cannot convert: as kube-apiserver's storage reports an
/// object it cannot decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// A get, or the old object of a delete: `500 Internal error occurred: StorageError:
    /// corrupt object, ...`.
    Get,
    /// The object an update starts from: `500 object not decodable revision=N: ...`.
    Update,
}

/// `StorageError: corrupt object` of the object at `key` (`revision`: its
/// resourceVersion) that `why` kept from being decoded.
fn corrupt(key: &str, value: &Value, why: &str) -> String {
    format!(
        "StorageError: corrupt object, Code: 7, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision={}: {why}",
        crate::meta::meta_str(value, "resourceVersion")
    )
}

/// The storage key of a custom resource (`/registry/<group>/<plural>/<namespace>/<name>`).
fn key_of(target: &ResourceInfo, value: &Value) -> String {
    let key = crate::store::object_key(
        crate::meta::meta_str(value, "namespace"),
        crate::meta::meta_str(value, "name"),
    );
    crate::registry::registry_key(target, &key)
}

impl Registry {
    /// `object` (of `target`'s resource, in any of its versions) in `target`'s version: as
    /// it is (already there), by the `None` strategy, or through the CRD's webhook.
    pub async fn convert_one(
        &self,
        target: &ResourceInfo,
        object: Value,
    ) -> Result<Value, ApiError> {
        let desired = target.api_version();
        let webhook = match &target.conversion_webhook {
            Some(w) if api_version(&object) != desired => w.clone(),
            _ => return Ok(for_version(target, &object)),
        };
        let what = gvk_string(api_version(&object), kind(&object));
        let mut out = self
            .call_conversion(&webhook, desired, &object, &what)
            .await?;
        let (gv, k) = (api_version(&out), kind(&out));
        if gv != desired {
            return Err(failure(format!(
                "conversion webhook for {what} returned invalid object at index 0: invalid groupVersion (expected {desired}, received {gv})"
            )));
        }
        if k != kind(&object) {
            return Err(failure(format!(
                "conversion webhook for {what} returned invalid object at index 0: invalid kind (expected {}, received {k})",
                kind(&object)
            )));
        }
        same_identity(&object, &out).map_err(|why| {
            failure(format!(
                "conversion webhook for {what} returned invalid object: {why}"
            ))
        })?;
        restore_metadata(&object, &mut out).map_err(|why| {
            failure(format!(
                "conversion webhook for {what} returned invalid metadata: {why}"
            ))
        })?;
        if let Some(schema) = &target.schema {
            crate::schema::convert(schema, &mut out);
        }
        Ok(out)
    }

    /// A stored object read in `target`'s version; a failed conversion is reported as
    /// `read` does.
    pub async fn read_converted(
        &self,
        target: &ResourceInfo,
        stored: Value,
        read: Read,
    ) -> Result<Value, ApiError> {
        let key = key_of(target, &stored);
        let revision = crate::meta::meta_str(&stored, "resourceVersion").to_string();
        let stored_copy = (read == Read::Get).then(|| stored.clone());
        self.convert_one(target, stored)
            .await
            .map_err(|e| match (read, stored_copy) {
                (Read::Get, Some(stored)) => {
                    // A get reports the key without the storage prefix.
                    let key = key.trim_start_matches("/registry");
                    crate::errors::internal(corrupt(key, &stored, e.message()))
                }
                _ => failure(format!(
                    "object not decodable revision={revision}: {}",
                    e.message()
                )),
            })
    }

    /// The stored objects of a list in `target`'s version, each converted on its own; the
    /// ones that cannot be make the storage's `StoreReadError`.
    pub async fn list_converted(
        &self,
        target: &ResourceInfo,
        stored: Vec<Value>,
    ) -> Result<Vec<Value>, ApiError> {
        let mut out = Vec::with_capacity(stored.len());
        let mut failed = Vec::new();
        for value in stored {
            let key = key_of(target, &value);
            match self.convert_one(target, value.clone()).await {
                Ok(v) => out.push(v),
                Err(e) => failed.push((key.clone(), corrupt(&key, &value, e.message()))),
            }
        }
        let Some((_, first)) = failed.first() else {
            return Ok(out);
        };
        let mut message = format!(
            "failed to read one or more {} from the storage: {first}",
            target.group_resource()
        );
        if failed.len() > 1 {
            message = format!("{message} (and {} more)", failed.len() - 1);
        }
        let causes = failed
            .iter()
            .map(|(key, why)| StatusCause {
                cause_type: "UnexpectedServerResponse".into(),
                message: why.clone(),
                field: key.clone(),
            })
            .collect();
        Err(Status::failure(StatusReason::StoreReadError, 500, message)
            .with_details(StatusDetails {
                name: "list".into(),
                group: target.api.group.clone(),
                kind: target.api.plural.clone(),
                causes,
                ..StatusDetails::default()
            })
            .into())
    }

    /// The webhook call for one object: the converted object, checked to be one.
    async fn call_conversion(
        &self,
        webhook: &ConversionWebhook,
        desired: &str,
        object: &Value,
        what: &str,
    ) -> Result<Value, ApiError> {
        let Some(version) = webhook
            .review_versions
            .iter()
            .find(|v| *v == "v1" || *v == "v1beta1")
        else {
            return Err(failure("no supported conversion review versions".into()));
        };
        let uid = crate::meta::new_uid();
        let review = json!({
            "kind": "ConversionReview",
            "apiVersion": format!("apiextensions.k8s.io/{version}"),
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": [object]},
        });
        let body = serde_json::to_vec(&review).unwrap_or_default();
        let failed = |why: String| failure(format!("conversion webhook for {what} failed: {why}"));
        let answer = webhook_client::post(&webhook.client, &self.services, body, TIMEOUT)
            .await
            .map_err(|e| failed(e.message().to_string()))?;
        let answer: Value = serde_json::from_slice(&answer)
            .map_err(|e| failed(format!("couldn't get version/kind; json parse error: {e}")))?;
        let mut converted = check_answer(version, &uid, &answer).map_err(failed)?;
        if converted.len() != 1 {
            return Err(failure(format!(
                "conversion webhook for {what} returned {} objects, expected 1",
                converted.len()
            )));
        }
        Ok(converted.remove(0))
    }
}

/// `getConvertedObjectsFromResponse`.
fn check_answer(version: &str, uid: &str, answer: &Value) -> Result<Vec<Value>, String> {
    if version == "v1" {
        let got = gvk_string(api_version(answer), kind(answer));
        let expected = "apiextensions.k8s.io/v1, Kind=ConversionReview";
        if got != expected {
            return Err(format!(
                "expected webhook response of {expected}, got {got}"
            ));
        }
    }
    let Some(response) = answer.get("response").filter(|r| !r.is_null()) else {
        return Err("no response provided".into());
    };
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    if version == "v1" && text(response, "uid") != uid {
        return Err(format!(
            "expected response.uid={uid:?}, got {:?}",
            text(response, "uid")
        ));
    }
    let result = response.get("result").unwrap_or(&Value::Null);
    let status = text(result, "status");
    if status != Status::SUCCESS {
        let message = text(result, "message");
        return Err(if message.is_empty() {
            format!("response.result.status was '{status}', not 'Success'")
        } else {
            message
        });
    }
    Ok(response
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// `validateConvertedObject`: the identity a webhook may not change.
fn same_identity(original: &Value, converted: &Value) -> Result<(), String> {
    if kind(original) != kind(converted) {
        return Err(format!(
            "must have the same kind: {} != {}",
            kind(original),
            kind(converted)
        ));
    }
    for (field, label) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let a = crate::meta::meta_str(original, field);
        let b = crate::meta::meta_str(converted, field);
        if a != b {
            return Err(format!("must have the same {label}: {a} != {b}"));
        }
    }
    Ok(())
}

/// `restoreObjectMeta`: the original's metadata, with the labels and annotations the webhook
/// answered.
fn restore_metadata(original: &Value, converted: &mut Value) -> Result<(), String> {
    let Some(answered) = converted.get("metadata") else {
        return Err("missing metadata in converted object".into());
    };
    let Some(answered) = answered.as_object().cloned() else {
        return Err("invalid metadata of type in converted object".into());
    };
    let mut metadata = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in ["labels", "annotations"] {
        match answered.get(field) {
            None | Some(Value::Null) => {
                metadata.remove(field);
            }
            Some(Value::Object(map)) => {
                if let Some((k, _)) = map.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{k}] must be a string, but is not in converted object"
                    ));
                }
                metadata.insert(field.into(), Value::Object(map.clone()));
            }
            Some(_) => return Err(format!("invalid metadata.{field} in converted object")),
        }
    }
    if let Some(map) = converted.as_object_mut() {
        map.insert("metadata".into(), Value::Object(metadata));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked_as_the_server_checks_them() {
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                        "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [{}]}});
        assert_eq!(check_answer("v1", "u", &ok).unwrap().len(), 1);
        assert_eq!(
            check_answer("v1", "x", &ok).unwrap_err(),
            "expected response.uid=\"x\", got \"u\""
        );
        let failed = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                            "response": {"uid": "u", "result": {"status": "Failure", "message": "cannot"}}});
        assert_eq!(check_answer("v1", "u", &failed).unwrap_err(), "cannot");
        let bare = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                          "response": {"uid": "u", "result": {}}});
        assert_eq!(
            check_answer("v1", "u", &bare).unwrap_err(),
            "response.result.status was '', not 'Success'"
        );
        assert_eq!(
            check_answer("v1", "u", &json!({"response": {}})).unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got /, Kind="
        );
    }

    #[test]
    fn metadata_comes_from_the_original_but_labels_and_annotations() {
        let original = json!({"metadata": {"name": "a", "uid": "1", "labels": {"x": "1"}, "resourceVersion": "5"}});
        let mut converted = json!({"spec": {}, "metadata": {"name": "a", "uid": "1", "labels": {"y": "2"}, "resourceVersion": "9", "junk": 1}});
        restore_metadata(&original, &mut converted).unwrap();
        assert_eq!(
            converted["metadata"],
            json!({"name": "a", "uid": "1", "labels": {"y": "2"}, "resourceVersion": "5"})
        );
        assert_eq!(
            same_identity(&original, &json!({"metadata": {"name": "b", "uid": "1"}})).unwrap_err(),
            "must have the same name: a != b"
        );
    }
}
