//! How API names become Rust names: snake_case methods and fields, PascalCase types, and the
//! client-go-style names of group-versions.

/// Rust's keywords (strict and reserved, 2021 edition): a field or module with such a name is
/// written as a raw identifier.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// Splits an identifier into words at case changes, digits-to-letters and any
/// non-alphanumeric character: `CSIDriver` → `CSI`, `Driver`; `podIPs` → `pod`, `IPs`;
/// `x-kubernetes-id` → `x`, `kubernetes`, `id`.
pub fn words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut words = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            continue;
        }
        if let Some(&prev) = current.chars().last().as_ref() {
            let next = chars.get(i + 1).copied();
            let boundary = (prev.is_ascii_lowercase() && c.is_ascii_uppercase())
                || (prev.is_ascii_digit() && c.is_ascii_alphabetic() && c.is_ascii_uppercase())
                || (prev.is_ascii_uppercase()
                    && c.is_ascii_uppercase()
                    && next.is_some_and(|n| n.is_ascii_lowercase())
                    // `IPs`, `CIDRs`: a plural `s` after an acronym stays with it.
                    && !(next == Some('s')
                        && chars.get(i + 2).is_none_or(|n| !n.is_ascii_lowercase())));
            if boundary {
                words.push(std::mem::take(&mut current));
            }
        }
        current.push(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// `snake_case`: `ConfigMap` → `config_map`, `CSIDriver` → `csi_driver`.
pub fn snake_case(name: &str) -> String {
    words(name)
        .iter()
        .map(|w| w.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join("_")
}

/// `PascalCase`: `config_map` → `ConfigMap`; words already capitalised keep their case
/// (`CSIDriver` stays `CSIDriver`).
pub fn pascal_case(name: &str) -> String {
    words(name)
        .iter()
        .map(|w| {
            let mut chars = w.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// An identifier usable in Rust: a raw identifier for keywords, a leading `_` before a digit
/// (`_1`), and `_` for an empty name.
pub fn rust_ident(name: &str) -> String {
    if name.is_empty() {
        return "_".to_owned();
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return format!("_{name}");
    }
    if KEYWORDS.contains(&name) {
        if matches!(name, "self" | "Self" | "super" | "crate") {
            return format!("{name}_");
        }
        return format!("r#{name}");
    }
    name.to_owned()
}

/// The accessor method of a resource, from its kind and plural as client-go names them
/// (`Pods`, `ConfigMaps`, `NetworkPolicies`, `Endpoints`), in snake_case: `pods`,
/// `config_maps`, `network_policies`, `endpoints`.
pub fn resource_method(kind: &str, plural: &str) -> String {
    let snake = snake_case(kind);
    let joined = snake.replace('_', "");
    let plural = plural.to_ascii_lowercase();
    let method = if let Some(suffix) = plural.strip_prefix(&joined) {
        format!("{snake}{suffix}")
    } else if let (Some(stem), Some(plural_stem)) =
        (joined.strip_suffix('y'), plural.strip_suffix("ies"))
    {
        if stem == plural_stem {
            format!("{}ies", &snake[..snake.len() - 1])
        } else {
            plural.clone()
        }
    } else {
        plural.clone()
    };
    rust_ident(&method)
}

/// The client-go-style name of a group: its first DNS label, and `core` for the legacy
/// group (`apps`, `rbac` for `rbac.authorization.k8s.io`, `flowcontrol` for
/// `flowcontrol.apiserver.k8s.io`, `internal` for `internal.apiserver.k8s.io`).
pub fn group_name(group: &str) -> String {
    if group.is_empty() {
        return "core".to_owned();
    }
    let first = group.split('.').next().unwrap_or(group);
    first
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The module and accessor name of a group-version: `core_v1`, `apps_v1`,
/// `admissionregistration_v1alpha1`.
pub fn group_version_module(group: &str, version: &str) -> String {
    format!("{}_{}", group_name(group), version.to_ascii_lowercase())
}

/// The client type of a group-version: `CoreV1Client`, `AdmissionregistrationV1alpha1Client`
/// (client-go's `AdmissionregistrationV1alpha1Client`).
pub fn group_version_client(group: &str, version: &str) -> String {
    let mut group = group_name(group).replace('_', "");
    if let Some(first) = group.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    let mut version = version.to_ascii_lowercase();
    if let Some(first) = version.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    format!("{group}{version}Client")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_at_case_changes_and_acronyms() {
        assert_eq!(words("ConfigMap"), ["Config", "Map"]);
        assert_eq!(words("CSIDriver"), ["CSI", "Driver"]);
        assert_eq!(words("APIService"), ["API", "Service"]);
        assert_eq!(words("podIPs"), ["pod", "IPs"]);
        assert_eq!(words("serviceCIDRs"), ["service", "CIDRs"]);
        assert_eq!(
            words("x-kubernetes-int-or-string"),
            ["x", "kubernetes", "int", "or", "string"]
        );
        assert_eq!(words("v1beta1"), ["v1beta1"]);
        assert_eq!(words("$ref"), ["ref"]);
    }

    #[test]
    fn cases() {
        assert_eq!(snake_case("IPAddress"), "ip_address");
        assert_eq!(snake_case("cronSpec"), "cron_spec");
        assert_eq!(snake_case("podIPs"), "pod_ips");
        assert_eq!(pascal_case("cron_spec"), "CronSpec");
        assert_eq!(pascal_case("ServiceCIDR"), "ServiceCIDR");
        assert_eq!(pascal_case("x-kubernetes-foo"), "XKubernetesFoo");
    }

    #[test]
    fn identifiers() {
        assert_eq!(rust_ident("type"), "r#type");
        assert_eq!(rust_ident("self"), "self_");
        assert_eq!(rust_ident("1st"), "_1st");
        assert_eq!(rust_ident("name"), "name");
    }

    #[test]
    fn resource_methods_follow_client_go() {
        let cases = [
            ("Pod", "pods", "pods"),
            ("ConfigMap", "configmaps", "config_maps"),
            ("NetworkPolicy", "networkpolicies", "network_policies"),
            ("Endpoints", "endpoints", "endpoints"),
            ("ComponentStatus", "componentstatuses", "component_statuses"),
            (
                "CSIStorageCapacity",
                "csistoragecapacities",
                "csi_storage_capacities",
            ),
            ("IPAddress", "ipaddresses", "ip_addresses"),
            ("ServiceCIDR", "servicecidrs", "service_cidrs"),
            ("APIService", "apiservices", "api_services"),
            ("Binding", "bindings", "bindings"),
            ("TokenRequest", "token", "token"),
        ];
        for (kind, plural, method) in cases {
            assert_eq!(resource_method(kind, plural), method, "{kind}");
        }
    }

    #[test]
    fn group_versions() {
        assert_eq!(group_version_module("", "v1"), "core_v1");
        assert_eq!(
            group_version_module("rbac.authorization.k8s.io", "v1"),
            "rbac_v1"
        );
        assert_eq!(
            group_version_client("admissionregistration.k8s.io", "v1alpha1"),
            "AdmissionregistrationV1alpha1Client"
        );
        assert_eq!(group_version_client("", "v1"), "CoreV1Client");
    }
}
