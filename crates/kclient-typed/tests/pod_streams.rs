//! Exec, attach and port-forward on `ResourceClient<Pod>` (the `streaming` feature), against
//! kclient-fake with handlers playing the container.

use k8s_openapi::api::core::v1::Pod;
use kclient_fake::{echo_port, FakeApiServer, Process};
use kclient_rest::RefusedRequest;
use kclient_streaming::remotecommand::{AttachOptions, ExecOptions};
use kclient_typed::{Clientset, Error, ResourceClient};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn server() -> FakeApiServer {
    let server = FakeApiServer::start().await.unwrap();
    server
        .seed(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "busybox"}]},
            "status": {"phase": "Running"},
        }))
        .unwrap();
    server.set_exec_handler(|mut process: Process| async move {
        let greeting = if process.request.attach {
            "attached".to_owned()
        } else {
            process.request.command.join(" ")
        };
        let _ = process.stdout.write_all(greeting.as_bytes()).await;
        if process.request.attach {
            0
        } else {
            5
        }
    });
    server.set_port_forward_handler(echo_port);
    server
}

#[tokio::test]
async fn exec_attach_and_forward_address_the_pod() {
    let server = server().await;
    let pods = Clientset::new(server.config().unwrap())
        .unwrap()
        .core_v1()
        .pods("default");

    let options = ExecOptions::command(["sh", "-c", "true"]).stdout().stderr();
    let output = pods
        .exec("web", &options)
        .unwrap()
        .output(None)
        .await
        .unwrap();
    assert_eq!(
        (output.stdout.as_slice(), output.exit_code),
        (&b"sh -c true"[..], 5)
    );

    let attach = pods
        .attach("web", &AttachOptions::default().stdout())
        .unwrap();
    assert_eq!(attach.output(None).await.unwrap().stdout, b"attached");

    let forward = pods.forward("web", 0, 8080).await.unwrap();
    let mut conn = tokio::net::TcpStream::connect(forward.local_addr(8080).unwrap())
        .await
        .unwrap();
    conn.write_all(b"echo").await.unwrap();
    conn.shutdown().await.unwrap();
    let mut back = Vec::new();
    conn.read_to_end(&mut back).await.unwrap();
    assert_eq!(back, b"echo");
    forward.stop().await.unwrap();

    let connection = pods
        .port_forward_dialer("web")
        .unwrap()
        .dial()
        .await
        .unwrap();
    let mut stream = connection.connect(9090).await.unwrap();
    stream.write_all(b"direct").await.unwrap();
    stream.shutdown().await.unwrap();
    let mut back = Vec::new();
    stream.read_to_end(&mut back).await.unwrap();
    assert_eq!(back, b"direct");
}

#[tokio::test]
async fn the_pod_must_be_named_and_namespaced_and_refusals_keep_their_status() {
    let server = server().await;
    let rest = kclient_rest::RestClient::new(server.config().unwrap()).unwrap();
    let all_namespaces: ResourceClient<Pod> = ResourceClient::all_namespaces(rest);
    let options = ExecOptions::command(["ls"]);
    assert!(matches!(
        all_namespaces.exec("web", &options),
        Err(Error::Refused(RefusedRequest::NamespaceRequired { .. }))
    ));
    let pods = Clientset::new(server.config().unwrap())
        .unwrap()
        .core_v1()
        .pods("default");
    assert!(matches!(
        pods.exec("", &options),
        Err(Error::Refused(RefusedRequest::MissingName { .. }))
    ));
    assert!(matches!(
        pods.port_forwarder("web", &["80:0"]),
        Err(Error::PortForward(_))
    ));

    let missing = pods.forward("nope", 0, 80).await.unwrap_err();
    assert!(
        kclient_core::ApiStatus::is_not_found(&missing),
        "{missing:?}"
    );
}
