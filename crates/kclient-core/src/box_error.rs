//! [`BoxError`]: the one boxed error type of the workspace.

/// Any error, boxed: what user code (a transform, a key function, a pop's process function)
/// and lower layers (hyper, rustls, I/O) fail with where a crate does not name their error
/// types. Defined once here, so that every layer means the same type by the same name.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
