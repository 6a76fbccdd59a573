//! Hand-written methods on specific types, where client-go has them in its `*_expansion.go`
//! files: pod logs, eviction and binding; and, with the `streaming` feature, exec, attach
//! and port-forward (which client-go builds from its REST client and `tools/remotecommand`
//! or `tools/portforward`). They are inherent methods of `ResourceClient<Pod>`, so they
//! appear right next to the generic ones.
//!
//! (The scale of deployments, replica sets and stateful sets is the generic `scale`
//! subresource: [`get_scale`](crate::ResourceClient::get_scale),
//! [`update_scale`](crate::ResourceClient::update_scale),
//! [`patch_scale`](crate::ResourceClient::patch_scale) and
//! [`scale_to`](crate::ResourceClient::scale_to), on every [`HasScale`](crate::HasScale)
//! type.)

mod pod_binding;
mod pod_eviction;
mod pod_logs;
#[cfg(feature = "streaming")]
mod pod_streams;

pub use pod_logs::{LogLines, LogOptions, LogStream, LogStreamKind};
