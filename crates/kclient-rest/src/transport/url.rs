//! [`BaseUrl`]: the server address of a [`Config`], and the encoding of request paths and query
//! strings.

use http::uri::{Authority, Scheme};
use http::Uri;
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

use crate::config::{Config, ConfigError};
use crate::error::Error;

/// Characters escaped in a path: everything but RFC 3986 `pchar` and `/`, so names such as
/// `system:node:n1` stay readable, as Go's `url.URL.EscapedPath` keeps them.
const PATH: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// The server part of every request URL: scheme, `host:port` and an optional path prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BaseUrl {
    scheme: Scheme,
    authority: Authority,
    /// The path prefix without a trailing `/` (empty for none).
    prefix: String,
}

impl BaseUrl {
    /// client-go's `DefaultServerURL`: a bare `host[:port]` gets `https` when TLS is configured
    /// (a CA, a client certificate or `insecure`) and `http` otherwise. Query and fragment are
    /// dropped.
    pub(crate) fn parse(config: &Config) -> Result<Self, Error> {
        let host = config.host.trim();
        let invalid = |reason: &str| -> Error {
            ConfigError::InvalidHost {
                host: config.host.clone(),
                reason: reason.to_owned(),
            }
            .into()
        };
        if host.is_empty() {
            return Err(invalid("host must be a URL or a host:port pair"));
        }
        let with_scheme = if host.contains("://") {
            host.to_owned()
        } else {
            let default_tls = config.tls.has_ca() || config.tls.has_cert() || config.tls.insecure;
            format!("{}://{host}", if default_tls { "https" } else { "http" })
        };
        let uri: Uri = with_scheme
            .parse()
            .map_err(|e: http::uri::InvalidUri| invalid(&e.to_string()))?;
        let scheme = match uri.scheme_str().map(str::to_ascii_lowercase).as_deref() {
            Some("https") => Scheme::HTTPS,
            Some("http") => Scheme::HTTP,
            _ => return Err(invalid("the scheme must be http or https")),
        };
        let authority = uri.authority().cloned().ok_or_else(|| invalid("no host"))?;
        if authority.host().is_empty() {
            return Err(invalid("no host"));
        }
        let prefix = uri.path().trim_end_matches('/').to_owned();
        Ok(Self {
            scheme,
            authority,
            prefix,
        })
    }

    /// Whether requests use TLS.
    #[cfg(test)]
    pub(crate) fn is_https(&self) -> bool {
        self.scheme == Scheme::HTTPS
    }

    /// `host:port` as written in the configuration (for metrics and exec cluster info).
    pub(crate) fn host(&self) -> &str {
        self.authority.as_str()
    }

    /// The URL with its prefix, as a string.
    pub(crate) fn to_url_string(&self) -> String {
        format!("{}://{}{}", self.scheme, self.authority, self.prefix)
    }

    /// The path prefix (no trailing `/`).
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// A request URI: `path` (already encoded) under the prefix, with `query` (encoded, may be
    /// empty).
    pub(crate) fn uri(&self, encoded_path: &str, encoded_query: &str) -> Result<Uri, Error> {
        let mut path_and_query =
            String::with_capacity(encoded_path.len() + encoded_query.len() + 1);
        path_and_query.push_str(encoded_path);
        if path_and_query.is_empty() {
            path_and_query.push('/');
        }
        if !encoded_query.is_empty() {
            path_and_query.push('?');
            path_and_query.push_str(encoded_query);
        }
        Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query(path_and_query)
            .build()
            .map_err(|e| Error::InvalidRequest(format!("cannot build the request URL: {e}")))
    }
}

/// Percent-encodes a path (keeping `/`).
pub(crate) fn encode_path(path: &str) -> String {
    utf8_percent_encode(path, PATH).to_string()
}

/// Encodes query pairs as Go's `url.Values.Encode` does: sorted by key (values of one key keep
/// their order), form-encoded (`+` for spaces).
pub(crate) fn encode_query(pairs: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = pairs.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut ser = form_urlencoded::Serializer::new(String::new());
    for (k, v) in sorted {
        ser.append_pair(k, v);
    }
    ser.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(host: &str) -> Result<BaseUrl, Error> {
        BaseUrl::parse(&Config::new(host))
    }

    #[test]
    fn hosts_parse_like_client_go() {
        let b = base("https://10.0.0.1:6443").unwrap();
        assert!(b.is_https());
        assert_eq!(b.host(), "10.0.0.1:6443");
        assert_eq!(b.prefix(), "");
        let b = base("https://example.com/k8s/clusters/c-1/").unwrap();
        assert_eq!(b.prefix(), "/k8s/clusters/c-1");
        assert_eq!(b.to_url_string(), "https://example.com/k8s/clusters/c-1");
        let b = base("localhost:8080").unwrap();
        assert!(!b.is_https(), "no TLS configured: http");
        let mut c = Config::new("localhost:8443");
        c.tls.insecure = true;
        assert!(
            BaseUrl::parse(&c).unwrap().is_https(),
            "TLS configured: https"
        );
        let b = base("HTTPS://[::1]:6443").unwrap();
        assert!(b.is_https());
        assert_eq!(b.host(), "[::1]:6443");
        for bad in ["", "   ", "ftp://x", "https://", "http://exa mple"] {
            assert!(base(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn uris_join_prefix_path_and_query() {
        let b = base("https://h/prefix").unwrap();
        let uri = b.uri("/prefix/api/v1/pods", "a=1").unwrap();
        assert_eq!(uri.to_string(), "https://h/prefix/api/v1/pods?a=1");
        assert_eq!(b.uri("", "").unwrap().to_string(), "https://h/");
    }

    #[test]
    fn paths_and_queries_are_encoded() {
        assert_eq!(
            encode_path("/api/v1/namespaces/a b/x"),
            "/api/v1/namespaces/a%20b/x"
        );
        assert_eq!(
            encode_path("/apis/rbac/system:node:n1"),
            "/apis/rbac/system:node:n1"
        );
        assert_eq!(encode_path("/x/%/?#"), "/x/%25/%3F%23");
        let q = encode_query(&[
            ("labelSelector".into(), "app in (a,b),tier!=x".into()),
            ("fieldSelector".into(), "metadata.name=a&b".into()),
            ("fieldSelector".into(), "second".into()),
        ]);
        assert_eq!(
            q,
            "fieldSelector=metadata.name%3Da%26b&fieldSelector=second&labelSelector=app+in+%28a%2Cb%29%2Ctier%21%3Dx"
        );
    }
}
