//! A shared informer with a lister and a custom index, built by hand (client-go's
//! `cache.NewSharedIndexInformer(lw, &v1.Pod{}, resync, cache.Indexers{...})`): the layer
//! under the informer factory, for when one informer with options of its own is wanted.
//!
//! * the lister-watcher is a typed client (`clientset.core_v1().pods("")`: every
//!   `ResourceClient` is one);
//! * the indexers are the namespace index and a custom one, pods by node
//!   (`spec.nodeName`), so "which pods run on node-a" is a lookup, not a scan;
//! * the transform strips `managedFields` before objects enter the cache;
//! * an event handler reports adds, updates and deletes (a tombstone when the deletion was
//!   inferred after a missed event);
//! * the lister reads the cache: by namespace, by name, and by the custom index.
//!
//! ```text
//! cargo run -p kclient --features fake --example shared_informer                 # kclient-fake, scripted
//! cargo run -p kclient --features fake --example shared_informer -- --kubeconfig ~/.kube/config
//! ```
//!
//! Against a cluster it prints what it sees until Ctrl-C.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kclient::cache::{SharedIndexInformerOptions, TransformFunc};
use kclient::core::labels::Selector;
use kclient::core::{CreateOptions, DeleteOptions};
use kclient::fake::FakeApiServer;
use kclient::prelude::*;
use kclient::rest::KubeconfigOptions;
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The custom index: pods by the node they run on.
const BY_NODE: &str = "by-node";

fn node_of(pod: &Pod) -> Option<String> {
    pod.spec.as_ref().and_then(|s| s.node_name.clone())
}

/// The informer over every pod, with the namespace and by-node indices, managedFields
/// stripped, and a handler appending what it sees to `seen`.
fn pod_informer(
    clientset: &Clientset,
    seen: Arc<Mutex<Vec<String>>>,
) -> Result<SharedIndexInformer<Pod>, Error> {
    let informer = SharedIndexInformer::new(
        clientset.core_v1().pods(""),
        SharedIndexInformerOptions::default()
            .indexers(
                Indexers::namespace()
                    .with(BY_NODE, |pod: &Pod| Ok(node_of(pod).into_iter().collect())),
            )
            .transform(TransformFunc::strip_managed_fields())
            // client-go's examples often resync; this one does not need to.
            .resync_period(Duration::ZERO),
    );
    let (on_add, on_update, on_delete) = (seen.clone(), seen.clone(), seen);
    let log = |seen: &Mutex<Vec<String>>, line: String| {
        println!("  {line}");
        seen.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    };
    informer.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .add_func(move |pod: &Arc<Pod>, initial_list| {
                let from = if initial_list { " (initial list)" } else { "" };
                log(
                    &on_add,
                    format!(
                        "added {}{from}",
                        kclient::core::meta_namespace_key(pod.as_ref())
                    ),
                );
            })
            .update_func(move |old: &Arc<Pod>, new: &Arc<Pod>| {
                if old.resource_version() != new.resource_version() {
                    log(
                        &on_update,
                        format!(
                            "updated {}",
                            kclient::core::meta_namespace_key(new.as_ref())
                        ),
                    );
                }
            })
            .delete_func(move |pod: &DeletedObject<Pod>| {
                log(
                    &on_delete,
                    format!(
                        "deleted {}",
                        kclient::core::deletion_handling_meta_namespace_key(pod)
                    ),
                );
            }),
    )?;
    Ok(informer)
}

fn pod(namespace: &str, name: &str, node: &str) -> Result<Pod, Error> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "nginx:1.27"}]}
    }))?)
}

/// Pods' names on `node`, from the index.
fn on_node(informer: &SharedIndexInformer<Pod>, node: &str) -> Result<Vec<String>, Error> {
    let mut names: Vec<String> = informer
        .get_indexer()
        .by_index(BY_NODE, node)?
        .iter()
        .map(|p| p.name_any().to_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// What the scripted scenario read from the cache.
#[derive(Debug, PartialEq)]
struct Reads {
    on_node_a_before: Vec<String>,
    on_node_a_after: Vec<String>,
    in_shop: usize,
    managed_fields_cached: bool,
}

/// kclient-fake with a second namespace, `shop`.
async fn start_fake() -> Result<FakeApiServer, Error> {
    Ok(FakeApiServer::builder()
        .object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}))
        .start()
        .await?)
}

/// Seeds pods on two nodes, runs the informer, moves the world, reads the cache.
async fn scenario(server: &FakeApiServer) -> Result<(Reads, Vec<String>), Error> {
    let clientset = Clientset::new(server.config()?)?;
    for (ns, name, node) in [
        ("default", "web-0", "node-a"),
        ("default", "web-1", "node-b"),
        ("shop", "cart-0", "node-a"),
    ] {
        clientset
            .core_v1()
            .pods(ns)
            .create(&pod(ns, name, node)?, &CreateOptions::default())
            .await?;
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let informer = pod_informer(&clientset, seen.clone())?;
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    if !wait_for_cache_sync(&cancel, &[informer.synced()]).await {
        return Err("the pod cache did not sync".into());
    }
    let on_node_a_before = on_node(&informer, "node-a")?;

    let default_pods = clientset.core_v1().pods("default");
    default_pods
        .create(
            &pod("default", "web-2", "node-a")?,
            &CreateOptions::default(),
        )
        .await?;
    default_pods
        .delete("web-0", &DeleteOptions::default())
        .await?;
    // The cache shows a change before the handler is told (each handler runs on its own
    // queue): wait for both to have seen the two changes.
    let lister = informer.lister();
    let handled = |line: &str| {
        seen.lock()
            .map(|s| s.iter().any(|l| l == line))
            .unwrap_or(false)
    };
    for _ in 0..200 {
        let names = on_node(&informer, "node-a")?;
        if names == ["cart-0", "web-2"]
            && handled("added default/web-2")
            && handled("deleted default/web-0")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let reads = Reads {
        on_node_a_before,
        on_node_a_after: on_node(&informer, "node-a")?,
        in_shop: lister
            .namespaced("shop")
            .list(&Selector::everything())
            .len(),
        managed_fields_cached: lister
            .namespaced("default")
            .get("web-2")?
            .metadata
            .managed_fields
            .is_some(),
    };
    cancel.cancel();
    run.await?;
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok((reads, seen))
}

#[tokio::main]
async fn main() -> Result<(), ErrorReport> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--kubeconfig") {
        let path = args.get(i + 1).ok_or("--kubeconfig needs a path")?;
        let config = Config::from_kubeconfig(&KubeconfigOptions {
            path: Some(path.into()),
            ..Default::default()
        })?;
        let informer = pod_informer(&Clientset::new(config)?, Arc::default())?;
        let cancel = CancellationToken::new();
        tokio::spawn({
            let cancel = cancel.clone();
            async move {
                let _ = tokio::signal::ctrl_c().await;
                cancel.cancel();
            }
        });
        println!("Watching every pod until Ctrl-C");
        informer.run(cancel).await;
        return Ok(());
    }
    let server = start_fake().await?;
    println!(
        "Started kclient-fake at {} (pass --kubeconfig for a cluster)",
        server.url()
    );
    let (reads, _) = scenario(&server).await?;
    println!("{reads:#?}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_index_and_the_lister_follow_the_server() -> Result<(), Error> {
        let server = start_fake().await?;
        let (reads, seen) = scenario(&server).await?;
        assert_eq!(
            reads,
            Reads {
                on_node_a_before: vec!["cart-0".into(), "web-0".into()],
                on_node_a_after: vec!["cart-0".into(), "web-2".into()],
                in_shop: 1,
                managed_fields_cached: false,
            }
        );
        let mut initial: Vec<&String> = seen
            .iter()
            .filter(|l| l.ends_with("(initial list)"))
            .collect();
        initial.sort();
        assert_eq!(
            initial,
            [
                "added default/web-0 (initial list)",
                "added default/web-1 (initial list)",
                "added shop/cart-0 (initial list)"
            ]
        );
        assert!(seen.contains(&"added default/web-2".to_owned()), "{seen:?}");
        assert!(
            seen.contains(&"deleted default/web-0".to_owned()),
            "{seen:?}"
        );
        Ok(())
    }
}
