//! The server calling kclient's webhook server (kclient-webhook, on 127.0.0.1, its CA from the
//! development certificates): a validating webhook denying and allowing, a mutating webhook
//! defaulting, and a CRD of two versions converted by the webhook on write and read. Run on
//! kube-apiserver and kclient-fake, the answers must agree.

use anyhow::{ensure, Context, Result};
use http::StatusCode;
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_core::crd::{merge_crds, set_webhook_conversion, CustomResourceExt};
use kclient_core::CancellationToken;
use kclient_webhook::admission::{AdmissionContext, Warnings};
use kclient_webhook::certs::SelfSignedCertificates;
use kclient_webhook::{
    ClientConfig, Conversion, CustomDefaulter, CustomValidator, Denial, WebhookOptions,
    WebhookServer,
};
use serde_json::{json, Value};

use super::crd::{conditions, SETTLE};
use super::{outcome, poll, until_not_found, Namespace};
use crate::client::ApiClient;
use crate::target::Target;
use crate::transcript::Transcript;

/// The label that puts an object under the scenario's webhooks (its value: the namespace),
/// so that nothing else on the server reaches them.
const SELECTED: &str = "e2e.kclient.dev/webhooks";

/// The CRD's group: fixed, since the types converting it are compiled.
const GROUP: &str = "webhooks.e2e.kclient.dev";

/// Gizmo, v1: one size.
pub mod v1 {
    use kclient_derive::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// A gizmo of one size.
    #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "webhooks.e2e.kclient.dev",
        version = "v1",
        kind = "Gizmo",
        namespaced
    )]
    #[kube(storage = false)]
    pub struct GizmoSpec {
        /// Its size.
        pub size: i32,
    }
}

/// Gizmo, v2 (stored, the hub): a width and a height.
pub mod v2 {
    use kclient_derive::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// A gizmo of two sides.
    #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "webhooks.e2e.kclient.dev",
        version = "v2",
        kind = "Gizmo",
        namespaced
    )]
    pub struct GizmoSpec {
        /// Its width.
        pub width: i32,
        /// Its height.
        pub height: i32,
    }
}

impl From<v1::Gizmo> for v2::Gizmo {
    fn from(g: v1::Gizmo) -> Self {
        let spec = v2::GizmoSpec {
            width: g.spec.size,
            height: g.spec.size,
        };
        v2::Gizmo {
            metadata: g.metadata,
            spec,
        }
    }
}

impl TryFrom<v2::Gizmo> for v1::Gizmo {
    type Error = String;

    fn try_from(g: v2::Gizmo) -> Result<Self, String> {
        if g.spec.width != g.spec.height {
            return Err(format!(
                "a {}x{} gizmo has no v1 form",
                g.spec.width, g.spec.height
            ));
        }
        Ok(v1::Gizmo {
            metadata: g.metadata,
            spec: v1::GizmoSpec { size: g.spec.width },
        })
    }
}

/// Refuses a ConfigMap holding `forbidden`; warns about one holding `deprecated`.
struct Guard;

impl CustomValidator<ConfigMap> for Guard {
    async fn validate_create(
        &self,
        cm: &ConfigMap,
        _: &AdmissionContext,
    ) -> Result<Warnings, Denial> {
        check(cm)
    }

    async fn validate_update(
        &self,
        _: &ConfigMap,
        cm: &ConfigMap,
        _: &AdmissionContext,
    ) -> Result<Warnings, Denial> {
        check(cm)
    }
}

fn check(cm: &ConfigMap) -> Result<Warnings, Denial> {
    let data = cm.data.clone().unwrap_or_default();
    if data.contains_key("forbidden") {
        return Err(Denial::forbidden("the key forbidden is not allowed"));
    }
    Ok(if data.contains_key("deprecated") {
        vec!["the key deprecated goes away".into()]
    } else {
        vec![]
    })
}

/// Sets `data.stamped` to `yes`.
struct Stamp;

impl CustomDefaulter<ConfigMap> for Stamp {
    async fn default(&self, cm: &mut ConfigMap, _: &AdmissionContext) -> Result<(), Denial> {
        cm.data
            .get_or_insert_default()
            .insert("stamped".into(), "yes".into());
        Ok(())
    }
}

/// A ConfigMap the webhooks see (or not, `selected: false`).
fn config_map(name: &str, ns: &Namespace, selected: bool, data: Value) -> Value {
    let labels = if selected {
        json!({SELECTED: ns.name})
    } else {
        json!({})
    };
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": data})
}

/// Records a write's outcome and, if refused, its message.
fn record(t: &mut Transcript, step: &str, response: &crate::client::Response) {
    t.record(step, outcome(response));
    if response.status.is_success() {
        t.record(format!("{step}: data"), response.body["data"].clone());
    } else {
        t.record(format!("{step}: message"), response.body["message"].clone());
    }
}

/// Deletes whatever the scenario left on the server from an earlier, failed run.
async fn clean(client: &ApiClient, paths: &[String]) -> Result<()> {
    for path in paths {
        client.delete(path).await?;
        until_not_found(client, path, SETTLE).await?;
    }
    Ok(())
}

/// Admission through kclient's webhook server.
pub async fn webhooks(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "webhooks").await?;
    let mut t = Transcript::new();
    let certs = SelfSignedCertificates::generate(&["localhost"], &["127.0.0.1".parse()?])?;
    let selected = WebhookOptions {
        object_selector: Some(serde_json::from_value(
            json!({"matchLabels": {SELECTED: ns.name}}),
        )?),
        ..WebhookOptions::default()
    };
    let server = WebhookServer::builder()
        .validator_with::<ConfigMap, _>(Guard, selected.clone())
        .defaulter_with::<ConfigMap, _>(Stamp, selected)
        .conversion(Conversion::<v2::Gizmo>::hub().spoke::<v1::Gizmo>())
        .bind("127.0.0.1:0".parse()?, certs.serving())
        .await?;
    let reach = ClientConfig::url(format!("https://{}", server.local_addr()?), &certs.ca_pem);
    let name = format!("kclient-e2e-{}", ns.name);
    let validating = server.validating_webhook_configuration(&name, &reach);
    let mutating = server.mutating_webhook_configuration(&name, &reach);
    let stop = CancellationToken::new();
    let serving = tokio::spawn(server.run(stop.clone()));

    let admission = "/apis/admissionregistration.k8s.io/v1";
    let configurations = [
        format!("{admission}/validatingwebhookconfigurations/{name}"),
        format!("{admission}/mutatingwebhookconfigurations/{name}"),
    ];
    let created = client
        .post(
            &format!("{admission}/validatingwebhookconfigurations"),
            &serde_json::to_value(&validating)?,
        )
        .await?;
    t.record("create the validating configuration", outcome(&created));
    let created = client
        .post(
            &format!("{admission}/mutatingwebhookconfigurations"),
            &serde_json::to_value(&mutating)?,
        )
        .await?;
    t.record("create the mutating configuration", outcome(&created));

    // The server takes up new configurations shortly after they are stored.
    let path = ns.core("configmaps");
    let (client_ref, path_ref, ns_ref) = (&client, &path, &ns);
    poll(SETTLE, move || async move {
        let probe = config_map("probe", ns_ref, true, json!({"forbidden": "x"}));
        let response = client_ref.post(path_ref, &probe).await?;
        Ok((!response.status.is_success()).then_some(()))
    })
    .await
    .context("the webhooks were not called")?;

    let allowed = client
        .post(&path, &config_map("allowed", &ns, true, json!({"a": "1"})))
        .await?;
    record(
        &mut t,
        "a ConfigMap the webhooks allow (and stamp)",
        &allowed,
    );
    ensure!(
        allowed.status == StatusCode::CREATED && allowed.body["data"]["stamped"] == "yes",
        "not stamped: {}",
        allowed.body
    );
    let warned = client
        .post(
            &path,
            &config_map("warned", &ns, true, json!({"deprecated": "1"})),
        )
        .await?;
    record(&mut t, "a ConfigMap the validator warns about", &warned);
    let denied = client
        .post(
            &path,
            &config_map("denied", &ns, true, json!({"forbidden": "1"})),
        )
        .await?;
    record(&mut t, "a ConfigMap the validator denies", &denied);
    ensure!(!denied.status.is_success(), "a forbidden key was allowed");
    let dry_run = client
        .post(
            &format!("{path}?dryRun=All"),
            &config_map("dry", &ns, true, json!({"forbidden": "1"})),
        )
        .await?;
    record(&mut t, "the same as a dry run", &dry_run);
    let unselected = client
        .post(
            &path,
            &config_map("unselected", &ns, false, json!({"forbidden": "1"})),
        )
        .await?;
    record(
        &mut t,
        "a ConfigMap the webhooks do not select",
        &unselected,
    );
    let update = client
        .patch(
            &format!("{path}/allowed"),
            "application/merge-patch+json",
            &json!({"data": {"forbidden": "now"}}),
        )
        .await?;
    record(&mut t, "an update the validator denies", &update);

    conversion(&client, &ns, &reach, &mut t).await?;

    clean(&client, &configurations).await?;
    stop.cancel();
    serving.await??;
    ns.delete().await?;
    Ok(t)
}

/// The Gizmo CRD (v1 and v2, v2 stored) converted by the webhook at `reach`: written in one
/// version, read in the other.
async fn conversion(
    client: &ApiClient,
    ns: &Namespace,
    reach: &ClientConfig,
    t: &mut Transcript,
) -> Result<()> {
    let crd_path =
        format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.{GROUP}");
    clean(client, std::slice::from_ref(&crd_path)).await?;
    let mut crd = merge_crds(vec![v1::Gizmo::crd(), v2::Gizmo::crd()], "v2")?;
    set_webhook_conversion(&mut crd, reach.conversion());
    let created = client
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &serde_json::to_value(&crd)?,
        )
        .await?;
    t.record("create the Gizmo CRD", outcome(&created));
    created.expect(StatusCode::CREATED)?;
    let crd_ref = &crd_path;
    poll(SETTLE, move || async move {
        let crd = client.get(crd_ref).await?.expect(StatusCode::OK)?;
        let found = conditions(&crd.body, &["Established"]);
        Ok((found == ["Established=True"]).then_some(()))
    })
    .await
    .context("the Gizmo CRD did not become Established")?;

    let collection =
        |version: &str| format!("/apis/{GROUP}/{version}/namespaces/{}/gizmos", ns.name);
    let v1_path = collection("v1");
    let square = json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Gizmo", "metadata": {"name": "square"}, "spec": {"size": 3}});
    let (v1_ref, square_ref) = (&v1_path, &square);
    let written = poll(SETTLE, move || async move {
        let response = client.post(v1_ref, square_ref).await?;
        Ok((response.status != StatusCode::NOT_FOUND).then_some(response))
    })
    .await?;
    t.record("write a v1 Gizmo", outcome(&written));
    ensure!(
        written.status == StatusCode::CREATED,
        "writing a v1 gizmo: {}",
        written.body
    );
    t.record("as written (v1)", written.body["spec"].clone());
    let read_v2 = client.get(&format!("{}/square", collection("v2"))).await?;
    t.record("read it as v2", outcome(&read_v2));
    t.record("v2 spec", read_v2.body["spec"].clone());
    ensure!(
        read_v2.body["spec"] == json!({"width": 3, "height": 3}),
        "not converted: {}",
        read_v2.body
    );
    let wide = json!({"apiVersion": format!("{GROUP}/v2"), "kind": "Gizmo", "metadata": {"name": "wide"}, "spec": {"width": 5, "height": 1}});
    let written = client.post(&collection("v2"), &wide).await?;
    t.record("write a v2 Gizmo with no v1 form", outcome(&written));
    let read_v1 = client.get(&format!("{v1_path}/wide")).await?;
    t.record("read it as v1", outcome(&read_v1));
    // The server's message wraps the webhook's in storage details (revisions, keys).
    let message = read_v1.body["message"].as_str().unwrap_or_default();
    t.record(
        "the refusal carries the conversion's error",
        message.contains("a 5x1 gizmo has no v1 form"),
    );
    let listed = client.get(&v1_path).await?;
    t.record("list v1 (one gizmo has no v1 form)", outcome(&listed));
    client.delete(&format!("{}/wide", collection("v2"))).await?;
    let listed = client.get(&v1_path).await?;
    t.record("list v1 after it went", outcome(&listed));
    let mut names: Vec<String> = listed.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| format!("{} {}", i["metadata"]["name"], i["spec"]))
        .collect();
    names.sort();
    t.record("listed", json!(names));
    clean(client, std::slice::from_ref(&crd_path)).await?;
    Ok(())
}
