//! The `scale` subresource (`autoscaling/v1` `Scale`) of workloads and of custom resources
//! that declare it: reads `spec.replicas` / `status.replicas` (or the CRD's paths), and writes
//! the desired replicas back into the object (which bumps its generation).

pub(crate) mod view;

use kclient_core::{ApiError, FieldError};
use serde_json::{json, Value};

use crate::call::Call;
use crate::errors;
use crate::meta::{self, meta_str};
use crate::registry::{Part, WriteOptions};
pub use view::to_scale;

async fn write_replicas(
    call: &Call<'_>,
    name: &str,
    opts: &WriteOptions,
    compute: impl Fn(&Value) -> Result<Value, ApiError>,
) -> Result<Value, ApiError> {
    let info = call.info;
    let spec = info.scale.clone().ok_or_else(errors::resource_not_found)?;
    let gr = info.group_resource();
    let (obj, _) = call
        .shared
        .registry
        .update_with(info, call.namespace_or_all(), name, Part::Main, opts, |cur| {
            let Some(cur) = cur else {
                return Err(ApiError::not_found(&gr, name));
            };
            let scale = compute(&to_scale(info, cur))?;
            let rv = scale
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !rv.is_empty() && rv != meta_str(cur, "resourceVersion") {
                return Err(errors::stale_resource_version(&gr, name));
            }
            let scale_name = meta_str(&scale, "name");
            if !scale_name.is_empty() && scale_name != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({scale_name}) does not match the name on the URL ({name})"
                )));
            }
            let replicas = scale
                .pointer("/spec/replicas")
                .cloned()
                .unwrap_or(json!(0));
            if replicas.as_i64().is_none_or(|r| r < 0) {
                return Err(ApiError::invalid(
                    &kclient_core::GroupResource::new("autoscaling", "Scale"),
                    name,
                    vec![FieldError::invalid(
                        "spec.replicas",
                        &replicas,
                        "must be greater than or equal to 0",
                    )],
                ));
            }
            let mut new = cur.clone();
            meta::set_path(&mut new, &spec.spec_replicas_path, replicas);
            meta::metadata_mut(&mut new).remove("resourceVersion");
            Ok(new)
        })
        .await?;
    Ok(obj)
}

/// `PUT .../scale`.
pub async fn update(
    call: &Call<'_>,
    name: &str,
    body: Value,
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    write_replicas(call, name, opts, |_| Ok(body.clone())).await
}

/// `PATCH .../scale`: the patch applies to the `Scale` view.
pub async fn patch(call: &Call<'_>, name: &str, opts: &WriteOptions) -> Result<Value, ApiError> {
    let req = call.req;
    let patch_type = crate::patch::patch_type(req)?;
    crate::patch::check_json_body(patch_type, &req.body)?;
    write_replicas(call, name, opts, |scale| {
        crate::patch::apply_simple(patch_type, scale, &req.body, opts)
    })
    .await
}
