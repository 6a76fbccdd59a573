//! The error returned when request options would be rejected by the API server.

use super::ResourceVersionMatch;

/// Request options that the API server would reject, caught before the request is sent.
///
/// Most variants mirror a rule of the server's own validation
/// (`k8s.io/apimachinery/pkg/apis/meta/internalversion/validation`,
/// `k8s.io/apimachinery/pkg/apis/meta/v1/validation` and the storage layer's list checks); the
/// message names the offending option by its wire name (`resourceVersionMatch`, `fieldManager`,
/// ...). A few variants are client-side checks that are stricter than the server; their
/// documentation says so and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionsError {
    /// `resourceVersionMatch` was set on a list without a `resourceVersion`.
    #[error("resourceVersionMatch is forbidden unless resourceVersion is provided")]
    ResourceVersionMatchWithoutResourceVersion,

    /// `resourceVersionMatch` was combined with a `continue` token.
    #[error("resourceVersionMatch is forbidden when continue is provided")]
    ResourceVersionMatchWithContinue,

    /// `resourceVersionMatch=Exact` was combined with `resourceVersion=0`, which names no
    /// particular version.
    #[error("resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"")]
    ExactResourceVersionZero,

    /// A `continue` token was combined with a `resourceVersion` other than `""` or `"0"`: the
    /// token already pins the version the list continues from.
    #[error(
        "continue cannot be combined with resourceVersion {resource_version:?}: \
         the continue token already carries the resource version"
    )]
    ContinueWithResourceVersion {
        /// The `resourceVersion` that was set.
        resource_version: String,
    },

    /// `sendInitialEvents` was set on a list request; it is a watch-only option.
    #[error("sendInitialEvents is forbidden for list (it only applies to watch)")]
    SendInitialEventsForList,

    /// `sendInitialEvents` was set on a watch without `resourceVersionMatch=NotOlderThan`.
    #[error(
        "sendInitialEvents requires resourceVersionMatch=NotOlderThan, got {}",
        match .resource_version_match { Some(m) => m.as_str(), None => "none" }
    )]
    SendInitialEventsRequiresNotOlderThan {
        /// The `resourceVersionMatch` that was set, if any.
        resource_version_match: Option<ResourceVersionMatch>,
    },

    /// `resourceVersionMatch` was set on a watch that does not set `sendInitialEvents`.
    #[error("resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")]
    ResourceVersionMatchForWatchWithoutSendInitialEvents,

    /// `sendInitialEvents=true` was set on a watch without `allowWatchBookmarks=true`.
    ///
    /// Stricter than the server, which accepts the request but then never sends the bookmark
    /// annotated `k8s.io/initial-events-end`, so the client cannot tell when the initial state
    /// is complete.
    #[error(
        "sendInitialEvents=true requires allowWatchBookmarks=true: \
         without bookmarks the end of the initial events is never signalled"
    )]
    SendInitialEventsWithoutBookmarks,

    /// `limit` was negative.
    ///
    /// Stricter than the server, which treats a negative limit as "no limit".
    #[error("limit must not be negative, got {0}")]
    NegativeLimit(i64),

    /// `timeoutSeconds` was negative.
    ///
    /// Stricter than the server, which would end the call at once.
    #[error("timeoutSeconds must not be negative, got {0}")]
    NegativeTimeoutSeconds(i64),

    /// `gracePeriodSeconds` was negative.
    ///
    /// The API documents the value as a non-negative integer; the server silently turns a
    /// negative value into 1 second.
    #[error("gracePeriodSeconds must not be negative, got {0}")]
    NegativeGracePeriodSeconds(i64),

    /// An apply patch was sent without a `fieldManager`.
    #[error("fieldManager is required for apply patch")]
    FieldManagerRequiredForApply,

    /// `force` was set (to `true` or `false`) on a patch that is not an apply patch.
    #[error("force may not be specified for non-apply patch (content type {content_type})")]
    ForceForNonApplyPatch {
        /// The content type of the patch.
        content_type: &'static str,
    },

    /// `fieldManager` was longer than 128 bytes.
    #[error("fieldManager must be at most 128 bytes long, got {len} bytes")]
    FieldManagerTooLong {
        /// The length of the field manager, in bytes.
        len: usize,
    },

    /// `fieldManager` contained a character that is not printable.
    #[error(
        "fieldManager contains the non-printable character U+{code:04X} at byte position {position}",
        code = u32::from(*.character)
    )]
    FieldManagerNotPrintable {
        /// The offending character.
        character: char,
        /// Its byte offset in the field manager.
        position: usize,
    },

    /// A JSON patch operation has a `path` or `from` that is not an RFC 6901 JSON pointer.
    #[error(
        "JSON patch operation {index}: {field} {pointer:?} is not a valid JSON pointer: {reason}"
    )]
    InvalidJsonPointer {
        /// The index of the operation in the patch.
        index: usize,
        /// `"path"` or `"from"`.
        field: &'static str,
        /// The offending pointer.
        pointer: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// A selector that matches nothing was given where only a string can be sent: its string
    /// form is empty, which the server reads as "everything".
    #[error("{option}: a selector that matches nothing cannot be sent to the server (its string form selects everything)")]
    UnrepresentableSelector {
        /// `"labelSelector"` or `"fieldSelector"`.
        option: &'static str,
    },
}
