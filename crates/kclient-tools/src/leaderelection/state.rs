//! What an elector has observed ([`ElectionState`]), shared with its leader token and its
//! health check; and the health check's finding, [`LeaseNotRenewed`]. Below the elector, the
//! token and the check, so that each imports it and none imports another for it.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::resource_lock::{LeaderElectionRecord, VersionedRecord};

/// A leader that has not renewed its lease for longer than it should have been able to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed election to renew leadership on lease {name}: not renewed for {since:?}")]
pub struct LeaseNotRenewed {
    /// The election's name.
    pub name: String,
    /// How long ago this candidate last renewed (or saw renewed) the lease naming it.
    pub since: Duration,
}

/// What an elector has observed, shared with its health check.
#[derive(Debug)]
pub(crate) struct ElectionState {
    pub(super) identity: String,
    pub(super) name: String,
    pub(super) lease_duration: Duration,
    pub(super) observed: Mutex<Observed>,
}

/// client-go's bookkeeping: `observedRecord`, `observedRawRecord`, `observedTime`,
/// `reportedLeader`, and whether this candidate leads.
#[derive(Debug, Default)]
pub(super) struct Observed {
    /// The record as last read or written by this candidate.
    pub(super) record: LeaderElectionRecord,
    /// The record and its version as last read (compared with each new read to see a
    /// change; client-go's `observedRawRecord` holds the record only).
    pub(super) read: Option<VersionedRecord>,
    /// When `record` was last set, on this candidate's clock.
    pub(super) time: Option<Instant>,
    /// The holder last reported to `on_new_leader`.
    pub(super) reported_leader: String,
    /// While this candidate leads, the renew deadline: the instant it must stop acting as
    /// leader unless a renewal succeeds first.
    pub(super) leading_until: Option<Instant>,
    /// The last timestamp written, in microseconds (timestamps only go forward).
    pub(super) last_stamp: Option<i64>,
}

impl ElectionState {
    pub(super) fn observed_record(&self) -> LeaderElectionRecord {
        self.observed.lock().record.clone()
    }

    /// `record` is what this candidate now knows, as of now (client-go's `setObservedRecord`).
    pub(super) fn set_observed_record(&self, record: LeaderElectionRecord) {
        let mut observed = self.observed.lock();
        observed.record = record;
        observed.time = Some(Instant::now());
    }

    /// A record just read: if it or its version differs from the read before, it is a
    /// change, seen now.
    pub(super) fn observe_read(&self, read: &VersionedRecord) {
        let mut observed = self.observed.lock();
        if observed.read.as_ref() != Some(read) {
            observed.record = read.record.clone();
            observed.time = Some(Instant::now());
            observed.read = Some(read.clone());
        }
    }

    /// Whether this candidate leads at `now`: it leads, and `now` is before its renew
    /// deadline.
    pub(super) fn leads_at(&self, now: Instant) -> bool {
        self.observed
            .lock()
            .leading_until
            .is_some_and(|until| now < until)
    }

    /// Whether the record seen last names this candidate (client-go's `IsLeader`).
    pub(super) fn observed_holder_is_me(&self) -> bool {
        self.observed.lock().record.holder_identity == self.identity
    }

    /// The holder seen last, when it is someone else.
    pub(super) fn other_holder(&self) -> Option<String> {
        let observed = self.observed.lock();
        let holder = &observed.record.holder_identity;
        (!holder.is_empty() && *holder != self.identity).then(|| holder.clone())
    }

    /// Whether the lease seen last is still valid at `now`: less than its duration has
    /// passed since this candidate saw it change (client-go's `isLeaseValid`).
    pub(super) fn lease_valid(&self, now: Instant) -> bool {
        let observed = self.observed.lock();
        let duration = Duration::from_secs(observed.record.lease_duration_seconds.max(0) as u64);
        observed
            .time
            .is_some_and(|seen| seen.checked_add(duration).is_none_or(|end| end > now))
    }

    /// A timestamp for a record: now, to the microsecond a Lease keeps, and always after the
    /// previous one, so that every record this candidate writes differs from the last.
    pub(super) fn timestamp(&self) -> MicroTime {
        let now = Timestamp::now().as_microsecond();
        let mut observed = self.observed.lock();
        let micros = match observed.last_stamp {
            Some(last) if now <= last => last + 1,
            _ => now,
        };
        observed.last_stamp = Some(micros);
        MicroTime(Timestamp::from_microsecond(micros).unwrap_or(Timestamp::MAX))
    }

    pub(super) fn check(
        &self,
        max_tolerable_expired_lease: Duration,
    ) -> Result<(), LeaseNotRenewed> {
        let observed = self.observed.lock();
        if observed.record.holder_identity != self.identity {
            return Ok(());
        }
        let Some(seen) = observed.time else {
            return Ok(());
        };
        let since = seen.elapsed();
        if since
            > self
                .lease_duration
                .saturating_add(max_tolerable_expired_lease)
        {
            return Err(LeaseNotRenewed {
                name: self.name.clone(),
                since,
            });
        }
        Ok(())
    }
}
