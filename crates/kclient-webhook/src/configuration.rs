//! The objects that tell the API server to call the webhooks: a
//! `ValidatingWebhookConfiguration` and a `MutatingWebhookConfiguration` made from the
//! handlers a server has, and the client configuration a CRD's conversion stanza needs —
//! each with the address the server is reached at and the CA bundle it is verified with.

use k8s_openapi::api::admissionregistration::v1 as admission;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::ByteString;
use kclient_core::admission::Operation;
use kclient_core::ApiResource;

/// The path the server serves CRD conversions at (controller-runtime's).
pub const CONVERSION_PATH: &str = "/convert";

/// Where the API server reaches the webhook server, and the CA it verifies it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    endpoint: Endpoint,
    ca_bundle: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Endpoint {
    Url(String),
    Service {
        namespace: String,
        name: String,
        port: Option<i32>,
    },
}

impl ClientConfig {
    /// At `base_url` (`https://127.0.0.1:9443`, without a path), verified with `ca_pem`.
    pub fn url(base_url: impl Into<String>, ca_pem: impl Into<String>) -> Self {
        Self {
            endpoint: Endpoint::Url(base_url.into().trim_end_matches('/').to_owned()),
            ca_bundle: ca_pem.into(),
        }
    }

    /// Through Service `namespace/name` (port 443 unless given), verified with `ca_pem`
    /// (whose certificate names `<name>.<namespace>.svc`).
    pub fn service(
        namespace: impl Into<String>,
        name: impl Into<String>,
        port: Option<i32>,
        ca_pem: impl Into<String>,
    ) -> Self {
        Self {
            endpoint: Endpoint::Service {
                namespace: namespace.into(),
                name: name.into(),
                port,
            },
            ca_bundle: ca_pem.into(),
        }
    }

    fn ca_bundle(&self) -> Option<ByteString> {
        Some(ByteString(self.ca_bundle.as_bytes().to_vec()))
    }

    /// The admission webhooks' client configuration for `path`.
    pub fn admission(&self, path: &str) -> admission::WebhookClientConfig {
        match &self.endpoint {
            Endpoint::Url(base) => admission::WebhookClientConfig {
                url: Some(format!("{base}{path}")),
                ca_bundle: self.ca_bundle(),
                service: None,
            },
            Endpoint::Service {
                namespace,
                name,
                port,
            } => admission::WebhookClientConfig {
                url: None,
                ca_bundle: self.ca_bundle(),
                service: Some(admission::ServiceReference {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    path: Some(path.to_owned()),
                    port: *port,
                }),
            },
        }
    }

    /// A CRD conversion stanza's client configuration (for
    /// `kclient_core::crd::set_webhook_conversion`), at [`CONVERSION_PATH`]: the admission
    /// webhooks' configuration for that path, in apiextensions' types.
    pub fn conversion(&self) -> apiextensions::WebhookClientConfig {
        let config = self.admission(CONVERSION_PATH);
        apiextensions::WebhookClientConfig {
            url: config.url,
            ca_bundle: config.ca_bundle,
            service: config
                .service
                .map(|service| apiextensions::ServiceReference {
                    namespace: service.namespace,
                    name: service.name,
                    path: service.path,
                    port: service.port,
                }),
        }
    }
}

/// What the API server does when it cannot reach the webhook or gets no valid answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailurePolicy {
    /// Refuse the request (the default, as kube-apiserver's).
    #[default]
    Fail,
    /// Let the request go on.
    Ignore,
}

impl FailurePolicy {
    fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }
}

/// How a handler is registered with the API server; `Default` is what kubebuilder's markers
/// default to: failure policy `Fail`, no side effects, 10 s, `matchPolicy: Equivalent`, every
/// namespace and object.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookOptions {
    /// The operations sent (validators: create and update by default, add `Delete` to see
    /// deletions; defaulters: create and update).
    pub operations: Vec<Operation>,
    /// What the API server does when the webhook fails.
    pub failure_policy: FailurePolicy,
    /// How long the API server waits (1 to 30 s).
    pub timeout_seconds: i32,
    /// Whether other versions of the resource are sent too, converted to the handler's
    /// (`Equivalent`), or only its own (`Exact`).
    pub match_policy_exact: bool,
    /// Only objects in namespaces matching this.
    pub namespace_selector: Option<LabelSelector>,
    /// Only objects matching this.
    pub object_selector: Option<LabelSelector>,
    /// Whether the handler writes anything elsewhere (`sideEffects: NoneOnDryRun` when it
    /// does but skips it on dry runs; `None` by default).
    pub side_effects_on_dry_run_skipped: bool,
}

impl Default for WebhookOptions {
    fn default() -> Self {
        Self {
            operations: vec![Operation::Create, Operation::Update],
            failure_policy: FailurePolicy::Fail,
            timeout_seconds: 10,
            match_policy_exact: false,
            namespace_selector: None,
            object_selector: None,
            side_effects_on_dry_run_skipped: false,
        }
    }
}

/// Which kind of admission a handler does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    Validating,
    Mutating,
}

/// An admission handler as the API server must be told of it.
#[derive(Debug, Clone)]
pub(crate) struct Registration {
    pub(crate) admission: Admission,
    pub(crate) path: String,
    pub(crate) resource: ApiResource,
    pub(crate) options: WebhookOptions,
}

impl Registration {
    /// The webhook's name: unique, and a DNS name of at least three parts as the API server
    /// requires (`validate.memcached.v1alpha1.cache.example.com`).
    fn name(&self) -> String {
        let verb = match self.admission {
            Admission::Validating => "validate",
            Admission::Mutating => "mutate",
        };
        let group = if self.resource.group.is_empty() {
            "core"
        } else {
            &self.resource.group
        };
        format!(
            "{verb}.{}.{}.{group}",
            self.resource.kind.to_lowercase(),
            self.resource.version
        )
    }

    fn rules(&self) -> Vec<admission::RuleWithOperations> {
        vec![admission::RuleWithOperations {
            operations: Some(
                self.options
                    .operations
                    .iter()
                    .map(|o| o.as_str().to_owned())
                    .collect(),
            ),
            api_groups: Some(vec![self.resource.group.clone()]),
            api_versions: Some(vec![self.resource.version.clone()]),
            resources: Some(vec![self.resource.plural.clone()]),
            scope: Some(if self.resource.namespaced {
                "Namespaced".into()
            } else {
                "Cluster".into()
            }),
        }]
    }

    fn side_effects(&self) -> String {
        if self.options.side_effects_on_dry_run_skipped {
            "NoneOnDryRun".into()
        } else {
            "None".into()
        }
    }

    fn match_policy(&self) -> Option<String> {
        Some(if self.options.match_policy_exact {
            "Exact".into()
        } else {
            "Equivalent".into()
        })
    }

    pub(crate) fn validating(&self, client: &ClientConfig) -> admission::ValidatingWebhook {
        admission::ValidatingWebhook {
            name: self.name(),
            client_config: client.admission(&self.path),
            rules: Some(self.rules()),
            failure_policy: Some(self.options.failure_policy.as_str().into()),
            side_effects: self.side_effects(),
            timeout_seconds: Some(self.options.timeout_seconds),
            match_policy: self.match_policy(),
            namespace_selector: self.options.namespace_selector.clone(),
            object_selector: self.options.object_selector.clone(),
            admission_review_versions: vec!["v1".into()],
            match_conditions: None,
        }
    }

    /// The validating webhook's registration, as a mutating webhook that is not called
    /// again after other webhooks changed the object.
    pub(crate) fn mutating(&self, client: &ClientConfig) -> admission::MutatingWebhook {
        let webhook = self.validating(client);
        admission::MutatingWebhook {
            name: webhook.name,
            client_config: webhook.client_config,
            rules: webhook.rules,
            failure_policy: webhook.failure_policy,
            side_effects: webhook.side_effects,
            timeout_seconds: webhook.timeout_seconds,
            match_policy: webhook.match_policy,
            namespace_selector: webhook.namespace_selector,
            object_selector: webhook.object_selector,
            admission_review_versions: webhook.admission_review_versions,
            reinvocation_policy: Some("Never".into()),
            match_conditions: webhook.match_conditions,
        }
    }
}

/// The path controller-runtime serves a handler of `resource` at
/// (`/validate-cache-example-com-v1alpha1-memcached`).
pub(crate) fn default_path(admission: Admission, resource: &ApiResource) -> String {
    let verb = match admission {
        Admission::Validating => "validate",
        Admission::Mutating => "mutate",
    };
    // controller-runtime's: the core group is empty (`/validate--v1-pod`).
    let group = resource.group.replace('.', "-");
    let kind = resource.kind.to_lowercase();
    format!("/{verb}-{group}-{}-{kind}", resource.version)
}
