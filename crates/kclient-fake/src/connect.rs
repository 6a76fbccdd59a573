//! The subresources that reach a kubelet or a backend on a real cluster, and
//! `serviceaccounts/token`.
//!
//! Discovery lists them as kube-apiserver does (`pods/exec`, `pods/attach`,
//! `pods/portforward`, `pods/proxy`, `services/proxy`, `nodes/proxy`); the fake runs no
//! kubelet, container or endpoint, so a request answers as kube-apiserver v1.37 does where
//! there is nothing to connect to, in its order of checks: the object must exist (`404`); to
//! exec or attach, a pod needs a valid container (named when it has several, `400`); to exec,
//! attach or port-forward, a host (`400 pod p does not have a host assigned`), an existing
//! node (`404`, worded `pods "node" not found` as kube-apiserver words it) with addresses
//! (`500 no preferred addresses found; known addresses: []`); to proxy, a pod an IP (`400
//! address not allowed`), a service endpoints (`503 no endpoints available for service "s"`),
//! a node addresses. Beyond that the connection fails (`503 ServiceUnavailable`: nothing
//! listens). Methods the subresource does not serve get `405`.
//!
//! `serviceaccounts/{name}/token` creates a `TokenRequest` (`201`), with kube-apiserver's
//! defaults (audience `https://kubernetes.default.svc`, one hour) and validation (ten minutes
//! at least, the name of the ServiceAccount); the token is JWT-shaped, with the claims a real
//! one carries, but unsigned: the fake itself accepts only the tokens it was built with.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use http::{Method, Response, StatusCode};
use kclient_core::{ApiError, FieldError, GroupResource, Status, StatusReason};
use serde_json::{json, Value};

use crate::call::Call;
use crate::errors;
use crate::meta::{self, meta_str};
use crate::request::ApiRequest;
use crate::response::{self, Body};

/// The audience of a token when the request names none (kube-apiserver's default
/// `--api-audiences`, its issuer).
const DEFAULT_AUDIENCE: &str = "https://kubernetes.default.svc";
/// A token's lifetime when the request does not say.
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime a TokenRequest may ask for.
const MIN_EXPIRATION_SECONDS: i64 = 600;

fn unavailable(message: impl Into<String>) -> ApiError {
    Status::failure(StatusReason::ServiceUnavailable, 503, message).into()
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Serves a connect subresource (`pods/{exec,attach,portforward,proxy}`, `services/proxy`,
/// `nodes/proxy`) of an existing object, which always fails: nothing runs behind it.
pub fn handle(call: &Call<'_>, name: &str, sub: &str) -> Result<Response<Body>, ApiError> {
    let (shared, req, info, q) = (call.shared, call.req, call.info, call.q);
    let namespace = call.namespace_or_all();
    let proxy = sub == "proxy";
    let allowed = if proxy {
        matches!(
            req.method,
            Method::GET | Method::POST | Method::PUT | Method::PATCH | Method::DELETE
        )
    } else {
        matches!(req.method, Method::GET | Method::POST)
    };
    if !allowed {
        return Err(errors::method_not_allowed());
    }
    let obj = shared.registry.get(info, namespace, name)?;
    match (info.kind(), sub) {
        ("Pod", "proxy") => {
            let ip = str_at(&obj, "/status/podIP");
            if ip.is_empty() {
                return Err(ApiError::bad_request("address not allowed"));
            }
            Err(unavailable(format!(
                "error trying to reach service: kclient-fake runs no pods: {ip} is not reachable"
            )))
        }
        ("Pod", _) => {
            if sub != "portforward" {
                crate::request::validate_container(&obj, name, q.str("container"))?;
            }
            let node = str_at(&obj, "/spec/nodeName");
            if node.is_empty() {
                return Err(ApiError::bad_request(format!(
                    "pod {name} does not have a host assigned"
                )));
            }
            // kube-apiserver reads the node through a getter that names it a pod.
            let node_info = shared.registry.catalogue.get("", "v1", "nodes");
            let node_obj = node_info
                .and_then(|n| shared.registry.get(&n, "", node).ok())
                .ok_or_else(|| ApiError::not_found(&GroupResource::new("", "pods"), node))?;
            kubelet_unreachable(&node_obj, node)
        }
        ("Service", _) => {
            let endpoints = shared
                .registry
                .catalogue
                .get("", "v1", "endpoints")
                .and_then(|e| shared.registry.get(&e, namespace, name).ok());
            let has_addresses = endpoints.is_some_and(|e| {
                e.get("subsets")
                    .and_then(Value::as_array)
                    .is_some_and(|subsets| {
                        subsets.iter().any(|s| {
                            s.get("addresses")
                                .and_then(Value::as_array)
                                .is_some_and(|a| !a.is_empty())
                        })
                    })
            });
            if !has_addresses {
                return Err(unavailable(format!(
                    "no endpoints available for service {name:?}"
                )));
            }
            Err(unavailable(format!(
                "error trying to reach service: kclient-fake proxies to no endpoint of service {name:?}"
            )))
        }
        _ => kubelet_unreachable(&obj, name),
    }
}

/// The failure of reaching a node's kubelet: a node without addresses is a `500` (as on a
/// real server), one with addresses a `503` (the fake runs no kubelet).
fn kubelet_unreachable(node: &Value, name: &str) -> Result<Response<Body>, ApiError> {
    let addresses = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if !addresses {
        let status = Status {
            status: Status::FAILURE.into(),
            code: 500,
            message: "no preferred addresses found; known addresses: []".into(),
            ..Status::default()
        };
        return Err(status.into());
    }
    Err(unavailable(format!(
        "error dialing backend: kclient-fake runs no kubelet on node {name}"
    )))
}

fn token_request_invalid(name: &str, field: FieldError) -> ApiError {
    ApiError::invalid(
        &GroupResource::new("authentication.k8s.io", "TokenRequest"),
        name,
        vec![field],
    )
}

fn base64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// `POST serviceaccounts/{name}/token`: a `TokenRequest` for an existing ServiceAccount.
pub fn token(call: &Call<'_>, name: &str) -> Result<Response<Body>, ApiError> {
    let (shared, req, info) = (call.shared, call.req, call.info);
    let namespace = call.namespace_or_all();
    if req.method != Method::POST {
        return Err(errors::method_not_allowed());
    }
    let body = parse_token_request(req)?;
    let account = shared.registry.get(info, namespace, name)?;
    let given_name = meta_str(&body, "name");
    if !given_name.is_empty() && given_name != name {
        return Err(token_request_invalid(
            name,
            FieldError::invalid(
                "metadata.name",
                &json!(given_name),
                "must match the service account name if specified",
            ),
        ));
    }
    let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
    let expiration = expiration_seconds(&spec)?;
    let audiences = spec
        .get("audiences")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .cloned()
        .unwrap_or_else(|| vec![json!(DEFAULT_AUDIENCE)]);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let expires = now.saturating_add(expiration.unsigned_abs());
    let uid = meta_str(&account, "uid").to_string();
    let claims = json!({
        "aud": audiences,
        "exp": expires,
        "iat": now,
        "iss": DEFAULT_AUDIENCE,
        "jti": meta::new_uid(),
        "kubernetes.io": {
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": uid},
        },
        "nbf": now,
        "sub": format!("system:serviceaccount:{namespace}:{name}"),
    });
    let answer = json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "creationTimestamp": meta::now_rfc3339(),
        },
        "spec": {
            "audiences": audiences,
            "expirationSeconds": expiration,
            "boundObjectRef": spec.get("boundObjectRef").cloned().unwrap_or(Value::Null),
        },
        "status": {"token": unsigned_jwt(&claims), "expirationTimestamp": meta::rfc3339(expires)},
    });
    Ok(response::json(StatusCode::CREATED, &answer))
}

/// The request's body as a `TokenRequest` (JSON; no other kind).
fn parse_token_request(req: &ApiRequest) -> Result<Value, ApiError> {
    let body: Value = serde_json::from_slice(&req.body)
        .map_err(|e| ApiError::bad_request(format!("error decoding TokenRequest: {e}")))?;
    let kind = body.get("kind").and_then(Value::as_str).unwrap_or("");
    if !body.is_object() || (!kind.is_empty() && kind != "TokenRequest") {
        let version = body.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        return Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a TokenRequest: converting \
             ({version}.{kind}) to (authentication.TokenRequest): unknown conversion"
        )));
    }
    Ok(body)
}

/// The token's lifetime the request's spec asks for (the default without one), within
/// kube-apiserver's bounds.
fn expiration_seconds(spec: &Value) -> Result<i64, ApiError> {
    let expiration = spec
        .get("expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
    let refusal = if expiration < MIN_EXPIRATION_SECONDS {
        "may not specify a duration less than 10 minutes"
    } else if expiration > 1 << 32 {
        "may not specify a duration larger than 2^32 seconds"
    } else {
        return Ok(expiration);
    };
    Err(token_request_invalid(
        "",
        FieldError::invalid("spec.expirationSeconds", &json!(expiration), refusal),
    ))
}

/// A JWT of `claims`, signed by nobody (`alg: none`): the fake checks no signature, and a
/// client only reads the claims.
fn unsigned_jwt(claims: &Value) -> String {
    format!(
        "{}.{}.{}",
        base64url(br#"{"alg":"none","kid":"kclient-fake"}"#),
        base64url(claims.to_string().as_bytes()),
        base64url(b"kclient-fake")
    )
}
