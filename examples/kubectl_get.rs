//! `kubectl get` in miniature: resolves what you type — a resource (`pods`), a singular
//! (`pod`), a short name (`po`, `deploy`), a kind (`Deployment`), a qualified name
//! (`deployments.apps`, `crontabs.stable.example.com`, `deployments.v1.apps`), a category
//! (`all`) or a comma-separated list of them — through kclient-discovery's `RestMapper`, lists
//! it with kclient-dynamic's `DynamicClient`, and prints a table (NAME, NAMESPACE, AGE).
//!
//! Without `KUBECONFIG` it starts kclient-fake in-process, seeded with a few pods, a
//! deployment, a service, a config map and a custom resource; with `KUBECONFIG` set it talks
//! to that cluster, sharing kubectl's discovery cache (`~/.kube/cache/discovery`).
//!
//! ```text
//! cargo run -p kclient-dynamic --example kubectl_get -- po
//! cargo run -p kclient-dynamic --example kubectl_get -- all -A
//! cargo run -p kclient-dynamic --example kubectl_get -- ct,cm -n default
//! KUBECONFIG=~/.kube/config cargo run -p kclient-dynamic --example kubectl_get -- Deployment -A
//! ```

use std::process::ExitCode;

use kclient_core::{ErrorReport, GroupVersionResource, ListOptions};
use kclient_discovery::{
    default_cache_dir, DeferredRestMapper, Discovery, DiscoveryClient, DiskCachedDiscoveryClient,
    MapperError, MemCacheClient, RestMapping, KUBECTL_DISCOVERY_TTL,
};
use kclient_dynamic::DynamicClient;
use kclient_fake::FakeApiServer;
use kclient_rest::{Config, RestClient};
use serde_json::json;

const USAGE: &str = "usage: kubectl_get <resource>[,<resource>...] [-n <namespace> | -A]";

/// The command line.
struct Args {
    names: Vec<String>,
    namespace: Option<String>,
    all_namespaces: bool,
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut out = Args {
        names: Vec::new(),
        namespace: None,
        all_namespaces: false,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-A" | "--all-namespaces" => out.all_namespaces = true,
            "-n" | "--namespace" => {
                out.namespace = Some(args.next().ok_or("-n needs a namespace")?);
            }
            "-h" | "--help" => return Err(USAGE.to_string()),
            flag if flag.starts_with('-') => return Err(format!("unknown flag {flag}\n{USAGE}")),
            names => out.names.extend(
                names
                    .split(',')
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned),
            ),
        }
    }
    if out.names.is_empty() {
        return Err(USAGE.to_string());
    }
    Ok(out)
}

/// kubectl's age format (`k8s.io/apimachinery/pkg/util/duration.HumanDuration`).
fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// Prints rows as kubectl does: left-aligned columns, three spaces apart.
fn print_table(header: [&str; 3], rows: &[[String; 3]]) {
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: [&str; 3]| {
        let text = format!(
            "{:w0$}   {:w1$}   {}",
            cells[0],
            cells[1],
            cells[2],
            w0 = widths[0],
            w1 = widths[1]
        );
        println!("{}", text.trim_end());
    };
    line(header);
    for row in rows {
        line([&row[0], &row[1], &row[2]]);
    }
}

/// Resolves one name: a category expands to its resources, anything else goes through
/// `RestMapper::find`.
async fn resolve<D: Discovery>(
    mapper: &DeferredRestMapper<D>,
    name: &str,
) -> Result<Vec<RestMapping>, MapperError> {
    if let Some(resources) = mapper.expand_category(name).await? {
        let mut mappings = Vec::new();
        for gr in resources {
            let partial = GroupVersionResource::new(gr.group, "", gr.resource);
            mappings.push(mapper.mapping_for_resource(&partial).await?);
        }
        return Ok(mappings);
    }
    Ok(vec![mapper.find(name).await?])
}

async fn run<D: Discovery>(
    args: Args,
    mapper: DeferredRestMapper<D>,
    client: DynamicClient,
    default_namespace: String,
) -> Result<(), ErrorReport> {
    let mut mappings: Vec<RestMapping> = Vec::new();
    for name in &args.names {
        for m in resolve(&mapper, name).await? {
            if !mappings.contains(&m) {
                mappings.push(m);
            }
        }
    }
    let namespace = match (&args.namespace, args.all_namespaces) {
        (_, true) => None,
        (Some(ns), false) => Some(ns.clone()),
        (None, false) => Some(default_namespace),
    };
    let qualify = mappings.len() > 1;
    let now = jiff::Timestamp::now();
    let mut rows = Vec::new();
    for mapping in &mappings {
        let api = mapping.api_resource();
        if !api.supports_verb("list") {
            continue;
        }
        let mut resource = client.resource(api);
        if let Some(ns) = &namespace {
            resource = resource.namespace(ns.clone());
        }
        let list = resource.list(&ListOptions::default()).await.map_err(|e| {
            format!(
                "listing {}: {}",
                mapping.group_resource(),
                ErrorReport::new(e)
            )
        })?;
        for object in list {
            let name = object.metadata.name.clone().unwrap_or_default();
            let name = if qualify {
                let kind = mapping.gvk.kind.to_lowercase();
                match mapping.gvk.group.as_str() {
                    "" => format!("{kind}/{name}"),
                    group => format!("{kind}.{group}/{name}"),
                }
            } else {
                name
            };
            let age = object
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|t| human_duration(now.as_second() - t.0.as_second()))
                .unwrap_or_else(|| "<unknown>".into());
            let ns = object.metadata.namespace.clone().unwrap_or_default();
            rows.push([name, ns, age]);
        }
    }
    if rows.is_empty() {
        match &namespace {
            Some(ns) => eprintln!("No resources found in {ns} namespace."),
            None => eprintln!("No resources found"),
        }
        return Ok(());
    }
    print_table(["NAME", "NAMESPACE", "AGE"], &rows);
    Ok(())
}

/// A fake API server with a few objects of built-in and custom kinds.
async fn start_fake() -> Result<FakeApiServer, ErrorReport> {
    let server = FakeApiServer::builder().start().await?;
    let pod = |ns: &str, name: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": ns, "labels": {"app": "web"}},
               "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}})
    };
    let objects = vec![
        pod("default", "web-0"),
        pod("default", "web-1"),
        pod("shop", "checkout-0"),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "default"},
               "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}}),
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "settings", "namespace": "default"}, "data": {"mode": "fast"}}),
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "crontabs.stable.example.com"},
               "spec": {"group": "stable.example.com", "scope": "Namespaced",
                        "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab",
                                  "shortNames": ["ct"], "categories": ["all"]},
                        "versions": [{"name": "v1", "served": true, "storage": true,
                                      "schema": {"openAPIV3Schema": {"type": "object",
                                                 "x-kubernetes-preserve-unknown-fields": true}}}]}}),
        json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
               "metadata": {"name": "nightly-backup", "namespace": "default"},
               "spec": {"cronSpec": "0 3 * * *", "image": "backup:1.2"}}),
        json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
               "metadata": {"name": "hourly-report", "namespace": "shop"},
               "spec": {"cronSpec": "0 * * * *", "image": "report:3"}}),
    ];
    for object in objects {
        server.seed(object)?;
    }
    Ok(server)
}

async fn main_result() -> Result<(), ErrorReport> {
    let args = parse_args(std::env::args().skip(1))?;
    let use_cluster = std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty());
    if use_cluster {
        let config = Config::infer()?;
        let namespace = config.namespace().to_owned();
        let client = DynamicClient::new(RestClient::new(config.clone())?);
        match default_cache_dir() {
            Some(root) => {
                let discovery =
                    DiskCachedDiscoveryClient::for_config(&config, &root, KUBECTL_DISCOVERY_TTL)?;
                run(args, DeferredRestMapper::new(discovery), client, namespace).await
            }
            None => {
                let discovery = DiscoveryClient::for_config(&config)?;
                let mapper = DeferredRestMapper::new(MemCacheClient::new(discovery));
                run(args, mapper, client, namespace).await
            }
        }
    } else {
        let server = start_fake().await?;
        eprintln!(
            "(no KUBECONFIG: using an in-process kclient-fake at {})",
            server.url()
        );
        let config = Config::new(server.url());
        let client = DynamicClient::new(RestClient::new(config.clone())?);
        let discovery = DiscoveryClient::for_config(&config)?;
        let mapper = DeferredRestMapper::new(MemCacheClient::new(discovery));
        let result = run(args, mapper, client, "default".into()).await;
        server.shutdown().await;
        result
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    match main_result().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_print_like_kubectl() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (150, "2m30s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 15 * 60, "3h15m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (50 * 3600, "2d2h"),
            (10 * 86400, "10d"),
            (800 * 86400, "2y70d"),
            (730 * 86400, "2y"),
            (9 * 365 * 86400, "9y"),
        ];
        for (seconds, expected) in cases {
            assert_eq!(human_duration(seconds), expected, "{seconds}s");
        }
    }

    #[test]
    fn arguments() {
        let args = parse_args(["po,deploy".into(), "-n".into(), "shop".into()]).unwrap();
        assert_eq!(args.names, ["po", "deploy"]);
        assert_eq!(args.namespace.as_deref(), Some("shop"));
        assert!(!args.all_namespaces);
        assert!(
            parse_args(["all".into(), "-A".into()])
                .unwrap()
                .all_namespaces
        );
        assert!(parse_args(Vec::<String>::new()).is_err());
        assert!(parse_args(["po".into(), "-x".into()]).is_err());
        assert!(parse_args(["po".into(), "-n".into()]).is_err());
    }

    #[tokio::test]
    async fn resolves_and_lists_against_the_fake() {
        let server = start_fake().await.unwrap();
        let config = Config::new(server.url());
        let mapper = DeferredRestMapper::new(MemCacheClient::new(
            DiscoveryClient::for_config(&config).unwrap(),
        ));
        for (name, resource) in [
            ("po", "pods"),
            ("Deployment", "deployments"),
            ("crontabs.stable.example.com", "crontabs"),
            ("ct", "crontabs"),
        ] {
            let found = resolve(&mapper, name).await.unwrap();
            assert_eq!(found[0].resource.resource, resource, "{name}");
        }
        let all: Vec<String> = resolve(&mapper, "all")
            .await
            .unwrap()
            .iter()
            .map(|m| m.resource.resource.clone())
            .collect();
        for r in ["pods", "services", "deployments", "crontabs"] {
            assert!(all.contains(&r.to_string()), "{r} in {all:?}");
        }
        assert!(resolve(&mapper, "nosuchthing")
            .await
            .unwrap_err()
            .is_no_match());
        let client = DynamicClient::new(RestClient::new(config).unwrap());
        let args = parse_args(["all".into(), "-A".into()]).unwrap();
        run(args, mapper, client, "default".into()).await.unwrap();
        server.shutdown().await;
    }
}
