//! Whether a webhook is called for a request, as kube-apiserver's `ShouldCallHook` decides:
//! its `namespaceSelector` (the labels of the request's namespace; cluster-scoped objects
//! other than namespaces always match; a namespace is matched by its own labels), its
//! `objectSelector` (the labels of the new or the old object), then its `rules` (operations,
//! groups, versions, resources with `*`, `res/sub`, `*/sub`, `res/*` and `*/*`, scope), and
//! with `matchPolicy: Equivalent` the same rules against the other served versions of a
//! custom resource (the webhook then sees the object in the version its rule names).
//!
//! `matchConditions` (CEL) are not evaluated: a webhook that has some is called as if they
//! all held.

use std::sync::Arc;

use kclient_core::admission::Operation;
use kclient_core::labels::Selector;
use kclient_core::{ApiError, GroupResource};
use serde_json::Value;

use crate::catalogue::ResourceInfo;
use crate::registry::Registry;

use super::hooks::{selector, Hook, Rule};
use super::{internal_error, Attributes};

/// What a webhook is called with: the resource (and version) its rule matched.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The resource in the version the webhook sees the object in.
    pub info: Arc<ResourceInfo>,
}

fn exact_or_wildcard(items: &[String], requested: &str) -> bool {
    items.iter().any(|i| i == "*" || i == requested)
}

fn rule_matches(rule: &Rule, attrs: &Attributes, info: &ResourceInfo) -> bool {
    let is_namespace = info.api.group.is_empty() && info.api.plural == "namespaces";
    let scope = match rule.scope.as_str() {
        "*" | "" => true,
        "Namespaced" => !is_namespace && !attrs.namespace.is_empty(),
        "Cluster" => is_namespace || attrs.namespace.is_empty(),
        _ => false,
    };
    let operation = rule
        .operations
        .iter()
        .any(|o| o == "*" || o == attrs.operation.as_str());
    let resource = rule.resources.iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == info.api.plural) && (sub == "*" || sub == attrs.subresource)
    });
    scope
        && operation
        && exact_or_wildcard(&rule.api_groups, &info.api.group)
        && exact_or_wildcard(&rule.api_versions, &info.api.version)
        && resource
}

fn labels(obj: Option<&Value>) -> Option<std::collections::BTreeMap<String, String>> {
    let obj = obj?;
    Some(
        obj.pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            })
            .unwrap_or_default(),
    )
}

/// The labels the `namespaceSelector` is matched against (`GetNamespaceLabels`).
fn namespace_labels(
    registry: &Registry,
    attrs: &Attributes,
) -> Result<std::collections::BTreeMap<String, String>, ApiError> {
    let info = &attrs.info;
    let namespaces = GroupResource::new("", "namespaces");
    if info.group_resource() == namespaces
        && attrs.subresource.is_empty()
        && matches!(attrs.operation, Operation::Create | Operation::Update)
    {
        return Ok(labels(attrs.object.as_ref()).unwrap_or_default());
    }
    let state = registry.store.read();
    match state.get(&namespaces, &attrs.namespace) {
        Some(ns) => Ok(labels(Some(&ns.value)).unwrap_or_default()),
        None => Err(ApiError::not_found(&namespaces, &attrs.namespace)),
    }
}

/// `MatchNamespaceSelector`: whether it matches, or the error to answer if a rule matches.
fn namespace_match(registry: &Registry, hook: &Hook, attrs: &Attributes) -> Result<bool, ApiError> {
    let is_namespace = attrs.info.api.group.is_empty() && attrs.info.api.plural == "namespaces";
    if attrs.namespace.is_empty() && !is_namespace {
        return Ok(true);
    }
    let Some(selector) = selector(hook.namespace_selector.as_ref()).map_err(internal_error)? else {
        return Ok(true);
    };
    Ok(selector.matches(&namespace_labels(registry, attrs)?))
}

/// `MatchObjectSelector`.
fn object_match(hook: &Hook, attrs: &Attributes) -> Result<bool, ApiError> {
    let Some(selector): Option<Selector> =
        selector(hook.object_selector.as_ref()).map_err(internal_error)?
    else {
        return Ok(true);
    };
    let matches = |obj: Option<&Value>| labels(obj).is_some_and(|l| selector.matches(&l));
    Ok(matches(attrs.object.as_ref()) || matches(attrs.old_object.as_ref()))
}

/// Whether `hook` is called for the request, and in which version (`ShouldCallHook`).
pub fn should_call(
    registry: &Registry,
    hook: &Hook,
    attrs: &Attributes,
) -> Result<Option<Invocation>, ApiError> {
    let namespace = namespace_match(registry, hook, attrs);
    if matches!(namespace, Ok(false)) {
        return Ok(None);
    }
    let object = object_match(hook, attrs);
    if matches!(object, Ok(false)) {
        return Ok(None);
    }
    let mut invocation = hook
        .rules
        .iter()
        .any(|r| rule_matches(r, attrs, &attrs.info))
        .then(|| Invocation {
            info: attrs.info.clone(),
        });
    if invocation.is_none() && hook.equivalent {
        let equivalents = equivalents(registry, &attrs.info);
        invocation = hook.rules.iter().find_map(|rule| {
            equivalents
                .iter()
                .find(|e| rule_matches(rule, attrs, e))
                .map(|e| Invocation { info: e.clone() })
        });
    }
    if invocation.is_none() {
        return Ok(None);
    }
    namespace?;
    object?;
    if hook.has_match_conditions {
        tracing::debug!(
            "kclient-fake: webhook {:?} has matchConditions, which are not evaluated: calling it",
            hook.name
        );
    }
    Ok(invocation)
}

/// The other served versions of the request's resource: those of a custom resource (the
/// built-in resources the fake serves have none).
fn equivalents(registry: &Registry, info: &ResourceInfo) -> Vec<Arc<ResourceInfo>> {
    if !info.custom {
        return Vec::new();
    }
    let mut out: Vec<Arc<ResourceInfo>> = registry
        .catalogue
        .all()
        .into_iter()
        .filter(|i| {
            i.group_resource() == info.group_resource() && i.api.version != info.api.version
        })
        .collect();
    out.sort_by_key(|i| crate::catalogue::version_rank(&i.api.version));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::Catalogue;

    fn attrs(plural: &str, group: &str, sub: &str, op: Operation, ns: &str) -> Attributes {
        let catalogue = Catalogue::builtin();
        let info = catalogue
            .all()
            .into_iter()
            .find(|i| i.api.plural == plural && i.api.group == group)
            .unwrap();
        Attributes {
            operation: op,
            info,
            subresource: sub.to_string(),
            namespace: ns.to_string(),
            name: "x".into(),
            object: None,
            old_object: None,
        }
    }

    fn rule(ops: &[&str], groups: &[&str], resources: &[&str], scope: &str) -> Rule {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
        Rule {
            operations: s(ops),
            api_groups: s(groups),
            api_versions: s(&["*"]),
            resources: s(resources),
            scope: scope.to_string(),
        }
    }

    #[test]
    fn resources_and_subresources_match_as_on_the_server() {
        let status = attrs("pods", "", "status", Operation::Update, "default");
        let main = attrs("pods", "", "", Operation::Update, "default");
        let info = status.info.clone();
        for (resources, on_status, on_main) in [
            (&["pods"][..], false, true),
            (&["pods/status"][..], true, false),
            (&["pods/*"][..], true, true),
            (&["*/status"][..], true, false),
            (&["*"][..], false, true),
            (&["*/*"][..], true, true),
            (&["deployments"][..], false, false),
        ] {
            let r = rule(&["UPDATE"], &[""], resources, "*");
            assert_eq!(rule_matches(&r, &status, &info), on_status, "{resources:?}");
            assert_eq!(rule_matches(&r, &main, &info), on_main, "{resources:?}");
        }
        let create_only = rule(&["CREATE"], &["*"], &["*"], "*");
        assert!(!rule_matches(&create_only, &main, &info));
        let apps = rule(&["*"], &["apps"], &["*"], "*");
        assert!(!rule_matches(&apps, &main, &info));
    }

    #[test]
    fn scopes_follow_the_namespace_of_the_request() {
        let pod = attrs("pods", "", "", Operation::Create, "default");
        let ns = attrs("namespaces", "", "", Operation::Create, "team");
        let node = attrs("nodes", "", "", Operation::Create, "");
        let namespaced = rule(&["*"], &["*"], &["*"], "Namespaced");
        let cluster = rule(&["*"], &["*"], &["*"], "Cluster");
        assert!(rule_matches(&namespaced, &pod, &pod.info));
        assert!(!rule_matches(&namespaced, &ns, &ns.info));
        assert!(!rule_matches(&namespaced, &node, &node.info));
        assert!(!rule_matches(&cluster, &pod, &pod.info));
        assert!(rule_matches(&cluster, &ns, &ns.info));
        assert!(rule_matches(&cluster, &node, &node.info));
    }
}
