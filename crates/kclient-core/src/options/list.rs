//! `ListOptions`: the query options of list, watch and deletecollection calls.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::query::{push_bool, push_opt_bool, push_opt_i64, push_str};
use super::{OptionsError, MAX_GO_DURATION};

/// The largest `timeoutSeconds` sent: [`MAX_GO_DURATION`] in whole seconds (9,223,372,036).
/// The API server turns `timeoutSeconds` into a Go `time.Duration` by multiplying it by a
/// second, which wraps around above this (`i64::MAX` would become -1 s and end a watch at
/// once), so a larger value is sent as this one: as long a watch as the server can hold.
pub const MAX_TIMEOUT_SECONDS: i64 = MAX_GO_DURATION.as_secs() as i64;

/// How `resourceVersion` constrains a list (`resourceVersionMatch`).
///
/// See <https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions>.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ResourceVersionMatch {
    /// `NotOlderThan`: data at least as new as `resourceVersion`. With `resourceVersion` unset on
    /// a watch with `sendInitialEvents`, a consistent read.
    NotOlderThan,
    /// `Exact`: data at exactly `resourceVersion` (lists only; not with `"0"`).
    Exact,
}

impl ResourceVersionMatch {
    /// The value on the wire: `"NotOlderThan"` or `"Exact"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceVersionMatch::NotOlderThan => "NotOlderThan",
            ResourceVersionMatch::Exact => "Exact",
        }
    }
}

impl fmt::Display for ResourceVersionMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Options of a list or watch call (client-go's `metav1.ListOptions`).
///
/// The same struct serves list, watch and the list half of deletecollection, as in client-go:
/// [`query_pairs`](Self::query_pairs) is what a list sends and
/// [`watch_query_pairs`](Self::watch_query_pairs) adds `watch=true`. There is deliberately no
/// `watch` field: whether a call watches is decided by the call, not by its options.
///
/// Strings set to `Some("")` are treated as unset and numbers follow apimachinery's rules
/// (`limit` 0 means no limit), so every value has one meaning on the wire. Selectors are kept as
/// strings in the API server's syntax (`"app=web,tier!=db"`); URL-encoding them is the
/// transport's job.
///
/// Non-exhaustive (the API server gains list options over time): build it from
/// [`Default`] with the setters, or assign the public fields.
///
/// ```
/// use kclient_core::options::{ListOptions, ResourceVersionMatch};
///
/// let opts = ListOptions::default()
///     .labels("app=web")
///     .resource_version("0")
///     .resource_version_match(ResourceVersionMatch::NotOlderThan)
///     .limit(500);
/// opts.validate(false).unwrap();
/// assert_eq!(
///     opts.query_pairs(),
///     [
///         ("labelSelector", "app=web".to_string()),
///         ("resourceVersion", "0".to_string()),
///         ("resourceVersionMatch", "NotOlderThan".to_string()),
///         ("limit", "500".to_string()),
///     ]
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListOptions {
    /// `labelSelector`: restricts the result to objects whose labels match. Unset: everything.
    pub label_selector: Option<String>,
    /// `fieldSelector`: restricts the result to objects whose fields match. Unset: everything.
    pub field_selector: Option<String>,
    /// `resourceVersion`: which versions the call may be served from. Unset: the most recent
    /// (a consistent read from storage); `"0"`: any version (typically the watch cache); a
    /// specific version: see `resource_version_match`. For a watch: the version to start after.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`: how `resource_version` applies. Lists: requires
    /// `resource_version`. Watches: only `NotOlderThan`, and only together with
    /// `send_initial_events`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `limit`: the maximum number of items a list returns; if more exist, the list metadata
    /// carries a continue token. `None` or 0: no limit. Ignored by the server for watches.
    pub limit: Option<i64>,
    /// `continue`: the token from a previous page's list metadata, to fetch the next page.
    /// The other options must be the same as for the first page.
    pub continue_token: Option<String>,
    /// `timeoutSeconds`: ends the call after this many seconds regardless of activity. Sent
    /// whenever it is `Some`, including `Some(0)` (which asks the server to pick its default),
    /// and at most as [`MAX_TIMEOUT_SECONDS`].
    pub timeout_seconds: Option<i64>,
    /// `allowWatchBookmarks`: asks for `BOOKMARK` watch events, sent at the server's discretion.
    /// Ignored for lists.
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents` (watch only, the "watch-list" streaming list): the watch starts
    /// with synthetic `ADDED` events for the current state, then a bookmark annotated
    /// `k8s.io/initial-events-end`. Requires `resource_version_match = NotOlderThan` and, in
    /// this crate, `allow_watch_bookmarks`. Sent whenever it is `Some`, including `Some(false)`.
    pub send_initial_events: Option<bool>,
    /// `shardSelector` (KEP-5866, kube-apiserver 1.36+ with the alpha gate
    /// `ShardedListAndWatch`): only the objects whose hashed uid or namespace falls in the
    /// selector's ranges, for lists and watches alike; see [`sharding`](crate::sharding). A
    /// server without the gate ignores it (a list then has no `metadata.shardInfo`).
    pub shard_selector: Option<String>,
    /// Client-side, never sent: decode the listed or watched objects without
    /// `metadata.managedFields` (left `None`), skipping that part of the response instead of
    /// building it (see [`managed_fields`](crate::managed_fields)). An informer
    /// whose transform strips managedFields (the factory's default) sets it: the same objects
    /// at about half the decoding cost.
    pub omit_managed_fields: bool,
}

impl ListOptions {
    /// Sets `labelSelector` (for example `"app=web,tier in (fe,be)"`).
    pub fn labels(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Sets `fieldSelector` (for example `"metadata.name=web-0"`).
    pub fn fields(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Sets `labelSelector` from a parsed [`labels::Selector`](crate::labels::Selector), in its
    /// canonical form.
    ///
    /// A selector that matches nothing ([`Selector::nothing`](crate::labels::Selector::nothing))
    /// has no string form a server understands (its string is `""`, which selects everything),
    /// so it is refused rather than silently widened.
    pub fn label_selector(
        mut self,
        selector: &crate::labels::Selector,
    ) -> Result<Self, OptionsError> {
        if selector.matches_nothing() {
            return Err(OptionsError::UnrepresentableSelector {
                option: "labelSelector",
            });
        }
        self.label_selector = Some(selector.to_string()).filter(|s| !s.is_empty());
        Ok(self)
    }

    /// Sets `fieldSelector` from a parsed [`fields::Selector`](crate::fields::Selector), in its
    /// canonical form. A selector that matches nothing is refused, as for
    /// [`label_selector`](Self::label_selector).
    pub fn field_selector(
        mut self,
        selector: &crate::fields::Selector,
    ) -> Result<Self, OptionsError> {
        if selector.matches_nothing() {
            return Err(OptionsError::UnrepresentableSelector {
                option: "fieldSelector",
            });
        }
        self.field_selector = Some(selector.to_string()).filter(|s| !s.is_empty());
        Ok(self)
    }

    /// Sets `resourceVersion`.
    pub fn resource_version(mut self, resource_version: impl Into<String>) -> Self {
        self.resource_version = Some(resource_version.into());
        self
    }

    /// Sets `resourceVersionMatch`.
    pub fn resource_version_match(mut self, rv_match: ResourceVersionMatch) -> Self {
        self.resource_version_match = Some(rv_match);
        self
    }

    /// Sets `limit`, the page size of a list.
    pub fn limit(mut self, limit: i64) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Sets `continue`, the token of the next page.
    pub fn continue_token(mut self, token: impl Into<String>) -> Self {
        self.continue_token = Some(token.into());
        self
    }

    /// Sets `timeoutSeconds`.
    pub fn timeout_seconds(mut self, seconds: i64) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// Sets `allowWatchBookmarks`.
    pub fn allow_watch_bookmarks(mut self, allow: bool) -> Self {
        self.allow_watch_bookmarks = allow;
        self
    }

    /// Sets `sendInitialEvents`.
    pub fn send_initial_events(mut self, send: bool) -> Self {
        self.send_initial_events = Some(send);
        self
    }

    /// Sets `shardSelector` from a [`ShardSelector`](crate::sharding::ShardSelector), in its
    /// canonical form.
    pub fn shard_selector(mut self, selector: &crate::sharding::ShardSelector) -> Self {
        self.shard_selector = Some(selector.to_string());
        self
    }

    /// Decodes the objects without `metadata.managedFields` (client-side, never sent): see
    /// [`omit_managed_fields`](Self#structfield.omit_managed_fields).
    pub fn omit_managed_fields(mut self, omit: bool) -> Self {
        self.omit_managed_fields = omit;
        self
    }

    /// Turns these options into a streaming list ("watch-list", client-go's reflector with the
    /// `WatchListClient` feature): `sendInitialEvents=true`, `allowWatchBookmarks=true` and
    /// `resourceVersionMatch=NotOlderThan`, keeping the selectors, `resource_version` and timeout.
    /// With `resource_version` unset the initial state is a consistent read.
    pub fn watch_list(self) -> Self {
        self.send_initial_events(true)
            .allow_watch_bookmarks(true)
            .resource_version_match(ResourceVersionMatch::NotOlderThan)
    }

    /// The query parameters of a list (and of the list half of deletecollection).
    ///
    /// Names and formats are exactly those of apimachinery's query-parameter conversion:
    /// `labelSelector`, `fieldSelector`, `allowWatchBookmarks`, `resourceVersion`,
    /// `resourceVersionMatch`, `timeoutSeconds`, `limit`, `continue`, `sendInitialEvents`,
    /// `shardSelector`, in
    /// the field order of `metav1.ListOptions` (client-go sorts by name when it encodes the URL;
    /// the server does not care). Empty strings, `limit` 0, `allowWatchBookmarks=false` and
    /// `None` are omitted; `timeout_seconds` and `send_initial_events` are sent whenever they
    /// are `Some`, as Go sends non-nil pointers. No validation happens here; see
    /// [`validate`](Self::validate).
    pub fn query_pairs(&self) -> Vec<(&'static str, String)> {
        self.pairs(false)
    }

    /// The query parameters of a watch: [`query_pairs`](Self::query_pairs) plus `watch=true`
    /// (placed where `metav1.ListOptions` declares it, after `fieldSelector`).
    pub fn watch_query_pairs(&self) -> Vec<(&'static str, String)> {
        self.pairs(true)
    }

    fn pairs(&self, watch: bool) -> Vec<(&'static str, String)> {
        let mut pairs = Vec::new();
        push_str(&mut pairs, "labelSelector", self.label_selector.as_deref());
        push_str(&mut pairs, "fieldSelector", self.field_selector.as_deref());
        push_bool(&mut pairs, "watch", watch);
        push_bool(
            &mut pairs,
            "allowWatchBookmarks",
            self.allow_watch_bookmarks,
        );
        push_str(
            &mut pairs,
            "resourceVersion",
            self.resource_version.as_deref(),
        );
        push_str(
            &mut pairs,
            "resourceVersionMatch",
            self.resource_version_match
                .map(ResourceVersionMatch::as_str),
        );
        push_opt_i64(
            &mut pairs,
            "timeoutSeconds",
            self.timeout_seconds.map(|s| s.min(MAX_TIMEOUT_SECONDS)),
        );
        if let Some(limit) = self.limit.filter(|limit| *limit != 0) {
            pairs.push(("limit", limit.to_string()));
        }
        push_str(&mut pairs, "continue", self.continue_token.as_deref());
        push_opt_bool(&mut pairs, "sendInitialEvents", self.send_initial_events);
        push_str(&mut pairs, "shardSelector", self.shard_selector.as_deref());
        pairs
    }

    /// Checks these options the way the API server will, for a list (`watch == false`) or a
    /// watch (`watch == true`), and returns the first problem found.
    ///
    /// Lists (the server's rules): `resourceVersionMatch` needs a `resourceVersion`, no
    /// `continue`, and `Exact` may not be used with `"0"`; `sendInitialEvents` is forbidden; a
    /// `continue` token may only be combined with `resourceVersion` `""` or `"0"`.
    ///
    /// Watches (the server's rules): `sendInitialEvents` (true or false) requires
    /// `resourceVersionMatch=NotOlderThan`; `resourceVersionMatch` requires `sendInitialEvents`,
    /// must be `NotOlderThan` and may not be combined with `continue`.
    ///
    /// Both (stricter than the server, see [`OptionsError`]): `sendInitialEvents=true` on a
    /// watch requires `allowWatchBookmarks=true`; `limit` and `timeoutSeconds` must not be
    /// negative.
    pub fn validate(&self, watch: bool) -> Result<(), OptionsError> {
        if watch {
            self.validate_watch()?;
        } else {
            self.validate_list()?;
        }
        if let Some(limit) = self.limit.filter(|limit| *limit < 0) {
            return Err(OptionsError::NegativeLimit(limit));
        }
        if let Some(timeout) = self.timeout_seconds.filter(|timeout| *timeout < 0) {
            return Err(OptionsError::NegativeTimeoutSeconds(timeout));
        }
        Ok(())
    }

    fn validate_list(&self) -> Result<(), OptionsError> {
        let resource_version = non_empty(self.resource_version.as_deref());
        let continue_token = non_empty(self.continue_token.as_deref());
        if let Some(rv_match) = self.resource_version_match {
            if resource_version.is_none() {
                return Err(OptionsError::ResourceVersionMatchWithoutResourceVersion);
            }
            if continue_token.is_some() {
                return Err(OptionsError::ResourceVersionMatchWithContinue);
            }
            if rv_match == ResourceVersionMatch::Exact && resource_version == Some("0") {
                return Err(OptionsError::ExactResourceVersionZero);
            }
        }
        if self.send_initial_events.is_some() {
            return Err(OptionsError::SendInitialEventsForList);
        }
        if let (Some(_), Some(rv)) = (continue_token, resource_version) {
            if rv != "0" {
                return Err(OptionsError::ContinueWithResourceVersion {
                    resource_version: rv.to_string(),
                });
            }
        }
        Ok(())
    }

    fn validate_watch(&self) -> Result<(), OptionsError> {
        let rv_match = self.resource_version_match;
        if self.send_initial_events.is_some()
            && rv_match != Some(ResourceVersionMatch::NotOlderThan)
        {
            return Err(OptionsError::SendInitialEventsRequiresNotOlderThan {
                resource_version_match: rv_match,
            });
        }
        // From here on a set match is NotOlderThan with sendInitialEvents, or has no
        // sendInitialEvents (the server's "not supported" for Exact is then redundant).
        if rv_match.is_some() {
            if self.send_initial_events.is_none() {
                return Err(OptionsError::ResourceVersionMatchForWatchWithoutSendInitialEvents);
            }
            if non_empty(self.continue_token.as_deref()).is_some() {
                return Err(OptionsError::ResourceVersionMatchWithContinue);
            }
        }
        if self.send_initial_events == Some(true) && !self.allow_watch_bookmarks {
            return Err(OptionsError::SendInitialEventsWithoutBookmarks);
        }
        Ok(())
    }
}

fn non_empty(value: Option<&str>) -> Option<&str> {
    value.filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
        list.iter().map(|(k, v)| (*k, v.to_string())).collect()
    }

    #[test]
    fn default_sends_nothing() {
        assert!(ListOptions::default().query_pairs().is_empty());
        assert_eq!(
            ListOptions::default().watch_query_pairs(),
            pairs(&[("watch", "true")])
        );
    }

    #[test]
    fn all_fields_in_struct_order() {
        let opts = ListOptions::default()
            .labels("a=b")
            .fields("metadata.name=x")
            .resource_version("42")
            .resource_version_match(ResourceVersionMatch::Exact)
            .limit(10)
            .continue_token("tok")
            .timeout_seconds(30)
            .allow_watch_bookmarks(true)
            .send_initial_events(false);
        assert_eq!(
            opts.watch_query_pairs(),
            pairs(&[
                ("labelSelector", "a=b"),
                ("fieldSelector", "metadata.name=x"),
                ("watch", "true"),
                ("allowWatchBookmarks", "true"),
                ("resourceVersion", "42"),
                ("resourceVersionMatch", "Exact"),
                ("timeoutSeconds", "30"),
                ("limit", "10"),
                ("continue", "tok"),
                ("sendInitialEvents", "false"),
            ])
        );
    }

    #[test]
    fn empty_and_zero_are_omitted_but_set_pointers_are_not() {
        let opts = ListOptions {
            label_selector: Some(String::new()),
            field_selector: Some(String::new()),
            resource_version: Some(String::new()),
            continue_token: Some(String::new()),
            limit: Some(0),
            timeout_seconds: Some(0),
            ..ListOptions::default()
        };
        assert_eq!(opts.query_pairs(), pairs(&[("timeoutSeconds", "0")]));
    }

    /// Issue 29, item 6: the server multiplies `timeoutSeconds` by a second in an `int64` of
    /// nanoseconds; anything longer than that holds is sent as the longest it holds.
    #[test]
    fn timeout_seconds_beyond_a_go_duration_are_sent_as_the_longest_one() {
        assert_eq!(MAX_TIMEOUT_SECONDS, 9_223_372_036);
        assert!(MAX_TIMEOUT_SECONDS.checked_mul(1_000_000_000).is_some());
        assert!((MAX_TIMEOUT_SECONDS + 1)
            .checked_mul(1_000_000_000)
            .is_none());
        for (asked, sent) in [
            (i64::MAX, "9223372036"),
            (MAX_TIMEOUT_SECONDS + 1, "9223372036"),
            (MAX_TIMEOUT_SECONDS, "9223372036"),
            (300, "300"),
        ] {
            let opts = ListOptions::default().timeout_seconds(asked);
            assert_eq!(opts.query_pairs(), pairs(&[("timeoutSeconds", sent)]));
        }
    }

    #[test]
    fn watch_list_sets_the_three_options() {
        let opts = ListOptions::default().watch_list();
        assert_eq!(opts.send_initial_events, Some(true));
        assert!(opts.allow_watch_bookmarks);
        assert_eq!(
            opts.resource_version_match,
            Some(ResourceVersionMatch::NotOlderThan)
        );
        assert_eq!(opts.validate(true), Ok(()));
        assert_eq!(
            opts.validate(false),
            Err(OptionsError::ResourceVersionMatchWithoutResourceVersion)
        );
        assert_eq!(
            opts.resource_version("0").validate(false),
            Err(OptionsError::SendInitialEventsForList)
        );
    }

    #[test]
    fn empty_resource_version_counts_as_unset() {
        let opts = ListOptions::default()
            .resource_version("")
            .resource_version_match(ResourceVersionMatch::NotOlderThan);
        assert_eq!(
            opts.validate(false),
            Err(OptionsError::ResourceVersionMatchWithoutResourceVersion)
        );
    }

    #[test]
    fn resource_version_match_displays_as_wire_value() {
        assert_eq!(
            ResourceVersionMatch::NotOlderThan.to_string(),
            "NotOlderThan"
        );
        assert_eq!(ResourceVersionMatch::Exact.to_string(), "Exact");
        assert_eq!(
            serde_json::to_string(&ResourceVersionMatch::Exact).unwrap(),
            "\"Exact\""
        );
    }
}
