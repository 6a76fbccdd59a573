//! Targeted reactors (client-go's `PrependReactor`/`AddReactor`), recorded actions
//! (`Actions()`/`ClearActions()`) and `wait_until`, over HTTP.

use std::time::Duration;

use http::StatusCode;
use kclient_core::PatchType;
use kclient_fake::{ActionFilter, Failure, FakeApiServer, Reaction, Reactor};
use serde_json::json;

use crate::common::{configmap, server, with_configmap, Client, MERGE};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn item(name: &str) -> String {
    format!("{CONFIGMAPS}/{name}")
}

#[tokio::test]
async fn a_one_shot_reactor_fails_only_the_request_it_picks() {
    let (server, c) = with_configmap("a").await;
    let conflict = server.reactors().prepend(
        Reactor::new(
            ActionFilter::new("update", "configmaps")
                .namespace("default")
                .name("a"),
            Reaction::Fail(Failure::status(409).message("injected conflict")),
        )
        .times(1),
    );
    // The test's own read is not touched.
    let current = c.get(&item("a")).await;
    assert_eq!(current.status, StatusCode::OK);
    let first = c.put(&item("a"), &current.body).await;
    assert_eq!(first.status, StatusCode::CONFLICT);
    assert_eq!(first.body["reason"], "Conflict");
    assert_eq!(first.body["message"], "injected conflict");
    assert_eq!(conflict.uses(), 1);
    assert!(!conflict.is_active(), "a one-shot reactor leaves the chain");
    let second = c.put(&item("a"), &current.body).await;
    assert_eq!(second.status, StatusCode::OK, "{}", second.body);
}

#[tokio::test]
async fn n_times_then_served_and_until_removed() {
    let (server, c) = with_configmap("a").await;
    let twice = server.reactors().prepend(
        Reactor::new(
            ActionFilter::new("get", "configmaps"),
            Reaction::Fail(Failure::status(503).retry_after(2)),
        )
        .times(2),
    );
    for _ in 0..2 {
        let r = c.get(&item("a")).await;
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers["retry-after"], "2");
    }
    assert_eq!(c.get(&item("a")).await.status, StatusCode::OK);
    assert_eq!(twice.uses(), 2);

    let forever = server.reactors().prepend(Reactor::new(
        ActionFilter::new("list", "configmaps"),
        Reaction::Fail(Failure::status(500)),
    ));
    for _ in 0..3 {
        assert_eq!(
            c.get(CONFIGMAPS).await.status,
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }
    assert!(forever.is_active());
    assert!(forever.remove());
    assert!(!forever.remove(), "removed once");
    assert_eq!(c.get(CONFIGMAPS).await.status, StatusCode::OK);
    assert_eq!(forever.uses(), 3);
}

#[tokio::test]
async fn a_reactor_can_answer_with_an_object_the_server_never_stores() {
    let (server, c) = server().await;
    let answer = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "ghost", "namespace": "default"}});
    server.reactors().prepend(Reactor::new(
        ActionFilter::new("create", "configmaps"),
        Reaction::Respond {
            code: 201,
            object: answer.clone(),
        },
    ));
    let r = c.post(CONFIGMAPS, &configmap("ghost", json!({}))).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.body, answer);
    assert_eq!(
        c.get(&item("ghost")).await.status,
        StatusCode::NOT_FOUND,
        "the server did not serve the create"
    );

    server.reactors().prepend(Reactor::new(
        ActionFilter::new("get", "configmaps"),
        Reaction::Respond {
            code: 1000,
            object: json!({}),
        },
    ));
    let bad = c.get(&item("x")).await;
    assert_eq!(bad.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        bad.body["message"]
            .as_str()
            .unwrap()
            .contains("status code 1000"),
        "{}",
        bad.body
    );
}

#[tokio::test(start_paused = true)]
async fn a_delay_waits_then_lets_the_request_through() {
    let (server, c) = with_configmap("a").await;
    let slow = server.reactors().prepend(
        Reactor::new(
            ActionFilter::new("get", "configmaps").name("a"),
            Reaction::Delay(Duration::from_secs(20)),
        )
        .times(1),
    );
    let before = tokio::time::Instant::now();
    let r = c.get(&item("a")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(before.elapsed() >= Duration::from_secs(20));
    assert_eq!(slow.uses(), 1);
    let before = tokio::time::Instant::now();
    c.get(&item("a")).await;
    assert!(before.elapsed() < Duration::from_secs(20), "one shot");
}

#[tokio::test]
async fn prepend_goes_first_add_goes_last_and_a_pass_through_uses_nothing() {
    let (server, c) = with_configmap("a").await;
    let get = || ActionFilter::new("get", "configmaps");
    let last = server
        .reactors()
        .add(Reactor::new(get(), Reaction::Fail(Failure::status(500))));
    let first = server
        .reactors()
        .prepend(Reactor::new(get(), Reaction::Fail(Failure::status(503))).times(1));
    // A reaction function that lets everything by: counted as no use.
    let watcher = server.reactors().prepend(Reactor::from_fn(get(), |action| {
        if action.name.as_deref() == Some("special") {
            Reaction::Fail(Failure::status(418))
        } else {
            Reaction::PassThrough
        }
    }));
    assert_eq!(
        c.get(&item("a")).await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(
        c.get(&item("a")).await.status,
        StatusCode::INTERNAL_SERVER_ERROR
    );
    assert_eq!(c.get(&item("special")).await.status.as_u16(), 418);
    assert_eq!(
        (first.uses(), last.uses(), watcher.uses()),
        (1, 1, 1),
        "the pass-throughs were not counted"
    );
    server.reactors().clear();
    assert_eq!(c.get(&item("a")).await.status, StatusCode::OK);
    assert!(!last.is_active() && !watcher.is_active());
}

#[tokio::test]
async fn subresource_and_user_agent_narrow_a_reactor() {
    let (server, c) = server().await;
    let created = c
        .post(
            "/apis/apps/v1/namespaces/default/deployments",
            &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "web"},
                    "spec": {"selector": {"matchLabels": {"app": "web"}},
                             "template": {"metadata": {"labels": {"app": "web"}},
                                          "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let path = "/apis/apps/v1/namespaces/default/deployments/web";
    server.reactors().prepend(Reactor::new(
        ActionFilter::new("patch", "deployments/status"),
        Reaction::Fail(Failure::status(409)),
    ));
    let status_patch = r#"{"status":{"replicas":1}}"#;
    assert_eq!(
        c.patch(&format!("{path}/status"), MERGE, status_patch)
            .await
            .status,
        StatusCode::CONFLICT
    );
    assert_eq!(
        c.patch(path, MERGE, r#"{"metadata":{"labels":{"a":"b"}}}"#)
            .await
            .status,
        StatusCode::OK,
        "the main resource is not the status subresource"
    );

    // A fault for the controller only: the test's own client is not touched.
    server.reactors().prepend(Reactor::new(
        ActionFilter::any().user_agent("my-controller"),
        Reaction::Fail(Failure::status(500)),
    ));
    let controller = Client::new(&server).with_header("user-agent", "my-controller/v0.1 (linux)");
    assert_eq!(
        controller.get(path).await.status,
        StatusCode::INTERNAL_SERVER_ERROR
    );
    assert_eq!(c.get(path).await.status, StatusCode::OK);
}

#[tokio::test]
async fn injected_failures_are_reactors_at_the_end_of_the_chain() {
    let (server, c) = with_configmap("a").await;
    server.faults().fail_next(1, Failure::status(503));
    server.faults().fail_next(1, Failure::status(502));
    assert_eq!(server.faults().pending_failures(), 2);
    // A reactor prepended by the test answers first; the injected failures wait.
    server.reactors().prepend(
        Reactor::new(
            ActionFilter::new("get", "configmaps"),
            Reaction::Fail(Failure::status(409)),
        )
        .times(1),
    );
    assert_eq!(c.get(&item("a")).await.status, StatusCode::CONFLICT);
    assert_eq!(server.faults().pending_failures(), 2);
    assert_eq!(c.get("/version").await.status.as_u16(), 503);
    assert_eq!(c.get("/version").await.status.as_u16(), 502);
    assert_eq!(server.faults().pending_failures(), 0);
    // clear() leaves injected failures alone; clear_failures() leaves reactors alone.
    server.faults().fail_next(3, Failure::status(500));
    let reactor = server.reactors().add(Reactor::new(
        ActionFilter::new("delete", "configmaps"),
        Reaction::Fail(Failure::status(403)),
    ));
    server.reactors().clear();
    assert_eq!(server.faults().pending_failures(), 3);
    assert!(!reactor.is_active());
    server.faults().clear_failures();
    assert_eq!(c.get(&item("a")).await.status, StatusCode::OK);
}

#[tokio::test]
async fn every_request_is_recorded_with_what_it_carried() {
    let (server, c) = server().await;
    server.clear_actions();
    c.post(CONFIGMAPS, &configmap("a", json!({"k": "v"}))).await;
    c.patch(&item("a"), MERGE, r#"{"data":{"k":"w"}}"#).await;
    c.get(&format!("{CONFIGMAPS}?labelSelector=app%3Dweb"))
        .await;
    c.get("/api/v1").await;
    // A request a reactor answered is recorded too.
    server.reactors().prepend(Reactor::new(
        ActionFilter::new("delete", "configmaps"),
        Reaction::Fail(Failure::status(500)),
    ));
    c.delete(&item("a")).await;

    let actions = server.actions();
    let summary: Vec<(String, Option<String>, Option<String>)> = actions
        .iter()
        .map(|a| {
            (
                a.verb.clone(),
                a.resource.as_ref().map(|r| r.resource.clone()),
                a.name.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("create".into(), Some("configmaps".into()), None),
            ("patch".into(), Some("configmaps".into()), Some("a".into())),
            ("list".into(), Some("configmaps".into()), None),
            ("get".into(), None, None),
            ("delete".into(), Some("configmaps".into()), Some("a".into())),
        ]
    );
    let create = &actions[0];
    assert_eq!(create.namespace.as_deref(), Some("default"));
    assert_eq!(create.object().unwrap()["data"]["k"], "v");
    assert_eq!(create.user_agent.as_deref(), Some("kclient-fake-tests/0.1"));
    let patch = &actions[1];
    assert_eq!(patch.patch_type, Some(PatchType::Merge));
    assert_eq!(patch.object(), Some(json!({"data": {"k": "w"}})));
    assert_eq!(
        actions[2].query_param("labelSelector").as_deref(),
        Some("app=web")
    );
    assert_eq!(actions[3].path, "/api/v1");

    let filtered = server.actions_matching(&ActionFilter::new("*", "configmaps").name("a"));
    assert_eq!(filtered.len(), 2);
    assert!(filtered[0].matches("patch", "configmaps"));
    server.clear_actions();
    assert!(server.actions().is_empty());
    assert_eq!(server.actions_dropped(), 0);
}

#[tokio::test]
async fn the_action_history_keeps_the_most_recent_and_says_how_many_went() {
    let server = FakeApiServer::builder()
        .action_history(3)
        .start()
        .await
        .unwrap();
    let c = Client::new(&server);
    for i in 0..5 {
        c.get(&item(&format!("cm-{i}"))).await;
    }
    let names: Vec<String> = server
        .actions()
        .into_iter()
        .filter_map(|a| a.name)
        .collect();
    assert_eq!(names, ["cm-2", "cm-3", "cm-4"]);
    assert_eq!(server.actions_dropped(), 2);

    let silent = FakeApiServer::builder()
        .action_history(0)
        .start()
        .await
        .unwrap();
    Client::new(&silent).get("/version").await;
    assert!(silent.actions().is_empty());
    assert_eq!(silent.actions_dropped(), 1);
}

#[tokio::test]
async fn wait_until_wakes_on_a_change_and_returns_at_once_when_it_holds() {
    let (server, c) = server().await;
    server
        .wait_until(Duration::from_secs(1), |_| true)
        .await
        .expect("holds at once");
    let writer = tokio::spawn(async move {
        c.post(CONFIGMAPS, &configmap("late", json!({"k": "v"})))
            .await
            .status
    });
    server
        .wait_until(Duration::from_secs(30), |s| {
            s.get_value(
                &kclient_core::GroupResource::new("", "configmaps"),
                "default",
                "late",
            )
            .is_some()
        })
        .await
        .expect("the object arrives");
    assert_eq!(writer.await.unwrap(), StatusCode::CREATED);
    // A condition on the recorded actions: a refused request changes no object.
    let c = Client::new(&server);
    let reader = tokio::spawn(async move { c.get(&item("missing")).await.status });
    server
        .wait_until(Duration::from_secs(30), |s| {
            !s.actions_matching(&ActionFilter::new("get", "configmaps").name("missing"))
                .is_empty()
        })
        .await
        .expect("the request is seen");
    assert_eq!(reader.await.unwrap(), StatusCode::NOT_FOUND);
}

#[tokio::test(start_paused = true)]
async fn wait_until_gives_up_at_its_bound() {
    let (server, _c) = server().await;
    let before = tokio::time::Instant::now();
    let err = server
        .wait_until(Duration::from_secs(5), |_| false)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kclient_fake::Error::WaitTimeout { timeout, .. } if timeout == Duration::from_secs(5))
    );
    assert!(before.elapsed() >= Duration::from_secs(5));
}

/// A timed-out wait says where it was called and what its condition last read (issue 49: it
/// said only `the condition did not hold within 10s`).
#[tokio::test(start_paused = true)]
async fn a_timed_out_wait_names_its_caller_and_what_the_condition_read() {
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    let (server, c) = server().await;
    c.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("settings", json!({"mode": "slow"})),
    )
    .await;
    let first = line!();
    let err = server
        .wait_until(Duration::from_secs(5), |s| {
            let fast = s
                .get::<ConfigMap>("default", "settings")
                .and_then(|cm| cm.data)
                .is_some_and(|d| d["mode"] == "fast");
            let pods = s.list::<Pod>(Some("default"));
            let missing = s.get::<ConfigMap>("default", "missing");
            let requests = s.actions();
            fast && pods.is_empty() && missing.is_some() && !requests.is_empty()
        })
        .await
        .unwrap_err();
    let last = line!();
    let kclient_fake::Error::WaitTimeout { location, .. } = &err else {
        panic!("not a timeout: {err}");
    };
    assert_eq!(location.file(), file!());
    assert!((first..last).contains(&location.line()), "{location}");
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("the condition at {location} did not hold within 5s; it last read: configmaps default/settings: {{")),
        "{message}"
    );
    for part in [
        r#""data":{"mode":"slow"}"#,
        "; pods in namespace default: 0 ()",
        "; configmaps default/missing: absent",
        "; the recorded actions: 1",
    ] {
        assert!(message.contains(part), "{part} not in {message}");
    }
    assert!(!message.contains("managedFields"), "{message}");
}
