//! Behaviour tests for label and field selectors: apimachinery's semantics for parsing,
//! rendering, matching, `metav1.LabelSelector` conversion, and every error case.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kclient_core::labels::{self, Operator, Requirement, Selector};
use kclient_core::{fields, SelectorError};

fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn parse(s: &str) -> Selector {
    labels::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

// ---------------------------------------------------------------------------------------
// Label selectors: parsing every operator
// ---------------------------------------------------------------------------------------

#[test]
fn every_operator_parses_to_its_requirement() {
    let cases: &[(&str, Operator, &[&str])] = &[
        ("a=b", Operator::Equals, &["b"]),
        ("a==b", Operator::DoubleEquals, &["b"]),
        ("a!=b", Operator::NotEquals, &["b"]),
        ("a in (x,y)", Operator::In, &["x", "y"]),
        ("a notin (x)", Operator::NotIn, &["x"]),
        ("a", Operator::Exists, &[]),
        ("!a", Operator::DoesNotExist, &[]),
        ("a>1", Operator::GreaterThan, &["1"]),
        ("a<1", Operator::LessThan, &["1"]),
    ];
    for (input, operator, values) in cases {
        let selector = parse(input);
        let [requirement] = selector.requirements() else {
            panic!("{input:?}: expected one requirement, got {selector:?}");
        };
        assert_eq!(requirement.key(), "a", "{input}");
        assert_eq!(requirement.operator(), *operator, "{input}");
        assert_eq!(requirement.values(), *values, "{input}");
        assert_eq!(selector.to_string(), *input, "canonical form of {input:?}");
    }
}

#[test]
fn empty_and_blank_strings_select_everything() {
    for input in ["", " ", "\t\r\n  "] {
        let selector = parse(input);
        assert!(selector.is_empty(), "{input:?}");
        assert_eq!(selector, Selector::everything());
        assert!(selector.matches(&set(&[])));
        assert!(selector.matches(&set(&[("any", "thing")])));
        assert_eq!(selector.to_string(), "");
    }
}

#[test]
fn whitespace_is_allowed_around_every_token() {
    let spaced = parse("  a = b ,\tc  !=  d ,\n e  in  ( x , y ) , f notin(z) , ! g , h ");
    let tight = parse("a=b,c!=d,e in (x,y),f notin (z),!g,h");
    assert_eq!(spaced, tight);
    assert_eq!(spaced.to_string(), "a=b,c!=d,e in (x,y),f notin (z),!g,h");
}

#[test]
fn empty_values_are_values() {
    assert_eq!(parse("a=").requirements()[0].values(), [""]);
    assert_eq!(parse("a=,b").requirements()[0].values(), [""]);
    assert_eq!(parse("a!=").to_string(), "a!=");
    assert_eq!(parse("a in ()").requirements()[0].values(), [""]);
    assert_eq!(parse("a in (,)").requirements()[0].values(), [""]);
    assert_eq!(parse("a in (x,)").requirements()[0].values(), ["", "x"]);
    assert_eq!(parse("a in (,x)").requirements()[0].values(), ["", "x"]);
    assert_eq!(
        parse("a in (x,,y)").requirements()[0].values(),
        ["", "x", "y"]
    );
    assert_eq!(
        parse("x in (foo,,baz),y,z notin ()").to_string(),
        "x in (,baz,foo),y,z notin ()"
    );
}

#[test]
fn keywords_are_only_keywords_in_operator_position() {
    let selector = parse("in in (in, notin), notin notin (in), x=in, y!=notin");
    assert_eq!(
        selector.to_string(),
        "in in (in,notin),notin notin (in),x=in,y!=notin"
    );
    assert_eq!(parse("in").requirements()[0].operator(), Operator::Exists);
    assert_eq!(
        parse("!notin").requirements()[0].operator(),
        Operator::DoesNotExist
    );
}

#[test]
fn prefixed_keys_and_long_names_parse() {
    let prefix = format!("{}.example.com", "a".repeat(241));
    assert_eq!(prefix.len(), 253);
    let key = format!("{prefix}/{}", "N".repeat(63));
    let selector = parse(&format!("{key}={}", "v".repeat(63)));
    assert_eq!(selector.requirements()[0].key(), key);
    parse("app.kubernetes.io/name=web,k8s.io/x_Y.z-1 in (A_b.c-9)");
}

// ---------------------------------------------------------------------------------------
// Canonical rendering and round trips
// ---------------------------------------------------------------------------------------

#[test]
fn requirements_are_sorted_by_key_and_values_sorted() {
    let selector = parse("z in (c,a,b),y,!x,m notin (q,p),b=1,a>5");
    assert_eq!(
        selector.to_string(),
        "a>5,b=1,m notin (p,q),!x,y,z in (a,b,c)"
    );
}

#[test]
fn requirements_on_one_key_keep_their_written_order() {
    assert_eq!(parse("b=1,a!=2,a").to_string(), "a!=2,a,b=1");
    assert_eq!(parse("b=1,a,a!=2").to_string(), "a,a!=2,b=1");
}

#[test]
fn duplicate_values_collapse() {
    let selector = parse("a in (x,y,x,y)");
    assert_eq!(selector.requirements()[0].values(), ["x", "y"]);
    let built = Selector::new().in_values("a", ["y", "x", "y"]);
    assert_eq!(built, selector);
}

#[test]
fn parse_render_round_trips() {
    let inputs = [
        "a=b",
        "a==b",
        "a!=b",
        "a in (x,y)",
        "a notin (x)",
        "a",
        "!a",
        "a>1",
        "a<10",
        "x in (foo,,baz),y,z notin ()",
        "  env = prod , tier in ( web , api ) , !canary ",
        "b=1,a!=2,a,c in (3,1,2),d>007",
        "example.com/a=,example.com/b notin (,x)",
        "in in (in),notin notin (notin)",
    ];
    for input in inputs {
        let once = parse(input);
        let rendered = once.to_string();
        let twice = parse(&rendered);
        assert_eq!(twice, once, "{input:?} -> {rendered:?}");
        assert_eq!(
            twice.to_string(),
            rendered,
            "{input:?} is not a fixed point"
        );
    }
}

#[test]
fn builder_selectors_round_trip() {
    let built = Selector::new()
        .equals("env", "prod")
        .not_equals("tier", "db")
        .in_values("zone", ["b", "a"])
        .not_in_values("app.kubernetes.io/name", ["x"])
        .exists("team")
        .does_not_exist("canary")
        .greater_than("replicas", 2)
        .less_than("replicas", 10);
    built.validate().unwrap();
    let rendered = built.to_string();
    assert_eq!(
        rendered,
        "app.kubernetes.io/name notin (x),!canary,env=prod,replicas>2,replicas<10,team,tier!=db,zone in (a,b)"
    );
    assert_eq!(parse(&rendered), built);
    assert_eq!(rendered.parse::<Selector>().unwrap(), built);
}

#[test]
fn from_set_builds_equalities_and_validates() {
    let selector = Selector::from_set([("b", "2"), ("a", "1")]).unwrap();
    assert_eq!(selector.to_string(), "a=1,b=2");
    assert!(Selector::from_set(Vec::<(String, String)>::new())
        .unwrap()
        .is_empty());
    assert!(matches!(
        Selector::from_set([("-bad", "1")]),
        Err(SelectorError::InvalidKey { .. })
    ));
    assert!(matches!(
        Selector::from_set([("good", "-bad")]),
        Err(SelectorError::InvalidValue { .. })
    ));
}

#[test]
fn builders_do_not_validate_but_validate_does() {
    let selector = Selector::new().equals("not a key", "x");
    assert!(matches!(
        selector.validate(),
        Err(SelectorError::InvalidKey { position: None, .. })
    ));
    assert!(matches!(
        Selector::new()
            .in_values("a", Vec::<String>::new())
            .validate(),
        Err(SelectorError::MissingValues { .. })
    ));
    assert!(matches!(
        Selector::new().greater_than("a", -1).validate(),
        Err(SelectorError::InvalidValue { .. })
    ));
    assert!(parse("a=b").validate().is_ok());
}

// ---------------------------------------------------------------------------------------
// Matching
// ---------------------------------------------------------------------------------------

#[test]
fn matching_each_operator() {
    let labels = set(&[("env", "prod"), ("tier", "web"), ("replicas", "5")]);
    let yes = [
        "env=prod",
        "env==prod",
        "env!=dev",
        "tier in (web,api)",
        "tier notin (db)",
        "env",
        "!canary",
        "replicas>4",
        "replicas<6",
        "env=prod,tier=web,replicas>1",
        "",
    ];
    let no = [
        "env=dev",
        "env==dev",
        "env!=prod",
        "tier in (db,cache)",
        "tier notin (web)",
        "canary",
        "!env",
        "replicas>5",
        "replicas<5",
        "env=prod,tier=db",
    ];
    for s in yes {
        assert!(parse(s).matches(&labels), "{s:?} should match");
    }
    for s in no {
        assert!(!parse(s).matches(&labels), "{s:?} should not match");
    }
}

#[test]
fn missing_keys_satisfy_not_equals_and_notin_only() {
    let empty = set(&[]);
    assert!(parse("a!=x").matches(&empty));
    assert!(parse("a notin (x,y)").matches(&empty));
    assert!(parse("!a").matches(&empty));
    assert!(!parse("a=x").matches(&empty));
    assert!(!parse("a==x").matches(&empty));
    assert!(!parse("a in (x)").matches(&empty));
    assert!(!parse("a").matches(&empty));
    assert!(!parse("a>1").matches(&empty));
    assert!(!parse("a<1").matches(&empty));
    // `a=` requires the label to be present with the empty value.
    assert!(!parse("a=").matches(&empty));
    assert!(parse("a=").matches(&set(&[("a", "")])));
}

#[test]
fn greater_and_less_need_integer_labels() {
    let sel = parse("n>3");
    assert!(sel.matches(&set(&[("n", "4")])));
    assert!(sel.matches(&set(&[("n", "0004")])));
    assert!(sel.matches(&set(&[("n", "+4")])));
    assert!(!sel.matches(&set(&[("n", "3")])));
    assert!(!sel.matches(&set(&[("n", "four")])));
    assert!(!sel.matches(&set(&[("n", "4.5")])));
    assert!(!sel.matches(&set(&[("n", "")])));
    assert!(!sel.matches(&set(&[("n", "99999999999999999999")])));
    assert!(parse("n<3").matches(&set(&[("n", "-7")])));
}

#[test]
fn matching_works_on_other_label_containers() {
    let selector = parse("app=web,!canary");
    let hash: HashMap<String, String> = HashMap::from([("app".into(), "web".into())]);
    assert!(selector.matches(&hash));
    let borrowed: BTreeMap<&str, &str> = BTreeMap::from([("app", "web")]);
    assert!(selector.matches(&borrowed));
    let meta_labels: Option<BTreeMap<String, String>> = None;
    assert!(!selector.matches(&meta_labels));
    assert!(parse("!app").matches(&meta_labels));
    assert!(selector.matches_fn(|key| (key == "app").then_some("web")));
    assert!(!selector.matches_fn(|_| Some("web")));
}

#[test]
fn requires_exact_match_follows_the_first_requirement_on_the_key() {
    assert_eq!(parse("a=x").requires_exact_match("a"), Some("x"));
    assert_eq!(parse("a==x").requires_exact_match("a"), Some("x"));
    assert_eq!(parse("a in (x)").requires_exact_match("a"), Some("x"));
    assert_eq!(parse("a in (x,y)").requires_exact_match("a"), None);
    assert_eq!(parse("a!=x").requires_exact_match("a"), None);
    assert_eq!(parse("a").requires_exact_match("a"), None);
    assert_eq!(parse("b=x").requires_exact_match("a"), None);
    assert_eq!(parse("a,a=x").requires_exact_match("a"), None);
    assert_eq!(parse("a=x,a").requires_exact_match("a"), Some("x"));
}

#[test]
fn nothing_matches_nothing() {
    let nothing = Selector::nothing();
    assert!(nothing.matches_nothing());
    assert!(!nothing.is_empty());
    assert!(!nothing.matches(&set(&[])));
    assert_eq!(nothing.to_string(), "");
    assert_ne!(nothing, Selector::everything());
    assert!(!Selector::everything().matches_nothing());
}

// ---------------------------------------------------------------------------------------
// metav1.LabelSelector conversion
// ---------------------------------------------------------------------------------------

fn expr(key: &str, operator: &str, values: Option<&[&str]>) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.into(),
        operator: operator.into(),
        values: values.map(|v| v.iter().map(|s| s.to_string()).collect()),
    }
}

#[test]
fn label_selector_nil_selects_nothing_and_empty_selects_everything() {
    assert!(Selector::from_label_selector(None)
        .unwrap()
        .matches_nothing());
    let empty = LabelSelector::default();
    let everything = Selector::from_label_selector(Some(&empty)).unwrap();
    assert!(everything.is_empty());
    assert!(everything.matches(&set(&[("a", "b")])));
    let explicit_empty = LabelSelector {
        match_labels: Some(BTreeMap::new()),
        match_expressions: Some(Vec::new()),
    };
    assert!(Selector::try_from(&explicit_empty).unwrap().is_empty());
}

#[test]
fn label_selector_converts_labels_and_expressions() {
    let spec = LabelSelector {
        match_labels: Some(set(&[("app", "web"), ("env", "prod")])),
        match_expressions: Some(vec![
            expr("tier", "In", Some(&["web", "api"])),
            expr("zone", "NotIn", Some(&["b"])),
            expr("team", "Exists", None),
            expr("canary", "DoesNotExist", Some(&[])),
            expr("app", "In", Some(&["web"])),
        ]),
    };
    let selector = Selector::try_from(&spec).unwrap();
    assert_eq!(
        selector.to_string(),
        "app=web,app in (web),!canary,env=prod,team,tier in (api,web),zone notin (b)"
    );
    assert!(selector.matches(&set(&[
        ("app", "web"),
        ("env", "prod"),
        ("team", "x"),
        ("tier", "api")
    ])));
    assert!(!selector.matches(&set(&[("app", "web"), ("env", "prod"), ("team", "x")])));
}

#[test]
fn label_selector_errors() {
    let bad_operator = LabelSelector {
        match_expressions: Some(vec![expr("a", "Equals", Some(&["x"]))]),
        ..Default::default()
    };
    let err = Selector::try_from(&bad_operator).unwrap_err();
    assert!(
        matches!(&err, SelectorError::UnknownOperator { operator, position: None, .. } if operator == "Equals")
    );
    assert!(err.to_string().contains("`Equals`"), "{err}");

    let lower_case = LabelSelector {
        match_expressions: Some(vec![expr("a", "in", Some(&["x"]))]),
        ..Default::default()
    };
    assert!(matches!(
        Selector::try_from(&lower_case),
        Err(SelectorError::UnknownOperator { .. })
    ));

    let cases = [
        (expr("a", "In", None), "MissingValues"),
        (expr("a", "NotIn", Some(&[])), "MissingValues"),
        (expr("a", "Exists", Some(&["x"])), "WrongValueCount"),
        (expr("a", "DoesNotExist", Some(&["x"])), "WrongValueCount"),
        (expr("a b", "Exists", None), "InvalidKey"),
        (expr("a", "In", Some(&["ok", "not ok"])), "InvalidValue"),
    ];
    for (requirement, expected) in cases {
        let spec = LabelSelector {
            match_expressions: Some(vec![requirement.clone()]),
            ..Default::default()
        };
        let err = Selector::try_from(&spec).unwrap_err();
        let name = format!("{err:?}");
        assert!(
            name.starts_with(expected),
            "{requirement:?}: got {err:?}, expected {expected}"
        );
    }

    let bad_label = LabelSelector {
        match_labels: Some(set(&[("app", "web/1")])),
        ..Default::default()
    };
    assert!(matches!(
        Selector::try_from(&bad_label),
        Err(SelectorError::InvalidValue { .. })
    ));
}

#[test]
fn selector_converts_back_to_label_selector() {
    let selector = parse("app=web,env==prod,tier in (api,web),zone notin (b),team,!canary,x!=y");
    let spec = selector.to_label_selector().unwrap().unwrap();
    assert_eq!(
        spec.match_labels,
        Some(set(&[("app", "web"), ("env", "prod")]))
    );
    assert_eq!(
        spec.match_expressions,
        Some(vec![
            expr("canary", "DoesNotExist", None),
            expr("team", "Exists", None),
            expr("tier", "In", Some(&["api", "web"])),
            expr("x", "NotIn", Some(&["y"])),
            expr("zone", "NotIn", Some(&["b"])),
        ])
    );
    // Back again: the same labels match (`!=` became an equivalent `notin`).
    let again = Selector::try_from(&spec).unwrap();
    for labels in [
        set(&[]),
        set(&[
            ("app", "web"),
            ("env", "prod"),
            ("tier", "api"),
            ("team", "t"),
        ]),
        set(&[
            ("app", "web"),
            ("env", "prod"),
            ("tier", "api"),
            ("team", "t"),
            ("x", "y"),
        ]),
        set(&[
            ("app", "web"),
            ("env", "prod"),
            ("tier", "api"),
            ("team", "t"),
            ("x", "z"),
        ]),
    ] {
        assert_eq!(
            again.matches(&labels),
            selector.matches(&labels),
            "{labels:?}"
        );
    }

    // Everything is `{}`; nothing is the absence of a selector.
    assert_eq!(
        Selector::everything().to_label_selector().unwrap(),
        Some(LabelSelector::default())
    );
    assert_eq!(Selector::nothing().to_label_selector().unwrap(), None);
    assert!(matches!(
        LabelSelector::try_from(&Selector::nothing()),
        Err(SelectorError::NotRepresentable { .. })
    ));
    assert_eq!(
        LabelSelector::try_from(&parse("a=b")).unwrap().match_labels,
        Some(set(&[("a", "b")]))
    );
}

#[test]
fn conflicting_equalities_keep_their_meaning_as_label_selector() {
    let selector = parse("a=x,a=y");
    let spec = selector.to_label_selector().unwrap().unwrap();
    assert_eq!(spec.match_labels, Some(set(&[("a", "x")])));
    assert_eq!(
        spec.match_expressions,
        Some(vec![expr("a", "In", Some(&["y"]))])
    );
    let again = Selector::try_from(&spec).unwrap();
    assert!(!again.matches(&set(&[("a", "x")])));
    assert!(!again.matches(&set(&[("a", "y")])));

    let repeated = parse("a=x,a==x").to_label_selector().unwrap().unwrap();
    assert_eq!(repeated.match_expressions, None);
}

#[test]
fn greater_and_less_have_no_label_selector_form() {
    for s in ["a>1", "a<1"] {
        let err = parse(s).to_label_selector().unwrap_err();
        assert!(matches!(err, SelectorError::NotRepresentable { .. }), "{s}");
        assert!(err.to_string().contains(s), "{err}");
    }
}

// ---------------------------------------------------------------------------------------
// Label selector errors
// ---------------------------------------------------------------------------------------

#[test]
fn error_messages_name_the_token_and_position() {
    let err = labels::parse("a in x)").unwrap_err();
    assert_eq!(
        err,
        SelectorError::UnexpectedToken {
            token: "x".into(),
            position: 6,
            selector: "a in x)".into(),
            expected: "`(`",
        }
    );
    assert_eq!(
        err.to_string(),
        "unexpected token `x` at position 6 in `a in x)`: expected `(`"
    );

    let err = labels::parse("a=b,").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unexpected end of `a=b,` at position 5: expected a key or `!` after `,`"
    );

    let err = labels::parse("a b").unwrap_err();
    assert!(err
        .to_string()
        .starts_with("unknown operator `b` at position 3 in `a b`"));

    let err = labels::parse("x=1,Bad-=2").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid label key `Bad-` at position 5 in `x=1,Bad-=2`: name part"),
        "{err}"
    );

    let err = labels::parse("a in (ok, -no)").unwrap_err();
    assert!(
        matches!(&err, SelectorError::InvalidValue { value, position: Some(11), .. } if value == "-no"),
        "{err:?}"
    );

    let err = labels::parse("a in (x, y").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unterminated value list for `a` opened at position 6 in `a in (x, y`: expected `)`"
    );
}

#[test]
fn positions_count_characters_not_bytes() {
    let err = labels::parse("ä=1").unwrap_err();
    assert!(matches!(
        err,
        SelectorError::InvalidKey {
            position: Some(1),
            ..
        }
    ));
    let err = labels::parse("a=ü,b=(").unwrap_err();
    assert!(
        matches!(&err, SelectorError::InvalidValue { value, position: Some(3), .. } if value == "ü")
    );
    let err = labels::parse("ü=ü,").unwrap_err();
    assert!(matches!(err, SelectorError::InvalidKey { .. }));
    let err = labels::parse("aé b").unwrap_err();
    assert!(matches!(err, SelectorError::InvalidKey { .. }));
    let err = labels::parse("ab ,,").unwrap_err();
    assert!(matches!(
        err,
        SelectorError::UnexpectedToken { position: 5, .. }
    ));
}

/// Every malformed selector, with the error variant it must produce.
#[test]
fn every_label_syntax_error() {
    let cases: &[(&str, &str)] = &[
        // Structure.
        (",", "UnexpectedToken"),
        (",a", "UnexpectedToken"),
        ("a,", "UnexpectedEnd"),
        ("a,,b", "UnexpectedToken"),
        ("a=b,=c", "UnexpectedToken"),
        ("(a)", "UnexpectedToken"),
        (")", "UnexpectedToken"),
        ("=a", "UnexpectedToken"),
        ("a=b c", "UnexpectedToken"),
        ("a=b)", "UnexpectedToken"),
        ("a in (x) b", "UnexpectedToken"),
        ("!a=b", "UnexpectedToken"),
        ("!a in (x)", "UnexpectedToken"),
        ("!", "UnexpectedEnd"),
        ("!!a", "UnexpectedToken"),
        ("!=a", "UnexpectedToken"),
        ("! ,a", "UnexpectedToken"),
        // Operators.
        ("a b", "UnknownOperator"),
        ("a (x)", "UnknownOperator"),
        ("a )", "UnknownOperator"),
        ("a !b", "UnknownOperator"),
        ("a IN (x)", "UnknownOperator"),
        ("a ~= b", "UnknownOperator"),
        // Values.
        ("a===b", "UnexpectedToken"),
        ("a=!b", "UnexpectedToken"),
        ("a=(b)", "UnexpectedToken"),
        ("a>=1", "UnexpectedToken"),
        ("a=b=c", "UnexpectedToken"),
        ("a in x", "UnexpectedToken"),
        ("a in", "UnexpectedEnd"),
        ("a notin ,", "UnexpectedToken"),
        ("a in (x y)", "UnexpectedToken"),
        ("a in ((x)", "UnexpectedToken"),
        ("a in (x,=)", "UnexpectedToken"),
        ("a in (!)", "UnexpectedToken"),
        ("a in (x))", "UnexpectedToken"),
        // Lists.
        ("a in (", "UnterminatedList"),
        ("a in (x", "UnterminatedList"),
        ("a in (x,", "UnterminatedList"),
        ("a notin (x,y,", "UnterminatedList"),
        // Keys.
        ("-a", "InvalidKey"),
        ("a-", "InvalidKey"),
        ("a_", "InvalidKey"),
        ("/a", "InvalidKey"),
        ("a/", "InvalidKey"),
        ("a/b/c=d", "InvalidKey"),
        ("Example.com/a", "InvalidKey"),
        ("ex_ample.com/a", "InvalidKey"),
        ("-example.com/a", "InvalidKey"),
        ("example..com/a", "InvalidKey"),
        ("ключ=v", "InvalidKey"),
        ("a\u{0}b", "InvalidKey"),
        ("a=b,\u{0}", "InvalidKey"),
        // Values.
        ("a=-b", "InvalidValue"),
        ("a=b-", "InvalidValue"),
        ("a=b/c", "InvalidValue"),
        ("a!=.b", "InvalidValue"),
        ("a in (x,_y)", "InvalidValue"),
        ("a notin (ü)", "InvalidValue"),
        ("a>", "InvalidValue"),
        ("a<x", "InvalidValue"),
        ("a>-1", "InvalidValue"),
        ("a>+1", "InvalidValue"),
        ("a>1.5", "InvalidValue"),
        ("a<99999999999999999999", "InvalidValue"),
    ];
    for (input, expected) in cases {
        match labels::parse(input) {
            Ok(selector) => panic!("{input:?} should fail with {expected}, parsed as {selector:?}"),
            Err(err) => {
                let debug = format!("{err:?}");
                assert!(
                    debug.starts_with(expected),
                    "{input:?}: expected {expected}, got {err:?}"
                );
                let message = err.to_string();
                assert!(!message.is_empty());
            }
        }
    }
}

#[test]
fn too_long_keys_and_values_are_rejected() {
    let long = "a".repeat(64);
    assert!(matches!(
        labels::parse(&long),
        Err(SelectorError::InvalidKey { .. })
    ));
    assert!(matches!(
        labels::parse(&format!("a={long}")),
        Err(SelectorError::InvalidValue { .. })
    ));
    let prefix = format!("{}.com", "a".repeat(250));
    assert!(matches!(
        labels::parse(&format!("{prefix}/a")),
        Err(SelectorError::InvalidKey { .. })
    ));
    let err = labels::parse(&format!("{prefix}/{long}")).unwrap_err();
    let SelectorError::InvalidKey { reason, .. } = err else {
        panic!("expected InvalidKey, got {err:?}");
    };
    assert!(reason.contains("253"), "{reason}");
    assert!(reason.contains("63"), "{reason}");
}

#[test]
fn requirement_new_errors() {
    assert!(matches!(
        Requirement::new("a", Operator::In, Vec::<String>::new()),
        Err(SelectorError::MissingValues { operator: "in", .. })
    ));
    assert!(matches!(
        Requirement::new("a", Operator::Equals, Vec::<String>::new()),
        Err(SelectorError::WrongValueCount { count: 0, .. })
    ));
    assert!(matches!(
        Requirement::new("a", Operator::NotEquals, ["x", "y"]),
        Err(SelectorError::WrongValueCount { count: 2, .. })
    ));
    assert!(matches!(
        Requirement::new("a", Operator::DoesNotExist, ["x"]),
        Err(SelectorError::WrongValueCount { .. })
    ));
    assert!(matches!(
        Requirement::new("a", Operator::LessThan, ["1", "2"]),
        Err(SelectorError::WrongValueCount { .. })
    ));
    assert!(matches!(
        Requirement::new("", Operator::Exists, Vec::<String>::new()),
        Err(SelectorError::InvalidKey { .. })
    ));
    let ok = Requirement::new("a", Operator::In, ["", "x"]).unwrap();
    assert_eq!(ok.to_string(), "a in (,x)");
    assert_eq!(
        Selector::new().add_requirement(ok.clone()).requirements(),
        [ok]
    );
}

// ---------------------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------------------

fn fparse(s: &str) -> fields::Selector {
    fields::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

#[test]
fn field_operators_parse() {
    let selector = fparse("a=1,b==2,c!=3");
    let ops: Vec<(&str, fields::Operator, &str)> = selector
        .requirements()
        .iter()
        .map(|r| (r.field(), r.operator(), r.value()))
        .collect();
    assert_eq!(
        ops,
        [
            ("a", fields::Operator::Equals, "1"),
            ("b", fields::Operator::Equals, "2"),
            ("c", fields::Operator::NotEquals, "3"),
        ]
    );
    assert_eq!(selector.to_string(), "a=1,b=2,c!=3");
}

#[test]
fn field_selectors_render_sorted_and_round_trip() {
    let selector = fparse("status.phase!=Running,metadata.name=web,metadata.namespace=default");
    assert_eq!(
        selector.to_string(),
        "metadata.name=web,metadata.namespace=default,status.phase!=Running"
    );
    for input in [
        "",
        "a=b",
        "a!=b",
        "a==b",
        r"a=x\,y\=z\\w",
        "b=2,a=1,a!=1",
        "a=,b!=",
        "=x",
        " spaced = kept ",
        "ü=ö",
    ] {
        let once = fparse(input);
        let rendered = once.to_string();
        let twice = fparse(&rendered);
        assert_eq!(twice, once, "{input:?} -> {rendered:?}");
        assert_eq!(twice.to_string(), rendered);
    }
}

#[test]
fn field_values_are_unescaped_and_escaped() {
    let selector = fparse(r"a=x\,y\=z\\w");
    assert_eq!(selector.requirements()[0].value(), r"x,y=z\w");
    assert_eq!(selector.to_string(), r"a=x\,y\=z\\w");
    assert_eq!(fields::escape_value(r"\,="), r"\\\,\=");
    assert_eq!(fields::unescape_value(r"\\\,\=").unwrap(), r"\,=");
    assert_eq!(fields::unescape_value("plain").unwrap(), "plain");
    for value in ["", "a", r"\", ",", "=", r"a\,b=c\\", "ü,ö"] {
        assert_eq!(
            fields::unescape_value(&fields::escape_value(value)).unwrap(),
            value
        );
    }
    let built = fields::Selector::new().equals("a", "x,y");
    assert_eq!(built.to_string(), r"a=x\,y");
    assert_eq!(fparse(&built.to_string()), built);
}

#[test]
fn field_whitespace_and_empty_terms() {
    let selector = fparse(" a = b ");
    assert_eq!(selector.requirements()[0].field(), " a ");
    assert_eq!(selector.requirements()[0].value(), " b ");
    assert_eq!(fparse("a=b,,c=d,"), fparse("a=b,c=d"));
    assert!(fparse(",,,").is_empty());
    assert!(fparse("=").is_empty());
    assert!(fparse("").is_empty());
}

#[test]
fn field_matching() {
    let pod = BTreeMap::from([
        ("metadata.name".to_string(), "web-0".to_string()),
        ("metadata.namespace".to_string(), "default".to_string()),
        ("spec.nodeName".to_string(), String::new()),
    ]);
    assert!(fparse("metadata.name=web-0").matches(&pod));
    assert!(fparse("metadata.name==web-0,metadata.namespace!=kube-system").matches(&pod));
    assert!(!fparse("metadata.name!=web-0").matches(&pod));
    assert!(!fparse("metadata.name=web-1").matches(&pod));
    // Absent and empty fields read as "".
    assert!(fparse("spec.nodeName=").matches(&pod));
    assert!(fparse("status.phase=").matches(&pod));
    assert!(fparse("status.phase!=Running").matches(&pod));
    assert!(!fparse("status.phase!=").matches(&pod));
    assert!(fparse("").matches(&pod));
    assert!(!fields::Selector::nothing().matches(&pod));

    let hash: HashMap<&str, &str> = HashMap::from([("metadata.name", "x")]);
    assert!(fparse("metadata.name=x").matches(&hash));
    let none: Option<BTreeMap<String, String>> = None;
    assert!(fparse("a!=x").matches(&none));
    assert!(fparse("metadata.name=x").matches_fn(|f| (f == "metadata.name").then_some("x")));
}

#[test]
fn field_requires_exact_match() {
    let selector = fparse("metadata.name!=a,metadata.name=b,metadata.namespace==ns");
    assert_eq!(selector.requires_exact_match("metadata.name"), Some("b"));
    assert_eq!(
        selector.requires_exact_match("metadata.namespace"),
        Some("ns")
    );
    assert_eq!(selector.requires_exact_match("spec.nodeName"), None);
    assert_eq!(fparse("a!=x").requires_exact_match("a"), None);
    assert_eq!(fparse(r"a=x\,y").requires_exact_match("a"), Some("x,y"));
    assert_eq!(fields::Selector::nothing().requires_exact_match("a"), None);
}

#[test]
fn field_builders_everything_nothing_transform() {
    let built = fields::Selector::new()
        .not_equals("status.phase", "Running")
        .equals("metadata.name", "x");
    assert_eq!(built, fparse("metadata.name=x,status.phase!=Running"));
    assert!(fields::Selector::everything().is_empty());
    assert_eq!(fields::Selector::everything().to_string(), "");
    let nothing = fields::Selector::nothing().equals("a", "b");
    assert!(nothing.matches_nothing());
    assert!(!nothing.is_empty());
    assert_eq!(nothing.to_string(), "");
    let added = fields::Selector::new().add_requirement(fields::Requirement::new(
        "a",
        fields::Operator::NotEquals,
        "b",
    ));
    assert_eq!(added.to_string(), "a!=b");

    let dropped = fparse("a=1,b=2")
        .transform(|field, value| {
            if field == "a" {
                Ok::<_, ()>((String::new(), String::new()))
            } else {
                Ok((format!("x.{field}"), value.to_uppercase()))
            }
        })
        .unwrap();
    assert_eq!(dropped.to_string(), "x.b=2");
    assert_eq!(fparse("a=1").transform(|_, _| Err("no")), Err("no"));
}

#[test]
fn every_field_error() {
    let cases: &[(&str, &str, usize)] = &[
        ("a", "InvalidTerm", 1),
        ("a=b,c", "InvalidTerm", 5),
        ("a=b,c>d", "InvalidTerm", 5),
        ("a=b=c", "UnescapedCharacter", 4),
        ("a===b", "UnescapedCharacter", 4),
        ("a!=b=", "UnescapedCharacter", 5),
        (r"a=\x", "InvalidEscape", 3),
        (r"a=b\", "InvalidEscape", 4),
        (r"a=b\\\", "InvalidEscape", 6),
        ("x=1,é=\\é", "InvalidEscape", 7),
    ];
    for (input, expected, position) in cases {
        let err = fields::parse(input).expect_err(input);
        let debug = format!("{err:?}");
        assert!(debug.starts_with(expected), "{input:?}: got {err:?}");
        let found = match &err {
            SelectorError::InvalidTerm { position, .. } => *position,
            SelectorError::UnescapedCharacter {
                position: Some(p), ..
            }
            | SelectorError::InvalidEscape {
                position: Some(p), ..
            } => *p,
            other => panic!("{input:?}: unexpected {other:?}"),
        };
        assert_eq!(found, *position, "{input:?}: {err}");
        assert!(err.to_string().contains(input), "{err}");
    }
    let err = fields::parse("metadata.name").unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot understand term `metadata.name` at position 1 in `metadata.name`: \
         expected `field=value`, `field==value` or `field!=value`"
    );
    assert!(matches!(
        fields::unescape_value("a,b"),
        Err(SelectorError::UnescapedCharacter {
            character: ',',
            position: Some(2),
            selector: None
        })
    ));
}

// ---------------------------------------------------------------------------------------
// Never panic
// ---------------------------------------------------------------------------------------

/// A small deterministic generator, so the fuzz-style tests need no extra crates and
/// always run the same inputs.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
}

const PIECES: &[&str] = &[
    "a",
    "b",
    "key",
    "in",
    "notin",
    "(",
    ")",
    ",",
    "=",
    "==",
    "!=",
    "!",
    ">",
    "<",
    " ",
    "\t",
    "\n",
    "\r",
    "1",
    "-1",
    "x.y/z",
    "é",
    "ü",
    "日本",
    "\u{0}",
    "\u{7f}",
    "\u{feff}",
    "\u{10ffff}",
    "\\",
    "\\,",
    "\\=",
    "\\\\",
    "/",
    ".",
    "_",
    "-",
    "🦀",
    "\u{a0}",
    "a=b",
    "a in (x,y)",
];

fn random_selector(rng: &mut XorShift) -> String {
    let len = rng.next() % 12;
    (0..len).map(|_| *rng.pick(PIECES)).collect()
}

fn random_chars(rng: &mut XorShift) -> String {
    let len = rng.next() % 16;
    (0..len)
        .map(|_| {
            let n = rng.next();
            match n % 4 {
                0 => char::from((n >> 8) as u8 % 128),
                1 => char::from((n >> 8) as u8),
                2 => char::from_u32(((n >> 8) % 0x11_0000) as u32).unwrap_or('\u{fffd}'),
                _ => *rng.pick(&['(', ')', ',', '=', '!', '<', '>', '\\', ' ']),
            }
        })
        .collect()
}

#[test]
fn no_input_panics_and_successes_round_trip() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut parsed = 0;
    for i in 0..20_000 {
        let input = if i % 2 == 0 {
            random_selector(&mut rng)
        } else {
            random_chars(&mut rng)
        };
        if let Ok(selector) = labels::parse(&input) {
            parsed += 1;
            selector.validate().unwrap();
            let rendered = selector.to_string();
            let again = labels::parse(&rendered)
                .unwrap_or_else(|e| panic!("{input:?} -> {rendered:?} does not reparse: {e}"));
            assert_eq!(again, selector, "{input:?} -> {rendered:?}");
            let _ = selector.to_label_selector();
            let _ = selector.matches(&set(&[("a", "b"), ("key", "1")]));
        } else if let Err(err) = labels::parse(&input) {
            let _ = err.to_string();
        }
        match fields::parse(&input) {
            Ok(selector) => {
                let rendered = selector.to_string();
                // Field names are not escaped (as in apimachinery), so only selectors whose
                // fields hold no operator characters must survive a round trip.
                if selector
                    .requirements()
                    .iter()
                    .all(|r| !r.field().contains(['=', ',', '\\', '!']))
                {
                    assert_eq!(fields::parse(&rendered).unwrap(), selector, "{input:?}");
                }
                let _ = selector.matches(&set(&[("a", "b")]));
            }
            Err(err) => {
                let _ = err.to_string();
            }
        }
        let _ = fields::unescape_value(&input);
    }
    assert!(
        parsed > 100,
        "the generator should produce some valid selectors"
    );
}

#[test]
fn hand_picked_malformed_inputs_do_not_panic() {
    let inputs = [
        "(((((",
        ")))))",
        ",,,,,",
        "!!!!!",
        "=====",
        "!=!=!=",
        "<><><>",
        "a in (((",
        "a in )))",
        "a notin",
        "in",
        "notin",
        "in in",
        "notin notin notin",
        "a in (in",
        "\\",
        "\\\\\\",
        "a=\\",
        "日本=語",
        "🦀 in (🦀)",
        "\u{0}",
        "a\u{0}=b",
        "a=b\u{0}",
        "\u{200b}a=b",
        "a\u{a0}=b",
        "a=b,\u{2028}",
        "é",
        "a=é",
        "a in (é,",
        "!é",
        "é>1",
        "a>é",
    ];
    for input in inputs {
        let _ = labels::parse(input).map(|s| s.to_string());
        let _ = fields::parse(input).map(|s| s.to_string());
        let _ = fields::unescape_value(input);
        if let Err(err) = labels::parse(input) {
            assert!(!err.to_string().is_empty());
        }
    }
    // Very long inputs.
    let long = "a=b,".repeat(10_000) + "a";
    assert_eq!(labels::parse(&long).unwrap().requirements().len(), 10_001);
    let deep = "(".repeat(100_000);
    assert!(labels::parse(&deep).is_err());
    assert!(fields::parse(&deep).is_err());
}
