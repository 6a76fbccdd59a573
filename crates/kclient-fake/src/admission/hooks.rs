//! The webhooks of the stored `MutatingWebhookConfiguration`s or
//! `ValidatingWebhookConfiguration`s, in the order kube-apiserver calls them: configurations
//! by name, then each configuration's webhooks in order.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kclient_core::labels::Selector;
use kclient_core::GroupResource;
use serde_json::Value;

use crate::meta::meta_str;
use crate::registry::Registry;
use crate::webhook_client::ClientConfig;

/// Which kind of webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookType {
    /// `MutatingWebhookConfiguration`'s.
    Mutating,
    /// `ValidatingWebhookConfiguration`'s.
    Validating,
}

impl HookType {
    /// The resource storing the configurations.
    pub fn resource(self) -> GroupResource {
        let plural = match self {
            HookType::Mutating => "mutatingwebhookconfigurations",
            HookType::Validating => "validatingwebhookconfigurations",
        };
        GroupResource::new("admissionregistration.k8s.io", plural)
    }
}

/// One `rules` entry.
#[derive(Debug, Clone, Default)]
pub struct Rule {
    /// `operations` (`CREATE`, `*` ...).
    pub operations: Vec<String>,
    /// `apiGroups`.
    pub api_groups: Vec<String>,
    /// `apiVersions`.
    pub api_versions: Vec<String>,
    /// `resources` (`pods`, `pods/status`, `*/*` ...).
    pub resources: Vec<String>,
    /// `scope` (`*` when absent).
    pub scope: String,
}

/// One webhook of a configuration, as the dispatcher needs it.
#[derive(Debug, Clone)]
pub struct Hook {
    /// The configuration's name.
    pub configuration: String,
    /// The webhook's position in it (with the configuration, its identity).
    pub index: usize,
    /// `name`.
    pub name: String,
    /// `clientConfig`.
    pub client: ClientConfig,
    /// `rules`.
    pub rules: Vec<Rule>,
    /// `failurePolicy: Ignore` (the default is `Fail`).
    pub ignore_failures: bool,
    /// `matchPolicy: Equivalent` (the stored default).
    pub equivalent: bool,
    /// `namespaceSelector` (`None`: absent, which selects everything).
    pub namespace_selector: Option<Value>,
    /// `objectSelector`.
    pub object_selector: Option<Value>,
    /// `sideEffects`.
    pub side_effects: Option<String>,
    /// `timeoutSeconds` (10 by default).
    pub timeout: Duration,
    /// `admissionReviewVersions`.
    pub review_versions: Vec<String>,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks).
    pub reinvoke_if_needed: bool,
    /// Whether it has `matchConditions` (not evaluated: see the module documentation).
    pub has_match_conditions: bool,
}

/// The default `timeoutSeconds` of admission webhooks.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn hook(configuration: &str, index: usize, v: &Value) -> Hook {
    let rules = v
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| Rule {
            operations: strings(r, "operations"),
            api_groups: strings(r, "apiGroups"),
            api_versions: strings(r, "apiVersions"),
            resources: strings(r, "resources"),
            scope: text(r, "scope").unwrap_or("*").to_string(),
        })
        .collect();
    let timeout = v
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    Hook {
        configuration: configuration.to_string(),
        index,
        name: text(v, "name").unwrap_or("").to_string(),
        client: ClientConfig::from_json(v.get("clientConfig").unwrap_or(&Value::Null)),
        rules,
        ignore_failures: text(v, "failurePolicy") == Some("Ignore"),
        equivalent: text(v, "matchPolicy") == Some("Equivalent"),
        namespace_selector: v.get("namespaceSelector").cloned(),
        object_selector: v.get("objectSelector").cloned(),
        side_effects: text(v, "sideEffects").map(str::to_string),
        timeout,
        review_versions: strings(v, "admissionReviewVersions"),
        reinvoke_if_needed: text(v, "reinvocationPolicy") == Some("IfNeeded"),
        has_match_conditions: v
            .get("matchConditions")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty()),
    }
}

/// The webhooks of the stored configurations of `kind`, in calling order.
pub fn hooks(registry: &Registry, kind: HookType) -> Vec<Hook> {
    let state = registry.store.read();
    // The store keeps a resource's objects in key order: for cluster-scoped objects, the
    // name, as kube-apiserver sorts the configurations.
    state
        .range(&kind.resource(), None, None)
        .flat_map(|(_, stored)| {
            let name = meta_str(&stored.value, "name").to_string();
            stored
                .value
                .get("webhooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, w)| hook(&name, i, w))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A `namespaceSelector` or `objectSelector` as a selector (`Ok(None)`: it selects
/// everything), or why it cannot be read.
pub fn selector(value: Option<&Value>) -> Result<Option<Selector>, String> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let parsed: LabelSelector = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
    let selector = Selector::from_label_selector(Some(&parsed)).map_err(|e| e.to_string())?;
    Ok((!selector.is_empty()).then_some(selector))
}
