//! A parser for the subset of proto2 that Kubernetes' `generated.proto` files use (written by
//! go-to-protobuf): `syntax`, `package`, `import`, `option`, comments, and flat `message`s
//! whose fields are `optional|repeated T name = N;` or `map<string, V> name = N;`. Any other
//! line is an error, so a change of the generator upstream is noticed rather than misread.

use crate::error::Error;

/// A field of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoField {
    /// The field number.
    pub number: u32,
    /// The field name.
    pub name: String,
    /// `optional`, `repeated` or `map` (keys are always strings).
    pub label: String,
    /// A scalar type name, or the full name of a message (`k8s.io.api.core.v1.Pod`); the value
    /// type for maps.
    pub type_name: String,
}

/// A message of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoMessage {
    /// The short name.
    pub name: String,
    /// The fields, in file order.
    pub fields: Vec<ProtoField>,
}

/// A parsed file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProtoFile {
    /// The package (`k8s.io.api.core.v1`).
    pub package: String,
    /// The messages.
    pub messages: Vec<ProtoMessage>,
}

/// The scalar types the files use.
pub const SCALARS: &[&str] = &["string", "int32", "int64", "bool", "double", "bytes"];

/// Parses one file; `what` names it in errors.
pub fn parse(text: &str, what: &str) -> Result<ProtoFile, Error> {
    let mut file = ProtoFile::default();
    let mut current: Option<ProtoMessage> = None;
    let mut in_block_comment = false;
    for (i, line) in text.lines().enumerate() {
        let bad = |why: &str| Error::Invalid(format!("{what}:{}: {why}: {line:?}", i + 1));
        let s = line.trim();
        if in_block_comment {
            in_block_comment = !s.contains("*/");
            continue;
        }
        if s.starts_with("/*") {
            in_block_comment = !s.contains("*/");
            continue;
        }
        if s.is_empty() || s.starts_with("//") {
            continue;
        }
        if let Some(m) = current.as_mut() {
            if s == "}" {
                file.messages.extend(current.take());
                continue;
            }
            m.fields
                .push(parse_field(s, &file.package).ok_or_else(|| bad("not a field"))?);
            continue;
        }
        if let Some(name) = s.strip_prefix("message ").and_then(|r| r.strip_suffix('{')) {
            let name = name.trim();
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(bad("bad message name"));
            }
            current = Some(ProtoMessage {
                name: name.to_owned(),
                fields: Vec::new(),
            });
        } else if let Some(p) = s.strip_prefix("package ").and_then(|r| r.strip_suffix(';')) {
            file.package = p.trim().to_owned();
        } else if s == "syntax = \"proto2\";"
            || s.starts_with("import \"")
            || s.starts_with("option go_package = ")
        {
            // Nothing to keep.
        } else {
            return Err(bad("outside the supported subset"));
        }
    }
    if current.is_some() {
        return Err(Error::Invalid(format!("{what}: unterminated message")));
    }
    Ok(file)
}

fn resolve(package: &str, type_name: &str) -> String {
    if SCALARS.contains(&type_name) {
        type_name.to_owned()
    } else if let Some(full) = type_name.strip_prefix('.') {
        full.to_owned()
    } else {
        format!("{package}.{type_name}")
    }
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// `optional T name = N;`, `repeated T name = N;` or `map<string, V> name = N;`.
fn parse_field(s: &str, package: &str) -> Option<ProtoField> {
    let s = s.strip_suffix(';')?;
    let (decl, number) = s.split_once('=')?;
    let number: u32 = number.trim().parse().ok()?;
    let (label, type_name, name) = if let Some(rest) = decl.trim().strip_prefix("map<") {
        let (types, name) = rest.split_once('>')?;
        let (key, value) = types.split_once(',')?;
        if key.trim() != "string" || !is_ident(value.trim()) {
            return None;
        }
        ("map", resolve(package, value.trim()), name.trim())
    } else {
        let mut parts = decl.split_whitespace();
        let (label, ty, name) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || !matches!(label, "optional" | "repeated") || !is_ident(ty) {
            return None;
        }
        (label, resolve(package, ty), name)
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    Some(ProtoField {
        number,
        name: name.to_owned(),
        label: label.to_owned(),
        type_name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_subset_and_refuses_the_rest() {
        let text = "/*\nlicence\n*/\nsyntax = \"proto2\";\npackage k8s.io.api.core.v1;\nimport \"x.proto\";\noption go_package = \"k8s.io/api/core/v1\";\n\n// A.\nmessage ConfigMap {\n  // meta\n  optional .k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta metadata = 1;\n  map<string, string> data = 2;\n  repeated Other items = 3;\n}\n";
        let file = parse(text, "x").unwrap();
        assert_eq!(file.package, "k8s.io.api.core.v1");
        let m = &file.messages[0];
        assert_eq!(m.name, "ConfigMap");
        assert_eq!(
            m.fields[0].type_name,
            "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(m.fields[1].label, "map");
        assert_eq!(m.fields[1].type_name, "string");
        assert_eq!(m.fields[2].type_name, "k8s.io.api.core.v1.Other");
        assert!(parse("message A {\n  oneof x {\n}\n", "x").is_err());
        assert!(parse("enum A {\n}\n", "x").is_err());
        assert!(parse("message A {\n  map<int32, string> m = 1;\n}\n", "x").is_err());
    }
}
