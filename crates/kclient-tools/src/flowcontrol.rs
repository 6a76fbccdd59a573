//! Per-key exponential backoff (client-go's `util/flowcontrol.Backoff`): how long to hold off
//! retrying each of many independent things — an image pull per image, a sync per object —
//! with the entries of keys that have been quiet long enough forgotten.
//!
//! For each key the backoff starts at `initial` and doubles on every [`Backoff::next`] up to
//! `max`; a key left alone for more than twice `max` starts over, and [`Backoff::gc`] drops
//! such keys. An optional jitter adds up to `max_jitter_factor` × the previous delay to each
//! step. Time is tokio's clock ([`tokio::time::Instant`]), so tests run on a paused clock.
//!
//! ```
//! use std::time::Duration;
//! use kclient_tools::flowcontrol::Backoff;
//! use tokio::time::Instant;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let backoff: Backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
//! let now = Instant::now();
//! for _ in 0..3 {
//!     backoff.next("pull nginx", now);
//! }
//! assert_eq!(backoff.get("pull nginx"), Duration::from_secs(4), "1 s, 2 s, 4 s");
//! assert!(backoff.is_in_backoff_since_update("pull nginx", now));
//! assert_eq!(backoff.get("pull redis"), Duration::ZERO, "keys back off independently");
//! # }
//! ```

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use kclient_core::backoff::jitter;
use parking_lot::RwLock;
use tokio::time::Instant;

/// The rule deciding that a key has been quiet long enough to start over and to be
/// garbage-collected (client-go's `HasExpiredFunc`): given the event's time, the key's last
/// update and the maximum delay.
pub type HasExpiredFunc = Box<dyn Fn(Instant, Instant, Duration) -> bool + Send + Sync>;

/// Per-key exponential backoff; see the [module docs](self).
pub struct Backoff<K = String> {
    initial: Duration,
    max: Duration,
    max_jitter_factor: f64,
    has_expired: Option<HasExpiredFunc>,
    entries: RwLock<HashMap<K, Entry>>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    backoff: Duration,
    last_update: Instant,
}

impl<K: Hash + Eq> Backoff<K> {
    /// A backoff from `initial` doubling up to `max` per key, without jitter (client-go's
    /// `NewBackOff`).
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self::with_jitter(initial, max, 0.0)
    }

    /// A backoff that also adds up to `max_jitter_factor` × the previous delay at each step
    /// (client-go's `NewBackOffWithJitter`); zero (or a negative or NaN factor) adds none.
    pub fn with_jitter(initial: Duration, max: Duration, max_jitter_factor: f64) -> Self {
        Self {
            initial,
            max,
            max_jitter_factor: if max_jitter_factor > 0.0 {
                max_jitter_factor
            } else {
                0.0
            },
            has_expired: None,
            entries: RwLock::new(HashMap::new()),
        }
    }

    /// Replaces the rule that decides when a key starts over and is garbage-collected (by
    /// default: when more than twice the maximum delay passed since its last update).
    pub fn has_expired_func(
        mut self,
        f: impl Fn(Instant, Instant, Duration) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.has_expired = Some(Box::new(f));
        self
    }

    /// The current delay for `id`; zero when it is not backing off (client-go's `Get`).
    pub fn get<Q>(&self, id: &Q) -> Duration
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries
            .read()
            .get(id)
            .map_or(Duration::ZERO, |e| e.backoff)
    }

    /// Moves `id` one step on (client-go's `Next`): the initial delay if it had none or its
    /// entry expired at `event_time`, else twice the delay (plus jitter), at most the maximum.
    /// The entry's last update is now.
    pub fn next(&self, id: impl Into<K>, event_time: Instant) {
        let id = id.into();
        let mut entries = self.entries.write();
        let now = Instant::now();
        let backoff = match entries.get(&id) {
            // Twice the delay plus up to the jitter factor times it (client-go's
            // `backoff*2 + jitter(backoff)`).
            Some(entry) if !self.expired(event_time, entry.last_update) => entry
                .backoff
                .saturating_add(jitter(entry.backoff, self.max_jitter_factor))
                .min(self.max),
            // Like client-go, the first delay is not capped by the maximum.
            _ => jitter(self.initial, self.max_jitter_factor),
        };
        entries.insert(
            id,
            Entry {
                backoff,
                last_update: now,
            },
        );
    }

    /// Forgets `id`: its next delay is the initial one (client-go's `Reset`).
    pub fn reset<Q>(&self, id: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.write().remove(id);
    }

    /// Forgets `id` (client-go's `DeleteEntry`, the same as [`reset`](Self::reset)).
    pub fn delete_entry<Q>(&self, id: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.reset(id)
    }

    /// Whether less than `id`'s delay has passed since `event_time` (client-go's
    /// `IsInBackOffSince`): a key whose entry expired at `event_time` is not backing off.
    pub fn is_in_backoff_since<Q>(&self, id: &Q, event_time: Instant) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        match self.entries.read().get(id) {
            Some(entry) if !self.expired(event_time, entry.last_update) => {
                Instant::now().saturating_duration_since(event_time) < entry.backoff
            }
            _ => false,
        }
    }

    /// Whether `event_time` falls within `id`'s delay after its last update (client-go's
    /// `IsInBackOffSinceUpdate`).
    pub fn is_in_backoff_since_update<Q>(&self, id: &Q, event_time: Instant) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        match self.entries.read().get(id) {
            Some(entry) if !self.expired(event_time, entry.last_update) => {
                event_time.saturating_duration_since(entry.last_update) < entry.backoff
            }
            _ => false,
        }
    }

    /// Drops the entries that have expired by now (client-go's `GC`); run it periodically
    /// so that keys seen once do not stay forever.
    pub fn gc(&self) {
        let now = Instant::now();
        self.entries
            .write()
            .retain(|_, entry| !self.expired(now, entry.last_update));
    }

    /// How many keys have an entry.
    pub fn len(&self) -> usize {
        self.entries.read().len()
    }

    /// Whether no key has an entry.
    pub fn is_empty(&self) -> bool {
        self.entries.read().is_empty()
    }

    fn expired(&self, event_time: Instant, last_update: Instant) -> bool {
        match &self.has_expired {
            Some(f) => f(event_time, last_update, self.max),
            // Stable once it has been fine for twice the maximum delay.
            None => event_time.saturating_duration_since(last_update) > self.max.saturating_mul(2),
        }
    }
}

impl<K> fmt::Debug for Backoff<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backoff")
            .field("initial", &self.initial)
            .field("max", &self.max)
            .field("max_jitter_factor", &self.max_jitter_factor)
            .field("entries", &self.entries.read().len())
            .finish_non_exhaustive()
    }
}
