//! One kind in two versions, one module each, merged into one CRD.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kclient_core::crd::{merge_crds, CustomResourceExt};

/// The first version.
pub mod v1 {
    use kclient_derive::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// A widget, v1: a size in one number.
    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "widgets.example.com",
        version = "v1",
        kind = "Widget",
        namespaced,
        derive = "PartialEq"
    )]
    #[kube(deprecated, storage = false)]
    pub struct WidgetSpec {
        /// The size.
        pub size: i32,
    }
}

/// The second version.
pub mod v2 {
    use kclient_derive::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// A widget, v2: a width and a height.
    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "widgets.example.com",
        version = "v2",
        kind = "Widget",
        namespaced,
        derive = "PartialEq"
    )]
    pub struct WidgetSpec {
        /// The width.
        pub width: i32,
        /// The height.
        pub height: i32,
    }
}

/// Both versions, v2 stored.
pub fn merged() -> CustomResourceDefinition {
    merge_crds(vec![v1::Widget::crd(), v2::Widget::crd()], "v2").expect("the versions merge")
}
