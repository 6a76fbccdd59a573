//! [`RequestMetrics`]: hooks for client-side request metrics (client-go's `tools/metrics`:
//! request latency, result codes, retries, rate-limiter latency, exec plugin calls, CA file
//! reloads).
//!
//! Set an implementation on [`Config::metrics`](crate::Config::metrics). With none set (the
//! default) no label is even computed.
//!
//! Labels follow client-go: `verb` is the HTTP method, `url_template` is the request path with
//! the namespace and name replaced by `{namespace}` and `{name}` (bounded cardinality), `host`
//! is the server's `host:port`, and `code` is the HTTP status code or `<error>` when no response
//! came back.

use std::time::Duration;

/// Receives request metrics. Every method has an empty default, so an implementation picks
/// what it records.
pub trait RequestMetrics: Send + Sync {
    /// The whole request, from the first rate-limiter wait to the end of the response (for
    /// streams and watches, to the response headers).
    fn request_latency(&self, verb: &str, url_template: &str, latency: Duration) {
        let _ = (verb, url_template, latency);
    }

    /// One attempt's result.
    fn request_result(&self, code: &str, verb: &str, host: &str) {
        let _ = (code, verb, host);
    }

    /// One retry, with the code of the attempt that caused it.
    fn request_retry(&self, code: &str, verb: &str, host: &str) {
        let _ = (code, verb, host);
    }

    /// How long one request waited for the client-side rate limiter (zero when a token was
    /// available).
    fn rate_limiter_latency(&self, verb: &str, url_template: &str, latency: Duration) {
        let _ = (verb, url_template, latency);
    }

    /// One run of an exec credential plugin: `success`, `plugin_not_found_error`,
    /// `plugin_execution_error` or `client_internal_error`, as client-go's `ExecPluginCalls`.
    fn exec_plugin_call(&self, result: &str) {
        let _ = result;
    }

    /// One look at a rotating CA file (client-go's `TransportCAReloads`,
    /// `rest_client_transport_ca_reload_total`): `success` with `updated` or `unchanged`,
    /// `failure` with `read_error`, `empty` or `ca_parse_error`.
    fn transport_ca_reload(&self, result: &str, reason: &str) {
        let _ = (result, reason);
    }
}
