//! String formats (`format: uuid`, `date-time`, ...): which ones a CRD may use and how a
//! string is checked against one, as kube-openapi's `strfmt.Default` registry checks it.
//!
//! Checked here: `uuid`, `uuid3`, `uuid4`, `uuid5`, `date`, `date-time`, `ipv4`, `ipv6`,
//! `cidr`, `mac`, `hostname`, `byte`, `hexcolor`, `rgbcolor`, `bsonobjectid`, `ssn`,
//! `k8s-short-name`, `k8s-long-name` and `password` (anything). Accepted without a check:
//! `uri`, `email`, `isbn`, `isbn10`, `isbn13`, `creditcard` and `duration`.

use std::net::IpAddr;

/// The string formats apiextensions-apiserver supports (dashes are insignificant, as in
/// go-openapi's name normalisation).
const SUPPORTED: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
];

fn normalize(format: &str) -> String {
    format.replace('-', "")
}

/// Whether a string schema keeps `format` (others are dropped and check nothing).
pub fn is_supported_string_format(format: &str) -> bool {
    SUPPORTED.contains(&normalize(format).as_str())
}

/// Whether `s` is valid for the (supported) string `format`.
pub fn is_valid(format: &str, s: &str) -> bool {
    match normalize(format).as_str() {
        "uuid" => uuid(s, None),
        "uuid3" => uuid(s, Some('3')),
        "uuid4" => uuid(s, Some('4')),
        "uuid5" => uuid(s, Some('5')),
        "date" => date(s),
        "datetime" => date_time(s),
        "ipv4" => s.contains('.') && s.parse::<IpAddr>().is_ok(),
        "ipv6" => s.contains(':') && s.parse::<IpAddr>().is_ok(),
        "cidr" => cidr(s),
        "mac" => mac(s),
        "hostname" => hostname(s),
        "byte" => base64(s),
        "hexcolor" => hex_color(s),
        "rgbcolor" => rgb_color(s),
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "ssn" => ssn(s),
        "k8sshortname" => s.len() <= 63 && dns_label(s),
        "k8slongname" => s.len() <= 253 && !s.is_empty() && s.split('.').all(dns_label),
        _ => true,
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?V[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$` (the
/// version and variant only for uuid3/4/5; uuid3 has no variant check).
fn uuid(s: &str, version: Option<char>) -> bool {
    let groups = [8, 4, 4, 4, 12];
    let mut rest = s;
    let mut parts = Vec::with_capacity(5);
    for (i, n) in groups.iter().enumerate() {
        if rest.len() < *n || !rest.is_char_boundary(*n) {
            return false;
        }
        let (part, tail) = rest.split_at(*n);
        if !part.bytes().all(|b| b.is_ascii_hexdigit()) {
            return false;
        }
        parts.push(part);
        rest = tail;
        if i < 4 {
            rest = rest.strip_prefix('-').unwrap_or(rest);
        }
    }
    if !rest.is_empty() {
        return false;
    }
    match version {
        None => true,
        Some(v) => {
            let version_ok = parts[2].starts_with(v);
            let variant_ok = v == '3'
                || parts[3]
                    .chars()
                    .next()
                    .is_some_and(|c| matches!(c.to_ascii_lowercase(), '8' | '9' | 'a' | 'b'));
            version_ok && variant_ok
        }
    }
}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        _ => 0,
    }
}

/// `2006-01-02`.
fn date(s: &str) -> bool {
    let mut it = s.split('-');
    let (Some(y), Some(m), Some(d), None) = (it.next(), it.next(), it.next(), it.next()) else {
        return false;
    };
    match (digits(y, 4), digits(m, 2), digits(d, 2)) {
        (Some(y), Some(m), Some(d)) => (1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m),
        _ => false,
    }
}

/// RFC 3339 with optional fractional seconds, or the same without a zone
/// (`2006-01-02T15:04:05`), the layouts strfmt's `date-time` accepts.
fn date_time(s: &str) -> bool {
    // Every valid form is ASCII, and byte slicing below relies on it.
    if !s.is_ascii() {
        return false;
    }
    let Some((day, time)) = s.split_once('T') else {
        return false;
    };
    if !date(day) || time.len() < 8 {
        return false;
    }
    let (hms, rest) = time.split_at(8);
    let b = hms.as_bytes();
    if b[2] != b':' || b[5] != b':' {
        return false;
    }
    match (
        digits(&hms[0..2], 2),
        digits(&hms[3..5], 2),
        digits(&hms[6..8], 2),
    ) {
        (Some(h), Some(m), Some(sec)) if h < 24 && m < 60 && sec < 60 => {}
        _ => return false,
    }
    let rest = match rest.strip_prefix('.') {
        Some(frac) => {
            let n = frac.bytes().take_while(u8::is_ascii_digit).count();
            if n == 0 {
                return false;
            }
            &frac[n..]
        }
        None => rest,
    };
    match rest {
        "" | "Z" => true,
        zone => {
            let (sign, hm) = zone.split_at(1.min(zone.len()));
            if sign != "+" && sign != "-" || hm.len() != 5 || &hm[2..3] != ":" {
                return false;
            }
            matches!((digits(&hm[0..2], 2), digits(&hm[3..5], 2)), (Some(h), Some(m)) if h < 24 && m < 60)
        }
    }
}

fn cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => bits <= 32,
        Ok(IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx:..`, `xx-xx-..` or `xxxx.xxxx.xxxx`.
fn mac(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit());
    for sep in [':', '-'] {
        let parts: Vec<&str> = s.split(sep).collect();
        if matches!(parts.len(), 6 | 8 | 20) && parts.iter().all(|p| hex(p, 2)) {
            return true;
        }
    }
    let parts: Vec<&str> = s.split('.').collect();
    matches!(parts.len(), 3 | 4 | 10) && parts.iter().all(|p| hex(p, 4))
}

/// strfmt's hostname: labels of letters, digits and hyphens (and any Unicode letter or
/// symbol), a top-level label of letters only, at most 255 bytes and 63 per label.
fn hostname(s: &str) -> bool {
    if s.is_empty() || s.len() > 255 {
        return false;
    }
    let word = |c: char| c.is_ascii_alphanumeric() || (!c.is_ascii() && !c.is_whitespace());
    let labels: Vec<&str> = s.split('.').collect();
    if labels.iter().any(|l| l.len() > 63) {
        return false;
    }
    let label_ok = |l: &str| {
        let chars: Vec<char> = l.chars().collect();
        !chars.is_empty()
            && word(chars[0])
            && word(chars[chars.len() - 1])
            && chars.iter().all(|c| word(*c) || *c == '-')
    };
    if labels.len() == 1 {
        let chars: Vec<char> = s.chars().collect();
        // A single label: a word character, then optionally a hyphen and more.
        return word(chars[0])
            && chars.len() <= 64
            && chars[1..]
                .iter()
                .enumerate()
                .all(|(i, c)| word(*c) || (i == 0 && *c == '-'));
    }
    let (tld, rest) = labels.split_last().unwrap_or((&"", &[]));
    let tld_len = tld.chars().count();
    rest.iter().all(|l| label_ok(l))
        && (2..=63).contains(&tld_len)
        && tld
            .chars()
            .all(|c| c.is_ascii_alphabetic() || (!c.is_ascii() && c.is_alphabetic()))
}

/// Standard base64 with padding, at least one quantum.
fn base64(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let body = |c: &u8| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/';
    let pad = b.iter().rev().take_while(|c| **c == b'=').count();
    pad <= 2 && b[..b.len() - pad].iter().all(body)
}

fn hex_color(s: &str) -> bool {
    let h = s.strip_prefix('#').unwrap_or(s);
    matches!(h.len(), 3 | 6) && h.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `rgb(0-255, 0-255, 0-255)` with optional spaces after commas.
fn rgb_color(s: &str) -> bool {
    let Some(inner) = s.strip_prefix("rgb(").and_then(|r| r.strip_suffix(')')) else {
        return false;
    };
    let parts: Vec<&str> = inner.split(',').collect();
    parts.len() == 3
        && parts.iter().enumerate().all(|(i, p)| {
            let p = if i == 0 {
                *p
            } else {
                p.trim_start_matches(' ')
            };
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u32>().is_ok_and(|n| n <= 255)
        })
}

/// `^\d{3}[- ]?\d{2}[- ]?\d{4}$`
fn ssn(s: &str) -> bool {
    let d: String = s.chars().filter(|c| *c != '-' && *c != ' ').collect();
    let seps = s.len() - d.len();
    if d.len() != 9 || !d.bytes().all(|b| b.is_ascii_digit()) || seps > 2 {
        return false;
    }
    let b = s.as_bytes();
    let sep = |i: usize| b.get(i).is_some_and(|c| *c == b'-' || *c == b' ');
    match seps {
        0 => true,
        1 => sep(3) || sep(5),
        _ => sep(3) && sep(6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_strings_never_panic() {
        let odd = [
            "",
            "é",
            "2024-01-02Té",
            "2024-01-02T03:04:0é",
            "2024-01-02T03:04:05é",
            "2024-01-02T03:04:05.é",
            "2024-01-02T03:04:05+é:00",
            "2024-01-02T03:04:05+0",
            "ééééééééé-éééé-éééé-éééé-éééééééééééé",
            "a.é",
            "é.é.é",
            "/",
            "1.2.3.4/é",
            "rgb(é,1,1)",
            "é-é-é",
            "#é",
            "====",
            "a=b=",
            "::",
            ".",
            "-",
            "a..b",
        ];
        for format in SUPPORTED {
            for s in odd {
                let _ = is_valid(format, s);
            }
        }
    }

    #[test]
    fn supported_names() {
        assert!(is_supported_string_format("date-time"));
        assert!(is_supported_string_format("datetime"));
        assert!(is_supported_string_format("k8s-short-name"));
        assert!(!is_supported_string_format("int32"));
        assert!(!is_supported_string_format("color"));
    }

    #[test]
    fn checks() {
        let ok = |f: &str, s: &str| assert!(is_valid(f, s), "{f} {s:?} should pass");
        let bad = |f: &str, s: &str| assert!(!is_valid(f, s), "{f} {s:?} should fail");
        ok("uuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8");
        ok("uuid", "6BA7B8109DAD11D180B400C04FD430C8");
        bad("uuid", "nope");
        bad("uuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8x");
        ok("uuid4", "f47ac10b-58cc-4372-a567-0e02b2c3d479");
        bad("uuid4", "6ba7b810-9dad-11d1-80b4-00c04fd430c8");
        ok("date", "2024-02-29");
        bad("date", "2023-02-29");
        bad("date", "2023-1-01");
        ok("date-time", "2024-01-02T03:04:05Z");
        ok("date-time", "2024-01-02T03:04:05.123+02:00");
        ok("date-time", "2024-01-02T03:04:05");
        bad("date-time", "2024-01-02 03:04:05Z");
        bad("date-time", "2024-01-02T25:04:05Z");
        bad("date-time", "nope");
        ok("ipv4", "10.0.0.1");
        bad("ipv4", "::1");
        ok("ipv6", "::1");
        bad("ipv6", "10.0.0.1");
        ok("cidr", "10.0.0.0/8");
        ok("cidr", "fd00::/64");
        bad("cidr", "10.0.0.0/33");
        bad("cidr", "10.0.0.0");
        ok("mac", "00:1a:2b:3c:4d:5e");
        ok("mac", "001a.2b3c.4d5e");
        bad("mac", "00:1a:2b");
        ok("hostname", "example.com");
        ok("hostname", "localhost");
        bad("hostname", "-bad.com");
        bad("hostname", "a.b.c1");
        ok("byte", "aGVsbG8=");
        bad("byte", "hello");
        bad("byte", "");
        ok("hexcolor", "#fff");
        bad("hexcolor", "#ffff");
        ok("rgbcolor", "rgb(1, 2,255)");
        bad("rgbcolor", "rgb(1,2,256)");
        ok("bsonobjectid", "507f1f77bcf86cd799439011");
        ok("ssn", "123-45-6789");
        bad("ssn", "123-456789x");
        ok("k8s-short-name", "my-name");
        bad("k8s-short-name", "My-Name");
        ok("k8s-long-name", "a.b-c.d");
        bad("k8s-long-name", "a..b");
        ok("password", "");
        ok("email", "anything");
    }
}
