//! The [`Manager`](crate::Manager)'s health and readiness checks (controller-runtime's
//! `healthz` package): named checks served together at `/healthz` and `/readyz`, and each
//! at `/healthz/<name>` and `/readyz/<name>`, in Kubernetes' text format.
//!
//! The aggregate answers `200 ok` when every check passes; otherwise `500`, one line per
//! check (`[+]name ok`, `[-]name failed: reason withheld` — the endpoint is public, the
//! reasons are not) and `healthz check failed`. `?verbose` lists the checks on success too;
//! `?exclude=name` (repeatable) skips a check. A single check's path answers `ok`, or `500`
//! with `internal server error: <reason>`.

use std::fmt;
use std::sync::Arc;

use http::StatusCode;
use kclient_core::BoxError;

use crate::http::Reply;

/// A health or readiness check (controller-runtime's `healthz.Checker`): `Err` says why it
/// fails. Called on each probe, on the probe server's task: keep it quick.
pub type Checker = Arc<dyn Fn() -> Result<(), BoxError> + Send + Sync>;

/// Why a check could not be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// A check of that name is already there (the built-in ones included).
    #[error("a {endpoint} check named {name:?} already exists")]
    Duplicate {
        /// `healthz` or `readyz`.
        endpoint: &'static str,
        /// The name.
        name: String,
    },
    /// The name is empty or contains `/` (it is a path segment).
    #[error("{name:?} cannot name a {endpoint} check: it must be a non-empty path segment")]
    InvalidName {
        /// `healthz` or `readyz`.
        endpoint: &'static str,
        /// The name.
        name: String,
    },
}

/// The named checks of one endpoint.
#[derive(Clone, Default)]
pub(crate) struct Checks {
    checks: Vec<(String, Checker)>,
}

impl fmt::Debug for Checks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.checks.iter().map(|(name, _)| name))
            .finish()
    }
}

impl Checks {
    /// Adds `check` as `name` to the checks of `endpoint`.
    pub(crate) fn add(
        &mut self,
        endpoint: &'static str,
        name: impl Into<String>,
        check: Checker,
    ) -> Result<(), CheckError> {
        let name = name.into();
        if name.is_empty() || name.contains('/') {
            return Err(CheckError::InvalidName { endpoint, name });
        }
        if self.checks.iter().any(|(n, _)| *n == name) {
            return Err(CheckError::Duplicate { endpoint, name });
        }
        self.checks.push((name, check));
        self.checks.sort_by(|(a, _), (b, _)| a.cmp(b));
        Ok(())
    }

    /// The answer to `rest` (the path after the endpoint's, `""` or `/<name>`) with
    /// `query`; `None` for a check that does not exist.
    pub(crate) fn serve(&self, rest: &str, query: Option<&str>) -> Option<Reply> {
        match rest.trim_end_matches('/') {
            "" => Some(self.aggregate(&Query::parse(query))),
            name => self.single(&name[1..]),
        }
    }

    /// Every check, as controller-runtime's `serveAggregated` writes them.
    fn aggregate(&self, query: &Query) -> Reply {
        let mut lines = Vec::new();
        let mut failed = false;
        for (name, check) in &self.checks {
            if query.exclude.iter().any(|e| e == name) {
                lines.push(format!("[+]{name} excluded: ok"));
            } else if let Err(error) = check() {
                tracing::debug!(check = %name, %error, "a health check failed");
                failed = true;
                lines.push(format!("[-]{name} failed: reason withheld"));
            } else {
                lines.push(format!("[+]{name} ok"));
            }
        }
        if self.checks.is_empty() {
            lines.push("[+]ping ok".to_owned());
        }
        let status = if failed {
            StatusCode::INTERNAL_SERVER_ERROR
        } else {
            StatusCode::OK
        };
        if !failed && !query.verbose {
            return Reply::text(status, "ok");
        }
        let unknown: Vec<String> = (query.exclude.iter())
            .filter(|e| !self.checks.iter().any(|(n, _)| n == *e))
            .map(|e| format!("{e:?}"))
            .collect();
        if !unknown.is_empty() {
            lines.push(format!(
                "warn: some health checks cannot be excluded: no matches for {}",
                unknown.join(", ")
            ));
        }
        lines.push(
            if failed {
                "healthz check failed"
            } else {
                "healthz check passed"
            }
            .to_owned(),
        );
        Reply::text(status, lines.join("\n") + "\n")
    }

    /// One check by name, as controller-runtime's `CheckHandler` answers.
    fn single(&self, name: &str) -> Option<Reply> {
        let check = match self.checks.iter().find(|(n, _)| n == name) {
            Some((_, check)) => Arc::clone(check),
            None if self.checks.is_empty() && name == "ping" => Arc::new(|| Ok(())),
            None => return None,
        };
        Some(match check() {
            Ok(()) => Reply::text(StatusCode::OK, "ok"),
            Err(error) => Reply::text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("internal server error: {error}\n"),
            ),
        })
    }
}

/// The query parameters the aggregate reads.
#[derive(Debug, Default)]
struct Query {
    verbose: bool,
    exclude: Vec<String>,
}

impl Query {
    fn parse(query: Option<&str>) -> Self {
        let mut parsed = Self::default();
        for pair in query.unwrap_or_default().split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "verbose" => parsed.verbose = true,
                "exclude" if !value.is_empty() => parsed.exclude.push(value.to_owned()),
                _ => {}
            }
        }
        parsed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks(entries: &[(&str, Result<(), &'static str>)]) -> Checks {
        let mut checks = Checks::default();
        for (name, outcome) in entries {
            let outcome = *outcome;
            let check: Checker = Arc::new(move || outcome.map_err(Into::into));
            checks.add("healthz", *name, check).unwrap();
        }
        checks
    }

    fn body(reply: Option<Reply>) -> (u16, String) {
        let reply = reply.expect("served");
        (reply.status.as_u16(), reply.body)
    }

    /// controller-runtime's healthz tests: the aggregate, verbose, excludes, sub-paths,
    /// the default ping.
    #[test]
    fn the_aggregate_and_single_checks_as_controller_runtime_writes_them() {
        let all_ok = checks(&[("b", Ok(())), ("a", Ok(()))]);
        assert_eq!(body(all_ok.serve("", None)), (200, "ok".into()));
        assert_eq!(
            body(all_ok.serve("/", Some("verbose"))),
            (200, "[+]a ok\n[+]b ok\nhealthz check passed\n".into())
        );
        let one_fails = checks(&[("good", Ok(())), ("bad", Err("broken"))]);
        assert_eq!(
            body(one_fails.serve("", None)),
            (
                500,
                "[-]bad failed: reason withheld\n[+]good ok\nhealthz check failed\n".into()
            )
        );
        assert_eq!(
            body(one_fails.serve("", Some("exclude=bad&exclude=nope"))),
            (200, "ok".into())
        );
        assert_eq!(
            body(one_fails.serve("", Some("verbose=1&exclude=bad&exclude=nope"))),
            (
                200,
                "[+]bad excluded: ok\n[+]good ok\nwarn: some health checks cannot be excluded: \
                 no matches for \"nope\"\nhealthz check passed\n"
                    .into()
            )
        );
        assert_eq!(
            body(one_fails.serve("/bad", None)),
            (500, "internal server error: broken\n".into())
        );
        assert_eq!(body(one_fails.serve("/good", None)), (200, "ok".into()));
        assert!(one_fails.serve("/other", None).is_none());
        assert!(one_fails.serve("/ping", None).is_none());

        let none = Checks::default();
        assert_eq!(
            body(none.serve("", Some("verbose"))).1,
            "[+]ping ok\nhealthz check passed\n"
        );
        assert_eq!(body(none.serve("/ping", None)), (200, "ok".into()));
    }

    #[test]
    fn names_are_path_segments_and_unique() {
        let mut checks = checks(&[("a", Ok(()))]);
        let ok: Checker = Arc::new(|| Ok(()));
        assert_eq!(
            checks.add("readyz", "a", Arc::clone(&ok)),
            Err(CheckError::Duplicate {
                endpoint: "readyz",
                name: "a".into()
            })
        );
        for bad in ["", "a/b"] {
            assert!(matches!(
                checks.add("readyz", bad, Arc::clone(&ok)),
                Err(CheckError::InvalidName { .. })
            ));
        }
    }
}
