//! What an election is held on (client-go's `tools/leaderelection/resourcelock`): the
//! [`Lock`] trait, the [`LeaderElectionRecord`] it stores, and [`LeaseLock`], the lock on a
//! `coordination.k8s.io/v1` Lease.
//!
//! A lock is a compare-and-swap register for one record: [`get`](Lock::get) reads it and
//! remembers the version it read, [`update`](Lock::update) writes a new record *only if*
//! nobody wrote since (on a Lease: the update carries the resourceVersion read, and the API
//! server answers `409 Conflict` otherwise), and [`create`](Lock::create) makes it when it
//! does not exist yet. That is all the elector needs; everything else (who leads, since
//! when, for how long) is in the record.
//!
//! Only Leases are supported, as in client-go (its `endpoints` and `configmaps` locks were
//! removed). Another store can take part by implementing [`Lock`]; the tests of this module
//! run the elector on an in-memory one.

mod lease_lock;

use std::future::Future;

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kclient_core::ApiStatus;

pub use lease_lock::{LeaseLock, LeaseLockError};

/// The state of an election as stored in the lock (client-go's
/// `resourcelock.LeaderElectionRecord`; on a Lease, its `spec`).
///
/// The timestamps are informational: no elector compares them with its own clock. A
/// candidate judges whether a lease has expired by when *it* last saw the record change,
/// which tolerates any clock skew between the machines (see the
/// [module documentation](super)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// Who holds the lease; empty when nobody does (it was released), and then any candidate
    /// may take it at once.
    pub holder_identity: String,
    /// How long the holder promises to stay leader without renewing, in whole seconds; others
    /// wait this long after they last saw the record change before they take over.
    pub lease_duration_seconds: i32,
    /// When the current holder acquired the lease.
    pub acquire_time: Option<MicroTime>,
    /// When the current holder last renewed the lease.
    pub renew_time: Option<MicroTime>,
    /// How many times the lease changed hands (a Lease's `leaseTransitions`).
    pub leader_transitions: i32,
    /// The strategy of coordinated leader election (`OldestEmulationVersion`), empty when the
    /// lease is not coordinated. Kept, not interpreted.
    pub strategy: String,
    /// The holder that coordinated leader election would prefer (asking the current one to
    /// step down), empty when none. Kept, not interpreted.
    pub preferred_holder: String,
}

/// A Lease's spec as a record (client-go's `LeaseSpecToLeaderElectionRecord`): absent fields
/// read as empty or zero.
impl From<&LeaseSpec> for LeaderElectionRecord {
    fn from(spec: &LeaseSpec) -> Self {
        Self {
            holder_identity: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
            acquire_time: spec.acquire_time.clone(),
            renew_time: spec.renew_time.clone(),
            leader_transitions: spec.lease_transitions.unwrap_or_default(),
            strategy: spec.strategy.clone().unwrap_or_default(),
            preferred_holder: spec.preferred_holder.clone().unwrap_or_default(),
        }
    }
}

/// A record as a Lease's spec (client-go's `LeaderElectionRecordToLeaseSpec`): the holder
/// (even when empty), the duration and the transitions are always written; the strategy and
/// the preferred holder only when set.
impl From<&LeaderElectionRecord> for LeaseSpec {
    fn from(record: &LeaderElectionRecord) -> Self {
        let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        Self {
            holder_identity: Some(record.holder_identity.clone()),
            lease_duration_seconds: Some(record.lease_duration_seconds),
            acquire_time: record.acquire_time.clone(),
            renew_time: record.renew_time.clone(),
            lease_transitions: Some(record.leader_transitions),
            strategy: non_empty(&record.strategy),
            preferred_holder: non_empty(&record.preferred_holder),
        }
    }
}

/// A record as read, with the version of it the store holds (a Lease's `resourceVersion`).
///
/// The elector counts a read as a *change* when the record or the version differs from the
/// previous read, and measures expiry from when it saw the last change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionedRecord {
    /// The record.
    pub record: LeaderElectionRecord,
    /// The store's version of it: every write makes a new one.
    pub version: String,
}

/// A lock to hold an election on (client-go's `resourcelock.Interface`).
///
/// A lock belongs to one candidate and remembers the version of the record it last read or
/// wrote, so that [`update`](Lock::update) can refuse to overwrite a record someone else
/// wrote meanwhile. It must learn a version only together with handing the result to the
/// elector (as an HTTP client does: with the response), never from a call whose caller gave
/// up. One elector uses a lock at a time; its calls never overlap.
pub trait Lock: Send + Sync + 'static {
    /// What the calls fail with. [`ApiStatus`] tells the elector a missing record
    /// ([`is_not_found`](ApiStatus::is_not_found)) from a lost race
    /// ([`is_conflict`](ApiStatus::is_conflict)).
    type Error: std::error::Error + ApiStatus + Send + Sync + 'static;

    /// Reads the record and its version, remembering the version; a `NotFound` error when
    /// there is none.
    fn get(&self) -> impl Future<Output = Result<VersionedRecord, Self::Error>> + Send;

    /// Creates the record; fails (`AlreadyExists`) if it exists.
    fn create(
        &self,
        record: LeaderElectionRecord,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Replaces the record if it is still the version last read or written by this lock; a
    /// `Conflict` error when someone else wrote since.
    fn update(
        &self,
        record: LeaderElectionRecord,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// The candidate this lock belongs to: what it writes as the holder.
    fn identity(&self) -> &str;

    /// The lock for logs and errors (a Lease's `namespace/name`).
    fn describe(&self) -> String;
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(seconds: i64, micros: i32) -> Option<MicroTime> {
        Some(MicroTime(Timestamp::new(seconds, micros * 1000).unwrap()))
    }

    /// client-go's LeaderElectionRecordToLeaseSpec and back: every field survives, the
    /// coordinated fields are left out when empty, and an empty holder is still written.
    #[test]
    fn a_record_round_trips_through_a_lease_spec() {
        let record = LeaderElectionRecord {
            holder_identity: "a".into(),
            lease_duration_seconds: 15,
            acquire_time: at(1_700_000_000, 123_456),
            renew_time: at(1_700_000_010, 1),
            leader_transitions: 3,
            strategy: "OldestEmulationVersion".into(),
            preferred_holder: "b".into(),
        };
        let spec = LeaseSpec::from(&record);
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(spec.lease_duration_seconds, Some(15));
        assert_eq!(spec.lease_transitions, Some(3));
        assert_eq!(spec.strategy.as_deref(), Some("OldestEmulationVersion"));
        assert_eq!(LeaderElectionRecord::from(&spec), record);

        let released = LeaderElectionRecord {
            lease_duration_seconds: 1,
            leader_transitions: 3,
            ..LeaderElectionRecord::default()
        };
        let spec = LeaseSpec::from(&released);
        assert_eq!(spec.holder_identity.as_deref(), Some(""));
        assert_eq!((spec.strategy, spec.preferred_holder), (None, None));
        assert_eq!((spec.acquire_time, spec.renew_time), (None, None));
    }

    /// An empty spec (a Lease made by hand) reads as the empty record.
    #[test]
    fn an_empty_spec_is_the_empty_record() {
        assert_eq!(
            LeaderElectionRecord::from(&LeaseSpec::default()),
            LeaderElectionRecord::default()
        );
    }

    /// The wire form is the Lease's: camelCase, MicroTime with six decimals.
    #[test]
    fn the_spec_serializes_as_the_api_server_expects() {
        let record = LeaderElectionRecord {
            holder_identity: "a".into(),
            lease_duration_seconds: 15,
            acquire_time: at(1_700_000_000, 5),
            renew_time: at(1_700_000_000, 5),
            leader_transitions: 0,
            ..LeaderElectionRecord::default()
        };
        let json = serde_json::to_value(LeaseSpec::from(&record)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "holderIdentity": "a",
                "leaseDurationSeconds": 15,
                "acquireTime": "2023-11-14T22:13:20.000005Z",
                "renewTime": "2023-11-14T22:13:20.000005Z",
                "leaseTransitions": 0
            })
        );
    }
}
