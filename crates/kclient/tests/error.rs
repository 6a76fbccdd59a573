//! `kclient::Error`: every layer's error converts into it with `From` (so `?` works across
//! layers), and the `ApiStatus` predicates see through to the server's `Status` whichever
//! layer carried it.

use kclient::core::{split_meta_namespace_key, ApiError, ApiStatus, GroupResource};
use kclient::Error;

fn not_found() -> ApiError {
    ApiError::not_found(&GroupResource::new("apps", "deployments"), "web")
}

#[test]
fn the_error_stays_small() {
    // The largest variants are boxed: a `Result<_, kclient::Error>` costs little to return.
    assert!(
        std::mem::size_of::<Error>() <= 96,
        "{}",
        std::mem::size_of::<Error>()
    );
}

#[test]
fn core_errors_convert() {
    let err = Error::from(split_meta_namespace_key("a/b/c").unwrap_err());
    assert!(matches!(err, Error::Key(_)), "{err:?}");
    assert_eq!(err.to_string(), "unexpected key format: \"a/b/c\"");
    // What listers return: a boxed ApiError.
    let err = Error::from(Box::new(not_found()));
    assert!(err.is_not_found());
    assert!(!err.is_conflict());
    assert!(!err.is_connection_refused());
}

#[cfg(feature = "typed")]
#[test]
fn client_errors_keep_their_status_through_the_conversion() {
    let typed = kclient::typed::Error::from(kclient::rest::Error::from(not_found()));
    let err = Error::from(typed);
    assert!(matches!(err, Error::Typed(_)));
    assert!(err.is_not_found());
    assert_eq!(err.status_code(), Some(404));
    let rest = Error::from(kclient::rest::Error::from(ApiError::conflict(
        &GroupResource::new("", "configmaps"),
        "settings",
        "stale",
    )));
    assert!(rest.is_conflict());
    // kclient-rest's parts convert through kclient-rest's error.
    let config = Error::from(kclient::rest::config::ConfigError::NotInCluster);
    assert!(matches!(config, Error::Rest(_)), "{config:?}");
}

#[cfg(feature = "dynamic")]
#[test]
fn dynamic_errors_convert() {
    let err = Error::from(kclient::dynamic::Error::from(
        kclient::rest::RefusedRequest::MissingName { verb: "update" },
    ));
    assert!(matches!(err, Error::Dynamic(_)));
    assert!(err.api_status().is_none());
}

#[cfg(all(feature = "cache", feature = "typed"))]
#[test]
fn a_reflector_error_converts_its_lister_watchers_error() {
    use kclient::cache::ReflectorError;
    let typed = kclient::typed::Error::from(kclient::rest::Error::from(not_found()));
    let err = Error::from(ReflectorError::List {
        what: "*v1.Deployment".to_owned(),
        source: typed,
    });
    assert!(
        err.is_not_found(),
        "the status inside the list error: {err}"
    );
    match &err {
        Error::Reflector(inner) => assert!(matches!(
            **inner,
            ReflectorError::List {
                source: Error::Typed(_),
                ..
            }
        )),
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string()
            .starts_with("failed to list *v1.Deployment: "),
        "{err}"
    );
}

#[cfg(feature = "cache")]
#[test]
fn cache_errors_convert() {
    let err = Error::from(kclient::cache::IndexError::NoSuchIndex("by-node".into()));
    assert!(matches!(err, Error::Index(_)));
    assert_eq!(err.to_string(), "Index with name by-node does not exist");
}

#[cfg(feature = "workqueue")]
#[test]
fn workqueue_errors_convert() {
    let queue: kclient::workqueue::WorkQueue<String> = kclient::workqueue::WorkQueue::new();
    let err = Error::from(queue.try_get().unwrap_err());
    assert!(matches!(
        err,
        Error::WorkQueue(kclient::workqueue::TryGetError::Empty)
    ));
}

#[cfg(feature = "tools")]
#[test]
fn waits_flatten_into_timeout_cancelled_or_the_conditions_own_error() {
    use kclient::tools::retry::WaitError;
    use kclient::tools::wait::PollError;
    assert!(matches!(
        Error::from(PollError::<Error>::Timeout),
        Error::WaitTimeout
    ));
    assert!(matches!(
        Error::from(PollError::<Error>::Cancelled),
        Error::Cancelled
    ));
    assert!(matches!(
        Error::from(WaitError::<Error>::Timeout),
        Error::WaitTimeout
    ));
    let failed = Error::from(PollError::Failed(Box::new(not_found())));
    assert!(
        failed.is_not_found(),
        "the condition's error itself: {failed:?}"
    );
}

/// `?` in a function returning `kclient::Result` takes every layer's error.
#[cfg(all(feature = "typed", feature = "cache"))]
#[test]
fn question_mark_mixes_layers() {
    fn step(key: &str, fail: bool) -> kclient::Result<String> {
        // Each `?` converts another layer's error.
        let (namespace, name) = split_meta_namespace_key(key)?;
        if fail {
            Err(kclient::typed::Error::from(kclient::rest::Error::from(
                not_found(),
            )))?;
        }
        let indexer = kclient::cache::new_store::<k8s_openapi::api::core::v1::Pod>(
            kclient::cache::KeyFunc::meta_namespace(),
        );
        indexer.by_index("by-node", namespace)?;
        Ok(format!("{namespace}/{name}"))
    }
    assert!(matches!(step("default/web", false), Err(Error::Index(_))));
    assert!(step("default/web", true).unwrap_err().is_not_found());
    assert!(matches!(step("a/b/c", false), Err(Error::Key(_))));
}
