//! [`TokenFile`]: a bearer token read from a file and re-read every minute (client-go's
//! `NewCachedFileTokenSource`), so rotated service-account tokens are picked up.

use std::path::{Path, PathBuf};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::error::Error;

/// How long a token read from a file is used before the file is read again
/// (client-go: `period: time.Minute`).
pub const TOKEN_FILE_REFRESH: Duration = Duration::from_secs(60);
/// How much earlier than [`TOKEN_FILE_REFRESH`] the file is re-read (client-go:
/// `leeway: 10 * time.Second`).
pub const TOKEN_FILE_LEEWAY: Duration = Duration::from_secs(10);

#[derive(Debug)]
struct Cached {
    token: String,
    /// When the token stops being fresh.
    expires: Instant,
}

/// A token file with its cached content.
#[derive(Debug)]
pub(crate) struct TokenFile {
    path: PathBuf,
    cached: Mutex<Option<Cached>>,
}

impl TokenFile {
    /// A source for `path`, optionally starting with a token already read from it.
    pub(crate) fn new(path: PathBuf, initial: Option<String>) -> Self {
        let cached = initial
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .map(|token| Cached {
                token,
                expires: Instant::now() + TOKEN_FILE_REFRESH,
            });
        Self {
            path,
            cached: Mutex::new(cached),
        }
    }

    /// The file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The current token: the cached one while fresh, else the file's. When the file cannot be
    /// read, the last token read is kept (and the failure logged), as client-go does; with no
    /// token at all it is an error.
    pub(crate) fn token(&self) -> Result<String, Error> {
        let now = Instant::now();
        let mut cached = self.cached.lock();
        if let Some(c) = cached.as_ref() {
            if c.expires > now + TOKEN_FILE_LEEWAY {
                return Ok(c.token.clone());
            }
        }
        match read_token(&self.path) {
            Ok(token) => {
                *cached = Some(Cached {
                    token: token.clone(),
                    expires: now + TOKEN_FILE_REFRESH,
                });
                Ok(token)
            }
            Err(e) => match cached.as_ref() {
                Some(c) => {
                    tracing::error!(path = %self.path.display(), error = %e, "unable to rotate token; using the previous one");
                    Ok(c.token.clone())
                }
                None => Err(e),
            },
        }
    }

    /// Forgets the cached token if it is `stale`, so the next request reads the file (after a
    /// 401). Returns whether the file now holds a different token.
    pub(crate) fn reset_if(&self, stale: &str) -> bool {
        {
            let mut cached = self.cached.lock();
            match cached.as_mut() {
                Some(c) if c.token == stale => c.expires = Instant::now(),
                _ => return true,
            }
        }
        self.token().is_ok_and(|t| t != stale)
    }
}

fn read_token(path: &Path) -> Result<String, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Auth(format!("cannot read token file {}: {e}", path.display())))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(Error::Auth(format!(
            "token file {} is empty",
            path.display()
        )));
    }
    Ok(token.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_runtime::paused;

    #[test]
    fn defaults_match_client_go() {
        assert_eq!(TOKEN_FILE_REFRESH, Duration::from_secs(60));
        assert_eq!(TOKEN_FILE_LEEWAY, Duration::from_secs(10));
    }

    #[test]
    fn rereads_after_the_refresh_period() {
        paused().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("token");
            std::fs::write(&path, "one\n").unwrap();
            let source = TokenFile::new(path.clone(), None);
            assert_eq!(source.token().unwrap(), "one", "trailing newline trimmed");
            std::fs::write(&path, "two").unwrap();
            tokio::time::advance(Duration::from_secs(49)).await;
            assert_eq!(source.token().unwrap(), "one", "still fresh");
            tokio::time::advance(Duration::from_secs(2)).await;
            assert_eq!(source.token().unwrap(), "two", "re-read within the leeway");
        });
    }

    #[test]
    fn keeps_the_last_token_when_the_file_vanishes() {
        paused().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("token");
            std::fs::write(&path, "one").unwrap();
            let source = TokenFile::new(path.clone(), None);
            assert_eq!(source.token().unwrap(), "one");
            std::fs::remove_file(&path).unwrap();
            tokio::time::advance(Duration::from_secs(120)).await;
            assert_eq!(source.token().unwrap(), "one");
            let fresh = TokenFile::new(path, None);
            assert!(matches!(fresh.token(), Err(Error::Auth(_))));
        });
    }

    #[test]
    fn reset_after_unauthorized_rereads_at_once() {
        paused().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("token");
            std::fs::write(&path, "new").unwrap();
            let source = TokenFile::new(path.clone(), Some("old".into()));
            assert_eq!(
                source.token().unwrap(),
                "old",
                "the initial token is used first"
            );
            assert!(source.reset_if("old"), "the file has a different token");
            assert_eq!(source.token().unwrap(), "new");
            assert!(
                !source.reset_if("new"),
                "same token: retrying would not help"
            );
        });
    }
}
