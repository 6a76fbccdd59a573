//! Jobs (`ValidateJobSpecUpdate`): the selector, `completions` (of a non-indexed Job; an
//! indexed Job's changes only together with `parallelism`), `completionMode`,
//! `podFailurePolicy`, `backoffLimitPerIndex`, `managedBy`, `successPolicy`, and the pod
//! template (`validatePodTemplateUpdate`, with the job strategy's options of v1.37, where
//! `MutablePodResourcesForSuspendedJobs` and `MutableSchedulingDirectivesForSuspendedJobs`
//! are on by default): of a Job suspended before it started (or that the controller has
//! marked `Suspended`, with no active pods), the template's node affinity, node selector,
//! tolerations, scheduling gates, labels and annotations may change, and its containers'
//! resources; of any other Job, nothing of the template.

use kclient_core::FieldError;
use serde_json::{json, Value};

use super::{at, immutable_field, normalized, put, same};

/// A Job update, in `ValidateJobSpecUpdate`'s order.
pub(super) fn update(old: &Value, new: &Value) -> Vec<FieldError> {
    let spec = |obj: &'_ Value, name: &str| at(obj, &["spec", name]).cloned();
    let mut errs: Vec<FieldError> = completions(old, new).into_iter().collect();
    errs.extend(immutable_field(
        "spec.selector",
        spec(new, "selector").as_ref(),
        spec(old, "selector").as_ref(),
    ));
    errs.extend(template(old, new));
    for name in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        errs.extend(immutable_field(
            &format!("spec.{name}"),
            spec(new, name).as_ref(),
            spec(old, name).as_ref(),
        ));
    }
    errs
}

/// `validateCompletions`.
fn completions(old: &Value, new: &Value) -> Option<FieldError> {
    let new_completions = at(new, &["spec", "completions"]);
    let old_completions = at(old, &["spec", "completions"]);
    let indexed = at(new, &["spec", "completionMode"]) == Some(&json!("Indexed"));
    if !indexed {
        return immutable_field("spec.completions", new_completions, old_completions);
    }
    if same(new_completions, old_completions) {
        return None;
    }
    let completions = new_completions?;
    // Defaulted to 1 by the server when absent.
    let parallelism = at(new, &["spec", "parallelism"])
        .cloned()
        .unwrap_or(json!(1));
    (*completions != parallelism).then(|| {
        FieldError::invalid(
            "spec.completions",
            completions,
            "can only be modified in tandem with spec.parallelism",
        )
    })
}

/// Whether the job strategy lets a suspended Job's template change
/// (`shouldAllowMutablePodTemplate`): suspended, not started or marked `Suspended`, and
/// without active pods.
fn template_may_change(old: &Value) -> bool {
    let suspended = at(old, &["spec", "suspend"]) == Some(&json!(true));
    let not_started = at(old, &["status", "startTime"]).is_none();
    let marked_suspended = at(old, &["status", "conditions"])
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "Suspended" && c["status"] == "True")
        });
    let active = at(old, &["status", "active"])
        .and_then(Value::as_i64)
        .unwrap_or(0);
    suspended && (not_started || marked_suspended) && active == 0
}

/// `validatePodTemplateUpdate`.
fn template(old: &Value, new: &Value) -> Option<FieldError> {
    let new_template = at(new, &["spec", "template"]).cloned().unwrap_or(json!({}));
    let mut old_template = at(old, &["spec", "template"]).cloned().unwrap_or(json!({}));
    let suspended = at(old, &["spec", "suspend"]) == Some(&json!(true));
    let mutable = template_may_change(old);
    if mutable {
        take_scheduling_directives(&mut old_template, &new_template);
    }
    if !suspended || !mutable {
        return immutable_field("spec.template", Some(&new_template), Some(&old_template));
    }
    // Only the containers' resources may differ now.
    let mut old_spec = old_template.get("spec").cloned().unwrap_or(json!({}));
    let new_spec = new_template.get("spec").cloned().unwrap_or(json!({}));
    for list in ["containers", "initContainers"] {
        take_resources(&mut old_spec, &new_spec, list);
    }
    immutable_field("spec.template.spec", Some(&new_spec), Some(&old_spec))
}

/// What a suspended Job's template may change besides resources, copied from the new
/// template into the old one before they are compared.
fn take_scheduling_directives(old: &mut Value, new: &Value) {
    let new_affinity = at(new, &["spec", "affinity"]).cloned();
    let old_affinity = at(old, &["spec", "affinity"]).cloned();
    let affinity = match (new_affinity, old_affinity) {
        (None, Some(mut kept)) => {
            put(&mut kept, "nodeAffinity", None);
            normalized(&kept).is_some().then_some(kept)
        }
        (Some(new_affinity), None) => {
            Some(json!({"nodeAffinity": new_affinity.get("nodeAffinity").cloned()}))
        }
        (Some(new_affinity), Some(mut kept)) => {
            put(
                &mut kept,
                "nodeAffinity",
                new_affinity.get("nodeAffinity").cloned(),
            );
            Some(kept)
        }
        (None, None) => None,
    };
    if let Some(spec) = old.get_mut("spec") {
        put(spec, "affinity", affinity);
        for field in ["nodeSelector", "tolerations", "schedulingGates"] {
            put(spec, field, at(new, &["spec", field]).cloned());
        }
    }
    if old.get("metadata").is_none() {
        put(old, "metadata", Some(json!({})));
    }
    if let Some(metadata) = old.get_mut("metadata") {
        for field in ["labels", "annotations"] {
            put(metadata, field, at(new, &["metadata", field]).cloned());
        }
    }
}

/// `validatePodResourceUpdatesOnly`: each container's resources taken from the new list,
/// where the lists have the same length and the container the same name.
fn take_resources(old_spec: &mut Value, new_spec: &Value, list: &str) {
    let new_list = at(new_spec, &[list]).and_then(Value::as_array);
    let Some(old_list) = old_spec.get_mut(list).and_then(Value::as_array_mut) else {
        return;
    };
    let Some(new_list) = new_list.filter(|n| n.len() == old_list.len()) else {
        return;
    };
    for (old_container, new_container) in old_list.iter_mut().zip(new_list) {
        if old_container.get("name") == new_container.get("name") {
            put(
                old_container,
                "resources",
                new_container.get("resources").cloned(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "j"}, "spec": spec, "status": status})
    }

    fn template(image: &str) -> Value {
        json!({"metadata": {"labels": {"app": "j"}},
               "spec": {"restartPolicy": "Never",
                        "containers": [{"name": "c", "image": image}]}})
    }

    fn fields(errs: Vec<FieldError>) -> Vec<String> {
        errs.into_iter().map(|e| e.field).collect()
    }

    #[test]
    fn a_running_jobs_template_and_selector_are_fixed() {
        let old = job(
            json!({"selector": {"matchLabels": {"app": "j"}}, "template": template("a")}),
            json!({"startTime": "2026-01-01T00:00:00Z", "active": 1}),
        );
        let new = job(
            json!({"selector": {"matchLabels": {"app": "k"}}, "template": template("b")}),
            json!({}),
        );
        assert_eq!(
            fields(update(&old, &new)),
            ["spec.selector", "spec.template"]
        );
        let errs = update(&old, &new);
        assert!(errs[1]
            .full()
            .starts_with("spec.template: Invalid value: {"));
        assert!(errs[1].full().ends_with("}: field is immutable"));
    }

    #[test]
    fn a_suspended_job_not_started_may_change_scheduling_and_resources() {
        let old = job(
            json!({"suspend": true, "template": template("a")}),
            json!({}),
        );
        let mut new = old.clone();
        new["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
        new["spec"]["template"]["metadata"]["labels"]["extra"] = json!("yes");
        new["spec"]["template"]["spec"]["containers"][0]["resources"] =
            json!({"requests": {"cpu": "1"}});
        assert!(update(&old, &new).is_empty(), "{:?}", update(&old, &new));
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("b");
        let errs = update(&old, &new);
        assert_eq!(fields(errs), ["spec.template.spec"]);

        let started = job(
            json!({"suspend": true, "template": template("a")}),
            json!({"startTime": "2026-01-01T00:00:00Z"}),
        );
        let mut relabelled = started.clone();
        relabelled["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
        assert_eq!(fields(update(&started, &relabelled)), ["spec.template"]);
    }

    #[test]
    fn completions_of_indexed_jobs_move_with_parallelism() {
        let old = job(json!({"completions": 2, "parallelism": 2}), json!({}));
        assert_eq!(
            fields(update(
                &old,
                &job(json!({"completions": 3, "parallelism": 2}), json!({}))
            )),
            ["spec.completions"]
        );
        let indexed = |c: i64, p: i64| {
            job(
                json!({"completionMode": "Indexed", "completions": c, "parallelism": p}),
                json!({}),
            )
        };
        assert!(update(&indexed(2, 2), &indexed(3, 3)).is_empty());
        let errs = update(&indexed(2, 2), &indexed(3, 2));
        assert_eq!(
            errs[0].full(),
            "spec.completions: Invalid value: 3: can only be modified in tandem with spec.parallelism"
        );
    }
}
