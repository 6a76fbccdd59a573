//! Services: a cluster IP, once set, stays (`validateUpgradeDowngradeClusterIPs`). Before
//! validating, kube-apiserver's service registry fills in what a client left out and keeps
//! `clusterIP` and `clusterIPs` in step (`patchAllocatedValues`, `normalizeClusterIPs`);
//! [`normalize_update`] does the same, so that an update that only changes `clusterIP` is
//! refused as a change of `clusterIPs[0]`, as on a cluster. The fake server allocates no
//! cluster IP: the rule holds for the IPs a client set.

use kclient_core::FieldError;
use serde_json::{json, Value};

use super::{at, put};

/// `None`, the cluster IP of a headless Service.
const CLUSTER_IP_NONE: &str = "None";

fn string<'a>(svc: &'a Value, field: &str) -> &'a str {
    at(svc, &["spec", field])
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn cluster_ips(svc: &Value) -> Vec<String> {
    at(svc, &["spec", "clusterIPs"])
        .and_then(Value::as_array)
        .map(|ips| {
            ips.iter()
                .map(|ip| ip.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// `needsClusterIP`: every type but `ExternalName` (an absent type is defaulted to
/// `ClusterIP`).
fn needs_cluster_ip(svc: &Value) -> bool {
    string(svc, "type") != "ExternalName"
}

fn set_spec(svc: &mut Value, field: &str, value: Option<Value>) {
    if svc.get("spec").is_none() {
        put(svc, "spec", Some(json!({})));
    }
    if let Some(spec) = svc.get_mut("spec") {
        put(spec, field, value);
    }
}

/// On create (`normalizeClusterIPs` without an old object): a `clusterIP` without
/// `clusterIPs` gives `clusterIPs: [clusterIP]`.
pub(crate) fn normalize_create(svc: &mut Value) {
    let ip = string(svc, "clusterIP").to_string();
    if !ip.is_empty() && cluster_ips(svc).is_empty() {
        set_spec(svc, "clusterIPs", Some(json!([ip])));
    }
}

/// On update: `patchAllocatedValues` (the cluster IPs a client left out are kept) and
/// `normalizeClusterIPs` (a changed `clusterIP` moves `clusterIPs` with it).
pub(crate) fn normalize_update(old: &Value, new: &mut Value) {
    if needs_cluster_ip(old) && needs_cluster_ip(new) {
        if string(new, "clusterIP").is_empty() {
            let ip = at(old, &["spec", "clusterIP"]).cloned();
            set_spec(new, "clusterIP", ip);
        }
        if cluster_ips(new).is_empty() && !cluster_ips(old).is_empty() {
            let ips = at(old, &["spec", "clusterIPs"]).cloned();
            set_spec(new, "clusterIPs", ips);
        }
    }
    let (old_ip, new_ip) = (
        string(old, "clusterIP"),
        string(new, "clusterIP").to_string(),
    );
    let (old_ips, new_ips) = (cluster_ips(old), cluster_ips(new));
    if !old_ips.is_empty() && new_ips.is_empty() && old_ip == new_ip {
        let ips = at(old, &["spec", "clusterIPs"]).cloned();
        set_spec(new, "clusterIPs", ips);
    }
    if old_ip != new_ip && old_ips == cluster_ips(new) {
        if !old_ip.is_empty() && new_ip.is_empty() {
            set_spec(new, "clusterIPs", None);
        } else {
            set_spec(new, "clusterIPs", Some(json!([new_ip])));
        }
    }
}

/// `validateUpgradeDowngradeClusterIPs`.
pub(super) fn update(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !needs_cluster_ip(old) || !needs_cluster_ip(new) {
        return errs;
    }
    let (old_ips, new_ips) = (cluster_ips(old), cluster_ips(new));
    let headless = |ips: &[String]| ips.len() == 1 && ips[0] == CLUSTER_IP_NONE;
    if headless(&old_ips) && headless(&new_ips) {
        return errs;
    }
    let shown = at(new, &["spec", "clusterIPs"])
        .cloned()
        .unwrap_or(Value::Null);
    let invalid = |index: usize, detail: &str| {
        FieldError::invalid(&format!("spec.clusterIPs[{index}]"), &shown, detail)
    };
    let changed = "may not change once set";
    if old_ips.len() == new_ips.len() {
        for (i, ip) in old_ips.iter().enumerate() {
            if *ip != new_ips[i] {
                errs.push(invalid(i, changed));
            }
        }
    } else if old_ips.len() > new_ips.len() {
        if new_ips.is_empty() {
            errs.push(invalid(0, "primary clusterIP can not be unset"));
        }
        if !old_ips.is_empty() && !new_ips.is_empty() && new_ips[0] != old_ips[0] {
            errs.push(invalid(0, changed));
        }
        if new_ips.len() == 1 {
            let policy = at(new, &["spec", "ipFamilyPolicy"]);
            if policy != Some(&json!("SingleStack")) {
                errs.push(FieldError::invalid(
                    "spec.ipFamilyPolicy",
                    policy.unwrap_or(&Value::Null),
                    "must be set to 'SingleStack' when releasing the secondary clusterIP",
                ));
            }
        }
    } else if !old_ips.is_empty() && new_ips[0] != old_ips[0] {
        errs.push(invalid(0, changed));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(spec: Value) -> Value {
        json!({"metadata": {"name": "web"}, "spec": spec})
    }

    #[test]
    fn a_changed_cluster_ip_is_a_changed_first_cluster_ip() {
        let mut old = svc(json!({"clusterIP": "10.0.0.10"}));
        normalize_create(&mut old);
        assert_eq!(old["spec"]["clusterIPs"], json!(["10.0.0.10"]));
        let mut new = old.clone();
        new["spec"]["clusterIP"] = json!("10.0.0.11");
        normalize_update(&old, &mut new);
        assert_eq!(new["spec"]["clusterIPs"], json!(["10.0.0.11"]));
        let errs: Vec<String> = update(&old, &new).iter().map(FieldError::full).collect();
        assert_eq!(
            errs,
            [r#"spec.clusterIPs[0]: Invalid value: ["10.0.0.11"]: may not change once set"#]
        );
    }

    #[test]
    fn what_a_client_leaves_out_is_kept() {
        let mut old = svc(json!({"clusterIP": "10.0.0.10", "ports": [{"port": 80}]}));
        normalize_create(&mut old);
        let mut new = svc(json!({"ports": [{"port": 81}]}));
        normalize_update(&old, &mut new);
        assert_eq!(new["spec"]["clusterIP"], "10.0.0.10");
        assert_eq!(new["spec"]["clusterIPs"], json!(["10.0.0.10"]));
        assert!(update(&old, &new).is_empty());
    }

    #[test]
    fn external_names_and_headless_services_are_left_alone() {
        let old = svc(json!({"type": "ExternalName", "externalName": "example.com"}));
        let new = svc(json!({"clusterIP": "10.0.0.12"}));
        assert!(update(&old, &new).is_empty());
        let headless = svc(json!({"clusterIP": "None", "clusterIPs": ["None"]}));
        assert!(update(&headless, &headless).is_empty());
    }

    #[test]
    fn releasing_the_secondary_ip_needs_single_stack() {
        let old = svc(json!({"clusterIPs": ["10.0.0.10", "fd00::10"]}));
        let new = svc(json!({"clusterIPs": ["10.0.0.10"]}));
        let errs: Vec<String> = update(&old, &new).iter().map(FieldError::full).collect();
        assert_eq!(
            errs,
            ["spec.ipFamilyPolicy: Invalid value: null: must be set to 'SingleStack' when releasing the secondary clusterIP"]
        );
        let single = svc(json!({"clusterIPs": ["10.0.0.10"], "ipFamilyPolicy": "SingleStack"}));
        assert!(update(&old, &single).is_empty());
    }
}
