//! kubeconfig loading, merging, path resolution, overrides and validation, with fixture files
//! written to temporary directories.

use crate::support;

use std::path::{Path, PathBuf};

use base64::Engine as _;
use kclient_rest::kubeconfig::{
    ExecInteractiveMode, Kubeconfig, KubeconfigError, KubeconfigOptions, LoadingRules,
};
use kclient_rest::{Config, Error, Proxy, RestClient};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

const BASIC: &str = r#"
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: Q0EgUEVN
    tls-server-name: api.dev.example
- name: prod-cluster
  cluster:
    server: https://prod.example:443
users:
- name: dev-user
  user:
    token: dev-token
- name: prod-user
  user:
    username: admin
    password: hunter2
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user, namespace: team-a}
- name: prod
  context: {cluster: prod-cluster, user: prod-user}
"#;

#[test]
fn the_current_context_becomes_a_config() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "config", BASIC);
    let c = Config::from_kubeconfig_file(&path).unwrap();
    assert_eq!(c.host, "https://10.0.0.1:6443");
    assert_eq!(c.bearer_token.as_deref(), Some("dev-token"));
    assert_eq!(c.tls.ca_data.as_deref(), Some(&b"CA PEM"[..]));
    assert_eq!(c.tls.server_name.as_deref(), Some("api.dev.example"));
    assert!(!c.tls.insecure);
    assert_eq!(c.namespace(), "team-a");
    assert_eq!(
        (c.qps, c.burst),
        (Some(5.0), 10),
        "client defaults are kept"
    );
}

#[test]
fn overrides_pick_context_cluster_user_namespace_and_server() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "config", BASIC);
    let opts = |f: &dyn Fn(&mut KubeconfigOptions)| {
        let mut o = KubeconfigOptions {
            path: Some(path.clone()),
            ..KubeconfigOptions::default()
        };
        f(&mut o);
        o
    };
    let prod = Config::from_kubeconfig(&opts(&|o| o.context = Some("prod".into()))).unwrap();
    assert_eq!(prod.host, "https://prod.example:443");
    let basic = prod.basic_auth.as_ref().unwrap();
    assert_eq!(
        (basic.username.as_str(), basic.password.as_str()),
        ("admin", "hunter2")
    );
    assert_eq!(prod.namespace(), "default");

    let mixed = Config::from_kubeconfig(&opts(&|o| {
        o.cluster = Some("prod-cluster".into());
        o.namespace = Some("other".into());
    }))
    .unwrap();
    assert_eq!(mixed.host, "https://prod.example:443");
    assert_eq!(
        mixed.bearer_token.as_deref(),
        Some("dev-token"),
        "the context's user"
    );
    assert_eq!(mixed.namespace(), "other");

    let user = Config::from_kubeconfig(&opts(&|o| o.user = Some("prod-user".into()))).unwrap();
    assert!(user.basic_auth.is_some() && user.bearer_token.is_none());

    let server =
        Config::from_kubeconfig(&opts(&|o| o.server = Some("https://1.2.3.4".into()))).unwrap();
    assert_eq!(server.host, "https://1.2.3.4");
    assert_eq!(
        server.tls.server_name, None,
        "a server override drops tls-server-name"
    );
    assert!(server.tls.ca_data.is_some(), "but keeps the CA");

    for (o, expected) in [
        (opts(&|o| o.context = Some("nope".into())), "context"),
        (opts(&|o| o.cluster = Some("nope".into())), "cluster"),
        (opts(&|o| o.user = Some("nope".into())), "user"),
    ] {
        let err = Config::from_kubeconfig(&o).unwrap_err();
        let matched = matches!(
            (&err, expected),
            (
                Error::Kubeconfig(KubeconfigError::ContextNotFound(_)),
                "context"
            ) | (
                Error::Kubeconfig(KubeconfigError::ClusterNotFound(_)),
                "cluster"
            ) | (Error::Kubeconfig(KubeconfigError::UserNotFound(_)), "user")
        );
        assert!(matched, "{expected}: {err:?}");
    }
}

#[test]
fn relative_paths_resolve_against_the_file_that_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "nested/kube/config",
        r#"
current-context: c
clusters:
- name: c
  cluster: {server: "https://h:6443", certificate-authority: ca.crt}
users:
- name: u
  user:
    client-certificate: certs/client.crt
    client-key: /absolute/client.key
    tokenFile: ../token
    exec: {command: ./bin/plugin, apiVersion: client.authentication.k8s.io/v1beta1}
- name: path-plugin
  user:
    exec: {command: kubectl-oidc_login, apiVersion: client.authentication.k8s.io/v1beta1}
contexts:
- name: c
  context: {cluster: c, user: u}
"#,
    );
    let kc = Kubeconfig::read_from(&path).unwrap();
    let base = dir.path().join("nested/kube");
    let cluster = kc.cluster("c").unwrap();
    assert_eq!(
        cluster.certificate_authority.as_deref(),
        Some(base.join("ca.crt").to_str().unwrap())
    );
    let user = kc.auth_info("u").unwrap();
    assert_eq!(
        user.client_certificate.as_deref(),
        Some(base.join("certs/client.crt").to_str().unwrap())
    );
    assert_eq!(user.client_key.as_deref(), Some("/absolute/client.key"));
    assert_eq!(
        user.token_file.as_deref(),
        Some(base.join("../token").to_str().unwrap())
    );
    assert_eq!(
        user.exec.as_ref().unwrap().command,
        base.join("./bin/plugin").to_str().unwrap()
    );
    assert_eq!(
        kc.auth_info("path-plugin")
            .unwrap()
            .exec
            .as_ref()
            .unwrap()
            .command,
        "kubectl-oidc_login",
        "commands looked up in PATH are left alone"
    );
}

#[test]
fn kubeconfig_lists_merge_with_the_first_file_winning() {
    let dir = tempfile::tempdir().unwrap();
    let first = write(
        dir.path(),
        "a/config",
        r#"
current-context: ctx-a
preferences: {}
clusters:
- name: shared
  cluster: {server: "https://first:6443"}
users:
- name: shared-user
  user: {token: first-token}
contexts:
- name: ctx-a
  context: {cluster: shared, user: shared-user}
"#,
    );
    let second = write(
        dir.path(),
        "b/config",
        r#"
current-context: ctx-b
preferences: {colors: true}
clusters:
- name: shared
  cluster: {server: "https://second:6443", insecure-skip-tls-verify: true}
- name: only-second
  cluster: {server: "https://only-second:6443", certificate-authority: ca.pem}
users:
- name: shared-user
  user: {token: second-token, username: ignored}
contexts:
- name: ctx-b
  context: {cluster: only-second, user: shared-user}
"#,
    );
    let missing = dir.path().join("missing/config");
    let rules = LoadingRules {
        explicit_path: None,
        precedence: vec![missing.clone(), first.clone(), second.clone()],
    };
    let kc = rules.load().unwrap();
    assert_eq!(
        kc.current_context.as_deref(),
        Some("ctx-a"),
        "first current-context wins"
    );
    let shared = kc.cluster("shared").unwrap();
    assert_eq!(shared.server.as_deref(), Some("https://first:6443"));
    assert_eq!(
        shared.insecure_skip_tls_verify, None,
        "entries are kept whole: nothing is taken from the second file's entry"
    );
    assert_eq!(kc.auth_info("shared-user").unwrap().username, None);
    assert_eq!(
        kc.cluster("only-second")
            .unwrap()
            .certificate_authority
            .as_deref(),
        Some(dir.path().join("b/ca.pem").to_str().unwrap()),
        "paths resolve against the file that named them"
    );
    assert!(kc.context("ctx-b").is_some());
    assert_eq!(
        kc.preferences.as_ref().unwrap().colors,
        Some(true),
        "unset scalars are filled"
    );

    let reversed = LoadingRules {
        explicit_path: None,
        precedence: vec![second, first],
    }
    .load()
    .unwrap();
    assert_eq!(reversed.current_context.as_deref(), Some("ctx-b"));
    assert_eq!(
        reversed.cluster("shared").unwrap().server.as_deref(),
        Some("https://second:6443")
    );
}

#[test]
fn kubeconfig_env_lists_are_split() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a", "current-context: from-a\n");
    let b = write(dir.path(), "b", "current-context: from-b\n");
    let list = std::env::join_paths([&a, &b, &a]).unwrap();
    let rules = LoadingRules::from_path_list(&list);
    assert_eq!(rules.precedence, vec![a, b]);
    assert_eq!(
        rules.load().unwrap().current_context.as_deref(),
        Some("from-a")
    );
}

#[test]
fn missing_files() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let err = Config::from_kubeconfig_file(&missing).unwrap_err();
    assert!(
        matches!(err, Error::Kubeconfig(KubeconfigError::ExplicitFileMissing(ref p)) if *p == missing),
        "{err:?}"
    );
    let rules = LoadingRules {
        explicit_path: None,
        precedence: vec![missing.clone()],
    };
    assert!(!rules.any_file_exists());
    let kc = rules.load().unwrap();
    assert_eq!(kc, Kubeconfig::default());
    let err = KubeconfigOptions::default().build(&kc).unwrap_err();
    assert!(
        matches!(err, Error::Kubeconfig(KubeconfigError::Empty { .. })),
        "{err:?}"
    );
    assert!(err
        .to_string()
        .contains("no configuration has been provided"));
}

#[test]
fn bad_yaml_names_the_file_and_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "unclosed",
            "clusters:\n- name: c\n  cluster: {server: \"https://x\"\n",
        ),
        ("tabs", "clusters:\n\t- name: c\n"),
        ("wrong-shape", "clusters: this should be a list\n"),
        ("wrong-type", "users:\n- name: u\n  user: {as-groups: 7}\n"),
        (
            "two-documents",
            "current-context: a\n---\ncurrent-context: b\n",
        ),
    ];
    for (name, text) in cases {
        let path = write(dir.path(), name, text);
        let err = Config::from_kubeconfig_file(&path).unwrap_err();
        match &err {
            Error::Kubeconfig(KubeconfigError::Parse { path: Some(p), .. }) => assert_eq!(p, &path),
            other => panic!("{name}: {other:?}"),
        }
        assert!(err.to_string().contains(name), "{name}: {err}");
        // The parser's own error is not chained (it quotes values); its message, without
        // them, is in the text.
        assert!(
            err.to_string().contains("cannot parse kubeconfig"),
            "{name}: {err}"
        );
    }
    // In a list of files, one bad file fails the load, naming it.
    let good = write(dir.path(), "good", BASIC);
    let bad = dir.path().join("unclosed");
    let err = LoadingRules {
        explicit_path: None,
        precedence: vec![good, bad.clone()],
    }
    .load()
    .unwrap_err();
    assert!(matches!(err, KubeconfigError::Parse { path: Some(ref p), .. } if *p == bad));
}

#[test]
fn unreadable_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where a file is expected cannot be read.
    let path = dir.path().join("is-a-dir");
    std::fs::create_dir(&path).unwrap();
    let err = Config::from_kubeconfig_file(&path).unwrap_err();
    assert!(
        matches!(err, Error::Kubeconfig(KubeconfigError::Read { .. })),
        "{err:?}"
    );
}

fn build(text: &str) -> Result<Config, Error> {
    KubeconfigOptions::default().build(&Kubeconfig::from_yaml(text).unwrap())
}

#[test]
fn validation_lists_every_problem() {
    let err = build(
        r#"
current-context: c
clusters:
- name: c
  cluster: {certificate-authority: /nonexistent/ca.crt}
users:
- name: u
  user:
    token: t
    username: u
    client-certificate-data: Y2VydA==
    as-groups: [g]
contexts:
- name: c
  context: {cluster: c, user: u}
"#,
    )
    .unwrap_err();
    let Error::Kubeconfig(KubeconfigError::Invalid(problems)) = &err else {
        panic!("{err:?}")
    };
    let all = problems.join("\n");
    for expected in [
        "no server found for cluster",
        "more than one authentication method",
        "client-key-data or client-key must be specified",
        "without impersonating a user",
        "unable to read certificate-authority",
    ] {
        assert!(all.contains(expected), "missing {expected:?} in {all}");
    }
}

#[test]
fn a_missing_current_context_is_invalid() {
    let err =
        build("current-context: gone\nclusters:\n- name: c\n  cluster: {server: https://x}\n")
            .unwrap_err();
    assert!(err.to_string().contains("context was not found"), "{err}");
}

#[test]
fn exec_plugins_need_an_interactive_mode_in_v1() {
    let text = |version: &str, mode: &str| {
        format!(
            "current-context: c\nclusters:\n- name: c\n  cluster:\n    server: https://x\n    extensions:\n    - name: client.authentication.k8s.io/exec\n      extension: {{audience: sts}}\nusers:\n- name: u\n  user:\n    exec:\n      command: plugin\n      apiVersion: {version}\n      {mode}\n      installHint: \"install \\e[31mit\"\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\n"
        )
    };
    let err = build(&text("client.authentication.k8s.io/v1", "")).unwrap_err();
    assert!(
        err.to_string()
            .contains("interactiveMode must be specified"),
        "{err}"
    );
    let c = build(&text(
        "client.authentication.k8s.io/v1",
        "interactiveMode: Never",
    ))
    .unwrap();
    let exec = c.exec.unwrap();
    assert_eq!(exec.interactive_mode, Some(ExecInteractiveMode::Never));
    assert_eq!(exec.cluster_config.unwrap()["audience"], "sts");
    assert_eq!(
        exec.install_hint.as_deref(),
        Some("install U+001B[31mit"),
        "escape codes are defused"
    );
    let c = build(&text("client.authentication.k8s.io/v1beta1", "")).unwrap();
    assert_eq!(
        c.exec.unwrap().interactive_mode,
        Some(ExecInteractiveMode::IfAvailable),
        "v1beta1 defaults to IfAvailable"
    );
}

#[test]
fn credentials_apply_only_to_https_servers() {
    let c = build("current-context: c\nclusters:\n- name: c\n  cluster: {server: \"http://127.0.0.1:8080\", certificate-authority-data: Q0E=}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n").unwrap();
    assert_eq!(c.host, "http://127.0.0.1:8080");
    assert_eq!(c.bearer_token, None);
    assert_eq!(c.tls.ca_data, None);
}

#[test]
fn data_fields_must_be_base64() {
    let err = build("current-context: c\nclusters:\n- name: c\n  cluster: {server: \"https://x\", certificate-authority-data: \"not base64!\"}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n").unwrap_err();
    assert!(
        matches!(
            err,
            Error::Kubeconfig(KubeconfigError::InvalidBase64 {
                field: "certificate-authority-data",
                ..
            })
        ),
        "{err:?}"
    );
}

#[test]
fn token_files_are_read_when_loading() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "token", "file-token\n");
    let path = write(
        dir.path(),
        "config",
        "current-context: c\nclusters:\n- name: c\n  cluster: {server: \"https://x\"}\nusers:\n- name: u\n  user: {tokenFile: token}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n",
    );
    let c = Config::from_kubeconfig_file(&path).unwrap();
    assert_eq!(c.bearer_token.as_deref(), Some("file-token\n"));
    assert_eq!(c.bearer_token_file, Some(dir.path().join("token")));
    std::fs::remove_file(dir.path().join("token")).unwrap();
    let err = Config::from_kubeconfig_file(&path).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Kubeconfig(KubeconfigError::ReferencedFile {
                what: "tokenFile",
                ..
            })
        ),
        "{err:?}"
    );
}

#[test]
fn proxy_and_impersonation_settings() {
    let c = build("current-context: c\nclusters:\n- name: c\n  cluster: {server: \"https://x\", proxy-url: \"socks5://proxy:1080\"}\nusers:\n- name: u\n  user: {token: t, as: jane, as-uid: \"7\", as-groups: [a, b], as-user-extra: {scopes: [view]}}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n").unwrap();
    assert_eq!(c.proxy, Proxy::Url("socks5://proxy:1080".into()));
    assert_eq!(c.impersonate.user.as_deref(), Some("jane"));
    assert_eq!(c.impersonate.uid.as_deref(), Some("7"));
    assert_eq!(c.impersonate.groups, ["a", "b"]);
    assert_eq!(c.impersonate.extra["scopes"], ["view"]);
    let err = build("current-context: c\nclusters:\n- name: c\n  cluster: {server: \"https://x\", proxy-url: \"ftp://proxy\"}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n").unwrap_err();
    assert!(err.to_string().contains("proxy-url"), "{err}");
}

#[test]
fn unknown_fields_survive_a_file_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "config",
        "apiVersion: v1\nkind: Config\nnew-top-level: {x: 1}\nclusters:\n- name: c\n  cluster: {server: \"https://x\", new-cluster-field: [1, 2]}\ncontexts:\n- name: c\n  context: {cluster: c, user: u, new-context-field: yes}\n",
    );
    let kc = Kubeconfig::read_from(&path).unwrap();
    let yaml = kc.to_yaml().unwrap();
    for key in ["new-top-level", "new-cluster-field", "new-context-field"] {
        assert!(yaml.contains(key), "{key} lost: {yaml}");
    }
}

#[tokio::test]
async fn a_kubeconfig_reaches_a_tls_server() {
    let pki = support::Pki::new();
    let server = support::TestServer::https(pki.server_config(), |r| async move {
        assert_eq!(r.header("authorization"), Some("Bearer kc-token"));
        support::json(200, serde_json::json!({"gitVersion": "v1.35.0"}))
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "pki/ca.crt", &pki.ca_pem);
    let path = write(
        dir.path(),
        "config",
        &format!(
            "current-context: c\nclusters:\n- name: c\n  cluster: {{server: \"{}\", certificate-authority: pki/ca.crt}}\nusers:\n- name: u\n  user:\n    token: kc-token\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\n",
            server.url(),
            b64(&pki.client_cert_pem),
            b64(&pki.client_key_pem),
        ),
    );
    let mut config = Config::from_kubeconfig_file(&path).unwrap();
    config.proxy = Proxy::Direct;
    let v: serde_json::Value = RestClient::new(config)
        .unwrap()
        .get()
        .abs_path("/version")
        .json()
        .await
        .unwrap();
    assert_eq!(v["gitVersion"], "v1.35.0");
    assert_eq!(
        server.requests()[0].client_cert.as_deref(),
        Some(&pki.client_cert_der[..])
    );
}

/// Issue 19, item 3: `Debug` of a kubeconfig and of the `Config` built from it never shows an
/// exec plugin's arguments or environment, nor a password in a cluster's `proxy-url`.
#[test]
fn debug_output_shows_no_secrets() {
    const SECRETS: &str = r#"
apiVersion: v1
kind: Config
current-context: c
clusters:
- name: k
  cluster:
    server: https://10.0.0.1:6443
    proxy-url: http://proxyuser:PROXY-SECRET@proxy.example:3128
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: kubelogin
      args: ["get-token", "--oidc-client-secret=ARG-SECRET"]
      env: [{name: CLIENT_SECRET, value: ENV-SECRET}]
      interactiveMode: Never
contexts:
- name: c
  context: {cluster: k, user: u}
"#;
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "config", SECRETS);
    let kubeconfig = Kubeconfig::from_yaml(SECRETS).unwrap();
    let config = Config::from_kubeconfig_file(&path).unwrap();
    for shown in [
        format!("{kubeconfig:?}"),
        format!("{config:?}"),
        format!("{kubeconfig:#?}"),
    ] {
        for secret in ["PROXY-SECRET", "ARG-SECRET", "ENV-SECRET"] {
            assert!(!shown.contains(secret), "{secret} shown in {shown}");
        }
        assert!(shown.contains("kubelogin"), "the command is shown: {shown}");
    }
    assert!(format!("{kubeconfig:?}").contains("http://proxyuser:xxxxx@proxy.example:3128"));
    assert!(format!("{config:?}").contains("--- REDACTED ---"));
}

/// A key the schema does not know can be a secret in a malformed file (here tokens pasted as
/// keys of a user, a cluster, an exec section and the file itself): `Debug` counts unknown
/// keys and never shows their names or values.
#[test]
fn debug_output_counts_unknown_keys_without_naming_them() {
    const MALFORMED: &str = r#"
apiVersion: v1
kind: Config
TOP-SECRET-KEY: 1
clusters:
- name: k
  cluster:
    server: https://10.0.0.1:6443
    CLUSTER-SECRET-KEY: {nested: VALUE-SECRET}
users:
- name: u
  user:
    USER-SECRET-KEY: null
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: kubelogin
      EXEC-SECRET-KEY: x
"#;
    let kubeconfig = Kubeconfig::from_yaml(MALFORMED).unwrap();
    for shown in [format!("{kubeconfig:?}"), format!("{kubeconfig:#?}")] {
        for secret in [
            "TOP-SECRET",
            "CLUSTER-SECRET",
            "VALUE-SECRET",
            "USER-SECRET",
            "EXEC-SECRET",
        ] {
            assert!(!shown.contains(secret), "{secret} shown in {shown}");
        }
        assert!(shown.contains("<1 unknown keys>"), "{shown}");
    }
    // The keys are kept (and written back) all the same.
    assert_eq!(kubeconfig.other["TOP-SECRET-KEY"], 1);
}

/// Issue 19, item 5: a parse error names what is wrong and where, never the value (here a
/// token written where the user's map belongs).
#[test]
fn parse_errors_do_not_quote_values() {
    let text = "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user: TOKEN-SECRET-abc123\n";
    let err = Kubeconfig::from_yaml(text).unwrap_err();
    let shown = err.to_string();
    assert!(!shown.contains("TOKEN-SECRET"), "{shown}");
    assert!(!format!("{err:?}").contains("TOKEN-SECRET"));
    assert!(shown.contains("invalid type"), "{shown}");
    assert!(shown.contains("line 5"), "{shown}");
}

/// Issue 24: the counterexample the kubeconfig fuzz target found. The indented line folds
/// into the plain scalar `v1`, so apiVersion is `v1 SECRET-aaaa`; the kind/apiVersion check
/// quoted it whole. It names the field now, never the value.
#[test]
fn a_continuation_line_folded_into_the_api_version_is_not_quoted() {
    for text in [
        "apiVersion: v1\n  SECRET-aaaa",
        "kind: Config\n  SECRET-aaaa",
        "apiVersion: SECRET-aaaa\nkind: SECRET-bbbb\n",
    ] {
        let err = Kubeconfig::from_yaml(text).unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains("SECRET-"), "{shown}");
        assert!(matches!(err, KubeconfigError::Parse { .. }), "{err:?}");
    }
}

/// A `proxy-url` that is refused is not repeated in the error: it may hold a password.
#[test]
fn a_refused_proxy_url_is_not_quoted() {
    for proxy in [
        "ftp://user:PROXY-SECRET@proxy",
        "http://user:PROXY-SECRET@prox y:80",
    ] {
        let err = build(&format!("current-context: c\nclusters:\n- name: c\n  cluster: {{server: \"https://x\", proxy-url: \"{proxy}\"}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\n")).unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(shown.contains("proxy-url"), "{shown}");
        assert!(!shown.contains("PROXY-SECRET"), "{shown}");
    }
}

/// Issue 29, item 5: a `proxy-url` the kubeconfig check accepts but the client refuses
/// (`https://`), and a server URL that is no URL, both with a password: the errors and the
/// `Debug` output show the user and `xxxxx`, never the password.
#[test]
fn passwords_in_proxy_and_server_urls_never_show_in_errors() {
    let text = "current-context: c\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\", proxy-url: \"https://user:PROXY-SECRET@proxy:3128\"}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n";
    let kubeconfig = Kubeconfig::from_yaml(text).unwrap();
    assert!(!format!("{kubeconfig:?}").contains("PROXY-SECRET"));
    let config = KubeconfigOptions::default().build(&kubeconfig).unwrap();
    assert!(!format!("{config:?}").contains("PROXY-SECRET"));
    let err = RestClient::new(config).unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(shown.contains("https://user:xxxxx@proxy:3128"), "{shown}");
    assert!(!shown.contains("PROXY-SECRET"), "{shown}");

    let text = text
        .replace(
            "https://127.0.0.1:1",
            "https://admin:SERVER-SECRET@exa mple",
        )
        .replace("https://user:PROXY-SECRET@proxy:3128", "http://proxy:3128");
    let kubeconfig = Kubeconfig::from_yaml(&text).unwrap();
    assert!(!format!("{kubeconfig:?}").contains("SERVER-SECRET"));
    let config = KubeconfigOptions::default().build(&kubeconfig).unwrap();
    assert!(!format!("{config:?}").contains("SERVER-SECRET"));
    let err = RestClient::new(config).unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(shown.contains("admin:xxxxx@exa mple"), "{shown}");
    assert!(!shown.contains("SERVER-SECRET"), "{shown}");
    let options = KubeconfigOptions {
        server: Some("https://admin:SERVER-SECRET@h".into()),
        ..KubeconfigOptions::default()
    };
    assert!(!format!("{options:?}").contains("SERVER-SECRET"));
}

/// Issue 19, item 7: duplicate names keep the first position and the last value, in one pass
/// (it was quadratic: 1.4 s at 40k clusters). Not timed: the result is checked on a large file.
#[test]
fn duplicate_names_last_wins_at_the_first_position_on_a_large_file() {
    let n = 10_000;
    let mut text = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
    for round in 0..2 {
        for i in 0..n {
            text.push_str(&format!(
                "- name: c{i}\n  cluster: {{server: 'https://r{round}.example'}}\n"
            ));
        }
    }
    let kubeconfig = Kubeconfig::from_yaml(&text).unwrap();
    assert_eq!(kubeconfig.clusters.len(), n);
    assert_eq!(kubeconfig.clusters[0].name, "c0");
    assert_eq!(kubeconfig.clusters[n - 1].name, format!("c{}", n - 1));
    assert!(kubeconfig.clusters.iter().all(|c| c
        .cluster
        .as_ref()
        .and_then(|c| c.server.as_deref())
        == Some("https://r1.example")));
}

/// Issue 19, item 11: kubectl rejects a kubeconfig of another kind or version, and reads
/// YAML 1.1 booleans (`yes`, `on`, ...).
#[test]
fn kind_and_version_are_checked_and_yaml_11_booleans_read() {
    let err = Kubeconfig::from_yaml("apiVersion: v2\nkind: Pod\n").unwrap_err();
    assert!(
        err.to_string()
            .contains("its kind is not Config and its apiVersion is not v1"),
        "{err}"
    );
    let err = Kubeconfig::from_yaml("apiVersion: v2\nkind: Config\n").unwrap_err();
    assert!(
        err.to_string().contains(": its apiVersion is not v1:"),
        "{err}"
    );
    let err = Kubeconfig::from_yaml("apiVersion: v1\nkind: Pod\n").unwrap_err();
    assert!(
        err.to_string().contains(": its kind is not Config:"),
        "{err}"
    );
    assert!(Kubeconfig::from_yaml("apiVersion: v1\nkind: Config\n").is_ok());
    assert!(
        Kubeconfig::from_yaml("clusters: []\n").is_ok(),
        "both may be absent"
    );
    let kc = Kubeconfig::from_yaml(
        "clusters:\n- name: a\n  cluster: {server: 'https://a', insecure-skip-tls-verify: yes, disable-compression: off}\n",
    )
    .unwrap();
    let cluster = kc.clusters[0].cluster.as_ref().unwrap();
    assert_eq!(cluster.insecure_skip_tls_verify, Some(true));
    assert_eq!(cluster.disable_compression, Some(false));
    assert!(Kubeconfig::from_yaml(
        "clusters:\n- name: a\n  cluster: {insecure-skip-tls-verify: maybe}\n"
    )
    .is_err());
}

/// Issue 19, item 6: deeply nested YAML is refused by a linear pre-check before the parser
/// (which took seconds on 50,000 levels). Not timed: the typed error is checked.
#[test]
fn deeply_nested_yaml_is_refused_before_parsing() {
    for text in [
        format!("clusters: {}", "[".repeat(100_000)),
        format!("users:\n{}x\n", "- ".repeat(100_000)),
    ] {
        let err = Kubeconfig::from_yaml(&text).unwrap_err();
        assert!(
            err.to_string().contains("nested deeper than 128 levels"),
            "{err}"
        );
    }
}
