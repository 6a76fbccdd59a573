//! [`LeaseLock`]: the election record in a `coordination.k8s.io/v1` Lease (client-go's
//! `resourcelock.LeaseLock`).

use std::collections::BTreeMap;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kclient_core::{ApiStatus, CreateOptions, Status, UpdateOptions};
use kclient_typed::{Clientset, ResourceClient};
use parking_lot::Mutex;

use super::{LeaderElectionRecord, Lock, VersionedRecord};

/// What a [`LeaseLock`] call fails with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeaseLockError {
    /// The request failed: the server's refusal (`404`, `409` ...) or a transport error.
    #[error(transparent)]
    Client(#[from] kclient_typed::Error),
    /// [`update`](Lock::update) before any [`get`](Lock::get) or [`create`](Lock::create):
    /// there is no version to update from.
    #[error("lease {lease} not initialized: get or create it before updating")]
    NotInitialized {
        /// The lease (`namespace/name`).
        lease: String,
    },
}

impl ApiStatus for LeaseLockError {
    fn api_status(&self) -> Option<&Status> {
        match self {
            Self::Client(e) => e.api_status(),
            Self::NotInitialized { .. } => None,
        }
    }

    fn is_connection_refused(&self) -> bool {
        match self {
            Self::Client(e) => e.is_connection_refused(),
            Self::NotInitialized { .. } => false,
        }
    }
}

/// A [`Lock`] on a Lease (client-go's `resourcelock.LeaseLock`).
///
/// It keeps the Lease as last read or written, and [`update`](Lock::update) sends that
/// object back with the new spec: its `resourceVersion` makes the update a compare-and-swap,
/// which the API server refuses with `409 Conflict` when someone else wrote in between.
/// Labels given with [`with_labels`](Self::with_labels) are set on the Lease by whoever
/// creates or updates it (client-go's `NewWithLabels`); other labels are kept.
///
/// ```no_run
/// use kclient_tools::leaderelection::LeaseLock;
/// use kclient_typed::Clientset;
///
/// # fn demo(clientset: &Clientset) {
/// let lock = LeaseLock::new(clientset.coordination_v1().leases("kube-system"), "my-controller", "pod-1");
/// # }
/// ```
///
/// Give the client a request timeout below the renew deadline (client-go uses
/// `max(1 s, renew_deadline / 2)`), so that one hung request cannot use up a whole renew
/// deadline; the elector bounds each attempt anyway.
#[derive(Debug)]
pub struct LeaseLock {
    client: ResourceClient<Lease>,
    name: String,
    identity: String,
    labels: BTreeMap<String, String>,
    /// The Lease as last read or written (client-go's `ll.lease`).
    lease: Mutex<Option<Lease>>,
}

impl LeaseLock {
    /// A lock on Lease `name`, in the namespace `client` is bound to
    /// (`clientset.coordination_v1().leases(namespace)`), for the candidate `identity`.
    pub fn new(
        client: ResourceClient<Lease>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        Self {
            client,
            name: name.into(),
            identity: identity.into(),
            labels: BTreeMap::new(),
            lease: Mutex::new(None),
        }
    }

    /// A lock on Lease `namespace/name` through `clientset`, for the candidate `identity`.
    pub fn from_clientset(
        clientset: &Clientset,
        namespace: &str,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        Self::new(
            clientset.coordination_v1().leases(namespace),
            name,
            identity,
        )
    }

    /// The same lock, setting these labels on the Lease whenever it writes it.
    pub fn with_labels(mut self, labels: BTreeMap<String, String>) -> Self {
        self.labels = labels;
        self
    }

    /// The Lease's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Lease's namespace (empty if the client is not bound to one).
    pub fn namespace(&self) -> &str {
        self.client.namespace().unwrap_or_default()
    }

    fn set_labels(&self, meta: &mut ObjectMeta) {
        if !self.labels.is_empty() {
            let labels = meta.labels.get_or_insert_with(BTreeMap::new);
            labels.extend(self.labels.clone());
        }
    }
}

impl Lock for LeaseLock {
    type Error = LeaseLockError;

    async fn get(&self) -> Result<VersionedRecord, LeaseLockError> {
        let lease = self.client.get(&self.name).await?;
        let read = VersionedRecord {
            record: lease
                .spec
                .as_ref()
                .map(LeaderElectionRecord::from)
                .unwrap_or_default(),
            version: lease.metadata.resource_version.clone().unwrap_or_default(),
        };
        *self.lease.lock() = Some(lease);
        Ok(read)
    }

    async fn create(&self, record: LeaderElectionRecord) -> Result<(), LeaseLockError> {
        let mut lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: self.client.namespace().map(str::to_owned),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec::from(&record)),
        };
        self.set_labels(&mut lease.metadata);
        let created = self
            .client
            .create(&lease, &CreateOptions::default())
            .await?;
        *self.lease.lock() = Some(created);
        Ok(())
    }

    async fn update(&self, record: LeaderElectionRecord) -> Result<(), LeaseLockError> {
        let Some(mut lease) = self.lease.lock().clone() else {
            return Err(LeaseLockError::NotInitialized {
                lease: self.describe(),
            });
        };
        lease.spec = Some(LeaseSpec::from(&record));
        self.set_labels(&mut lease.metadata);
        let updated = self
            .client
            .update(&lease, &UpdateOptions::default())
            .await?;
        *self.lease.lock() = Some(updated);
        Ok(())
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace(), self.name)
    }
}
