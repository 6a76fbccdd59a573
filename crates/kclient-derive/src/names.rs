//! The names of a custom resource: its kind, plural and singular, and the checks
//! kube-apiserver makes of them and of the group and version, made at compile time.

use proc_macro2::Span;
use syn::{Error, Ident, LitStr, Result};

use crate::attrs::Attrs;

/// A custom resource's names, checked.
pub(crate) struct Names {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) kind: String,
    pub(crate) plural: String,
    pub(crate) singular: String,
    /// The generated type's name.
    pub(crate) root: Ident,
}

/// `Err` at `lit` if there is a problem.
fn check(lit: &LitStr, problem: Option<String>) -> Result<String> {
    match problem {
        Some(p) => Err(Error::new(lit.span(), p)),
        None => Ok(lit.value()),
    }
}

impl Names {
    /// The names `attrs` give the spec struct `spec`, or the error a newcomer understands.
    pub(crate) fn resolve(spec: &Ident, attrs: &Attrs) -> Result<Self> {
        let required = |value: &Option<LitStr>, name: &str, example: &str| {
            value.clone().ok_or_else(|| {
                Error::new_spanned(
                    spec,
                    format!("#[derive(CustomResource)] needs #[kube({name} = \"...\")] on the struct, e.g. #[kube({name} = \"{example}\")]"),
                )
            })
        };
        let group = required(&attrs.group, "group", "cache.example.com")?;
        let group = check(&group, group_problem(&group.value()))?;
        let version = required(&attrs.version, "version", "v1")?;
        let version = check(&version, version_problem(&version.value()))?;
        let kind = match &attrs.kind {
            Some(k) => check(k, kind_problem(&k.value()))?,
            None => kind_of(spec)?,
        };
        let singular = match &attrs.singular {
            Some(s) => check(s, resource_name_problem("singular", &s.value()))?,
            None => kind.to_lowercase(),
        };
        let plural = match &attrs.plural {
            Some(p) => check(p, resource_name_problem("plural", &p.value()))?,
            None => plural(&kind.to_lowercase()),
        };
        let root_name = attrs
            .root
            .as_ref()
            .map_or_else(|| kind.clone(), LitStr::value);
        if *spec == root_name {
            return Err(Error::new_spanned(
                spec,
                format!("#[derive(CustomResource)] generates the type `{root_name}` itself: the spec struct needs another name (`{root_name}Spec`)"),
            ));
        }
        let root = syn::parse_str::<Ident>(&root_name).map_err(|_| {
            Error::new(
                Span::call_site(),
                format!("`{root_name}` is not a type name"),
            )
        })?;
        Ok(Self {
            group,
            version,
            kind,
            plural,
            singular,
            root,
        })
    }
}

/// The kind of a spec struct named `<Kind>Spec`.
fn kind_of(spec: &Ident) -> Result<String> {
    let name = spec.to_string();
    match name.strip_suffix("Spec") {
        Some(kind) if !kind.is_empty() => match kind_problem(kind) {
            Some(p) => Err(Error::new_spanned(spec, p)),
            None => Ok(kind.to_owned()),
        },
        _ => Err(Error::new_spanned(
            spec,
            format!("#[derive(CustomResource)] names the kind after the struct without its `Spec` suffix: name the struct `{name}Spec`, or give the kind with #[kube(kind = \"...\")]"),
        )),
    }
}

/// The plural of a lowercase kind, by the rules of English that cover Kubernetes' kinds and
/// most others (`memcached` → `memcacheds`, `policy` → `policies`, `ingress` →
/// `ingresses`, `key` → `keys`); an irregular plural is given with `plural = "..."`.
pub(crate) fn plural(singular: &str) -> String {
    let ends = |suffix: &str| singular.ends_with(suffix);
    if ends("s") || ends("x") || ends("z") || ends("ch") || ends("sh") {
        return format!("{singular}es");
    }
    let mut chars = singular.chars().rev();
    if let (Some('y'), Some(before)) = (chars.next(), chars.next()) {
        if !"aeiou".contains(before) {
            return format!("{}ies", &singular[..singular.len() - 1]);
        }
    }
    format!("{singular}s")
}

/// Why `kind` is not a kind: a CamelCase word starting with an upper-case letter.
pub(crate) fn kind_problem(kind: &str) -> Option<String> {
    let mut chars = kind.chars();
    match chars.next() {
        Some(c) if c.is_ascii_uppercase() => {}
        _ => {
            return Some(format!(
                "kind `{kind}` must start with an upper-case letter (CamelCase, e.g. `Memcached`)"
            ))
        }
    }
    if !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Some(format!(
            "kind `{kind}` may only have letters and digits (CamelCase, e.g. `CronTab`)"
        ));
    }
    None
}

/// Why `group` is not a CRD group: a lower-case DNS subdomain with at least one dot.
pub(crate) fn group_problem(group: &str) -> Option<String> {
    if !group.contains('.') {
        return Some(format!(
            "group `{group}` must be a domain with at least one dot (kube-apiserver refuses others), e.g. `cache.example.com`"
        ));
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if group.len() > 253 || !group.split('.').all(label_ok) {
        return Some(format!(
            "group `{group}` must be a lower-case DNS subdomain (letters, digits, `-` and `.`)"
        ));
    }
    None
}

/// Why `version` is not a version name: a DNS-1035 label (`v1`, `v2beta1`).
pub(crate) fn version_problem(version: &str) -> Option<String> {
    let ok = version.len() <= 63
        && version.starts_with(|c: char| c.is_ascii_lowercase())
        && version
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !version.ends_with('-');
    (!ok).then(|| {
        format!("version `{version}` must be a lower-case DNS label starting with a letter, e.g. `v1` or `v2beta1`")
    })
}

/// Why `name` (a plural or singular) is not a resource name: lower-case letters, digits and
/// `-`.
pub(crate) fn resource_name_problem(what: &str, name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    (!ok).then(|| format!("{what} `{name}` must be lower case (letters, digits and `-`)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals() {
        for (singular, plural_) in [
            ("memcached", "memcacheds"),
            ("crontab", "crontabs"),
            ("policy", "policies"),
            ("key", "keys"),
            ("ingress", "ingresses"),
            ("box", "boxes"),
            ("match", "matches"),
            ("mesh", "meshes"),
            ("quiz", "quizes"),
        ] {
            assert_eq!(plural(singular), plural_);
        }
    }

    #[test]
    fn names_are_checked() {
        assert!(kind_problem("Memcached").is_none());
        assert!(kind_problem("memcached").is_some());
        assert!(kind_problem("Mem-cached").is_some());
        assert!(group_problem("cache.example.com").is_none());
        assert!(group_problem("example").is_some());
        assert!(group_problem("Example.com").is_some());
        assert!(version_problem("v1alpha1").is_none());
        assert!(version_problem("V1").is_some());
        assert!(version_problem("1").is_some());
        assert!(resource_name_problem("plural", "crontabs").is_none());
        assert!(resource_name_problem("plural", "CronTabs").is_some());
    }
}
