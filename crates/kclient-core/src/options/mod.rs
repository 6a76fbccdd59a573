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

/// Formats a duration as Go's `time.Duration.String` does (`30s`, `1m30s`, `1.5s`, `250ms`),
/// the form the API server parses in `?timeout=`.
///
/// A duration longer than Go's can be ([`MAX_GO_DURATION`], about 292 years) is formatted as
/// that one, `2562047h47m16.854775807s`: the server's `time.ParseDuration` refuses anything
/// longer, answering `400 Bad Request` to the whole request, whereas the longest it parses
/// means what was asked (the server then applies its own limit, `--request-timeout`, to any
/// timeout longer than that). So `Config { timeout: Some(Duration::MAX), .. }` sends this.
pub fn go_duration(d: std::time::Duration) -> String {
    let nanos = d.min(MAX_GO_DURATION).as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    fn with_fraction(value: u128, unit: u128, digits: usize) -> String {
        let whole = value / unit;
        let frac = value % unit;
        if frac == 0 {
            whole.to_string()
        } else {
            let frac = format!("{frac:0digits$}");
            format!("{whole}.{}", frac.trim_end_matches('0'))
        }
    }
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", with_fraction(nanos, 1_000, 3));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", with_fraction(nanos, 1_000_000, 6));
    }
    let secs = nanos / 1_000_000_000;
    let sub = nanos % 1_000_000_000;
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&with_fraction(s * 1_000_000_000 + sub, 1_000_000_000, 9));
    out.push('s');
    out
}

#[cfg(test)]
mod go_duration_tests {
    use super::go_duration;

    #[test]
    fn go_duration_strings() {
        let cases = [
            (std::time::Duration::ZERO, "0s"),
            (std::time::Duration::from_nanos(100), "100ns"),
            (std::time::Duration::from_micros(1500), "1.5ms"),
            (std::time::Duration::from_micros(500), "500µs"),
            (std::time::Duration::from_millis(250), "250ms"),
            (std::time::Duration::from_secs(30), "30s"),
            (std::time::Duration::from_millis(1500), "1.5s"),
            (std::time::Duration::from_secs(60), "1m0s"),
            (std::time::Duration::from_secs(90), "1m30s"),
            (std::time::Duration::from_secs(3600), "1h0m0s"),
            (std::time::Duration::from_secs(3723), "1h2m3s"),
        ];
        for (d, s) in cases {
            assert_eq!(go_duration(d), s, "{d:?}");
        }
    }
}
