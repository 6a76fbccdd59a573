//! One call of an admission webhook: the `AdmissionReview` request kube-apiserver sends
//! (`CreateV1AdmissionReview`, or `v1beta1` for a webhook that names only that version), and
//! the checks it makes of the answer (`VerifyAdmissionResponse`), with its wording.

use base64::Engine as _;
use kclient_core::admission::{Operation, ADMISSION_REVIEW_KIND, JSON_PATCH_TYPE};
use kclient_core::{ApiError, Status};
use serde_json::{json, Value};

use crate::meta;
use crate::registry::Registry;
use crate::webhook_client::{self, CallError};

use super::hooks::Hook;
use super::matching::Invocation;
use super::{Attributes, Request};

/// Why a call did not give a verdict.
#[derive(Debug)]
pub enum HookError {
    /// kube-apiserver's `ErrCallingWebhook`: the webhook could not be called or answered
    /// badly (`failurePolicy` decides); the reason, without the `failed calling webhook`
    /// prefix.
    Calling(String),
    /// The request fails with this error whatever the `failurePolicy` (a dry run the
    /// webhook cannot take, a denial, a patch that does not apply).
    Refused(ApiError),
}

/// What an allowing webhook answered.
#[derive(Debug, Default)]
pub struct Verdict {
    /// The JSON patch to apply (mutating webhooks), already checked to be a patch.
    pub patch: Option<json_patch::Patch>,
}

/// The review versions kube-apiserver speaks, the first one the webhook names.
fn review_version(hook: &Hook) -> Option<&'static str> {
    hook.review_versions.iter().find_map(|v| match v.as_str() {
        "v1" => Some("v1"),
        "v1beta1" => Some("v1beta1"),
        _ => None,
    })
}

/// The kind of what is admitted: the resource's, or what its subresource writes.
fn gvk(info: &crate::catalogue::ResourceInfo, request: &Request) -> Value {
    match &request.kind {
        Some(k) => json!({"group": k.group, "version": k.version, "kind": k.kind}),
        None => json!({"group": info.api.group, "version": info.api.version, "kind": info.kind()}),
    }
}

fn gvr(info: &crate::catalogue::ResourceInfo) -> Value {
    json!({"group": info.api.group, "version": info.api.version, "resource": info.api.plural})
}

/// The `AdmissionReview` request body.
fn review(
    version: &str,
    uid: &str,
    attrs: &Attributes,
    request: &Request,
    invocation: &Invocation,
    object: Option<&Value>,
    old_object: Option<&Value>,
) -> Value {
    let mut req = json!({
        "uid": uid,
        "kind": gvk(&invocation.info, request),
        "resource": gvr(&invocation.info),
        "requestKind": gvk(&attrs.info, request),
        "requestResource": gvr(&attrs.info),
        "operation": attrs.operation.as_str(),
        "userInfo": request.user,
        "object": object.cloned().unwrap_or(Value::Null),
        "oldObject": old_object.cloned().unwrap_or(Value::Null),
        "dryRun": request.dry_run,
        "options": options(attrs, request),
    });
    let map = req.as_object_mut().expect("a JSON object literal");
    for (field, value) in [
        ("subResource", &attrs.subresource),
        ("requestSubResource", &attrs.subresource),
        ("name", &attrs.name),
        ("namespace", &attrs.namespace),
    ] {
        if !value.is_empty() {
            map.insert(field.into(), json!(value));
        }
    }
    json!({
        "kind": ADMISSION_REVIEW_KIND,
        "apiVersion": format!("admission.k8s.io/{version}"),
        "request": req,
    })
}

/// The operation's options, with their kind (`CreateOptions`, `UpdateOptions`,
/// `DeleteOptions`: an update that creates sends `CreateOptions`, as the server does).
fn options(attrs: &Attributes, request: &Request) -> Value {
    let kind = match attrs.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
        Operation::Connect => return request.options.clone(),
    };
    let mut options = match &request.options {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    options.insert("kind".into(), json!(kind));
    options.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
    Value::Object(options)
}

/// `<group>/<version>, Kind=<kind>`, as Go prints a `GroupVersionKind`.
fn gvk_string(review: &Value) -> String {
    let text = |k: &str| review.get(k).and_then(Value::as_str).unwrap_or("");
    let (group, version) = match text("apiVersion").rsplit_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), text("apiVersion").to_string()),
    };
    format!("{group}/{version}, Kind={}", text("kind"))
}

/// Checks an answer as `VerifyAdmissionResponse` does; returns the response object.
fn verify(version: &str, uid: &str, mutating: bool, answer: &Value) -> Result<Value, String> {
    let Some(response) = answer.get("response").filter(|r| !r.is_null()) else {
        return Err("webhook response was absent".into());
    };
    let text = |k: &str| response.get(k).and_then(Value::as_str).unwrap_or("");
    let patch = text("patch");
    let patch_type = response.get("patchType").filter(|t| !t.is_null());
    if version == "v1beta1" {
        // v1beta1 answers were never checked for their uid, type or patch type.
        return Ok(response.clone());
    }
    if text("uid") != uid {
        return Err(format!(
            "expected response.uid={uid:?}, got {:?}",
            text("uid")
        ));
    }
    let got = gvk_string(answer);
    if got != "admission.k8s.io/v1, Kind=AdmissionReview" {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {got}"
        ));
    }
    if mutating {
        if !patch.is_empty() && patch_type.is_none() {
            return Err("webhook returned response.patch but not response.patchType".into());
        }
        if patch.is_empty() && patch_type.is_some() {
            return Err("webhook returned response.patchType but not response.patch".into());
        }
        if patch_type.and_then(Value::as_str) == Some("") {
            return Err("webhook returned invalid response.patchType of \"\"".into());
        }
    } else {
        if !patch.is_empty() {
            return Err("validating webhook may not return response.patch".into());
        }
        if patch_type.is_some() {
            return Err("validating webhook may not return response.patchType".into());
        }
    }
    Ok(response.clone())
}

/// kube-apiserver's `ToStatusErr`: the error a denial answers with.
pub fn denial(hook: &str, result: Option<&Value>) -> ApiError {
    let mut status: Status = result
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default();
    let denied = format!("admission webhook {hook:?} denied the request");
    if status.code < 400 {
        status.code = 400;
    }
    if status.status.is_empty() || status.status == Status::SUCCESS {
        status.status = Status::FAILURE.into();
    }
    status.message = if !status.message.is_empty() {
        format!("{denied}: {}", status.message)
    } else if !status.reason.is_unknown() {
        format!("{denied}: {}", status.reason.as_str())
    } else {
        format!("{denied} without explanation")
    };
    status.into()
}

/// Calls `hook` about the request, with the object and old object as the invocation's
/// version has them.
pub async fn call(
    registry: &Registry,
    hook: &Hook,
    mutating: bool,
    attrs: &Attributes,
    request: &Request,
    invocation: &Invocation,
    (object, old_object): (Option<&Value>, Option<&Value>),
) -> Result<Verdict, HookError> {
    check_dry_run(hook, request)?;
    let Some(version) = review_version(hook) else {
        return Err(HookError::Calling(
            "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)".into(),
        ));
    };
    let uid = meta::new_uid();
    let body = review(
        version, &uid, attrs, request, invocation, object, old_object,
    );
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let answer = webhook_client::post(&hook.client, &registry.services, bytes, hook.timeout)
        .await
        .map_err(|e| match e {
            CallError::Config(why) => {
                HookError::Calling(format!("could not get REST client: {why}"))
            }
            other => HookError::Calling(format!("failed to call webhook: {}", other.message())),
        })?;
    let answer = decode(&answer)
        .map_err(|why| HookError::Calling(format!("failed to call webhook: {why}")))?;
    let response = verify(version, &uid, mutating, &answer)
        .map_err(|why| HookError::Calling(format!("received invalid webhook response: {why}")))?;
    for warning in response
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        request.warnings.push(warning.to_string());
    }
    if response.get("allowed").and_then(Value::as_bool) != Some(true) {
        return Err(HookError::Refused(denial(
            &hook.name,
            response.get("status"),
        )));
    }
    if !mutating {
        return Ok(Verdict::default());
    }
    Ok(Verdict {
        patch: response_patch(&response)?,
    })
}

/// A dry run calls only hooks that declare no side effects (or none on dry runs).
fn check_dry_run(hook: &Hook, request: &Request) -> Result<(), HookError> {
    if !request.dry_run {
        return Ok(());
    }
    match hook.side_effects.as_deref() {
        None => Err(HookError::Calling("Webhook SideEffects is nil".into())),
        Some("None" | "NoneOnDryRun") => Ok(()),
        Some(_) => Err(HookError::Refused(ApiError::bad_request(format!(
            "admission webhook {:?} does not support dry run",
            hook.name
        )))),
    }
}

/// The JSON patch of a mutating hook's allowing answer, if it has one.
fn response_patch(response: &Value) -> Result<Option<json_patch::Patch>, HookError> {
    let encoded = response.get("patch").and_then(Value::as_str).unwrap_or("");
    if encoded.is_empty() {
        return Ok(None);
    }
    let patch_type = response
        .get("patchType")
        .and_then(Value::as_str)
        .unwrap_or(JSON_PATCH_TYPE);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| {
            HookError::Calling(format!(
                "failed to call webhook: illegal base64 data in response.patch: {e}"
            ))
        })?;
    let patch: json_patch::Patch = serde_json::from_slice(&bytes).map_err(|e| {
        HookError::Calling(format!(
            "received undecodable patch in webhook response: {e}"
        ))
    })?;
    if patch_type != JSON_PATCH_TYPE {
        return Err(HookError::Calling(format!(
            "unsupported patch type {patch_type:?}"
        )));
    }
    Ok(Some(patch))
}

/// Reads an answer as client-go's JSON decoder does.
fn decode(body: &[u8]) -> Result<Value, String> {
    if body.is_empty() {
        return Err(
            "0-length response with status code: 200 and content type: application/json".into(),
        );
    }
    serde_json::from_slice(body)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_are_worded_as_the_server_words_them() {
        let err = denial(
            "deny.example.com",
            Some(&json!({"message": "no", "code": 403, "reason": "Forbidden"})),
        );
        assert_eq!(err.code(), 403);
        assert_eq!(
            err.message(),
            "admission webhook \"deny.example.com\" denied the request: no"
        );
        let err = denial(
            "deny.example.com",
            Some(&json!({"code": 200, "reason": "Conflict"})),
        );
        assert_eq!(err.code(), 400);
        assert_eq!(
            err.message(),
            "admission webhook \"deny.example.com\" denied the request: Conflict"
        );
        let err = denial("deny.example.com", None);
        assert_eq!(err.code(), 400);
        assert_eq!(
            err.message(),
            "admission webhook \"deny.example.com\" denied the request without explanation"
        );
        assert_eq!(err.status.status, "Failure");
    }

    #[test]
    fn answers_are_checked_as_the_server_checks_them() {
        let ok = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                        "response": {"uid": "u", "allowed": true}});
        assert!(verify("v1", "u", true, &ok).is_ok());
        assert_eq!(
            verify("v1", "x", true, &ok).unwrap_err(),
            "expected response.uid=\"x\", got \"u\""
        );
        let beta = json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
                          "response": {"uid": "u", "allowed": true}});
        assert_eq!(
            verify("v1", "u", true, &beta).unwrap_err(),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview"
        );
        assert!(verify("v1beta1", "other", true, &beta).is_ok());
        let patched = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                             "response": {"uid": "u", "allowed": true, "patch": "W10="}});
        assert_eq!(
            verify("v1", "u", true, &patched).unwrap_err(),
            "webhook returned response.patch but not response.patchType"
        );
        assert_eq!(
            verify("v1", "u", false, &patched).unwrap_err(),
            "validating webhook may not return response.patch"
        );
        assert_eq!(
            verify("v1", "u", true, &json!({})).unwrap_err(),
            "webhook response was absent"
        );
    }
}
