//! The `#[kube(...)]` attributes of a spec struct, read and checked.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, Error, LitBool, LitInt, LitStr, Path, Result, Type};

/// Every attribute `#[kube(...)]` takes, for the error that names an unknown one.
pub(crate) const KNOWN: &str = "group, version, kind, plural, singular, namespaced, status, \
struct, shortname, category, selectable, printcolumn, scale, served, storage, deprecated, \
validation, annotation, label, doc, derive, attr, schema, crates";

/// A printer column (`printcolumn(name = .., type = .., json_path = ..)` or kube-rs's JSON).
#[derive(Debug, Clone)]
pub(crate) struct PrinterColumn {
    pub(crate) name: String,
    pub(crate) type_: String,
    pub(crate) json_path: String,
    pub(crate) description: Option<String>,
    pub(crate) format: Option<String>,
    pub(crate) priority: Option<i32>,
}

/// The scale subresource's paths.
#[derive(Debug, Clone)]
pub(crate) struct Scale {
    pub(crate) spec_replicas_path: String,
    pub(crate) status_replicas_path: String,
    pub(crate) label_selector_path: Option<String>,
}

/// A CEL rule on the whole object.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rule {
    pub(crate) rule: String,
    pub(crate) message: Option<String>,
    pub(crate) message_expression: Option<String>,
    pub(crate) reason: Option<String>,
    pub(crate) field_path: Option<String>,
    pub(crate) optional_old_self: Option<bool>,
}

/// Where the root schema comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SchemaMode {
    /// From the spec's and status' `JsonSchema` (the default).
    Derived,
    /// From the root type's own `JsonSchema` implementation, written by hand.
    Manual,
    /// None: any object is accepted.
    Disabled,
}

/// What `#[kube(...)]` said, with the span of each value for later errors.
#[derive(Debug)]
pub(crate) struct Attrs {
    pub(crate) group: Option<LitStr>,
    pub(crate) version: Option<LitStr>,
    pub(crate) kind: Option<LitStr>,
    pub(crate) plural: Option<LitStr>,
    pub(crate) singular: Option<LitStr>,
    pub(crate) root: Option<LitStr>,
    pub(crate) namespaced: bool,
    pub(crate) status: Option<Type>,
    pub(crate) short_names: Vec<LitStr>,
    pub(crate) categories: Vec<LitStr>,
    pub(crate) selectable: Vec<LitStr>,
    pub(crate) printer_columns: Vec<PrinterColumn>,
    pub(crate) scale: Option<Scale>,
    pub(crate) served: bool,
    pub(crate) storage: bool,
    pub(crate) deprecated: bool,
    pub(crate) deprecation_warning: Option<String>,
    pub(crate) validations: Vec<Rule>,
    pub(crate) annotations: Vec<(String, String)>,
    pub(crate) labels: Vec<(String, String)>,
    pub(crate) doc: Option<String>,
    pub(crate) derives: Vec<Path>,
    pub(crate) extra_attrs: Vec<proc_macro2::TokenStream>,
    pub(crate) schema: SchemaMode,
    pub(crate) core_path: Option<Path>,
    pub(crate) typed_path: Option<Path>,
}

impl Default for Attrs {
    fn default() -> Self {
        Self {
            group: None,
            version: None,
            kind: None,
            plural: None,
            singular: None,
            root: None,
            namespaced: false,
            status: None,
            short_names: Vec::new(),
            categories: Vec::new(),
            selectable: Vec::new(),
            printer_columns: Vec::new(),
            scale: None,
            served: true,
            storage: true,
            deprecated: false,
            deprecation_warning: None,
            validations: Vec::new(),
            annotations: Vec::new(),
            labels: Vec::new(),
            doc: None,
            derives: Vec::new(),
            extra_attrs: Vec::new(),
            schema: SchemaMode::Derived,
            core_path: None,
            typed_path: None,
        }
    }
}

/// The name of the attribute `meta` is, for messages.
fn name_of(meta: &ParseNestedMeta<'_>) -> String {
    meta.path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_else(|| "?".into())
}

/// The string after `= `.
fn string(meta: &ParseNestedMeta<'_>) -> Result<LitStr> {
    let name = name_of(meta);
    let value = meta.value().map_err(|_| {
        meta.error(format!(
            "#[kube({name} = \"...\")] expects a string after `=`"
        ))
    })?;
    value.parse::<LitStr>().map_err(|e| {
        Error::new(
            e.span(),
            format!("#[kube({name} = \"...\")] expects a string literal"),
        )
    })
}

/// `flag` alone (true) or `flag = true|false`.
fn flag(meta: &ParseNestedMeta<'_>) -> Result<bool> {
    if meta.input.peek(syn::Token![=]) {
        let name = name_of(meta);
        let value = meta.value()?;
        let lit: LitBool = value.parse().map_err(|e| {
            Error::new(
                e.span(),
                format!("#[kube({name})] is a flag: write `{name}` or `{name} = true|false`"),
            )
        })?;
        Ok(lit.value)
    } else {
        Ok(true)
    }
}

/// `name("a", "b")`: two strings.
fn pair(meta: &ParseNestedMeta<'_>) -> Result<(String, String)> {
    let name = name_of(meta);
    let content;
    syn::parenthesized!(content in meta.input);
    let first: LitStr = content.parse()?;
    content.parse::<syn::Token![,]>()?;
    let second: LitStr = content.parse().map_err(|e| {
        Error::new(
            e.span(),
            format!("#[kube({name}(\"key\", \"value\"))] expects two strings"),
        )
    })?;
    Ok((first.value(), second.value()))
}

/// Reads every `#[kube(...)]` of the struct.
pub(crate) fn parse(attrs: &[Attribute]) -> Result<Attrs> {
    let mut out = Attrs::default();
    let mut errors: Option<Error> = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("kube")) {
        if let Err(e) = attr.parse_nested_meta(|meta| one(&mut out, &meta)) {
            match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            }
        }
    }
    match errors {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// One attribute.
fn one(out: &mut Attrs, meta: &ParseNestedMeta<'_>) -> Result<()> {
    let name = name_of(meta);
    match name.as_str() {
        "group" => set_once(&mut out.group, string(meta)?, &name),
        "version" => set_once(&mut out.version, string(meta)?, &name),
        "kind" => set_once(&mut out.kind, string(meta)?, &name),
        "plural" => set_once(&mut out.plural, string(meta)?, &name),
        "singular" => set_once(&mut out.singular, string(meta)?, &name),
        "struct" => set_once(&mut out.root, string(meta)?, &name),
        "namespaced" | "served" | "storage" | "deprecated" => version_flag(out, meta, &name),
        "status" => {
            out.status = Some(parsed(
                meta,
                "the name of the status type, e.g. `status = \"FooStatus\"`",
            )?);
            Ok(())
        }
        "shortname" | "category" | "selectable" | "annotation" | "label" => names(out, meta, &name),
        "printcolumn" => {
            out.printer_columns.push(printer_column(meta)?);
            Ok(())
        }
        "scale" => {
            if out.scale.is_some() {
                return Err(meta.error("#[kube(scale)] is given twice"));
            }
            out.scale = Some(scale(meta)?);
            Ok(())
        }
        "validation" => {
            out.validations.push(rule(meta)?);
            Ok(())
        }
        "doc" => {
            out.doc = Some(string(meta)?.value());
            Ok(())
        }
        "derive" => {
            out.derives.push(parsed(
                meta,
                "a trait to derive, e.g. `derive = \"PartialEq\"`",
            )?);
            Ok(())
        }
        "attr" => {
            let what = "an attribute's contents, e.g. `attr = \"allow(deprecated)\"`";
            out.extra_attrs.push(parsed(meta, what)?);
            Ok(())
        }
        "schema" => schema_mode(out, meta),
        "crates" => crate_paths(out, meta),
        _ => Err(meta.error(format!(
            "unknown #[kube] attribute `{name}`; #[derive(CustomResource)] knows: {KNOWN}"
        ))),
    }
}

/// The string after `=`, parsed as Rust (`T`): a type, a path, tokens.
fn parsed<T: syn::parse::Parse>(meta: &ParseNestedMeta<'_>, what: &str) -> Result<T> {
    let name = name_of(meta);
    let lit = string(meta)?;
    lit.parse().map_err(|_| {
        Error::new(
            lit.span(),
            format!("#[kube({name} = \"...\")] expects {what}"),
        )
    })
}

/// `namespaced`, `served`, `storage`, `deprecated` (with its warning, `deprecated = "..."`).
fn version_flag(out: &mut Attrs, meta: &ParseNestedMeta<'_>, name: &str) -> Result<()> {
    match name {
        "namespaced" => out.namespaced = flag(meta)?,
        "served" => out.served = flag(meta)?,
        "storage" => out.storage = flag(meta)?,
        _ if meta.input.peek(syn::Token![=]) && meta.input.peek2(LitStr) => {
            out.deprecated = true;
            out.deprecation_warning = Some(string(meta)?.value());
        }
        _ => out.deprecated = flag(meta)?,
    }
    Ok(())
}

/// The attributes that may repeat: short names, categories, selectable fields, annotations,
/// labels.
fn names(out: &mut Attrs, meta: &ParseNestedMeta<'_>, name: &str) -> Result<()> {
    match name {
        "shortname" => out.short_names.push(string(meta)?),
        "category" => out.categories.push(string(meta)?),
        "annotation" => out.annotations.push(pair(meta)?),
        "label" => out.labels.push(pair(meta)?),
        _ => {
            let path = string(meta)?;
            if !path.value().starts_with('.') {
                return Err(Error::new(
                    path.span(),
                    "#[kube(selectable = \"...\")] expects a JSON path starting with `.`, e.g. `.spec.color`",
                ));
            }
            out.selectable.push(path);
        }
    }
    Ok(())
}

/// `schema = "derived" | "manual" | "disabled"`.
fn schema_mode(out: &mut Attrs, meta: &ParseNestedMeta<'_>) -> Result<()> {
    let lit = string(meta)?;
    out.schema = match lit.value().as_str() {
        "derived" => SchemaMode::Derived,
        "manual" => SchemaMode::Manual,
        "disabled" => SchemaMode::Disabled,
        other => {
            return Err(Error::new(
                lit.span(),
                format!("#[kube(schema = \"{other}\")]: expected \"derived\" (from the spec's and status' JsonSchema), \"manual\" (the root type's own JsonSchema) or \"disabled\" (any object)"),
            ))
        }
    };
    Ok(())
}

/// `crates(kclient_core = "...", kclient_typed = "...")`.
fn crate_paths(out: &mut Attrs, meta: &ParseNestedMeta<'_>) -> Result<()> {
    meta.parse_nested_meta(|inner| {
        let which = name_of(&inner);
        let lit = string(&inner)?;
        let path: Path = lit.parse()?;
        match which.as_str() {
            "kclient_core" => out.core_path = Some(path),
            "kclient_typed" => out.typed_path = Some(path),
            _ => {
                return Err(inner.error(format!(
                    "#[kube(crates({which} = ...))]: expected `kclient_core` or `kclient_typed`"
                )))
            }
        }
        Ok(())
    })
}

fn set_once(slot: &mut Option<LitStr>, value: LitStr, name: &str) -> Result<()> {
    if slot.is_some() {
        return Err(Error::new(
            value.span(),
            format!("#[kube({name} = ...)] is given twice"),
        ));
    }
    *slot = Some(value);
    Ok(())
}

/// The column types kube-apiserver accepts.
const COLUMN_TYPES: [&str; 5] = ["integer", "number", "string", "boolean", "date"];

/// `printcolumn(name = .., type = .., json_path = .., description = .., format = ..,
/// priority = ..)`, or kube-rs's `printcolumn = r#"{"name": .., "type": .., "jsonPath": ..}"#`.
fn printer_column(meta: &ParseNestedMeta<'_>) -> Result<PrinterColumn> {
    let (span, column) = if meta.input.peek(syn::Token![=]) {
        printer_column_json(meta)?
    } else {
        let span = meta
            .path
            .get_ident()
            .map_or_else(Span::call_site, |i| i.span());
        (span, printer_column_fields(meta)?)
    };
    if column.name.is_empty() || column.json_path.is_empty() || column.type_.is_empty() {
        return Err(Error::new(
            span,
            "a printcolumn needs a name, a type and a json_path: printcolumn(name = \"Size\", type = \"integer\", json_path = \".spec.size\")",
        ));
    }
    if !COLUMN_TYPES.contains(&column.type_.as_str()) {
        return Err(Error::new(
            span,
            format!(
                "printcolumn type `{}` is not one kube-apiserver accepts: {}",
                column.type_,
                COLUMN_TYPES.join(", ")
            ),
        ));
    }
    if !column.json_path.starts_with('.') {
        return Err(Error::new(
            span,
            format!(
                "printcolumn json_path `{}` must start with `.`, e.g. `.spec.size`",
                column.json_path
            ),
        ));
    }
    Ok(column)
}

/// kube-rs's form: `printcolumn = r#"{"name": .., "type": .., "jsonPath": ..}"#`.
fn printer_column_json(meta: &ParseNestedMeta<'_>) -> Result<(Span, PrinterColumn)> {
    let lit = string(meta)?;
    let json: serde_json::Value = serde_json::from_str(&lit.value()).map_err(|e| {
        Error::new(
            lit.span(),
            format!("#[kube(printcolumn = \"...\")] is not JSON: {e}"),
        )
    })?;
    let text = |key: &str| json.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    let column = PrinterColumn {
        name: text("name").unwrap_or_default(),
        type_: text("type").unwrap_or_default(),
        json_path: text("jsonPath").unwrap_or_default(),
        description: text("description"),
        format: text("format"),
        priority: json
            .get("priority")
            .and_then(serde_json::Value::as_i64)
            .and_then(|p| i32::try_from(p).ok()),
    };
    Ok((lit.span(), column))
}

/// The typed form: `printcolumn(name = .., type = .., json_path = .., ..)`.
fn printer_column_fields(meta: &ParseNestedMeta<'_>) -> Result<PrinterColumn> {
    let mut column = PrinterColumn {
        name: String::new(),
        type_: String::new(),
        json_path: String::new(),
        description: None,
        format: None,
        priority: None,
    };
    meta.parse_nested_meta(|inner| {
        match name_of(&inner).as_str() {
            "name" => column.name = string(&inner)?.value(),
            "type" | "type_" => column.type_ = string(&inner)?.value(),
            "json_path" | "jsonPath" => column.json_path = string(&inner)?.value(),
            "description" => column.description = Some(string(&inner)?.value()),
            "format" => column.format = Some(string(&inner)?.value()),
            "priority" => {
                let lit: LitInt = inner.value()?.parse()?;
                column.priority = Some(lit.base10_parse()?);
            }
            other => {
                return Err(inner.error(format!(
                    "unknown printcolumn field `{other}`; expected name, type, json_path, description, format, priority"
                )))
            }
        }
        Ok(())
    })?;
    Ok(column)
}

/// `scale(spec_replicas_path = .., status_replicas_path = .., label_selector_path = ..)`, or
/// kube-rs's `scale = r#"{"specReplicasPath": .., ...}"#`.
fn scale(meta: &ParseNestedMeta<'_>) -> Result<Scale> {
    let mut scale = Scale {
        spec_replicas_path: String::new(),
        status_replicas_path: String::new(),
        label_selector_path: None,
    };
    let span;
    if meta.input.peek(syn::Token![=]) {
        let lit = string(meta)?;
        span = lit.span();
        let json: serde_json::Value = serde_json::from_str(&lit.value())
            .map_err(|e| Error::new(span, format!("#[kube(scale = \"...\")] is not JSON: {e}")))?;
        let text = |key: &str| json.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        scale.spec_replicas_path = text("specReplicasPath").unwrap_or_default();
        scale.status_replicas_path = text("statusReplicasPath").unwrap_or_default();
        scale.label_selector_path = text("labelSelectorPath");
    } else {
        span = meta
            .path
            .get_ident()
            .map_or_else(Span::call_site, |i| i.span());
        meta.parse_nested_meta(|inner| {
            let value = string(&inner)?.value();
            match name_of(&inner).as_str() {
                "spec_replicas_path" => scale.spec_replicas_path = value,
                "status_replicas_path" => scale.status_replicas_path = value,
                "label_selector_path" => scale.label_selector_path = Some(value),
                other => {
                    return Err(inner.error(format!(
                        "unknown scale field `{other}`; expected spec_replicas_path, status_replicas_path, label_selector_path"
                    )))
                }
            }
            Ok(())
        })?;
    }
    // kube-apiserver's rules for the paths.
    if !scale.spec_replicas_path.starts_with(".spec.") {
        return Err(Error::new(
            span,
            "scale: spec_replicas_path must be a path under .spec, e.g. \".spec.replicas\"",
        ));
    }
    if !scale.status_replicas_path.starts_with(".status.") {
        return Err(Error::new(
            span,
            "scale: status_replicas_path must be a path under .status, e.g. \".status.replicas\"",
        ));
    }
    if let Some(selector) = &scale.label_selector_path {
        if !(selector.starts_with(".status.") || selector.starts_with(".spec.")) {
            return Err(Error::new(
                span,
                "scale: label_selector_path must be a path under .status or .spec, e.g. \".status.selector\"",
            ));
        }
    }
    Ok(scale)
}

/// `validation = "rule"` or `validation(rule = .., message = .., message_expression = ..,
/// reason = .., field_path = .., optional_old_self = ..)`.
fn rule(meta: &ParseNestedMeta<'_>) -> Result<Rule> {
    if meta.input.peek(syn::Token![=]) {
        return Ok(Rule {
            rule: string(meta)?.value(),
            ..Rule::default()
        });
    }
    let mut rule = Rule::default();
    meta.parse_nested_meta(|inner| {
        match name_of(&inner).as_str() {
            "rule" => rule.rule = string(&inner)?.value(),
            "message" => rule.message = Some(string(&inner)?.value()),
            "message_expression" => rule.message_expression = Some(string(&inner)?.value()),
            "reason" => {
                let lit = string(&inner)?;
                const REASONS: [&str; 4] = [
                    "FieldValueInvalid",
                    "FieldValueForbidden",
                    "FieldValueRequired",
                    "FieldValueDuplicate",
                ];
                if !REASONS.contains(&lit.value().as_str()) {
                    return Err(Error::new(
                        lit.span(),
                        format!("validation reason must be one of {}", REASONS.join(", ")),
                    ));
                }
                rule.reason = Some(lit.value());
            }
            "field_path" => rule.field_path = Some(string(&inner)?.value()),
            "optional_old_self" => rule.optional_old_self = Some(flag(&inner)?),
            other => {
                return Err(inner.error(format!(
                    "unknown validation field `{other}`; expected rule, message, message_expression, reason, field_path, optional_old_self"
                )))
            }
        }
        Ok(())
    })?;
    if rule.rule.is_empty() {
        return Err(meta.error("validation(...) needs a rule: validation(rule = \"self.spec.size <= 5\", message = \"...\")"));
    }
    Ok(rule)
}
