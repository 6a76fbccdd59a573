//! Pods (`ValidatePodUpdate`, the spec's part): no container added or removed, every
//! container keeps an image; `activeDeadlineSeconds` may be set or lowered, never raised or
//! unset; tolerations may be added (an existing one may change only its
//! `tolerationSeconds`); scheduling gates may only be removed; `terminationGracePeriodSeconds`
//! may go from a negative value to 1; while the pod is gated, `nodeSelector` may gain
//! entries and the required node affinity may gain requirements. Any other change of the
//! spec is `spec: Forbidden: pod updates may not change fields other than ...`, followed by
//! a diff of the two specs.

use kclient_core::FieldError;
use serde_json::{json, Map, Value};

use super::{at, diff, put, same};

/// kube-apiserver's `updatablePodSpecFields`, in its order.
const UPDATABLE_FIELDS: &[&str] = &[
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
];

fn list<'a>(spec: &'a Value, field: &str) -> &'a [Value] {
    at(spec, &[field])
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// A pod update, in `ValidatePodUpdate`'s order.
pub(super) fn update(old: &Value, new: &Value) -> Vec<FieldError> {
    let empty = json!({});
    let old_spec = at(old, &["spec"]).unwrap_or(&empty);
    let new_spec = at(new, &["spec"]).unwrap_or(&empty);
    let mut errs = Vec::new();
    for field in ["containers", "initContainers"] {
        let stop = container_updates(new_spec, old_spec, field, &mut errs);
        if stop {
            return errs;
        }
    }
    if active_deadline(new_spec, old_spec, &mut errs) {
        return errs;
    }
    errs.extend(only_added_tolerations(new_spec, old_spec));
    errs.extend(only_deleted_scheduling_gates(new_spec, old_spec));
    if same(Some(new_spec), Some(old_spec)) {
        return errs;
    }
    let mut munged = new_spec.clone();
    for field in ["containers", "initContainers"] {
        if let Some(containers) = munged.get_mut(field).and_then(Value::as_array_mut) {
            for (container, old_container) in containers.iter_mut().zip(list(old_spec, field)) {
                put(container, "image", old_container.get("image").cloned());
            }
        }
    }
    for field in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
        put(&mut munged, field, at(old_spec, &[field]).cloned());
    }
    let grace = "terminationGracePeriodSeconds";
    let was_negative = at(old_spec, &[grace])
        .and_then(Value::as_i64)
        .is_some_and(|g| g < 0);
    if was_negative && at(&munged, &[grace]).and_then(Value::as_i64) == Some(1) {
        put(&mut munged, grace, at(old_spec, &[grace]).cloned());
    }
    if !list(old_spec, "schedulingGates").is_empty() {
        gated_pod_changes(&mut munged, old_spec, &mut errs);
    }
    if !same(Some(&munged), Some(old_spec)) {
        let detail = format!(
            "pod updates may not change fields other than {}\n{}",
            UPDATABLE_FIELDS.join(","),
            diff::unified(old_spec, &munged)
        );
        errs.push(FieldError::forbidden("spec", &detail));
    }
    errs
}

/// `ValidateContainerUpdates`: whether validation stops here (a container was added or
/// removed).
fn container_updates(
    new_spec: &Value,
    old_spec: &Value,
    field: &str,
    errs: &mut Vec<FieldError>,
) -> bool {
    let (new, old) = (list(new_spec, field), list(old_spec, field));
    let path = format!("spec.{field}");
    if new.len() != old.len() {
        errs.push(FieldError::forbidden(
            &path,
            "pod updates may not add or remove containers",
        ));
        return true;
    }
    for (i, container) in new.iter().enumerate() {
        let image = container.get("image").and_then(Value::as_str).unwrap_or("");
        if image.is_empty() {
            errs.push(FieldError::required(&format!("{path}[{i}].image"), ""));
        }
        if image.trim() != image {
            errs.push(FieldError::invalid(
                &format!("{path}[{i}].image"),
                &json!(image),
                "must not have leading or trailing whitespace",
            ));
        }
    }
    false
}

/// The rules of `activeDeadlineSeconds`: whether validation stops here.
fn active_deadline(new_spec: &Value, old_spec: &Value, errs: &mut Vec<FieldError>) -> bool {
    let path = "spec.activeDeadlineSeconds";
    let old = at(old_spec, &["activeDeadlineSeconds"]).and_then(Value::as_i64);
    match at(new_spec, &["activeDeadlineSeconds"]) {
        Some(new_value) => {
            let new = new_value.as_i64().unwrap_or(-1);
            if !(0..=i64::from(i32::MAX)).contains(&new) {
                let detail = format!("must be between 0 and {}, inclusive", i32::MAX);
                errs.push(FieldError::invalid(path, new_value, &detail));
                return true;
            }
            if old.is_some_and(|old| old < new) {
                errs.push(FieldError::invalid(
                    path,
                    new_value,
                    "must be less than or equal to previous value",
                ));
                return true;
            }
        }
        None if old.is_some() => errs.push(FieldError::invalid(
            path,
            &Value::Null,
            "must not update from a positive integer to nil value",
        )),
        None => {}
    }
    false
}

/// `validateOnlyAddedTolerations` (the tolerations' own validation is not done).
fn only_added_tolerations(new_spec: &Value, old_spec: &Value) -> Option<FieldError> {
    let without_seconds = |t: &Value| {
        let mut t = t.clone();
        put(&mut t, "tolerationSeconds", None);
        t
    };
    let new: Vec<Value> = list(new_spec, "tolerations")
        .iter()
        .map(without_seconds)
        .collect();
    let kept = list(old_spec, "tolerations").iter().all(|old| {
        let old = without_seconds(old);
        new.iter().any(|n| same(Some(n), Some(&old)))
    });
    (!kept).then(|| {
        FieldError::forbidden(
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        )
    })
}

/// `validateOnlyDeletedSchedulingGates`.
fn only_deleted_scheduling_gates(new_spec: &Value, old_spec: &Value) -> Vec<FieldError> {
    let name = |g: &Value| {
        g.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let old: Vec<String> = list(old_spec, "schedulingGates").iter().map(name).collect();
    let new = list(new_spec, "schedulingGates");
    // Each new gate name at the last index it has (Go's map of names to indices).
    let mut added: Vec<(usize, String)> = Vec::new();
    for (i, gate) in new.iter().enumerate() {
        let gate = name(gate);
        added.retain(|(_, g)| *g != gate);
        if !old.contains(&gate) {
            added.push((i, gate));
        }
    }
    added
        .into_iter()
        .map(|(i, gate)| {
            FieldError::forbidden(
                &format!("spec.schedulingGates[{i}].name"),
                &format!("only deletion is allowed, but found new scheduling gate '{gate}'"),
            )
        })
        .collect()
}

/// What a gated pod may change besides: additions to `nodeSelector`
/// (`validateNodeSelectorMutation`) and to the required node affinity's terms
/// (`validateNodeAffinityMutation`), taken back from the old spec once judged.
fn gated_pod_changes(munged: &mut Value, old_spec: &Value, errs: &mut Vec<FieldError>) {
    let new_selector = at(munged, &["nodeSelector"]).cloned();
    let old_selector = at(old_spec, &["nodeSelector"]).cloned();
    if !same(new_selector.as_ref(), old_selector.as_ref()) {
        let empty = Map::new();
        let new_map = new_selector
            .as_ref()
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let kept = old_selector
            .as_ref()
            .and_then(Value::as_object)
            .unwrap_or(&empty)
            .iter()
            .all(|(k, v)| new_map.get(k) == Some(v));
        if !kept {
            errs.push(FieldError::invalid(
                "spec.nodeSelector",
                new_selector.as_ref().unwrap_or(&Value::Null),
                "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
            ));
        }
        put(munged, "nodeSelector", old_selector);
    }
    let old_affinity = at(old_spec, &["affinity", "nodeAffinity"]).cloned();
    let new_affinity = at(munged, &["affinity", "nodeAffinity"]).cloned();
    if same(old_affinity.as_ref(), new_affinity.as_ref()) {
        return;
    }
    errs.extend(node_affinity_mutation(
        new_affinity.as_ref(),
        old_affinity.as_ref(),
    ));
    let munged_affinity = at(munged, &["affinity"]).cloned();
    let affinity = match munged_affinity {
        None if old_affinity.is_none() => None,
        None => Some(json!({"nodeAffinity": old_affinity})),
        Some(a)
            if at(old_spec, &["affinity"]).is_none()
                && at(&a, &["podAffinity"]).is_none()
                && at(&a, &["podAntiAffinity"]).is_none() =>
        {
            None
        }
        Some(mut a) => {
            put(&mut a, "nodeAffinity", old_affinity);
            Some(a)
        }
    };
    put(munged, "affinity", affinity);
}

/// `validateNodeAffinityMutation`.
fn node_affinity_mutation(new: Option<&Value>, old: Option<&Value>) -> Vec<FieldError> {
    let required = "requiredDuringSchedulingIgnoredDuringExecution";
    let terms = |affinity: Option<&Value>| -> Option<Vec<Value>> {
        let required = at(affinity?, &[required])?;
        Some(
            at(required, &["nodeSelectorTerms"])
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        )
    };
    let Some(old_terms) = terms(old) else {
        return Vec::new();
    };
    let new_terms = terms(new);
    let new_list = new_terms.clone().unwrap_or_default();
    let path = format!("spec.affinity.nodeAffinity.{required}.nodeSelectorTerms");
    if !old_terms.is_empty() && old_terms.len() != new_list.len() {
        let shown = new_terms
            .as_deref()
            .map(internal_terms)
            .unwrap_or(Value::Null);
        return vec![FieldError::invalid(
            &path,
            &shown,
            "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
        )];
    }
    old_terms
        .iter()
        .zip(&new_list)
        .enumerate()
        .filter(|(_, (old, new))| !only_additions(new, old))
        .map(|(i, (_, new))| {
            FieldError::invalid(
                &format!("{path}[{i}]"),
                &internal_term(new),
                "only additions are allowed (no mutations or deletions)",
            )
        })
        .collect()
}

/// `validateNodeSelectorTermHasOnlyAdditions`.
fn only_additions(new: &Value, old: &Value) -> bool {
    let (old_expressions, old_fields) = (list(old, "matchExpressions"), list(old, "matchFields"));
    let (new_expressions, new_fields) = (list(new, "matchExpressions"), list(new, "matchFields"));
    if old_expressions.is_empty()
        && old_fields.is_empty()
        && (!new_expressions.is_empty() || !new_fields.is_empty())
    {
        return false;
    }
    let prefix_kept = |new: &[Value], old: &[Value]| {
        old.is_empty()
            || (new.len() >= old.len()
                && new[..old.len()]
                    .iter()
                    .zip(old)
                    .all(|(n, o)| same(Some(n), Some(o))))
    };
    prefix_kept(new_expressions, old_expressions) && prefix_kept(new_fields, old_fields)
}

/// A node selector term as the server shows it in a message: its internal Go type marshalled
/// (Go field names, no `omitempty`).
fn internal_term(term: &Value) -> Value {
    let requirements = |field: &str| -> Value {
        match at(term, &[field]).and_then(Value::as_array) {
            None => Value::Null,
            Some(list) => list
                .iter()
                .map(|r| {
                    json!({
                        "Key": r.get("key").cloned().unwrap_or(json!("")),
                        "Operator": r.get("operator").cloned().unwrap_or(json!("")),
                        "Values": r.get("values").cloned().unwrap_or(Value::Null),
                    })
                })
                .collect(),
        }
    };
    json!({"MatchExpressions": requirements("matchExpressions"),
           "MatchFields": requirements("matchFields")})
}

fn internal_terms(terms: &[Value]) -> Value {
    terms.iter().map(internal_term).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    fn base() -> Value {
        json!({"containers": [{"name": "c", "image": "nginx:1"}],
               "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": 300}],
               "restartPolicy": "Always"})
    }

    fn messages(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter()
            .map(|e| e.full().lines().next().unwrap_or_default().to_string())
            .collect()
    }

    #[test]
    fn the_mutable_fields_may_change() {
        let old = pod(base());
        let mut new = old.clone();
        new["spec"]["containers"][0]["image"] = json!("nginx:2");
        new["spec"]["activeDeadlineSeconds"] = json!(60);
        new["spec"]["tolerations"][0]["tolerationSeconds"] = json!(60);
        new["spec"]["tolerations"]
            .as_array_mut()
            .unwrap()
            .push(json!({"key": "other", "operator": "Exists"}));
        assert!(update(&old, &new).is_empty(), "{:?}", update(&old, &new));
    }

    #[test]
    fn node_name_is_a_forbidden_change_with_its_diff() {
        let old = pod(base());
        let mut new = old.clone();
        new["spec"]["nodeName"] = json!("node-a");
        let errs = update(&old, &new);
        assert_eq!(errs.len(), 1);
        let message = errs[0].full();
        assert_eq!(
            message.lines().next().unwrap(),
            "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
        );
        assert!(
            message.contains("+ \"nodeName\": \"node-a\",\n"),
            "{message}"
        );
        assert_eq!(errs[0].cause_type, "FieldValueForbidden");
        assert_eq!(errs[0].field, "spec");
    }

    #[test]
    fn containers_cannot_be_added_and_validation_stops_there() {
        let old = pod(base());
        let mut new = old.clone();
        new["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "d", "image": "busybox"}));
        new["spec"]["nodeName"] = json!("node-a");
        assert_eq!(
            messages(update(&old, &new)),
            ["spec.containers: Forbidden: pod updates may not add or remove containers"]
        );
        let mut blank = old.clone();
        blank["spec"]["containers"][0]["image"] = json!(" ");
        assert_eq!(
            messages(update(&old, &blank)),
            [
                r#"spec.containers[0].image: Invalid value: " ": must not have leading or trailing whitespace"#
            ]
        );
    }

    #[test]
    fn the_active_deadline_may_only_go_down() {
        let mut with_deadline = base();
        with_deadline["activeDeadlineSeconds"] = json!(60);
        let old = pod(with_deadline);
        let mut raised = old.clone();
        raised["spec"]["activeDeadlineSeconds"] = json!(120);
        assert_eq!(
            messages(update(&old, &raised)),
            ["spec.activeDeadlineSeconds: Invalid value: 120: must be less than or equal to previous value"]
        );
        let mut unset = old.clone();
        put(&mut unset["spec"], "activeDeadlineSeconds", None);
        assert_eq!(
            messages(update(&old, &unset)),
            ["spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value"]
        );
        let mut negative = old.clone();
        negative["spec"]["activeDeadlineSeconds"] = json!(-1);
        assert_eq!(
            messages(update(&old, &negative)),
            ["spec.activeDeadlineSeconds: Invalid value: -1: must be between 0 and 2147483647, inclusive"]
        );
    }

    #[test]
    fn tolerations_and_gates() {
        let old = pod(base());
        let mut changed = old.clone();
        changed["spec"]["tolerations"][0]["effect"] = json!("NoSchedule");
        let first = messages(update(&old, &changed));
        assert_eq!(
            first[0],
            "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
        );

        let mut gated = base();
        gated["schedulingGates"] = json!([{"name": "a"}]);
        let old = pod(gated);
        let mut more = old.clone();
        more["spec"]["schedulingGates"] = json!([{"name": "a"}, {"name": "b"}]);
        assert_eq!(
            messages(update(&old, &more)),
            ["spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'b'"]
        );
        // Removing the gate and, while gated, adding to the node selector are allowed.
        let mut released = old.clone();
        put(&mut released["spec"], "schedulingGates", None);
        released["spec"]["nodeSelector"] = json!({"zone": "a"});
        assert!(
            update(&old, &released).is_empty(),
            "{:?}",
            update(&old, &released)
        );
        let mut with_selector = old.clone();
        with_selector["spec"]["nodeSelector"] = json!({"zone": "a"});
        let mut moved = with_selector.clone();
        moved["spec"]["nodeSelector"] = json!({"zone": "b"});
        assert_eq!(
            messages(update(&with_selector, &moved)),
            [
                r#"spec.nodeSelector: Invalid value: {"zone":"b"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"#
            ]
        );
    }

    #[test]
    fn a_gated_pods_required_node_affinity_may_only_grow() {
        let term = |values: &[&str]| json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": values}]});
        let affinity = |terms: Value| {
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                    {"nodeSelectorTerms": terms}}})
        };
        let mut gated = base();
        gated["schedulingGates"] = json!([{"name": "a"}]);
        gated["affinity"] = affinity(json!([term(&["a"])]));
        let old = pod(gated);
        let mut grown = old.clone();
        grown["spec"]["affinity"] = affinity(json!([{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a"]},
            {"key": "disk", "operator": "Exists"}]}]));
        assert!(
            update(&old, &grown).is_empty(),
            "{:?}",
            update(&old, &grown)
        );
        let mut changed = old.clone();
        changed["spec"]["affinity"] = affinity(json!([term(&["b"])]));
        assert_eq!(
            messages(update(&old, &changed)),
            [
                r#"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]: Invalid value: {"MatchExpressions":[{"Key":"zone","Operator":"In","Values":["b"]}],"MatchFields":null}: only additions are allowed (no mutations or deletions)"#
            ]
        );
        let mut two = old.clone();
        two["spec"]["affinity"] = affinity(json!([term(&["a"]), term(&["b"])]));
        assert_eq!(
            messages(update(&old, &two))[0],
            r#"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Invalid value: [{"MatchExpressions":[{"Key":"zone","Operator":"In","Values":["a"]}],"MatchFields":null},{"MatchExpressions":[{"Key":"zone","Operator":"In","Values":["b"]}],"MatchFields":null}]: no additions/deletions to non-empty NodeSelectorTerms list are allowed"#
        );
    }

    #[test]
    fn a_negative_grace_period_may_become_one() {
        let mut negative = base();
        negative["terminationGracePeriodSeconds"] = json!(-1);
        let old = pod(negative);
        let mut one = old.clone();
        one["spec"]["terminationGracePeriodSeconds"] = json!(1);
        assert!(update(&old, &one).is_empty());
        let mut two = old.clone();
        two["spec"]["terminationGracePeriodSeconds"] = json!(2);
        assert_eq!(update(&old, &two).len(), 1);
    }
}
