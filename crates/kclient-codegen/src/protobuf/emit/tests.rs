//! The emitter's unit tests: the rule each field gets, and the fields it refuses.

use super::*;
use crate::protobuf::openapi::parse_definition;
use crate::protobuf::ModuleSource;

fn field(n: u32, name: &str, label: &str, ty: &str, go: &str, json: &str) -> InputField {
    InputField(
        n,
        name.into(),
        label.into(),
        ty.into(),
        go.into(),
        json.into(),
    )
}

fn definition(name: &str, fields: &[(&str, &str, &str)]) -> (String, Definition) {
    let mut source = format!(
        "// Generated from definition io.k8s.api.core.v1.{name}\n\n#[derive(Clone, Debug, Default, PartialEq)]\npub struct {name} {{\n"
    );
    for (_, rust, ty) in fields {
        source += &format!("    pub {rust}: {ty},\n\n");
    }
    source += "}\n";
    for (json, rust, _) in fields {
        source += &format!("            \"{json}\" => Field::Key_{rust},\n");
    }
    let module = ["api", "core", "v1"].map(String::from);
    (
        format!("io.k8s.api.core.v1.{name}"),
        parse_definition(&source, &module).unwrap(),
    )
}

fn input() -> ProtobufInput {
    let core = "k8s.io.api.core.v1";
    ProtobufInput {
        kubernetes_version: "1.37".into(),
        modules: [(
            "k8s.io/api".to_owned(),
            ModuleSource {
                version: "v0.37.1".into(),
                sum: "h1:x".into(),
            },
        )]
        .into(),
        messages: [
            (
                format!("{core}.Probe"),
                vec![
                    field(
                        1,
                        "handler",
                        "optional",
                        &format!("{core}.ProbeHandler"),
                        "ProbeHandler",
                        ",inline",
                    ),
                    field(
                        2,
                        "initialDelaySeconds",
                        "optional",
                        "int32",
                        "int32",
                        "initialDelaySeconds,omitempty",
                    ),
                    field(
                        7,
                        "terminationGracePeriodSeconds",
                        "optional",
                        "int64",
                        "*int64",
                        "terminationGracePeriodSeconds,omitempty",
                    ),
                ],
            ),
            (
                format!("{core}.ProbeHandler"),
                vec![field(
                    1,
                    "exec",
                    "optional",
                    &format!("{core}.ExecAction"),
                    "*ExecAction",
                    "exec,omitempty",
                )],
            ),
            (
                format!("{core}.ExecAction"),
                vec![field(
                    1,
                    "command",
                    "repeated",
                    "string",
                    "[]string",
                    "command,omitempty",
                )],
            ),
        ]
        .into(),
    }
}

fn definitions() -> BTreeMap<String, Definition> {
    [
        definition(
            "Probe",
            &[
                ("exec", "exec", "Option<crate::api::core::v1::ExecAction>"),
                (
                    "initialDelaySeconds",
                    "initial_delay_seconds",
                    "Option<i32>",
                ),
                (
                    "terminationGracePeriodSeconds",
                    "termination_grace_period_seconds",
                    "Option<i64>",
                ),
            ],
        ),
        definition(
            "ExecAction",
            &[(
                "command",
                "command",
                "Option<std::vec::Vec<std::string::String>>",
            )],
        ),
    ]
    .into()
}

#[test]
fn picks_the_rule_of_each_field() {
    let files = generate_protobuf(&input(), &definitions()).unwrap();
    let code = files.get("v1_37/api_core_v1.rs").unwrap();
    assert!(code.starts_with(HEADER));
    // Inline: the nested message's fields decode into the parent.
    assert!(code.contains("fn merge_probe_handler(m: &mut k8s_openapi::api::core::v1::Probe"));
    assert!(code.contains("field::inline(&mut *m, wt, &mut buf, ctx, merge_probe_handler)"));
    assert!(code.contains("1 => field::opt(&mut m.exec"));
    // Go value with omitempty: zero decodes to None, written always.
    assert!(code.contains("field::opt_nz(&mut m.initial_delay_seconds"));
    assert!(code.contains("field::len_opt_zero(2, &m.initial_delay_seconds)"));
    // Go pointer: written only when set.
    assert!(code.contains("field::len_opt(7, &m.termination_grace_period_seconds)"));
    // Repeated, held as Option<Vec>.
    assert!(code.contains("field::rep_opt(&mut m.command"));
    // The test schema flattens the inline.
    let schema = files.get("tests/v1_37.rs").unwrap();
    assert!(schema.contains("json: \"exec\""), "{schema}");
    assert!(files
        .get("v1_37/mod.rs")
        .unwrap()
        .contains("mod api_core_v1;"));
}

#[test]
fn refuses_fields_without_a_counterpart() {
    // A proto field k8s-openapi does not have.
    let mut input = input();
    input
        .messages
        .get_mut("k8s.io.api.core.v1.ExecAction")
        .unwrap()
        .push(field(2, "extra", "optional", "string", "string", "extra"));
    let err = generate_protobuf(&input, &definitions())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("ExecAction.extra (#2): no k8s-openapi field"),
        "{err}"
    );
    // A k8s-openapi field no proto field covers.
    let mut definitions = definitions();
    let (name, def) = definition(
        "ExecAction",
        &[
            (
                "command",
                "command",
                "Option<std::vec::Vec<std::string::String>>",
            ),
            ("other", "other", "Option<i32>"),
        ],
    );
    definitions.insert(name, def);
    let err = generate_protobuf(&self::input(), &definitions)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("k8s-openapi field other has no proto field"),
        "{err}"
    );
    // A scalar whose Rust type does not fit.
    let mut definitions = self::definitions();
    let (name, def) = definition(
        "ExecAction",
        &[("command", "command", "Option<std::vec::Vec<i64>>")],
    );
    definitions.insert(name, def);
    let err = generate_protobuf(&self::input(), &definitions)
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not fit"), "{err}");
}
