//! Which scenarios run, with which arguments, for which clients, how many rounds.

use serde::{Deserialize, Serialize};

use super::Mode;

/// The namespace of the watch scenario's ConfigMaps on kclient-fake.
pub(crate) const WATCH_NAMESPACE: &str = "bench-watch";
/// How many ConfigMaps the watch scenario updates in turn.
pub(crate) const WATCH_OBJECTS: usize = 1000;
/// The namespace of the controller scenario's ConfigMaps and the Secrets they own.
pub(crate) const CONTROLLER_NAMESPACE: &str = "bench-controller";

/// What a scenario measures (and which fields of a result the report reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Kind {
    /// 1: informer start to synced.
    Sync,
    /// 2: events through an informer to three handlers and a workqueue.
    Watch,
    /// 3: workqueue operations.
    Workqueue,
    /// 4: `by_index` lookups after a sync.
    Index,
    /// 5: one unpaged typed list.
    Decode,
    /// 8: a controller runtime, from its start to every object reconciled.
    Controller,
}

impl Kind {
    /// The numeric fields every result of this kind has.
    pub(crate) fn fields(self) -> &'static [&'static str] {
        match self {
            Kind::Sync => &["wall_s", "cpu_s", "rss_before", "rss_after", "objects"],
            Kind::Watch => &["events_per_s", "updates"],
            Kind::Workqueue => &["items_per_s"],
            Kind::Index => &["lookups_per_s", "found_per_lookup"],
            Kind::Decode => &["seconds", "objects"],
            Kind::Controller => &["initial_s", "cpu_s", "rss_after", "reconciles", "objects"],
        }
    }
}

/// Which program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Program {
    Kclient,
    ClientGo,
    KubeRs,
}

/// A client as the report names it: a program and its extra arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Client {
    pub(crate) name: String,
    pub(crate) program: Program,
    pub(crate) args: Vec<String>,
}

fn client(name: &str, program: Program, args: &[&str]) -> Client {
    Client {
        name: name.into(),
        program,
        args: args.iter().map(|a| a.to_string()).collect(),
    }
}

pub(crate) const KCLIENT: &str = "kclient";
pub(crate) const KCLIENT_HTTP1: &str = "kclient (HTTP/1.1)";
pub(crate) const KCLIENT_COMPACT: &str = "kclient (compact cache)";
pub(crate) const KCLIENT_PROJECTION: &str = "kclient (PodView projection)";
/// The controller scenario's controller caching the Secrets it owns whole (`owns`) rather
/// than their metadata (`owns_metadata`, kclient-bench's default).
pub(crate) const KCLIENT_OWNS_WHOLE: &str = "kclient (owns whole objects)";
pub(crate) const CLIENT_GO: &str = "client-go";
pub(crate) const CLIENT_GO_JSON: &str = "client-go (JSON)";
pub(crate) const KUBE_RS: &str = "kube-rs";

/// One scenario in one configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Scenario {
    pub(crate) id: String,
    pub(crate) title: String,
    pub(crate) kind: Kind,
    pub(crate) rounds: usize,
    /// Arguments for every client (the kubeconfig is added).
    pub(crate) args: Vec<String>,
    pub(crate) clients: Vec<Client>,
    /// The watch scenario's namespace.
    pub(crate) namespace: Option<String>,
    /// The watch scenario's updates.
    pub(crate) updates: usize,
    /// When a scenario was measured by a run of its own (`--only`) and merged into the
    /// results of an earlier run: that run's date, commit and mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) measured: Option<String>,
}

fn thousands(n: usize) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

fn scenario(
    id: String,
    title: String,
    kind: Kind,
    rounds: usize,
    args: Vec<String>,
    clients: Vec<Client>,
) -> Scenario {
    Scenario {
        id,
        title,
        kind,
        rounds,
        args,
        clients,
        namespace: None,
        updates: 0,
        measured: None,
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// The arguments of an initial sync of `pods` Pods (`mode`: `list` or `stream`; `managed`:
/// `keep` or `strip`), in `namespace` if given.
fn sync_args(pods: usize, mode: &str, managed: &str, namespace: Option<&str>) -> Vec<String> {
    let mut args = strings(&[
        "sync",
        "--count",
        &pods.to_string(),
        "--mode",
        mode,
        "--managed-fields",
        managed,
    ]);
    if let Some(ns) = namespace {
        args.extend(strings(&["--namespace", ns]));
    }
    args
}

/// Initial syncs of `pods` Pods: (mode, managedFields) pairs.
fn syncs(
    pods: usize,
    configs: &[(&str, &str)],
    rounds: usize,
    namespace: Option<&str>,
    clients: &[Client],
) -> Vec<Scenario> {
    configs
        .iter()
        .map(|(mode, managed)| {
            let args = sync_args(pods, mode, managed, namespace);
            let by = if *mode == "stream" {
                "streaming list"
            } else {
                "paged list"
            };
            let fields = if *managed == "keep" {
                "managedFields kept"
            } else {
                "managedFields stripped"
            };
            scenario(
                format!("sync-{}-{mode}-{managed}", thousands(pods)),
                format!("1. initial sync, {} Pods, {by}, {fields}", thousands(pods)),
                Kind::Sync,
                rounds,
                args,
                clients.to_vec(),
            )
        })
        .collect()
}

/// Scenario 7: the cache's representations (issue 27) side by side with client-go — decoded,
/// compact, a projection — with the resident set read again once the sync is `settle`
/// seconds old and lister `get`s timed.
fn representations(pods: usize, rounds: usize, namespace: Option<&str>) -> Scenario {
    let mut args = sync_args(pods, "list", "strip", namespace);
    args.extend(strings(&["--settle", "10"]));
    // Lister `get`s are timed for kclient's caches only (the client-go peer has no such flag).
    let gets = ["--gets", "20000"];
    scenario(
        format!("representations-{}", thousands(pods)),
        format!(
            "7. cache representations, {} Pods, paged list, managedFields stripped",
            thousands(pods)
        ),
        Kind::Sync,
        rounds,
        args,
        vec![
            client(KCLIENT, Program::Kclient, &gets),
            client(
                KCLIENT_COMPACT,
                Program::Kclient,
                &["--cache", "compact", gets[0], gets[1]],
            ),
            client(
                KCLIENT_PROJECTION,
                Program::Kclient,
                &["--kind", "pod-view", gets[0], gets[1]],
            ),
            client(CLIENT_GO, Program::ClientGo, &[]),
        ],
    )
}

fn watch(updates: usize, rounds: usize, namespace: &str, clients: &[Client]) -> Scenario {
    let mut s = scenario(
        format!("watch-{}", thousands(updates)),
        format!(
            "2. watch, {} updates → 3 handlers → workqueue",
            thousands(updates)
        ),
        Kind::Watch,
        rounds,
        strings(&[
            "watch",
            "--namespace",
            namespace,
            "--count",
            &updates.to_string(),
        ]),
        clients.to_vec(),
    );
    s.namespace = Some(namespace.to_owned());
    s.updates = updates;
    s
}

fn decode(
    pods: usize,
    rounds: usize,
    repeat: usize,
    namespace: Option<&str>,
    clients: &[Client],
) -> Scenario {
    let mut args = strings(&[
        "decode",
        "--count",
        &pods.to_string(),
        "--repeat",
        &repeat.to_string(),
    ]);
    if let Some(ns) = namespace {
        args.extend(strings(&["--namespace", ns]));
    }
    scenario(
        format!("decode-{}", thousands(pods)),
        format!("5. one unpaged list of {} Pods", thousands(pods)),
        Kind::Decode,
        rounds,
        args,
        clients.to_vec(),
    )
}

/// Scenario 6: informers of `config_maps` ConfigMaps (all the server holds besides nothing),
/// by streaming list (`rounds`) and by paged list (one round: kclient-fake's paged lists of a
/// million objects take about a minute, whoever asks).
fn scale(config_maps: usize, rounds: usize, clients: &[Client]) -> Vec<Scenario> {
    [
        ("stream", "streaming list", rounds),
        ("list", "paged list", 1),
    ]
    .into_iter()
    .map(|(mode, by, rounds)| {
        scenario(
            format!("scale-{}-{mode}", thousands(config_maps)),
            format!(
                "6. scale, {} ConfigMaps cached, {by}, managedFields stripped",
                thousands(config_maps)
            ),
            Kind::Sync,
            rounds,
            strings(&[
                "sync",
                "--kind",
                "configmaps",
                "--count",
                &config_maps.to_string(),
                "--mode",
                mode,
                "--managed-fields",
                "strip",
            ]),
            clients.to_vec(),
        )
    })
    .collect()
}

/// Scenario 8: kclient's reconcile runtime beside kube-rs's `Controller`, on `objects`
/// ConfigMaps owning a Secret each: one controller (to every object reconciled, then the
/// turnaround of reconciles that requeue themselves at once) and three controllers sharing
/// the two types (the memory of one cache per type against one per controller).
fn controllers(objects: usize, rounds: usize) -> Vec<Scenario> {
    let clients = [
        client(KCLIENT, Program::Kclient, &[]),
        client(KUBE_RS, Program::KubeRs, &[]),
    ];
    let args = |controllers: &str, extra: &[&str]| {
        let mut args = strings(&[
            "controller",
            "--namespace",
            CONTROLLER_NAMESPACE,
            "--count",
            &objects.to_string(),
            "--controllers",
            controllers,
            "--concurrency",
            "4",
        ]);
        args.extend(strings(extra));
        args
    };
    let n = thousands(objects);
    vec![
        scenario(
            format!("controller-{n}"),
            format!("8. controller, {n} ConfigMaps owning a Secret each, 4 workers: start to all reconciled"),
            Kind::Controller,
            rounds,
            args("1", &[]),
            vec![
                clients[0].clone(),
                client(KCLIENT_OWNS_WHOLE, Program::Kclient, &["--owns", "whole"]),
                clients[1].clone(),
            ],
        ),
        // kube-rs takes minutes to reach every key once in this one (see docs/benchmarks.md).
        scenario(
            format!("controller-requeue-{n}"),
            format!("8. controller, {n} keys requeueing themselves at once, 4 workers"),
            Kind::Controller,
            rounds.min(3),
            args("1", &["--requeue", "--settle", "5"]),
            clients.to_vec(),
        ),
        scenario(
            format!("controllers-3-{n}"),
            format!("8. three controllers sharing ConfigMaps and Secrets, {n} of each"),
            Kind::Controller,
            rounds,
            args("3", &[]),
            // The Secrets are cached whole anyway (the second controller's primary type): the
            // owning controller shares that cache rather than add a metadata one.
            vec![
                client(KCLIENT, Program::Kclient, &["--owns", "whole"]),
                clients[1].clone(),
            ],
        ),
    ]
}

/// One server of the kclient-fake runs: the Pods and the ConfigMaps it holds (and the
/// controller scenario's ConfigMaps owning a Secret each), and the scenarios run against it.
pub(crate) struct FakeRun {
    pub(crate) pods: usize,
    pub(crate) config_maps: usize,
    pub(crate) owned: usize,
    pub(crate) scenarios: Vec<Scenario>,
}

/// The kclient-fake runs, one server each.
pub(crate) fn fake(mode: Mode) -> Vec<FakeRun> {
    let all = [
        client(KCLIENT, Program::Kclient, &[]),
        client(CLIENT_GO, Program::ClientGo, &[]),
        client(KUBE_RS, Program::KubeRs, &[]),
    ];
    let with_index = [
        client(KCLIENT, Program::Kclient, &[]),
        client(CLIENT_GO, Program::ClientGo, &[]),
    ];
    let http = [
        client(KCLIENT, Program::Kclient, &[]),
        client(KCLIENT_HTTP1, Program::Kclient, &["--http1"]),
    ];
    let decoders = [
        client(KCLIENT, Program::Kclient, &[]),
        client(KCLIENT_HTTP1, Program::Kclient, &["--http1"]),
        client(CLIENT_GO, Program::ClientGo, &[]),
        client(KUBE_RS, Program::KubeRs, &[]),
    ];
    let (small, rounds) = if mode.smoke {
        (50, 1)
    } else if mode.quick {
        (10_000, 3)
    } else {
        (10_000, 5)
    };
    let (updates, iterations, lookups) = if mode.smoke {
        (200, 100, 100)
    } else if mode.quick {
        (20_000, 20_000, 20_000)
    } else {
        (100_000, 20_000, 100_000)
    };
    let mut first = syncs(
        small,
        if mode.quick || mode.smoke {
            &[("list", "strip"), ("stream", "strip"), ("list", "keep")]
        } else {
            &[
                ("list", "strip"),
                ("stream", "strip"),
                ("list", "keep"),
                ("stream", "keep"),
            ]
        },
        rounds,
        None,
        &all,
    );
    first.push(decode(small, rounds, 3, None, &decoders));
    first.push(watch(updates, rounds.min(3), WATCH_NAMESPACE, &all));
    for shape in ["queue", "contended"] {
        first.push(scenario(
            format!("workqueue-{shape}"),
            if shape == "queue" {
                "3. workqueue, BenchmarkQueue shape (100 keys add/get/done)".into()
            } else {
                "3. workqueue, 4 producers / 2 workers, 40k keys".into()
            },
            Kind::Workqueue,
            rounds.min(3),
            strings(&[
                "workqueue",
                "--shape",
                shape,
                "--iterations",
                &iterations.to_string(),
                "--repeat",
                "3",
            ]),
            with_index.to_vec(),
        ));
    }
    let index = |pods: usize, rounds: usize| {
        scenario(
            format!("index-{}", thousands(pods)),
            format!(
                "4. by_index lookups over {} Pods (custom by-node index)",
                thousands(pods)
            ),
            Kind::Index,
            rounds,
            {
                let mut args = sync_args(pods, "list", "strip", None);
                args.extend(strings(&["--lookups", &lookups.to_string()]));
                args
            },
            with_index.to_vec(),
        )
    };
    let controller_run = FakeRun {
        pods: 0,
        config_maps: 0,
        owned: small,
        scenarios: controllers(small, rounds),
    };
    if mode.quick || mode.smoke {
        first.push(index(small, rounds));
        return vec![
            FakeRun {
                pods: small,
                config_maps: WATCH_OBJECTS,
                owned: 0,
                scenarios: first,
            },
            controller_run,
        ];
    }
    let large = 100_000;
    let mut second = syncs(
        large,
        &[("list", "strip"), ("stream", "strip"), ("list", "keep")],
        3,
        None,
        &all,
    );
    second.push(index(large, 3));
    second.push(decode(large, 3, 2, None, &http));
    second.push(representations(large, 3, None));
    let scale_objects = 1_000_000;
    vec![
        FakeRun {
            pods: small,
            config_maps: WATCH_OBJECTS,
            owned: 0,
            scenarios: first,
        },
        FakeRun {
            pods: large,
            config_maps: WATCH_OBJECTS,
            owned: 0,
            scenarios: second,
        },
        FakeRun {
            pods: 0,
            config_maps: scale_objects,
            owned: 0,
            scenarios: scale(scale_objects, 2, &all),
        },
        controller_run,
    ]
}

/// The real kube-apiserver run: how many Pods to create in `namespace`, and the scenarios.
pub(crate) fn real(mode: Mode, namespace: &str) -> (usize, Vec<Scenario>) {
    let all = [
        client(KCLIENT, Program::Kclient, &[]),
        client(CLIENT_GO, Program::ClientGo, &[]),
        client(
            CLIENT_GO_JSON,
            Program::ClientGo,
            &["--content-type", "json"],
        ),
        client(KUBE_RS, Program::KubeRs, &[]),
    ];
    let decoders = [
        client(KCLIENT, Program::Kclient, &[]),
        client(KCLIENT_HTTP1, Program::Kclient, &["--http1"]),
        client(CLIENT_GO, Program::ClientGo, &[]),
        client(
            CLIENT_GO_JSON,
            Program::ClientGo,
            &["--content-type", "json"],
        ),
        client(KUBE_RS, Program::KubeRs, &[]),
    ];
    let pods = 10_000;
    let rounds = if mode.quick { 3 } else { 5 };
    let updates = if mode.quick { 10_000 } else { 20_000 };
    let mut scenarios = syncs(
        pods,
        &[("list", "strip"), ("stream", "strip"), ("list", "keep")],
        rounds,
        Some(namespace),
        &all,
    );
    scenarios.push(decode(pods, rounds, 3, Some(namespace), &decoders));
    scenarios.push(watch(updates, rounds.min(3), namespace, &all));
    scenarios.push(representations(pods, rounds, Some(namespace)));
    (pods, scenarios)
}
