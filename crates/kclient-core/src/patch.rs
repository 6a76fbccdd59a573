//! Patches: JSON patch, JSON merge patch, strategic merge patch and server-side apply, with the
//! exact content types the API server expects.
//!
//! A [`Patch`] is the body of a `PATCH` request; its [`content_type`](Patch::content_type)
//! tells the server how to read it. JSON patches (RFC 6902) are typed operation lists
//! ([`JsonPatch`], [`PatchOperation`]) whose paths are RFC 6901 JSON pointers, built with
//! [`json_pointer`] so that keys such as `app.kubernetes.io/name` are escaped correctly. The
//! other kinds carry any `Serialize` value: a typed object, an apply configuration or a raw
//! [`serde_json::Value`].
//!
//! ```
//! use kclient_core::patch::{json_pointer, JsonPatch, Patch};
//! use serde_json::json;
//!
//! // JSON patch: test-and-set an annotation whose key contains a slash.
//! let key = json_pointer(["metadata", "annotations", "example.com/owner"]);
//! assert_eq!(key, "/metadata/annotations/example.com~1owner");
//! let patch = Patch::json(JsonPatch::new().test(key.as_str(), "alice").replace(key.as_str(), "bob"));
//! assert_eq!(patch.content_type(), "application/json-patch+json");
//! assert_eq!(
//!     patch.to_body().unwrap(),
//!     br#"[{"op":"test","path":"/metadata/annotations/example.com~1owner","value":"alice"},{"op":"replace","path":"/metadata/annotations/example.com~1owner","value":"bob"}]"#
//! );
//!
//! // Merge patch: null removes a key.
//! let merge = Patch::Merge(json!({ "metadata": { "labels": { "stale": null } } }));
//! assert_eq!(merge.content_type(), "application/merge-patch+json");
//! assert_eq!(merge.to_body().unwrap(), br#"{"metadata":{"labels":{"stale":null}}}"#);
//! ```

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::options::OptionsError;

/// The kind of a patch, named by its content type (client-go's `types.PatchType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchType {
    /// `application/json-patch+json`: an RFC 6902 list of operations.
    Json,
    /// `application/merge-patch+json`: an RFC 7386 JSON merge patch.
    Merge,
    /// `application/strategic-merge-patch+json`: Kubernetes' strategic merge patch (built-in
    /// types only; custom resources answer `415 Unsupported Media Type`).
    StrategicMerge,
    /// `application/apply-patch+yaml`: server-side apply.
    Apply,
}

impl PatchType {
    /// The `Content-Type` header value of this kind of patch.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }

    /// The kind of patch a `Content-Type` header value names, ignoring parameters such as
    /// `; charset=utf-8` and ASCII case; `None` for anything else.
    pub fn from_content_type(content_type: &str) -> Option<PatchType> {
        let media_type = content_type.split(';').next().unwrap_or_default().trim();
        [
            PatchType::Json,
            PatchType::Merge,
            PatchType::StrategicMerge,
            PatchType::Apply,
        ]
        .into_iter()
        .find(|kind| kind.content_type().eq_ignore_ascii_case(media_type))
    }
}

impl fmt::Display for PatchType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.content_type())
    }
}

/// The body of a patch request, in one of the four forms the API server accepts.
///
/// `T` is the patch document of the merge, strategic and apply forms: any `Serialize` value,
/// such as a partial typed object or a [`serde_json::Value`]. An apply document must be a
/// complete apply configuration, with `apiVersion`, `kind` and `metadata.name`. For a JSON
/// patch `T` plays no part; [`Patch::json`] builds one without naming it.
#[derive(Debug, Clone, PartialEq)]
pub enum Patch<T> {
    /// An RFC 6902 JSON patch (`application/json-patch+json`).
    Json(JsonPatch),
    /// An RFC 7386 JSON merge patch (`application/merge-patch+json`): objects merge
    /// recursively, `null` deletes a key, lists are replaced whole.
    Merge(T),
    /// A strategic merge patch (`application/strategic-merge-patch+json`): like a merge patch,
    /// but lists of built-in types merge by their patch merge key (containers by `name`, ...).
    Strategic(T),
    /// A server-side apply configuration (`application/apply-patch+yaml`; sent as JSON, which is
    /// valid YAML). Needs a field manager in [`PatchOptions`](crate::options::PatchOptions).
    Apply(T),
}

impl Patch<Value> {
    /// A JSON patch, without having to name the unused document type.
    pub fn json(patch: JsonPatch) -> Self {
        Patch::Json(patch)
    }
}

impl<T> Patch<T> {
    /// The kind of this patch.
    pub fn patch_type(&self) -> PatchType {
        match self {
            Patch::Json(_) => PatchType::Json,
            Patch::Merge(_) => PatchType::Merge,
            Patch::Strategic(_) => PatchType::StrategicMerge,
            Patch::Apply(_) => PatchType::Apply,
        }
    }

    /// The `Content-Type` of the request: `application/json-patch+json`,
    /// `application/merge-patch+json`, `application/strategic-merge-patch+json` or
    /// `application/apply-patch+yaml`.
    pub fn content_type(&self) -> &'static str {
        self.patch_type().content_type()
    }

    /// Whether this is a server-side apply.
    pub fn is_apply(&self) -> bool {
        matches!(self, Patch::Apply(_))
    }

    /// Checks what can be checked without the target object: every `path` and `from` of a
    /// JSON patch must be an RFC 6901 JSON pointer. Other kinds always pass.
    pub fn validate(&self) -> Result<(), OptionsError> {
        match self {
            Patch::Json(patch) => patch.validate(),
            _ => Ok(()),
        }
    }
}

impl<T: Serialize> Patch<T> {
    /// The request body: the JSON patch's operation array, or the document as JSON.
    pub fn to_body(&self) -> Result<Vec<u8>, serde_json::Error> {
        match self {
            Patch::Json(patch) => serde_json::to_vec(patch),
            Patch::Merge(doc) | Patch::Strategic(doc) | Patch::Apply(doc) => {
                serde_json::to_vec(doc)
            }
        }
    }
}

/// An RFC 6902 JSON patch: a list of operations applied in order, all or nothing.
///
/// Serializes as the bare JSON array. Build one with the chaining methods, or read one from
/// raw JSON with [`JsonPatch::from_value`] (or `serde_json::from_str`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JsonPatch(pub Vec<PatchOperation>);

impl JsonPatch {
    /// An empty patch.
    pub fn new() -> Self {
        JsonPatch::default()
    }

    /// Reads a patch from raw JSON (an array of operation objects).
    pub fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(value)
    }

    /// Appends an operation.
    pub fn push(mut self, operation: PatchOperation) -> Self {
        self.0.push(operation);
        self
    }

    /// Appends an `add` operation.
    pub fn add(self, path: impl Into<String>, value: impl Into<Value>) -> Self {
        self.push(PatchOperation::add(path, value))
    }

    /// Appends a `remove` operation.
    pub fn remove(self, path: impl Into<String>) -> Self {
        self.push(PatchOperation::remove(path))
    }

    /// Appends a `replace` operation.
    pub fn replace(self, path: impl Into<String>, value: impl Into<Value>) -> Self {
        self.push(PatchOperation::replace(path, value))
    }

    /// Appends a `move` operation (from `from` to `path`).
    pub fn move_from(self, from: impl Into<String>, path: impl Into<String>) -> Self {
        self.push(PatchOperation::move_from(from, path))
    }

    /// Appends a `copy` operation (from `from` to `path`).
    pub fn copy_from(self, from: impl Into<String>, path: impl Into<String>) -> Self {
        self.push(PatchOperation::copy_from(from, path))
    }

    /// Appends a `test` operation.
    pub fn test(self, path: impl Into<String>, value: impl Into<Value>) -> Self {
        self.push(PatchOperation::test(path, value))
    }

    /// Checks that every `path` and `from` is an RFC 6901 JSON pointer: empty (the whole
    /// document) or starting with `/`, with `~` only in the escapes `~0` and `~1`.
    pub fn validate(&self) -> Result<(), OptionsError> {
        for (index, operation) in self.0.iter().enumerate() {
            let (path, from) = operation.pointers();
            check_pointer(index, "path", path)?;
            if let Some(from) = from {
                check_pointer(index, "from", from)?;
            }
        }
        Ok(())
    }
}

impl From<Vec<PatchOperation>> for JsonPatch {
    fn from(operations: Vec<PatchOperation>) -> Self {
        JsonPatch(operations)
    }
}

/// One RFC 6902 operation. Paths are RFC 6901 JSON pointers (see [`json_pointer`]).
///
/// Serializes as `{"op":"add","path":...,"value":...}`, `{"op":"move","from":...,"path":...}`
/// and so on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum PatchOperation {
    /// Adds `value` at `path`: sets an object member, or inserts into an array (`-` appends).
    Add {
        /// Where to add.
        path: String,
        /// What to add.
        value: Value,
    },
    /// Removes the value at `path`, which must exist.
    Remove {
        /// What to remove.
        path: String,
    },
    /// Replaces the value at `path`, which must exist.
    Replace {
        /// What to replace.
        path: String,
        /// The new value.
        value: Value,
    },
    /// Removes the value at `from` and adds it at `path`.
    Move {
        /// Where the value is.
        from: String,
        /// Where it goes.
        path: String,
    },
    /// Copies the value at `from` to `path`.
    Copy {
        /// Where the value is.
        from: String,
        /// Where the copy goes.
        path: String,
    },
    /// Fails the whole patch unless the value at `path` equals `value`.
    Test {
        /// What to compare.
        path: String,
        /// The expected value.
        value: Value,
    },
}

impl PatchOperation {
    /// An `add` operation.
    pub fn add(path: impl Into<String>, value: impl Into<Value>) -> Self {
        PatchOperation::Add {
            path: path.into(),
            value: value.into(),
        }
    }

    /// A `remove` operation.
    pub fn remove(path: impl Into<String>) -> Self {
        PatchOperation::Remove { path: path.into() }
    }

    /// A `replace` operation.
    pub fn replace(path: impl Into<String>, value: impl Into<Value>) -> Self {
        PatchOperation::Replace {
            path: path.into(),
            value: value.into(),
        }
    }

    /// A `move` operation (from `from` to `path`).
    pub fn move_from(from: impl Into<String>, path: impl Into<String>) -> Self {
        PatchOperation::Move {
            from: from.into(),
            path: path.into(),
        }
    }

    /// A `copy` operation (from `from` to `path`).
    pub fn copy_from(from: impl Into<String>, path: impl Into<String>) -> Self {
        PatchOperation::Copy {
            from: from.into(),
            path: path.into(),
        }
    }

    /// A `test` operation.
    pub fn test(path: impl Into<String>, value: impl Into<Value>) -> Self {
        PatchOperation::Test {
            path: path.into(),
            value: value.into(),
        }
    }

    /// The operation's name on the wire: `add`, `remove`, `replace`, `move`, `copy`, `test`.
    pub fn op(&self) -> &'static str {
        match self {
            PatchOperation::Add { .. } => "add",
            PatchOperation::Remove { .. } => "remove",
            PatchOperation::Replace { .. } => "replace",
            PatchOperation::Move { .. } => "move",
            PatchOperation::Copy { .. } => "copy",
            PatchOperation::Test { .. } => "test",
        }
    }

    /// The target `path`.
    pub fn path(&self) -> &str {
        self.pointers().0
    }

    fn pointers(&self) -> (&str, Option<&str>) {
        match self {
            PatchOperation::Add { path, .. }
            | PatchOperation::Remove { path }
            | PatchOperation::Replace { path, .. }
            | PatchOperation::Test { path, .. } => (path, None),
            PatchOperation::Move { from, path } | PatchOperation::Copy { from, path } => {
                (path, Some(from))
            }
        }
    }
}

/// Escapes one reference token of an RFC 6901 JSON pointer: `~` becomes `~0` and `/` becomes
/// `~1`. Borrows when there is nothing to escape.
///
/// `escape_pointer_token("app.kubernetes.io/name") == "app.kubernetes.io~1name"`.
pub fn escape_pointer_token(token: &str) -> Cow<'_, str> {
    if token.contains(['~', '/']) {
        Cow::Owned(token.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(token)
    }
}

/// Builds an RFC 6901 JSON pointer from unescaped reference tokens, escaping each:
/// `json_pointer(["metadata", "labels", "app.kubernetes.io/name"])` is
/// `"/metadata/labels/app.kubernetes.io~1name"`. No tokens give `""`, the whole document.
/// Array indices are tokens too (`"0"`, or `"-"` for the end of an array in `add`).
pub fn json_pointer<I>(tokens: I) -> String
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    let mut pointer = String::new();
    for token in tokens {
        pointer.push('/');
        pointer.push_str(&escape_pointer_token(token.as_ref()));
    }
    pointer
}

fn check_pointer(index: usize, field: &'static str, pointer: &str) -> Result<(), OptionsError> {
    let invalid = |reason| OptionsError::InvalidJsonPointer {
        index,
        field,
        pointer: pointer.to_string(),
        reason,
    };
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Err(invalid("it must be empty or start with '/'"));
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(invalid("'~' must be followed by '0' or '1'"));
        }
    }
    Ok(())
}

/// The JSON merge patch (RFC 7386) that turns `before` into `after` (evanphx/json-patch's
/// `CreateMergePatch`, what controller-runtime's `client.MergeFrom` sends): the members that
/// changed, `null` for those removed, objects diffed member by member, anything else (arrays
/// included) replaced whole. An empty object when nothing changed.
///
/// ```
/// use kclient_core::patch::create_merge_patch;
/// use serde_json::json;
///
/// let before = json!({"spec": {"replicas": 1, "paused": true}, "metadata": {"labels": {"a": "1"}}});
/// let after = json!({"spec": {"replicas": 3}, "metadata": {"labels": {"a": "1"}}});
/// assert_eq!(create_merge_patch(&before, &after), json!({"spec": {"replicas": 3, "paused": null}}));
/// ```
pub fn create_merge_patch(before: &Value, after: &Value) -> Value {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let mut patch = serde_json::Map::new();
            for (key, old) in b {
                match a.get(key) {
                    None => {
                        patch.insert(key.clone(), Value::Null);
                    }
                    Some(new) if new == old => {}
                    Some(new @ Value::Object(_)) if old.is_object() => {
                        patch.insert(key.clone(), create_merge_patch(old, new));
                    }
                    Some(new) => {
                        patch.insert(key.clone(), new.clone());
                    }
                }
            }
            for (key, new) in a {
                if !b.contains_key(key) {
                    patch.insert(key.clone(), new.clone());
                }
            }
            Value::Object(patch)
        }
        _ => after.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_tilde_before_slash() {
        assert_eq!(escape_pointer_token("a/b~c"), "a~1b~0c");
        assert_eq!(escape_pointer_token("~1"), "~01");
        assert!(matches!(
            escape_pointer_token("plain"),
            Cow::Borrowed("plain")
        ));
        assert_eq!(json_pointer(Vec::<String>::new()), "");
        assert_eq!(json_pointer([""]), "/");
        assert_eq!(
            json_pointer(["spec", "containers", "0"]),
            "/spec/containers/0"
        );
    }

    #[test]
    fn pointer_checks() {
        assert_eq!(check_pointer(0, "path", ""), Ok(()));
        assert_eq!(check_pointer(0, "path", "/a~0b~1c"), Ok(()));
        assert!(check_pointer(0, "path", "a").is_err());
        assert!(check_pointer(0, "path", "/a~").is_err());
        assert!(check_pointer(0, "path", "/a~2").is_err());
    }

    #[test]
    fn operation_accessors() {
        let op = PatchOperation::move_from("/a", "/b");
        assert_eq!(op.op(), "move");
        assert_eq!(op.path(), "/b");
        assert_eq!(PatchOperation::remove("/x").op(), "remove");
    }

    #[test]
    fn patch_type_round_trips_content_type() {
        for kind in [
            PatchType::Json,
            PatchType::Merge,
            PatchType::StrategicMerge,
            PatchType::Apply,
        ] {
            assert_eq!(
                PatchType::from_content_type(kind.content_type()),
                Some(kind)
            );
            assert_eq!(kind.to_string(), kind.content_type());
        }
        assert_eq!(
            PatchType::from_content_type("Application/Merge-Patch+JSON; charset=utf-8"),
            Some(PatchType::Merge)
        );
        assert_eq!(PatchType::from_content_type("application/json"), None);
        assert_eq!(
            PatchType::from_content_type("application/apply-patch+cbor"),
            None
        );
    }

    #[test]
    fn json_constructor_infers_value() {
        let patch = Patch::json(JsonPatch::new().remove("/a"));
        assert_eq!(patch.patch_type(), PatchType::Json);
        assert_eq!(
            patch.to_body().unwrap(),
            br#"[{"op":"remove","path":"/a"}]"#
        );
        let merge = Patch::Merge(json!({"a": 1}));
        assert!(!merge.is_apply());
    }

    #[test]
    fn create_merge_patch_diffs_objects_and_replaces_the_rest() {
        let same = json!({"a": {"b": [1, 2]}});
        assert_eq!(create_merge_patch(&same, &same), json!({}));
        assert_eq!(
            create_merge_patch(
                &json!({"a": {"b": 1, "c": 2}}),
                &json!({"a": {"b": 1}, "d": [3]})
            ),
            json!({"a": {"c": null}, "d": [3]})
        );
        assert_eq!(
            create_merge_patch(&json!({"a": [1, 2]}), &json!({"a": [2]})),
            json!({"a": [2]})
        );
        assert_eq!(
            create_merge_patch(&json!({"a": 1}), &json!({"a": {"b": 1}})),
            json!({"a": {"b": 1}})
        );
        assert_eq!(create_merge_patch(&json!(1), &json!("x")), json!("x"));
    }
}
