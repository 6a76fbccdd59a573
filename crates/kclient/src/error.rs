//! [`Error`]: one error type for every layer, so that a program (a controller's reconcile,
//! a CLI's `main`) can use `?` on calls to any of them and still ask what went wrong.
//!
//! Each layer keeps its own error type, and each converts into [`Error`] with `From`; the
//! variants are the layers' types, unchanged, so matching on one gives the layer's full
//! detail. [`ApiStatus`] is implemented: `err.is_not_found()`, `err.is_conflict()` and the
//! other predicates look through to the server's `Status`, whichever layer carried it.
//!
//! ```
//! use kclient::core::{split_meta_namespace_key, ApiError, ApiStatus, GroupResource};
//!
//! /// A reconcile step mixing layers: a key parse (kclient-core) and a lookup that fails
//! /// the way a lister does.
//! fn reconcile(key: &str) -> Result<(), kclient::Error> {
//!     let (namespace, name) = split_meta_namespace_key(key)?;
//!     let _ = namespace;
//!     Err(Box::new(ApiError::not_found(&GroupResource::new("apps", "deployments"), name)))?
//! }
//!
//! let err = reconcile("default/web").unwrap_err();
//! assert!(err.is_not_found());
//! assert!(matches!(reconcile("a/b/c"), Err(kclient::Error::Key(_))));
//! ```

use kclient_core::{
    ApiError, ApiStatus, GroupVersionParseError, KeyError, OptionsError, SelectorError, Status,
    WatchDecodeError,
};

/// What any kclient call can fail with: the error of the layer it came from (see the
/// [module documentation](self)).
///
/// Variants exist for the layers the enabled features compile in; the enum is
/// `#[non_exhaustive]`, since a feature can add variants.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server refused a request with a failure `Status` (from kclient-core, as listers
    /// and kclient-fake report it; a client call's refusal arrives inside its layer's error).
    #[error(transparent)]
    Api(Box<ApiError>),

    /// A key that is not `name` or `namespace/name` (kclient-core).
    #[error(transparent)]
    Key(#[from] KeyError),

    /// A label or field selector that does not parse (kclient-core). Boxed, like the other
    /// large variants, to keep `Result<_, Error>` small.
    #[error(transparent)]
    Selector(Box<SelectorError>),

    /// Options the server would refuse (kclient-core).
    #[error(transparent)]
    Options(#[from] OptionsError),

    /// A group-version that does not parse (kclient-core).
    #[error(transparent)]
    GroupVersion(#[from] GroupVersionParseError),

    /// A watch stream that could not be decoded (kclient-core).
    #[error(transparent)]
    WatchDecode(#[from] WatchDecodeError),

    /// Config, kubeconfig, transport and REST errors (kclient-rest).
    #[cfg(feature = "rest")]
    #[error(transparent)]
    Rest(#[from] kclient_rest::Error),

    /// Discovery and its caches (kclient-discovery).
    #[cfg(feature = "discovery")]
    #[error(transparent)]
    Discovery(#[from] kclient_discovery::Error),

    /// A name, resource or kind the RestMapper could not map (kclient-discovery).
    #[cfg(feature = "discovery")]
    #[error(transparent)]
    RestMapper(Box<kclient_discovery::MapperError>),

    /// A dynamic client call (kclient-dynamic).
    #[cfg(feature = "dynamic")]
    #[error(transparent)]
    Dynamic(#[from] kclient_dynamic::Error),

    /// A typed client call (kclient-typed).
    #[cfg(feature = "typed")]
    #[error(transparent)]
    Typed(#[from] kclient_typed::Error),

    /// An informer refused a change (kclient-cache).
    #[cfg(feature = "cache")]
    #[error(transparent)]
    Informer(#[from] kclient_cache::InformerError),

    /// An index lookup or index function failed (kclient-cache).
    #[cfg(feature = "cache")]
    #[error(transparent)]
    Index(#[from] kclient_cache::IndexError),

    /// A store refused a write (kclient-cache).
    #[cfg(feature = "cache")]
    #[error(transparent)]
    Store(#[from] kclient_cache::StoreError),

    /// A key function failed (kclient-cache).
    #[cfg(feature = "cache")]
    #[error(transparent)]
    KeyFunc(#[from] kclient_cache::KeyFuncError),

    /// A FIFO pop failed or found the queue closed (kclient-cache).
    #[cfg(feature = "cache")]
    #[error(transparent)]
    Pop(#[from] kclient_cache::PopError),

    /// A reflector run ended with an error (kclient-cache); the lister-watcher's error
    /// inside it converted to this type.
    #[cfg(feature = "cache")]
    #[error(transparent)]
    Reflector(Box<kclient_cache::ReflectorError<Error>>),

    /// A work queue had no item to give (kclient-workqueue's `try_get`).
    #[cfg(feature = "workqueue")]
    #[error(transparent)]
    WorkQueue(#[from] kclient_workqueue::TryGetError),

    /// Event recording could not be set up (kclient-tools).
    #[cfg(feature = "tools")]
    #[error(transparent)]
    Event(#[from] kclient_tools::events::EventError),

    /// An event sink could not write an event (kclient-tools).
    #[cfg(feature = "tools")]
    #[error(transparent)]
    EventSink(#[from] kclient_tools::events::SinkError),

    /// A leader election configuration was refused (kclient-tools).
    #[cfg(feature = "tools")]
    #[error(transparent)]
    LeaderElection(#[from] kclient_tools::leaderelection::LeaderElectionConfigError),

    /// A Lease lock call failed (kclient-tools).
    #[cfg(feature = "tools")]
    #[error(transparent)]
    LeaseLock(#[from] kclient_tools::leaderelection::LeaseLockError),

    /// A wait for conditions on watched objects ended without them (kclient-tools).
    #[cfg(feature = "tools")]
    #[error(transparent)]
    Until(#[from] kclient_tools::watch::UntilError),

    /// A retry watcher could not start (kclient-tools).
    #[cfg(feature = "tools")]
    #[error(transparent)]
    RetryWatcher(#[from] kclient_tools::watch::RetryWatcherError),

    /// A CustomResourceDefinition was not installed: refused, its names not accepted, or not
    /// served in time (kclient-tools).
    #[cfg(feature = "tools")]
    #[error(transparent)]
    InstallCrd(#[from] kclient_tools::crd::InstallCrdError),

    /// A wait or retry ran out of steps or time without its condition holding (kclient-tools'
    /// `PollError::Timeout` and `WaitError::Timeout`, client-go's `ErrWaitTimeout`).
    #[cfg(feature = "tools")]
    #[error("timed out waiting for the condition")]
    WaitTimeout,

    /// A poll was cancelled (kclient-tools' `PollError::Cancelled`).
    #[cfg(feature = "tools")]
    #[error("polling was cancelled")]
    Cancelled,

    /// A controller's run ended badly (kclient-controller).
    #[cfg(feature = "controller")]
    #[error(transparent)]
    Controller(#[from] kclient_controller::ControllerError),

    /// A controller manager could not be built or ended badly (kclient-controller).
    #[cfg(feature = "controller")]
    #[error(transparent)]
    Manager(#[from] kclient_controller::ManagerError),

    /// A controller reference was refused (kclient-controller).
    #[cfg(feature = "controller")]
    #[error(transparent)]
    OwnerReference(#[from] kclient_controller::owner::OwnerReferenceError),

    /// A health or readiness check could not be added to the manager (kclient-controller).
    #[cfg(feature = "controller")]
    #[error(transparent)]
    HealthCheck(#[from] kclient_controller::health::CheckError),

    /// The webhook server could not start (kclient-webhook).
    #[cfg(feature = "webhook")]
    #[error(transparent)]
    Webhook(Box<kclient_webhook::WebhookError>),

    /// The finalizer helper failed (kclient-controller); the reconcile's error inside it
    /// converted to this type.
    #[cfg(feature = "controller")]
    #[error(transparent)]
    Finalizer(Box<kclient_controller::finalizer::FinalizerError<Error>>),

    /// `create_or_update` or `create_or_patch` failed (kclient-controller); the mutate
    /// function's error inside it converted to this type.
    #[cfg(feature = "controller")]
    #[error(transparent)]
    CreateOrUpdate(Box<kclient_controller::CreateOrUpdateError<Error>>),

    /// The in-memory API server could not start or refused a seed (kclient-fake).
    #[cfg(feature = "fake")]
    #[error(transparent)]
    Fake(Box<kclient_fake::Error>),

    /// An exec or attach session failed, or its command exited non-zero (kclient-streaming).
    #[cfg(feature = "streaming")]
    #[error(transparent)]
    RemoteCommand(Box<kclient_streaming::remotecommand::Error>),

    /// A port-forward failed (kclient-streaming).
    #[cfg(feature = "streaming")]
    #[error(transparent)]
    PortForward(Box<kclient_streaming::portforward::Error>),
}

/// A `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<ApiError> for Error {
    fn from(e: ApiError) -> Self {
        Error::Api(Box::new(e))
    }
}

impl From<Box<ApiError>> for Error {
    /// What listers return.
    fn from(e: Box<ApiError>) -> Self {
        Error::Api(e)
    }
}

impl From<SelectorError> for Error {
    fn from(e: SelectorError) -> Self {
        Error::Selector(Box::new(e))
    }
}

#[cfg(feature = "discovery")]
impl From<kclient_discovery::MapperError> for Error {
    fn from(e: kclient_discovery::MapperError) -> Self {
        Error::RestMapper(Box::new(e))
    }
}

#[cfg(feature = "fake")]
impl From<kclient_fake::Error> for Error {
    fn from(e: kclient_fake::Error) -> Self {
        Error::Fake(Box::new(e))
    }
}

#[cfg(feature = "webhook")]
impl From<kclient_webhook::WebhookError> for Error {
    fn from(e: kclient_webhook::WebhookError) -> Self {
        Error::Webhook(Box::new(e))
    }
}

#[cfg(feature = "streaming")]
impl From<kclient_streaming::remotecommand::Error> for Error {
    fn from(e: kclient_streaming::remotecommand::Error) -> Self {
        Error::RemoteCommand(Box::new(e))
    }
}

#[cfg(feature = "streaming")]
impl From<kclient_streaming::portforward::Error> for Error {
    fn from(e: kclient_streaming::portforward::Error) -> Self {
        Error::PortForward(Box::new(e))
    }
}

/// kclient-rest's own parts convert through its [`Error`](kclient_rest::Error), as they do
/// inside that crate.
#[cfg(feature = "rest")]
mod rest_parts {
    use super::Error;
    use kclient_rest::config::ConfigError;
    use kclient_rest::{ExecError, KubeconfigError, TlsError};

    impl From<ConfigError> for Error {
        fn from(e: ConfigError) -> Self {
            Error::Rest(e.into())
        }
    }

    impl From<KubeconfigError> for Error {
        fn from(e: KubeconfigError) -> Self {
            Error::Rest(e.into())
        }
    }

    impl From<TlsError> for Error {
        fn from(e: TlsError) -> Self {
            Error::Rest(e.into())
        }
    }

    impl From<ExecError> for Error {
        fn from(e: ExecError) -> Self {
            Error::Rest(e.into())
        }
    }
}

#[cfg(feature = "discovery")]
impl From<kclient_discovery::GroupDiscoveryFailed> for Error {
    fn from(e: kclient_discovery::GroupDiscoveryFailed) -> Self {
        Error::Discovery(e.into())
    }
}

#[cfg(feature = "cache")]
impl<E: Into<Error>> From<kclient_cache::ReflectorError<E>> for Error {
    /// Keeps what the reflector was doing; converts the lister-watcher's error inside.
    fn from(e: kclient_cache::ReflectorError<E>) -> Self {
        use kclient_cache::ReflectorError as R;
        let e = match e {
            R::List { what, source } => R::List {
                what,
                source: source.into(),
            },
            R::Watch { what, source } => R::Watch {
                what,
                source: source.into(),
            },
            R::WatchStream { what, source } => R::WatchStream {
                what,
                source: source.into(),
            },
            R::Pager { what, source } => R::Pager { what, source },
            R::WatchEvent { what, status } => R::WatchEvent { what, status },
            R::VeryShortWatch { name } => R::VeryShortWatch { name },
            R::Store(e) => R::Store(e),
            R::Resync(e) => R::Resync(e),
        };
        Error::Reflector(Box::new(e))
    }
}

#[cfg(feature = "controller")]
impl<E> From<kclient_controller::finalizer::FinalizerError<E>> for Error
where
    E: std::error::Error + Into<Error> + 'static,
{
    /// Keeps what the finalizer helper was doing; converts the reconcile's error inside.
    fn from(e: kclient_controller::finalizer::FinalizerError<E>) -> Self {
        Error::Finalizer(Box::new(e.map_reconcile_error(Into::into)))
    }
}

#[cfg(feature = "controller")]
impl<E> From<kclient_controller::CreateOrUpdateError<E>> for Error
where
    E: std::error::Error + Into<Error> + 'static,
{
    /// Keeps what the helper was doing; converts the mutate function's error inside.
    fn from(e: kclient_controller::CreateOrUpdateError<E>) -> Self {
        Error::CreateOrUpdate(Box::new(e.map_mutate_error(Into::into)))
    }
}

#[cfg(feature = "tools")]
impl<E: Into<Error>> From<kclient_tools::wait::PollError<E>> for Error {
    /// `Cancelled` and `Timeout` become [`Error::Cancelled`] and [`Error::WaitTimeout`]; a
    /// condition's own error converts as itself.
    fn from(e: kclient_tools::wait::PollError<E>) -> Self {
        use kclient_tools::wait::PollError;
        match e {
            PollError::Cancelled => Error::Cancelled,
            PollError::Timeout => Error::WaitTimeout,
            PollError::Failed(e) => e.into(),
        }
    }
}

#[cfg(feature = "tools")]
impl<E: Into<Error>> From<kclient_tools::retry::WaitError<E>> for Error {
    /// `Timeout` becomes [`Error::WaitTimeout`]; a condition's own error converts as itself.
    fn from(e: kclient_tools::retry::WaitError<E>) -> Self {
        use kclient_tools::retry::WaitError;
        match e {
            WaitError::Timeout => Error::WaitTimeout,
            WaitError::Failed(e) => e.into(),
        }
    }
}

impl ApiStatus for Error {
    fn api_status(&self) -> Option<&Status> {
        match self {
            Error::Api(e) => e.api_status(),
            #[cfg(feature = "rest")]
            Error::Rest(e) => e.api_status(),
            #[cfg(feature = "discovery")]
            Error::Discovery(e) => e.api_status(),
            #[cfg(feature = "dynamic")]
            Error::Dynamic(e) => e.api_status(),
            #[cfg(feature = "typed")]
            Error::Typed(e) => e.api_status(),
            #[cfg(feature = "cache")]
            Error::Reflector(e) => e.api_status(),
            #[cfg(feature = "tools")]
            Error::EventSink(e) => e.api_status(),
            #[cfg(feature = "tools")]
            Error::LeaseLock(e) => e.api_status(),
            #[cfg(feature = "tools")]
            Error::InstallCrd(e) => e.api_status(),
            #[cfg(feature = "streaming")]
            Error::RemoteCommand(e) => e.api_status(),
            #[cfg(feature = "streaming")]
            Error::PortForward(e) => e.api_status(),
            #[cfg(feature = "controller")]
            Error::Finalizer(e) => e.api_status(),
            #[cfg(feature = "controller")]
            Error::CreateOrUpdate(e) => e.api_status(),
            _ => None,
        }
    }

    fn is_connection_refused(&self) -> bool {
        match self {
            #[cfg(feature = "rest")]
            Error::Rest(e) => e.is_connection_refused(),
            #[cfg(feature = "discovery")]
            Error::Discovery(e) => e.is_connection_refused(),
            #[cfg(feature = "dynamic")]
            Error::Dynamic(e) => e.is_connection_refused(),
            #[cfg(feature = "typed")]
            Error::Typed(e) => e.is_connection_refused(),
            #[cfg(feature = "cache")]
            Error::Reflector(e) => e.is_connection_refused(),
            #[cfg(feature = "tools")]
            Error::EventSink(e) => e.is_connection_refused(),
            #[cfg(feature = "tools")]
            Error::LeaseLock(e) => e.is_connection_refused(),
            #[cfg(feature = "streaming")]
            Error::RemoteCommand(e) => e.is_connection_refused(),
            #[cfg(feature = "streaming")]
            Error::PortForward(e) => e.is_connection_refused(),
            _ => false,
        }
    }
}
