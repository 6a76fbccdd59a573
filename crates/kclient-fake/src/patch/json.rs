//! JSON patch (RFC 6902) as kube-apiserver 1.37 applies it.
//!
//! kube-apiserver first decodes the operations strictly (a body that is not an array of
//! operations, or an `op`, `path` or `from` that is not a string, is a `400 error decoding
//! patch: ...`; unknown and repeated fields are `Warning`s, or a `422` with
//! `fieldValidation=Strict`), refuses more than 10,000 operations (`413`), then applies them
//! with gopkg.in/evanphx/json-patch.v4 (v4.13.0). That library departs from a strict reading
//! of the RFC in ways clients rely on; every one of them is kept here:
//!
//! - a `test` of a path whose key is missing (or null) passes when the value is null or
//!   absent: kube-runtime's `finalizer()` adds the first finalizer with
//!   `[{"op":"test","path":"/metadata/finalizers","value":null}, {"op":"add",...}]`;
//! - `add` over an existing key replaces it, `replace` of a missing key adds it, and `copy`
//!   from a missing key copies a null;
//! - an array index is a Go integer: `-1` counts from the end, `01` and `+1` are 1; `-`
//!   (the end) is an index for `add` only;
//! - a path's first segment is skipped, whatever it is (`x/data/k` is `/data/k`); the empty
//!   path is the whole document for `replace` and `test`, and missing for the others;
//! - a `test` compares strings, numbers and booleans by their JSON text: the stored object's
//!   as kube-apiserver's encoder writes it (`<`, `>` and `&` as `\u003c`, `\u003e`,
//!   `\u0026`), the patch's as sent; so `"a<b"` does not equal a stored `a<b`, `"a\u003cb"`
//!   does, and `1.0` is not `1`;
//! - nothing can be reached through a null, and a move into a child of itself finds its
//!   destination gone;
//! - copies grow the document by at most 3 MiB in all (kube-apiserver's
//!   `JSONPatchMaxCopyBytes`).
//!
//! An operation that does not apply is a `422` whose `Status` says only `the server rejected
//! our request due to an error in our request`, with empty details, exactly as kube-apiserver
//! answers; why it did not apply is logged (`tracing`, debug level).

use std::collections::BTreeMap;
use std::fmt;

use kclient_core::{go_format, ApiError, FieldError, GroupResource, Status, StatusDetails};
use kclient_core::{FieldValidation, StatusReason};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::registry::WriteOptions;

/// kube-apiserver's limit on operations in one JSON patch.
pub const MAX_OPERATIONS: usize = 10_000;

/// kube-apiserver's limit on the bytes `copy` operations may add to a document
/// (`JSONPatchMaxCopyBytes`).
pub const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// Applies a JSON patch document to `target`, with the request's `fieldValidation` and its
/// warnings.
pub fn apply(target: &Value, body: &[u8], opts: &WriteOptions) -> Result<Value, ApiError> {
    let strict = opts.field_validation != FieldValidation::Ignore;
    let ops = decode(body, strict)?;
    if ops.ops.len() > MAX_OPERATIONS {
        let mut err: ApiError = Status::failure(
            StatusReason::RequestEntityTooLarge,
            413,
            format!(
                "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {}",
                ops.ops.len()
            ),
        )
        .into();
        err.status.details = None;
        return Err(err);
    }
    let mut doc = Node::stored(target);
    let mut copied = 0;
    for op in &ops.ops {
        if let Err(why) = op.apply(&mut doc, &mut copied) {
            tracing::debug!(%why, "a JSON patch did not apply");
            return Err(Status::failure(
                StatusReason::Invalid,
                422,
                "the server rejected our request due to an error in our request",
            )
            .with_details(StatusDetails::default())
            .into());
        }
    }
    let patched = doc.into_value().map_err(|e| ApiError::internal_error(&e))?;
    if ops.strict_errors.is_empty() {
        return Ok(patched);
    }
    if opts.field_validation == FieldValidation::Strict {
        let why = format!("strict decoding error: {}", ops.strict_errors.join(", "));
        return Err(ApiError::invalid(
            &GroupResource::new("", ""),
            "",
            vec![FieldError::invalid(
                "patch",
                &Value::String(go_format::json(&patched)),
                &why,
            )],
        ));
    }
    for warning in ops.strict_errors {
        opts.warnings.push(warning);
    }
    Ok(patched)
}

/// The operations of a patch, and what strict decoding found wrong with their fields.
struct Decoded {
    ops: Vec<Operation>,
    /// `json patch unknown field "[0].x"`, `json patch duplicate field "[0].op"`, in order.
    strict_errors: Vec<String>,
}

/// Decodes a patch as kube-apiserver does: strictly (into its `[]jsonPatchOp`) unless
/// `fieldValidation=Ignore`, then into the library's operations. The body is JSON (the
/// handler checked).
fn decode(body: &[u8], strict: bool) -> Result<Decoded, ApiError> {
    let mut decoded = Decoded {
        ops: Vec::new(),
        strict_errors: Vec::new(),
    };
    let items = serde_json::from_slice::<Option<Box<RawValue>>>(body)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    // `null` decodes as no operations.
    let Some(items) = items else {
        return Ok(decoded);
    };
    // How Go's decoder words a value of the wrong type, for the whole patch or an element.
    let (prefix, list, element) = if strict {
        (
            "error decoding patch: ",
            "[]handlers.jsonPatchOp",
            "handlers.jsonPatchOp",
        )
    } else {
        ("", "jsonpatch.Patch", "jsonpatch.Operation")
    };
    let type_error = |found: &RawValue, into: &str| {
        ApiError::bad_request(format!(
            "{prefix}json: cannot unmarshal {} into Go value of type {into}",
            json_type(found)
        ))
    };
    let list_items = serde_json::from_str::<Vec<Option<Box<RawValue>>>>(items.get())
        .map_err(|_| type_error(&items, list))?;
    for (index, item) in list_items.iter().enumerate() {
        let Some(item) = item else {
            decoded.ops.push(Operation::default());
            continue;
        };
        let Fields(fields) =
            serde_json::from_str::<Fields>(item.get()).map_err(|_| type_error(item, element))?;
        if strict {
            let mut seen = Vec::new();
            for (name, value) in &fields {
                let known = matches!(name.as_str(), "op" | "path" | "from" | "value");
                if known && name != "value" {
                    if let Some(value) = value.as_deref().filter(|v| !v.get().starts_with('"')) {
                        return Err(ApiError::bad_request(format!(
                            "{prefix}json: cannot unmarshal {} into Go struct field jsonPatchOp.{name} of type string",
                            json_type(value)
                        )));
                    }
                }
                let error = if !known {
                    format!("json patch unknown field \"[{index}].{name}\"")
                } else if seen.contains(&name) {
                    format!("json patch duplicate field \"[{index}].{name}\"")
                } else {
                    seen.push(name);
                    continue;
                };
                if !decoded.strict_errors.contains(&error) {
                    decoded.strict_errors.push(error);
                }
            }
        }
        decoded.ops.push(Operation::from_fields(fields));
    }
    Ok(decoded)
}

/// The JSON type of a value, as Go's `UnmarshalTypeError` names it.
fn json_type(value: &RawValue) -> &'static str {
    match value.get().as_bytes().first() {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "bool",
        _ => "number",
    }
}

/// An object's fields in order, repeated ones included (a map would keep only the last).
struct Fields(Vec<(String, Option<Box<RawValue>>)>);

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = Fields;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    fields.push(entry);
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(FieldsVisitor)
    }
}

/// One operation as the library reads it: each field a string or missing (a null, or a
/// value of another type, reads as missing), the value raw.
#[derive(Default)]
struct Operation {
    op: Option<String>,
    path: Option<String>,
    from: Option<String>,
    value: Option<Box<RawValue>>,
}

impl Operation {
    fn from_fields(fields: Vec<(String, Option<Box<RawValue>>)>) -> Operation {
        let mut op = Operation::default();
        // A repeated field: the last one counts, as in a Go map.
        for (name, value) in fields {
            let text = || {
                value
                    .as_deref()
                    .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
            };
            match name.as_str() {
                "op" => op.op = text(),
                "path" => op.path = text(),
                "from" => op.from = text(),
                "value" => op.value = value,
                _ => {}
            }
        }
        op
    }

    /// The value, as a node (null when missing).
    fn value(&self) -> Result<Node, String> {
        match &self.value {
            Some(raw) => Node::sent(raw).map_err(|e| e.to_string()),
            None => Ok(Node::Null),
        }
    }

    fn path(&self) -> Result<&str, String> {
        self.path.as_deref().ok_or_else(|| "no path".into())
    }

    fn from(&self) -> Result<&str, String> {
        self.from.as_deref().ok_or_else(|| "no from".into())
    }

    /// Applies the operation to `doc`; `copied` counts the bytes copies have added so far.
    /// Why it did not apply, in words for the log.
    fn apply(&self, doc: &mut Node, copied: &mut usize) -> Result<(), String> {
        let kind = self.op.as_deref().unwrap_or("unknown");
        self.apply_kind(kind, doc, copied)
            .map_err(|why| format!("{kind} operation: {why}"))
    }

    fn apply_kind(&self, kind: &str, doc: &mut Node, copied: &mut usize) -> Result<(), String> {
        match kind {
            "add" => {
                let (parent, key) = parent_of(doc, self.path()?)?;
                parent.add(&key, self.value()?)
            }
            "remove" => {
                let (parent, key) = parent_of(doc, self.path()?)?;
                parent.remove(&key).map(drop)
            }
            "replace" => {
                let path = self.path()?;
                let value = self.value()?;
                if path.is_empty() {
                    return match value {
                        Node::Object(_) | Node::Array(_) => {
                            *doc = value;
                            Ok(())
                        }
                        _ => Err("the document's value must be an object or an array".into()),
                    };
                }
                let (parent, key) = parent_of(doc, path)?;
                parent.get(&key)?;
                parent.set(&key, value)
            }
            "move" => {
                let (parent, key) = parent_of(doc, self.from()?)?;
                let moved = parent.remove(&key)?;
                let (parent, key) = parent_of(doc, self.path()?)?;
                parent.add(&key, moved)
            }
            "test" => {
                let path = self.path()?;
                let expected = self.value()?;
                let found = if path.is_empty() {
                    Some(&*doc)
                } else {
                    let (parent, key) = parent_of(doc, path)?;
                    parent.get(&key)?
                };
                // A missing key and a null are the same here, and equal a null or absent value.
                if *found.unwrap_or(&Node::Null) == expected {
                    Ok(())
                } else {
                    Err(format!("the value at {path:?} differs"))
                }
            }
            "copy" => {
                // A missing key (or a null) copies as a null, adding nothing to the count.
                let (parent, key) = parent_of(doc, self.from()?)?;
                let copy = parent.get(&key)?.map(Node::copied);
                let (parent, key) = parent_of(doc, self.path()?)?;
                *copied += copy.as_ref().map_or(0, Node::encoded_len);
                if *copied > MAX_COPY_BYTES {
                    return Err(format!(
                        "copies would add {copied} bytes, more than {MAX_COPY_BYTES}"
                    ));
                }
                parent.add(&key, copy.unwrap_or(Node::Null))
            }
            _ => Err("no such operation".into()),
        }
    }
}

/// The container a path's last segment is in, and that segment decoded: the path split at
/// `/`, its first segment skipped, the ones between followed through objects and arrays. An
/// error when the path has no `/` or a segment leads nowhere (missing, out of range, or a
/// null, string, number or boolean on the way).
fn parent_of<'a>(doc: &'a mut Node, path: &str) -> Result<(&'a mut Node, String), String> {
    let missing = || format!("the document has no {path:?}");
    let segments: Vec<&str> = path.split('/').collect();
    let (last, between) = segments.split_last().ok_or_else(missing)?;
    let between = between.get(1..).ok_or_else(missing)?;
    let mut node = doc;
    for segment in between {
        let key = unescape(segment);
        node = match node {
            Node::Object(map) => map.get_mut(&key),
            Node::Array(items) => match index(&key, items.len(), 0) {
                Ok(at) => items.get_mut(at),
                Err(_) => None,
            },
            _ => None,
        }
        .filter(|n| matches!(n, Node::Object(_) | Node::Array(_)))
        .ok_or_else(missing)?;
    }
    Ok((node, unescape(last)))
}

/// A reference token decoded (RFC 6901): `~1` is `/`, `~0` is `~`, in one pass from the left,
/// so `~01` is `~1`.
fn unescape(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    let mut chars = segment.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('~', Some('1')) => {
                out.push('/');
                chars.next();
            }
            ('~', Some('0')) => {
                out.push('~');
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// An array index as the library reads one (Go's `strconv.Atoi`: a sign, decimal digits,
/// leading zeros allowed), in an array of `len` elements: a negative index counts from the
/// end, and an index may be `slack` past the last element (1 for an insertion).
fn index(key: &str, len: usize, slack: usize) -> Result<usize, String> {
    let digits = key.strip_prefix(['+', '-']).unwrap_or(key);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{key:?} is not an index"));
    }
    let at: i64 = key
        .parse()
        .map_err(|_| format!("{key:?} is out of an integer's range"))?;
    let bound = i64::try_from(len + slack).unwrap_or(i64::MAX);
    let invalid = || format!("index {at} is out of the array's range");
    if at >= bound || at < -bound {
        return Err(invalid());
    }
    usize::try_from(if at < 0 { at + bound } else { at }).map_err(|_| invalid())
}

/// A JSON value as the library sees it: containers, and scalars kept as their JSON text,
/// which is what a `test` compares. Equality is the library's: objects by their keys and
/// values whatever the order, arrays element by element, scalars by their text.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Null,
    Scalar(String),
    Array(Vec<Node>),
    Object(BTreeMap<String, Node>),
}

impl Node {
    /// A stored object, its scalars as kube-apiserver's encoder writes them.
    fn stored(value: &Value) -> Node {
        match value {
            Value::Null => Node::Null,
            Value::Array(items) => Node::Array(items.iter().map(Node::stored).collect()),
            Value::Object(map) => Node::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), Node::stored(v)))
                    .collect(),
            ),
            scalar => Node::Scalar(go_format::json(scalar)),
        }
    }

    /// A value of the patch, its scalars as they were sent.
    fn sent(raw: &RawValue) -> Result<Node, serde_json::Error> {
        let text = raw.get().trim_matches([' ', '\t', '\n', '\r']);
        Ok(match text.as_bytes().first() {
            Some(b'{') => {
                let map: BTreeMap<String, Option<Box<RawValue>>> = serde_json::from_str(text)?;
                Node::Object(
                    map.into_iter()
                        .map(|(k, v)| Ok((k, Node::sent_or_null(v.as_deref())?)))
                        .collect::<Result<_, serde_json::Error>>()?,
                )
            }
            Some(b'[') => {
                let items: Vec<Option<Box<RawValue>>> = serde_json::from_str(text)?;
                Node::Array(
                    items
                        .iter()
                        .map(|v| Node::sent_or_null(v.as_deref()))
                        .collect::<Result<_, _>>()?,
                )
            }
            Some(b'n') => Node::Null,
            _ => Node::Scalar(text.to_owned()),
        })
    }

    fn sent_or_null(raw: Option<&RawValue>) -> Result<Node, serde_json::Error> {
        raw.map_or(Ok(Node::Null), Node::sent)
    }

    /// What `copy` inserts: the value encoded again, as the library's deep copy does, which
    /// escapes `<`, `>` and `&` in the patch's strings as the stored ones are.
    fn copied(&self) -> Node {
        match self {
            Node::Null => Node::Null,
            Node::Scalar(text) => Node::Scalar(escape_html(text)),
            Node::Array(items) => Node::Array(items.iter().map(Node::copied).collect()),
            Node::Object(map) => {
                Node::Object(map.iter().map(|(k, v)| (k.clone(), v.copied())).collect())
            }
        }
    }

    /// The length of the value's JSON encoding (what a copy adds to the document).
    fn encoded_len(&self) -> usize {
        match self {
            Node::Null => 4,
            Node::Scalar(text) => text.len(),
            Node::Array(items) => {
                1 + items
                    .iter()
                    .map(|v| v.encoded_len() + 1)
                    .sum::<usize>()
                    .max(1)
            }
            Node::Object(map) => {
                1 + map
                    .iter()
                    .map(|(k, v)| {
                        go_format::json(&Value::String(k.clone())).len() + 1 + v.encoded_len() + 1
                    })
                    .sum::<usize>()
                    .max(1)
            }
        }
    }

    fn into_value(self) -> Result<Value, String> {
        Ok(match self {
            Node::Null => Value::Null,
            Node::Scalar(text) => serde_json::from_str(&text).map_err(|e| e.to_string())?,
            Node::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(Node::into_value)
                    .collect::<Result<_, _>>()?,
            ),
            Node::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| Ok((k, v.into_value()?)))
                    .collect::<Result<_, String>>()?,
            ),
        })
    }

    /// The value at `key` of this container: `None` for a missing key of an object (the
    /// library does not tell it from a null); an error for a bad index of an array.
    fn get(&self, key: &str) -> Result<Option<&Node>, String> {
        match self {
            Node::Object(map) => Ok(map.get(key)),
            Node::Array(items) => Ok(Some(&items[index(key, items.len(), 0)?])),
            _ => Err("not a container".into()),
        }
    }

    /// Inserts `value` at `key`: an object's key is set, whether it was there or not; in an
    /// array, `-` appends and an index up to the length inserts.
    fn add(&mut self, key: &str, value: Node) -> Result<(), String> {
        match self {
            Node::Object(map) => {
                map.insert(key.to_owned(), value);
                Ok(())
            }
            Node::Array(items) if key == "-" => {
                items.push(value);
                Ok(())
            }
            Node::Array(items) => {
                let at = index(key, items.len(), 1)?;
                items.insert(at, value);
                Ok(())
            }
            _ => Err("not a container".into()),
        }
    }

    /// Replaces the value at `key` (which [`get`](Self::get) found).
    fn set(&mut self, key: &str, value: Node) -> Result<(), String> {
        match self {
            Node::Object(_) => self.add(key, value),
            Node::Array(items) => {
                let at = index(key, items.len(), 0)?;
                items[at] = value;
                Ok(())
            }
            _ => Err("not a container".into()),
        }
    }

    /// Removes and returns the value at `key`; a missing key of an object is an error.
    fn remove(&mut self, key: &str) -> Result<Node, String> {
        match self {
            Node::Object(map) => map
                .remove(key)
                .ok_or_else(|| format!("Unable to remove nonexistent key: {key}: missing value")),
            Node::Array(items) => {
                let at = index(key, items.len(), 0)?;
                Ok(items.remove(at))
            }
            _ => Err("not a container".into()),
        }
    }
}

/// A JSON text with `<`, `>`, `&`, U+2028 and U+2029 escaped, as Go's encoder writes a raw
/// value again.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn patch(doc: &Value, ops: &str) -> Result<Value, ApiError> {
        apply(doc, ops.as_bytes(), &WriteOptions::default())
    }

    fn refused(doc: &Value, ops: &str) -> bool {
        patch(doc, ops).is_err_and(|e| e.code() == 422)
    }

    #[test]
    fn a_test_of_null_passes_on_a_missing_or_null_key_and_only_there() {
        // kube-runtime's finalizer(), adding the first finalizer.
        let doc = json!({"metadata": {"name": "a"}});
        let out = patch(
            &doc,
            r#"[{"op":"test","path":"/metadata/finalizers","value":null},
                {"op":"add","path":"/metadata/finalizers","value":["x/y"]}]"#,
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["x/y"]));
        // No value at all is a null.
        assert!(patch(&doc, r#"[{"op":"test","path":"/metadata/labels"}]"#).is_ok());
        let with_null = json!({"a": null, "b": 1});
        assert!(patch(&with_null, r#"[{"op":"test","path":"/a","value":null}]"#).is_ok());
        assert!(refused(
            &with_null,
            r#"[{"op":"test","path":"/b","value":null}]"#
        ));
        assert!(refused(&with_null, r#"[{"op":"test","path":"/b"}]"#));
        assert!(refused(
            &with_null,
            r#"[{"op":"test","path":"/a","value":1}]"#
        ));
        // The parent must be there.
        assert!(refused(
            &doc,
            r#"[{"op":"test","path":"/spec/x","value":null}]"#
        ));
    }

    #[test]
    fn a_test_compares_the_json_text_as_kube_apiserver_encodes_and_the_patch_sends_it() {
        let doc = json!({"s": "a<b", "n": 1, "o": {"x": "1", "y": [true, null]}});
        assert!(refused(
            &doc,
            r#"[{"op":"test","path":"/s","value":"a<b"}]"#
        ));
        assert!(patch(&doc, r#"[{"op":"test","path":"/s","value":"a\u003cb"}]"#).is_ok());
        assert!(refused(&doc, r#"[{"op":"test","path":"/n","value":1.0}]"#));
        assert!(refused(&doc, r#"[{"op":"test","path":"/n","value":"1"}]"#));
        assert!(patch(&doc, r#"[{"op":"test","path":"/n","value":1}]"#).is_ok());
        assert!(patch(
            &doc,
            r#"[{"op":"test","path":"/o","value":{ "y" : [ true, null ], "x" : "1" }}]"#
        )
        .is_ok());
        assert!(refused(
            &doc,
            r#"[{"op":"test","path":"/o","value":{"x":"1"}}]"#
        ));
        // A value the patch added keeps its text; a copy of it is encoded again.
        assert!(patch(
            &doc,
            r#"[{"op":"add","path":"/t","value":"<"},{"op":"test","path":"/t","value":"<"}]"#
        )
        .is_ok());
        assert!(refused(
            &doc,
            r#"[{"op":"add","path":"/t","value":"<"},{"op":"copy","from":"/t","path":"/u"},
                {"op":"test","path":"/u","value":"<"}]"#
        ));
        // The whole document at the empty path.
        let small = json!({"a": "1"});
        assert!(patch(&small, r#"[{"op":"test","path":"","value":{"a":"1"}}]"#).is_ok());
    }

    #[test]
    fn add_replaces_replace_adds_and_remove_needs_the_key() {
        let doc = json!({"data": {"a": "1"}});
        let out = patch(&doc, r#"[{"op":"add","path":"/data/a","value":"2"}]"#).unwrap();
        assert_eq!(out["data"], json!({"a": "2"}));
        let out = patch(&doc, r#"[{"op":"replace","path":"/data/b","value":"3"}]"#).unwrap();
        assert_eq!(out["data"], json!({"a": "1", "b": "3"}));
        assert!(refused(&doc, r#"[{"op":"remove","path":"/data/b"}]"#));
        assert!(refused(
            &doc,
            r#"[{"op":"add","path":"/spec/x","value":1}]"#
        ));
        let out = patch(&doc, r#"[{"op":"add","path":"/data/n"}]"#).unwrap();
        assert_eq!(out["data"], json!({"a": "1", "n": null}));
    }

    #[test]
    fn array_indices_are_go_integers() {
        let doc = json!({"l": ["a", "b"]});
        let at = |ops: &str| patch(&doc, ops).map(|v| v["l"].clone());
        assert_eq!(
            at(r#"[{"op":"add","path":"/l/-","value":"c"}]"#).unwrap(),
            json!(["a", "b", "c"])
        );
        assert_eq!(
            at(r#"[{"op":"add","path":"/l/2","value":"c"}]"#).unwrap(),
            json!(["a", "b", "c"])
        );
        assert_eq!(
            at(r#"[{"op":"add","path":"/l/0","value":"c"}]"#).unwrap(),
            json!(["c", "a", "b"])
        );
        // -1 of an insertion is the end (an array one longer); of the rest, the last element.
        assert_eq!(
            at(r#"[{"op":"add","path":"/l/-1","value":"c"}]"#).unwrap(),
            json!(["a", "b", "c"])
        );
        assert_eq!(
            at(r#"[{"op":"remove","path":"/l/-1"}]"#).unwrap(),
            json!(["a"])
        );
        assert_eq!(
            at(r#"[{"op":"replace","path":"/l/-2","value":"z"}]"#).unwrap(),
            json!(["z", "b"])
        );
        assert_eq!(
            at(r#"[{"op":"remove","path":"/l/01"}]"#).unwrap(),
            json!(["a"])
        );
        assert_eq!(
            at(r#"[{"op":"remove","path":"/l/+0"}]"#).unwrap(),
            json!(["b"])
        );
        for refused_op in [
            r#"[{"op":"add","path":"/l/3","value":"c"}]"#,
            r#"[{"op":"add","path":"/l/-4","value":"c"}]"#,
            r#"[{"op":"remove","path":"/l/-"}]"#,
            r#"[{"op":"remove","path":"/l/2"}]"#,
            r#"[{"op":"remove","path":"/l/-3"}]"#,
            r#"[{"op":"remove","path":"/l/99999999999999999999"}]"#,
            r#"[{"op":"remove","path":"/l/x"}]"#,
            r#"[{"op":"remove","path":"/l/"}]"#,
            r#"[{"op":"test","path":"/l/-","value":"b"}]"#,
            r#"[{"op":"replace","path":"/l/2","value":"c"}]"#,
            r#"[{"op":"add","path":"/l/5/x","value":"c"}]"#,
        ] {
            assert!(refused(&doc, refused_op), "{refused_op} applied");
        }
        // Through an array to an object inside it.
        let nested = json!({"l": [{"a": 1}]});
        let out = patch(&nested, r#"[{"op":"add","path":"/l/-1/b","value":2}]"#).unwrap();
        assert_eq!(out, json!({"l": [{"a": 1, "b": 2}]}));
    }

    #[test]
    fn escapes_are_decoded_once_from_the_left_and_the_first_segment_is_skipped() {
        assert_eq!(unescape("a~1b"), "a/b");
        assert_eq!(unescape("a~0b"), "a~b");
        assert_eq!(unescape("~01"), "~1");
        assert_eq!(unescape("~2~"), "~2~");
        let doc = json!({"m": {"a/b": 1, "~1": 2}});
        assert!(patch(&doc, r#"[{"op":"test","path":"/m/a~1b","value":1}]"#).is_ok());
        assert!(patch(&doc, r#"[{"op":"test","path":"/m/~01","value":2}]"#).is_ok());
        let out = patch(&doc, r#"[{"op":"add","path":"anything/m/c","value":3}]"#).unwrap();
        assert_eq!(out["m"]["c"], 3);
        assert!(refused(&doc, r#"[{"op":"add","path":"","value":{}}]"#));
        assert!(refused(&doc, r#"[{"op":"add","path":"m","value":1}]"#));
        let out = patch(&doc, r#"[{"op":"replace","path":"","value":{"z":1}}]"#).unwrap();
        assert_eq!(out, json!({"z": 1}));
    }

    #[test]
    fn move_and_copy() {
        let doc = json!({"a": {"b": "1"}, "l": ["x", "y"], "n": null});
        assert!(refused(
            &doc,
            r#"[{"op":"move","from":"/a","path":"/a/c"}]"#
        ));
        assert!(refused(
            &doc,
            r#"[{"op":"move","from":"/nope","path":"/c"}]"#
        ));
        let out = patch(&doc, r#"[{"op":"move","from":"/l/0","path":"/l/-"}]"#).unwrap();
        assert_eq!(out["l"], json!(["y", "x"]));
        let out = patch(&doc, r#"[{"op":"move","from":"/n","path":"/m"}]"#).unwrap();
        assert_eq!(out.get("n"), None);
        assert_eq!(out["m"], Value::Null);
        // A copy into a child of itself copies what was there.
        let out = patch(&doc, r#"[{"op":"copy","from":"/a","path":"/a/c"}]"#).unwrap();
        assert_eq!(out["a"], json!({"b": "1", "c": {"b": "1"}}));
        // From a missing key: a null.
        let out = patch(&doc, r#"[{"op":"copy","from":"/nope","path":"/c"}]"#).unwrap();
        assert_eq!(out["c"], Value::Null);
        assert!(refused(
            &doc,
            r#"[{"op":"copy","from":"/x/y","path":"/c"}]"#
        ));
        assert!(refused(
            &doc,
            r#"[{"op":"copy","from":"/l/5","path":"/c"}]"#
        ));
        assert!(refused(&doc, r#"[{"op":"copy","path":"/c"}]"#));
    }

    #[test]
    fn nothing_is_reached_through_a_null_or_a_scalar() {
        let doc = json!({"n": null, "s": "x", "i": 1});
        for op in [
            r#"[{"op":"add","path":"/n/x","value":1}]"#,
            r#"[{"op":"add","path":"/s/x","value":1}]"#,
            r#"[{"op":"test","path":"/i/0","value":null}]"#,
        ] {
            assert!(refused(&doc, op), "{op} applied");
        }
    }

    #[test]
    fn copies_add_at_most_three_mebibytes() {
        let big = "x".repeat(MAX_COPY_BYTES / 2);
        let doc = json!({ "big": big });
        assert!(patch(&doc, r#"[{"op":"copy","from":"/big","path":"/c1"}]"#).is_ok());
        assert!(refused(
            &doc,
            r#"[{"op":"copy","from":"/big","path":"/c1"},{"op":"copy","from":"/big","path":"/c2"}]"#
        ));
    }

    #[test]
    fn decoding_is_kube_apiserver_s() {
        let doc = json!({"a": "1"});
        let message = |ops: &str| patch(&doc, ops).unwrap_err().message().to_string();
        assert_eq!(
            message(r#"{"op":"add"}"#),
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
        );
        assert_eq!(
            message(r#"["add"]"#),
            "error decoding patch: json: cannot unmarshal string into Go value of type handlers.jsonPatchOp"
        );
        assert_eq!(
            message(r#"[{"op":"add","path":1}]"#),
            "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.path of type string"
        );
        for unknown in [
            r#"[{"op":"frobnicate","path":"/a"}]"#,
            r#"[{"path":"/a"}]"#,
            r#"[{"op":"add","value":"1"}]"#,
            r#"[null]"#,
            r#"[{"op":null,"path":"/a"}]"#,
        ] {
            assert!(refused(&doc, unknown), "{unknown} applied");
        }
        assert_eq!(patch(&doc, "null").unwrap(), doc);
        assert_eq!(patch(&doc, "[]").unwrap(), doc);
        // With fieldValidation=Ignore, the library's own decoding.
        let ignore = WriteOptions {
            field_validation: FieldValidation::Ignore,
            ..WriteOptions::default()
        };
        let err = apply(&doc, br#"{"op":"add"}"#, &ignore).unwrap_err();
        assert_eq!(
            err.message(),
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        );
        let err = apply(&doc, br#"[{"op":1,"path":"/a"}]"#, &ignore).unwrap_err();
        assert_eq!(err.code(), 422);
    }

    #[test]
    fn unknown_and_repeated_fields_warn_or_refuse() {
        let doc = json!({"a": "1"});
        let body = br#"[{"op":"add","path":"/b","value":"1","extra":true,"op":"add","extra":1}]"#;
        let opts = WriteOptions::default();
        let out = apply(&doc, body, &opts).unwrap();
        assert_eq!(out["b"], "1");
        assert_eq!(
            opts.warnings.take(),
            [
                r#"json patch unknown field "[0].extra""#,
                r#"json patch duplicate field "[0].op""#
            ]
        );
        let strict = WriteOptions {
            field_validation: FieldValidation::Strict,
            ..WriteOptions::default()
        };
        let err = apply(&doc, body, &strict).unwrap_err();
        assert_eq!(err.code(), 422);
        assert!(
            err.message().ends_with(
                r#"strict decoding error: json patch unknown field "[0].extra", json patch duplicate field "[0].op""#
            ),
            "{}",
            err.message()
        );
    }

    #[test]
    fn a_failure_says_only_what_kube_apiserver_says() {
        let err = patch(&json!({}), r#"[{"op":"remove","path":"/x"}]"#).unwrap_err();
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.message(),
            "the server rejected our request due to an error in our request"
        );
        assert_eq!(err.details(), Some(&StatusDetails::default()));
    }

    #[test]
    fn too_many_operations_is_a_413() {
        let ops = vec![json!({"op": "test", "path": "/a", "value": null}); MAX_OPERATIONS + 1];
        let body = serde_json::to_vec(&ops).unwrap();
        let err = apply(&json!({}), &body, &WriteOptions::default()).unwrap_err();
        assert_eq!(err.code(), 413);
    }
}
