//! [`Definition`]: a CRD version besides its schema, and the CRD it makes with the schemas of
//! a spec and a status type.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceConversion, CustomResourceDefinition,
    CustomResourceDefinitionNames, CustomResourceDefinitionSpec, CustomResourceDefinitionVersion,
    CustomResourceSubresourceScale, CustomResourceSubresourceStatus, CustomResourceSubresources,
    CustomResourceValidation, JSONSchemaProps, SelectableField, ValidationRule,
    WebhookClientConfig, WebhookConversion,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

use super::structural::structural_schema;

/// The `ConversionReview` versions a kclient conversion webhook speaks.
pub const CONVERSION_REVIEW_VERSIONS: &[&str] = &["v1"];

/// What a CRD version says besides its schema: what `#[derive(CustomResource)]` reads from
/// its `#[kube(...)]` attributes. `Default` is served and stored, namespaced false, no
/// subresource; `group`, `version`, `kind` and `plural` must be set.
#[derive(Clone, Debug, PartialEq)]
pub struct Definition {
    /// The API group (`stable.example.com`).
    pub group: String,
    /// The version (`v1`, `v2beta1`).
    pub version: String,
    /// The kind, in CamelCase (`CronTab`).
    pub kind: String,
    /// The resource, lowercase plural (`crontabs`): the URL path segment.
    pub plural: String,
    /// The singular (`crontab`); empty for the kind in lowercase.
    pub singular: String,
    /// Whether objects live in namespaces (`scope: Namespaced`) or not (`Cluster`).
    pub namespaced: bool,
    /// Short names for `kubectl get` (`ct`).
    pub short_names: Vec<String>,
    /// Categories (`kubectl get all` lists the kinds in `all`).
    pub categories: Vec<String>,
    /// The columns `kubectl get` prints (`additionalPrinterColumns`).
    pub printer_columns: Vec<CustomResourceColumnDefinition>,
    /// Fields usable in field selectors (`.spec.color`), Kubernetes 1.32+.
    pub selectable_fields: Vec<String>,
    /// Whether the version is served.
    pub served: bool,
    /// Whether it is the storage version (exactly one of a CRD's versions is).
    pub storage: bool,
    /// Whether the version is deprecated (clients get a warning).
    pub deprecated: bool,
    /// The warning deprecated versions send instead of the default one.
    pub deprecation_warning: Option<String>,
    /// Whether `status` is a subresource (`/status`: the main resource ignores status
    /// changes and the status subresource ignores everything else).
    pub status_subresource: bool,
    /// The scale subresource (`/scale`, for `kubectl scale` and autoscalers).
    pub scale: Option<CustomResourceSubresourceScale>,
    /// CEL rules on the whole object (`x-kubernetes-validations` at the root; rules on a
    /// field go on the field, with `#[schemars(extend("x-kubernetes-validations" = ...))]`).
    pub validations: Vec<ValidationRule>,
    /// Annotations of the CRD object.
    pub annotations: BTreeMap<String, String>,
    /// Labels of the CRD object.
    pub labels: BTreeMap<String, String>,
    /// The description of the kind (the root schema's, `kubectl explain` shows it).
    pub description: Option<String>,
}

impl Default for Definition {
    fn default() -> Self {
        Self {
            group: String::new(),
            version: String::new(),
            kind: String::new(),
            plural: String::new(),
            singular: String::new(),
            namespaced: false,
            short_names: Vec::new(),
            categories: Vec::new(),
            printer_columns: Vec::new(),
            selectable_fields: Vec::new(),
            served: true,
            storage: true,
            deprecated: false,
            deprecation_warning: None,
            status_subresource: false,
            scale: None,
            validations: Vec::new(),
            annotations: BTreeMap::new(),
            labels: BTreeMap::new(),
            description: None,
        }
    }
}

/// The structural schema of `T` (see [`structural_schema`]), from schemars with the OpenAPI
/// 3.0 settings and every subschema inlined.
pub fn schema_for<T: JsonSchema + ?Sized>() -> Value {
    let generator = SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    structural_schema(generator.into_root_schema_for::<T>().to_value())
}

/// What the root schema says of `apiVersion` and `kind` (apimachinery's `TypeMeta` docs, as
/// every CRD controller-gen writes has them).
const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

impl Definition {
    /// The CRD of this version, its object's `spec` described by `spec` and its `status` by
    /// `status` (structural schemas, e.g. from [`schema_for`]); `spec: None` accepts any
    /// spec, `status: None` has no status.
    pub fn to_crd(&self, spec: Option<Value>, status: Option<Value>) -> CustomResourceDefinition {
        let mut properties = Map::new();
        properties.insert(
            "apiVersion".into(),
            json!({"type": "string", "description": API_VERSION_DOC}),
        );
        properties.insert(
            "kind".into(),
            json!({"type": "string", "description": KIND_DOC}),
        );
        properties.insert("metadata".into(), json!({"type": "object"}));
        properties.insert(
            "spec".into(),
            spec.unwrap_or_else(
                || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            ),
        );
        if let Some(status) = status {
            properties.insert("status".into(), status);
        }
        let mut root = Map::new();
        if let Some(description) = &self.description {
            root.insert("description".into(), description.clone().into());
        }
        root.insert("type".into(), "object".into());
        root.insert("properties".into(), Value::Object(properties));
        root.insert("required".into(), json!(["spec"]));
        if !self.validations.is_empty() {
            root.insert(
                "x-kubernetes-validations".into(),
                serde_json::to_value(&self.validations).unwrap_or_default(),
            );
        }
        self.to_crd_with_schema(Value::Object(root))
    }

    /// The CRD of this version with `schema` as its whole `openAPIV3Schema` (a schema written
    /// by hand; it must be structural).
    pub fn to_crd_with_schema(&self, schema: Value) -> CustomResourceDefinition {
        let plural = self.plural.clone();
        let singular = if self.singular.is_empty() {
            self.kind.to_lowercase()
        } else {
            self.singular.clone()
        };
        let non_empty = |v: &Vec<String>| (!v.is_empty()).then(|| v.clone());
        let map = |m: &BTreeMap<String, String>| (!m.is_empty()).then(|| m.clone());
        let subresources =
            (self.status_subresource || self.scale.is_some()).then(|| CustomResourceSubresources {
                status: self
                    .status_subresource
                    .then(|| CustomResourceSubresourceStatus(json!({}))),
                scale: self.scale.clone(),
            });
        let version = CustomResourceDefinitionVersion {
            name: self.version.clone(),
            served: self.served,
            storage: self.storage,
            deprecated: self.deprecated.then_some(true),
            deprecation_warning: self.deprecation_warning.clone(),
            schema: Some(CustomResourceValidation {
                open_api_v3_schema: Some(schema_props(schema)),
            }),
            subresources,
            additional_printer_columns: (!self.printer_columns.is_empty())
                .then(|| self.printer_columns.clone()),
            selectable_fields: (!self.selectable_fields.is_empty()).then(|| {
                self.selectable_fields
                    .iter()
                    .map(|path| SelectableField {
                        json_path: path.clone(),
                    })
                    .collect()
            }),
        };
        CustomResourceDefinition {
            metadata: ObjectMeta {
                name: Some(format!("{plural}.{}", self.group)),
                annotations: map(&self.annotations),
                labels: map(&self.labels),
                ..Default::default()
            },
            spec: CustomResourceDefinitionSpec {
                group: self.group.clone(),
                names: CustomResourceDefinitionNames {
                    kind: self.kind.clone(),
                    list_kind: Some(format!("{}List", self.kind)),
                    plural,
                    singular: Some(singular),
                    short_names: non_empty(&self.short_names),
                    categories: non_empty(&self.categories),
                },
                scope: if self.namespaced {
                    "Namespaced"
                } else {
                    "Cluster"
                }
                .into(),
                versions: vec![version],
                conversion: None,
                preserve_unknown_fields: None,
            },
            status: None,
        }
    }
}

/// A structural schema as k8s-openapi's type. The rewriting makes every schema something it
/// reads; should one still not be, the version accepts any object rather than panic, and the
/// description says why (what `kubectl explain` shows).
fn schema_props(schema: Value) -> JSONSchemaProps {
    serde_json::from_value(schema).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "a CRD schema could not be represented; the version accepts any object");
        JSONSchemaProps {
            type_: Some("object".into()),
            x_kubernetes_preserve_unknown_fields: Some(true),
            description: Some(format!("(kclient could not represent the schema: {e})")),
            ..Default::default()
        }
    })
}

/// Has the API server convert `crd`'s versions through a conversion webhook at
/// `client_config` (`spec.conversion.strategy: Webhook`, `ConversionReview` v1), instead of
/// the `None` strategy's rewrite of `apiVersion` alone. kclient-webhook serves such a
/// webhook and fills in the client configuration, CA bundle included.
pub fn set_webhook_conversion(
    crd: &mut CustomResourceDefinition,
    client_config: WebhookClientConfig,
) {
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(WebhookConversion {
            client_config: Some(client_config),
            conversion_review_versions: CONVERSION_REVIEW_VERSIONS
                .iter()
                .map(|v| (*v).to_owned())
                .collect(),
        }),
    });
}
