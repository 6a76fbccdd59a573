//! `Warning` response headers (RFC 7234): the API server's deprecation notices and admission
//! warnings, and the [`WarningHandler`] that receives them (client-go's `rest.WarningHandler`).

use std::collections::HashSet;
use std::fmt;

use http::HeaderMap;
use parking_lot::Mutex;

/// One parsed `Warning` header value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The warn-code; the API server uses 299 ("miscellaneous persistent warning").
    pub code: u16,
    /// The warn-agent (`-` when the server does not name itself).
    pub agent: String,
    /// The warning text.
    pub text: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Receives the warnings of every response.
///
/// Set one on [`Config::warning_handler`](crate::Config::warning_handler). Handlers are called
/// on the task that made the request, so they should be quick.
pub trait WarningHandler: Send + Sync {
    /// Handles one warning. The API server's warnings have code 299; client-go's handlers ignore
    /// other codes, and so do the ones here.
    fn handle_warning(&self, warning: &Warning);
}

/// The default handler: logs each distinct warning text once per handler, at `warn` level
/// (client-go's `WarningWriter` with deduplication, writing to the log).
#[derive(Debug, Default)]
pub struct DedupWarningLogger {
    seen: Mutex<HashSet<String>>,
}

impl DedupWarningLogger {
    /// A logger that has seen nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the text and says whether it is new.
    fn first_time(&self, text: &str) -> bool {
        let mut seen = self.seen.lock();
        if seen.contains(text) {
            false
        } else {
            seen.insert(text.to_owned());
            true
        }
    }
}

impl WarningHandler for DedupWarningLogger {
    fn handle_warning(&self, warning: &Warning) {
        if warning.code == 299 && !warning.text.is_empty() && self.first_time(&warning.text) {
            tracing::warn!(target: "kclient::warnings", "{}", warning.text);
        }
    }
}

/// A handler that drops every warning (client-go's `NoWarnings`).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoWarnings;

impl WarningHandler for NoWarnings {
    fn handle_warning(&self, _warning: &Warning) {}
}

/// Parses every `Warning` header of a response. Malformed values are skipped (as client-go
/// does, after logging them).
pub fn parse_warning_headers(headers: &HeaderMap) -> Vec<Warning> {
    let mut out = Vec::new();
    for value in headers.get_all(http::header::WARNING) {
        let Ok(text) = std::str::from_utf8(value.as_bytes()) else {
            continue;
        };
        match parse_warning_header(text) {
            Ok(mut warnings) => out.append(&mut warnings),
            Err(reason) => {
                tracing::debug!(header = text, reason, "ignoring a malformed Warning header");
            }
        }
    }
    out
}

/// Parses one header value: `code SP agent SP "text" [SP "date"]`, comma-separated.
pub fn parse_warning_header(header: &str) -> Result<Vec<Warning>, &'static str> {
    let mut warnings = Vec::new();
    let mut rest = header.trim_start();
    while !rest.is_empty() {
        let (code, after) = rest.split_once(' ').ok_or("missing warn-agent")?;
        if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
            return Err("invalid warn-code");
        }
        let code: u16 = code.parse().map_err(|_| "invalid warn-code")?;
        let (agent, after) = after.split_once(' ').ok_or("missing warn-text")?;
        if agent.is_empty() {
            return Err("empty warn-agent");
        }
        let (text, after) = quoted_string(after)?;
        let mut after = after.trim_start();
        if after.starts_with('"') {
            // The optional warn-date.
            after = quoted_string(after)?.1.trim_start();
        }
        warnings.push(Warning {
            code,
            agent: agent.to_owned(),
            text,
        });
        rest = match after.strip_prefix(',') {
            Some(next) => next.trim_start(),
            None if after.is_empty() => "",
            None => return Err("unexpected text after a warning"),
        };
    }
    Ok(warnings)
}

/// Reads a quoted-string at the start of `s`; returns its content and the rest.
fn quoted_string(s: &str) -> Result<(String, &str), &'static str> {
    let body = s.strip_prefix('"').ok_or("warn-text must be quoted")?;
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, &body[i + 1..])),
            '\\' => match chars.next() {
                Some((_, escaped)) => out.push(escaped),
                None => return Err("unterminated escape"),
            },
            c => out.push(c),
        }
    }
    Err("unterminated quoted-string")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn parses_api_server_warnings() {
        let w = parse_warning_header(
            r#"299 - "policy/v1beta1 PodSecurityPolicy is deprecated", 299 kube-apiserver "a \"quoted\" word" "Mon, 01 Jan 2024 00:00:00 GMT""#,
        )
        .unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].code, 299);
        assert_eq!(w[0].agent, "-");
        assert_eq!(w[0].text, "policy/v1beta1 PodSecurityPolicy is deprecated");
        assert_eq!(w[1].agent, "kube-apiserver");
        assert_eq!(w[1].text, r#"a "quoted" word"#);
    }

    #[test]
    fn rejects_malformed_values() {
        for bad in [
            "299",
            "29 - \"x\"",
            "299 - x",
            "299 - \"open",
            "299 - \"x\" junk",
            "abc - \"x\"",
        ] {
            assert!(parse_warning_header(bad).is_err(), "{bad}");
        }
        let mut headers = HeaderMap::new();
        headers.append(http::header::WARNING, "garbage".parse().unwrap());
        headers.append(http::header::WARNING, "299 - \"ok\"".parse().unwrap());
        let parsed = parse_warning_headers(&headers);
        assert_eq!(parsed.len(), 1, "malformed values are skipped, others kept");
        assert_eq!(parsed[0].to_string(), "ok");
    }

    #[test]
    fn the_default_logger_dedupes() {
        let logger = Arc::new(DedupWarningLogger::new());
        assert!(logger.first_time("a"));
        assert!(!logger.first_time("a"));
        assert!(logger.first_time("b"));
        NoWarnings.handle_warning(&Warning {
            code: 299,
            agent: "-".into(),
            text: "x".into(),
        });
    }
}
