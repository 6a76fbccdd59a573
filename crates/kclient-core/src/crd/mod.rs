//! CustomResourceDefinitions from Rust types: what `#[derive(CustomResource)]`
//! (kclient-derive) builds on, usable by hand too. (Feature `schema`.)
//!
//! * [`CustomResourceExt`]: a custom resource type's CRD ([`crd`](CustomResourceExt::crd)),
//!   its name, its short names — kube-rs's trait of the same name.
//! * [`Definition`]: everything a CRD version says besides its schema (group, names, scope,
//!   subresources, printer columns, selectable fields, CEL rules …), made into a
//!   `CustomResourceDefinition` with the schemas of the spec and status
//!   ([`Definition::to_crd`]).
//! * [`schema_for`] and [`structural_schema`]: a type's JSON schema (schemars) rewritten into
//!   the structural schema kube-apiserver requires.
//! * [`merge_crds`]: the CRDs of several versions of one kind, one per Rust module, merged
//!   into one with exactly one storage version; [`set_webhook_conversion`] to convert
//!   between them with a conversion webhook.
//!
//! ```
//! use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceColumnDefinition;
//! use kclient_core::crd::{schema_for, Definition};
//!
//! #[derive(schemars::JsonSchema)]
//! struct CronTabSpec {
//!     /// The schedule, in cron format.
//!     cron_spec: String,
//!     #[schemars(range(min = 1, max = 5))]
//!     replicas: i32,
//! }
//!
//! let crd = Definition {
//!     group: "stable.example.com".into(),
//!     version: "v1".into(),
//!     kind: "CronTab".into(),
//!     plural: "crontabs".into(),
//!     namespaced: true,
//!     short_names: vec!["ct".into()],
//!     printer_columns: vec![CustomResourceColumnDefinition {
//!         name: "Replicas".into(),
//!         type_: "integer".into(),
//!         json_path: ".spec.replicas".into(),
//!         ..Default::default()
//!     }],
//!     ..Definition::default()
//! }
//! .to_crd(Some(schema_for::<CronTabSpec>()), None);
//! assert_eq!(crd.metadata.name.as_deref(), Some("crontabs.stable.example.com"));
//! let schema = crd.spec.versions[0].schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap();
//! let spec = &schema.properties.as_ref().unwrap()["spec"];
//! assert_eq!(spec.properties.as_ref().unwrap()["replicas"].maximum, Some(5.0));
//! ```

mod definition;
mod merge;
mod structural;

pub use definition::{schema_for, set_webhook_conversion, Definition, CONVERSION_REVIEW_VERSIONS};
pub use merge::{merge_crds, MergeError};
pub use structural::structural_schema;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// A custom resource type's CustomResourceDefinition, as `#[derive(CustomResource)]`
/// implements it (kube-rs's `CustomResourceExt`).
pub trait CustomResourceExt {
    /// The CRD of this type's version: one version, served and stored unless the type says
    /// otherwise (merge several with [`merge_crds`]), its schema structural.
    fn crd() -> CustomResourceDefinition;

    /// The CRD's name, `<plural>.<group>`.
    fn crd_name() -> &'static str;

    /// The short names `kubectl` knows the kind by (`kubectl get ct`).
    fn shortnames() -> &'static [&'static str];
}
