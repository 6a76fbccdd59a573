//! Wire-format and validation tests for request options and patches: every parameter name and
//! value format, the omission rules, every validation error, patch content types and bodies, and
//! the DeleteOptions body.

use kclient_core::options::{
    CreateOptions, DeleteOptions, DeletionPropagation, FieldValidation, GetOptions, ListOptions,
    OptionsError, PatchOptions, Preconditions, ResourceVersionMatch, UpdateOptions,
    FIELD_MANAGER_MAX_LEN,
};
use kclient_core::patch::{
    escape_pointer_token, json_pointer, JsonPatch, Patch, PatchOperation, PatchType,
};
use serde::Serialize;
use serde_json::{json, Value};

fn pairs(list: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    list.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

fn body_json(bytes: Vec<u8>) -> Value {
    serde_json::from_slice(&bytes).expect("body is JSON")
}

// ---------------------------------------------------------------------------------------------
// ListOptions: parameter names and formats
// ---------------------------------------------------------------------------------------------

#[test]
fn list_each_parameter_name_and_format() {
    let cases: Vec<(ListOptions, (&'static str, &str))> = vec![
        (
            ListOptions::default().labels("app=web"),
            ("labelSelector", "app=web"),
        ),
        (
            ListOptions::default().labels("env in (a,b),!canary"),
            ("labelSelector", "env in (a,b),!canary"),
        ),
        (
            ListOptions::default().fields("metadata.name=x"),
            ("fieldSelector", "metadata.name=x"),
        ),
        (
            ListOptions::default().resource_version("12345"),
            ("resourceVersion", "12345"),
        ),
        (
            ListOptions::default().resource_version_match(ResourceVersionMatch::NotOlderThan),
            ("resourceVersionMatch", "NotOlderThan"),
        ),
        (
            ListOptions::default().resource_version_match(ResourceVersionMatch::Exact),
            ("resourceVersionMatch", "Exact"),
        ),
        (ListOptions::default().limit(500), ("limit", "500")),
        (
            ListOptions::default().continue_token("eyJ2IjoibWV0YSJ9"),
            ("continue", "eyJ2IjoibWV0YSJ9"),
        ),
        (
            ListOptions::default().timeout_seconds(290),
            ("timeoutSeconds", "290"),
        ),
        (
            ListOptions::default().allow_watch_bookmarks(true),
            ("allowWatchBookmarks", "true"),
        ),
        (
            ListOptions::default().send_initial_events(true),
            ("sendInitialEvents", "true"),
        ),
        (
            ListOptions::default().send_initial_events(false),
            ("sendInitialEvents", "false"),
        ),
    ];
    for (opts, (name, value)) in cases {
        assert_eq!(opts.query_pairs(), pairs(&[(name, value)]), "{opts:?}");
    }
}

#[test]
fn list_selectors_are_passed_through_unencoded() {
    let opts = ListOptions::default()
        .labels("a=b c&d")
        .fields("spec.nodeName=");
    assert_eq!(
        opts.query_pairs(),
        pairs(&[
            ("labelSelector", "a=b c&d"),
            ("fieldSelector", "spec.nodeName=")
        ])
    );
}

#[test]
fn list_parameters_follow_metav1_field_order() {
    let opts = ListOptions::default()
        .send_initial_events(true)
        .continue_token("c")
        .limit(1)
        .timeout_seconds(2)
        .resource_version_match(ResourceVersionMatch::NotOlderThan)
        .resource_version("3")
        .allow_watch_bookmarks(true)
        .fields("f=g")
        .labels("l");
    let names: Vec<&str> = opts.query_pairs().into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        names,
        [
            "labelSelector",
            "fieldSelector",
            "allowWatchBookmarks",
            "resourceVersion",
            "resourceVersionMatch",
            "timeoutSeconds",
            "limit",
            "continue",
            "sendInitialEvents",
        ]
    );
}

#[test]
fn list_large_and_negative_numbers_are_decimal() {
    assert_eq!(
        ListOptions::default().limit(i64::MAX).query_pairs(),
        pairs(&[("limit", "9223372036854775807")])
    );
    // Formatting does not validate: a negative value is sent as written (validate rejects it).
    assert_eq!(
        ListOptions::default().timeout_seconds(-1).query_pairs(),
        pairs(&[("timeoutSeconds", "-1")])
    );
}

// ---------------------------------------------------------------------------------------------
// ListOptions: omission rules
// ---------------------------------------------------------------------------------------------

#[test]
fn list_default_sends_no_parameters() {
    assert_eq!(ListOptions::default().query_pairs(), vec![]);
}

#[test]
fn list_omits_empty_strings_zero_limit_and_false_bookmarks() {
    // ListOptions is non-exhaustive: every field set through its setters.
    let opts = ListOptions::default()
        .labels("")
        .fields("")
        .resource_version("")
        .limit(0)
        .continue_token("")
        .allow_watch_bookmarks(false)
        .omit_managed_fields(true);
    assert_eq!(opts.resource_version_match, None);
    assert_eq!(opts.timeout_seconds, None);
    assert_eq!(opts.send_initial_events, None);
    assert_eq!(
        opts.query_pairs(),
        vec![],
        "omit_managed_fields is never sent"
    );
    assert_eq!(opts.watch_query_pairs(), pairs(&[("watch", "true")]));
}

#[test]
fn list_sends_set_pointer_fields_even_when_zero_or_false() {
    let opts = ListOptions::default()
        .timeout_seconds(0)
        .send_initial_events(false);
    assert_eq!(
        opts.query_pairs(),
        pairs(&[("timeoutSeconds", "0"), ("sendInitialEvents", "false")])
    );
}

#[test]
fn watch_query_pairs_add_watch_true_after_field_selector() {
    let opts = ListOptions::default()
        .labels("app=web")
        .fields("metadata.name=web")
        .resource_version("100")
        .allow_watch_bookmarks(true)
        .timeout_seconds(300);
    assert_eq!(
        opts.watch_query_pairs(),
        pairs(&[
            ("labelSelector", "app=web"),
            ("fieldSelector", "metadata.name=web"),
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", "100"),
            ("timeoutSeconds", "300"),
        ])
    );
    // A list never carries watch.
    assert!(opts.query_pairs().iter().all(|(k, _)| *k != "watch"));
}

#[test]
fn watch_list_query() {
    let opts = ListOptions::default().labels("app=web").watch_list();
    assert_eq!(opts.validate(true), Ok(()));
    assert_eq!(
        opts.watch_query_pairs(),
        pairs(&[
            ("labelSelector", "app=web"),
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersionMatch", "NotOlderThan"),
            ("sendInitialEvents", "true"),
        ])
    );
}

// ---------------------------------------------------------------------------------------------
// ListOptions: validation, lists
// ---------------------------------------------------------------------------------------------

#[test]
fn list_valid_combinations() {
    let valid = [
        ListOptions::default(),
        ListOptions::default().resource_version("0"),
        ListOptions::default()
            .resource_version("0")
            .resource_version_match(ResourceVersionMatch::NotOlderThan),
        ListOptions::default()
            .resource_version("42")
            .resource_version_match(ResourceVersionMatch::Exact),
        ListOptions::default().limit(500).continue_token("tok"),
        ListOptions::default()
            .limit(500)
            .continue_token("tok")
            .resource_version("0"),
        ListOptions::default().limit(0).timeout_seconds(0),
        // Watch-only options that the server ignores on a list.
        ListOptions::default().allow_watch_bookmarks(true),
    ];
    for opts in valid {
        assert_eq!(opts.validate(false), Ok(()), "{opts:?}");
    }
}

#[test]
fn list_rejects_resource_version_match_without_resource_version() {
    for rv_match in [
        ResourceVersionMatch::NotOlderThan,
        ResourceVersionMatch::Exact,
    ] {
        let opts = ListOptions::default().resource_version_match(rv_match);
        assert_eq!(
            opts.validate(false),
            Err(OptionsError::ResourceVersionMatchWithoutResourceVersion)
        );
    }
}

#[test]
fn list_rejects_resource_version_match_with_continue() {
    let opts = ListOptions::default()
        .resource_version("0")
        .resource_version_match(ResourceVersionMatch::NotOlderThan)
        .continue_token("tok");
    assert_eq!(
        opts.validate(false),
        Err(OptionsError::ResourceVersionMatchWithContinue)
    );
}

#[test]
fn list_rejects_exact_match_of_resource_version_zero() {
    let opts = ListOptions::default()
        .resource_version("0")
        .resource_version_match(ResourceVersionMatch::Exact);
    assert_eq!(
        opts.validate(false),
        Err(OptionsError::ExactResourceVersionZero)
    );
}

#[test]
fn list_rejects_send_initial_events_true_or_false() {
    for send in [true, false] {
        let opts = ListOptions::default()
            .send_initial_events(send)
            .allow_watch_bookmarks(true);
        assert_eq!(
            opts.validate(false),
            Err(OptionsError::SendInitialEventsForList)
        );
    }
}

#[test]
fn list_rejects_continue_with_a_specific_resource_version() {
    let opts = ListOptions::default()
        .continue_token("tok")
        .resource_version("12");
    assert_eq!(
        opts.validate(false),
        Err(OptionsError::ContinueWithResourceVersion {
            resource_version: "12".into()
        })
    );
}

#[test]
fn list_rejects_negative_limit_and_timeout() {
    assert_eq!(
        ListOptions::default().limit(-1).validate(false),
        Err(OptionsError::NegativeLimit(-1))
    );
    assert_eq!(
        ListOptions::default().limit(-5).validate(true),
        Err(OptionsError::NegativeLimit(-5))
    );
    assert_eq!(
        ListOptions::default().timeout_seconds(-3).validate(false),
        Err(OptionsError::NegativeTimeoutSeconds(-3))
    );
    assert_eq!(
        ListOptions::default().timeout_seconds(-3).validate(true),
        Err(OptionsError::NegativeTimeoutSeconds(-3))
    );
}

// ---------------------------------------------------------------------------------------------
// ListOptions: validation, watches
// ---------------------------------------------------------------------------------------------

#[test]
fn watch_valid_combinations() {
    let valid = [
        ListOptions::default(),
        ListOptions::default()
            .resource_version("100")
            .allow_watch_bookmarks(true)
            .timeout_seconds(300),
        ListOptions::default().watch_list(),
        ListOptions::default().watch_list().resource_version("100"),
        ListOptions::default().watch_list().resource_version("0"),
        // sendInitialEvents=false (an explicit "no initial events") needs no bookmarks.
        ListOptions::default()
            .send_initial_events(false)
            .resource_version_match(ResourceVersionMatch::NotOlderThan),
        // The server ignores limit and continue on a plain watch.
        ListOptions::default()
            .limit(10)
            .continue_token("tok")
            .resource_version("5"),
    ];
    for opts in valid {
        assert_eq!(opts.validate(true), Ok(()), "{opts:?}");
    }
}

#[test]
fn watch_rejects_send_initial_events_without_not_older_than() {
    let opts = ListOptions::default()
        .send_initial_events(true)
        .allow_watch_bookmarks(true);
    assert_eq!(
        opts.validate(true),
        Err(OptionsError::SendInitialEventsRequiresNotOlderThan {
            resource_version_match: None
        })
    );
    let opts = opts
        .resource_version("5")
        .resource_version_match(ResourceVersionMatch::Exact);
    assert_eq!(
        opts.validate(true),
        Err(OptionsError::SendInitialEventsRequiresNotOlderThan {
            resource_version_match: Some(ResourceVersionMatch::Exact)
        })
    );
    // false counts too: the server checks that the option is present.
    let opts = ListOptions::default().send_initial_events(false);
    assert_eq!(
        opts.validate(true),
        Err(OptionsError::SendInitialEventsRequiresNotOlderThan {
            resource_version_match: None
        })
    );
}

#[test]
fn watch_rejects_resource_version_match_without_send_initial_events() {
    let opts = ListOptions::default()
        .resource_version("5")
        .resource_version_match(ResourceVersionMatch::NotOlderThan);
    assert_eq!(
        opts.validate(true),
        Err(OptionsError::ResourceVersionMatchForWatchWithoutSendInitialEvents)
    );
}

#[test]
fn watch_rejects_exact_match() {
    // Exact is never valid on a watch: without sendInitialEvents the match itself is forbidden,
    // with it sendInitialEvents demands NotOlderThan.
    let opts = ListOptions::default()
        .resource_version("5")
        .resource_version_match(ResourceVersionMatch::Exact);
    assert_eq!(
        opts.validate(true),
        Err(OptionsError::ResourceVersionMatchForWatchWithoutSendInitialEvents)
    );
    assert_eq!(
        opts.send_initial_events(false).validate(true),
        Err(OptionsError::SendInitialEventsRequiresNotOlderThan {
            resource_version_match: Some(ResourceVersionMatch::Exact)
        })
    );
}

#[test]
fn watch_rejects_resource_version_match_with_continue() {
    let opts = ListOptions::default().watch_list().continue_token("tok");
    assert_eq!(
        opts.validate(true),
        Err(OptionsError::ResourceVersionMatchWithContinue)
    );
}

#[test]
fn watch_rejects_send_initial_events_without_bookmarks() {
    let opts = ListOptions::default()
        .send_initial_events(true)
        .resource_version_match(ResourceVersionMatch::NotOlderThan);
    assert_eq!(
        opts.validate(true),
        Err(OptionsError::SendInitialEventsWithoutBookmarks)
    );
}

#[test]
fn validation_errors_name_the_offending_option() {
    let cases: Vec<(OptionsError, &str)> = vec![
        (
            OptionsError::ResourceVersionMatchWithoutResourceVersion,
            "resourceVersionMatch",
        ),
        (OptionsError::ResourceVersionMatchWithContinue, "continue"),
        (
            OptionsError::ExactResourceVersionZero,
            "resourceVersionMatch \"Exact\"",
        ),
        (
            OptionsError::ContinueWithResourceVersion {
                resource_version: "7".into(),
            },
            "resourceVersion \"7\"",
        ),
        (OptionsError::SendInitialEventsForList, "sendInitialEvents"),
        (
            OptionsError::SendInitialEventsRequiresNotOlderThan {
                resource_version_match: None,
            },
            "resourceVersionMatch=NotOlderThan, got none",
        ),
        (
            OptionsError::SendInitialEventsRequiresNotOlderThan {
                resource_version_match: Some(ResourceVersionMatch::Exact),
            },
            "got Exact",
        ),
        (
            OptionsError::ResourceVersionMatchForWatchWithoutSendInitialEvents,
            "unless sendInitialEvents",
        ),
        (
            OptionsError::SendInitialEventsWithoutBookmarks,
            "allowWatchBookmarks=true",
        ),
        (
            OptionsError::NegativeLimit(-1),
            "limit must not be negative, got -1",
        ),
        (OptionsError::NegativeTimeoutSeconds(-2), "timeoutSeconds"),
        (
            OptionsError::NegativeGracePeriodSeconds(-3),
            "gracePeriodSeconds",
        ),
        (
            OptionsError::FieldManagerRequiredForApply,
            "fieldManager is required",
        ),
        (
            OptionsError::ForceForNonApplyPatch {
                content_type: "application/merge-patch+json",
            },
            "force may not be specified for non-apply patch",
        ),
        (
            OptionsError::FieldManagerTooLong { len: 200 },
            "fieldManager",
        ),
        (
            OptionsError::FieldManagerNotPrintable {
                character: '\u{7}',
                position: 3,
            },
            "U+0007 at byte position 3",
        ),
    ];
    for (err, needle) in cases {
        let message = err.to_string();
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// GetOptions
// ---------------------------------------------------------------------------------------------

#[test]
fn get_options_query() {
    assert_eq!(GetOptions::default().query_pairs(), vec![]);
    assert_eq!(
        GetOptions::default().resource_version("").query_pairs(),
        vec![]
    );
    assert_eq!(
        GetOptions::default().resource_version("0").query_pairs(),
        pairs(&[("resourceVersion", "0")])
    );
}

// ---------------------------------------------------------------------------------------------
// CreateOptions, UpdateOptions, PatchOptions
// ---------------------------------------------------------------------------------------------

#[test]
fn create_and_update_options_query() {
    let full = [
        ("dryRun", "All"),
        ("fieldManager", "mgr"),
        ("fieldValidation", "Strict"),
    ];
    let create = CreateOptions::default()
        .field_validation(FieldValidation::Strict)
        .field_manager("mgr")
        .dry_run();
    assert_eq!(create.query_pairs(), pairs(&full));
    let update = UpdateOptions::default()
        .field_validation(FieldValidation::Strict)
        .field_manager("mgr")
        .dry_run();
    assert_eq!(update.query_pairs(), pairs(&full));

    assert_eq!(CreateOptions::default().query_pairs(), vec![]);
    assert_eq!(UpdateOptions::default().query_pairs(), vec![]);
    assert_eq!(
        CreateOptions::default().field_manager("").query_pairs(),
        vec![]
    );
}

#[test]
fn field_validation_values() {
    for (value, wire) in [
        (FieldValidation::Ignore, "Ignore"),
        (FieldValidation::Warn, "Warn"),
        (FieldValidation::Strict, "Strict"),
    ] {
        assert_eq!(
            UpdateOptions::default()
                .field_validation(value)
                .query_pairs(),
            pairs(&[("fieldValidation", wire)])
        );
    }
}

#[test]
fn create_and_update_validate_the_field_manager() {
    let long = "m".repeat(FIELD_MANAGER_MAX_LEN + 1);
    assert_eq!(
        CreateOptions::default()
            .field_manager(long.as_str())
            .validate(),
        Err(OptionsError::FieldManagerTooLong { len: 129 })
    );
    assert_eq!(
        UpdateOptions::default()
            .field_manager("a\u{1b}[31m")
            .validate(),
        Err(OptionsError::FieldManagerNotPrintable {
            character: '\u{1b}',
            position: 1
        })
    );
    assert_eq!(
        UpdateOptions::default()
            .field_manager("m".repeat(FIELD_MANAGER_MAX_LEN))
            .validate(),
        Ok(())
    );
}

#[test]
fn patch_options_query() {
    assert_eq!(PatchOptions::default().query_pairs(), vec![]);
    assert_eq!(
        PatchOptions::default()
            .field_validation(FieldValidation::Warn)
            .field_manager("mgr")
            .force(true)
            .dry_run()
            .query_pairs(),
        pairs(&[
            ("dryRun", "All"),
            ("force", "true"),
            ("fieldManager", "mgr"),
            ("fieldValidation", "Warn"),
        ])
    );
    assert_eq!(
        PatchOptions::apply("mgr").force(false).query_pairs(),
        pairs(&[("force", "false"), ("fieldManager", "mgr")])
    );
}

fn all_patches() -> Vec<Patch<Value>> {
    vec![
        Patch::json(JsonPatch::new().add("/a", 1)),
        Patch::Merge(json!({"a": 1})),
        Patch::Strategic(json!({"a": 1})),
        Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap"})),
    ]
}

#[test]
fn apply_requires_a_field_manager() {
    let apply = Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap"}));
    assert_eq!(
        PatchOptions::default().validate_for(&apply),
        Err(OptionsError::FieldManagerRequiredForApply)
    );
    assert_eq!(
        PatchOptions::default()
            .field_manager("")
            .validate_for(&apply),
        Err(OptionsError::FieldManagerRequiredForApply)
    );
    assert_eq!(PatchOptions::apply("mgr").validate_for(&apply), Ok(()));
    assert_eq!(
        PatchOptions::apply("mgr").force(true).validate_for(&apply),
        Ok(())
    );
    assert_eq!(
        PatchOptions::apply("mgr").force(false).validate_for(&apply),
        Ok(())
    );
}

#[test]
fn force_is_only_for_apply() {
    for patch in all_patches().into_iter().filter(|p| !p.is_apply()) {
        for force in [true, false] {
            assert_eq!(
                PatchOptions::default().force(force).validate_for(&patch),
                Err(OptionsError::ForceForNonApplyPatch {
                    content_type: patch.content_type()
                }),
                "{patch:?}"
            );
        }
        // Without force, non-apply patches need no field manager.
        assert_eq!(PatchOptions::default().validate_for(&patch), Ok(()));
        assert_eq!(
            PatchOptions::default().dry_run().validate_for(&patch),
            Ok(())
        );
    }
}

#[test]
fn patch_options_validate_the_field_manager_for_every_patch() {
    for patch in all_patches() {
        assert_eq!(
            PatchOptions::default()
                .field_manager("x".repeat(300))
                .validate_for(&patch),
            Err(OptionsError::FieldManagerTooLong { len: 300 })
        );
        assert!(matches!(
            PatchOptions::default()
                .field_manager("tab\there")
                .validate_for(&patch),
            Err(OptionsError::FieldManagerNotPrintable {
                character: '\t',
                position: 3
            })
        ));
    }
}

#[test]
fn patch_options_validate_json_pointers() {
    let patch = Patch::json(JsonPatch::new().add("/ok", 1).move_from("bad", "/x"));
    assert_eq!(
        PatchOptions::default().validate_for(&patch),
        Err(OptionsError::InvalidJsonPointer {
            index: 1,
            field: "from",
            pointer: "bad".into(),
            reason: "it must be empty or start with '/'",
        })
    );
}

// ---------------------------------------------------------------------------------------------
// DeleteOptions
// ---------------------------------------------------------------------------------------------

#[test]
fn delete_default_body() {
    assert_eq!(
        DeleteOptions::default().to_body().unwrap(),
        br#"{"kind":"DeleteOptions","apiVersion":"v1"}"#
    );
}

#[test]
fn delete_full_body_in_metav1_field_order() {
    let opts = DeleteOptions::default()
        .dry_run()
        .propagation_policy(DeletionPropagation::Orphan)
        .preconditions(Preconditions {
            uid: Some("uid-1".into()),
            resource_version: Some("99".into()),
        })
        .grace_period_seconds(30);
    assert_eq!(
        String::from_utf8(opts.to_body().unwrap()).unwrap(),
        concat!(
            r#"{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":30,"#,
            r#""preconditions":{"uid":"uid-1","resourceVersion":"99"},"#,
            r#""propagationPolicy":"Orphan","dryRun":["All"]}"#
        )
    );
}

#[test]
fn delete_body_per_field() {
    let cases: Vec<(DeleteOptions, Value)> = vec![
        (
            DeleteOptions::default().grace_period_seconds(0),
            json!({"gracePeriodSeconds": 0}),
        ),
        (
            DeleteOptions::default().precondition_resource_version("5"),
            json!({"preconditions": {"resourceVersion": "5"}}),
        ),
        (
            DeleteOptions::default().precondition_uid("u"),
            json!({"preconditions": {"uid": "u"}}),
        ),
        (
            DeleteOptions::default().preconditions(Preconditions::default()),
            json!({"preconditions": {}}),
        ),
        (
            DeleteOptions::foreground(),
            json!({"propagationPolicy": "Foreground"}),
        ),
        (
            DeleteOptions::background(),
            json!({"propagationPolicy": "Background"}),
        ),
        (
            DeleteOptions::orphan(),
            json!({"propagationPolicy": "Orphan"}),
        ),
        (
            DeleteOptions::default().dry_run(),
            json!({"dryRun": ["All"]}),
        ),
    ];
    for (opts, fields) in cases {
        let mut expected = json!({"kind": "DeleteOptions", "apiVersion": "v1"});
        expected
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        assert_eq!(body_json(opts.to_body().unwrap()), expected);
    }
}

#[test]
fn delete_body_round_trips_and_accepts_any_api_version() {
    let opts = DeleteOptions::foreground()
        .grace_period_seconds(5)
        .precondition_uid("u")
        .dry_run();
    let back: DeleteOptions = serde_json::from_slice(&opts.to_body().unwrap()).unwrap();
    assert_eq!(back, opts);

    let from_apps: DeleteOptions = serde_json::from_value(json!({
        "kind": "DeleteOptions",
        "apiVersion": "apps/v1",
        "propagationPolicy": "Background",
        "orphanDependents": null,
    }))
    .unwrap();
    assert_eq!(from_apps, DeleteOptions::background());

    let empty: DeleteOptions = serde_json::from_str("{}").unwrap();
    assert_eq!(empty, DeleteOptions::default());
    let no_dry_run: DeleteOptions = serde_json::from_str(r#"{"dryRun":[]}"#).unwrap();
    assert!(!no_dry_run.dry_run);
    assert!(serde_json::from_str::<DeleteOptions>(r#"{"propagationPolicy":"Sideways"}"#).is_err());
}

#[test]
fn delete_validation() {
    assert_eq!(DeleteOptions::default().validate(), Ok(()));
    assert_eq!(
        DeleteOptions::default().grace_period_seconds(0).validate(),
        Ok(())
    );
    assert_eq!(
        DeleteOptions::default().grace_period_seconds(-1).validate(),
        Err(OptionsError::NegativeGracePeriodSeconds(-1))
    );
}

// ---------------------------------------------------------------------------------------------
// Patch
// ---------------------------------------------------------------------------------------------

#[test]
fn patch_content_types() {
    let expected = [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ];
    let actual: Vec<&str> = all_patches().iter().map(Patch::content_type).collect();
    assert_eq!(actual, expected);
    let types: Vec<PatchType> = all_patches().iter().map(Patch::patch_type).collect();
    assert_eq!(
        types,
        [
            PatchType::Json,
            PatchType::Merge,
            PatchType::StrategicMerge,
            PatchType::Apply
        ]
    );
}

#[test]
fn document_patches_serialize_the_document() {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Scale {
        spec: ScaleSpec,
    }
    #[derive(Serialize)]
    struct ScaleSpec {
        replicas: i32,
    }

    let typed = Patch::Merge(Scale {
        spec: ScaleSpec { replicas: 3 },
    });
    assert_eq!(typed.to_body().unwrap(), br#"{"spec":{"replicas":3}}"#);

    let strategic =
        Patch::Strategic(json!({"spec": {"containers": [{"name": "app", "image": "v2"}]}}));
    assert_eq!(
        strategic.to_body().unwrap(),
        br#"{"spec":{"containers":[{"image":"v2","name":"app"}]}}"#
    );

    let apply = Patch::Apply(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
    }));
    let body = apply.to_body().unwrap();
    assert_eq!(
        body_json(body),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}})
    );
    assert!(apply.is_apply());
}

#[test]
fn json_patch_operations_serialize_per_rfc_6902() {
    let patch = JsonPatch::new()
        .add("/metadata/labels/tier", "fe")
        .remove("/metadata/annotations/old")
        .replace("/spec/replicas", 3)
        .move_from("/spec/a", "/spec/b")
        .copy_from("/spec/c", "/spec/d")
        .test("/metadata/resourceVersion", "42")
        .add("/spec/list/-", json!({"k": null}));
    assert_eq!(
        String::from_utf8(Patch::json(patch).to_body().unwrap()).unwrap(),
        concat!(
            r#"[{"op":"add","path":"/metadata/labels/tier","value":"fe"},"#,
            r#"{"op":"remove","path":"/metadata/annotations/old"},"#,
            r#"{"op":"replace","path":"/spec/replicas","value":3},"#,
            r#"{"op":"move","from":"/spec/a","path":"/spec/b"},"#,
            r#"{"op":"copy","from":"/spec/c","path":"/spec/d"},"#,
            r#"{"op":"test","path":"/metadata/resourceVersion","value":"42"},"#,
            r#"{"op":"add","path":"/spec/list/-","value":{"k":null}}]"#
        )
    );
}

#[test]
fn empty_json_patch_is_an_empty_array() {
    assert_eq!(Patch::json(JsonPatch::new()).to_body().unwrap(), b"[]");
}

#[test]
fn json_patch_from_raw_json() {
    let raw = json!([
        {"op": "add", "path": "/a", "value": null},
        {"op": "move", "path": "/b", "from": "/a"},
        {"op": "test", "path": "/b", "value": [1, 2]},
    ]);
    let patch = JsonPatch::from_value(raw.clone()).unwrap();
    assert_eq!(
        patch,
        JsonPatch(vec![
            PatchOperation::add("/a", Value::Null),
            PatchOperation::move_from("/a", "/b"),
            PatchOperation::test("/b", json!([1, 2])),
        ])
    );
    // And back to the same JSON.
    assert_eq!(serde_json::to_value(&patch).unwrap(), raw);

    for bad in [
        json!({"op": "add", "path": "/a", "value": 1}),
        json!([{"op": "frobnicate", "path": "/a"}]),
        json!([{"op": "add", "path": "/a"}]),
        json!([{"op": "move", "path": "/a"}]),
        json!([{"path": "/a"}]),
    ] {
        assert!(JsonPatch::from_value(bad.clone()).is_err(), "{bad}");
    }
}

#[test]
fn json_pointer_escaping() {
    assert_eq!(
        escape_pointer_token("app.kubernetes.io/name"),
        "app.kubernetes.io~1name"
    );
    assert_eq!(escape_pointer_token("a~b"), "a~0b");
    assert_eq!(escape_pointer_token("~/"), "~0~1");
    assert_eq!(
        json_pointer(["metadata", "labels", "app.kubernetes.io/name"]),
        "/metadata/labels/app.kubernetes.io~1name"
    );
    assert_eq!(
        json_pointer(["spec", "containers", "0", "image"]),
        "/spec/containers/0/image"
    );
    assert_eq!(json_pointer([String::from("a b")]), "/a b");
    assert_eq!(json_pointer::<[&str; 0]>([]), "");
}

#[test]
fn json_patch_pointer_validation() {
    assert_eq!(
        JsonPatch::new()
            .add("", json!({}))
            .add(json_pointer(["x~y", "a/b"]), 1)
            .validate(),
        Ok(())
    );
    assert_eq!(
        JsonPatch::new().remove("/ok").remove("no-slash").validate(),
        Err(OptionsError::InvalidJsonPointer {
            index: 1,
            field: "path",
            pointer: "no-slash".into(),
            reason: "it must be empty or start with '/'",
        })
    );
    assert_eq!(
        JsonPatch::new().copy_from("/a~2", "/b").validate(),
        Err(OptionsError::InvalidJsonPointer {
            index: 0,
            field: "from",
            pointer: "/a~2".into(),
            reason: "'~' must be followed by '0' or '1'",
        })
    );
    let err = Patch::json(JsonPatch::new().replace("/a~", 1))
        .validate()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("JSON patch operation 0: path \"/a~\""),
        "{err}"
    );
    // Document patches have no pointers to check.
    assert_eq!(Patch::Merge(json!({"a~": 1})).validate(), Ok(()));
}

mod selector_conversions {
    use kclient_core::options::{ListOptions, OptionsError};
    use kclient_core::{fields, labels};

    #[test]
    fn parsed_selectors_are_sent_in_canonical_form() {
        let l: labels::Selector = "tier in (fe,be),app=web".parse().unwrap();
        let f = fields::Selector::new().equals("metadata.name", "web-0");
        let opts = ListOptions::default()
            .label_selector(&l)
            .unwrap()
            .field_selector(&f)
            .unwrap();
        assert_eq!(
            opts.label_selector.as_deref(),
            Some("app=web,tier in (be,fe)")
        );
        assert_eq!(opts.field_selector.as_deref(), Some("metadata.name=web-0"));
    }

    #[test]
    fn everything_sends_no_selector() {
        let opts = ListOptions::default()
            .label_selector(&labels::Selector::everything())
            .unwrap()
            .field_selector(&fields::Selector::everything())
            .unwrap();
        assert!(opts.query_pairs().is_empty());
    }

    #[test]
    fn nothing_is_refused_not_widened() {
        let err = ListOptions::default()
            .label_selector(&labels::Selector::nothing())
            .unwrap_err();
        assert_eq!(
            err,
            OptionsError::UnrepresentableSelector {
                option: "labelSelector"
            }
        );
        let err = ListOptions::default()
            .field_selector(&fields::Selector::nothing())
            .unwrap_err();
        assert_eq!(
            err,
            OptionsError::UnrepresentableSelector {
                option: "fieldSelector"
            }
        );
    }
}
