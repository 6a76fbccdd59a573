//! Resource versions compared (KEP-5504, GA in Kubernetes 1.35): apimachinery's
//! `resourceversion.CompareResourceVersion`.
//!
//! A resourceVersion was opaque: a client could only test two for equality. Since 1.35 the
//! API guarantees that the resource versions of one resource are decimal integers that grow
//! with every write, so a client may order them — to tell whether what its cache holds is
//! at least as new as what it wrote, for instance. Only versions of the same resource
//! compare meaningfully, and `"0"` (a list or watch's "any version") is not one.
//!
//! ```
//! use std::cmp::Ordering;
//! use kclient_core::resource_version::compare_resource_version;
//!
//! assert_eq!(compare_resource_version("99", "100"), Ok(Ordering::Less));
//! assert!(compare_resource_version("0", "100").is_err(), "0 is never an object's version");
//! ```

use std::cmp::Ordering;

/// A resourceVersion that is not a well-formed one: not a positive decimal integer written
/// without leading zeros (apimachinery's `InvalidResourceVersion`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("resource version is not well formed: {0}")]
pub struct InvalidResourceVersion(pub String);

/// How resource version `a` orders against `b` (apimachinery's `CompareResourceVersion`:
/// `Less` for its -1, `Equal` for 0, `Greater` for +1), or the first of the two that is not
/// well formed. Any length is accepted: versions are compared as numbers of any size, not
/// parsed into a machine integer.
pub fn compare_resource_version(a: &str, b: &str) -> Result<Ordering, InvalidResourceVersion> {
    for rv in [a, b] {
        if !is_well_formed(rv) {
            return Err(InvalidResourceVersion(rv.to_owned()));
        }
    }
    // Without leading zeros, a longer number is a larger one, and numbers of one length
    // order as their digits do.
    Ok(a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
}

/// Whether `rv` is a positive decimal integer without leading zeros.
fn is_well_formed(rv: &str) -> bool {
    !rv.is_empty() && !rv.starts_with('0') && rv.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// apimachinery v0.37.1 `pkg/util/resourceversion/resourceversion_test.go`,
    /// `TestCompareResourceVersion`: every case, by its name.
    #[test]
    fn compare_resource_version_follows_apimachinery() {
        use Ordering::{Equal, Greater, Less};
        let small = "99999999999999999999999999999999999999999999999999";
        let large = "100000000000000000000000000000000000000000000000000";
        let large_c = "12345678901234567890123456789012345678901234567890";
        let cases: &[(&str, &str, &str, Option<Ordering>)] = &[
            ("a less than b", "100", "200", Some(Less)),
            ("a is zero, invalid", "0", "1", None),
            ("both zero", "0", "0", None),
            ("a greater than b", "200", "100", Some(Greater)),
            ("b is 0, invalid", "1", "0", None),
            ("a equal to b small", "1", "1", Some(Equal)),
            ("a equal to b", "100", "100", Some(Equal)),
            ("a shorter than b", "99", "100", Some(Less)),
            ("a longer than b", "100", "99", Some(Greater)),
            ("a with leading zero", "0100", "100", None),
            ("b with leading zero", "100", "0100", None),
            ("a empty", "", "100", None),
            ("b empty", "100", "", None),
            ("a non-digit", "100a", "100", None),
            ("b non-digit", "100", "100a", None),
            ("large int a less than b", small, large, Some(Less)),
            ("large int a greater than b", large, small, Some(Greater)),
            ("large int a equal to b", large_c, large_c, Some(Equal)),
        ];
        for (name, a, b, expected) in cases {
            let got = compare_resource_version(a, b);
            match expected {
                Some(ordering) => assert_eq!(got, Ok(*ordering), "{name}"),
                None => assert!(got.is_err(), "{name}: {got:?}"),
            }
        }
    }

    #[test]
    fn the_error_names_the_version_that_is_not_well_formed() {
        let err = compare_resource_version("100", "-1").unwrap_err();
        assert_eq!(err, InvalidResourceVersion("-1".into()));
        assert_eq!(err.to_string(), "resource version is not well formed: -1");
        let err = compare_resource_version("", "x").unwrap_err();
        assert_eq!(err.0, "", "the first one that is not well formed");
    }
}
