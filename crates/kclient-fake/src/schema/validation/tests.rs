//! Unit tests of value validation, against what kube-apiserver v1.37 answered.

use serde_json::json;

use super::*;

/// The schema the real server was probed with (kube-apiserver v1.37).
fn probe() -> Schema {
    Schema::from_json(&json!({"type": "object", "properties": {
        "spec": {"type": "object", "required": ["size"], "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 10},
            "xmin": {"type": "integer", "minimum": 1, "exclusiveMinimum": true,
                     "maximum": 10, "exclusiveMaximum": true},
            "num": {"type": "number", "minimum": 0.5, "maximum": 1000000, "multipleOf": 0.25},
            "mult": {"type": "integer", "multipleOf": 3},
            "i32": {"type": "integer", "format": "int32"},
            "colour": {"type": "string", "enum": ["red", "blue"]},
            "ienum": {"type": "integer", "enum": [1, 2]},
            "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
            "flag": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
            "labels": {"type": "object", "additionalProperties": {"type": "string"},
                       "minProperties": 1, "maxProperties": 2},
            "ios": {"x-kubernetes-int-or-string": true},
            "uuid": {"type": "string", "format": "uuid"},
            "date": {"type": "string", "format": "date-time"},
            "mlist": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"],
                                "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}}
        }},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"},
                                                    "count": {"type": "integer", "minimum": 0}}}
    }}))
}

fn spec(spec: Value) -> Value {
    json!({"apiVersion": "p/v1", "kind": "Thing", "metadata": {"name": "bad"}, "spec": spec})
}

/// `field: message` and the cause type of each error.
fn errors_of(spec_value: Value) -> Vec<(String, &'static str)> {
    validate(&probe(), &spec(spec_value), None, Root(None))
        .into_iter()
        .map(|e| (e.full(), e.cause_type))
        .collect()
}

fn one(spec_value: Value) -> (String, &'static str) {
    let mut all = errors_of(spec_value.clone());
    assert_eq!(all.len(), 1, "{spec_value}: {all:?}");
    all.remove(0)
}

#[test]
fn messages_as_the_server_words_them() {
    // Every expectation below is what kube-apiserver v1.37.1 answered.
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"size": 3, "colour": "green"}),
            r#"spec.colour: Unsupported value: "green": supported values: "red", "blue""#,
            "FieldValueNotSupported",
        ),
        (
            json!({"size": 0}),
            "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
            "FieldValueInvalid",
        ),
        (
            json!({"size": 11}),
            "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
            "FieldValueInvalid",
        ),
        (
            json!({"size": "three"}),
            r#"spec.size: Invalid value: "string": spec.size in body must be of type integer: "string""#,
            "FieldValueTypeInvalid",
        ),
        (json!({}), "spec.size: Required value", "FieldValueRequired"),
        (
            json!({"size": 1, "xmin": 1}),
            "spec.xmin: Invalid value: 1: spec.xmin in body should be greater than 1",
            "FieldValueInvalid",
        ),
        (
            json!({"size": 1, "xmin": 10}),
            "spec.xmin: Invalid value: 10: spec.xmin in body should be less than 10",
            "FieldValueInvalid",
        ),
        (
            json!({"size": 1, "num": 0.6}),
            "spec.num: Invalid value: 0.6: spec.num in body should be a multiple of 0.25",
            "FieldValueInvalid",
        ),
        (
            json!({"size": 1, "mult": 4}),
            "spec.mult: Invalid value: 4: spec.mult in body should be a multiple of 3",
            "FieldValueInvalid",
        ),
        (
            json!({"size": 1, "i32": 3_000_000_000_i64}),
            r#"<nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.i32"#,
            "FieldValueInvalid",
        ),
        (
            json!({"size": 1, "ienum": 3}),
            r#"spec.ienum: Unsupported value: 3: supported values: "1", "2""#,
            "FieldValueNotSupported",
        ),
        (
            json!({"size": 1, "name": "a"}),
            r#"spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long"#,
            "FieldValueInvalid",
        ),
        (
            json!({"size": 1, "name": "abcdef"}),
            "spec.name: Too long: may not be more than 5 bytes",
            "FieldValueTooLong",
        ),
        (
            json!({"size": 1, "name": "AB"}),
            r#"spec.name: Invalid value: "AB": spec.name in body should match '^[a-z]+$'"#,
            "FieldValueInvalid",
        ),
        (
            json!({"size": 1, "flag": "yes"}),
            r#"spec.flag: Invalid value: "string": spec.flag in body must be of type boolean: "string""#,
            "FieldValueTypeInvalid",
        ),
        (
            json!({"size": 1, "tags": []}),
            "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
            "FieldValueInvalid",
        ),
        (
            json!({"size": 1, "tags": ["a", "b", "c", "d"]}),
            "spec.tags: Too many: 4: must have at most 3 items",
            "FieldValueTooMany",
        ),
        (
            json!({"size": 1, "tags": ["a", 1]}),
            r#"spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: "integer""#,
            "FieldValueTypeInvalid",
        ),
        (
            json!({"size": 1, "tags": "a"}),
            r#"spec.tags: Invalid value: "string": spec.tags in body must be of type array: "string""#,
            "FieldValueTypeInvalid",
        ),
        (
            json!({"size": 1, "labels": {}}),
            "spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties",
            "FieldValueInvalid",
        ),
        (
            json!({"size": 1, "labels": {"a": "1", "b": "2", "c": "3"}}),
            "spec.labels: Too many: 3: must have at most 2 items",
            "FieldValueTooMany",
        ),
        (
            json!({"size": 1, "labels": {"a": 1}}),
            r#"spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer""#,
            "FieldValueTypeInvalid",
        ),
        (
            json!({"size": 1, "labels": "x"}),
            r#"spec.labels: Invalid value: "string": spec.labels in body must be of type object: "string""#,
            "FieldValueTypeInvalid",
        ),
        (
            json!({"size": 1, "ios": true}),
            r#"spec.ios: Invalid value: "boolean": spec.ios in body must be of type integer,string: "boolean""#,
            "FieldValueTypeInvalid",
        ),
        (
            json!({"size": 1, "ios": 1.5}),
            r#"spec.ios: Invalid value: "number": spec.ios in body must be of type integer,string: "number""#,
            "FieldValueTypeInvalid",
        ),
        (
            json!({"size": 1, "uuid": "nope"}),
            r#"spec.uuid: Invalid value: "nope": spec.uuid in body must be of type uuid: "nope""#,
            "FieldValueTypeInvalid",
        ),
        (
            json!({"size": 1, "date": "nope"}),
            r#"spec.date: Invalid value: "nope": spec.date in body must be of type date-time: "nope""#,
            "FieldValueTypeInvalid",
        ),
        (
            json!({"size": 1, "uuid": 5}),
            r#"spec.uuid: Invalid value: "int64": spec.uuid in body must be of type uuid: "int64""#,
            "FieldValueTypeInvalid",
        ),
        (
            json!({"size": 1, "mlist": [{"v": 1}]}),
            "spec.mlist[0].name: Required value",
            "FieldValueRequired",
        ),
    ];
    for (spec_value, message, cause) in cases {
        assert_eq!(one(spec_value), (message.to_string(), cause));
    }
}

#[test]
fn several_errors_in_the_servers_order() {
    assert_eq!(
        errors_of(json!({"size": 3.5})),
        [
            (r#"spec.size: Invalid value: "number": spec.size in body must be of type integer: "number""#.to_string(), "FieldValueTypeInvalid"),
            (r#"<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.size"#.to_string(), "FieldValueInvalid"),
        ]
    );
    assert_eq!(
        errors_of(json!({"size": 1, "num": 0.3})),
        [
            ("spec.num: Invalid value: 0.3: spec.num in body should be a multiple of 0.25".to_string(), "FieldValueInvalid"),
            ("spec.num: Invalid value: 0.3: spec.num in body should be greater than or equal to 0.5".to_string(), "FieldValueInvalid"),
        ]
    );
    // An int64 against a float multipleOf: Go truncates the factor to 0.
    assert_eq!(
        errors_of(json!({"size": 1, "num": 2_000_000})),
        [
            ("spec.num: Invalid value: 0: factor MultipleOf declared for spec.num must be positive: 0".to_string(), "FieldValueInvalid"),
            ("spec.num: Invalid value: 2000000: spec.num in body should be less than or equal to 1000000".to_string(), "FieldValueInvalid"),
        ]
    );
    assert_eq!(
        errors_of(json!({"size": 1, "ienum": "x"})),
        [
            (r#"spec.ienum: Invalid value: "string": spec.ienum in body must be of type integer: "string""#.to_string(), "FieldValueTypeInvalid"),
            (r#"spec.ienum: Unsupported value: "x": supported values: "1", "2""#.to_string(), "FieldValueNotSupported"),
        ]
    );
}

#[test]
fn valid_values_pass() {
    assert!(
        errors_of(json!({"size": 3.0, "ios": "5", "num": 0.75, "mult": 9,
        "colour": "blue", "name": "abc", "tags": ["a"], "labels": {"a": "b"},
        "uuid": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "date": "2024-01-02T03:04:05Z",
        "mlist": [{"name": "a"}]}))
        .is_empty()
    );
    // Arrays pass the type check of a string with a format, as in kube-openapi.
    assert!(errors_of(json!({"size": 1, "uuid": ["x"]})).is_empty());
}

#[test]
fn status_is_validated_below_its_own_root() {
    let s = probe();
    let status_schema = &s.properties["status"];
    let got: Vec<String> = validate(
        status_schema,
        &json!({"ready": "no", "count": -1}),
        None,
        Root(Some("status")),
    )
    .iter()
    .map(FieldError::full)
    .collect();
    assert_eq!(
        got,
        [
            "status.count: Invalid value: -1: count in body should be greater than or equal to 0",
            r#"status.ready: Invalid value: "string": ready in body must be of type boolean: "string""#,
        ]
    );
}

#[test]
fn nulls_and_nullable() {
    let s = Schema::from_json(&json!({"type": "object", "properties": {
        "a": {"type": "string"},
        "b": {"type": "string", "nullable": true},
        "c": {"type": "string", "nullable": true, "enum": ["x"]},
        "l": {"type": "array", "items": {"type": "string"}}}}));
    let got: Vec<String> = validate(
        &s,
        &json!({"a": null, "b": null, "c": null, "l": [null]}),
        None,
        Root(None),
    )
    .iter()
    .map(FieldError::full)
    .collect();
    assert_eq!(
        got,
        [
            r#"a: Invalid value: "null": a in body must be of type string: "null""#,
            r#"c: Unsupported value: null: supported values: "x""#,
            r#"l[0]: Invalid value: "null": l[0] in body must be of type string: "null""#,
        ]
    );
}

#[test]
fn composition() {
    let s = Schema::from_json(&json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
        "anyOf": [{"properties": {"a": {"maxLength": 1}}}, {"properties": {"a": {"minLength": 5}}}],
        "allOf": [{"properties": {"b": {"pattern": "^b"}}}],
        "not": {"required": ["c"]}}}}));
    let full = |v: Value| -> Vec<String> {
        validate(&s, &json!({"spec": v}), None, Root(None))
            .iter()
            .map(FieldError::full)
            .collect()
    };
    assert!(full(json!({"a": "x"})).is_empty());
    assert_eq!(
        full(json!({"a": "xy", "b": "zz", "c": 1})),
        [
            r#"<nil>: Invalid value: "": "spec" must validate at least one schema (anyOf)"#,
            "spec.a: Too long: may not be more than 1 byte",
            r#"<nil>: Invalid value: "": "spec" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
            r#"spec.b: Invalid value: "zz": spec.b in body should match '^b'"#,
            r#"<nil>: Invalid value: "": "spec" must validate all the schemas (allOf). None validated"#,
            r#"<nil>: Invalid value: "": "spec" must not validate the schema (not)"#,
        ]
    );
    assert_eq!(
        full(json!({})),
        [
            r#"<nil>: Invalid value: "": "spec" must validate one and only one schema (oneOf). Found none valid"#,
            "spec.a: Required value",
        ]
    );
}

#[test]
fn ratcheting_keeps_unchanged_errors_quiet() {
    // As observed on the real server: a CRD tightened after objects were stored.
    let s = Schema::from_json(&json!({"type": "object", "properties": {"spec": {
        "type": "object", "required": ["must"], "properties": {
            "size": {"type": "integer", "minimum": 5},
            "other": {"type": "string"},
            "items": {"type": "array", "items": {"type": "object",
                      "properties": {"n": {"type": "integer", "minimum": 5}}}},
            "keyed": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["k"],
                      "items": {"type": "object", "properties": {
                          "k": {"type": "string"}, "n": {"type": "integer", "minimum": 5}}}}}}}}));
    let old = json!({"metadata": {"resourceVersion": "1"}, "spec": {"size": 0, "other": "a",
        "items": [{"n": 0}, {"n": 0}], "keyed": [{"k": "a", "n": 0}, {"k": "b", "n": 9}]}});
    let update = |f: &dyn Fn(&mut Value)| -> Vec<String> {
        let mut new = old.clone();
        new["metadata"]["resourceVersion"] = json!("2");
        f(&mut new);
        validate(&s, &new, Some(&old), Root(None))
            .iter()
            .map(FieldError::full)
            .collect()
    };
    assert_eq!(
        update(&|n| n["spec"]["other"] = json!("b")),
        ["spec.must: Required value"]
    );
    assert_eq!(
        update(&|n| n["spec"]["items"][1]["n"] = json!(1)),
        [
            "spec.items[0].n: Invalid value: 0: spec.items[0].n in body should be greater than or equal to 5",
            "spec.items[1].n: Invalid value: 1: spec.items[1].n in body should be greater than or equal to 5",
            "spec.must: Required value",
        ]
    );
    assert_eq!(
        update(&|n| n["spec"]["size"] = json!(1)),
        [
            "spec.size: Invalid value: 1: spec.size in body should be greater than or equal to 5",
            "spec.must: Required value",
        ]
    );
    // Map-list items ratchet one by one, even reordered.
    assert_eq!(
        update(&|n| n["spec"]["keyed"] = json!([{"k": "b", "n": 1}, {"k": "a", "n": 0}])),
        [
            "spec.keyed[0].n: Invalid value: 1: spec.keyed[0].n in body should be greater than or equal to 5",
            "spec.must: Required value",
        ]
    );
    // Nothing changed at all: nothing to report.
    let same: Vec<FieldError> = validate(&s, &old, Some(&old), Root(None));
    assert!(same.is_empty());
    // A create reports everything.
    assert_eq!(validate(&s, &old, None, Root(None)).len(), 5);
}

#[test]
fn go_enum_conversions() {
    assert!(
        enum_matches(&json!(3.7), &json!(3)),
        "float64 converts to int64 by truncation"
    );
    assert!(
        enum_matches(&json!(65), &json!("A")),
        "int64 converts to a string as a rune"
    );
    assert!(!enum_matches(&json!("3"), &json!(3)));
    assert!(enum_matches(&json!(3), &json!(3.0)));
    assert!(!enum_matches(&json!(null), &json!(null)));
    assert!(enum_matches(&json!({"a": [1]}), &json!({"a": [1]})));
    assert!(!enum_matches(&json!(true), &json!(1)));
}

#[test]
fn odd_schemas_and_values_never_panic() {
    let schemas = [
        json!({"type": "integer", "multipleOf": 0, "minimum": 1e300, "maximum": -1e300}),
        json!({"type": "number", "format": "float", "multipleOf": -2.5}),
        json!({"type": "integer", "multipleOf": 1e-300}),
        json!({"type": "string", "pattern": "(["}),
        json!({"type": "array", "minItems": -1, "maxItems": 0, "uniqueItems": true}),
        json!({"type": "object", "additionalProperties": false, "required": ["", "x"]}),
        json!({"format": "int32"}),
        json!({"anyOf": [], "oneOf": [{}], "allOf": [{"not": {}}]}),
    ];
    let values = [
        json!(null),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(-0.0),
        json!(1e308),
        json!("\u{0}é"),
        json!([1, [2], {"a": null}]),
        json!({"": {"": []}}),
    ];
    for s in &schemas {
        let s = Schema::from_json(s);
        for v in &values {
            let _ = validate(&s, v, Some(v), Root(Some("status")));
            let _ = validate(&s, v, None, Root(None));
        }
    }
}
