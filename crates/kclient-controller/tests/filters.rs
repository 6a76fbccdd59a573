//! Event filters on tokio's paused clock: a predicate of every event kind on the primary
//! (controller-runtime's `LabelSelectorPredicate`, `Not`), the controller-wide
//! `with_event_filter` over every watched type (controller-runtime's `WithEventFilter`), and
//! `owns` matching every owner reference (`builder.MatchEveryOwner`).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kclient_cache::SharedInformerFactory;
use kclient_controller::owner::set_owner_reference;
use kclient_controller::predicate::{label_selector, resource_version_changed};
use kclient_controller::{Action, Controller, OwnsOptions, ReconcileContext, Reconciler};
use kclient_core::{CancellationToken, ResourceExt};

use crate::support::{config_map, deployment, Probe, Sources};

async fn settle() {
    tokio::time::sleep(Duration::from_secs(1)).await;
}

fn labelled(name: &str, tier: &str) -> ConfigMap {
    config_map("default", name, &[]).labels_from([("tier", tier)])
}

trait Labelled {
    fn labels_from<const N: usize>(self, labels: [(&str, &str); N]) -> Self;
}

impl Labelled for ConfigMap {
    fn labels_from<const N: usize>(mut self, labels: [(&str, &str); N]) -> Self {
        self.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        self
    }
}

/// A ConfigMap reconciler counting reconciles and deletions.
struct Counting(Arc<Probe>, Arc<parking_lot::Mutex<Vec<String>>>);

impl Reconciler<ConfigMap> for Counting {
    type Error = std::convert::Infallible;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        ctx: &ReconcileContext,
    ) -> Result<Action, Self::Error> {
        let _running = self
            .0
            .begin(ctx.key(), ctx.retries(), cm.resource_version());
        Ok(Action::await_change())
    }

    async fn reconcile_deleted(
        &self,
        _: Option<Arc<ConfigMap>>,
        ctx: &ReconcileContext,
    ) -> Result<Action, Self::Error> {
        self.1.lock().push(ctx.key().to_string());
        Ok(Action::await_change())
    }
}

/// `LabelSelectorPredicate` on the primary filters adds, updates and deletes by the
/// object's labels; its `not` takes the others.
#[tokio::test(start_paused = true)]
async fn a_label_selector_filters_every_event_of_the_primary() {
    for negated in [false, true] {
        let sources = Sources::default();
        let web = sources.config_maps.add(labelled("web", "web"));
        let db = sources.config_maps.add(labelled("db", "db"));
        let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
        let selected = label_selector::<ConfigMap>("tier=web".parse().unwrap());
        let predicate = if negated { !selected } else { selected };
        let probe = Arc::new(Probe::default());
        let controller =
            Controller::<ConfigMap, _>::new("config-maps", &factory).with_predicate(predicate);
        let stop = CancellationToken::new();
        let deleted = Arc::default();
        let reconciler = Counting(Arc::clone(&probe), Arc::clone(&deleted));
        let task = tokio::spawn(controller.run(reconciler, stop.clone()));
        settle().await;
        let (passing, filtered) = if negated {
            ("default/db", "default/web")
        } else {
            ("default/web", "default/db")
        };
        assert_eq!((probe.count(passing), probe.count(filtered)), (1, 0));
        // Updates: of the selected object pass; a relabel is judged by the new labels.
        let web = sources.config_maps.modify(ConfigMap {
            data: Some([("k".to_owned(), "v".to_owned())].into()),
            ..web
        });
        let db = sources.config_maps.modify(ConfigMap {
            data: Some([("k".to_owned(), "v".to_owned())].into()),
            ..db
        });
        settle().await;
        assert_eq!((probe.count(passing), probe.count(filtered)), (2, 0));
        sources.config_maps.delete(web);
        sources.config_maps.delete(db);
        settle().await;
        assert_eq!(*deleted.lock(), [passing], "deletes filtered too");
        stop.cancel();
        task.await.unwrap().unwrap();
        factory.shutdown().await;
    }
}

/// A Deployment reconciler counting its reconciles.
struct Owners(Arc<Probe>);

impl Reconciler<Deployment> for Owners {
    type Error = std::convert::Infallible;

    async fn reconcile(
        &self,
        d: Arc<Deployment>,
        ctx: &ReconcileContext,
    ) -> Result<Action, Self::Error> {
        let _running = self.0.begin(ctx.key(), ctx.retries(), d.resource_version());
        Ok(Action::await_change())
    }
}

fn with_uid(mut d: Deployment) -> Deployment {
    d.metadata.uid = Some(format!("{}-uid", d.name_any()));
    d
}

/// `WithEventFilter`: the filter applies to the primary and to owned objects alike, beside
/// each source's own predicates.
#[tokio::test(start_paused = true)]
async fn the_event_filter_applies_to_every_watched_type() {
    let sources = Sources::default();
    let mut blue = with_uid(deployment("default", "blue", 1));
    blue.metadata.labels = Some([("tenant".to_owned(), "blue".to_owned())].into());
    let blue = sources.deployments.add(blue);
    let green = sources
        .deployments
        .add(with_uid(deployment("default", "green", 1)));
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let probe = Arc::new(Probe::default());
    let controller = Controller::<Deployment, _>::new("deployments", &factory)
        .owns_with::<ConfigMap>(resource_version_changed())
        .with_event_filter(label_selector("tenant=blue".parse().unwrap()));
    let stop = CancellationToken::new();
    let task = tokio::spawn(controller.run(Owners(Arc::clone(&probe)), stop.clone()));
    settle().await;
    assert_eq!(
        (probe.count("default/blue"), probe.count("default/green")),
        (1, 0)
    );

    // Owned ConfigMaps: only the tenant's map to their owner.
    let mut owned_blue =
        config_map("default", "blue-settings", &[]).labels_from([("tenant", "blue")]);
    kclient_controller::owner::set_controller_reference(&blue, &mut owned_blue).unwrap();
    sources.config_maps.add(owned_blue);
    let mut unlabelled = config_map("default", "blue-other", &[]);
    kclient_controller::owner::set_controller_reference(&blue, &mut unlabelled).unwrap();
    sources.config_maps.add(unlabelled);
    let mut owned_green =
        config_map("default", "green-settings", &[]).labels_from([("tenant", "blue")]);
    kclient_controller::owner::set_controller_reference(&green, &mut owned_green).unwrap();
    sources.config_maps.add(owned_green);
    settle().await;
    // blue-settings queues blue; blue-other is filtered out; green-settings (of the tenant)
    // queues green: the filter judges events, not the keys they map to, so green is
    // reconciled once, from its owned object's event, though its own add was filtered.
    assert_eq!(
        (probe.count("default/blue"), probe.count("default/green")),
        (2, 1)
    );
    stop.cancel();
    task.await.unwrap().unwrap();
    factory.shutdown().await;
}

/// `Owns(…, builder.MatchEveryOwner)`: every owner reference naming a Deployment queues it,
/// controller or not; by default only the controller does.
#[tokio::test(start_paused = true)]
async fn owns_may_match_every_owner_reference() {
    for every in [false, true] {
        let sources = Sources::default();
        let web = sources
            .deployments
            .add(with_uid(deployment("default", "web", 1)));
        let api = sources
            .deployments
            .add(with_uid(deployment("default", "api", 1)));
        let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
        let probe = Arc::new(Probe::default());
        let options = if every {
            OwnsOptions::new().match_every_owner()
        } else {
            OwnsOptions::new()
        };
        let controller = Controller::<Deployment, _>::new("deployments", &factory)
            .owns_with::<ConfigMap>(options);
        let stop = CancellationToken::new();
        let task = tokio::spawn(controller.run(Owners(Arc::clone(&probe)), stop.clone()));
        settle().await;
        let mut shared = config_map("default", "shared", &[]);
        kclient_controller::owner::set_controller_reference(&web, &mut shared).unwrap();
        set_owner_reference(&api, &mut shared).unwrap();
        // A reference to another kind is never matched.
        shared
            .metadata
            .owner_references
            .as_mut()
            .unwrap()
            .push(OwnerReference {
                api_version: "apps/v1".into(),
                kind: "StatefulSet".into(),
                name: "web".into(),
                uid: "ss-uid".into(),
                controller: None,
                block_owner_deletion: None,
            });
        sources.config_maps.add(shared);
        settle().await;
        let expected_api = if every { 2 } else { 1 };
        assert_eq!(
            (probe.count("default/web"), probe.count("default/api")),
            (2, expected_api),
            "match every owner: {every}"
        );
        stop.cancel();
        task.await.unwrap().unwrap();
        factory.shutdown().await;
    }
}
