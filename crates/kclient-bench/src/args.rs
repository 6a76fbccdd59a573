//! The command line every scenario shares (the peers' programs take the same flags).

use std::time::Duration;

use kclient_cache::SharedInformerFactory;
use kclient_rest::Config;
use kclient_typed::Clientset;

use crate::Error;

/// The flags, with the defaults the peers use too.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) kubeconfig: String,
    /// Empty: all namespaces.
    pub(crate) namespace: String,
    /// `list` (paged) or `stream` (streaming list).
    pub(crate) mode: String,
    /// `keep` or `strip`.
    pub(crate) managed_fields: String,
    /// What the sync scenario caches: `pods`, `configmaps` or `pod-view` (a projection of
    /// Pods: name, node, images).
    pub(crate) kind: String,
    /// How the informers cache objects: `decoded` or `compact` (kclient only).
    pub(crate) cache: String,
    /// Lister `get`s timed one by one after the sync (kclient only).
    pub(crate) gets: usize,
    /// Event handlers (each counting the objects it is told of) added before the sync
    /// (kclient only): a compact cache decodes its objects for them.
    pub(crate) handlers: usize,
    /// Seconds to wait after the sync before reading the resident set again (0: not read).
    pub(crate) settle: u64,
    /// Objects (sync, decode, seed) or updates (watch, write).
    pub(crate) count: usize,
    /// Watched objects (ConfigMaps) of the watch scenario.
    pub(crate) objects: usize,
    pub(crate) lookups: usize,
    pub(crate) repeat: usize,
    pub(crate) iterations: usize,
    pub(crate) concurrency: usize,
    pub(crate) shape: String,
    pub(crate) path: String,
    /// Offer HTTP/1.1 only (ALPN), instead of HTTP/2 and HTTP/1.1.
    pub(crate) http1: bool,
    /// Controllers of the controller scenario (1 or 3).
    pub(crate) controllers: usize,
    /// The controller scenario's reconciles requeue their key at once.
    pub(crate) requeue: bool,
    /// How the one controller of the controller scenario caches the Secrets it owns:
    /// `metadata` (`owns_metadata`) or `whole` (`owns`).
    pub(crate) owns: String,
    /// Primary ConfigMaps, each owning a Secret, in the manifest's `--owned-namespace`.
    pub(crate) owned: usize,
    pub(crate) owned_namespace: String,
    /// How long the soak runs, in seconds.
    pub(crate) seconds: u64,
    /// Seconds between the soak's samples.
    pub(crate) sample: u64,
    /// Seconds between the soak's faults.
    pub(crate) fault_every: u64,
}

impl Options {
    /// Parses `--name value` pairs (and the `--http1` and `--requeue` switches).
    pub(crate) fn parse(args: &[String]) -> Result<Self, Error> {
        let mut o = Options {
            kubeconfig: String::new(),
            namespace: String::new(),
            mode: "list".into(),
            managed_fields: "strip".into(),
            kind: "pods".into(),
            cache: "decoded".into(),
            gets: 0,
            handlers: 0,
            settle: 0,
            count: 0,
            objects: 1000,
            lookups: 0,
            repeat: 3,
            iterations: 10_000,
            concurrency: 16,
            shape: "queue".into(),
            path: String::new(),
            http1: false,
            controllers: 1,
            requeue: false,
            owns: "metadata".into(),
            owned: 0,
            owned_namespace: String::new(),
            seconds: 60,
            sample: 10,
            fault_every: 30,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            if flag == "--http1" {
                o.http1 = true;
                continue;
            }
            if flag == "--requeue" {
                o.requeue = true;
                continue;
            }
            let name = flag
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {flag:?}"))?;
            let value = it
                .next()
                .ok_or_else(|| format!("--{name} needs a value"))?
                .clone();
            let number = |v: &str| -> Result<usize, Error> {
                v.parse().map_err(|e| format!("--{name} {v:?}: {e}").into())
            };
            match name {
                "kubeconfig" => o.kubeconfig = value,
                "namespace" => o.namespace = value,
                "mode" => o.mode = value,
                "managed-fields" => o.managed_fields = value,
                "kind" => o.kind = value,
                "cache" => o.cache = value,
                "shape" => o.shape = value,
                "path" => o.path = value,
                "content-type" => {} // client-go's option; kclient speaks JSON
                "count" => o.count = number(&value)?,
                "objects" => o.objects = number(&value)?,
                "lookups" => o.lookups = number(&value)?,
                "gets" => o.gets = number(&value)?,
                "handlers" => o.handlers = number(&value)?,
                "settle" => o.settle = number(&value)? as u64,
                "repeat" => o.repeat = number(&value)?.max(1),
                "iterations" => o.iterations = number(&value)?,
                "concurrency" => o.concurrency = number(&value)?.max(1),
                "controllers" => o.controllers = number(&value)?,
                "owns" => o.owns = value,
                "owned" => o.owned = number(&value)?,
                "owned-namespace" => o.owned_namespace = value,
                "seconds" => o.seconds = number(&value)? as u64,
                "sample" => o.sample = number(&value)? as u64,
                "fault-every" => o.fault_every = number(&value)? as u64,
                other => return Err(format!("unknown option --{other}").into()),
            }
        }
        Ok(o)
    }

    /// The client configuration: the kubeconfig, without a client-side rate limit (as the
    /// peers), HTTP/1.1 only with `--http1`.
    pub(crate) fn config(&self) -> Result<Config, Error> {
        let mut config = Config::from_kubeconfig_file(&self.kubeconfig)?;
        config.qps = None;
        config.disable_http2 = self.http1;
        // Lists of 100k Pods take longer than the default request timeout.
        config.timeout = Some(Duration::from_secs(600));
        Ok(config)
    }

    pub(crate) fn clientset(&self) -> Result<Clientset, Error> {
        Ok(Clientset::new(self.config()?)?)
    }

    /// An informer factory over the clientset with these options: the namespace, managedFields
    /// kept or stripped, the cache's representation.
    pub(crate) fn factory(&self) -> Result<SharedInformerFactory<Clientset>, Error> {
        let mut builder = SharedInformerFactory::builder(self.clientset()?);
        if let Some(ns) = self.namespace() {
            builder = builder.namespace(ns);
        }
        if self.managed_fields == "keep" {
            builder = builder.keep_managed_fields();
        }
        match self.cache.as_str() {
            "decoded" => {}
            "compact" => builder = builder.compact_cache(),
            other => return Err(format!("--cache {other:?}: decoded or compact").into()),
        }
        Ok(builder.build())
    }

    /// The namespace, `None` for all.
    pub(crate) fn namespace(&self) -> Option<&str> {
        Some(self.namespace.as_str()).filter(|n| !n.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, Error> {
        Options::parse(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn flags_and_defaults_are_the_peers() {
        let o = parse(&["--count", "10", "--mode", "stream", "--http1"]).unwrap();
        assert_eq!((o.count, o.mode.as_str(), o.http1), (10, "stream", true));
        assert_eq!(o.managed_fields, "strip");
        assert_eq!((o.objects, o.repeat, o.concurrency), (1000, 3, 16));
        assert_eq!(o.namespace(), None);
        assert_eq!(
            parse(&["--namespace", "ns"]).unwrap().namespace(),
            Some("ns")
        );
        // client-go's --content-type is accepted and ignored: kclient speaks JSON.
        assert!(parse(&["--content-type", "json"]).is_ok());
    }

    #[test]
    fn bad_flags_are_errors() {
        assert!(parse(&["--count"])
            .unwrap_err()
            .to_string()
            .contains("needs a value"));
        assert!(parse(&["--count", "x"])
            .unwrap_err()
            .to_string()
            .contains("--count"));
        assert!(parse(&["--nope", "1"])
            .unwrap_err()
            .to_string()
            .contains("unknown option"));
        assert!(parse(&["count"])
            .unwrap_err()
            .to_string()
            .contains("unexpected"));
    }
}
