//! Which members of a ring are live, judged as leader election judges a lease: by when this
//! replica last saw each member's Lease change, on its own clock.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use tokio::time::Instant;

/// The member Leases seen, and when each last changed.
#[derive(Debug)]
pub(super) struct Members {
    lease_duration: Duration,
    /// Lease name → (its resourceVersion, its holder, when that version was first seen).
    seen: BTreeMap<String, (String, String, Instant)>,
}

impl Members {
    pub(super) fn new(lease_duration: Duration) -> Self {
        Self {
            lease_duration,
            seen: BTreeMap::new(),
        }
    }

    /// Notes a listing of the member Leases: a new version of a Lease is a change, seen now;
    /// a Lease no longer listed is forgotten.
    pub(super) fn observe(&mut self, leases: &[Lease]) {
        let now = Instant::now();
        let mut seen = BTreeMap::new();
        for lease in leases {
            let Some(name) = lease.metadata.name.clone() else {
                continue;
            };
            let version = lease.metadata.resource_version.clone().unwrap_or_default();
            let holder = lease
                .spec
                .as_ref()
                .and_then(|s| s.holder_identity.clone())
                .unwrap_or_default();
            let since = match self.seen.remove(&name) {
                Some((v, _, since)) if v == version => since,
                _ => now,
            };
            seen.insert(name, (version, holder, since));
        }
        self.seen = seen;
    }

    /// The holders of the Leases that changed within a lease duration and are held.
    pub(super) fn live(&self) -> BTreeSet<String> {
        self.changed_within(self.lease_duration)
    }

    /// The holders of the held Leases seen changing within `window`.
    pub(super) fn changed_within(&self, window: Duration) -> BTreeSet<String> {
        let now = Instant::now();
        self.seen
            .values()
            .filter(|(_, holder, since)| !holder.is_empty() && now.duration_since(*since) < window)
            .map(|(_, holder, _)| holder.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::LeaseSpec;

    fn lease(name: &str, version: &str, holder: &str) -> Lease {
        let mut lease = Lease::default();
        lease.metadata.name = Some(name.into());
        lease.metadata.resource_version = Some(version.into());
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(holder.into()),
            ..LeaseSpec::default()
        });
        lease
    }

    #[tokio::test(start_paused = true)]
    async fn a_member_is_live_while_its_lease_changes() {
        let mut members = Members::new(Duration::from_secs(15));
        members.observe(&[lease("r-member-a", "1", "a"), lease("r-member-b", "1", "b")]);
        assert_eq!(members.live(), ["a".to_owned(), "b".to_owned()].into());
        tokio::time::advance(Duration::from_secs(10)).await;
        members.observe(&[lease("r-member-a", "2", "a"), lease("r-member-b", "1", "b")]);
        tokio::time::advance(Duration::from_secs(6)).await;
        // b's Lease has not changed for 16 s; a's changed 6 s ago.
        assert_eq!(members.live(), ["a".to_owned()].into());
        assert!(members.changed_within(Duration::from_secs(5)).is_empty());
        // Released (no holder), or gone.
        members.observe(&[lease("r-member-a", "3", "")]);
        assert!(members.live().is_empty());
    }
}
