//! Object metadata as the server manages it: uids, timestamps, names generated from
//! `generateName`, name validation, and access helpers over JSON objects.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn random_u64() -> u64 {
    RandomState::new().hash_one(COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// A random version-4-shaped UUID.
pub fn new_uid() -> String {
    let hi = random_u64();
    let lo = random_u64();
    let hi = (hi & 0xffff_ffff_ffff_0fff) | 0x4000;
    let lo = (lo & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// The alphabet of generated name suffixes (no vowels, no confusable digits), as
/// apimachinery's `rand.String`.
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `generateName` plus five random characters, trimmed as `names.SimpleNameGenerator` does
/// so the result fits 63 characters.
pub fn generate_name(base: &str) -> String {
    let mut base = base.to_string();
    if base.len() > 58 {
        base.truncate(58);
    }
    let mut r = random_u64();
    for _ in 0..5 {
        base.push(ALPHANUMS[(r % ALPHANUMS.len() as u64) as usize] as char);
        r /= ALPHANUMS.len() as u64;
    }
    base
}

/// Now, as RFC 3339 with second precision (`metav1.Time`).
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

/// Seconds since the Unix epoch as RFC 3339 in UTC (days-to-civil, Howard Hinnant's
/// algorithm).
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Why a name is not a DNS-1123 subdomain, in apimachinery's words.
pub fn dns_subdomain_error(name: &str) -> Option<String> {
    if name.len() > 253 {
        return Some("must be no more than 253 characters".into());
    }
    let ok = !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && label.as_bytes()[0].is_ascii_alphanumeric()
                && label.as_bytes()[label.len() - 1].is_ascii_alphanumeric()
        });
    if ok {
        None
    } else {
        Some(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character (e.g. \
             'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                .into(),
        )
    }
}

/// Why a name is not a DNS-1123 label (namespaces, services), in apimachinery's words.
pub fn dns_label_error(name: &str) -> Option<String> {
    if name.len() > 63 {
        return Some("must be no more than 63 characters".into());
    }
    let b = name.as_bytes();
    let ok = !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric();
    if ok {
        None
    } else {
        Some(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
             '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or \
             '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                .into(),
        )
    }
}

/// Why a name cannot be used at all (path segment rules, for every resource).
pub fn path_segment_error(name: &str) -> Option<String> {
    if name == "." || name == ".." {
        return Some(format!("may not be '{name}'"));
    }
    for bad in ["/", "%"] {
        if name.contains(bad) {
            return Some(format!("may not contain '{bad}'"));
        }
    }
    None
}

/// `metadata` of an object, created if missing.
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let map = obj.as_object_mut().expect("just made an object");
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut().expect("just made an object")
}

/// A string field of `metadata`, `""` when absent.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The finalizers of an object.
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the object is being deleted (has a `deletionTimestamp`).
pub fn is_terminating(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// Whether anything outside `metadata` and `status` differs.
pub fn spec_changed(old: &Value, new: &Value) -> bool {
    let (Some(a), Some(b)) = (old.as_object(), new.as_object()) else {
        return old != new;
    };
    let keys = a
        .keys()
        .chain(b.keys())
        .filter(|k| !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind"));
    for k in keys {
        if a.get(k) != b.get(k) {
            return true;
        }
    }
    false
}

/// Reads a dotted path (`spec.replicas`).
pub fn get_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(obj, |v, seg| v.get(seg))
}

/// Writes a dotted path, creating objects on the way.
pub fn set_path(obj: &mut Value, path: &str, value: Value) {
    let mut cur = obj;
    let segs: Vec<&str> = path.split('.').collect();
    for (i, seg) in segs.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let map = cur.as_object_mut().expect("just made an object");
        if i == segs.len() - 1 {
            map.insert(seg.to_string(), value);
            return;
        }
        cur = map
            .entry(seg.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// The names of a pod's containers in `list` (`containers`, `initContainers`,
/// `ephemeralContainers`), in order.
pub fn container_names(pod: &Value, list: &str) -> Vec<String> {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| c.get("name").and_then(Value::as_str).map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn uids_are_uuid_shaped_and_distinct() {
        let a = new_uid();
        let b = new_uid();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
    }

    #[test]
    fn generated_names_have_five_chars() {
        let n = generate_name("web-");
        assert_eq!(n.len(), 9);
        assert!(n.starts_with("web-"));
        assert!(dns_subdomain_error(&n).is_none());
        assert_eq!(generate_name(&"x".repeat(70)).len(), 63);
    }

    #[test]
    fn name_rules() {
        assert!(dns_subdomain_error("a.b-c").is_none());
        assert!(dns_subdomain_error("Abc").is_some());
        assert!(dns_subdomain_error("-a").is_some());
        assert!(dns_label_error("a.b").is_some());
        assert!(path_segment_error("..").is_some());
        assert!(path_segment_error("a/b").is_some());
    }

    #[test]
    fn spec_changes_ignore_metadata_and_status() {
        let a = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}, "status": {"y": 1}});
        let mut b = a.clone();
        b["metadata"]["labels"]["a"] = json!("2");
        b["status"]["y"] = json!(2);
        assert!(!spec_changed(&a, &b));
        b["spec"]["x"] = json!(2);
        assert!(spec_changed(&a, &b));
        let mut c = a.clone();
        c["data"] = json!({"k": "v"});
        assert!(spec_changed(&a, &c));
    }

    #[test]
    fn paths() {
        let mut v = json!({});
        set_path(&mut v, "spec.replicas", json!(3));
        assert_eq!(get_path(&v, "spec.replicas"), Some(&json!(3)));
        assert_eq!(now_rfc3339().len(), 20);
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_709_251_199), "2024-02-29T23:59:59Z");
    }
}
