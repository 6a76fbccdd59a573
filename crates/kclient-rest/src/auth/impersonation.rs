//! Impersonation headers (client-go's `impersonatingRoundTripper`): `Impersonate-User`,
//! `Impersonate-Uid`, one `Impersonate-Group` per group and `Impersonate-Extra-<key>` per extra
//! value.

use http::{HeaderName, HeaderValue};

use crate::config::{ConfigError, ImpersonationConfig};

/// The `Impersonate-User` header.
pub const IMPERSONATE_USER: &str = "impersonate-user";
/// The `Impersonate-Uid` header.
pub const IMPERSONATE_UID: &str = "impersonate-uid";
/// The `Impersonate-Group` header.
pub const IMPERSONATE_GROUP: &str = "impersonate-group";
/// The prefix of `Impersonate-Extra-<key>` headers.
pub const IMPERSONATE_EXTRA_PREFIX: &str = "impersonate-extra-";

/// The headers to add, in order (a header name may repeat).
pub(crate) fn headers(
    config: &ImpersonationConfig,
) -> Result<Vec<(HeaderName, HeaderValue)>, ConfigError> {
    let mut out = Vec::new();
    if config.is_empty() {
        return Ok(out);
    }
    let value = |v: &str| {
        HeaderValue::from_str(v).map_err(|_| {
            ConfigError::Invalid(format!(
                "impersonation value {v:?} is not a valid header value"
            ))
        })
    };
    if let Some(user) = &config.user {
        out.push((HeaderName::from_static(IMPERSONATE_USER), value(user)?));
    }
    if let Some(uid) = &config.uid {
        out.push((HeaderName::from_static(IMPERSONATE_UID), value(uid)?));
    }
    for group in &config.groups {
        out.push((HeaderName::from_static(IMPERSONATE_GROUP), value(group)?));
    }
    for (key, values) in &config.extra {
        let name = HeaderName::from_bytes(
            format!("{IMPERSONATE_EXTRA_PREFIX}{}", escape_extra_key(key)).as_bytes(),
        )
        .map_err(|_| ConfigError::Invalid(format!("invalid impersonation extra key {key:?}")))?;
        for v in values {
            out.push((name.clone(), value(v)?));
        }
    }
    Ok(out)
}

/// Percent-encodes the characters an HTTP header name cannot hold (the API server decodes
/// them), as client-go does for extra keys such as `example.com/scopes`. Lower-case hex digits,
/// since header names are lower-case on the wire here.
fn escape_extra_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        let legal = b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b);
        if legal {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_every_header() {
        let config = ImpersonationConfig {
            user: Some("jane".into()),
            uid: Some("42".into()),
            groups: vec!["devs".into(), "ops".into()],
            extra: [(
                "example.com/scopes".to_owned(),
                vec!["a".to_owned(), "b".to_owned()],
            )]
            .into(),
        };
        let h = headers(&config).unwrap();
        let names: Vec<_> = h
            .iter()
            .map(|(n, v)| format!("{n}={}", v.to_str().unwrap()))
            .collect();
        assert_eq!(
            names,
            [
                "impersonate-user=jane",
                "impersonate-uid=42",
                "impersonate-group=devs",
                "impersonate-group=ops",
                "impersonate-extra-example.com%2fscopes=a",
                "impersonate-extra-example.com%2fscopes=b",
            ]
        );
        assert!(headers(&ImpersonationConfig::default()).unwrap().is_empty());
    }
}
