//! [`BaseUrl`]: the server address of a [`Config`](crate::Config), the encoding of request paths and query
//! strings, and how a URL is shown ([`redacted_url`]: never with its password).

use std::borrow::Cow;
use std::fmt;

use http::uri::{Authority, Scheme};
use http::Uri;
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

use crate::config::{ConfigError, TlsConfig};
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

/// What the password of a URL is shown as (Go's `url.URL.Redacted`).
pub(crate) const REDACTED_PASSWORD: &str = "xxxxx";

/// `url` as Go's `url.URL.Redacted` shows it: the password of its user information
/// (`scheme://user:password@host/...`) replaced by [`REDACTED_PASSWORD`], the user kept; a
/// URL without a password unchanged. Every URL this crate shows (error messages, `Debug`
/// output, logs) goes through it.
///
/// It is meant for what is not a valid URL too, since that is what an error shows: a
/// `user:password@host:port` without a scheme, or a password with an unescaped `/`, `?`, `#`
/// or `@` in it. So the user information runs to the *last* `@` (Go ends the authority at
/// the first `/`, `?` or `#`, which would show the rest of such a password): a URL with an
/// `@` in its path or query is shown with everything from its first `:` to that `@` hidden.
/// A request URI is shown by [`redacted_uri`], which looks at its authority only.
pub(crate) fn redacted_url(url: &str) -> Cow<'_, str> {
    let start = url.find("://").map_or(0, |i| i + "://".len());
    let (scheme, rest) = url.split_at(start);
    let Some((userinfo, host_onwards)) = rest.rsplit_once('@') else {
        return Cow::Borrowed(url);
    };
    match userinfo.split_once(':') {
        Some((user, _password)) => {
            Cow::Owned(format!("{scheme}{user}:{REDACTED_PASSWORD}@{host_onwards}"))
        }
        None => Cow::Borrowed(url),
    }
}

/// A request URI as [`redacted_url`] shows it, judging its authority alone (an `@` in a
/// request's path is part of a name, never user information).
pub(crate) fn redacted_uri(uri: &Uri) -> String {
    let Some(authority) = uri.authority() else {
        return uri.to_string();
    };
    let scheme = uri.scheme_str().unwrap_or("http");
    let path_and_query = uri.path_and_query().map_or("", |p| p.as_str());
    format!(
        "{scheme}://{}{path_and_query}",
        redacted_url(authority.as_str())
    )
}

/// The server part of every request URL: scheme, `host:port` and an optional path prefix.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct BaseUrl {
    scheme: Scheme,
    authority: Authority,
    /// The path prefix without a trailing `/` (empty for none).
    prefix: String,
}

impl BaseUrl {
    /// client-go's `DefaultServerURL`: a bare `host[:port]` gets `https` when TLS is configured
    /// (a CA, a client certificate or `insecure`) and `http` otherwise. Query and fragment are
    /// dropped. `host` is a configuration's `host`, `tls` its TLS settings.
    pub(crate) fn parse(host: &str, tls: &TlsConfig) -> Result<Self, Error> {
        let given = host;
        let host = host.trim();
        let invalid = |reason: &str| -> Error {
            ConfigError::InvalidHost {
                host: redacted_url(given).into_owned(),
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
            let default_tls = tls.has_ca() || tls.has_cert() || tls.insecure;
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

    /// `host:port` as written in the configuration, without user information (Go's
    /// `url.URL.Host`, for metrics).
    pub(crate) fn host(&self) -> &str {
        let authority = self.authority.as_str();
        authority
            .rsplit_once('@')
            .map_or(authority, |(_userinfo, host)| host)
    }

    /// The URL with its prefix, as a string.
    pub(crate) fn to_url_string(&self) -> String {
        format!("{}://{}{}", self.scheme, self.authority, self.prefix)
    }

    /// The URL with its prefix, as messages show it: [`redacted_url`].
    pub(crate) fn to_redacted_string(&self) -> String {
        redacted_url(&self.to_url_string()).into_owned()
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

impl fmt::Debug for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("BaseUrl")
            .field(&self.to_redacted_string())
            .finish()
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
        BaseUrl::parse(host, &TlsConfig::default())
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
        let tls = TlsConfig {
            insecure: true,
            ..TlsConfig::default()
        };
        assert!(
            BaseUrl::parse("localhost:8443", &tls).unwrap().is_https(),
            "TLS configured: https"
        );
        let b = base("HTTPS://[::1]:6443").unwrap();
        assert!(b.is_https());
        assert_eq!(b.host(), "[::1]:6443");
        for bad in ["", "   ", "ftp://x", "https://", "http://exa mple"] {
            assert!(base(bad).is_err(), "{bad:?}");
        }
    }

    /// Issue 29, item 5: Go's `url.URL.Redacted` (the user kept, the password `xxxxx`), also
    /// for what is no valid URL, where Go's parse would show part of the password.
    #[test]
    fn redacted_urls_show_the_user_and_never_the_password() {
        let cases = [
            ("https://h:6443", "https://h:6443"),
            ("https://bob@h:6443/x", "https://bob@h:6443/x"),
            (
                "https://bob:SECRET@h:6443/x?y=1",
                "https://bob:xxxxx@h:6443/x?y=1",
            ),
            ("https://bob:@h", "https://bob:xxxxx@h"),
            ("http://bob:SE%40CRET@h", "http://bob:xxxxx@h"),
            ("bob:SECRET@h:6443", "bob:xxxxx@h:6443"),
            (
                "socks5://bob:SECRET@prox y:1080",
                "socks5://bob:xxxxx@prox y:1080",
            ),
            ("http://bob:SE/CRET@h:3128", "http://bob:xxxxx@h:3128"),
            ("http://bob:SE?CRET@h:3128", "http://bob:xxxxx@h:3128"),
            ("http://bob:S@E#C/R?E@T@h:3128", "http://bob:xxxxx@h:3128"),
        ];
        for (url, shown) in cases {
            assert_eq!(redacted_url(url), shown, "{url}");
        }
    }

    #[test]
    fn redacted_request_uris_look_at_the_authority_only() {
        let uri: Uri = "https://bob:SECRET@h:6443/apis/x/v1/roles/a@b?c=d"
            .parse()
            .unwrap();
        assert_eq!(
            redacted_uri(&uri),
            "https://bob:xxxxx@h:6443/apis/x/v1/roles/a@b?c=d"
        );
        let uri: Uri = "https://h:6443/apis/x/v1/roles/a:b@c".parse().unwrap();
        assert_eq!(redacted_uri(&uri), "https://h:6443/apis/x/v1/roles/a:b@c");
    }

    #[test]
    fn the_base_url_is_shown_without_its_password() {
        let b = base("https://bob:SECRET@h:6443/prefix").unwrap();
        assert_eq!(b.host(), "h:6443", "as Go's url.URL.Host, for metrics");
        assert_eq!(b.to_redacted_string(), "https://bob:xxxxx@h:6443/prefix");
        assert!(!format!("{b:?}").contains("SECRET"));
        let err = base("https://bob:SECRET@exa mple").unwrap_err().to_string();
        assert!(
            err.contains("bob:xxxxx@") && !err.contains("SECRET"),
            "{err}"
        );
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
