//! The webhook configurations as stored: kube-apiserver's `admissionregistration.k8s.io/v1`
//! defaults (`failurePolicy: Fail`, `matchPolicy: Equivalent`, empty selectors,
//! `timeoutSeconds: 10`, `reinvocationPolicy: Never`, a rule's `scope: "*"`, a service's
//! port 443) and the checks of its validation that decide how a webhook is called
//! (`sideEffects`, `admissionReviewVersions`, `clientConfig`, `timeoutSeconds`, the policies,
//! names, rules), with its `422` messages. Label selectors and `matchConditions` are taken as
//! written (a selector that does not parse fails the requests it would be matched against).

use kclient_core::{ApiError, FieldError};
use serde_json::{json, Map, Value};

use crate::catalogue::ResourceInfo;
use crate::meta::meta_str;

/// Whether `info` is a webhook configuration, and whether a mutating one.
fn kind(info: &ResourceInfo) -> Option<bool> {
    if info.custom || info.api.group != "admissionregistration.k8s.io" {
        return None;
    }
    match info.kind() {
        "MutatingWebhookConfiguration" => Some(true),
        "ValidatingWebhookConfiguration" => Some(false),
        _ => None,
    }
}

fn set_default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.into(), value);
    }
}

/// Applies the v1 defaults to a webhook configuration (nothing to other objects).
pub fn default(info: &ResourceInfo, obj: &mut Value) {
    let Some(mutating) = kind(info) else { return };
    let webhooks = obj.get_mut("webhooks").and_then(Value::as_array_mut);
    for hook in webhooks.into_iter().flatten() {
        let Some(map) = hook.as_object_mut() else {
            continue;
        };
        set_default(map, "failurePolicy", json!("Fail"));
        set_default(map, "matchPolicy", json!("Equivalent"));
        set_default(map, "namespaceSelector", json!({}));
        set_default(map, "objectSelector", json!({}));
        set_default(map, "timeoutSeconds", json!(10));
        if mutating {
            set_default(map, "reinvocationPolicy", json!("Never"));
        }
        if let Some(rules) = map.get_mut("rules").and_then(Value::as_array_mut) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                set_default(rule, "scope", json!("*"));
            }
        }
        if let Some(service) = map
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            set_default(service, "port", json!(443));
        }
    }
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|s| s.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn not_supported(
    errs: &mut Vec<FieldError>,
    hook: &Value,
    path: &str,
    key: &str,
    allowed: &[&str],
) {
    if let Some(value) = hook.get(key).and_then(Value::as_str) {
        if !allowed.contains(&value) {
            errs.push(FieldError::not_supported(
                &format!("{path}.{key}"),
                value,
                allowed,
            ));
        }
    }
}

/// A rule's `resources` (`validateResources`).
fn resources(errs: &mut Vec<FieldError>, path: &str, resources: &[String]) {
    if resources.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    let mut with_wildcard_sub = std::collections::HashSet::new();
    let mut sub_with_wildcard_res = std::collections::HashSet::new();
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, r) in resources.iter().enumerate() {
        if r.is_empty() {
            errs.push(FieldError::required(&format!("{path}[{i}]"), ""));
            continue;
        }
        double |= r == "*/*";
        single |= r == "*";
        let Some((res, sub)) = r.split_once('/') else {
            plain = r != "*";
            continue;
        };
        if with_wildcard_sub.contains(res) {
            errs.push(FieldError::invalid(
                &format!("{path}[{i}]"),
                &json!(r),
                &format!("if '{res}/*' is present, must not specify {r}"),
            ));
        }
        if sub_with_wildcard_res.contains(sub) {
            errs.push(FieldError::invalid(
                &format!("{path}[{i}]"),
                &json!(r),
                &format!("if '*/{sub}' is present, must not specify {r}"),
            ));
        }
        if sub == "*" {
            with_wildcard_sub.insert(res.to_string());
        }
        if res == "*" {
            sub_with_wildcard_res.insert(sub.to_string());
        }
    }
    if resources.len() > 1 && double {
        errs.push(invalid_list(
            path,
            "string",
            resources,
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && plain {
        errs.push(invalid_list(
            path,
            "string",
            resources,
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

/// `Invalid value` of a list of strings, shown as Go shows a `go_type` slice
/// (`[]string{"a", "b"}`).
fn invalid_list(path: &str, go_type: &str, items: &[String], detail: &str) -> FieldError {
    let quoted: Vec<String> = items
        .iter()
        .map(|i| kclient_core::go_format::quote(i))
        .collect();
    FieldError {
        cause_type: "FieldValueInvalid",
        field: path.to_string(),
        body: format!(
            "Invalid value: []{go_type}{{{}}}: {detail}",
            quoted.join(", ")
        ),
    }
}

/// A required list of a rule, in which `*` must stand alone; returns it.
fn listed(
    errs: &mut Vec<FieldError>,
    rule: &Value,
    path: &str,
    (key, go_type, what): (&str, &str, &str),
) -> Vec<String> {
    let items = strings(rule, key);
    let path = format!("{path}.{key}");
    if items.is_empty() {
        errs.push(FieldError::required(&path, ""));
    }
    if items.len() > 1 && items.iter().any(|i| i == "*") {
        errs.push(invalid_list(
            &path,
            go_type,
            &items,
            &format!("if '*' is present, must not specify other {what}"),
        ));
    }
    items
}

fn rule(errs: &mut Vec<FieldError>, path: &str, rule: &Value) {
    let operations = listed(
        errs,
        rule,
        path,
        (
            "operations",
            "admissionregistration.OperationType",
            "operations",
        ),
    );
    for (i, op) in operations.iter().enumerate() {
        let allowed = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
        if !allowed.contains(&op.as_str()) {
            errs.push(FieldError::not_supported(
                &format!("{path}.operations[{i}]"),
                op,
                &allowed,
            ));
        }
    }
    listed(errs, rule, path, ("apiGroups", "string", "API groups"));
    let versions = listed(errs, rule, path, ("apiVersions", "string", "API versions"));
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            errs.push(FieldError::required(
                &format!("{path}.apiVersions[{i}]"),
                "",
            ));
        }
    }
    resources(
        errs,
        &format!("{path}.resources"),
        &strings(rule, "resources"),
    );
    not_supported(errs, rule, path, "scope", &["*", "Cluster", "Namespaced"]);
}

/// `ValidateWebhookURL` (HTTPS only).
fn url(errs: &mut Vec<FieldError>, path: &str, raw: &str) {
    const FORM: &str = "; desired format: https://host[/path]";
    let Ok(uri) = raw.parse::<http::Uri>() else {
        errs.push(FieldError::required(
            path,
            &format!("url must be a valid URL: parse {raw:?}: invalid URI{FORM}"),
        ));
        return;
    };
    let scheme = uri.scheme_str().unwrap_or("");
    if scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            &json!(scheme),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    let host = uri.authority().map(|a| a.as_str()).unwrap_or("");
    if host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            &json!(host),
            &format!("host must be specified{FORM}"),
        ));
    }
    if let Some((user, _)) = host.split_once('@') {
        errs.push(FieldError::invalid(
            path,
            &json!(user),
            "user information is not permitted in the URL",
        ));
    }
    if let Some(query) = uri.query() {
        errs.push(FieldError::invalid(
            path,
            &json!(query),
            "query parameters are not permitted in the URL",
        ));
    }
}

/// `admissionReviewVersions` (`validateAdmissionReviewVersions`).
fn review_versions(errs: &mut Vec<FieldError>, path: &str, versions: &[String]) {
    if versions.is_empty() {
        errs.push(FieldError::required(
            path,
            "must specify one of v1, v1beta1",
        ));
        return;
    }
    let mut seen = std::collections::HashSet::new();
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(v) {
            errs.push(FieldError::invalid(
                &format!("{path}[{i}]"),
                &json!(v),
                "duplicate version",
            ));
        }
    }
    if !versions.iter().any(|v| v == "v1" || v == "v1beta1") {
        errs.push(invalid_list(
            path,
            "string",
            versions,
            "must include at least one of v1, v1beta1",
        ));
    }
}

fn hook(errs: &mut Vec<FieldError>, path: &str, hook: &Value, mutating: bool) {
    let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
    if name.is_empty() {
        errs.push(FieldError::required(&format!("{path}.name"), ""));
    } else if let Some(why) = crate::meta::dns_subdomain_error(name) {
        errs.push(FieldError::invalid(
            &format!("{path}.name"),
            &json!(name),
            &why,
        ));
    } else if name.split('.').count() < 3 {
        errs.push(FieldError::invalid(
            &format!("{path}.name"),
            &json!(name),
            "should be a domain with at least three segments separated by dots",
        ));
    }
    for (i, r) in hook
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        rule(errs, &format!("{path}.rules[{i}]"), r);
    }
    not_supported(errs, hook, path, "failurePolicy", &["Fail", "Ignore"]);
    not_supported(errs, hook, path, "matchPolicy", &["Equivalent", "Exact"]);
    match hook.get("sideEffects").and_then(Value::as_str) {
        None => errs.push(FieldError::required(
            &format!("{path}.sideEffects"),
            "must specify one of None, NoneOnDryRun",
        )),
        Some(_) => not_supported(errs, hook, path, "sideEffects", &["None", "NoneOnDryRun"]),
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64) {
        if !(1..=30).contains(&t) {
            errs.push(FieldError::invalid(
                &format!("{path}.timeoutSeconds"),
                &json!(t),
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
    }
    if mutating {
        not_supported(
            errs,
            hook,
            path,
            "reinvocationPolicy",
            &["IfNeeded", "Never"],
        );
    }
    let config = hook.get("clientConfig").unwrap_or(&Value::Null);
    let client_path = format!("{path}.clientConfig");
    match (
        config.get("url").and_then(Value::as_str),
        config.get("service"),
    ) {
        (Some(u), None) => url(errs, &format!("{client_path}.url"), u),
        (None, Some(s)) if s.is_object() => {
            for key in ["name", "namespace"] {
                if s.get(key).and_then(Value::as_str).unwrap_or("").is_empty() {
                    errs.push(FieldError::required(
                        &format!("{client_path}.service.{key}"),
                        &format!("service {key} is required"),
                    ));
                }
            }
        }
        _ => errs.push(FieldError::required(
            &client_path,
            "exactly one of url or service is required",
        )),
    }
}

/// Checks a webhook configuration as kube-apiserver's validation does (see the module
/// documentation for what is checked); other objects pass.
pub fn validate(info: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let Some(mutating) = kind(info) else {
        return Ok(());
    };
    let mut errs = Vec::new();
    let mut names = std::collections::HashSet::new();
    for (i, w) in obj
        .get("webhooks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = format!("webhooks[{i}]");
        hook(&mut errs, &path, w, mutating);
        review_versions(
            &mut errs,
            &format!("{path}.admissionReviewVersions"),
            &strings(w, "admissionReviewVersions"),
        );
        let name = w.get("name").and_then(Value::as_str).unwrap_or("");
        if !name.is_empty() && !names.insert(name.to_string()) {
            errs.push(FieldError::duplicate(&format!("{path}.name"), &json!(name)));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(
            &info.qualified_kind(),
            meta_str(obj, "name"),
            errs,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::Catalogue;

    fn validating() -> std::sync::Arc<ResourceInfo> {
        Catalogue::builtin()
            .get(
                "admissionregistration.k8s.io",
                "v1",
                "validatingwebhookconfigurations",
            )
            .unwrap()
    }

    #[test]
    fn defaults_are_the_v1_defaults() {
        let mut obj = json!({"webhooks": [{"name": "a.b.c", "rules": [{"operations": ["*"]}],
                                           "clientConfig": {"service": {"name": "s", "namespace": "n"}}}]});
        default(&validating(), &mut obj);
        let hook = &obj["webhooks"][0];
        assert_eq!(hook["failurePolicy"], "Fail");
        assert_eq!(hook["matchPolicy"], "Equivalent");
        assert_eq!(hook["timeoutSeconds"], 10);
        assert_eq!(hook["namespaceSelector"], json!({}));
        assert_eq!(hook["rules"][0]["scope"], "*");
        assert_eq!(hook["clientConfig"]["service"]["port"], 443);
        assert!(hook.get("reinvocationPolicy").is_none());
    }

    #[test]
    fn refuses_what_the_server_refuses() {
        let obj = json!({"metadata": {"name": "cfg"}, "webhooks": [
            {"name": "short", "admissionReviewVersions": ["v2"], "timeoutSeconds": 31,
             "clientConfig": {"url": "http://127.0.0.1/x"},
             "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["*", "pods"]}]}]});
        let err = validate(&validating(), &obj).unwrap_err();
        let text = err.message();
        for expected in [
            "webhooks[0].name: Invalid value: \"short\": should be a domain with at least three segments separated by dots",
            "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
            "webhooks[0].admissionReviewVersions: Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1",
            "webhooks[0].rules[0].resources: Invalid value: []string{\"*\", \"pods\"}: if '*' is present, must not specify other resources without subresources",
        ] {
            assert!(text.contains(expected), "{expected}\nnot in\n{text}");
        }
        assert_eq!(err.code(), 422);
    }
}
