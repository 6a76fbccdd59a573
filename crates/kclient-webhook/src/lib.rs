//! kclient-webhook: admission and conversion webhooks (controller-runtime's `pkg/webhook`),
//! whole — the handlers, the HTTPS server, its certificates and the configuration objects
//! that tell the API server to call it.
//!
//! * [`admission`]: a [`CustomValidator`] (allow or deny creates, updates, deletes, with
//!   warnings) and a [`CustomDefaulter`] (fill in defaults; the JSON patch the API server
//!   applies is computed from what it changed) for a type `K`, objects decoded as `K`.
//! * [`conversion`]: hub-and-spoke CRD conversion ([`Conversion`]): every version converts to
//!   and from a hub with `TryFrom`; whole lists, the uid echoed, metadata kept.
//! * [`WebhookServer`]: HTTPS (rustls, HTTP/2 and HTTP/1.1) serving each handler at
//!   controller-runtime's path; a certificate from files reloaded when they change
//!   ([`ServingCertificate`]); malformed reviews, handlers that panic or take too long
//!   answered with a `Status`, never a crash, logged with the request's uid;
//!   controller-runtime's [`WebhookMetrics`].
//! * [`certs`]: a self-signed CA and serving certificate for development and tests, the CA
//!   being the `caBundle`; [`ClientConfig`] puts the server's address and CA bundle into the
//!   `ValidatingWebhookConfiguration` and `MutatingWebhookConfiguration` the server makes
//!   from its handlers, and into a CRD's conversion stanza.
//!
//! kclient-fake calls webhooks as kube-apiserver does, so a webhook is tested in-process.
//!
//! ```no_run
//! use kclient_core::CancellationToken;
//! use kclient_webhook::admission::{AdmissionContext, CustomDefaulter, CustomValidator, Denial, Warnings};
//! use kclient_webhook::certs::SelfSignedCertificates;
//! use kclient_webhook::{ClientConfig, WebhookServer};
//! use k8s_openapi::api::apps::v1::Deployment;
//!
//! struct Replicas;
//!
//! impl CustomValidator<Deployment> for Replicas {
//!     async fn validate_create(&self, d: &Deployment, _: &AdmissionContext) -> Result<Warnings, Denial> {
//!         match d.spec.replicas {
//!             Some(n) if n > 10 => Err(Denial::forbidden(format!("{n} replicas is more than 10"))),
//!             _ => Ok(vec![]),
//!         }
//!     }
//! }
//!
//! impl CustomDefaulter<Deployment> for Replicas {
//!     async fn default(&self, d: &mut Deployment, _: &AdmissionContext) -> Result<(), Denial> {
//!         d.spec.replicas.get_or_insert(2);
//!         Ok(())
//!     }
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let certs = SelfSignedCertificates::generate(&["localhost"], &["127.0.0.1".parse()?])?;
//! let server = WebhookServer::builder()
//!     .validator::<Deployment, _>(Replicas)
//!     .defaulter::<Deployment, _>(Replicas)
//!     .bind("127.0.0.1:9443".parse()?, certs.serving())
//!     .await?;
//! let client = ClientConfig::url(format!("https://{}", server.local_addr()?), &certs.ca_pem);
//! let validating = server.validating_webhook_configuration("replicas", &client);
//! let mutating = server.mutating_webhook_configuration("replicas", &client);
//! // ... create `validating` and `mutating` on the cluster (or kclient-fake), then:
//! server.run(CancellationToken::new()).await?;
//! # let _ = (validating, mutating); Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod admission;
pub mod certs;
pub mod configuration;
pub mod conversion;
pub mod metrics;
pub mod server;
pub mod tls;

pub use admission::{CustomDefaulter, CustomValidator, Denial};
pub use configuration::{ClientConfig, FailurePolicy, WebhookOptions};
pub use conversion::Conversion;
pub use metrics::WebhookMetrics;
pub use server::{WebhookServer, WebhookServerBuilder};
pub use tls::ServingCertificate;

/// Why the webhook server could not start or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// The address could not be bound.
    #[error("the webhook server cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: std::net::SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The serving certificate could not be made, read or loaded.
    #[error("the webhook server's certificate: {0}")]
    Certificate(String),
}
