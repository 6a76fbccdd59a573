//! kclient-tools: what real controllers need beyond informers, from client-go's `tools` and
//! `util` packages:
//!
//! * [`retry`]: [`retry_on_conflict`](retry::retry_on_conflict) and
//!   [`on_error`](retry::on_error) with client-go's [`DEFAULT_RETRY`](retry::DEFAULT_RETRY)
//!   and [`DEFAULT_BACKOFF`](retry::DEFAULT_BACKOFF), and the
//!   [`RetryBackoff`](retry::RetryBackoff)/[`exponential_backoff`](retry::exponential_backoff) they
//!   run on, with `wait.Backoff`'s exact stepping.
//! * [`wait`]: [`poll_until_cancelled`](wait::poll_until_cancelled) and
//!   [`poll_until_timeout`](wait::poll_until_timeout) (client-go's `PollUntilContextCancel`
//!   and `PollUntilContextTimeout`).
//! * [`flowcontrol`]: a per-key exponential [`Backoff`](flowcontrol::Backoff) with jitter and
//!   garbage collection (client-go's `util/flowcontrol.Backoff`).
//! * [`leaderelection`]: client-go's leader election on a Lease:
//!   [`LeaderElector`](leaderelection::LeaderElector) on a
//!   [`LeaseLock`](leaderelection::LeaseLock), with a
//!   [`LeaderToken`](leaderelection::LeaderToken) that fires before anyone else can take over
//!   and tells, by the clock, whether the leader may still act, and the
//!   [`HealthzAdaptor`](leaderelection::HealthzAdaptor).
//! * [`events`]: Kubernetes Events — client-go's `tools/record` (the
//!   [`EventBroadcaster`](events::EventBroadcaster), [`EventRecorder`](events::EventRecorder)
//!   and [`EventCorrelator`](events::EventCorrelator) for core/v1 Events) and `tools/events`
//!   ([`events::v1`], events.k8s.io/v1 Events with `EventSeries`).
//! * [`crd`]: installing CustomResourceDefinitions and waiting until they are served
//!   ([`install_crds`](crd::install_crds), controller-runtime's `envtest.InstallCRDs`).
//! * [`watch`]: waiting for conditions on objects — [`until_with_sync`](watch::until_with_sync)
//!   (informer-backed), [`until`](watch::until) over a
//!   [`RetryWatcher`](watch::RetryWatcher) that resumes without replaying or skipping, and
//!   ready-made [`conditions`](watch::conditions) (client-go's `tools/watch`).
//!
//! The examples use the paths a program depending on the `kclient` facade writes
//! (`kclient::tools::…`); one depending on kclient-tools alone writes `kclient_tools::…`.
//!
//! ```
//! # mod kclient { pub mod core { pub use ::kclient_core::*; } pub mod tools { pub use ::kclient_tools::*; } } // the facade's paths
//! use kclient::core::{ApiError, ApiStatus, GroupResource};
//! use kclient::tools::retry::{on_error, DEFAULT_BACKOFF};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! // Retry a call while the server is busy, at most DEFAULT_BACKOFF's four tries.
//! let result: Result<(), ApiError> = on_error(DEFAULT_BACKOFF, |e: &ApiError| e.is_server_timeout(), || async {
//!     Err(ApiError::not_found(&GroupResource::new("", "pods"), "web"))
//! })
//! .await;
//! assert!(result.unwrap_err().is_not_found(), "not retriable: returned at once");
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod crd;
pub mod events;
pub mod flowcontrol;
pub mod leaderelection;
pub mod retry;
pub mod sharding;
pub mod wait;
pub mod watch;
