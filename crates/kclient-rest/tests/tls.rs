//! TLS against an HTTPS test server with a CA made in the test: trust, server names, client
//! certificates, HTTP/2 negotiation and the typed failures.

use crate::support;

use std::sync::Arc;

use futures::StreamExt;
use http::Version;
use kclient_rest::{
    Error, RequestMetrics, RestClient, TlsError, CA_REFRESH_DURATION,
    CERT_CALLBACK_REFRESH_DURATION,
};
use serde_json::json;
use support::{config, json, Pki, TestServer};

async fn server(pki: &Pki) -> TestServer {
    TestServer::https(pki.server_config(), |r| async move {
        if r.uri.path() == "/whoami" {
            match r.client_cert {
                Some(_) => json(200, json!({"authenticated": true})),
                None => support::status(401, "Unauthorized", "Unauthorized"),
            }
        } else {
            json(200, json!({"major": "1", "minor": "35"}))
        }
    })
    .await
}

#[tokio::test]
async fn trusted_ca_works_and_negotiates_http2() {
    let pki = Pki::new();
    let server = server(&pki).await;
    let mut c = config(&server.url());
    c.tls.ca_data = Some(pki.ca_pem.clone().into_bytes());
    let client = RestClient::new(c).unwrap();
    let v: serde_json::Value = client.get().abs_path("/version").json().await.unwrap();
    assert_eq!(v["minor"], "35");
    assert_eq!(
        server.requests()[0].version,
        Version::HTTP_2,
        "ALPN picks h2"
    );
}

#[tokio::test]
async fn http2_can_be_disabled() {
    let pki = Pki::new();
    let server = server(&pki).await;
    let mut c = config(&server.url());
    c.tls.ca_data = Some(pki.ca_pem.clone().into_bytes());
    c.disable_http2 = true;
    RestClient::new(c)
        .unwrap()
        .get()
        .abs_path("/version")
        .send()
        .await
        .unwrap();
    assert_eq!(server.requests()[0].version, Version::HTTP_11);
}

#[tokio::test]
async fn ca_from_a_file() {
    let pki = Pki::new();
    let server = server(&pki).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.crt");
    std::fs::write(&ca, &pki.ca_pem).unwrap();
    let mut c = config(&server.url());
    c.tls.ca_file = Some(ca);
    RestClient::new(c)
        .unwrap()
        .get()
        .abs_path("/version")
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn unknown_ca_fails_the_handshake() {
    let pki = Pki::new();
    let server = server(&pki).await;
    let mut c = config(&server.url());
    c.tls.ca_data = Some(Pki::other_ca_pem().into_bytes());
    let err = RestClient::new(c)
        .unwrap()
        .get()
        .abs_path("/version")
        .send()
        .await
        .unwrap_err();
    match &err {
        Error::Tls(TlsError::Handshake { source, .. }) => {
            assert!(
                matches!(source, rustls::Error::InvalidCertificate(_)),
                "{source:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(!kclient_core::ApiStatus::is_connection_refused(&err));
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_system_roots_do_not_trust_a_private_ca() {
    let pki = Pki::new();
    let server = server(&pki).await;
    let err = RestClient::new(config(&server.url()))
        .unwrap()
        .get()
        .abs_path("/version")
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Tls(TlsError::Handshake { .. })),
        "{err:?}"
    );
}

#[tokio::test]
async fn wrong_server_name_fails_and_the_right_one_works() {
    let pki = Pki::new();
    let server = server(&pki).await;
    let mut c = config(&server.url());
    c.tls.ca_data = Some(pki.ca_pem.clone().into_bytes());
    c.tls.server_name = Some("wrong.example.com".into());
    let err = RestClient::new(c.clone())
        .unwrap()
        .get()
        .abs_path("/version")
        .send()
        .await
        .unwrap_err();
    match &err {
        Error::Tls(TlsError::Handshake { source, .. }) => assert!(
            matches!(
                source,
                rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName)
                    | rustls::Error::InvalidCertificate(
                        rustls::CertificateError::NotValidForNameContext { .. }
                    )
            ),
            "{source:?}"
        ),
        other => panic!("{other:?}"),
    }
    // The certificate names kubernetes.default.svc, not 127.0.0.1's other names: override.
    c.tls.server_name = Some("kubernetes.default.svc".into());
    RestClient::new(c)
        .unwrap()
        .get()
        .abs_path("/version")
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn hostnames_are_verified() {
    let pki = Pki::new();
    let server = server(&pki).await;
    let mut c = config(&server.localhost_url());
    c.tls.ca_data = Some(pki.ca_pem.clone().into_bytes());
    RestClient::new(c)
        .unwrap()
        .get()
        .abs_path("/version")
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn insecure_skips_verification() {
    let pki = Pki::new();
    let server = server(&pki).await;
    let mut c = config(&server.url());
    c.tls.insecure = true;
    c.tls.server_name = Some("anything.example".into());
    RestClient::new(c)
        .unwrap()
        .get()
        .abs_path("/version")
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn client_certificates_authenticate() {
    let pki = Pki::new();
    let server = server(&pki).await;
    let mut c = config(&server.url());
    c.tls.ca_data = Some(pki.ca_pem.clone().into_bytes());
    let anonymous = RestClient::new(c.clone()).unwrap();
    let err = anonymous
        .get()
        .abs_path("/whoami")
        .send()
        .await
        .unwrap_err();
    assert!(kclient_core::ApiStatus::is_unauthorized(&err), "{err:?}");

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("client.crt"), &pki.client_cert_pem).unwrap();
    std::fs::write(dir.path().join("client.key"), &pki.client_key_pem).unwrap();
    c.tls.cert_file = Some(dir.path().join("client.crt"));
    c.tls.key_file = Some(dir.path().join("client.key"));
    let authenticated = RestClient::new(c).unwrap();
    authenticated
        .get()
        .abs_path("/whoami")
        .send()
        .await
        .unwrap();
    let seen = server.requests();
    assert_eq!(
        seen.last().unwrap().client_cert.as_deref(),
        Some(&pki.client_cert_der[..])
    );
}

/// client-go's `transport/cert_rotation.go`: client certificate files are read again every
/// `CertCallbackRefreshDuration` (5 minutes); once they changed, every open connection of
/// the pool is closed — a watch in flight included — and new connections present the new
/// pair. Before the re-read, the old pair is presented. On HTTP/2 and HTTP/1.1.
/// The senders of the watches `/watch` opened (each kept open until its sender writes or is
/// dropped).
type OpenWatches = Arc<parking_lot::Mutex<Vec<tokio::sync::mpsc::UnboundedSender<bytes::Bytes>>>>;

/// An HTTPS server with `pki`'s certificate: `/watch` opens a watch that stays open (its
/// sender kept in the list returned), any other path answers 200 with `answer(request)`.
async fn watching_server(
    pki: &Pki,
    answer: fn(&support::Recorded) -> serde_json::Value,
) -> (TestServer, OpenWatches) {
    let watches = OpenWatches::default();
    let open = watches.clone();
    let server = TestServer::https(pki.server_config(), move |r| {
        let open = open.clone();
        async move {
            if r.uri.path() == "/watch" {
                let (tx, response) = support::streaming(http::StatusCode::OK);
                open.lock().push(tx);
                response
            } else {
                json(200, answer(&r))
            }
        }
    })
    .await;
    (server, watches)
}

#[tokio::test(start_paused = true)]
async fn rotated_client_certificate_files_close_open_connections_and_are_presented() {
    for http2 in [true, false] {
        client_certificate_rotation(http2).await;
    }
}

async fn client_certificate_rotation(http2: bool) {
    let pki = Pki::new();
    let (server, watches) =
        watching_server(&pki, |r| json!({"presented": r.client_cert.is_some()})).await;
    let dir = tempfile::tempdir().unwrap();
    let (cert_file, key_file) = (dir.path().join("client.crt"), dir.path().join("client.key"));
    std::fs::write(&cert_file, &pki.client_cert_pem).unwrap();
    std::fs::write(&key_file, &pki.client_key_pem).unwrap();
    let mut c = config(&server.url());
    c.tls.ca_data = Some(pki.ca_pem.clone().into_bytes());
    c.tls.cert_file = Some(cert_file.clone());
    c.tls.key_file = Some(key_file.clone());
    c.disable_http2 = !http2;
    let client = RestClient::new(c).unwrap();
    let presented = || async {
        client.get().abs_path("/whoami").send().await.unwrap();
        server
            .requests()
            .last()
            .unwrap()
            .client_cert
            .clone()
            .unwrap()
    };
    assert_eq!(presented().await, pki.client_cert_der);

    let mut watch = client.get().abs_path("/watch").stream().await.unwrap();
    let (new_cert, new_key, new_der) = pki.client_identity("jane-rotated");
    std::fs::write(&cert_file, new_cert).unwrap();
    std::fs::write(&key_file, new_key).unwrap();
    // (With the paused clock, every wait on the loopback sockets lets the clock jump to the
    // next timer, so the check before the re-read is made well before it is due.)
    assert_eq!(
        presented().await,
        pki.client_cert_der,
        "before the re-read, the pair read at first (http2: {http2})"
    );

    tokio::time::sleep(CERT_CALLBACK_REFRESH_DURATION).await;
    let ended = watch.next().await;
    assert!(
        matches!(ended, None | Some(Err(_))),
        "the watch's connection was closed (http2: {http2}): {ended:?}"
    );
    assert_eq!(presented().await, new_der, "http2: {http2}");
    assert_eq!(watches.lock().len(), 1);
}

/// A rotation caught half-written (a certificate without its new key, then garbage) keeps
/// the pair in use and its connections, and is retried with backoff (client-go's work
/// queue) until the files hold a valid pair again.
#[tokio::test(start_paused = true)]
async fn a_half_written_rotation_keeps_the_current_pair_until_the_files_are_valid() {
    let pki = Pki::new();
    let server = TestServer::https(pki.server_config(), |_| async {
        json(200, json!({"ok": true}))
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (cert_file, key_file) = (dir.path().join("client.crt"), dir.path().join("client.key"));
    std::fs::write(&cert_file, &pki.client_cert_pem).unwrap();
    std::fs::write(&key_file, &pki.client_key_pem).unwrap();
    let mut c = config(&server.url());
    c.tls.ca_data = Some(pki.ca_pem.clone().into_bytes());
    c.tls.cert_file = Some(cert_file.clone());
    c.tls.key_file = Some(key_file.clone());
    let client = RestClient::new(c).unwrap();
    let presented = || async {
        client.get().abs_path("/whoami").send().await.unwrap();
        server
            .requests()
            .last()
            .unwrap()
            .client_cert
            .clone()
            .unwrap()
    };
    assert_eq!(presented().await, pki.client_cert_der);

    let (new_cert, new_key, new_der) = pki.client_identity("jane-rotated");
    std::fs::write(&cert_file, &new_cert).unwrap();
    tokio::time::sleep(CERT_CALLBACK_REFRESH_DURATION).await;
    assert_eq!(
        presented().await,
        pki.client_cert_der,
        "a certificate that does not match the key is not used"
    );
    std::fs::write(&key_file, "-----BEGIN PRIVATE KEY-----\ntruncated").unwrap();
    tokio::time::sleep(CERT_CALLBACK_REFRESH_DURATION).await;
    assert_eq!(presented().await, pki.client_cert_der, "nor a garbled key");
    std::fs::write(&key_file, new_key).unwrap();
    tokio::time::sleep(CERT_CALLBACK_REFRESH_DURATION).await;
    assert_eq!(
        presented().await,
        new_der,
        "retried until the pair is valid"
    );
}

#[tokio::test]
async fn bad_tls_material_fails_at_construction() {
    let mut c = config("https://127.0.0.1:1");
    c.tls.ca_data = Some(b"this is not PEM".to_vec());
    assert!(matches!(
        RestClient::new(c).unwrap_err(),
        Error::Tls(TlsError::NoCertificates { .. })
    ));
    let pki = Pki::new();
    let mut c = config("https://127.0.0.1:1");
    c.tls.cert_data = Some(pki.client_cert_pem.clone().into_bytes());
    c.tls.key_data = Some(b"no key here".to_vec());
    assert!(matches!(
        RestClient::new(c).unwrap_err(),
        Error::Tls(TlsError::NoPrivateKey { .. })
    ));
    let mut c = config("https://127.0.0.1:1");
    c.tls.cert_data = Some(pki.client_cert_pem.clone().into_bytes());
    c.tls.key_data = Some(Pki::new().client_key_pem.into_bytes());
    assert!(
        matches!(
            RestClient::new(c).unwrap_err(),
            Error::Tls(TlsError::Invalid { .. })
        ),
        "a key that does not match the certificate"
    );
    let mut c = config("https://127.0.0.1:1");
    c.tls.ca_file = Some("/nonexistent/ca.crt".into());
    assert!(matches!(
        RestClient::new(c).unwrap_err(),
        Error::Tls(TlsError::ReadFile { .. })
    ));
}

/// The CA reloads a client counted (client-go's `TransportCAReloads`).
#[derive(Default)]
struct CaReloads(parking_lot::Mutex<Vec<(String, String)>>);

impl RequestMetrics for CaReloads {
    fn transport_ca_reload(&self, result: &str, reason: &str) {
        self.0.lock().push((result.into(), reason.into()));
    }
}

/// client-go's `transport/ca_rotation.go` (`ClientsAllowCARotation`, on by default since
/// 1.36; its tests in `ca_rotation_test.go`): a CA read from a file alone is read again by
/// a request at least `caRefreshDuration` (5 minutes) after the last look; changed, new
/// requests use connections that trust the new CAs while a watch already open goes on; an
/// empty file, a file that does not parse or one that cannot be read keeps the CAs in use;
/// each look is counted with client-go's result and reason.
#[tokio::test(start_paused = true)]
async fn a_rotated_ca_file_is_trusted_by_new_connections() {
    let pki = Pki::new();
    let (server, events) = watching_server(&pki, |_| json!({"major": "1"})).await;
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.crt");
    std::fs::write(&ca_file, &pki.ca_pem).unwrap();
    let reloads = Arc::new(CaReloads::default());
    let mut c = config(&server.url());
    c.tls.ca_file = Some(ca_file.clone());
    c.metrics = Some(reloads.clone());
    let client = RestClient::new(c).unwrap();
    let version = || async { client.get().abs_path("/version").send().await };
    version().await.unwrap();
    let mut watch = client.get().abs_path("/watch").stream().await.unwrap();

    // Another CA in the file: trusted only once the refresh period has passed.
    std::fs::write(&ca_file, Pki::other_ca_pem()).unwrap();
    version()
        .await
        .expect("within the refresh period, the CA read at first");
    assert!(reloads.0.lock().is_empty(), "no look yet");
    tokio::time::sleep(CA_REFRESH_DURATION).await;
    match version().await.unwrap_err() {
        Error::Tls(TlsError::Handshake { source, .. }) => {
            assert!(
                matches!(source, rustls::Error::InvalidCertificate(_)),
                "{source:?}"
            );
        }
        other => panic!("the new CA does not sign the server's certificate: {other:?}"),
    }
    assert_eq!(*reloads.0.lock(), [("success".into(), "updated".into())]);
    events.lock()[0].send("still open\n".into()).unwrap();
    let chunk = watch.next().await.unwrap().unwrap();
    assert_eq!(
        &chunk[..],
        b"still open\n",
        "the watch goes on on its connection"
    );

    // Empty, unparsable, unreadable: the CAs in use are kept (here, the other CA).
    for (contents, reason) in [
        (Some(""), "empty"),
        (Some("not a certificate"), "ca_parse_error"),
        (None, "read_error"),
    ] {
        match contents {
            Some(text) => std::fs::write(&ca_file, text).unwrap(),
            None => std::fs::remove_file(&ca_file).unwrap(),
        }
        tokio::time::sleep(CA_REFRESH_DURATION).await;
        assert!(version().await.is_err(), "{reason}: still the other CA");
        assert_eq!(
            reloads.0.lock().last().unwrap(),
            &("failure".to_owned(), reason.to_owned())
        );
    }

    // The right CA again, and then the same file once more.
    std::fs::write(&ca_file, &pki.ca_pem).unwrap();
    tokio::time::sleep(CA_REFRESH_DURATION).await;
    version().await.expect("the server's CA again");
    tokio::time::sleep(CA_REFRESH_DURATION).await;
    version().await.unwrap();
    let looks = reloads.0.lock().clone();
    assert_eq!(
        looks[looks.len() - 2..],
        [
            ("success".to_owned(), "updated".to_owned()),
            ("success".to_owned(), "unchanged".to_owned())
        ]
    );
}

/// CAs given inline (or inline and as a file) are never read again, as in client-go, which
/// reloads only a CA that comes from a file alone.
#[tokio::test(start_paused = true)]
async fn inline_ca_data_does_not_rotate() {
    let pki = Pki::new();
    let server = server(&pki).await;
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.crt");
    std::fs::write(&ca_file, Pki::other_ca_pem()).unwrap();
    let reloads = Arc::new(CaReloads::default());
    let mut c = config(&server.url());
    c.tls.ca_data = Some(pki.ca_pem.clone().into_bytes());
    c.tls.ca_file = Some(ca_file);
    c.metrics = Some(reloads.clone());
    let client = RestClient::new(c).unwrap();
    tokio::time::sleep(CA_REFRESH_DURATION * 2).await;
    client.get().abs_path("/version").send().await.unwrap();
    assert!(reloads.0.lock().is_empty());
}
