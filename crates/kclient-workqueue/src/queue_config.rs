//! What the queues' configurations ([`WorkQueueConfig`](crate::WorkQueueConfig),
//! [`DelayingQueueConfig`](crate::DelayingQueueConfig),
//! [`RateLimitingQueueConfig`](crate::RateLimitingQueueConfig),
//! [`PriorityQueueConfig`](crate::PriorityQueueConfig)) have in common, written once: each
//! has a `name` and a `metrics_provider` and one optional part of its own (the storage, the
//! queue below, the rate limiter), and the same `Default`, `Debug` and setters of the two
//! shared fields.

/// Implements `Default` (unnamed, no provider, the own part unset), `Debug` (the name, and
/// whether the provider and the own part are set) and the `name` and `metrics_provider`
/// setters for a configuration struct `$config<T>` with the fields `name: String`,
/// `metrics_provider: Option<Arc<dyn MetricsProvider>>` and `$part: Option<_>`; with `Clone`,
/// also a `Clone` that needs no `T: Clone` (a derive would).
macro_rules! queue_config {
    ($config:ident { $part:ident } $(, $clone:ident)?) => {
        impl<T> Default for $config<T> {
            fn default() -> Self {
                Self {
                    name: String::new(),
                    metrics_provider: None,
                    $part: None,
                }
            }
        }

        impl<T> std::fmt::Debug for $config<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($config))
                    .field("name", &self.name)
                    .field("metrics_provider", &self.metrics_provider.is_some())
                    .field(stringify!($part), &self.$part.is_some())
                    .finish()
            }
        }

        impl<T> $config<T> {
            /// Sets the queue's name.
            #[must_use]
            pub fn name(mut self, name: impl Into<String>) -> Self {
                self.name = name.into();
                self
            }

            /// Sets the queue's metrics provider.
            #[must_use]
            pub fn metrics_provider(
                mut self,
                provider: std::sync::Arc<dyn $crate::metrics::MetricsProvider>,
            ) -> Self {
                self.metrics_provider = Some(provider);
                self
            }
        }

        $(queue_config!(@$clone $config { $part });)?
    };
    (@Clone $config:ident { $part:ident }) => {
        impl<T> Clone for $config<T> {
            fn clone(&self) -> Self {
                Self {
                    name: self.name.clone(),
                    metrics_provider: self.metrics_provider.clone(),
                    $part: self.$part.clone(),
                }
            }
        }
    };
}
