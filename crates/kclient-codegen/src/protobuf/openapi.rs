//! What the generator needs from k8s-openapi's source for one Kubernetes version: per
//! definition (`io.k8s.api.core.v1.Pod`), the Rust path, the struct's fields with their Rust
//! types, the JSON name of each field (from the `"jsonName" => Field::Key_rust_name` lines of
//! its `Deserialize` impl, so k8s-openapi's renames are not re-derived), and whether it
//! implements `Default`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::Error;
use crate::source_tree::each_k8s_openapi_file;

/// The shape of a k8s-openapi type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// `pub struct X { … }`.
    Struct,
    /// `pub struct X(pub serde_json::Value);` (an empty message, or a raw JSON type).
    JsonNewtype,
    /// Anything else (enums, other newtypes): hand-written or not a message.
    Other,
}

/// One k8s-openapi definition.
#[derive(Debug, Clone)]
pub struct Definition {
    /// `k8s_openapi::api::core::v1::Pod`.
    pub rust_path: String,
    /// The shape.
    pub shape: Shape,
    /// Struct fields: Rust name → Rust type (with `crate::` as in the source).
    pub fields: BTreeMap<String, String>,
    /// JSON name → Rust field name.
    pub json: BTreeMap<String, String>,
    /// Whether the type implements `Default`.
    pub has_default: bool,
    /// Whether the type implements k8s-openapi's `Resource` (a kind with an `apiVersion`).
    pub resource: bool,
}

/// Reads every definition of one version directory (`…/k8s-openapi-0.29.0/src/v1_37`), by
/// definition name.
pub fn read_definitions(version_dir: &Path) -> Result<BTreeMap<String, Definition>, Error> {
    let mut out = BTreeMap::new();
    each_k8s_openapi_file(version_dir, |module, source| {
        let name = source
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("// Generated from definition "));
        if let Some(name) = name {
            if let Some(def) = parse_definition(source, module) {
                out.insert(name.trim().to_owned(), def);
            }
        }
    })?;
    Ok(out)
}

/// Parses one generated file of k8s-openapi.
pub fn parse_definition(source: &str, module: &[String]) -> Option<Definition> {
    let (shape, type_name, body) = if let Some(at) = source.find("\npub struct ") {
        let rest = &source[at + "\npub struct ".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let after = &rest[name.len()..];
        if after.starts_with(" {") {
            let end = after.find("\n}").unwrap_or(after.len());
            (Shape::Struct, name, &after[..end])
        } else if after.starts_with("(pub crate::serde_json::Value);") {
            (Shape::JsonNewtype, name, "")
        } else {
            (Shape::Other, name, "")
        }
    } else if let Some(at) = source.find("\npub enum ") {
        let rest = &source[at + "\npub enum ".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        (Shape::Other, name, "")
    } else {
        return None;
    };
    let mut fields = BTreeMap::new();
    for line in body.lines() {
        let Some(rest) = line.strip_prefix("    pub ") else {
            continue;
        };
        let Some((name, ty)) = rest.split_once(": ") else {
            continue;
        };
        fields.insert(name.to_owned(), ty.trim_end_matches(',').to_owned());
    }
    let mut json = BTreeMap::new();
    for line in source.lines() {
        let l = line.trim();
        let Some((key, rust)) = l.split_once("\" => Field::Key_") else {
            continue;
        };
        let Some(key) = key.strip_prefix('"') else {
            continue;
        };
        let rust = rust.trim_end_matches(',');
        if fields.contains_key(rust) {
            json.insert(key.to_owned(), rust.to_owned());
        }
    }
    let derive_default = source
        .lines()
        .take_while(|l| !l.starts_with("pub struct") && !l.starts_with("pub enum"))
        .any(|l| l.starts_with("#[derive(") && l.contains("Default"));
    let has_default = derive_default || source.contains(&format!("impl Default for {type_name} "));
    let resource = source.contains(&format!("impl crate::Resource for {type_name} {{"));
    let mut path = vec!["k8s_openapi".to_owned()];
    path.extend(module.iter().cloned());
    path.push(type_name);
    Some(Definition {
        rust_path: path.join("::"),
        shape,
        fields,
        json,
        has_default,
        resource,
    })
}

/// The k8s-openapi definition name of a proto message (`k8s.io.api.core.v1.Pod` →
/// `io.k8s.api.core.v1.Pod`).
pub fn definition_name(proto: &str) -> String {
    let rest = proto.strip_prefix("k8s.io.").unwrap_or(proto);
    format!(
        "io.k8s.{}",
        rest.replace("apiextensions_apiserver", "apiextensions-apiserver")
            .replace("kube_aggregator", "kube-aggregator")
    )
}
