//! The emitter: for every message of a [`ProtobufInput`] that has a k8s-openapi struct, a
//! `Decode`, `Encode` and `Message` impl on that struct (kclient-protobuf's `field` helpers do
//! the per-rule work; the Rust field's type picks the value codec).
//!
//! The rule of a field (`docs/design/protobuf.md` §b) comes from three inputs:
//!
//! * the proto label: `repeated` → `rep`, `map` → `map`, else a single value;
//! * k8s-openapi: `Option<T>` or `T` (`Vec`/`BTreeMap` with or without `Option`);
//! * Go: a pointer, slice or map is written only when set (`len_opt`), a value always
//!   (`len_opt_zero`: `None` as Go's zero value); a value with `omitempty` decodes its zero
//!   value to `None` (`opt_nz`, as Go's JSON omits it). A Go struct embedded with
//!   `json:",inline"` (or `json:""`) is a nested message on the wire whose fields k8s-openapi
//!   flattens into the parent: decoded and encoded by generated functions over the parent.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::groups;
use super::openapi::{definition_name, Definition, Shape};
use super::proto::SCALARS;
use super::{InputField, ProtobufInput};
use crate::error::Error;
use crate::output::{GeneratedFiles, HEADER};

/// Proto messages whose codecs are hand-written in kclient-protobuf's `special` module.
pub const SPECIAL: &[&str] = &[
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "k8s.io.apimachinery.pkg.runtime.RawExtension",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
    "k8s.io.apimachinery.pkg.api.resource.Quantity",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
];

/// The codecs of one version, as files relative to `src/generated/` (`v1_37/mod.rs`,
/// `v1_37/api_core_v1.rs`, …), unformatted.
pub fn generate_protobuf(
    input: &ProtobufInput,
    definitions: &BTreeMap<String, Definition>,
) -> Result<GeneratedFiles, Error> {
    let version_dir = format!("v1_{}", input.kubernetes_version.trim_start_matches("1."));
    let emitted = emit_messages(input, definitions)?;
    let mut files = GeneratedFiles::new();
    for (file, body) in &emitted.by_file {
        files.insert(format!("{version_dir}/{file}.rs"), package_file(file, body));
    }
    files.insert(
        format!("{version_dir}/mod.rs"),
        version_module(input, &emitted),
    );
    files.insert(
        format!("tests/{version_dir}.rs"),
        test_schema(input, &emitted),
    );
    Ok(files)
}

/// What the messages of one version emit, before they are put into files.
#[derive(Default)]
struct Emitted {
    /// The code of each proto package's file (`api_core_v1` → its impls).
    by_file: BTreeMap<String, String>,
    /// The test schema's `Type { … }` entries, one line each.
    table: String,
    /// The kinds (types with `apiVersion` and `kind`): their file and k8s-openapi path.
    resources: Vec<(String, String)>,
    /// How many messages got a codec.
    count: usize,
    /// The k8s-openapi enums left out (no field holds them).
    skipped: Vec<String>,
}

/// Emits the codec of every message that has a k8s-openapi type (the special ones aside).
fn emit_messages(
    input: &ProtobufInput,
    definitions: &BTreeMap<String, Definition>,
) -> Result<Emitted, Error> {
    let default_by_path: BTreeMap<String, bool> = definitions
        .values()
        .map(|d| {
            (
                d.rust_path.replacen("k8s_openapi::", "crate::", 1),
                d.has_default,
            )
        })
        .collect();
    let index = schema_index(input, definitions);
    let emitter = Emitter {
        input,
        default_by_path: &default_by_path,
        index: &index,
    };
    let mut emitted = Emitted::default();
    for (name, fields) in &input.messages {
        if SPECIAL.contains(&name.as_str()) {
            continue;
        }
        if let Some(def) = definitions.get(&definition_name(name)) {
            emitter.emit(&mut emitted, name, fields, def)?;
        }
    }
    Ok(emitted)
}

/// Proto message → its index in the test schema's table (the messages that get a codec, in
/// order).
fn schema_index(
    input: &ProtobufInput,
    definitions: &BTreeMap<String, Definition>,
) -> BTreeMap<String, usize> {
    input
        .messages
        .keys()
        .filter(|name| !SPECIAL.contains(&name.as_str()))
        .filter(|name| {
            definitions
                .get(&definition_name(name))
                .is_some_and(|d| d.shape != Shape::Other)
        })
        .enumerate()
        .map(|(i, n)| (n.clone(), i))
        .collect()
}

/// The file of one proto package's codecs.
fn package_file(file: &str, body: &str) -> String {
    format!(
        "{HEADER}\n\n//! Codecs of `{}`.\n\nuse crate::field::{{self, Message}};\nuse crate::wire::{{self, At, Ctx, Decode, DecodeError}};\n#[cfg(feature = \"encode\")]\nuse crate::wire::Encode;\n#[cfg(feature = \"encode\")]\nuse bytes::BufMut;\n\n{body}",
        format!("k8s.io.{file}").replace('_', ".")
    )
}

/// The version's `mod.rs`: what it was made from, its package modules and the registry's
/// table of kinds.
fn version_module(input: &ProtobufInput, emitted: &Emitted) -> String {
    let mut module = format!(
        "{HEADER}\n\n//! The protobuf codecs of Kubernetes {}: {} messages, from {}.\n\n",
        input.kubernetes_version,
        emitted.count,
        input
            .modules
            .iter()
            .map(|(m, s)| format!("{m}@{}", s.version))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !emitted.skipped.is_empty() {
        let _ = writeln!(
            module,
            "//! Not generated (k8s-openapi enums that no field holds): {}.\n",
            emitted
                .skipped
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for file in emitted.by_file.keys() {
        let _ = writeln!(module, "{}mod {file};", cfg_of(file, ""));
    }
    module.push_str(
        "\n// The codec of every kind (every k8s-openapi type with an `apiVersion` and `kind`), for\n// `crate::registry`.\ncrate::registry::kinds! {\n",
    );
    for (file, path) in &emitted.resources {
        let _ = writeln!(module, "{}    {path},", cfg_of(file, "    "));
    }
    module.push_str("}\n");
    module
}

/// The `#[cfg(feature = "group-…")]` line a file's code is compiled under, indented by
/// `indent` (nothing for apimachinery, which is always compiled).
fn cfg_of(file: &str, indent: &str) -> String {
    groups::group_of(file).map_or_else(String::new, |group| {
        format!("{indent}#[cfg(feature = \"{}\")]\n", groups::feature(group))
    })
}

/// The version's test schema (`tests/v1_37.rs`): the JSON fields of every type with a codec.
fn test_schema(input: &ProtobufInput, emitted: &Emitted) -> String {
    format!(
        "{HEADER}\n\n//! The test schema of the {} messages of Kubernetes {}: per k8s-openapi type, the JSON\n//! fields the property tests fill (`tests/roundtrip.rs`).\n\nuse super::{{check, check_stable, Container, Field, Kind, Type}};\n\n/// Every type with a codec; `Kind::Message(i)` refers to `TYPES[i]`.\npub static TYPES: &[Type] = &[\n{}];\n",
        emitted.count, input.kubernetes_version, emitted.table
    )
}

fn empty_message(out: &mut String, name: &str, def: &Definition) {
    let path = &def.rust_path;
    let _ = write!(
        out,
        r#"
// {name}: an empty message (k8s-openapi: a JSON object).
impl Decode for {path} {{
    fn decode(mut buf: &[u8], _ctx: Ctx) -> Result<Self, DecodeError> {{
        while !buf.is_empty() {{
            let (tag, wt) = wire::key(&mut buf)?;
            wire::skip(tag, wt, &mut buf)?;
        }}
        Ok(Self(k8s_openapi::serde_json::Value::Object(Default::default())))
    }}
}}

#[cfg(feature = "encode")]
impl Encode for {path} {{
    fn encoded_len(&self) -> usize {{
        0
    }}
    fn encode_raw(&self, _buf: &mut impl BufMut) {{}}
}}

impl Message for {path} {{
    #[cfg(feature = "encode")]
    fn zero_len() -> usize {{
        0
    }}
    #[cfg(feature = "encode")]
    fn put_zero(_buf: &mut impl BufMut) {{}}
}}
"#
    );
}

struct Emitter<'a> {
    input: &'a ProtobufInput,
    default_by_path: &'a BTreeMap<String, bool>,
    /// Proto message → its index in the test schema's table.
    index: &'a BTreeMap<String, usize>,
}

/// What one message contributes to its target struct's code.
#[derive(Default)]
struct Body {
    /// Match arms of the decoder.
    arms: String,
    /// Statements adding to `n` (the length).
    len: String,
    /// Statements writing to `buf`.
    put: String,
    /// Statements run once every field is read (repeated fields give back unused capacity).
    shrink: String,
    /// The statements of `Message::fit` (every list shrunk, every message in it fitted).
    fit: String,
    /// Helper functions (inlined messages).
    helpers: String,
    /// Rust fields the message covers.
    covered: Vec<String>,
    /// The test schema of the covered fields (`Field { … }` expressions).
    schema: Vec<String>,
}

fn norm(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase()
}

fn scalar_rust(proto: &str) -> &'static str {
    match proto {
        "string" => "std::string::String",
        "int32" => "i32",
        "int64" => "i64",
        "bool" => "bool",
        "double" => "f64",
        _ => "crate::ByteString",
    }
}

/// `Option<X>` → `X`.
fn strip_option(ty: &str) -> Option<&str> {
    ty.strip_prefix("Option<").and_then(|t| t.strip_suffix('>'))
}

fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

impl Emitter<'_> {
    /// Emits the codec of message `name` (k8s-openapi's `def`) into its package's file, and
    /// its test schema entry.
    fn emit(
        &self,
        emitted: &mut Emitted,
        name: &str,
        fields: &[InputField],
        def: &Definition,
    ) -> Result<(), Error> {
        let file = groups::file_of_message(name);
        let out = emitted.by_file.entry(file.clone()).or_default();
        match def.shape {
            Shape::Struct => {
                let schema = self.message(out, name, fields, def)?;
                if def.resource {
                    emitted.resources.push((file, def.rust_path.clone()));
                }
                let _ = writeln!(
                    emitted.table,
                    "Type {{ name: {name:?}, check: check::<{0}>, check_stable: check_stable::<{0}>, fields: &[{1}] }},",
                    def.rust_path,
                    schema.join(", ")
                );
                emitted.count += 1;
            }
            Shape::JsonNewtype if fields.is_empty() => {
                empty_message(out, name, def);
                let _ = writeln!(
                    emitted.table,
                    "Type {{ name: {name:?}, check: check::<{0}>, check_stable: check_stable::<{0}>, fields: &[] }},",
                    def.rust_path
                );
                emitted.count += 1;
            }
            Shape::JsonNewtype => {
                return Err(Error::Invalid(format!(
                    "{name}: k8s-openapi's {} holds JSON but the message has fields",
                    def.rust_path
                )))
            }
            // Enums that are not wire types of their own (`WatchEvent<T>`, `Patch`): the
            // runtime's envelope module reads watch events; a field of such a type would
            // not compile, so nothing is silently left out.
            Shape::Other => emitted.skipped.push(def.rust_path.clone()),
        }
        Ok(())
    }

    /// The test schema kind of a proto type held as the Rust type `ty`.
    fn kind(&self, proto: &str, ty: &str) -> String {
        match proto {
            "string" => return "String".into(),
            "int32" => return "Int32".into(),
            "int64" => return "Int64".into(),
            "bool" => return "Bool".into(),
            "double" => return "Double".into(),
            "bytes" => return "Bytes".into(),
            _ => {}
        }
        let short = proto.rsplit('.').next().unwrap_or(proto);
        if SPECIAL.contains(&proto) {
            return match short {
                "JSON" => "Json".into(),
                "JSONSchemaPropsOrArray" => "OrArray".into(),
                "JSONSchemaPropsOrBool" => "OrBool".into(),
                "JSONSchemaPropsOrStringArray" => "OrStringArray".into(),
                other => other.into(),
            };
        }
        match self.index.get(proto) {
            Some(i) => format!("Message({i})"),
            None if ty.contains("std::vec::Vec<std::string::String>") => "Strings".into(),
            None => "Unknown".into(),
        }
    }

    /// Emits the `Decode`, `Encode` and `Message` impls of message `name` on k8s-openapi's
    /// `def`, and returns its test schema's fields.
    fn message(
        &self,
        out: &mut String,
        name: &str,
        fields: &[InputField],
        def: &Definition,
    ) -> Result<Vec<String>, Error> {
        let short = name.rsplit('.').next().unwrap_or(name);
        let local = !def.has_default;
        let body = self.body(name, fields, def, &snake(short), local)?;
        check_covered(name, def, &body)?;
        let _ = writeln!(out, "\n// ---- {name}\n");
        out.push_str(&body.helpers);
        self.decode_impl(out, def, &body, local);
        encode_impl(out, &def.rust_path, &body);
        message_impl(out, def, &body);
        Ok(body.schema)
    }

    /// `impl Decode`: into `Self::default()`, or, for a type without `Default` (`local`),
    /// into one local per field, a required field missing from the wire being an error.
    fn decode_impl(&self, out: &mut String, def: &Definition, body: &Body, local: bool) {
        let path = &def.rust_path;
        let _ = writeln!(out, "impl Decode for {path} {{");
        let _ = writeln!(
            out,
            "    fn decode(mut buf: &[u8], ctx: Ctx) -> Result<Self, DecodeError> {{"
        );
        let _ = ctx_unused(out, &body.arms);
        if local {
            for (rust, ty) in &def.fields {
                let ty = ty.replace("crate::", "k8s_openapi::");
                if self.is_default(&ty) {
                    let _ = writeln!(out, "let mut f_{rust}: {ty} = Default::default();");
                } else {
                    let _ = writeln!(out, "let mut f_{rust}: Option<{ty}> = None;");
                }
            }
        } else {
            let _ = writeln!(
                out,
                "let mut message = Self::default(); let m = &mut message;"
            );
        }
        let _ = writeln!(
            out,
            "while !buf.is_empty() {{ let (tag, wt) = wire::key(&mut buf)?; match tag {{ {} _ => wire::skip(tag, wt, &mut buf)?, }} }} {}",
            body.arms, body.shrink
        );
        if local {
            let _ = write!(out, "Ok(Self {{");
            for (rust, ty) in &def.fields {
                let ty = ty.replace("crate::", "k8s_openapi::");
                if self.is_default(&ty) {
                    let _ = write!(out, "{rust}: f_{rust},");
                } else {
                    let _ = write!(
                        out,
                        "{rust}: f_{rust}.ok_or_else(|| DecodeError::new(\"missing required field\").at({rust:?}))?,"
                    );
                }
            }
            let _ = writeln!(out, "}})");
        } else {
            let _ = writeln!(out, "Ok(message)");
        }
        let _ = writeln!(out, "}}\n}}\n");
    }

    /// Whether a Rust type (with `k8s_openapi::` paths) implements `Default`.
    fn is_default(&self, ty: &str) -> bool {
        if ty.starts_with("Option<")
            || ty.starts_with("std::")
            || SCALARS.iter().any(|s| scalar_rust(s) == ty)
        {
            return true;
        }
        let crate_path = ty.replacen("k8s_openapi::", "crate::", 1);
        self.default_by_path
            .get(&crate_path)
            .copied()
            .unwrap_or(false)
    }

    /// The decoding arms and encoding statements of `message`'s fields on the struct `def`;
    /// `prefix` names helper functions; `local` decodes into `f_<field>` locals instead of
    /// `m.<field>`.
    fn body(
        &self,
        name: &str,
        fields: &[InputField],
        def: &Definition,
        prefix: &str,
        local: bool,
    ) -> Result<Body, Error> {
        let mut body = Body::default();
        let json_by_norm: BTreeMap<String, &String> =
            def.json.iter().map(|(j, r)| (norm(j), r)).collect();
        for f in fields {
            if self.is_inline(f) {
                if local {
                    return Err(Error::Invalid(format!(
                        "{name}.{}: an inline in a type without Default",
                        f.name()
                    )));
                }
                self.inline_field(&mut body, f, def, prefix)?;
            } else {
                let rust = rust_field(name, f, def, &json_by_norm)?;
                self.field(&mut body, name, f, def, rust, local)?;
            }
        }
        Ok(body)
    }

    /// Whether `f` is a Go struct embedded with `json:",inline"` (or `json:""`): a nested
    /// message on the wire whose fields k8s-openapi flattens into the parent.
    fn is_inline(&self, f: &InputField) -> bool {
        let json_name = f.json_tag().split(',').next().unwrap_or("");
        !f.go_type().is_empty()
            && (json_name.is_empty() || f.json_tag().contains(",inline"))
            && self.input.messages.contains_key(f.type_name())
            && f.label() == "optional"
    }

    /// An inline field: its message's fields decoded into, and encoded from, the parent `def`
    /// by helper functions named after `prefix` and the field.
    fn inline_field(
        &self,
        body: &mut Body,
        f: &InputField,
        def: &Definition,
        prefix: &str,
    ) -> Result<(), Error> {
        let (number, fname) = (f.number(), f.name());
        let inner = &self.input.messages[f.type_name()];
        let helper = format!("{prefix}_{}", snake(fname));
        let sub = self.body(f.type_name(), inner, def, &helper, false)?;
        let _ = write!(
            body.helpers,
            "/// `{fname}` (#{number}): the fields of `{}`, inlined into the parent.\nfn merge_{helper}(m: &mut {}, mut buf: &[u8], ctx: Ctx) -> Result<(), DecodeError> {{ while !buf.is_empty() {{ let (tag, wt) = wire::key(&mut buf)?; match tag {{ {} _ => wire::skip(tag, wt, &mut buf)?, }} }} Ok(()) }}\n\
             #[cfg(feature = \"encode\")]\nfn len_{helper}(m: &{}) -> usize {{ let mut n = 0; {} n }}\n\
             #[cfg(feature = \"encode\")]\nfn put_{helper}(m: &{}, buf: &mut impl BufMut) {{ {} }}\n{}",
            f.type_name(),
            def.rust_path,
            sub.arms,
            def.rust_path,
            sub.len,
            def.rust_path,
            sub.put,
            sub.helpers,
        );
        let _ = write!(
            body.arms,
            "{number} => field::inline(&mut *m, wt, &mut buf, ctx, merge_{helper}).at({fname:?})?,"
        );
        let _ = write!(
            body.len,
            "n += wire::delimited_len({number}, len_{helper}(m));"
        );
        let _ = write!(
            body.put,
            "wire::put_header({number}, len_{helper}(m), buf); put_{helper}(m, buf);"
        );
        body.shrink.push_str(&sub.shrink);
        body.fit.push_str(&sub.fit);
        body.covered.extend(sub.covered);
        body.schema.extend(sub.schema);
        Ok(())
    }

    /// A field of its own, held in the Rust field `rust` of `def`: its decoding arm, its
    /// length and writing statements, what shrinks and fits it, and its test schema entry.
    fn field(
        &self,
        body: &mut Body,
        name: &str,
        f: &InputField,
        def: &Definition,
        rust: &String,
        local: bool,
    ) -> Result<(), Error> {
        let (number, fname) = (f.number(), f.name());
        let ty = &def.fields[rust];
        let optional = ty.starts_with("Option<");
        check_scalar(name, f, ty)?;
        let go = GoShape::of(f);
        let (dec, enc) = go.rules(f, optional);
        let slot = if local {
            format!("f_{rust}")
        } else {
            format!("m.{rust}")
        };
        let dec = if local && !optional && !self.is_default(&ty.replace("crate::", "k8s_openapi::"))
        {
            "opt"
        } else {
            dec
        };
        if name == "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta" && fname == "managedFields" {
            // Skipped when the caller strips them (as the JSON path's transform does).
            let _ = write!(
                body.arms,
                "{number} if ctx.skip_managed_fields => wire::skip(tag, wt, &mut buf)?,"
            );
        }
        // A repeated field is given its number, to count its elements ahead.
        let tag = if matches!(dec, "rep" | "rep_opt") {
            "tag, "
        } else {
            ""
        };
        let _ = write!(
            body.arms,
            "{number} => field::{dec}(&mut {slot}, {tag}wt, &mut buf, ctx).at({fname:?})?,"
        );
        if matches!(dec, "rep" | "rep_opt") {
            let _ = write!(body.shrink, "field::shrink_{dec}(&mut {slot});");
        }
        // Lists to shrink, and messages (alone, in lists or maps) to walk into; the special
        // types (Time, Quantity, raw JSON…) hold no list of their own to fit.
        let is_message = self.input.messages.contains_key(f.type_name());
        if f.label() == "repeated" || (is_message && !SPECIAL.contains(&f.type_name())) {
            let _ = write!(
                body.fit,
                "field::fit_{}(&mut m.{rust});",
                container_rule(f.label(), optional)
            );
        }
        let _ = write!(body.len, "n += field::len_{enc}({number}, &m.{rust});");
        let _ = write!(body.put, "field::put_{enc}({number}, &m.{rust}, buf);");
        body.covered.push(rust.clone());
        body.schema
            .push(self.schema_field(f, def, rust, ty, optional, &go));
        Ok(())
    }

    /// The test schema's `Field { … }` of field `f`, held in `rust` (of type `ty`).
    fn schema_field(
        &self,
        f: &InputField,
        def: &Definition,
        rust: &String,
        ty: &str,
        optional: bool,
        go: &GoShape,
    ) -> String {
        let json = def
            .json
            .iter()
            .find(|(_, r)| *r == rust)
            .map_or(f.name(), |(j, _)| j.as_str());
        let kind = self.kind(f.type_name(), ty);
        let container = match f.label() {
            "repeated" => "List",
            "map" => "Map",
            _ => "One",
        };
        // Present in every Go-normal JSON: required in Rust, or a Go value whose zero value
        // decodes to `Some` (Go writes it always and its JSON has it).
        let zero_is_none = (SCALARS.contains(&f.type_name()) && go.omitempty)
            || matches!(
                kind.as_str(),
                "Time" | "MicroTime" | "FieldsV1" | "RawExtension" | "Json" | "OrArray"
            );
        let always = f.label() == "optional" && (!optional || (go.value && !zero_is_none));
        format!("Field {{ json: {json:?}, kind: Kind::{kind}, container: Container::{container}, always: {always} }}")
    }
}

/// The Rust field of `def` that holds proto field `f` of message `name`: by its JSON name, or
/// by its JSON or proto name with case and punctuation ignored.
fn rust_field<'a>(
    name: &str,
    f: &InputField,
    def: &'a Definition,
    json_by_norm: &BTreeMap<String, &'a String>,
) -> Result<&'a String, Error> {
    let (number, fname) = (f.number(), f.name());
    let json_name = f.json_tag().split(',').next().unwrap_or("");
    def.json
        .get(json_name)
        .or_else(|| {
            json_by_norm
                .get(&norm(if json_name.is_empty() {
                    fname
                } else {
                    json_name
                }))
                .copied()
        })
        .or_else(|| json_by_norm.get(&norm(fname)).copied())
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{name}.{fname} (#{number}): no k8s-openapi field of {}",
                def.rust_path
            ))
        })
}

/// Refuses a scalar field whose Rust type `ty` does not hold its proto type (a mismatch would
/// change the wire).
fn check_scalar(name: &str, f: &InputField, ty: &str) -> Result<(), Error> {
    if !SCALARS.contains(&f.type_name()) {
        return Ok(());
    }
    let inner = strip_option(ty).unwrap_or(ty);
    let element = match f.label() {
        "repeated" => inner
            .strip_prefix("std::vec::Vec<")
            .and_then(|t| t.strip_suffix('>')),
        "map" => inner
            .strip_prefix("std::collections::BTreeMap<std::string::String, ")
            .and_then(|t| t.strip_suffix('>')),
        _ => Some(inner),
    };
    if element != Some(scalar_rust(f.type_name())) {
        return Err(Error::Invalid(format!(
            "{}.{}: proto {} {} does not fit k8s-openapi's {ty}",
            name,
            f.name(),
            f.label(),
            f.type_name()
        )));
    }
    Ok(())
}

/// What Go says about a field: whether it is a value (not a pointer, slice or map: written
/// always) and whether its JSON omits it when empty.
struct GoShape {
    value: bool,
    omitempty: bool,
}

impl GoShape {
    fn of(f: &InputField) -> Self {
        let go = f.go_type();
        Self {
            value: !go.is_empty()
                && !go.starts_with('*')
                && !go.starts_with("[]")
                && !go.starts_with("map["),
            omitempty: f.json_tag().contains(",omitempty") || f.json_tag().contains(",omitzero"),
        }
    }

    /// The field's decoding and encoding rules (kclient-protobuf's `field::{rule}` and
    /// `field::len_{rule}`/`put_{rule}`), from its proto label, its Rust optionality and Go.
    fn rules(&self, f: &InputField, optional: bool) -> (&'static str, &'static str) {
        match (f.label(), optional) {
            ("repeated", true) => ("rep_opt", "rep_opt"),
            ("repeated", false) => ("rep", "rep"),
            ("map", true) => ("map_opt", "map_opt"),
            ("map", false) => ("map", "map"),
            (_, false) => ("req", "req"),
            // `[]byte` with omitempty: Go writes a non-nil empty slice, its JSON omits it.
            (_, true) if f.type_name() == "bytes" && self.omitempty => ("opt_nz", "opt"),
            (_, true) if self.value && self.omitempty => ("opt_nz", "opt_zero"),
            (_, true) if self.value => ("opt", "opt_zero"),
            (_, true) => ("opt", "opt"),
        }
    }
}

/// The rule of a field by its proto label and Rust optionality alone (`field::fit_{rule}`).
fn container_rule(label: &str, optional: bool) -> &'static str {
    match (label, optional) {
        ("repeated", false) => "rep",
        ("repeated", true) => "rep_opt",
        ("map", false) => "map",
        ("map", true) => "map_opt",
        (_, false) => "req",
        (_, true) => "opt",
    }
}

/// Refuses a k8s-openapi field that no proto field of the message covers (it would be lost
/// on the wire).
fn check_covered(name: &str, def: &Definition, body: &Body) -> Result<(), Error> {
    for rust in def.fields.keys() {
        // k8s-openapi's DeleteOptions has apiVersion/kind (carried by the envelope).
        let envelope =
            matches!(rust.as_str(), "api_version" | "kind") && name.ends_with(".DeleteOptions");
        if !body.covered.contains(rust) && !envelope {
            return Err(Error::Invalid(format!(
                "{name}: k8s-openapi field {rust} has no proto field"
            )));
        }
    }
    Ok(())
}

/// `impl Encode` on the type at `path` (compiled with kclient-protobuf's `encode` feature).
fn encode_impl(out: &mut String, path: &str, body: &Body) {
    let _ = writeln!(
        out,
        "#[cfg(feature = \"encode\")]\nimpl Encode for {path} {{"
    );
    let _ = writeln!(
        out,
        "fn encoded_len(&self) -> usize {{ let m = self; let mut n = 0; {} n }}",
        body.len
    );
    let _ = writeln!(
        out,
        "fn encode_raw(&self, buf: &mut impl BufMut) {{ let m = self; {} }}",
        body.put
    );
    let _ = writeln!(out, "}}\n");
}

/// `impl Message`: Go's zero value is `Self::default()` encoded, or, for a type without
/// `Default`, an empty message.
fn message_impl(out: &mut String, def: &Definition, body: &Body) {
    let path = &def.rust_path;
    if def.has_default {
        let _ = writeln!(
            out,
            "impl Message for {path} {{ #[cfg(feature = \"encode\")] fn zero_len() -> usize {{ Self::default().encoded_len() }} #[cfg(feature = \"encode\")] fn put_zero(buf: &mut impl BufMut) {{ Self::default().encode_raw(buf) }} {} }}",
            fit_fn(&body.fit)
        );
    } else {
        let _ = writeln!(
            out,
            "/// Go's zero value is written as an empty message (k8s-openapi's type has no `Default`); Go decodes both the same.\nimpl Message for {path} {{ #[cfg(feature = \"encode\")] fn zero_len() -> usize {{ 0 }} #[cfg(feature = \"encode\")] fn put_zero(_buf: &mut impl BufMut) {{}} {} }}",
            fit_fn(&body.fit)
        );
    }
}

/// `Message::fit` of a message whose fit statements are `fit` (none: the trait's no-op).
fn fit_fn(fit: &str) -> String {
    if fit.is_empty() {
        String::new()
    } else {
        format!("fn fit(&mut self) {{ let m = self; {fit} }}")
    }
}

/// A message without fields does not use `ctx`: `let _ = ctx;` keeps its decoder free of an
/// unused-variable warning.
fn ctx_unused(out: &mut String, arms: &str) -> std::fmt::Result {
    if arms.is_empty() {
        writeln!(out, "let _ = ctx;")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
