//! `DeleteOptions`: the body of delete and deletecollection calls.

use std::fmt;

use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::OptionsError;

/// How a deletion propagates to the object's dependents (`propagationPolicy`, client-go's
/// `metav1.DeletionPropagation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DeletionPropagation {
    /// `Orphan`: leave the dependents in place, removing this owner from their owner references.
    Orphan,
    /// `Background`: delete the object now; the garbage collector deletes the dependents
    /// afterwards.
    Background,
    /// `Foreground`: the object stays (with a deletion timestamp and the `foregroundDeletion`
    /// finalizer) until the garbage collector has deleted every dependent that blocks owner
    /// deletion; dependents are deleted in the foreground too.
    Foreground,
}

impl DeletionPropagation {
    /// The value on the wire: `"Orphan"`, `"Background"` or `"Foreground"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeletionPropagation::Orphan => "Orphan",
            DeletionPropagation::Background => "Background",
            DeletionPropagation::Foreground => "Foreground",
        }
    }
}

impl fmt::Display for DeletionPropagation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Conditions the object must meet for a delete to go ahead (`metav1.Preconditions`); if it
/// does not, the server answers `409 Conflict`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// `uid`: the object must have this UID (guards against deleting a re-created namesake).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// `resourceVersion`: the object must be at this version (guards against deleting an
    /// object that changed since it was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// Options of a delete or deletecollection call (client-go's `metav1.DeleteOptions`).
///
/// client-go sends these as the JSON request body of every delete, defaults included, and so
/// does this crate: [`to_body`](Self::to_body) (or `Serialize`) produces
/// `{"kind":"DeleteOptions","apiVersion":"v1",...}` with the fields in `metav1.DeleteOptions`
/// order, omitting unset ones. `DeleteOptions` is an unversioned type for the API server, so
/// `apiVersion` `v1` is accepted on every group's endpoints (client-go's dynamic client and
/// its core/v1 clients send exactly this; its other typed clients put their own group version
/// there). For deletecollection the list half goes in the query, as
/// [`ListOptions::query_pairs`](super::ListOptions::query_pairs).
///
/// The deprecated `orphanDependents` is not offered: `propagation_policy` with
/// [`DeletionPropagation::Orphan`] replaces it and the server forbids setting both.
///
/// ```
/// use kclient_core::options::{DeleteOptions, DeletionPropagation};
///
/// let opts = DeleteOptions::default()
///     .grace_period_seconds(0)
///     .propagation_policy(DeletionPropagation::Foreground)
///     .precondition_uid("8c2e7c9a-0000-4000-8000-000000000001");
/// opts.validate().unwrap();
/// assert_eq!(
///     String::from_utf8(opts.to_body().unwrap()).unwrap(),
///     r#"{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0,"#.to_owned()
///         + r#""preconditions":{"uid":"8c2e7c9a-0000-4000-8000-000000000001"},"#
///         + r#""propagationPolicy":"Foreground"}"#
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// `gracePeriodSeconds`: how long the object may take to terminate; 0 deletes
    /// immediately; unset uses the object's default (for pods,
    /// `terminationGracePeriodSeconds`). Must not be negative.
    pub grace_period_seconds: Option<i64>,
    /// `preconditions`: conditions the object must meet, else `409 Conflict`.
    pub preconditions: Option<Preconditions>,
    /// `propagationPolicy`: what happens to dependents. Unset: the resource's default
    /// (usually `Background`) or what the object's finalizers say.
    pub propagation_policy: Option<DeletionPropagation>,
    /// `dryRun: ["All"]`: run the deletion through every stage but do not persist it.
    pub dry_run: bool,
}

impl DeleteOptions {
    /// Options with `propagationPolicy=Foreground`.
    pub fn foreground() -> Self {
        DeleteOptions::default().propagation_policy(DeletionPropagation::Foreground)
    }

    /// Options with `propagationPolicy=Background`.
    pub fn background() -> Self {
        DeleteOptions::default().propagation_policy(DeletionPropagation::Background)
    }

    /// Options with `propagationPolicy=Orphan`.
    pub fn orphan() -> Self {
        DeleteOptions::default().propagation_policy(DeletionPropagation::Orphan)
    }

    /// Sets `gracePeriodSeconds`.
    pub fn grace_period_seconds(mut self, seconds: i64) -> Self {
        self.grace_period_seconds = Some(seconds);
        self
    }

    /// Sets `preconditions`.
    pub fn preconditions(mut self, preconditions: Preconditions) -> Self {
        self.preconditions = Some(preconditions);
        self
    }

    /// Sets `preconditions.uid`, keeping any resource-version precondition.
    pub fn precondition_uid(mut self, uid: impl Into<String>) -> Self {
        self.preconditions.get_or_insert_with(Default::default).uid = Some(uid.into());
        self
    }

    /// Sets `preconditions.resourceVersion`, keeping any UID precondition.
    pub fn precondition_resource_version(mut self, resource_version: impl Into<String>) -> Self {
        self.preconditions
            .get_or_insert_with(Default::default)
            .resource_version = Some(resource_version.into());
        self
    }

    /// Sets `propagationPolicy`.
    pub fn propagation_policy(mut self, policy: DeletionPropagation) -> Self {
        self.propagation_policy = Some(policy);
        self
    }

    /// Sets `dryRun` to `["All"]`.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// The JSON request body (`Content-Type: application/json`).
    pub fn to_body(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }

    /// Checks the options: `gracePeriodSeconds` must not be negative (the API documents a
    /// non-negative value; the server would silently use 1 second).
    pub fn validate(&self) -> Result<(), OptionsError> {
        match self.grace_period_seconds {
            Some(seconds) if seconds < 0 => Err(OptionsError::NegativeGracePeriodSeconds(seconds)),
            _ => Ok(()),
        }
    }
}

impl Serialize for DeleteOptions {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut body = serializer.serialize_struct("DeleteOptions", 6)?;
        body.serialize_field("kind", "DeleteOptions")?;
        body.serialize_field("apiVersion", "v1")?;
        if let Some(seconds) = self.grace_period_seconds {
            body.serialize_field("gracePeriodSeconds", &seconds)?;
        }
        if let Some(preconditions) = &self.preconditions {
            body.serialize_field("preconditions", preconditions)?;
        }
        if let Some(policy) = self.propagation_policy {
            body.serialize_field("propagationPolicy", &policy)?;
        }
        if self.dry_run {
            body.serialize_field("dryRun", &["All"])?;
        }
        body.end()
    }
}

/// Reads a request body as the API server does: `kind`, `apiVersion` and fields this type does
/// not model are ignored; `dryRun` must list only `"All"`.
impl<'de> Deserialize<'de> for DeleteOptions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire {
            #[serde(default)]
            grace_period_seconds: Option<i64>,
            #[serde(default)]
            preconditions: Option<Preconditions>,
            #[serde(default)]
            propagation_policy: Option<DeletionPropagation>,
            #[serde(default)]
            dry_run: Option<Vec<String>>,
        }

        let wire = Wire::deserialize(deserializer)?;
        let dry_run = wire.dry_run.unwrap_or_default();
        if let Some(other) = dry_run.iter().find(|value| value.as_str() != "All") {
            return Err(serde::de::Error::custom(format_args!(
                "unsupported dryRun value {other:?}: only \"All\" is supported"
            )));
        }
        Ok(DeleteOptions {
            grace_period_seconds: wire.grace_period_seconds,
            preconditions: wire.preconditions,
            propagation_policy: wire.propagation_policy,
            dry_run: !dry_run.is_empty(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_body_is_kind_and_api_version_only() {
        assert_eq!(
            serde_json::to_string(&DeleteOptions::default()).unwrap(),
            r#"{"kind":"DeleteOptions","apiVersion":"v1"}"#
        );
    }

    #[test]
    fn precondition_builders_combine() {
        let opts = DeleteOptions::default()
            .precondition_uid("u")
            .precondition_resource_version("7");
        assert_eq!(
            opts.preconditions,
            Some(Preconditions {
                uid: Some("u".into()),
                resource_version: Some("7".into()),
            })
        );
    }

    #[test]
    fn rejects_unknown_dry_run_values() {
        let err = serde_json::from_str::<DeleteOptions>(r#"{"dryRun":["Some"]}"#).unwrap_err();
        assert!(
            err.to_string()
                .contains("unsupported dryRun value \"Some\""),
            "{err}"
        );
    }

    #[test]
    fn propagation_constructors() {
        assert_eq!(
            DeleteOptions::orphan().propagation_policy,
            Some(DeletionPropagation::Orphan)
        );
        assert_eq!(
            DeleteOptions::background().propagation_policy,
            Some(DeletionPropagation::Background)
        );
        assert_eq!(
            DeleteOptions::foreground().propagation_policy,
            Some(DeletionPropagation::Foreground)
        );
    }
}
