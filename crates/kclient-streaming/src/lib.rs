//! kclient-streaming: exec, attach and port-forward.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod portforward;
pub mod remotecommand;
pub mod spdy;
pub mod upgrade;
