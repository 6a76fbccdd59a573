//! The CRD of each test type against its golden copy in `tests/golden/<name>.yaml`
//! (`KCLIENT_BLESS=1 cargo test -p kclient-derive-tests --test integration golden` rewrites them
//! after a deliberate change; review the diff).

use std::path::PathBuf;

use crate::types;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[test]
fn generated_crds_match_their_golden_copies() {
    let bless = std::env::var_os("KCLIENT_BLESS").is_some_and(|v| v != "0");
    let mut stale = Vec::new();
    for (name, crd) in types::golden() {
        let yaml = serde_yaml_ng::to_string(&crd).unwrap();
        let path = golden_dir().join(format!("{name}.yaml"));
        if bless {
            std::fs::write(&path, &yaml).unwrap();
            continue;
        }
        let golden = std::fs::read_to_string(&path).unwrap_or_default();
        if golden != yaml {
            stale.push(format!("{}:\n{yaml}", path.display()));
        }
    }
    assert!(
        stale.is_empty(),
        "generated CRDs differ from their golden copies (KCLIENT_BLESS=1 rewrites them):\n{}",
        stale.join("\n")
    );
}

/// No `$ref`, no `definitions`, no `title`, no list of types, no `anyOf`/`oneOf` branch that
/// describes a type: the rules of a structural schema the rewriting is for.
#[test]
fn generated_schemas_keep_the_structural_rules() {
    fn walk(path: &str, v: &serde_json::Value, problems: &mut Vec<String>, in_union: bool) {
        let Some(m) = v.as_object() else { return };
        for bad in ["$ref", "definitions", "$defs", "title", "$schema"] {
            if m.contains_key(bad) {
                problems.push(format!("{path}: {bad}"));
            }
        }
        if let Some(t) = m.get("type") {
            if !t.is_string() {
                problems.push(format!("{path}: type {t}"));
            }
            if in_union {
                problems.push(format!("{path}: a type inside anyOf/oneOf"));
            }
        }
        if !in_union
            && !m.contains_key("type")
            && m.get("x-kubernetes-int-or-string") != Some(&serde_json::Value::Bool(true))
            && m.get("x-kubernetes-preserve-unknown-fields") != Some(&serde_json::Value::Bool(true))
        {
            problems.push(format!("{path}: no type"));
        }
        if let Some(props) = m.get("properties").and_then(|p| p.as_object()) {
            for (k, p) in props {
                walk(&format!("{path}.{k}"), p, problems, in_union);
            }
        }
        if let Some(items) = m.get("items") {
            walk(&format!("{path}[]"), items, problems, in_union);
        }
        if let Some(a @ serde_json::Value::Object(_)) = m.get("additionalProperties") {
            walk(&format!("{path}{{}}"), a, problems, in_union);
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            for (i, b) in m
                .get(key)
                .and_then(|b| b.as_array())
                .into_iter()
                .flatten()
                .enumerate()
            {
                walk(&format!("{path}.{key}[{i}]"), b, problems, true);
            }
        }
    }
    for (name, crd) in types::golden() {
        for version in &crd.spec.versions {
            let schema = serde_json::to_value(&version.schema).unwrap();
            let mut problems = Vec::new();
            walk("", &schema["openAPIV3Schema"], &mut problems, false);
            assert!(problems.is_empty(), "{name} {}: {problems:?}", version.name);
        }
    }
}
