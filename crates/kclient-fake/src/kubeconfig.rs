//! The kubeconfig of a fake server: one cluster, one user, one context named
//! `kclient-fake`, readable by kubectl and by kclient-rest's loader.

use base64::Engine as _;
use serde_json::json;

/// How the kubeconfig's user authenticates.
#[derive(Debug, Clone, Default)]
pub enum Credentials {
    /// Nothing (plain HTTP, or a server without authentication).
    #[default]
    None,
    /// A bearer token.
    Token(String),
    /// A client certificate and key, PEM-encoded.
    ClientCertificate {
        /// The certificate.
        cert_pem: String,
        /// The key.
        key_pem: String,
    },
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
}

/// The kubeconfig YAML for `server_url`, trusting `ca_pem` when given.
pub fn render(
    server_url: &str,
    ca_pem: Option<&str>,
    credentials: &Credentials,
    namespace: &str,
) -> String {
    let mut cluster = json!({"server": server_url});
    if let Some(ca) = ca_pem {
        cluster["certificate-authority-data"] = json!(b64(ca));
    }
    let user = match credentials {
        Credentials::None => json!({}),
        Credentials::Token(t) => json!({"token": t}),
        Credentials::ClientCertificate { cert_pem, key_pem } => json!({
            "client-certificate-data": b64(cert_pem),
            "client-key-data": b64(key_pem),
        }),
    };
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kclient-fake", "cluster": cluster}],
        "users": [{"name": "kclient-fake", "user": user}],
        "contexts": [{"name": "kclient-fake", "context": {
            "cluster": "kclient-fake", "user": "kclient-fake", "namespace": namespace}}],
        "current-context": "kclient-fake",
        "preferences": {},
    });
    serde_yaml_ng::to_string(&config).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_kubeconfig() {
        let yaml = render(
            "https://127.0.0.1:1234",
            Some("PEM"),
            &Credentials::Token("t".into()),
            "default",
        );
        let v: serde_json::Value = serde_yaml_ng::from_str(&yaml).unwrap();
        assert_eq!(
            v["clusters"][0]["cluster"]["server"],
            "https://127.0.0.1:1234"
        );
        assert_eq!(
            v["clusters"][0]["cluster"]["certificate-authority-data"],
            b64("PEM")
        );
        assert_eq!(v["users"][0]["user"]["token"], "t");
        assert_eq!(v["current-context"], "kclient-fake");
    }
}
