//! Request options: what list, watch, get, create, update, patch and delete calls send besides
//! the object, in exactly the API server's wire format.
//!
//! Each type mirrors its `metav1` counterpart in client-go. The query-parameter types
//! ([`ListOptions`], [`GetOptions`], [`CreateOptions`], [`UpdateOptions`], [`PatchOptions`])
//! turn into `(name, value)` pairs with the parameter names and omission rules of
//! apimachinery's query-parameter conversion; [`DeleteOptions`] is a JSON body, as client-go
//! sends it. The pairs are not URL-encoded: that is the transport's job.
//!
//! Every type can check itself before a request is sent (`validate`, or
//! [`PatchOptions::validate_for`] together with the patch), mirroring the server's own
//! validation so that a request it would reject fails early with a typed [`OptionsError`].
//!
//! ```
//! use kclient_core::options::{DeleteOptions, ListOptions, OptionsError, ResourceVersionMatch};
//!
//! // A paged list from the watch cache.
//! let list = ListOptions::default().labels("app=web").resource_version("0").limit(500);
//! list.validate(false)?;
//! assert_eq!(list.query_pairs()[2], ("limit", "500".to_string()));
//!
//! // A watch with bookmarks, resuming after a known version.
//! let watch = ListOptions::default()
//!     .resource_version("4711")
//!     .allow_watch_bookmarks(true)
//!     .timeout_seconds(290);
//! watch.validate(true)?;
//! assert!(watch.watch_query_pairs().contains(&("watch", "true".to_string())));
//!
//! // The server would reject this one; so do we, before sending it.
//! let bad = ListOptions::default().resource_version_match(ResourceVersionMatch::Exact);
//! assert_eq!(
//!     bad.validate(false),
//!     Err(OptionsError::ResourceVersionMatchWithoutResourceVersion)
//! );
//!
//! // Delete options travel as a JSON body.
//! let body = DeleteOptions::background().dry_run().to_body().unwrap();
//! assert_eq!(
//!     body,
//!     br#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background","dryRun":["All"]}"#
//! );
//! # Ok::<(), OptionsError>(())
//! ```

mod delete;
mod error;
mod field_manager;
mod get;
mod list;
mod patch;
mod query;
mod write;

pub use delete::{DeleteOptions, DeletionPropagation, Preconditions};
pub use error::OptionsError;
pub use field_manager::{FieldValidation, FIELD_MANAGER_MAX_LEN};
pub use get::GetOptions;
pub use list::{ListOptions, ResourceVersionMatch, MAX_TIMEOUT_SECONDS};
pub use patch::PatchOptions;
pub use write::{CreateOptions, UpdateOptions, WriteOptions};

/// The longest duration the API server can hold: Go's `time.Duration` is an `int64` of
/// nanoseconds, so `2562047h47m16.854775807s` (about 292 years). A longer `?timeout=` does
/// not parse (`400 Bad Request`), and a longer `timeoutSeconds` overflows when the server
/// multiplies it by a second, so kclient sends at most this.
pub const MAX_GO_DURATION: std::time::Duration = std::time::Duration::from_nanos(i64::MAX as u64);

/// Query parameters as `(name, value)` pairs, before URL encoding.
type QueryPairs = Vec<(&'static str, String)>;
