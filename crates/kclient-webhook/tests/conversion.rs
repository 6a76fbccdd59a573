//! CRD conversion over HTTPS, as the API server calls it: hub and spoke, whole lists, the uid
//! echoed, metadata kept, one failure failing the request, bad reviews refused.

use kclient_webhook::{Conversion, WebhookServer};
use serde_json::{json, Value};

use crate::support::start;

/// v1: one size.
mod v1 {
    use kclient_derive::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "widgets.example.com",
        version = "v1",
        kind = "Widget",
        namespaced
    )]
    pub struct WidgetSpec {
        pub size: i32,
    }
}

/// v2 (the hub): a width and a height.
mod v2 {
    use kclient_derive::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "widgets.example.com",
        version = "v2",
        kind = "Widget",
        namespaced
    )]
    pub struct WidgetSpec {
        pub width: i32,
        pub height: i32,
    }
}

impl From<v1::Widget> for v2::Widget {
    fn from(w: v1::Widget) -> Self {
        let spec = v2::WidgetSpec {
            width: w.spec.size,
            height: w.spec.size,
        };
        v2::Widget {
            metadata: w.metadata,
            spec,
        }
    }
}

/// Only square widgets have a v1 form.
impl TryFrom<v2::Widget> for v1::Widget {
    type Error = String;

    fn try_from(w: v2::Widget) -> Result<Self, String> {
        if w.spec.width != w.spec.height {
            return Err(format!(
                "a {}x{} widget has no v1 form",
                w.spec.width, w.spec.height
            ));
        }
        // A conversion that loses the metadata: the server keeps the original's.
        Ok(v1::Widget {
            metadata: Default::default(),
            spec: v1::WidgetSpec { size: w.spec.width },
        })
    }
}

fn widget(version: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": format!("widgets.example.com/{version}"), "kind": "Widget",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "resourceVersion": "7", "labels": {"app": "w"}},
        "spec": spec,
    })
}

fn review(uid: &str, desired: &str, objects: Vec<Value>) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    })
}

fn server() -> kclient_webhook::WebhookServerBuilder {
    WebhookServer::builder().conversion(Conversion::<v2::Widget>::hub().spoke::<v1::Widget>())
}

#[tokio::test]
async fn a_list_is_converted_through_the_hub_keeping_each_object_s_metadata() {
    let running = start(server()).await;
    let objects = vec![
        widget("v1", "a", json!({"size": 3})),
        widget("v2", "b", json!({"width": 4, "height": 4})),
    ];
    let to_v2 = running
        .post(
            "/convert",
            &review("c1", "widgets.example.com/v2", objects.clone()),
        )
        .await;
    assert_eq!(to_v2["kind"], "ConversionReview");
    let response = &to_v2["response"];
    assert_eq!(response["uid"], "c1");
    assert_eq!(response["result"]["status"], "Success");
    assert_eq!(
        response["convertedObjects"][0]["apiVersion"],
        "widgets.example.com/v2"
    );
    assert_eq!(
        response["convertedObjects"][0]["spec"],
        json!({"width": 3, "height": 3})
    );
    assert_eq!(
        response["convertedObjects"][0]["metadata"],
        objects[0]["metadata"]
    );
    assert_eq!(
        response["convertedObjects"][1], objects[1],
        "already in v2: unchanged"
    );

    let to_v1 = running
        .post(
            "/convert",
            &review("c2", "widgets.example.com/v1", vec![objects[1].clone()]),
        )
        .await;
    let converted = &to_v1["response"]["convertedObjects"][0];
    assert_eq!(
        (converted["apiVersion"].as_str(), &converted["spec"]),
        (Some("widgets.example.com/v1"), &json!({"size": 4}))
    );
    assert_eq!(
        converted["metadata"], objects[1]["metadata"],
        "kept though the conversion dropped it"
    );
}

#[tokio::test]
async fn one_object_that_does_not_convert_fails_the_whole_request() {
    let running = start(server()).await;
    let objects = vec![
        widget("v2", "square", json!({"width": 2, "height": 2})),
        widget("v2", "wide", json!({"width": 5, "height": 1})),
    ];
    let answer = running
        .post("/convert", &review("c3", "widgets.example.com/v1", objects))
        .await;
    let response = &answer["response"];
    assert_eq!(response["uid"], "c3");
    assert_eq!(response["convertedObjects"], json!([]));
    assert_eq!(
        response["result"],
        json!({"status": "Failure", "message": "cannot convert wide from widgets.example.com/v2 to widgets.example.com/v1: a 5x1 widget has no v1 form"})
    );
    let unknown = running
        .post(
            "/convert",
            &review(
                "c4",
                "widgets.example.com/v3",
                vec![widget("v1", "a", json!({"size": 1}))],
            ),
        )
        .await;
    assert_eq!(unknown["response"]["result"]["status"], "Failure");
    assert!(unknown["response"]["result"]["message"]
        .as_str()
        .unwrap()
        .starts_with("unknown apiVersion \"widgets.example.com/v3\""));
    let undecodable = running
        .post(
            "/convert",
            &review(
                "c5",
                "widgets.example.com/v2",
                vec![widget("v1", "bad", json!({"size": "big"}))],
            ),
        )
        .await;
    assert_eq!(undecodable["response"]["result"]["status"], "Failure");
    let other_kind = running
        .post(
            "/convert",
            &review(
                "c6",
                "gadgets.example.com/v2",
                vec![json!({"apiVersion": "gadgets.example.com/v1", "kind": "Gadget"})],
            ),
        )
        .await;
    assert_eq!(
        other_kind["response"]["result"]["message"],
        "no conversion for Gadget in gadgets.example.com"
    );
}

#[tokio::test]
async fn a_malformed_review_is_a_bad_request() {
    let running = start(server()).await;
    let refused = running
        .client
        .post()
        .abs_path("/convert")
        .header("Content-Type", "application/json")
        .body("[1, 2")
        .send()
        .await
        .unwrap_err();
    assert_eq!(refused.http_code(), Some(400));
}
