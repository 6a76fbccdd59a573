//! The structural invariants of a CRD schema (apiextensions' `validateStructuralInvariants`):
//! types everywhere, `items` for arrays, `metadata` restricted at the root, and nothing in
//! `anyOf`/`allOf`/`oneOf`/`not` that describes rather than validates.

use kclient_core::FieldError;
use serde_json::{json, Map, Value};

use super::{flag, is_int_or_string_any_of, non_empty_array, obj, properties, str_of, Level};

/// apiextensions' `validateStructuralInvariants`.
pub(super) fn invariants(s: &Value, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
    let Some(m) = obj(s) else { return };
    Node { m, lvl, path, errs }.check();
}

/// A node of the schema being checked: its keywords, where it stands, its path, and the
/// errors found so far, which its checks add to at paths below its own.
struct Node<'a> {
    m: &'a Map<String, Value>,
    lvl: Level,
    path: &'a str,
    errs: &'a mut Vec<FieldError>,
}

impl Node<'_> {
    /// The invariants of the node and of the schemas below it.
    fn check(&mut self) {
        let m = self.m;
        self.children();
        let int_or_string = flag(m, "x-kubernetes-int-or-string");
        let embedded = flag(m, "x-kubernetes-embedded-resource");
        let preserve = flag(m, "x-kubernetes-preserve-unknown-fields");
        if int_or_string && preserve {
            self.invalid(
                "x-kubernetes-preserve-unknown-fields",
                &json!(true),
                "must be false if x-kubernetes-int-or-string is true",
            );
        }
        if int_or_string && embedded {
            self.invalid(
                "x-kubernetes-embedded-resource",
                &json!(true),
                "must be false if x-kubernetes-int-or-string is true",
            );
        }
        value_validation(
            m,
            is_int_or_string_any_of(m.get("anyOf")),
            all_of_skips_any_of(m),
            self.path,
            self.errs,
        );
        self.types();
        self.resource_fields();
        let has_properties = m
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        if embedded && !preserve && !has_properties {
            self.required(
                "properties",
                "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            );
        }
    }

    /// The invariants of the node's `items`, `properties` and `additionalProperties` (an
    /// array needs `items`; the root has no `additionalProperties`).
    fn children(&mut self) {
        let m = self.m;
        let items = m.get("items").filter(|i| i.is_object());
        if str_of(m, "type") == "array" && items.is_none() {
            self.required("items", "must be specified");
        }
        if let Some(items) = items {
            invariants(items, Level::Item, &self.at("items"), self.errs);
        }
        for (k, v) in properties(m) {
            let path = self.at(&format!("properties[{k}]"));
            invariants(v, Level::Field, &path, self.errs);
        }
        if let Some(additional) = m.get("additionalProperties") {
            if self.lvl == Level::Root {
                self.forbidden("additionalProperties", "must not be used at the root");
            }
            if additional.is_object() {
                let path = self.at("additionalProperties");
                invariants(additional, Level::Field, &path, self.errs);
            }
        }
    }

    /// The rules on the node's `type`: set unless the node is int-or-string or preserves
    /// unknown fields, `object` for an embedded resource and at the root.
    fn types(&mut self) {
        let m = self.m;
        let ty = str_of(m, "type");
        let embedded = flag(m, "x-kubernetes-embedded-resource");
        if embedded && ty != "object" {
            let detail = "must be object if x-kubernetes-embedded-resource is true";
            if ty.is_empty() {
                self.required("type", detail);
            } else {
                self.invalid("type", &json!(ty), detail);
            }
        } else if ty.is_empty()
            && !flag(m, "x-kubernetes-int-or-string")
            && !flag(m, "x-kubernetes-preserve-unknown-fields")
        {
            let detail = match self.lvl {
                Level::Root => "must not be empty at the root",
                Level::Item => "must not be empty for specified array items",
                Level::Field => "must not be empty for specified object fields",
            };
            self.required("type", detail);
        }
        if embedded && m.contains_key("additionalProperties") {
            self.forbidden(
                "additionalProperties",
                "must not be used if x-kubernetes-embedded-resource is set",
            );
        }
        if self.lvl == Level::Root && !ty.is_empty() && ty != "object" {
            self.invalid("type", &json!(ty), "must be object at the root");
        }
    }

    /// The rules on `kind`, `apiVersion` and `metadata` of a resource (the root or an
    /// embedded resource).
    fn resource_fields(&mut self) {
        let check_metadata =
            self.lvl == Level::Root || flag(self.m, "x-kubernetes-embedded-resource");
        let props = self.m.get("properties").and_then(Value::as_object);
        if check_metadata {
            for k in ["kind", "apiVersion"] {
                if let Some(p) = props.and_then(|p| p.get(k)) {
                    let t = p.get("type").and_then(Value::as_str).unwrap_or("");
                    if t != "string" {
                        let key = format!("properties[{k}].type");
                        self.invalid(&key, &json!(t), "must be string");
                    }
                }
            }
        }
        if let Some(meta) = props.and_then(|p| p.get("metadata")).and_then(obj) {
            self.metadata(meta, check_metadata);
        }
    }

    /// The rules on the node's `metadata` property `meta`: an object (when `check`), and at
    /// the root nothing but `name` and `generateName`.
    fn metadata(&mut self, meta: &Map<String, Value>, check: bool) {
        let ty = str_of(meta, "type");
        if check && ty != "object" {
            self.invalid("properties[metadata].type", &json!(ty), "must be object");
        }
        if self.lvl != Level::Root {
            return;
        }
        let only_names = meta
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(|p| p.keys().all(|k| k == "name" || k == "generateName"));
        let other = meta.keys().any(|k| {
            !matches!(
                k.as_str(),
                "type" | "default" | "properties" | "example" | "externalDocs" | "$schema"
            )
        });
        if other || !only_names {
            self.forbidden(
                "properties[metadata]",
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            );
        }
    }

    /// The path of the node's `key`.
    fn at(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    fn required(&mut self, key: &str, detail: &str) {
        self.errs.push(FieldError::required(&self.at(key), detail));
    }

    fn invalid(&mut self, key: &str, value: &Value, detail: &str) {
        self.errs
            .push(FieldError::invalid(&self.at(key), value, detail));
    }

    fn forbidden(&mut self, key: &str, detail: &str) {
        self.errs.push(FieldError::forbidden(&self.at(key), detail));
    }
}

fn all_of_skips_any_of(m: &Map<String, Value>) -> bool {
    m.get("allOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .is_some_and(|first| is_int_or_string_any_of(first.get("anyOf")))
}

/// `anyOf`, `allOf`, `oneOf`, `not` and `pattern` of a node.
fn value_validation(
    m: &Map<String, Value>,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let list = |k: &str| {
        m.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    if !skip_any_of {
        for (i, v) in list("anyOf").iter().enumerate() {
            nested(v, false, &format!("{path}.anyOf[{i}]"), errs);
        }
    }
    for (i, v) in list("allOf").iter().enumerate() {
        nested(
            v,
            skip_first_all_of_any_of && i == 0,
            &format!("{path}.allOf[{i}]"),
            errs,
        );
    }
    for (i, v) in list("oneOf").iter().enumerate() {
        nested(v, false, &format!("{path}.oneOf[{i}]"), errs);
    }
    if let Some(not) = m.get("not") {
        nested(not, false, &format!("{path}.not"), errs);
    }
    if let Some(pattern) = m
        .get("pattern")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    {
        if let Err(why) = crate::schema::structural::Pattern::new(pattern).compiled {
            errs.push(FieldError::invalid(
                &format!("{path}.pattern"),
                &json!(pattern),
                &format!(
                    "must be a valid regular expression, but isn't: error parsing regexp: {why}"
                ),
            ));
        }
    }
}

/// A schema inside `anyOf` & co.: it may only validate values, not describe them.
fn nested(v: &Value, skip_any_of: bool, path: &str, errs: &mut Vec<FieldError>) {
    let Some(m) = obj(v) else { return };
    value_validation(m, skip_any_of, false, path, errs);
    if let Some(items) = m.get("items") {
        nested(items, false, &format!("{path}.items"), errs);
    }
    for (k, p) in properties(m) {
        nested(p, false, &format!("{path}.properties[{k}]"), errs);
    }
    let forbid = |errs: &mut Vec<FieldError>, key: &str, detail: &str| {
        errs.push(FieldError::forbidden(&format!("{path}.{key}"), detail));
    };
    if !str_of(m, "type").is_empty() {
        forbid(errs, "type", "must be empty to be structural");
    }
    if m.contains_key("additionalProperties") {
        forbid(
            errs,
            "additionalProperties",
            "must be undefined to be structural",
        );
    }
    if m.get("default").is_some_and(|d| !d.is_null()) {
        forbid(errs, "default", "must be undefined to be structural");
    }
    if !str_of(m, "title").is_empty() {
        forbid(errs, "title", "must be empty to be structural");
    }
    if !str_of(m, "description").is_empty() {
        forbid(errs, "description", "must be empty to be structural");
    }
    if flag(m, "nullable") {
        forbid(errs, "nullable", "must be false to be structural");
    }
    for k in [
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if flag(m, k) {
            forbid(errs, k, "must be false to be structural");
        }
    }
    // The structural errors are sorted, so these need not follow upstream's order.
    for k in ["x-kubernetes-list-map-keys", "x-kubernetes-validations"] {
        if non_empty_array(m, k) {
            forbid(errs, k, "must be empty to be structural");
        }
    }
    for k in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if m.get(k).is_some_and(|v| !v.is_null()) {
            forbid(errs, k, "must be undefined to be structural");
        }
    }
    if m.get("properties")
        .and_then(|p| p.get("metadata"))
        .is_some()
    {
        forbid(
            errs,
            "properties[metadata]",
            "must not be specified in a nested context",
        );
    }
}
