//! The router: maps a request path to what it addresses, the way kube-apiserver's
//! `RequestInfoFactory` does (`/api/v1/namespaces/{ns}/{resource}/{name}/{subresource}`, the
//! deprecated `/watch/` prefix, `namespaces/{name}/status` and `/finalize`, discovery and
//! health endpoints).

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/api`: the core group's versions.
    LegacyApis,
    /// `/apis`: every named group.
    Apis,
    /// `/apis/{group}`.
    ApiGroup(String),
    /// `/api/v1` or `/apis/{group}/{version}`: the resources of a group version.
    ResourceList {
        /// The group (`""` for core).
        group: String,
        /// The version.
        version: String,
    },
    /// `/healthz`, `/livez`, `/readyz`.
    Health,
    /// `/openapi/v3`.
    OpenApiRoot,
    /// `/openapi/v3/{api/v1|apis/G/V}` (the part after `/openapi/v3/`).
    OpenApiGroupVersion(String),
    /// A resource, collection or subresource.
    Resource(ResourcePath),
    /// Nothing the server serves.
    NotFound,
}

/// A path into a resource.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourcePath {
    /// The group (`""` for core).
    pub group: String,
    /// The version.
    pub version: String,
    /// The plural resource name.
    pub resource: String,
    /// The namespace from the path, if any.
    pub namespace: Option<String>,
    /// The object name, if any.
    pub name: Option<String>,
    /// The subresource, if any.
    pub subresource: Option<String>,
    /// Whether the deprecated `/watch/` prefix was used.
    pub watch_prefix: bool,
}

/// Resolves `path` (without the query string).
pub fn route(path: &str) -> Route {
    let trimmed = path.trim_end_matches('/');
    let parts: Vec<&str> = trimmed.split('/').skip(1).collect();
    match parts.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["openapi", "v3"] => Route::OpenApiRoot,
        ["openapi", "v3", rest @ ..] => Route::OpenApiGroupVersion(rest.join("/")),
        ["api"] => Route::LegacyApis,
        ["apis"] => Route::Apis,
        ["apis", group] if !group.is_empty() => Route::ApiGroup(group.to_string()),
        ["api", version] if !version.is_empty() => Route::ResourceList {
            group: String::new(),
            version: version.to_string(),
        },
        ["apis", group, version] if !group.is_empty() && !version.is_empty() => {
            Route::ResourceList {
                group: group.to_string(),
                version: version.to_string(),
            }
        }
        ["api", version, rest @ ..] => resource_path("", version, rest),
        ["apis", group, version, rest @ ..] => resource_path(group, version, rest),
        _ => Route::NotFound,
    }
}

fn resource_path(group: &str, version: &str, rest: &[&str]) -> Route {
    if group.is_empty() && !version.is_empty() && rest.is_empty() {
        return Route::NotFound;
    }
    if version.is_empty() || rest.iter().any(|p| p.is_empty()) {
        return Route::NotFound;
    }
    let mut rp = ResourcePath {
        group: group.to_string(),
        version: version.to_string(),
        ..ResourcePath::default()
    };
    let mut parts = rest;
    if parts.first() == Some(&"watch") {
        rp.watch_prefix = true;
        parts = &parts[1..];
    }
    if parts.first() == Some(&"namespaces") && parts.len() > 1 {
        let ns = parts[1];
        if parts.len() > 2 && !matches!(parts[2], "status" | "finalize") {
            rp.namespace = Some(ns.to_string());
            parts = &parts[2..];
        }
    }
    match parts {
        [resource] => rp.resource = resource.to_string(),
        [resource, name] => {
            rp.resource = resource.to_string();
            rp.name = Some(name.to_string());
        }
        [resource, name, sub] => {
            rp.resource = resource.to_string();
            rp.name = Some(name.to_string());
            rp.subresource = Some(sub.to_string());
        }
        _ => return Route::NotFound,
    }
    Route::Resource(rp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rp(
        group: &str,
        resource: &str,
        ns: Option<&str>,
        name: Option<&str>,
        sub: Option<&str>,
    ) -> Route {
        Route::Resource(ResourcePath {
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
            namespace: ns.map(Into::into),
            name: name.map(Into::into),
            subresource: sub.map(Into::into),
            watch_prefix: false,
        })
    }

    #[test]
    fn discovery_paths() {
        assert_eq!(route("/version"), Route::Version);
        assert_eq!(route("/api"), Route::LegacyApis);
        assert_eq!(route("/apis/"), Route::Apis);
        assert_eq!(route("/apis/apps"), Route::ApiGroup("apps".into()));
        assert_eq!(
            route("/api/v1"),
            Route::ResourceList {
                group: "".into(),
                version: "v1".into()
            }
        );
        assert_eq!(route("/healthz"), Route::Health);
        assert_eq!(route("/foo"), Route::NotFound);
        assert_eq!(route(""), Route::NotFound);
        assert_eq!(route("//"), Route::NotFound);
    }

    #[test]
    fn resource_paths() {
        assert_eq!(route("/api/v1/pods"), rp("", "pods", None, None, None));
        assert_eq!(
            route("/api/v1/namespaces/a/pods/b/status"),
            rp("", "pods", Some("a"), Some("b"), Some("status"))
        );
        assert_eq!(
            route("/api/v1/namespaces/a"),
            rp("", "namespaces", None, Some("a"), None)
        );
        assert_eq!(
            route("/api/v1/namespaces/a/finalize"),
            rp("", "namespaces", None, Some("a"), Some("finalize"))
        );
        assert_eq!(
            route("/apis/apps/v1/namespaces/x/deployments/d/scale"),
            rp("apps", "deployments", Some("x"), Some("d"), Some("scale"))
        );
        assert_eq!(route("/api/v1/namespaces/a/pods/b/c/d"), Route::NotFound);
        match route("/api/v1/watch/namespaces/a/pods") {
            Route::Resource(p) => {
                assert!(p.watch_prefix);
                assert_eq!(p.namespace.as_deref(), Some("a"));
            }
            other => panic!("{other:?}"),
        }
    }
}
