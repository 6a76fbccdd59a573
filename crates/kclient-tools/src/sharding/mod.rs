//! Replicas that divide a collection between them: a ring of members, each holding some of
//! the ring's slots (equal ranges of the hash space that KEP-5866's shard selectors cut), so
//! that adding replicas divides the work and the cache instead of idling behind one leader.
//!
//! Each replica runs a [`ShardRing`]. It holds a member Lease of its own
//! (`<ring>-member-<identity>`, renewed as a leader election's is), reads the others' to know
//! the live members, and computes which slots are its own: every slot goes to the live member
//! with the highest rendezvous weight for it ([`assign`]), so all members compute the same
//! assignment from the same membership, and a member joining or leaving moves only the slots
//! it takes or gives, about `slots / members` of them. Each slot is itself a Lease
//! (`<ring>-slot-<n>`) taken through leader election: a replica *holds* a slot while it leads
//! that slot's election. What a replica holds is published as a [`Held`]: the slots, the
//! [`ShardSelector`](kclient_core::sharding::ShardSelector) of their objects (for the
//! informers, see `SharedInformerFactory::shard_selector`), and a token that fires when the
//! holding ends.
//!
//! ```
//! use kclient_tools::sharding::{ShardRing, ShardRingConfig};
//! use kclient_typed::Clientset;
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let server = kclient_fake::FakeApiServer::builder().start().await?;
//! # let clientset = Clientset::new(server.config()?)?;
//! let ring = std::sync::Arc::new(ShardRing::new(
//!     &clientset,
//!     ShardRingConfig::new("default", "memcached-operator", "replica-a"),
//! )?);
//! let mut held = ring.held();
//! let cancel = CancellationToken::new();
//! let running = tokio::spawn({
//!     let (ring, cancel) = (ring.clone(), cancel.clone());
//!     async move { ring.run(cancel).await }
//! });
//! // Alone in the ring, this replica ends up holding every slot. Each holding's work must
//! // be acknowledged once stopped (here, none was started) for the next to come.
//! let holding = loop {
//!     let holding = held.borrow_and_update().clone();
//!     if holding.slots.len() == 16 {
//!         break holding;
//!     }
//!     ring.acknowledge(holding.generation);
//!     held.changed().await?;
//! };
//! // ... list, watch and reconcile the objects of `holding.selector()` until
//! // `holding.token()` fires, then stop, and say so:
//! ring.acknowledge(holding.generation);
//! cancel.cancel();
//! running.await?;
//! # Ok(()) }
//! ```
//!
//! # Handover, and what is guaranteed
//!
//! *At any instant at most one replica believes it holds a slot*, where "believes" means it
//! has a [`Held`] with the slot whose [`is_current`](Held::is_current) is true. This is
//! leader election's guarantee, slot by slot (see [`leaderelection`](crate::leaderelection)):
//! a slot's Lease has one holder at a time, a holder stops believing it holds the slot
//! `renew_deadline` after its last successful renewal, and another replica takes the Lease
//! over no sooner than `lease_duration` after it last saw that renewal, or at once after the
//! holder released it.
//!
//! A slot changes hands in these steps:
//!
//! 1. The membership changes and the holder's assignment no longer has the slot. It ends its
//!    holding (the token fires) and waits until the work on the holding has stopped — the
//!    consumer says so with [`ShardRing::acknowledge`] — before it publishes a holding
//!    without the slot and then releases the slot's Lease.
//! 2. The new owner, whose assignment has the slot, has been trying to acquire its Lease at
//!    every retry; it succeeds at its first attempt after the release, ends its own holding
//!    (again waiting for its work to stop) and publishes one with the slot.
//!
//! So the old holder's work on the slot has ended, and been said to have ended, before the
//! Lease is free; nothing that was in flight runs on two replicas at once. A replica that
//! dies, or is partitioned from the API server, or paused, does not release: its slots'
//! Leases expire, and another replica takes them a lease duration after it last saw them
//! renewed (the "margin" is leader election's `lease_duration − renew_deadline`). A replica
//! that is paused or partitioned may still *run* code after its renew deadline passed —
//! leader election cannot fence writes, and neither can this — but it no longer *believes* it
//! holds the slot: [`Held::is_current`] reads the clock itself, so checked right before a
//! write it narrows the window to the write's own flight time, as
//! [`LeaderToken::is_leader`](crate::leaderelection::LeaderToken::is_leader) does.
//!
//! A member whose Lease has not been seen changing for one and a half retry periods is
//! *suspected*: the others try at once for the slots they would get without it, so that
//! their elections watch those slot Leases from then on and take them over a lease duration
//! after the suspicion, rather than a lease duration after the member is declared gone. A
//! suspect that is alive keeps its slots (it renews them); the tries cost one read each per
//! retry.
//!
//! Membership only decides who *tries* to acquire which slot. Two replicas that disagree
//! for a moment about who is live may both try for one slot; the Lease decides, and the one
//! whose assignment later says otherwise gives the slot back.
//!
//! # Costs and limits
//!
//! Each held slot is a Lease renewed every `retry_period` (2 s): 16 slots cost a ring 8
//! writes a second, whatever the number of replicas. A change of holding restarts the
//! consumer's work on every slot it keeps too (a relist of its shard). Objects are placed by
//! the hash of their uid (or namespace): objects created with `generateName` are placed once
//! the server has given them a uid, so a reconciler that creates them must find them by a
//! label rather than expect them in its own cache before the watch delivers them.

mod assignment;
mod members;
mod ring;

pub use assignment::{assign, owner, selector_of};
pub use ring::{
    Held, ShardRing, ShardRingConfig, ShardRingError, DEFAULT_SLOTS, RING_LABEL, ROLE_LABEL,
};
