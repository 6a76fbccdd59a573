//! [`Status`]: the API server's `metav1.Status`, the body of every failed request and of
//! `ERROR` watch events, with its machine-readable [`StatusReason`].

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The `metav1.Status` object: what the API server says about a failed (or, for deletes,
/// successful) operation.
///
/// Decoding is lenient (every field is optional), because a client must be able to read a
/// `Status` from any server, proxy or webhook that produces one.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// `"Success"` or `"Failure"`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub status: String,
    /// A human-readable description.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub message: String,
    /// Why the operation failed, machine-readable.
    #[serde(default, skip_serializing_if = "StatusReason::is_unknown")]
    pub reason: StatusReason,
    /// Extended data for the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The suggested HTTP status code; 0 when not set, or when the sender's is not an HTTP
    /// code (Go reads any `int32`; the rest of such a `Status` is kept).
    #[serde(
        default,
        deserialize_with = "lenient_code",
        skip_serializing_if = "is_zero"
    )]
    pub code: u16,
}

/// `null` reads as the default, as Go's `encoding/json` leaves a field unset for it.
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Any integer (or `null`) reads: one that is no HTTP status code becomes 0, so that the
/// `Status` around it is not lost.
fn lenient_code<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u16, D::Error> {
    let code = Option::<i64>::deserialize(deserializer)?.unwrap_or(0);
    Ok(u16::try_from(code).ok().filter(|c| *c <= 999).unwrap_or(0))
}

fn is_zero(code: &u16) -> bool {
    *code == 0
}

/// Extended data on a [`Status`]: which object it is about and why, field by field.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// The name of the object the status is about.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    /// Its API group.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub group: String,
    /// Its kind (the API server puts the resource here for most errors).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub kind: String,
    /// Its uid.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub uid: String,
    /// The individual causes, for validation errors.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub causes: Vec<StatusCause>,
    /// How long the client should wait before retrying, in seconds; 0 when not set.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub retry_after_seconds: i32,
}

fn is_zero_i32(v: &i32) -> bool {
    *v == 0
}

/// One cause of a failure, usually a field that failed validation.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusCause {
    /// The kind of cause, such as `FieldValueRequired` or `ResourceVersionTooLarge`.
    #[serde(
        default,
        rename = "reason",
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub cause_type: String,
    /// A human-readable description.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub message: String,
    /// The field path, such as `spec.containers[0].image`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub field: String,
}

impl Status {
    /// A failure with the given reason, code and message.
    pub fn failure(reason: StatusReason, code: u16, message: impl Into<String>) -> Self {
        Self {
            status: Self::FAILURE.to_owned(),
            message: message.into(),
            reason,
            details: None,
            code,
        }
    }

    /// `status` of a failed operation.
    pub const FAILURE: &'static str = "Failure";
    /// `status` of a successful operation.
    pub const SUCCESS: &'static str = "Success";

    /// Decodes an error response body as the API server's failure `Status`: a JSON object
    /// with `kind: Status` (or no kind) and `status: Failure`. Anything else — another kind,
    /// a success status, HTML from a proxy, garbage — gives `None`, so the caller can report
    /// the raw body instead.
    pub fn from_failure_body(body: &[u8]) -> Option<Self> {
        #[derive(Deserialize)]
        struct Kind {
            #[serde(default)]
            kind: Option<String>,
        }
        let kind: Kind = serde_json::from_slice(body).ok()?;
        let status: Self = serde_json::from_slice(body).ok()?;
        let is_status = matches!(kind.kind.as_deref(), None | Some("" | "Status"));
        (is_status && status.status == Self::FAILURE).then_some(status)
    }

    /// Whether `status` says `Success`.
    pub fn is_success(&self) -> bool {
        self.status == Self::SUCCESS
    }

    /// The same status with `details` set.
    pub fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(details);
        self
    }

    /// Whether this status has `reason`, or — when its reason is not one the API defines —
    /// has `code`. This is how apimachinery's `IsNotFound` and friends decide.
    pub fn has_reason_or_code(&self, reason: &StatusReason, code: u16) -> bool {
        &self.reason == reason || (!self.reason.is_known() && self.code == code)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = if self.message.is_empty() {
            "(no message)"
        } else {
            &self.message
        };
        write!(f, "{message}")?;
        match (&self.reason, self.code) {
            (StatusReason::Unknown, 0) => Ok(()),
            (StatusReason::Unknown, code) => write!(f, " (code {code})"),
            (reason, 0) => write!(f, " (reason {reason})"),
            (reason, code) => write!(f, " (reason {reason}, code {code})"),
        }
    }
}

impl From<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status> for Status {
    fn from(s: k8s_openapi::apimachinery::pkg::apis::meta::v1::Status) -> Self {
        Self {
            status: s.status.unwrap_or_default(),
            message: s.message.unwrap_or_default(),
            reason: StatusReason::from(s.reason.unwrap_or_default().as_str()),
            details: s.details.map(|d| StatusDetails {
                name: d.name.unwrap_or_default(),
                group: d.group.unwrap_or_default(),
                kind: d.kind.unwrap_or_default(),
                uid: d.uid.unwrap_or_default(),
                causes: d
                    .causes
                    .unwrap_or_default()
                    .into_iter()
                    .map(|c| StatusCause {
                        cause_type: c.reason.unwrap_or_default(),
                        message: c.message.unwrap_or_default(),
                        field: c.field.unwrap_or_default(),
                    })
                    .collect(),
                retry_after_seconds: d.retry_after_seconds.unwrap_or_default(),
            }),
            code: s
                .code
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or_default(),
        }
    }
}

macro_rules! status_reasons {
    ($( $(#[$doc:meta])* $variant:ident = $text:literal => $code:literal, )*) => {
        /// Why an operation failed: `metav1.StatusReason`.
        ///
        /// Reasons the API does not define are kept as [`Other`](Self::Other), so nothing the
        /// server says is lost.
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
        #[non_exhaustive]
        pub enum StatusReason {
            /// No reason was given (`""`).
            #[default]
            Unknown,
            $( $(#[$doc])* $variant, )*
            /// A reason this version of kclient does not know.
            Other(String),
        }

        impl StatusReason {
            /// The reason as the API spells it.
            pub fn as_str(&self) -> &str {
                match self {
                    Self::Unknown => "",
                    $( Self::$variant => $text, )*
                    Self::Other(s) => s,
                }
            }

            /// The HTTP status code the API server pairs with this reason, if it has one.
            pub fn code(&self) -> Option<u16> {
                match self {
                    $( Self::$variant => Some($code), )*
                    Self::Unknown | Self::Other(_) => None,
                }
            }
        }

        impl From<&str> for StatusReason {
            fn from(s: &str) -> Self {
                match s {
                    "" => Self::Unknown,
                    $( $text => Self::$variant, )*
                    other => Self::Other(other.to_owned()),
                }
            }
        }
    };
}

status_reasons! {
    /// The client must authenticate (401).
    Unauthorized = "Unauthorized" => 401,
    /// The client may not perform the operation (403).
    Forbidden = "Forbidden" => 403,
    /// The object does not exist (404).
    NotFound = "NotFound" => 404,
    /// The object already exists (409).
    AlreadyExists = "AlreadyExists" => 409,
    /// The update conflicted with another write, typically a stale resourceVersion (409).
    Conflict = "Conflict" => 409,
    /// The resource is no longer available (410).
    Gone = "Gone" => 410,
    /// The object failed validation (422).
    Invalid = "Invalid" => 422,
    /// The server could not finish in time and the client may retry (500).
    ServerTimeout = "ServerTimeout" => 500,
    /// The server could not read from storage (500); on the wire `StorageReadError`
    /// (apimachinery's `StatusReasonStoreReadError`).
    StoreReadError = "StorageReadError" => 500,
    /// The request did not finish in the time the client gave, or the server's own (504).
    Timeout = "Timeout" => 504,
    /// The client must slow down (429).
    TooManyRequests = "TooManyRequests" => 429,
    /// The request is malformed (400).
    BadRequest = "BadRequest" => 400,
    /// The verb is not supported on the resource (405).
    MethodNotAllowed = "MethodNotAllowed" => 405,
    /// None of the requested media types can be served (406).
    NotAcceptable = "NotAcceptable" => 406,
    /// The request body is too large (413).
    RequestEntityTooLarge = "RequestEntityTooLarge" => 413,
    /// The request's media type is not supported (415).
    UnsupportedMediaType = "UnsupportedMediaType" => 415,
    /// An unexpected server error (500).
    InternalError = "InternalError" => 500,
    /// The requested resourceVersion or continue token has expired (410).
    Expired = "Expired" => 410,
    /// The server is temporarily unavailable (503).
    ServiceUnavailable = "ServiceUnavailable" => 503,
}

impl StatusReason {
    /// Whether the API defines this reason (`Unknown` and `Other` are not defined reasons).
    pub fn is_known(&self) -> bool {
        self.code().is_some()
    }

    /// Whether no reason was given.
    pub fn is_unknown(&self) -> bool {
        matches!(self, Self::Unknown)
    }
}

impl fmt::Display for StatusReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StatusReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StatusReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = Option::<String>::deserialize(deserializer)?;
        Ok(Self::from(s.as_deref().unwrap_or_default()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn decodes_an_api_server_status() {
        let s: Status = serde_json::from_value(json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure",
            "message": "pods \"web\" not found",
            "reason": "NotFound",
            "details": {"name": "web", "kind": "pods"},
            "code": 404
        }))
        .unwrap();
        assert_eq!(s.reason, StatusReason::NotFound);
        assert_eq!(s.code, 404);
        assert_eq!(s.details.as_ref().unwrap().name, "web");
        assert_eq!(
            s.to_string(),
            "pods \"web\" not found (reason NotFound, code 404)"
        );
    }

    #[test]
    fn failure_bodies() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"m","reason":"NotFound","code":404}"#;
        assert_eq!(
            Status::from_failure_body(body).unwrap().reason,
            StatusReason::NotFound
        );
        let no_kind = br#"{"status":"Failure","message":"m"}"#;
        assert_eq!(Status::from_failure_body(no_kind).unwrap().message, "m");
        for not_a_failure in [
            &br#"{"kind":"Status","status":"Success"}"#[..],
            br#"{"kind":"Pod","status":"Failure"}"#,
            br#"{"kind":"Status"}"#,
            b"<html>502 Bad Gateway</html>",
            b"",
            b"[1]",
        ] {
            assert!(Status::from_failure_body(not_a_failure).is_none());
        }
    }

    #[test]
    fn lenient_decoding_keeps_unknown_reasons() {
        let s: Status =
            serde_json::from_value(json!({"reason": "SomethingNew", "code": 499})).unwrap();
        assert_eq!(s.reason, StatusReason::Other("SomethingNew".into()));
        assert!(!s.reason.is_known());
        let s: Status = serde_json::from_value(json!({"reason": null})).unwrap();
        assert_eq!(s.reason, StatusReason::Unknown);
        let s: Status = serde_json::from_value(json!({})).unwrap();
        assert_eq!(s, Status::default());
        assert_eq!(s.to_string(), "(no message)");
    }

    #[test]
    fn reason_strings_round_trip() {
        for text in [
            "NotFound",
            "Expired",
            "TooManyRequests",
            "Timeout",
            "Whatever",
            "",
        ] {
            assert_eq!(StatusReason::from(text).as_str(), text);
        }
        assert_eq!(StatusReason::Gone.code(), Some(410));
        assert_eq!(StatusReason::Invalid.code(), Some(422));
        assert_eq!(StatusReason::Other("x".into()).code(), None);
    }

    #[test]
    fn code_fallback_only_for_unknown_reasons() {
        let unknown_404 = Status {
            code: 404,
            ..Status::default()
        };
        assert!(unknown_404.has_reason_or_code(&StatusReason::NotFound, 404));
        let conflict_404 = Status {
            code: 404,
            reason: StatusReason::Conflict,
            ..Status::default()
        };
        assert!(!conflict_404.has_reason_or_code(&StatusReason::NotFound, 404));
        let other_404 = Status {
            code: 404,
            reason: StatusReason::Other("Custom".into()),
            ..Status::default()
        };
        assert!(other_404.has_reason_or_code(&StatusReason::NotFound, 404));
    }

    #[test]
    fn serialises_only_set_fields() {
        let s = Status::failure(StatusReason::Conflict, 409, "stale");
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            json!({"status": "Failure", "message": "stale", "reason": "Conflict", "code": 409})
        );
    }

    #[test]
    fn converts_from_k8s_openapi() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
        let s: Status = meta::Status {
            code: Some(429),
            reason: Some("TooManyRequests".into()),
            details: Some(meta::StatusDetails {
                retry_after_seconds: Some(3),
                causes: Some(vec![meta::StatusCause {
                    field: Some("f".into()),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
        .into();
        assert_eq!(s.reason, StatusReason::TooManyRequests);
        assert_eq!(s.details.as_ref().unwrap().retry_after_seconds, 3);
        assert_eq!(s.details.unwrap().causes[0].field, "f");
        let bad_code: Status = meta::Status {
            code: Some(-1),
            ..Default::default()
        }
        .into();
        assert_eq!(bad_code.code, 0);
    }
}

#[cfg(test)]
mod leniency_tests {
    use super::*;

    /// Issue 19, item 11: what Go's decoder accepts, this one does too, keeping the error.
    #[test]
    fn nulls_and_odd_codes_keep_the_status() {
        let s: Status = serde_json::from_str(
            r#"{"status":"Failure","message":null,"reason":"Conflict","code":70000,
                "details":{"name":null,"causes":null,"retryAfterSeconds":2}}"#,
        )
        .unwrap();
        assert_eq!(s.reason, StatusReason::Conflict);
        assert_eq!(s.code, 0);
        assert_eq!(s.message, "");
        assert!(s.details.as_ref().unwrap().causes.is_empty());
        assert_eq!(s.details.unwrap().retry_after_seconds, 2);
        let s: Status = serde_json::from_str(r#"{"code":404,"details":{"causes":null}}"#).unwrap();
        assert_eq!(s.code, 404);
        let s: Status = serde_json::from_str(r#"{"code":-1}"#).unwrap();
        assert_eq!(s.code, 0);
    }
}
