//! Spike for kclient issue 26: Kubernetes protobuf decoded straight into k8s-openapi types and
//! encoded from them, byte-compatible with Go's generated marshalling.
//!
//! * [`wire`] — the runtime's primitives (over `prost::encoding`, behind one module).
//! * [`special`] — hand-written codecs of `Time`, `MicroTime`, `FieldsV1`, `IntOrString`,
//!   `Quantity`.
//! * [`generated`] — what the generator would emit for `ConfigMap`, `ObjectMeta`,
//!   `OwnerReference`, `ManagedFieldsEntry`, `ListMeta`, `Status`.
//! * [`envelope`] — the `k8s\0` + `runtime.Unknown` envelope, lists item by item, watch frames.
#![forbid(unsafe_code)]

pub mod envelope;
pub mod generated;
pub mod special;
pub mod wire;
