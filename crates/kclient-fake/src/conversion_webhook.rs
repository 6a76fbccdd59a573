//! Converting custom resources between the versions of their CRD: with the `None` strategy
//! ([`crate::registry::for_version`]: the `apiVersion` changes, the object is pruned by the
//! target version's schema), or, for a CRD with `spec.conversion.strategy: Webhook`, through
//! its webhook, as apiextensions-apiserver's `webhookConverter` does: one `ConversionReview`
//! (`v1`, or `v1beta1` for a webhook that names only that) with a fresh uid, the
//! `desiredAPIVersion` and every object that is not in it yet (a list's items in one call),
//! bounded by the webhook client's 30 seconds; the answer is checked (uid, type, result,
//! count, each object's version, kind, name, namespace and uid), the objects keep their
//! metadata but for the labels and annotations the webhook set, and are pruned by the target
//! version's schema. The server converts when an object is written in a version other than
//! the storage version (to store it, and back for the answer) and when it is read in one
//! (get, list, watch events, the old object of an update or delete).
//!
//! A failure is the server's error for it: a `500` whose message is the converter's
//! (`conversion webhook for <group>/<version>, Kind=<kind> failed: ...`).

use std::sync::Arc;
use std::time::Duration;

use kclient_core::{ApiError, Status, StatusReason};
use serde_json::{json, Value};

use crate::catalogue::ResourceInfo;
use crate::registry::{for_version, Registry};
use crate::webhook_client::{self, ClientConfig};

/// How long a conversion call may take (the webhook client's timeout).
const TIMEOUT: Duration = Duration::from_secs(30);

/// A CRD's conversion webhook (`spec.conversion.webhook`).
#[derive(Debug, Clone, PartialEq)]
pub struct ConversionWebhook {
    /// Where it is.
    pub client: ClientConfig,
    /// `conversionReviewVersions`.
    pub review_versions: Vec<String>,
}

impl ConversionWebhook {
    /// The webhook of a CRD whose `spec.conversion.strategy` is `Webhook`.
    pub fn of_crd(crd: &Value) -> Option<Arc<Self>> {
        let conversion = crd.pointer("/spec/conversion")?;
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let webhook = conversion.get("webhook").unwrap_or(&Value::Null);
        Some(Arc::new(Self {
            client: ClientConfig::from_json(webhook.get("clientConfig").unwrap_or(&Value::Null)),
            review_versions: webhook
                .get("conversionReviewVersions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
        }))
    }
}

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

impl Registry {
    /// `objects` (of `target`'s resource, each in its own version) in `target`'s version. A
    /// list's objects are converted in one webhook call (`list`: the error names the list's
    /// kind, as the server's).
    pub async fn convert(
        &self,
        target: &ResourceInfo,
        mut objects: Vec<Value>,
        list: bool,
    ) -> Result<Vec<Value>, ApiError> {
        let desired = target.api_version().to_string();
        let webhook = match &target.conversion_webhook {
            Some(w) if objects.iter().any(|o| api_version(o) != desired) => w.clone(),
            _ => return Ok(objects.iter().map(|o| for_version(target, o)).collect()),
        };
        let what = if list {
            gvk_string(&desired, &target.list_kind())
        } else {
            gvk_string(api_version(&objects[0]), kind(&objects[0]))
        };
        let positions: Vec<usize> = (0..objects.len())
            .filter(|i| api_version(&objects[*i]) != desired)
            .collect();
        let sent: Vec<Value> = positions.iter().map(|i| objects[*i].clone()).collect();
        let converted = self
            .call_conversion(&webhook, &desired, &sent, &what)
            .await?;
        for (n, (i, mut out)) in positions.iter().zip(converted).enumerate() {
            let original = &objects[*i];
            let at = if list {
                format!("converted object at index {n}")
            } else {
                format!("object at index {n}")
            };
            let (gv, k) = (api_version(&out), kind(&out));
            if gv != desired {
                return Err(failure(format!(
                    "conversion webhook for {what} returned invalid {at}: invalid groupVersion (expected {desired}, received {gv})"
                )));
            }
            if k != kind(original) {
                return Err(failure(format!(
                    "conversion webhook for {what} returned invalid {at}: invalid kind (expected {}, received {k})",
                    kind(original)
                )));
            }
            let object_at = if list {
                format!(" {at}")
            } else {
                " object".to_string()
            };
            same_identity(original, &out).map_err(|why| {
                failure(format!(
                    "conversion webhook for {what} returned invalid{object_at}: {why}"
                ))
            })?;
            restore_metadata(original, &mut out).map_err(|why| {
                let place = if list {
                    format!(" in object at index {n}")
                } else {
                    String::new()
                };
                failure(format!(
                    "conversion webhook for {what} returned invalid metadata{place}: {why}"
                ))
            })?;
            if let Some(schema) = &target.schema {
                crate::schema::convert(schema, &mut out);
            }
            objects[*i] = out;
        }
        Ok(objects)
    }

    /// One object in `target`'s version (see [`Registry::convert`]).
    pub async fn convert_one(
        &self,
        target: &ResourceInfo,
        object: Value,
    ) -> Result<Value, ApiError> {
        let mut out = self.convert(target, vec![object], false).await?;
        Ok(out.pop().unwrap_or_default())
    }

    /// The webhook call: the converted objects, in order, checked for their number.
    async fn call_conversion(
        &self,
        webhook: &ConversionWebhook,
        desired: &str,
        objects: &[Value],
        what: &str,
    ) -> Result<Vec<Value>, ApiError> {
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
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
        });
        let body = serde_json::to_vec(&review).unwrap_or_default();
        let failed = |why: String| failure(format!("conversion webhook for {what} failed: {why}"));
        let answer = webhook_client::post(&webhook.client, &self.services, body, TIMEOUT)
            .await
            .map_err(|e| failed(e.message().to_string()))?;
        let answer: Value = serde_json::from_slice(&answer)
            .map_err(|e| failed(format!("couldn't get version/kind; json parse error: {e}")))?;
        let converted = check_answer(version, &uid, &answer).map_err(failed)?;
        if converted.len() != objects.len() {
            return Err(failure(format!(
                "conversion webhook for {what} returned {} objects, expected {}",
                converted.len(),
                objects.len()
            )));
        }
        Ok(converted)
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
