//! An environment's kubeconfig files, with the credentials embedded (`*-data` fields), so a
//! kubeconfig is usable on its own: the admin's (a context with the client certificate, the
//! current one, and one with a bearer token) and the controller-manager's.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use crate::pki::ClientIdentity;

/// The cluster (and current context) name in the admin kubeconfig.
pub const CLUSTER_NAME: &str = "envtest";
/// The admin kubeconfig's context with a bearer token instead of the client certificate.
pub const TOKEN_CONTEXT: &str = "envtest-token";

/// One user entry.
pub(crate) enum Credentials<'a> {
    ClientCert(&'a ClientIdentity),
    Token(&'a str),
}

/// Renders a kubeconfig for `server` with one context per user; the first is current.
/// `users` are `(context and user name, credentials)`.
pub(crate) fn render(server: &str, ca_pem: &str, users: &[(&str, Credentials<'_>)]) -> String {
    let current = users.first().map(|(name, _)| *name).unwrap_or(CLUSTER_NAME);
    let mut out = format!(
        "apiVersion: v1\nkind: Config\npreferences: {{}}\nclusters:\n\
         - name: {CLUSTER_NAME}\n  cluster:\n    server: {server}\n    \
         certificate-authority-data: {}\n",
        STANDARD.encode(ca_pem)
    );
    out.push_str("users:\n");
    for (name, credentials) in users {
        out.push_str(&format!("- name: {name}\n  user:\n"));
        match credentials {
            Credentials::ClientCert(identity) => out.push_str(&format!(
                "    client-certificate-data: {}\n    client-key-data: {}\n",
                STANDARD.encode(&identity.cert_pem),
                STANDARD.encode(&identity.key_pem)
            )),
            Credentials::Token(token) => out.push_str(&format!("    token: {token}\n")),
        }
    }
    out.push_str("contexts:\n");
    for (name, _) in users {
        out.push_str(&format!(
            "- name: {name}\n  context:\n    cluster: {CLUSTER_NAME}\n    user: {name}\n    \
             namespace: default\n"
        ));
    }
    out.push_str(&format!("current-context: {current}\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_contexts_for_each_user() {
        let identity = ClientIdentity {
            cert_pem: "CERT".into(),
            key_pem: "KEY".into(),
        };
        let text = render(
            "https://127.0.0.1:6443",
            "CA",
            &[
                (CLUSTER_NAME, Credentials::ClientCert(&identity)),
                (TOKEN_CONTEXT, Credentials::Token("t0k")),
            ],
        );
        assert!(text.contains("server: https://127.0.0.1:6443\n"));
        assert!(text.contains(&format!(
            "certificate-authority-data: {}\n",
            STANDARD.encode("CA")
        )));
        assert!(text.contains(&format!("client-key-data: {}\n", STANDARD.encode("KEY"))));
        assert!(text.contains("    token: t0k\n"));
        assert!(text.contains("current-context: envtest\n"));
        assert_eq!(text.matches("  context:\n").count(), 2);
    }
}
