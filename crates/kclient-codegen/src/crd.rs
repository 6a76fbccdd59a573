//! Rust types and typed clients from CustomResourceDefinitions.
//!
//! For every served version of a CRD, [`generate_crd`] writes a module with the kind's struct
//! (`apiVersion`, `kind`, `metadata: ObjectMeta` and the schema's other top-level fields),
//! one struct per nested object, one enum per string enum, the impls of k8s-openapi's
//! `Resource`, `ListableResource` and `Metadata` (so that kclient's `Resource`, and with it
//! `ResourceClient`, informers and caches, work), `HasStatus`/`HasScale` when the CRD enables
//! those subresources, an accessor function named after the plural (`cron_tabs(&clientset,
//! "ns")`, kclient-typed) and an informer accessor (`cron_tabs_informer(&factory)`,
//! kclient-informers over kclient-cache's factory).
//!
//! How the `openAPIV3Schema` maps to Rust:
//!
//! | schema | Rust |
//! |---|---|
//! | `type: object` with `properties` | a struct (`{Parent}{Field}`), fields in snake_case renamed to their JSON names |
//! | `type: object` with `additionalProperties: {schema}` | `BTreeMap<String, T>` |
//! | `type: object` with `additionalProperties: true`, or neither | `BTreeMap<String, serde_json::Value>` / `serde_json::Value` |
//! | `type: array` | `Vec<T>` |
//! | `type: string` with `enum` | an enum with one variant per value |
//! | `type: string` / `boolean` / `number` | `String` / `bool` / `f64` |
//! | `type: integer` (`format: int32`) | `i64` (`i32`) |
//! | `x-kubernetes-int-or-string: true` | k8s-openapi's `IntOrString` |
//! | `x-kubernetes-preserve-unknown-fields: true` | `serde_json::Value`; with `properties`, a struct that keeps unknown fields in `unknown_fields` |
//! | `x-kubernetes-embedded-resource: true` without properties | `serde_json::Value` |
//! | a field not in `required`, or `nullable: true` | `Option<T>`, omitted when `None` |
//!
//! Everything a CRD's objects can carry survives a decode and encode: unknown fields where the
//! schema preserves them, maps in any order, `int-or-string` as either. (Two limits: an
//! explicit `null` on an optional field comes back as an absent field, and a `number` written
//! as an integer, `2`, comes back as `2.0`.)

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::Value;

use crate::error::Error;
use crate::naming::{pascal_case, resource_method, rust_ident, snake_case};
use crate::output::{GeneratedFiles, HEADER};

/// Where the generated code finds the crates it uses.
#[derive(Debug, Clone)]
pub struct CrdOptions {
    /// The path of kclient-typed (`kclient_typed`), for the typed client accessor.
    pub typed_crate: String,
    /// The path of kclient-informers (`kclient_informers`), for the informer accessor.
    pub informers_crate: String,
    /// The path of kclient-cache (`kclient_cache`), whose informer factory the informer
    /// accessor takes.
    pub cache_crate: String,
    /// The path of k8s-openapi (`k8s_openapi`).
    pub k8s_openapi_crate: String,
}

impl Default for CrdOptions {
    fn default() -> Self {
        Self {
            typed_crate: "kclient_typed".to_owned(),
            informers_crate: "kclient_informers".to_owned(),
            cache_crate: "kclient_cache".to_owned(),
            k8s_openapi_crate: "k8s_openapi".to_owned(),
        }
    }
}

/// What the generator reads from one CRD.
#[derive(Debug, Clone)]
struct Crd {
    group: String,
    kind: String,
    plural: String,
    namespaced: bool,
    versions: Vec<CrdVersion>,
}

#[derive(Debug, Clone)]
struct CrdVersion {
    name: String,
    storage: bool,
    deprecated: bool,
    schema: Value,
    status: bool,
    scale: bool,
}

fn invalid(what: &str, message: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("{what}: {message}"))
}

/// Reads the CRDs in a YAML (or JSON) document stream; documents of other kinds are ignored.
fn parse_crds(yaml: &str, what: &str) -> Result<Vec<Crd>, Error> {
    let mut crds = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(yaml) {
        let value: Value =
            serde::Deserialize::deserialize(document).map_err(|source| Error::Yaml {
                what: what.to_owned(),
                source,
            })?;
        if value.is_null() || value["kind"] != "CustomResourceDefinition" {
            continue;
        }
        let spec = &value["spec"];
        let s = |v: &Value, field: &str| -> Result<String, Error> {
            v[field]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| invalid(what, format!("the CRD has no {field}")))
        };
        let names = &spec["names"];
        let mut versions = Vec::new();
        for v in spec["versions"].as_array().into_iter().flatten() {
            if v["served"].as_bool() != Some(true) {
                continue;
            }
            let schema = v["schema"]["openAPIV3Schema"].clone();
            if schema.is_null() {
                return Err(invalid(
                    what,
                    format!("version {} has no openAPIV3Schema", v["name"]),
                ));
            }
            versions.push(CrdVersion {
                name: s(v, "name")?,
                storage: v["storage"].as_bool().unwrap_or(false),
                deprecated: v["deprecated"].as_bool().unwrap_or(false),
                schema,
                status: v["subresources"]["status"].is_object(),
                scale: v["subresources"]["scale"].is_object(),
            });
        }
        if versions.is_empty() {
            return Err(invalid(what, "the CRD serves no version"));
        }
        crds.push(Crd {
            group: s(spec, "group")?,
            kind: s(names, "kind")?,
            plural: s(names, "plural")?,
            namespaced: spec["scope"].as_str() != Some("Cluster"),
            versions,
        });
    }
    Ok(crds)
}

/// A Rust type a schema maps to.
#[derive(Debug, Clone, PartialEq)]
enum Ty {
    String,
    Bool,
    I32,
    I64,
    F64,
    IntOrString,
    Value,
    Vec(Box<Ty>),
    Map(Box<Ty>),
    Named(String),
}

impl Ty {
    fn render(&self, o: &CrdOptions) -> String {
        match self {
            Ty::String => "String".into(),
            Ty::Bool => "bool".into(),
            Ty::I32 => "i32".into(),
            Ty::I64 => "i64".into(),
            Ty::F64 => "f64".into(),
            Ty::IntOrString => format!(
                "{}::apimachinery::pkg::util::intstr::IntOrString",
                o.k8s_openapi_crate
            ),
            Ty::Value => "serde_json::Value".into(),
            Ty::Vec(t) => format!("Vec<{}>", t.render(o)),
            Ty::Map(t) => format!("std::collections::BTreeMap<String, {}>", t.render(o)),
            Ty::Named(n) => n.clone(),
        }
    }
}

#[derive(Debug, Clone)]
struct Field {
    rust: String,
    json: String,
    ty: Ty,
    optional: bool,
    doc: Option<String>,
}

#[derive(Debug, Clone)]
enum Def {
    Struct {
        name: String,
        doc: Option<String>,
        fields: Vec<Field>,
        keep_unknown: bool,
    },
    Enum {
        name: String,
        doc: Option<String>,
        variants: Vec<(String, String)>,
    },
}

/// Collects the type definitions of one version, with unique names.
#[derive(Default)]
struct Defs {
    defs: Vec<Def>,
    names: BTreeSet<String>,
}

impl Defs {
    fn unique(&mut self, wanted: &str) -> String {
        let mut name = wanted.to_owned();
        let mut n = 2;
        while !self.names.insert(name.clone()) {
            name = format!("{wanted}{n}");
            n += 1;
        }
        name
    }
}

fn description(schema: &Value) -> Option<String> {
    schema["description"]
        .as_str()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(str::to_owned)
}

/// The type of `schema`; nested objects and enums are added to `defs`, named `hint`.
fn type_of(schema: &Value, hint: &str, defs: &mut Defs) -> Ty {
    if schema["x-kubernetes-int-or-string"].as_bool() == Some(true) {
        return Ty::IntOrString;
    }
    let has_properties = schema["properties"]
        .as_object()
        .is_some_and(|p| !p.is_empty());
    let preserve = schema["x-kubernetes-preserve-unknown-fields"].as_bool() == Some(true);
    match schema["type"].as_str() {
        Some("string") => {
            let values: Option<Vec<String>> = schema["enum"]
                .as_array()
                .filter(|e| !e.is_empty())
                .and_then(|e| e.iter().map(|v| v.as_str().map(str::to_owned)).collect());
            match values {
                Some(values) => enum_def(schema, hint, values, defs),
                None => Ty::String,
            }
        }
        Some("boolean") => Ty::Bool,
        Some("integer") if schema["format"] == "int32" => Ty::I32,
        Some("integer") => Ty::I64,
        Some("number") => Ty::F64,
        Some("array") => Ty::Vec(Box::new(type_of(&schema["items"], hint, defs))),
        Some("object") | None if has_properties => struct_def(schema, hint, preserve, defs),
        Some("object") => match &schema["additionalProperties"] {
            Value::Object(inner) if !inner.is_empty() => Ty::Map(Box::new(type_of(
                &schema["additionalProperties"],
                hint,
                defs,
            ))),
            Value::Bool(true) | Value::Object(_) => Ty::Map(Box::new(Ty::Value)),
            _ => Ty::Value,
        },
        _ => Ty::Value,
    }
}

fn enum_def(schema: &Value, hint: &str, values: Vec<String>, defs: &mut Defs) -> Ty {
    let name = defs.unique(hint);
    let mut used = BTreeSet::new();
    let variants = values
        .into_iter()
        .map(|value| {
            let base = match pascal_case(&value) {
                p if p.is_empty() => "Empty".to_owned(),
                p => rust_ident(&p),
            };
            let mut variant = base.clone();
            let mut n = 2;
            while !used.insert(variant.clone()) {
                variant = format!("{base}{n}");
                n += 1;
            }
            (variant, value)
        })
        .collect();
    defs.defs.push(Def::Enum {
        name: name.clone(),
        doc: description(schema),
        variants,
    });
    Ty::Named(name)
}

fn struct_def(schema: &Value, hint: &str, keep_unknown: bool, defs: &mut Defs) -> Ty {
    let name = defs.unique(hint);
    // Reserve the slot first, so that outer types come before the types of their fields.
    let slot = defs.defs.len();
    defs.defs.push(Def::Struct {
        name: name.clone(),
        doc: description(schema),
        fields: Vec::new(),
        keep_unknown,
    });
    let fields = fields_of(schema, &name, defs, &[]);
    if let Def::Struct { fields: f, .. } = &mut defs.defs[slot] {
        *f = fields;
    }
    Ty::Named(name)
}

/// The fields of an object schema, except those in `skip`; nested types are named
/// `{owner}{Field}`.
fn fields_of(schema: &Value, owner: &str, defs: &mut Defs, skip: &[&str]) -> Vec<Field> {
    let required: BTreeSet<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut used = BTreeSet::new();
    let mut fields = Vec::new();
    for (json, property) in schema["properties"].as_object().into_iter().flatten() {
        if skip.contains(&json.as_str()) {
            continue;
        }
        let ty = type_of(property, &format!("{owner}{}", pascal_case(json)), defs);
        let base = rust_ident(&snake_case(json));
        let mut rust = base.clone();
        let mut n = 2;
        while !used.insert(rust.clone()) || rust == "unknown_fields" {
            rust = format!("{base}_{n}");
            n += 1;
        }
        let nullable = property["nullable"].as_bool() == Some(true);
        fields.push(Field {
            rust,
            json: json.clone(),
            ty,
            optional: nullable || !required.contains(json.as_str()),
            doc: description(property),
        });
    }
    fields
}

/// A description as doc comment lines: trimmed lines (so nothing becomes a code block or a
/// doc test), with the characters rustdoc would read as links or HTML escaped.
fn doc_lines(text: &str, indent: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut escaped = String::new();
        for c in line.trim().replace("```", "'''").chars() {
            if matches!(c, '[' | ']' | '<' | '>' | '*' | '_' | '`' | '#') {
                escaped.push('\\');
            }
            escaped.push(c);
        }
        if escaped.is_empty() {
            let _ = writeln!(out, "{indent}///");
        } else {
            let _ = writeln!(out, "{indent}/// {escaped}");
        }
    }
    out
}

fn render_defs(defs: &[Def], o: &CrdOptions, out: &mut String) {
    for def in defs {
        out.push('\n');
        match def {
            Def::Struct {
                name,
                doc,
                fields,
                keep_unknown,
            } => {
                match doc {
                    Some(d) => out.push_str(&doc_lines(d, "    ")),
                    None => {
                        let _ = writeln!(out, "    /// The `{name}` object.");
                    }
                }
                let _ = writeln!(
                    out,
                    "    #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]\n    pub struct {name} {{"
                );
                render_fields(fields, o, out);
                if *keep_unknown {
                    let _ = writeln!(
                        out,
                        "        /// Fields the schema does not name, kept as they are (`x-kubernetes-preserve-unknown-fields`).\n        \
                         #[serde(flatten)]\n        pub unknown_fields: std::collections::BTreeMap<String, serde_json::Value>,"
                    );
                }
                out.push_str("    }\n");
            }
            Def::Enum {
                name,
                doc,
                variants,
            } => {
                match doc {
                    Some(d) => out.push_str(&doc_lines(d, "    ")),
                    None => {
                        let _ = writeln!(out, "    /// The values of `{name}`.");
                    }
                }
                let _ = writeln!(
                    out,
                    "    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]\n    pub enum {name} {{"
                );
                for (i, (variant, value)) in variants.iter().enumerate() {
                    let default = if i == 0 { "        #[default]\n" } else { "" };
                    let _ = writeln!(
                        out,
                        "        /// `{value:?}`.\n{default}        #[serde(rename = {value:?})]\n        {variant},"
                    );
                }
                out.push_str("    }\n");
            }
        }
    }
}

fn render_fields(fields: &[Field], o: &CrdOptions, out: &mut String) {
    for f in fields {
        match &f.doc {
            Some(d) => out.push_str(&doc_lines(d, "        ")),
            None => {
                let _ = writeln!(out, "        /// The `{}` field.", f.json);
            }
        }
        let mut attrs = Vec::new();
        if f.rust.trim_start_matches("r#") != f.json {
            attrs.push(format!("rename = {:?}", f.json));
        }
        if f.optional {
            attrs.push("default, skip_serializing_if = \"Option::is_none\"".to_owned());
        }
        if !attrs.is_empty() {
            let _ = writeln!(out, "        #[serde({})]", attrs.join(", "));
        }
        let ty = f.ty.render(o);
        let ty = if f.optional {
            format!("Option<{ty}>")
        } else {
            ty
        };
        let _ = writeln!(out, "        pub {}: {ty},", f.rust);
    }
}

/// The module of one served version.
fn version_module(crd: &Crd, v: &CrdVersion, o: &CrdOptions) -> String {
    let kind = &crd.kind;
    let mut defs = Defs::default();
    defs.names.insert(kind.clone());
    let top_fields = fields_of(
        &v.schema,
        kind,
        &mut defs,
        &["apiVersion", "kind", "metadata"],
    );
    let mut out = version_header(crd, v);
    root_struct(&mut out, crd, v, &top_fields, o);
    resource_impls(&mut out, crd, v, o);
    accessors(&mut out, crd, o);
    render_defs(&defs.defs, o, &mut out);
    out.push_str("}\n");
    out
}

/// The opening of a version's module, with its documentation.
fn version_header(crd: &Crd, v: &CrdVersion) -> String {
    let kind = &crd.kind;
    let api_version = format!("{}/{}", crd.group, v.name);
    let mut out = String::new();
    let mut notes = Vec::new();
    if v.storage {
        notes.push("the storage version");
    }
    if v.deprecated {
        notes.push("deprecated");
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join(", "))
    };
    let _ = writeln!(
        out,
        "/// `{api_version}` `{kind}`{notes}.\npub mod {} {{",
        rust_ident(&v.name.to_ascii_lowercase())
    );
    match description(&v.schema) {
        Some(d) => out.push_str(&doc_lines(&d, "    ")),
        None => {
            let _ = writeln!(out, "    /// A `{kind}` (`{api_version}`).");
        }
    }
    out
}

/// The root type: its struct with `apiVersion`, `kind`, `metadata` and the schema's
/// top-level fields, its `Default`, and a constructor from a name and a spec when it has one.
fn root_struct(out: &mut String, crd: &Crd, v: &CrdVersion, top_fields: &[Field], o: &CrdOptions) {
    let k8s = &o.k8s_openapi_crate;
    let kind = &crd.kind;
    let api_version = format!("{}/{}", crd.group, v.name);
    let _ = writeln!(
        out,
        "    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]\n    pub struct {kind} {{\n        \
         /// `{api_version}`.\n        #[serde(rename = \"apiVersion\", default = \"api_version\")]\n        pub api_version: String,\n        \
         /// `{kind}`.\n        #[serde(default = \"kind\")]\n        pub kind: String,\n        \
         /// The object's metadata.\n        #[serde(default)]\n        pub metadata: {k8s}::apimachinery::pkg::apis::meta::v1::ObjectMeta,"
    );
    render_fields(top_fields, o, out);
    out.push_str("    }\n");
    let _ = writeln!(
        out,
        "\n    fn api_version() -> String {{\n        <{kind} as {k8s}::Resource>::API_VERSION.to_owned()\n    }}\n\n    \
         fn kind() -> String {{\n        <{kind} as {k8s}::Resource>::KIND.to_owned()\n    }}"
    );
    let defaults: Vec<String> = top_fields
        .iter()
        .map(|f| format!("            {}: Default::default(),", f.rust))
        .collect();
    let _ = writeln!(
        out,
        "\n    impl Default for {kind} {{\n        fn default() -> Self {{\n            Self {{\n                api_version: api_version(),\n                kind: kind(),\n                metadata: Default::default(),\n{}\n            }}\n        }}\n    }}",
        defaults.iter().map(|d| format!("    {d}")).collect::<Vec<_>>().join("\n")
    );
    let spec_type = top_fields
        .iter()
        .find(|f| f.json == "spec")
        .map(|f| (f.ty.render(o), f.optional));
    if let Some((spec, optional)) = spec_type {
        let value = if optional { "spec: Some(spec)" } else { "spec" };
        let _ = writeln!(
            out,
            "\n    impl {kind} {{\n        /// A `{kind}` named `name` with `spec`.\n        pub fn new(name: &str, spec: {spec}) -> Self {{\n            \
             Self {{\n                metadata: {k8s}::apimachinery::pkg::apis::meta::v1::ObjectMeta {{\n                    name: Some(name.to_owned()),\n                    \
             ..Default::default()\n                }},\n                {value},\n                ..Self::default()\n            }}\n        }}\n    }}"
        );
    }
}

/// k8s-openapi's `Resource`, `ListableResource` and `Metadata`, and kclient-typed's
/// subresource markers.
fn resource_impls(out: &mut String, crd: &Crd, v: &CrdVersion, o: &CrdOptions) {
    let k8s = &o.k8s_openapi_crate;
    let typed = &o.typed_crate;
    let kind = &crd.kind;
    let api_version = format!("{}/{}", crd.group, v.name);
    let scope = if crd.namespaced {
        "NamespaceResourceScope"
    } else {
        "ClusterResourceScope"
    };
    let _ = writeln!(
        out,
        "\n    impl {k8s}::Resource for {kind} {{\n        const API_VERSION: &'static str = {api_version:?};\n        const GROUP: &'static str = {:?};\n        \
         const KIND: &'static str = {kind:?};\n        const VERSION: &'static str = {:?};\n        const URL_PATH_SEGMENT: &'static str = {:?};\n        \
         type Scope = {k8s}::{scope};\n    }}\n\n    impl {k8s}::ListableResource for {kind} {{\n        const LIST_KIND: &'static str = \"{kind}List\";\n    }}\n\n    \
         impl {k8s}::Metadata for {kind} {{\n        type Ty = {k8s}::apimachinery::pkg::apis::meta::v1::ObjectMeta;\n\n        \
         fn metadata(&self) -> &Self::Ty {{\n            &self.metadata\n        }}\n\n        fn metadata_mut(&mut self) -> &mut Self::Ty {{\n            &mut self.metadata\n        }}\n    }}",
        crd.group, v.name, crd.plural
    );
    if v.status {
        let _ = writeln!(out, "\n    impl {typed}::HasStatus for {kind} {{}}");
    }
    if v.scale {
        let _ = writeln!(out, "\n    impl {typed}::HasScale for {kind} {{}}");
    }
}

/// The functions that give the resource's typed client from a Clientset and its informer
/// from a factory.
fn accessors(out: &mut String, crd: &Crd, o: &CrdOptions) {
    let typed = &o.typed_crate;
    let kind = &crd.kind;
    let method = resource_method(kind, &crd.plural);
    if crd.namespaced {
        let _ = writeln!(
            out,
            "\n    /// A client for `{}` in `namespace` (the empty namespace means all namespaces).\n    \
             pub fn {method}(clientset: &{typed}::Clientset, namespace: &str) -> {typed}::ResourceClient<{kind}> {{\n        \
             clientset.namespaced(namespace)\n    }}",
            crd.plural
        );
    } else {
        let _ = writeln!(
            out,
            "\n    /// A client for `{}` (cluster-scoped).\n    \
             pub fn {method}(clientset: &{typed}::Clientset) -> {typed}::ResourceClient<{kind}> {{\n        \
             clientset.cluster_scoped()\n    }}",
            crd.plural
        );
    }
    let informers = &o.informers_crate;
    let cache = &o.cache_crate;
    let _ = writeln!(
        out,
        "\n    /// The shared informer and lister of `{}` in an informer factory (made on first request).\n    \
         pub fn {method}_informer<C>(factory: &{cache}::SharedInformerFactory<C>) -> {informers}::TypedInformer<'_, C, {kind}> {{\n        \
         {informers}::TypedInformer::new(factory)\n    }}",
        crd.plural
    );
}

/// Generates the module of every CRD in `yaml` (a YAML or JSON stream; other documents are
/// ignored): one file per CRD, named after its kind in snake_case (`cron_tab.rs`), with one
/// submodule per served version (`cron_tab::v1::CronTab`).
pub fn generate_crd(yaml: &str, what: &str, options: &CrdOptions) -> Result<GeneratedFiles, Error> {
    let mut files = GeneratedFiles::new();
    for crd in parse_crds(yaml, what)? {
        let module = snake_case(&crd.kind);
        let mut out = String::new();
        let _ = writeln!(out, "{HEADER}");
        let served: Vec<&str> = crd.versions.iter().map(|v| v.name.as_str()).collect();
        let _ = writeln!(
            out,
            "//! `{}` (`{}.{}`): Rust types and a typed client for each served version ({}).",
            crd.kind,
            crd.plural,
            crd.group,
            served.join(", ")
        );
        for v in &crd.versions {
            out.push('\n');
            out.push_str(&version_module(&crd, v, options));
        }
        files.insert(format!("{module}.rs"), out);
    }
    if files.is_empty() {
        return Err(invalid(what, "no CustomResourceDefinition in the document"));
    }
    Ok(files)
}

/// Generates the modules of several CRD documents, plus a `mod.rs` declaring them.
pub fn generate_crds(
    inputs: &[(String, String)],
    options: &CrdOptions,
) -> Result<GeneratedFiles, Error> {
    let mut all = GeneratedFiles::new();
    let mut modules = BTreeMap::new();
    for (what, yaml) in inputs {
        for (path, content) in generate_crd(yaml, what, options)?.iter() {
            let module = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if modules.insert(module.clone(), what.clone()).is_some() {
                return Err(invalid(
                    what,
                    format!("a second CRD would generate module {module}"),
                ));
            }
            all.insert(path.to_path_buf(), content.to_owned());
        }
    }
    let mut root = format!(
        "{HEADER}\n//! Types and typed clients generated from CustomResourceDefinitions.\n\n"
    );
    for module in modules.keys() {
        let _ = writeln!(root, "pub mod {module};");
    }
    all.insert("mod.rs", root);
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [cronSpec]
              properties:
                cronSpec: {type: string, description: "The [schedule] <cron>."}
                replicas: {type: integer, format: int32}
                type: {type: string, enum: [Daily, on-demand]}
                port: {x-kubernetes-int-or-string: true}
                labels: {type: object, additionalProperties: {type: string}}
            status:
              type: object
              properties:
                phase: {type: string}
    - name: v0
      served: false
      storage: false
"#;

    #[test]
    fn types_follow_the_schema() {
        let files = generate_crd(CRD, "crontab.yaml", &CrdOptions::default()).unwrap();
        let src = files.get("cron_tab.rs").unwrap();
        assert!(src.starts_with(HEADER));
        assert!(src.contains("pub mod v1 {"));
        assert!(!src.contains("pub mod v0"), "unserved versions are skipped");
        assert!(src.contains("pub struct CronTabSpec {"));
        assert!(src.contains("#[serde(rename = \"cronSpec\")]\n        pub cron_spec: String,"));
        assert!(src.contains("pub replicas: Option<i32>,"));
        assert!(src.contains("pub r#type: Option<CronTabSpecType>,"));
        assert!(src.contains("#[serde(rename = \"on-demand\")]\n        OnDemand,"));
        assert!(src.contains("IntOrString"));
        assert!(src.contains("std::collections::BTreeMap<String, String>"));
        assert!(src.contains("/// The \\[schedule\\] \\<cron\\>."));
        assert!(src.contains("impl kclient_typed::HasStatus for CronTab {}"));
        assert!(!src.contains("HasScale"));
        assert!(
            src.contains("pub fn cron_tabs(clientset: &kclient_typed::Clientset, namespace: &str)")
        );
        assert!(src.contains("const URL_PATH_SEGMENT: &'static str = \"crontabs\";"));
    }

    #[test]
    fn bad_documents_are_refused() {
        assert!(generate_crd("kind: ConfigMap", "x", &CrdOptions::default()).is_err());
        let unserved = CRD.replace("served: true", "served: false");
        assert!(generate_crd(&unserved, "x", &CrdOptions::default()).is_err());
        assert!(generate_crd(": : :", "x", &CrdOptions::default()).is_err());
    }
}
