//! `#[derive(CustomResource)]`: a Kubernetes custom resource's API written as Rust types,
//! and its CustomResourceDefinition generated from them (kube-rs's derive of the same name;
//! kubebuilder's markers and controller-gen in Go).
//!
//! Put it on the struct of the resource's spec, with `#[kube(...)]` attributes for the
//! group, version and whatever else the CRD says. It generates the resource's type (named
//! after the kind: `metadata`, `spec` and, with `status = "..."`, `status`) with every trait
//! kclient needs of a kind, so that the type works wherever a built-in kind does: the typed
//! client (`ResourceClient<Memcached>`, the status and scale subresources), informers and
//! listers, the compact cache, the reconcile runtime, kclient-fake; and
//! `CustomResourceExt::crd()` (kclient-core's `crd` module) → the `CustomResourceDefinition`, its schema structural as kube-apiserver requires (from
//! schemars: the spec and status types derive `schemars::JsonSchema`).
//!
//! The examples use the paths a program depending on the `kclient` facade writes
//! (`kclient::derive::…`); one depending on kclient-derive alone writes `kclient_derive::…`.
//!
// The example is a file of its own, run as a doc test of kclient-derive-tests and left out of
// this crate's doc tests (`cfg(doctest)`): a proc macro's doc tests would need its
// dependencies as dev-dependencies, which cargo builds a second time, for the host.
#![cfg_attr(not(doctest), doc = include_str!("crate_example.md"))]
//!
//! # Attributes
//!
//! Each in `#[kube(...)]` (the names kube-rs users know; several attributes may share one
//! `#[kube(...)]` or take one each):
//!
//! | attribute | what it says |
//! |---|---|
//! | `group = "cache.example.com"` | the API group (required; a domain with a dot) |
//! | `version = "v1"` | the version (required) |
//! | `kind = "Memcached"` | the kind; by default the struct's name without `Spec` |
//! | `plural = "..."`, `singular = "..."` | the resource names; by default the kind in lower case, plural by English rules (`policies`, `ingresses`) |
//! | `namespaced` | namespaced objects (by default cluster-scoped) |
//! | `status = "MemcachedStatus"` | a `status` of that type, as the status subresource |
//! | `scale(spec_replicas_path = ".spec.size", status_replicas_path = ".status.replicas", label_selector_path = ".status.selector")` | the scale subresource (also kube-rs's JSON form, `scale = r#"{"specReplicasPath": ...}"#`) |
//! | `printcolumn(name = "Size", type = "integer", json_path = ".spec.size", description = "...", format = "...", priority = 0)` | a column of `kubectl get` (also kube-rs's JSON form) |
//! | `shortname = "mc"`, `category = "all"`, `selectable = ".spec.color"` | short names, categories, selectable fields (each may repeat) |
//! | `validation = "self.spec.size <= self.spec.max"`, `validation(rule = "...", message = "...", reason = "FieldValueInvalid", field_path = "...")` | a CEL rule on the whole object (rules on one field go on the field: `#[schemars(extend("x-kubernetes-validations" = [{"rule": "self > 0"}]))]`) |
//! | `served = false`, `storage = false`, `deprecated`, `deprecated = "warning"` | the version's flags (several versions: kclient-core's `crd::merge_crds`) |
//! | `annotation("key", "value")`, `label("key", "value")` | on the CRD object |
//! | `doc = "..."` | the kind's description (and the root type's doc comment) |
//! | `derive = "PartialEq"` | more derives for the root type (it always has `Clone` and `Debug`) |
//! | `attr = "allow(deprecated)"` | more attributes for the root type |
//! | `struct = "MemcachedResource"` | the root type's name, if not the kind |
//! | `schema = "derived" \| "manual" \| "disabled"` | the schema from the spec and status (default), from the root type's own `JsonSchema`, or none (any object) |
//! | `crates(kclient_core = "path", kclient_typed = "path")` | where kclient-core and kclient-typed are, if not found as dependencies |
//!
//! The schema comes from schemars, so its attributes shape it: `#[schemars(range(min = 1,
//! max = 5))]`, `length(...)`, `regex(pattern = "...")`, `#[serde(default)]` (not required)
//! and `#[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" =
//! ["name"]))]` or any other `x-kubernetes-*` extension; doc comments become descriptions.
//! How Rust types become structural schemas (`Option`, enums, maps, `serde_json::Value`,
//! `IntOrString`, `Quantity`, flattened fields) is in the documentation of kclient-core's
//! `crd::structural_schema`.
//!
//! The generated code finds kclient through the crate's dependencies: the facade (`kclient`,
//! feature `derive`) or `kclient-core` (feature `schema`), and `kclient-typed` for the
//! status and scale subresources' markers. The deriving crate needs `serde` and `schemars`
//! for its own derives.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod attrs;
mod emit;
mod names;

use proc_macro::TokenStream;

/// Generates the custom resource type of a spec struct and its CRD; see the
/// [crate documentation](crate) for the attributes.
#[proc_macro_derive(CustomResource, attributes(kube))]
pub fn derive_custom_resource(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    emit::custom_resource(input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
