//! The reflector's backoff, [`ExponentialBackoffManager`] (apimachinery's, as client-go's
//! reflector configures it by default): kclient-core's, the one exponential backoff of the
//! workspace (see [`kclient_core::backoff`]), re-exported here where the reflector's users
//! have found it.

pub use kclient_core::backoff::ExponentialBackoffManager;
