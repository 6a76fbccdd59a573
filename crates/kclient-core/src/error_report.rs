//! Errors as sentences: an error and its causes, one per line ([`ErrorReport`], what a
//! program's `main` returns), and client-go's `utilruntime.HandleError` ([`handle_error`]).

use std::error::Error;
use std::fmt;

use crate::BoxError;

/// An error and its causes, written one per line, outermost first: what a program's `main`
/// returns so that a failure reads as sentences, not as a `Debug` dump.
///
/// `Display` and `Debug` both write the error's message, then each cause of its `source()`
/// chain on a line of its own (`  caused by: ...`); a cause whose message the error above
/// it already ends with (`"reading /etc/app.yaml: permission denied"`, then `"permission
/// denied"`) is not written twice. Any error converts into it with `?`.
///
/// ```
/// use kclient_core::ErrorReport;
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("cannot load the configuration")]
/// struct Load(#[source] std::io::Error);
///
/// fn run() -> Result<(), ErrorReport> {
///     let missing = std::io::Error::new(std::io::ErrorKind::NotFound, "no file /nope");
///     Err(Load(missing))?
/// }
///
/// // `fn main() -> Result<(), ErrorReport>` prints "Error: " and then this:
/// let report = run().unwrap_err();
/// assert_eq!(
///     format!("{report:?}"),
///     "cannot load the configuration\n  caused by: no file /nope"
/// );
/// ```
pub struct ErrorReport(BoxError);

impl ErrorReport {
    /// A report of `error`.
    pub fn new(error: impl Into<BoxError>) -> Self {
        Self(error.into())
    }

    /// The error reported.
    pub fn error(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.0
    }

    /// The error reported, unwrapped.
    pub fn into_inner(self) -> BoxError {
        self.0
    }
}

impl<E: Into<BoxError>> From<E> for ErrorReport {
    fn from(error: E) -> Self {
        Self::new(error)
    }
}

impl fmt::Display for ErrorReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Chain(self.error()), f)
    }
}

/// The same as `Display`: a `main` returning `Err(report)` prints `Error: ` and the report.
impl fmt::Debug for ErrorReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Chain(self.error()), f)
    }
}

/// An error and its causes, one per line (the text of [`ErrorReport`]).
struct Chain<'a>(&'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut above = self.0.to_string();
        f.write_str(&above)?;
        let mut cause = self.0.source();
        while let Some(error) = cause {
            let text = error.to_string();
            if !above.ends_with(&text) {
                write!(f, "\n  caused by: {text}")?;
            }
            above = text;
            cause = error.source();
        }
        Ok(())
    }
}

/// Reports an error that code cannot return and must not hide (client-go's
/// `utilruntime.HandleError`): a worker's failed sync before it requeues, a callback's
/// failure, a cleanup that went wrong. Logs it as a `tracing` event at error level,
/// `Unhandled Error`, with the error and its causes in the `error` field (one per line, as
/// [`ErrorReport`] writes them), so that a subscriber can route, count or ship it.
///
/// client-go also sleeps so that errors are handled at most once a millisecond; this does
/// not, as blocking would stall the async worker that reports: rate-limit retries with the
/// workqueue's rate limiter instead.
pub fn handle_error(error: &(dyn Error + 'static)) {
    tracing::error!(error = %Chain(error), "Unhandled Error");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    enum Failure {
        #[error("syncing default/web")]
        Sync(#[source] Box<Failure>),
        #[error("connecting to 127.0.0.1:1: {0}")]
        Connect(#[source] std::io::Error),
    }

    fn refused() -> Failure {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        Failure::Sync(Box::new(Failure::Connect(io)))
    }

    #[test]
    fn one_cause_per_line_without_repeating_what_a_message_ends_with() {
        let report = ErrorReport::from(refused());
        assert_eq!(
            report.to_string(),
            "syncing default/web\n  caused by: connecting to 127.0.0.1:1: connection refused"
        );
        assert_eq!(format!("{report:?}"), report.to_string());
        assert!(report.error().source().is_some());
        let plain = ErrorReport::from("no such namespace");
        assert_eq!(format!("{plain:?}"), "no such namespace");
        assert_eq!(plain.into_inner().to_string(), "no such namespace");
    }

    #[test]
    fn handle_error_logs_the_chain_at_error_level() {
        let trace = kclient_testkit::trace::capture();
        handle_error(&refused());
        let events = trace.events();
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].level, tracing::Level::ERROR);
        assert_eq!(events[0].field("message"), Some("Unhandled Error"));
        assert_eq!(
            events[0].field("error"),
            Some("syncing default/web\n  caused by: connecting to 127.0.0.1:1: connection refused")
        );
    }
}
