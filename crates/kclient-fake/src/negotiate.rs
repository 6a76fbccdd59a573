//! Content negotiation on the resource endpoints: what a request's `Accept` header asks the
//! object or list to be turned into, decided as kube-apiserver 1.37 decides it, and the
//! `meta.k8s.io` `PartialObjectMetadata` / `PartialObjectMetadataList` conversions; and
//! the negotiated answers every handler gives: an error ([`error_negotiated`]) and a
//! write's answer ([`answer_write`]).
//!
//! Three checks, in kube-apiserver's order:
//!
//! 1. **The route** (built-in resources only; go-restful's): some entry of the header, its
//!    parameters cut off, must be `*/*` or one of the route's media types exactly
//!    (`application/json`, `application/yaml`, `application/vnd.kubernetes.protobuf`, and on
//!    a collection the two `;stream=watch` ones); otherwise `406` "406: Not Acceptable …
//!    Available representations: …" with empty details. Custom resources are served outside
//!    go-restful and skip this.
//! 2. **The media type and conversion** (apiserver's `NegotiateMediaTypeOptions`): the
//!    clauses, sorted as goautoneg sorts them (by `q`, then concrete types before wildcards,
//!    keeping the header's order otherwise), are tried against JSON, YAML and protobuf in
//!    that order; the first clause whose parameters the endpoint allows wins. `as`/`g`/`v`
//!    name a conversion, allowed only into `meta.k8s.io` `v1` or `v1beta1` `Table` (JSON or
//!    YAML), `PartialObjectMetadata` or `PartialObjectMetadataList`; `stream` must be `watch`
//!    on JSON or protobuf; `sv` must be `v1`. A custom resource is served unconverted as JSON
//!    or YAML only. No clause: `406` "only the following media types are accepted: …".
//! 3. **The conversion itself**, once the object or list is at hand (after a write, so a
//!    refused conversion of a write's answer comes after the write): `PartialObjectMetadata`
//!    of a list and `PartialObjectMetadataList` of one object are `406`, naming the server's
//!    Go type (`*core.ConfigMapList`); a custom resource is an `unstructured.Unstructured`,
//!    which passes for a list, so asking its object for a list is a `500` "content is not a
//!    list". A watch converts each event's object; a watch asking for
//!    `PartialObjectMetadataList` ends at its first object, sending nothing (the server fails
//!    to encode it).
//!
//! The winner's media type decides the answer's [`Wire`]: protobuf (kube-apiserver's bytes,
//! [`crate::protobuf`]) for a built-in kind kclient-protobuf has a codec of and for the
//! `PartialObjectMetadata(List)` conversions of any resource; JSON otherwise — JSON itself,
//! YAML (the fake writes no YAML: a YAML winner gets JSON, as before), a Table, and the rare
//! built-in kind without a codec. `Table` requests are recognised as they always were, by
//! [`crate::table::wants_table`] (the first entry asks for a `meta.k8s.io` Table): a Table
//! winning only further down the header is served as the plain object.
//!
//! Errors are written in their own negotiation ([`errors_in_protobuf`], apiserver's
//! `ErrorNegotiated`): the same clauses with no conversion allowed, so a protobuf-first
//! `Accept` gets its `Status` in protobuf while the metadata client's (`as=…` on its
//! protobuf clause, plain JSON last) gets JSON; a header no clause of which passes gets JSON.

use http::{header, HeaderMap, Response};
use kclient_core::{ApiError, Status, StatusDetails, StatusReason};
use kclient_protobuf::registry::Entry;
use serde_json::Value;

use crate::catalogue::ResourceInfo;
use crate::registry::WriteOptions;
use crate::request::{header_str, ApiRequest};
use crate::response::{self, Body};
pub use crate::response::{MetaVersion, ObjectForm};

/// The media types resources are served in, in kube-apiserver's order of preference.
const MEDIA_TYPES: [(&str, &str); 3] = [
    ("application", "json"),
    ("application", "yaml"),
    ("application", "vnd.kubernetes.protobuf"),
];

/// `MEDIA_TYPES` as the 406 messages list them.
const MEDIA_LIST: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// The media types of watch streams, as a watch's 406 lists them.
const STREAM_MEDIA_LIST: &str =
    "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch";

/// What a response carries instead of the object or list itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    /// The object or list itself.
    None,
    /// `PartialObjectMetadata`.
    Metadata(MetaVersion),
    /// `PartialObjectMetadataList`.
    MetadataList(MetaVersion),
    /// A `Table` ([`crate::table`]).
    Table,
}

/// Which route a request takes, for the route check (go-restful's `Produces`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// A collection: list, watch, create, delete-collection.
    Collection,
    /// The `GET` of a collection (lists and watches), which also produces watch streams.
    ListOrWatch,
    /// One object.
    Object,
}

/// What an answer is written in.
#[derive(Clone, Copy)]
pub enum Wire {
    /// JSON.
    Json,
    /// Kubernetes protobuf, with the codec of the kind served (`None` only under a
    /// `PartialObjectMetadata(List)` conversion, which needs none).
    Protobuf(Option<&'static dyn Entry>),
}

impl std::fmt::Debug for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Json => f.write_str("Json"),
            Self::Protobuf(codec) => f
                .debug_tuple("Protobuf")
                .field(&codec.map(|c| (c.api_version(), c.kind())))
                .finish(),
        }
    }
}

/// The outcome of negotiation for one request.
#[derive(Debug, Clone, Copy)]
pub struct Negotiated {
    /// The conversion asked for.
    pub conversion: Conversion,
    /// What the answer is written in.
    pub wire: Wire,
    /// Whether the request's errors are written in protobuf ([`errors_in_protobuf`]).
    pub protobuf_errors: bool,
    /// Whether the winning media type can carry a watch stream (YAML cannot).
    streams: bool,
}

impl Negotiated {
    /// The check a watch adds (apiserver's `NegotiateOutputMediaTypeStream`): the media type
    /// must have a stream framing.
    pub fn check_stream(&self) -> Result<(), ApiError> {
        if self.streams {
            Ok(())
        } else {
            Err(not_acceptable(format!(
                "only the following media types are accepted: {STREAM_MEDIA_LIST}"
            )))
        }
    }
}

/// Negotiates a request on `info`'s main resource (checks 1 and 2 of the module docs).
pub fn negotiate(
    req: &ApiRequest,
    info: &ResourceInfo,
    endpoint: Endpoint,
) -> Result<Negotiated, ApiError> {
    let accept = header_str(&req.headers, header::ACCEPT);
    if !info.custom {
        check_route(accept, endpoint)?;
    }
    let protobuf_errors = errors_in_protobuf(&req.headers);
    if crate::table::wants_table(req) {
        return Ok(Negotiated {
            conversion: Conversion::Table,
            wire: Wire::Json,
            protobuf_errors,
            streams: true,
        });
    }
    if accept.is_empty() {
        return Ok(Negotiated {
            conversion: Conversion::None,
            wire: Wire::Json,
            protobuf_errors,
            streams: true,
        });
    }
    for clause in parse_accept(accept) {
        for index in clause.media_types() {
            let yaml = index == 1;
            let subtype = MEDIA_TYPES[index].1;
            if let Some(conversion) = allowed(&clause.params, yaml, subtype, info) {
                let conversion = match conversion {
                    // Only a first entry asking for it gets a Table (wants_table, above).
                    Conversion::Table => Conversion::None,
                    other => other,
                };
                let wire = match (index, conversion) {
                    (2, Conversion::None) => match crate::protobuf::codec(info) {
                        Some(codec) => Wire::Protobuf(Some(codec)),
                        // A built-in kind without a codec: JSON, as the fake always answered.
                        None => Wire::Json,
                    },
                    (2, Conversion::Metadata(_) | Conversion::MetadataList(_)) => {
                        Wire::Protobuf(None)
                    }
                    _ => Wire::Json,
                };
                return Ok(Negotiated {
                    conversion,
                    wire,
                    protobuf_errors,
                    streams: !yaml,
                });
            }
        }
    }
    Err(not_acceptable(format!(
        "only the following media types are accepted: {MEDIA_LIST}"
    )))
}

/// Whether an error is written in protobuf: apiserver's `ErrorNegotiated`, which negotiates
/// the `Status` with the default endpoint restrictions — the clauses in goautoneg's order
/// against JSON, YAML and protobuf, a clause naming a conversion (`as`, `g`, `v`) or a server
/// version (`sv`) refused, `stream` only `watch` on JSON or protobuf — and, when no clause
/// passes, writes JSON. The served resource does not matter: a custom resource's serializer
/// offers protobuf too, which only its objects are refused.
pub fn errors_in_protobuf(headers: &HeaderMap) -> bool {
    let accept = header_str(headers, header::ACCEPT);
    if accept.is_empty() {
        return false;
    }
    for clause in parse_accept(accept) {
        for index in clause.media_types() {
            let yaml = index == 1;
            let refused = clause.params.iter().any(|(key, value)| match key.as_str() {
                "as" | "g" | "v" => true,
                "stream" => !value.is_empty() && (yaml || value != "watch"),
                "sv" => !value.is_empty(),
                _ => false,
            });
            if !refused {
                return index == 2;
            }
        }
    }
    false
}

/// go-restful's route selection by `Accept`: an empty header, `*/*`, or one of the route's
/// media types exactly (parameters cut off, case-sensitive).
fn check_route(accept: &str, endpoint: Endpoint) -> Result<(), ApiError> {
    if accept.is_empty() {
        return Ok(());
    }
    let produced = |mime: &str| MEDIA_TYPES.iter().any(|(t, s)| mime == format!("{t}/{s}"));
    let ok = accept.split(',').any(|entry| {
        let mime = entry.split(';').next().unwrap_or("").trim_matches(' ');
        mime == "*/*" || produced(mime)
    });
    if ok {
        return Ok(());
    }
    let available = match endpoint {
        Endpoint::ListOrWatch => format!("{MEDIA_LIST}, {STREAM_MEDIA_LIST}"),
        Endpoint::Collection | Endpoint::Object => MEDIA_LIST.to_owned(),
    };
    let mut err = not_acceptable(format!(
        "406: Not Acceptable\n\nAvailable representations: {available}"
    ));
    err.status.details = Some(StatusDetails::default());
    Err(err)
}

/// The conversion a clause asks for, if the endpoint allows the clause on this media type
/// (apiserver's `acceptMediaTypeOptions` with the resource's `AllowsMediaTypeTransform`).
fn allowed(
    params: &[(String, String)],
    yaml: bool,
    subtype: &str,
    info: &ResourceInfo,
) -> Option<Conversion> {
    let (mut kind, mut group, mut version) = (None, None, None);
    for (key, value) in params {
        match key.as_str() {
            "as" => kind = Some(value.as_str()),
            "g" => group = Some(value.as_str()),
            "v" => version = Some(value.as_str()),
            "stream" if !value.is_empty() && (yaml || value != "watch") => return None,
            "sv" if !value.is_empty() && value != "v1" => return None,
            _ => {}
        }
    }
    if kind.is_none() && group.is_none() && version.is_none() {
        // Custom resources are served as JSON or YAML only (their StandardSerializers).
        return (!info.custom || subtype == "json" || subtype == "yaml")
            .then_some(Conversion::None);
    }
    if group != Some("meta.k8s.io") {
        return None;
    }
    let version = MetaVersion::parse(version.unwrap_or(""))?;
    match kind.unwrap_or("") {
        "Table" => (subtype == "json" || subtype == "yaml").then_some(Conversion::Table),
        "PartialObjectMetadata" => Some(Conversion::Metadata(version)),
        "PartialObjectMetadataList" => Some(Conversion::MetadataList(version)),
        _ => None,
    }
}

/// One clause of an `Accept` header, as goautoneg parses it.
#[derive(Debug, Clone, PartialEq)]
struct Clause {
    kind: String,
    subtype: String,
    q: f64,
    /// Parameters other than `q`, a later one replacing an earlier one of the same name.
    params: Vec<(String, String)>,
}

impl Clause {
    /// The indexes in [`MEDIA_TYPES`] of the media types the clause accepts, in our order.
    fn media_types(&self) -> impl Iterator<Item = usize> + '_ {
        let any = self.kind == "*" && self.subtype == "*";
        MEDIA_TYPES
            .iter()
            .enumerate()
            .filter(move |(_, (kind, subtype))| {
                any || (self.kind == *kind && (self.subtype == *subtype || self.subtype == "*"))
            })
            .map(|(index, _)| index)
    }
}

/// goautoneg's `ParseAccept`: clauses split on `,` and `;`, trimmed of spaces, entries
/// without a `/` dropped (except `*`), sorted by its order.
fn parse_accept(header: &str) -> Vec<Clause> {
    let mut clauses = Vec::new();
    for part in header.split(',') {
        let mut pieces = part.trim_matches(' ').split(';');
        let range: Vec<&str> = pieces.next().unwrap_or("").split('/').collect();
        let kind = range[0].trim_matches(' ');
        let subtype = match range.as_slice() {
            [_] if kind == "*" => "*",
            [_, subtype] => subtype.trim_matches(' '),
            _ => continue,
        };
        let mut clause = Clause {
            kind: kind.to_owned(),
            subtype: subtype.to_owned(),
            q: 1.0,
            params: Vec::new(),
        };
        for param in pieces {
            let Some((token, value)) = param.split_once('=') else {
                continue;
            };
            let token = token.trim_matches(' ');
            if token == "q" {
                // Go's ParseFloat of the untrimmed value; anything unparsable is 0.
                clause.q = value.parse::<f32>().map(f64::from).unwrap_or(0.0);
            } else {
                clause.params.retain(|(k, _)| k != token);
                clause
                    .params
                    .push((token.to_owned(), value.trim_matches(' ').to_owned()));
            }
        }
        clauses.push(clause);
    }
    // Go's sort.Sort of a short slice is an insertion sort; with goautoneg's `Less` (not a
    // strict order) only the same algorithm gives the same order.
    for i in 1..clauses.len() {
        let mut j = i;
        while j > 0 && sorts_before(&clauses[j], &clauses[j - 1]) {
            clauses.swap(j, j - 1);
            j -= 1;
        }
    }
    clauses
}

/// goautoneg's `Less`: a higher `q`, else a concrete type before `*`, else a concrete
/// subtype before `*`.
fn sorts_before(a: &Clause, b: &Clause) -> bool {
    a.q > b.q || (a.kind != "*" && b.kind == "*") || (a.subtype != "*" && b.subtype == "*")
}

fn not_acceptable(message: String) -> ApiError {
    Status::failure(StatusReason::NotAcceptable, 406, message).into()
}

/// The Go type the server holds an object (or a list) of `info` as, as its conversion errors
/// name it: `*core.ConfigMap`, `*apps.DeploymentList`, `*unstructured.Unstructured`.
fn go_type(info: &ResourceInfo, list: bool) -> String {
    let suffix = if list { "List" } else { "" };
    if info.custom {
        return format!("*unstructured.Unstructured{suffix}");
    }
    // Built-in types are held as their internal version, named after the group's first
    // label; events.k8s.io's Events are core Events.
    let package = match info.api.group.as_str() {
        "" | "events.k8s.io" => "core",
        group => group.split('.').next().unwrap_or(group),
    };
    format!("*{package}.{}{suffix}", info.kind())
}

/// `obj`'s metadata as a `PartialObjectMetadata` of `version`, encoded: written straight
/// from the stored object (no copy of its metadata), as the server's conversion is cheap.
pub fn partial_object(obj: &Value, version: MetaVersion) -> Vec<u8> {
    let empty = Value::Object(serde_json::Map::new());
    let metadata = obj.get("metadata").unwrap_or(&empty);
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(b"{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"");
    out.extend_from_slice(version.api_version().as_bytes());
    out.extend_from_slice(b"\",\"metadata\":");
    // Writing a `Value` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, metadata);
    out.push(b'}');
    out
}

/// What a single object (not a list) is served as under `conversion`, or the conversion's
/// error.
pub fn object_form(
    info: &ResourceInfo,
    conversion: Conversion,
    obj: &Value,
) -> Result<ObjectForm, ApiError> {
    match conversion {
        Conversion::None | Conversion::Table => Ok(ObjectForm::AsIs),
        _ if obj.get("kind").and_then(Value::as_str) == Some("Status") => Ok(ObjectForm::AsIs),
        Conversion::Metadata(version) => Ok(ObjectForm::Metadata(version)),
        Conversion::MetadataList(_) if info.custom => Err(Status {
            status: Status::FAILURE.into(),
            message: "content is not a list".into(),
            code: 500,
            ..Status::default()
        }
        .into()),
        Conversion::MetadataList(_) => Err(not_acceptable(format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
            go_type(info, false)
        ))),
    }
}

/// The error of asking a list for one `PartialObjectMetadata`.
pub fn list_as_object(info: &ResourceInfo) -> ApiError {
    not_acceptable(format!(
        "you requested PartialObjectMetadata, but the requested object is a list ({})",
        go_type(info, true)
    ))
}

/// A `PartialObjectMetadataList` body: the list's metadata and each item's metadata, `items`
/// `null` when there are none (as the server's Go `nil` slice encodes).
pub fn partial_list<'a>(
    version: MetaVersion,
    metadata: &Value,
    items: impl Iterator<Item = &'a Value>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"");
    out.extend_from_slice(version.api_version().as_bytes());
    out.extend_from_slice(b"\",\"metadata\":");
    let _ = serde_json::to_writer(&mut out, metadata);
    out.extend_from_slice(b",\"items\":");
    let mut none = true;
    for item in items {
        out.push(if none { b'[' } else { b',' });
        none = false;
        out.extend_from_slice(&partial_object(item, version));
    }
    out.extend_from_slice(if none { b"null}" } else { b"]}" });
    out
}

/// The `Status` response for an error of a request with these headers: in protobuf when its
/// `Accept` negotiates protobuf for errors ([`errors_in_protobuf`]), in
/// JSON otherwise.
pub fn error_negotiated(headers: &HeaderMap, err: &ApiError) -> Response<Body> {
    if errors_in_protobuf(headers) {
        response::with_retry_after(crate::protobuf::error(err), err)
    } else {
        response::error(err)
    }
}

/// A write's answer, or its error, with the write's warnings (webhooks' warnings go with
/// their refusals too).
pub(crate) fn answer_write(
    req: &ApiRequest,
    opts: &WriteOptions,
    answer: Result<Response<Body>, ApiError>,
) -> Result<Response<Body>, ApiError> {
    let res = match answer {
        Ok(res) => res,
        Err(e) => error_negotiated(&req.headers, &e),
    };
    Ok(with_warnings(res, opts))
}

/// Adds a write's warnings to its response (`Warning: 299 - "text"`).
pub(crate) fn with_warnings(mut res: Response<Body>, opts: &WriteOptions) -> Response<Body> {
    for text in opts.warnings.take() {
        let value = format!("299 - {}", kclient_core::go_format::quote(&text));
        if let Ok(v) = header::HeaderValue::from_str(&value) {
            res.headers_mut().append(header::WARNING, v);
        }
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use kclient_core::GroupVersionKind;
    use serde_json::json;

    fn kinds(header: &str) -> Vec<String> {
        parse_accept(header)
            .into_iter()
            .map(|c| format!("{}/{}", c.kind, c.subtype))
            .collect()
    }

    #[test]
    fn clauses_sort_as_goautoneg_sorts_them() {
        assert_eq!(
            kinds("text/*;q=0.3, text/html;q=0.7, text/html;level=1, */*;q=0.5"),
            ["text/html", "text/html", "*/*", "text/*"]
        );
        // A concrete type goes before a wildcard even with a lower q (Less is not an order).
        assert_eq!(
            kinds("*/*, application/json;q=0.1"),
            ["application/json", "*/*"]
        );
        assert_eq!(
            kinds("a/b;q=x, c/d"),
            ["c/d", "a/b"],
            "an unparsable q is 0"
        );
        assert_eq!(kinds("nonsense, *, a/b/c, x/y"), ["x/y", "*/*"]);
        let clause = &parse_accept("application/json; as=Table ;g=meta.k8s.io;v=v1;as=X")[0];
        assert_eq!(
            clause.params,
            [
                ("g".to_string(), "meta.k8s.io".to_string()),
                ("v".to_string(), "v1".to_string()),
                ("as".to_string(), "X".to_string())
            ]
        );
    }

    #[test]
    fn go_types_follow_the_internal_packages() {
        let info = |group: &str, kind: &str| {
            ResourceInfo::new(GroupVersionKind::new(group, "v1", kind), "x", true)
        };
        assert_eq!(go_type(&info("", "ConfigMap"), true), "*core.ConfigMapList");
        assert_eq!(
            go_type(&info("events.k8s.io", "Event"), false),
            "*core.Event"
        );
        assert_eq!(
            go_type(&info("rbac.authorization.k8s.io", "Role"), true),
            "*rbac.RoleList"
        );
        assert_eq!(
            go_type(&info("x.example.com", "Widget").custom_resource(), true),
            "*unstructured.UnstructuredList"
        );
    }

    #[test]
    fn metadata_lists_encode_no_items_as_null() {
        let decode = |bytes: Vec<u8>| serde_json::from_slice::<Value>(&bytes).unwrap();
        let empty = decode(partial_list(
            MetaVersion::V1,
            &json!({"resourceVersion": "3"}),
            [].iter(),
        ));
        assert_eq!(empty["items"], Value::Null);
        assert_eq!(empty["metadata"]["resourceVersion"], "3");
        let obj = json!({"kind": "Pod", "metadata": {"name": "a"}, "spec": {}});
        let two = decode(partial_list(
            MetaVersion::V1,
            &json!({}),
            [&obj, &obj].into_iter(),
        ));
        assert_eq!(two["items"].as_array().unwrap().len(), 2);
        let one = decode(partial_list(MetaVersion::V1beta1, &json!({}), [obj].iter()));
        assert_eq!(
            one["items"][0],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1beta1",
                   "metadata": {"name": "a"}})
        );
    }
}
