//! The apps/v1 workloads: a Deployment's, ReplicaSet's and DaemonSet's selector
//! (`ValidateDeploymentUpdate`, `ValidateReplicaSetUpdate`, `ValidateDaemonSetSpecUpdate`), and
//! what `ValidateStatefulSetUpdate` holds: the selector, `volumeClaimTemplates`,
//! `serviceName` and `podManagementPolicy`.

use kclient_core::FieldError;
use serde_json::Value;

use super::{at, immutable_field, immutable_string};

/// `spec.selector` of a Deployment, ReplicaSet or DaemonSet.
pub(super) fn selector_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let selector = &["spec", "selector"];
    immutable_field("spec.selector", at(new, selector), at(old, selector))
        .into_iter()
        .collect()
}

/// A StatefulSet, in `ValidateStatefulSetUpdate`'s order.
pub(super) fn stateful_set_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let field = |name: &str| (at(new, &["spec", name]), at(old, &["spec", name]));
    let (new_selector, old_selector) = field("selector");
    let (new_claims, old_claims) = field("volumeClaimTemplates");
    let (new_service, old_service) = field("serviceName");
    let (new_policy, old_policy) = field("podManagementPolicy");
    [
        immutable_field("spec.selector", new_selector, old_selector),
        immutable_field("spec.volumeClaimTemplates", new_claims, old_claims),
        immutable_string("spec.serviceName", new_service, old_service),
        immutable_string("spec.podManagementPolicy", new_policy, old_policy),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn with_spec(spec: Value) -> Value {
        json!({"metadata": {"name": "web"}, "spec": spec})
    }

    #[test]
    fn a_selector_cannot_change_but_everything_else_can() {
        let old = with_spec(json!({"replicas": 1, "selector": {"matchLabels": {"app": "web"}}}));
        let scaled = with_spec(json!({"replicas": 3, "selector": {"matchLabels": {"app": "web"}}}));
        assert!(selector_update(&old, &scaled).is_empty());
        let moved = with_spec(json!({"selector": {"matchLabels": {"app": "db"}}}));
        let errs = selector_update(&old, &moved);
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].full(),
            r#"spec.selector: Invalid value: {"matchLabels":{"app":"db"}}: field is immutable"#
        );
    }

    #[test]
    fn a_stateful_set_lists_each_immutable_field_in_the_servers_order() {
        let old = with_spec(json!({"selector": {"matchLabels": {"app": "web"}},
                                   "serviceName": "web", "podManagementPolicy": "OrderedReady"}));
        let new = with_spec(json!({"selector": {"matchLabels": {"app": "web2"}},
                                   "serviceName": "web2", "podManagementPolicy": "Parallel",
                                   "volumeClaimTemplates": [{"metadata": {"name": "data"}}]}));
        let fields: Vec<String> = stateful_set_update(&old, &new)
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(
            fields,
            [
                "spec.selector",
                "spec.volumeClaimTemplates",
                "spec.serviceName",
                "spec.podManagementPolicy"
            ]
        );
    }
}
