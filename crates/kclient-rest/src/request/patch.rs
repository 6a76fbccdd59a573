//! [`AsPatch`]: what a request's patch body can be made from.

use kclient_core::{Patch, PatchType};
use serde::Serialize;

/// What can set the type (and possibly the body) of a `PATCH`: a [`PatchType`], or a
/// [`&Patch`](Patch) whose body is serialized too.
pub trait AsPatch {
    /// The patch type.
    fn patch_type(&self) -> PatchType;
    /// The body, if this value carries one.
    fn patch_body(&self) -> Option<Result<Vec<u8>, serde_json::Error>>;
}

impl AsPatch for PatchType {
    fn patch_type(&self) -> PatchType {
        *self
    }
    fn patch_body(&self) -> Option<Result<Vec<u8>, serde_json::Error>> {
        None
    }
}

impl AsPatch for &PatchType {
    fn patch_type(&self) -> PatchType {
        **self
    }
    fn patch_body(&self) -> Option<Result<Vec<u8>, serde_json::Error>> {
        None
    }
}

impl<T: Serialize> AsPatch for &Patch<T> {
    fn patch_type(&self) -> PatchType {
        Patch::patch_type(self)
    }
    fn patch_body(&self) -> Option<Result<Vec<u8>, serde_json::Error>> {
        Some(self.to_body())
    }
}
