//! Authentication: what goes into the `Authorization` header (a bearer token, possibly from a
//! file; basic auth; an exec plugin's token) and the impersonation headers, applied in
//! client-go's order, each skipped when the request already carries its header.

pub(crate) mod exec;
pub(crate) mod exec_error;
pub(crate) mod impersonation;
pub(crate) mod token_file;

use std::sync::Arc;

use base64::Engine as _;
use http::HeaderValue;

use crate::config::Config;
use crate::error::Error;
use exec::{ExecAuthenticator, ExecClusterInfo, ExecCredentials};
use token_file::TokenFile;

/// Where the `Authorization` header comes from.
pub(crate) enum Authenticator {
    /// No credentials in headers (none, or a client certificate only).
    None,
    /// A fixed value: a bearer token or basic auth.
    Static(HeaderValue),
    /// A bearer token re-read from a file.
    TokenFile(TokenFile),
    /// An exec plugin's token and/or client certificate.
    Exec(Box<ExecAuthenticator>),
}

/// The credentials one request was sent with.
pub(crate) struct Credentials {
    pub(crate) authorization: Option<HeaderValue>,
    /// A client certificate and key (PEM) from an exec plugin.
    pub(crate) client_cert: Option<(Vec<u8>, Vec<u8>)>,
    used: Used,
}

enum Used {
    Nothing,
    FileToken(String),
    Exec(Arc<ExecCredentials>),
}

fn bearer(token: &str) -> Result<HeaderValue, Error> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
        .map_err(|_| Error::Auth("the bearer token is not a valid header value".into()))?;
    value.set_sensitive(true);
    Ok(value)
}

impl Authenticator {
    /// client-go's choice: a token (file first) or basic auth; else an exec plugin, unless a
    /// client certificate is configured.
    pub(crate) fn from_config(
        config: &Config,
        cluster: Option<ExecClusterInfo>,
    ) -> Result<Self, Error> {
        if let Some(path) = &config.bearer_token_file {
            return Ok(Self::TokenFile(TokenFile::new(
                path.clone(),
                config.bearer_token.clone(),
            )));
        }
        if let Some(token) = config
            .bearer_token
            .as_deref()
            .filter(|t| !t.trim().is_empty())
        {
            return Ok(Self::Static(bearer(token)?));
        }
        if let Some(basic) = &config.basic_auth {
            let encoded = base64::engine::general_purpose::STANDARD
                .encode(format!("{}:{}", basic.username, basic.password));
            let mut value = HeaderValue::from_str(&format!("Basic {encoded}"))
                .map_err(|_| Error::Auth("basic auth is not a valid header value".into()))?;
            value.set_sensitive(true);
            return Ok(Self::Static(value));
        }
        if let Some(exec) = &config.exec {
            if !config.tls.has_cert() {
                return Ok(Self::Exec(Box::new(ExecAuthenticator::new(
                    exec.clone(),
                    cluster,
                    config.exec_timeout,
                    config.metrics.clone(),
                )?)));
            }
        }
        if let Some(provider) = &config.auth_provider {
            tracing::warn!(
                provider = %provider.name,
                "auth-provider plugins are not supported; use an exec credential plugin"
            );
        }
        Ok(Self::None)
    }

    /// The credentials for the next request.
    pub(crate) async fn credentials(&self) -> Result<Credentials, Error> {
        Ok(match self {
            Self::None => Credentials {
                authorization: None,
                client_cert: None,
                used: Used::Nothing,
            },
            Self::Static(value) => Credentials {
                authorization: Some(value.clone()),
                client_cert: None,
                used: Used::Nothing,
            },
            Self::TokenFile(file) => {
                let token = file.token()?;
                Credentials {
                    authorization: Some(bearer(&token)?),
                    client_cert: None,
                    used: Used::FileToken(token),
                }
            }
            Self::Exec(exec) => {
                let creds = exec.credentials().await?;
                Credentials {
                    authorization: creds.token.as_deref().map(bearer).transpose()?,
                    client_cert: creds.client_cert.clone(),
                    used: Used::Exec(creds),
                }
            }
        })
    }

    /// After a 401: refreshes what can be refreshed. Returns whether retrying with fresh
    /// credentials can help.
    pub(crate) async fn refresh_after_unauthorized(&self, used: &Credentials) -> bool {
        match (self, &used.used) {
            (Self::TokenFile(file), Used::FileToken(token)) => {
                let changed = file.reset_if(token);
                if !changed {
                    tracing::debug!(path = %file.path().display(), "401 with the token file's current token");
                }
                changed
            }
            (Self::Exec(exec), Used::Exec(creds)) => exec.refresh_after_unauthorized(creds).await,
            _ => false,
        }
    }

    /// Whether credentials may bring their own client certificate.
    pub(crate) fn may_provide_client_cert(&self) -> bool {
        matches!(self, Self::Exec(_))
    }
}
