//! The operator against a real kube-apiserver: etcd and kube-apiserver from KUBEBUILDER_ASSETS
//! (or kclient's build cache), the CRD from the derived type, the controller running.

use std::time::Duration;

use envtest_greeter::{run, Greeting, GreetingSpec};
use kclient::core::{CancellationToken, CreateOptions};
use kclient::prelude::*;
use kclient_envtest::Environment;

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_greeting_gets_its_config_map_and_nobody_is_refused() -> Result<(), Error> {
    let env = Environment::builder().crd(Greeting::crd()).start().await?;
    let clientset = env.clientset()?;
    let cancel = CancellationToken::new();
    let operator = tokio::spawn(run(clientset.clone(), cancel.clone()));

    let greetings = clientset.namespaced::<Greeting>("default");
    let world = Greeting::new(
        "world",
        GreetingSpec {
            name: "world".into(),
        },
    );
    greetings.create(&world, &CreateOptions::default()).await?;

    // The operator makes the ConfigMap and sets the status (within 30 s).
    let config_maps = clientset.core_v1().config_maps("default");
    let message = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let greeted = greetings
                .get("world")
                .await?
                .status
                .is_some_and(|s| s.greeted);
            let config_map = config_maps.get_opt("world").await?;
            if let (true, Some(message)) =
                (greeted, config_map.and_then(|c| c.data?.remove("message")))
            {
                return Ok::<_, Error>(message);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await??;
    assert_eq!(message, "Hello, world!");

    // kube-apiserver evaluates the CRD's CEL rule (kclient-fake would not).
    let nobody = Greeting::new(
        "nobody",
        GreetingSpec {
            name: "nobody".into(),
        },
    );
    let refused = greetings.create(&nobody, &CreateOptions::default()).await;
    let refusal = refused
        .expect_err("kube-apiserver refuses nobody")
        .to_string();
    assert!(refusal.contains("nobody is not greeted"), "{refusal}");

    cancel.cancel();
    operator.await??;
    env.stop()?;
    Ok(())
}
