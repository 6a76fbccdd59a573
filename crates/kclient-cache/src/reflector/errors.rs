//! Why a run of the reflector ended ([`ReflectorError`]), and who hears of it: the
//! [`WatchErrorHandler`] (client-go's `WatchErrorHandler`), by default
//! [`default_watch_error_handler`].

use std::any::Any;
use std::sync::Arc;

use kclient_core::{ApiError, ApiStatus, PagerError, Status};

use crate::store::StoreError;

/// Why a run of the reflector (a list and its watches) ended.
#[derive(Debug, thiserror::Error)]
pub enum ReflectorError<E> {
    /// The list failed (after the retry with resourceVersion `""` where that applies).
    #[error("failed to list {what}: {source}")]
    List {
        /// What was listed.
        what: String,
        /// The lister's error.
        source: E,
    },
    /// A watch could not be started.
    #[error("failed to watch {what}: {source}")]
    Watch {
        /// What was watched.
        what: String,
        /// The watcher's error.
        source: E,
    },
    /// The server ended a watch with an `ERROR` event.
    #[error("watch of {what} ended with an error: {status}")]
    WatchEvent {
        /// What was watched.
        what: String,
        /// The error the event carried.
        status: Box<ApiError>,
    },
    /// The list was abandoned by the pager although the server answered every page (a
    /// continue token seen twice): kclient-core's [`PagerError`].
    #[error("failed to list {what}: {source}")]
    Pager {
        /// What was listed.
        what: String,
        /// Why the pager gave up.
        source: PagerError,
    },
    /// The watch stream itself failed (a broken connection, an undecodable frame).
    #[error("watch stream of {what} failed: {source}")]
    WatchStream {
        /// What was watched.
        what: String,
        /// The stream's error.
        source: E,
    },
    /// A watch closed within a second without any event (client-go's `VeryShortWatchError`).
    #[error("very short watch: {name}: Unexpected watch close - watch lasted less than a second and no items received")]
    VeryShortWatch {
        /// The reflector's name.
        name: String,
    },
    /// The store refused a list's content.
    #[error("unable to sync list result: {0}")]
    Store(StoreError),
    /// The store's resync failed. It ends the watch phase;
    /// [`Reflector::list_and_watch`](crate::Reflector::list_and_watch) logs it and returns
    /// `Ok`, as client-go's reflector does not pass it up.
    #[error("resync failed: {0}")]
    Resync(StoreError),
}

impl<E: ApiStatus> ApiStatus for ReflectorError<E> {
    fn api_status(&self) -> Option<&Status> {
        match self {
            Self::List { source, .. }
            | Self::Watch { source, .. }
            | Self::WatchStream { source, .. } => source.api_status(),
            Self::WatchEvent { status, .. } => status.api_status(),
            Self::Pager { .. } | Self::VeryShortWatch { .. } | Self::Store(_) | Self::Resync(_) => {
                None
            }
        }
    }

    fn is_connection_refused(&self) -> bool {
        match self {
            Self::List { source, .. }
            | Self::Watch { source, .. }
            | Self::WatchStream { source, .. } => source.is_connection_refused(),
            _ => false,
        }
    }
}

impl ReflectorError<SourceError> {
    /// The error with its lister-watcher's error given back its type `E` (which the run's
    /// lister-watcher fails with).
    pub(super) fn into_source_type<E: 'static>(self) -> ReflectorError<E> {
        match self {
            Self::List { what, source } => ReflectorError::List {
                what,
                source: source.into_inner(),
            },
            Self::Watch { what, source } => ReflectorError::Watch {
                what,
                source: source.into_inner(),
            },
            Self::WatchStream { what, source } => ReflectorError::WatchStream {
                what,
                source: source.into_inner(),
            },
            Self::WatchEvent { what, status } => ReflectorError::WatchEvent { what, status },
            Self::Pager { what, source } => ReflectorError::Pager { what, source },
            Self::VeryShortWatch { name } => ReflectorError::VeryShortWatch { name },
            Self::Store(e) => ReflectorError::Store(e),
            Self::Resync(e) => ReflectorError::Resync(e),
        }
    }
}

/// A lister-watcher's error inside a reflector's run, its type erased: the run is then not
/// generic, and compiled once, in this crate, instead of in each program for the error
/// types of its lister-watchers. The kind's side erases it ([`SourceError::new`]) and gives
/// it its type back ([`ReflectorError::into_source_type`]) before anyone outside the run
/// sees it.
#[derive(Debug)]
pub(super) struct SourceError(Box<dyn ErasedSource>);

/// What a lister-watcher's error is (`ListerWatcher::Error`'s bounds), as an object.
trait ErasedSource: std::error::Error + ApiStatus + Send + Sync + 'static {
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<E: std::error::Error + ApiStatus + Send + Sync + 'static> ErasedSource for E {
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

impl SourceError {
    pub(super) fn new<E: std::error::Error + ApiStatus + Send + Sync + 'static>(e: E) -> Self {
        Self(Box::new(e))
    }

    /// The error as the `E` it was made from.
    fn into_inner<E: 'static>(self) -> E {
        match self.0.into_any().downcast::<E>() {
            Ok(e) => *e,
            // A run's errors all come from its one lister-watcher (`Typed`).
            Err(_) => unreachable!("a reflector's run failed with another lister-watcher's error"),
        }
    }
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SourceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl ApiStatus for SourceError {
    fn api_status(&self) -> Option<&Status> {
        self.0.api_status()
    }

    fn is_connection_refused(&self) -> bool {
        self.0.is_connection_refused()
    }
}

/// client-go's `isExpiredError`: `410 Expired` or `410 Gone`.
pub(super) fn is_expired(e: &(impl ApiStatus + ?Sized)) -> bool {
    e.is_resource_expired() || e.is_gone()
}

/// The error that ended a reflector run, whatever its lister-watcher's error type: what a
/// [`WatchErrorHandler`] receives. [`ApiStatus`] tells a `410 Gone` from a refused
/// connection from anything else; its `reflector_error::<E>()` (on `dyn WatchError`) gives
/// the [`ReflectorError`] itself, to match on its variants.
pub trait WatchError: std::error::Error + ApiStatus + Send + Sync {
    /// The error as `Any`, for `reflector_error`.
    fn as_any(&self) -> &dyn Any;
}

impl<E: 'static> WatchError for ReflectorError<E>
where
    ReflectorError<E>: std::error::Error + ApiStatus + Send + Sync,
{
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl<'a> dyn WatchError + 'a {
    /// The [`ReflectorError`] of a lister-watcher whose errors are `E`; `None` for another
    /// error type.
    ///
    /// ```
    /// use kclient_cache::{ReflectorError, WatchError};
    /// use kclient_core::ApiError;
    ///
    /// let err: ReflectorError<ApiError> = ReflectorError::VeryShortWatch { name: "pods".into() };
    /// let seen: &dyn WatchError = &err;
    /// assert!(matches!(seen.reflector_error::<ApiError>(), Some(ReflectorError::VeryShortWatch { .. })));
    /// assert!(seen.reflector_error::<std::io::Error>().is_none());
    /// ```
    pub fn reflector_error<E: 'static>(&self) -> Option<&ReflectorError<E>> {
        self.as_any().downcast_ref()
    }
}

/// Called with the reflector's name and the error after each failed run (client-go's
/// `WatchErrorHandler`); the reflector then backs off and lists again. The default,
/// [`default_watch_error_handler`], logs it.
pub type WatchErrorHandler = Arc<dyn Fn(&str, &dyn WatchError) + Send + Sync>;

/// client-go's `DefaultWatchErrorHandler`: an expired watch at debug level (it is routine),
/// everything else as an error.
pub fn default_watch_error_handler(
    name: &str,
    err: &(impl ApiStatus + std::fmt::Display + ?Sized),
) {
    if is_expired(err) {
        tracing::debug!(reflector = %name, error = %err, "watch closed");
    } else {
        tracing::error!(reflector = %name, error = %err, "failed to watch");
    }
}
