//! Unit tests of the CRD schema checks, with kube-apiserver v1.37's messages.

use super::*;

fn crd_with(schema: Value) -> Value {
    json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}]}})
}

fn errors(schema: Value) -> Vec<String> {
    validate(&crd_with(schema))
        .iter()
        .map(FieldError::full)
        .collect()
}

const BASE: &str = "spec.validation.openAPIV3Schema";

#[test]
fn structural_rules_with_the_servers_messages() {
    // Each case was observed on kube-apiserver v1.37.
    assert_eq!(
        errors(json!({})),
        [format!(
            "{BASE}.type: Required value: must not be empty at the root"
        )]
    );
    assert_eq!(
        errors(json!({"type": "object", "properties": {"spec": {}}})),
        [format!("{BASE}.properties[spec].type: Required value: must not be empty for specified object fields")]
    );
    assert_eq!(
        errors(json!({"type": "string"})),
        [format!(
            r#"{BASE}.type: Invalid value: "string": must be object at the root"#
        )]
    );
    assert_eq!(
        errors(json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}})),
        [format!("{BASE}.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive")]
    );
    assert_eq!(
        errors(json!({"type": "object", "properties": {"spec": {"type": "array"}}})),
        [format!(
            "{BASE}.properties[spec].items: Required value: must be specified"
        )]
    );
    assert_eq!(
        errors(
            json!({"type": "object", "properties": {"spec": {"type": "integer", "default": "x"}}})
        ),
        [format!(
            r#"{BASE}.properties[spec].default: Invalid value: "string":  in body must be of type integer: "string""#
        )]
    );
    assert_eq!(
        errors(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "default": {"a": 1}, "properties": {"b": {"type": "string"}}}}})
        ),
        [format!(
            r#"{BASE}.properties[spec].default: Invalid value: {{"a":1}}: must not have unknown fields"#
        )]
    );
    assert_eq!(
        errors(json!({"type": "object", "properties": {"metadata": {"type": "object",
            "properties": {"labels": {"type": "object"}}}}})),
        [format!("{BASE}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified")]
    );
    assert!(errors(
        json!({"type": "object", "properties": {"metadata": {"type": "object",
        "properties": {"name": {"type": "string", "maxLength": 10}}}}})
    )
    .is_empty());
    assert_eq!(
        errors(json!({"type": "object", "properties": {"spec": {"type": "array",
            "x-kubernetes-list-type": "map", "items": {"type": "object",
            "properties": {"a": {"type": "string"}}}}}})),
        [format!("{BASE}.properties[spec].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map")]
    );
    assert_eq!(
        errors(json!({"type": "object", "properties": {"spec": {"type": "string",
            "x-kubernetes-embedded-resource": true}}})),
        [
            format!("{BASE}.properties[spec].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"),
            format!(r#"{BASE}.properties[spec].type: Invalid value: "string": must be object if x-kubernetes-embedded-resource is true"#),
        ]
    );
    assert_eq!(
        errors(json!({"type": "object", "additionalProperties": {"type": "string"}})),
        [format!(
            "{BASE}.additionalProperties: Forbidden: must not be used at the root"
        )]
    );
    assert_eq!(
        errors(json!({"type": "object", "properties": {"spec": {"type": "strin"}}})),
        [format!(
            r#"{BASE}.properties[spec].type: Unsupported value: "strin": supported values: "array", "boolean", "integer", "number", "object", "string""#
        )]
    );
    assert_eq!(
        errors(json!({"type": "object", "properties": {"tags": {"type": "array",
            "uniqueItems": true, "items": {"type": "string"}}}})),
        [format!("{BASE}.properties[tags].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic")]
    );
    let bad_pattern =
        errors(json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "(["}}}));
    assert_eq!(bad_pattern.len(), 1);
    assert!(bad_pattern[0].starts_with(&format!(
        r#"{BASE}.properties[s].pattern: Invalid value: "([": must be a valid regular expression, but isn't: error parsing regexp: "#
    )));
}

#[test]
fn good_schemas_pass() {
    for good in [
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer", "minimum": 1, "default": 1},
                "ios": {"x-kubernetes-int-or-string": true,
                        "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "either": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                           "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
                "emb": {"type": "object", "x-kubernetes-embedded-resource": true,
                        "x-kubernetes-preserve-unknown-fields": true},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "required": ["name"],
                                    "properties": {"name": {"type": "string"}}}},
                "defobj": {"type": "object", "default": {"a": 1},
                           "properties": {"a": {"type": "integer"}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                         "default": {"anything": true}}
            }},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
        }}),
    ] {
        assert_eq!(errors(good.clone()), Vec::<String>::new(), "{good}");
    }
}

#[test]
fn per_version_paths_and_missing_schemas() {
    let crd = json!({"spec": {"versions": [
        {"name": "v1", "schema": {"openAPIV3Schema": {"type": "object",
            "properties": {"spec": {"type": "array"}}}}},
        {"name": "v2", "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "array"}, "b": {}}}}}}},
        {"name": "v3"}
    ]}});
    let got: Vec<String> = validate(&crd).iter().map(FieldError::full).collect();
    assert_eq!(
        got,
        [
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].items: Required value: must be specified",
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[a].items: Required value: must be specified",
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[b].type: Required value: must not be empty for specified object fields",
            "spec.versions[2].schema.openAPIV3Schema: Required value",
        ]
    );
}

#[test]
fn nested_value_validations_must_stay_structural() {
    let got = errors(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "anyOf": [{"type": "object", "nullable": true, "properties": {"metadata": {}}}]}}}),
    );
    assert_eq!(
        got,
        [
            format!("{BASE}.properties[spec].anyOf[0].nullable: Forbidden: must be false to be structural"),
            format!("{BASE}.properties[spec].anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context"),
            format!("{BASE}.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural"),
        ]
    );
}

#[test]
fn list_rules() {
    let got = errors(json!({"type": "object", "properties": {
        "a": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k", "z"],
              "items": {"type": "object", "properties": {"k": {"type": "object"}}}},
        "b": {"type": "string", "x-kubernetes-list-type": "bag"}}}));
    assert_eq!(
        got,
        [
            format!(r#"{BASE}.properties[a].items.properties[k].type: Invalid value: "object": must be a scalar type if parent array's x-kubernetes-list-type is map"#),
            format!(r#"{BASE}.properties[a].x-kubernetes-list-map-keys: Invalid value: ["k","z"]: entries must all be names of item properties"#),
            format!("{BASE}.properties[a].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"),
            format!(r#"{BASE}.properties[b].type: Invalid value: "string": must be array if x-kubernetes-list-type is specified"#),
            format!(r#"{BASE}.properties[b].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map""#),
        ]
    );
}

#[test]
fn junk_never_panics() {
    for junk in [
        json!(null),
        json!({"spec": {"versions": "x"}}),
        json!({"spec": {"versions": [null, 1, {"schema": 5}]}}),
    ] {
        let _ = validate(&junk);
    }
    let _ = errors(
        json!({"type": ["object"], "properties": [], "items": 1, "anyOf": {"a": 1},
                          "x-kubernetes-list-map-keys": "k", "x-kubernetes-list-type": 1}),
    );
}
